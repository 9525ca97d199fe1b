package ftdrive

import "slices"

// Procs is the process ids of a communicator's members, sorted, over which
// its fault-tolerance protocols run: position i of the overlay is process
// At(i). It is the identity 0..n-1 (MPI_COMM_WORLD of a job: no table at
// all) or a sorted list shared with the communicator (not copied) and
// searched by bisection, so that a process's state for a communicator of
// n members is one list, not a map of n entries (the memory of n
// in-process ranks stays linear in n). The zero Procs is empty.
type Procs struct {
	n   int
	ids []int // nil: the identity
}

// IdentityProcs returns the processes 0..n-1.
func IdentityProcs(n int) Procs { return Procs{n: n} }

// SortedProcs returns the processes ids, which must be sorted in increasing
// order without repeats; the slice is kept, not copied, and must not be
// changed afterwards. A list that is the identity is stored as such.
func SortedProcs(ids []int) Procs {
	if len(ids) == 0 || (ids[0] == 0 && ids[len(ids)-1] == len(ids)-1) {
		return Procs{n: len(ids)}
	}
	return Procs{n: len(ids), ids: ids}
}

// Len is the number of members.
func (p Procs) Len() int { return p.n }

// At returns the process id at position i (0 <= i < Len).
func (p Procs) At(i int) int {
	if p.ids == nil {
		return i
	}
	return p.ids[i]
}

// Index returns the position of process id, and whether it is a member.
func (p Procs) Index(id int) (int, bool) {
	if p.ids == nil {
		return id, id >= 0 && id < p.n
	}
	i, ok := slices.BinarySearch(p.ids, id)
	return i, ok
}

// Pos returns the position of process id, or -1 if it is not a member.
func (p Procs) Pos(id int) int {
	if i, ok := p.Index(id); ok {
		return i
	}
	return -1
}
