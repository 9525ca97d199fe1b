package coll

import "slices"

// The run-through model's collectives (seed 003, chapter 17): once some
// members of a communicator are recognised failed, a collective runs on
// the view of the alive members (the caller's communicator of them), and
// its rank-indexed arguments and blocks move between the group and the
// view. The view works on process ids and group positions only.

// View maps the positions of a group (ranks 0..n-1) onto the view of its
// alive members, in rank order: what a collective of the run-through model
// (seed 003, chapter 17) runs on once some members are recognised failed,
// the caller's communicator of the alive members. The zero View is the
// view of a group without recognised failures: none is needed. No MPI
// counterpart.
type View struct {
	Alive []int // view rank -> rank in the group
	VRank []int // rank in the group -> view rank, -1 for a recognised failed member
}

// NewView maps group procs (world ranks in rank order) onto the view of the
// members not in failed (world ranks, ascending). world lists the alive
// members' world ranks in view order.
func NewView(procs, failed []int) (m View, world []int) {
	m.VRank = make([]int, len(procs))
	for i, p := range procs {
		m.VRank[i] = -1
		if _, found := slices.BinarySearch(failed, p); !found {
			m.VRank[i] = len(m.Alive)
			m.Alive = append(m.Alive, i)
			world = append(world, p)
		}
	}
	return m, world
}

// Full reports whether every member of the group is alive in m.
func (m View) Full() bool { return len(m.Alive) == len(m.VRank) }

// Pick returns a[r] for the alive ranks r, in view order (nil for nil).
func (m View) Pick(a []int) []int {
	if a == nil {
		return nil
	}
	out := make([]int, len(m.Alive))
	for j, r := range m.Alive {
		out[j] = a[r]
	}
	return out
}

// Blocks returns the counts and displacements (in elements) of the alive
// ranks' blocks of n elements in a buffer of blocks in rank order.
func (m View) Blocks(n int) (counts, displs []int) {
	counts, displs = make([]int, len(m.Alive)), make([]int, len(m.Alive))
	for j, r := range m.Alive {
		counts[j], displs[j] = n, r*n
	}
	return counts, displs
}

// PackView copies the alive ranks' blocks of n elements of src (blocks in rank
// order) into a new buffer, in view order.
func PackView[T any](m View, src []T, n int) []T {
	out := make([]T, len(m.Alive)*n)
	for j, r := range m.Alive {
		copy(out[j*n:(j+1)*n], src[r*n:(r+1)*n])
	}
	return out
}

// PackViewV copies the alive ranks' blocks of src, block r holding counts[r]
// elements at displs[r], into a new buffer, in view order.
func PackViewV[T any](m View, src []T, counts, displs []int) []T {
	var out []T
	for _, r := range m.Alive {
		out = append(out, src[displs[r]:displs[r]+counts[r]]...)
	}
	return out
}

// UnpackView copies the view-ordered blocks of n elements of src to the alive
// ranks' blocks of dst (blocks in rank order); the blocks of failed ranks
// are left untouched.
func UnpackView[T any](m View, dst, src []T, n int) {
	for j, r := range m.Alive {
		copy(dst[r*n:(r+1)*n], src[j*n:(j+1)*n])
	}
}
