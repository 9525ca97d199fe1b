package rma

// Markers is one window member's record of the synchronisation markers
// its target server received (MPI-4.1 12.5's active target): which
// members reached each fence epoch, and per member the posts (MPI_Win_post)
// not yet matched by a Start here and the completes (MPI_Win_complete) not
// yet matched by a Wait here. The waits of package mpi ask it whether they
// are done, given which members are known failed; a member known failed is
// not waited for. Make one with NewMarkers; it is not safe for concurrent
// use (the caller's lock). It has no MPI counterpart.
type Markers struct {
	n     int
	marks map[uint64]map[int]bool
	posts []int
	dones []int
}

// NewMarkers returns the record of a window of n members. It has no MPI
// counterpart.
func NewMarkers(n int) Markers {
	return Markers{n: n, marks: map[uint64]map[int]bool{}, posts: make([]int, n), dones: make([]int, n)}
}

func (m *Markers) in(r int) bool { return r >= 0 && r < m.n }

// Fence records that member r reached fence epoch k (a member out of
// range is ignored). It has no MPI counterpart (MPI_Win_fence's marker).
func (m *Markers) Fence(k uint64, r int) {
	if !m.in(r) {
		return
	}
	s := m.marks[k]
	if s == nil {
		s = map[int]bool{}
		m.marks[k] = s
	}
	s[r] = true
}

// Post records a post of member r. It has no MPI counterpart
// (MPI_Win_post's marker).
func (m *Markers) Post(r int) {
	if m.in(r) {
		m.posts[r]++
	}
}

// Complete records a complete of member r. It has no MPI counterpart
// (MPI_Win_complete's marker).
func (m *Markers) Complete(r int) {
	if m.in(r) {
		m.dones[r]++
	}
}

// FenceDone reports whether fence epoch k is complete here: every member
// reached it or is failed (failed(r)). When it is, it forgets the epoch
// and returns the failed members that did not reach it, appended to
// missing[:0]. It has no MPI counterpart.
func (m *Markers) FenceDone(k uint64, failed func(r int) bool, missing []int) ([]int, bool) {
	s := m.marks[k]
	missing = missing[:0]
	for r := 0; r < m.n; r++ {
		if !s[r] {
			if !failed(r) {
				return missing, false
			}
			missing = append(missing, r)
		}
	}
	delete(m.marks, k)
	return missing, true
}

// TakePost consumes a post of member r, reporting whether there was one.
// It has no MPI counterpart (MPI_Win_start's wait).
func (m *Markers) TakePost(r int) bool {
	if m.in(r) && m.posts[r] > 0 {
		m.posts[r]--
		return true
	}
	return false
}

// TakeCompletes reports whether every member of group completed or is
// failed (failed(r)); when so, it consumes one complete of each member of
// group that has one and returns the failed members that had none,
// appended to dead[:0]. It has no MPI counterpart (MPI_Win_wait and
// MPI_Win_test).
func (m *Markers) TakeCompletes(group []int, failed func(r int) bool, dead []int) ([]int, bool) {
	dead = dead[:0]
	for _, o := range group {
		if !m.in(o) || m.dones[o] == 0 {
			if !failed(o) {
				return dead, false
			}
			dead = append(dead, o)
		}
	}
	for _, o := range group {
		if m.in(o) && m.dones[o] > 0 {
			m.dones[o]--
		}
	}
	return dead, true
}
