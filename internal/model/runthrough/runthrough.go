package runthrough

import "slices"

// Map maps the positions of a group (ranks 0..n-1) onto the view of its
// alive members, in rank order. The zero Map is the map of a group without
// recognised failures: no view is needed.
type Map struct {
	Alive []int // view rank -> rank in the group
	VRank []int // rank in the group -> view rank, -1 for a recognised failed member
}

// NewMap maps group procs (world ranks in rank order) onto the view of the
// members not in failed (world ranks, ascending). world lists the alive
// members' world ranks in view order.
func NewMap(procs, failed []int) (m Map, world []int) {
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
func (m Map) Full() bool { return len(m.Alive) == len(m.VRank) }

// Pick returns a[r] for the alive ranks r, in view order (nil for nil).
func (m Map) Pick(a []int) []int {
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
func (m Map) Blocks(n int) (counts, displs []int) {
	counts, displs = make([]int, len(m.Alive)), make([]int, len(m.Alive))
	for j, r := range m.Alive {
		counts[j], displs[j] = n, r*n
	}
	return counts, displs
}

// Pack copies the alive ranks' blocks of n elements of src (blocks in rank
// order) into a new buffer, in view order.
func Pack[T any](m Map, src []T, n int) []T {
	out := make([]T, len(m.Alive)*n)
	for j, r := range m.Alive {
		copy(out[j*n:(j+1)*n], src[r*n:(r+1)*n])
	}
	return out
}

// PackV copies the alive ranks' blocks of src, block r holding counts[r]
// elements at displs[r], into a new buffer, in view order.
func PackV[T any](m Map, src []T, counts, displs []int) []T {
	var out []T
	for _, r := range m.Alive {
		out = append(out, src[displs[r]:displs[r]+counts[r]]...)
	}
	return out
}

// Unpack copies the view-ordered blocks of n elements of src to the alive
// ranks' blocks of dst (blocks in rank order); the blocks of failed ranks
// are left untouched.
func Unpack[T any](m Map, dst, src []T, n int) {
	for j, r := range m.Alive {
		copy(dst[r*n:(r+1)*n], src[j*n:(j+1)*n])
	}
}

// Unrecognized returns the members of lost (ascending) that are not in
// recognized (ascending): the failures that keep a communicator
// collectively inactive until the next Validate (seed 003 17.7).
func Unrecognized(lost, recognized []int) []int {
	var out []int
	for _, p := range lost {
		if _, found := slices.BinarySearch(recognized, p); !found {
			out = append(out, p)
		}
	}
	return out
}

// WildcardsDisabled reports whether a process of failed (the members known
// failed now) was not yet failed at the last ReenableAnySource, whose known
// failures were reenabled: wildcard receives are then disabled (seed 003
// 17.6).
func WildcardsDisabled(failed, reenabled []int) bool {
	for _, p := range failed {
		if !slices.Contains(reenabled, p) {
			return true
		}
	}
	return false
}
