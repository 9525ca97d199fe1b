package segment

import (
	"fmt"
	"os"
)

// Members is how the processes of one segment reach each other: this
// process's rank among them, their number, and an allgather of words
// (every process gives the same number of words; the result holds every
// process's, in rank order). It has no MPI counterpart.
type Members struct {
	Rank, Size int
	Allgather  func(mine []int64) ([]int64, error)
}

// CreateError ends a Share at rank 0 when it could not create the file;
// the others get a *RefusedError naming rank 0. It has no MPI counterpart.
type CreateError struct{ Err error }

func (e *CreateError) Error() string { return "cannot create the shared segment: " + e.Err.Error() }
func (e *CreateError) Unwrap() error { return e.Err }

// RefusedError ends a Share at a process that did not refuse, when some
// other process refused (Share's refuse) or rank 0 could not create the
// file. It has no MPI counterpart.
type RefusedError struct{ Rank int } // the lowest such rank

func (e *RefusedError) Error() string {
	return fmt.Sprintf("rank %d refused the shared segment", e.Rank)
}

// MapError ends a Share at every process when some process could not map
// the segment. It has no MPI counterpart.
type MapError struct {
	Total int   // the segment's size in bytes
	Err   error // this process's own mapping error, else "rank r could not map it" (the lowest r)
}

func (e *MapError) Error() string {
	return fmt.Sprintf("cannot map the shared segment of %d bytes: %v", e.Total, e.Err)
}
func (e *MapError) Unwrap() error { return e.Err }

// Share sets up one segment of kind among m's processes, collectively (two
// allgathers): rank 0 creates the file (unless it refuses), every process
// gives its words and whether it refuses, every process lays the segment
// out from all the words (layout gets every process's words in rank order;
// it must give the same layout at every process) and maps it, all agree
// that all did, and rank 0 removes the file's name. It returns the mapped
// segment, or, with nothing mapped and no file left:
//   - refuse itself at a process that gave a non-nil refuse;
//   - a *CreateError at rank 0 if it could not create the file;
//   - a *RefusedError at the other processes if some process refused or
//     rank 0 could not create the file (no mapping is tried);
//   - a *MapError at every process if some process could not map it;
//   - an error of m.Allgather as it is (the set-up cut short).
//
// It has no MPI counterpart.
func Share(m Members, kind string, words []int64, refuse error, layout func(words [][]int64) (*Segment, int)) (*Segment, error) {
	var f *os.File
	var p string
	var token int64
	if m.Rank == 0 && refuse == nil {
		var err error
		if f, p, token, err = create(kind); err != nil {
			refuse = &CreateError{err}
		}
	}
	k := len(words) + 2 // the caller's words, then refused (0 or 1) and rank 0's token
	mine := append(append(make([]int64, 0, k), words...), 0, token)
	if refuse != nil {
		mine[k-2] = 1
	}
	all, err := m.Allgather(mine)
	if err == nil && len(all) != k*m.Size {
		err = fmt.Errorf("segment: allgather gave %d words, want %d", len(all), k*m.Size)
	}
	if err != nil {
		drop(f, p)
		return nil, err
	}
	if refuse != nil {
		drop(f, p)
		return nil, refuse
	}
	per := make([][]int64, m.Size)
	for r := range m.Size {
		if all[k*r+k-2] != 0 {
			drop(f, p)
			return nil, &RefusedError{Rank: r}
		}
		per[r] = all[k*r : k*r+k-2 : k*r+k-2]
	}
	token = all[k-1]
	p = path(kind, token)
	s, total := layout(per)
	// Map (when there is anything to map), then agree that everyone did:
	// rank 0 unlinks the file after that either way.
	merr := s.Map(f, p, total)
	if f != nil {
		f.Close()
	}
	ok := int64(0)
	if merr == nil {
		ok = 1
	}
	mapped, err := m.Allgather([]int64{ok})
	if m.Rank == 0 {
		os.Remove(p)
	}
	if err == nil && len(mapped) != m.Size {
		err = fmt.Errorf("segment: allgather gave %d words, want %d", len(mapped), m.Size)
	}
	if err != nil {
		s.Unmap()
		return nil, err
	}
	for r := 0; r < m.Size && merr == nil; r++ {
		if mapped[r] == 0 {
			merr = fmt.Errorf("rank %d could not map it", r)
		}
	}
	if merr != nil {
		s.Unmap()
		return nil, &MapError{Total: total, Err: merr}
	}
	return s, nil
}
