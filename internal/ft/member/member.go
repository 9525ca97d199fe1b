// Package member is the membership knowledge that ftmpi's failure detector
// (internal/ft/detector) and reliable broadcast (internal/ft/rbcast) share:
// the processes of a world of N ranks, each named by its rank and
// incarnation, which of them are known to have failed, and the ring of the
// live ranks that both protocols re-link around every failure.
//
// # Rules
//
// A process is an ID{Rank, Inc}: a respawned rank has a higher incarnation
// and is a new process. Failure knowledge is monotone: once incarnation i of
// rank r is known failed, so are all its older incarnations, and nothing
// brings them back. A newer incarnation of a rank becomes live only through
// Join, which also marks its predecessors failed. A View is one process's
// knowledge; it may report its own process failed (a declared process is
// about to be killed), after which the protocols fall silent.
//
// # What it must not do
//
// No I/O, no goroutines, no clocks, no messages: the protocols own their
// timers and messages and keep the membership here. A View is not safe for
// concurrent use.
package member

import (
	"fmt"
	"slices"
)

// ID names one process: a world rank and an incarnation (0 at first start,
// increased by every respawn of that rank).
type ID struct {
	Rank int
	Inc  int
}

func (id ID) String() string { return fmt.Sprintf("%d.%d", id.Rank, id.Inc) }

// None is the rank Succ and Pred report when there is no other live rank.
const None = -1

// Check reports the first problem with a world of n ranks seen from process
// self, or nil. The errors name the fields the protocols' configurations
// share: N, Self and Incarnation.
func Check(n int, self ID) error {
	switch {
	case n < 1:
		return fmt.Errorf("N is %d, must be at least 1", n)
	case self.Rank < 0 || self.Rank >= n:
		return fmt.Errorf("Self is %d, must be in [0, N=%d)", self.Rank, n)
	case self.Inc < 0:
		return fmt.Errorf("Incarnation is %d, must not be negative", self.Inc)
	}
	return nil
}

// View is one process's knowledge of the membership of its world: the
// newest incarnation of every rank, the newest one known failed, and the
// ring of live ranks around this process. Create it with New.
//
// Its size grows with what is known, not with the world: a rank at
// incarnation 0 and not failed has no entry, so a view of 10,000 ranks
// with 100 failures holds 100 entries (one per process: the memory of a
// job of n in-process ranks stays linear in n).
type View struct {
	n          int
	self       int
	inc        sparse // newest known incarnation of each rank; absent: 0
	dead       sparse // highest incarnation known failed of each rank; absent: none (-1)
	failures   uint64
	selfFailed bool
}

// sparse maps ranks to values, holding only the ranks set: sorted
// parallel lists, searched by bisection (a few failures make a few short
// lists, with none of a map's per-entry overhead).
type sparse struct {
	ranks []int
	vals  []int
}

func (s *sparse) find(r int) (int, bool) { return slices.BinarySearch(s.ranks, r) }

func (s *sparse) get(r, absent int) int {
	if i, ok := s.find(r); ok {
		return s.vals[i]
	}
	return absent
}

func (s *sparse) set(r, v int) {
	i, ok := s.find(r)
	if !ok {
		s.ranks = slices.Insert(s.ranks, i, r)
		s.vals = slices.Insert(s.vals, i, v)
		return
	}
	s.vals[i] = v
}

// incOf is the newest known incarnation of rank r.
func (v *View) incOf(r int) int { return v.inc.get(r, 0) }

// deadOf is the highest incarnation of rank r known failed, -1 if none.
func (v *View) deadOf(r int) int { return v.dead.get(r, -1) }

func (v *View) setInc(r, i int) { v.inc.set(r, i) }

// New returns the view of process self in a world of n ranks, in which
// every other rank is live at incarnation 0 (report other knowledge with
// Fail and Join). It fails as Check does.
func New(n int, self ID) (*View, error) {
	if err := Check(n, self); err != nil {
		return nil, err
	}
	v := &View{n: n, self: self.Rank}
	if self.Inc != 0 {
		v.setInc(self.Rank, self.Inc)
	}
	return v, nil
}

// N returns the number of ranks.
func (v *View) N() int { return v.n }

// Self returns this process's rank.
func (v *View) Self() int { return v.self }

// InRange reports whether r is a rank of the world.
func (v *View) InRange(r int) bool { return r >= 0 && r < v.n }

// Live reports whether the newest known incarnation of rank r is live (not
// known failed). A rank outside the world is not live.
func (v *View) Live(r int) bool { return v.InRange(r) && v.incOf(r) > v.deadOf(r) }

// Current returns the newest known incarnation of rank r and whether it is
// live; for a rank outside the world, incarnation 0 and not live.
func (v *View) Current(r int) (id ID, live bool) {
	if !v.InRange(r) {
		return ID{Rank: r}, false
	}
	i := v.incOf(r)
	return ID{Rank: r, Inc: i}, i > v.deadOf(r)
}

// IsFailed reports whether p is known to have failed (p's incarnation or a
// newer one of the same rank was reported failed). A rank outside the world
// or a negative incarnation names no process and is not failed.
func (v *View) IsFailed(p ID) bool {
	return v.InRange(p.Rank) && p.Inc >= 0 && p.Inc <= v.deadOf(p.Rank)
}

// Failures returns the number of failed processes known, counting every
// failed incarnation (those marked failed by a Join too). It only grows.
func (v *View) Failures() uint64 { return v.failures }

// SelfFailed reports whether this process itself was reported failed.
func (v *View) SelfFailed() bool { return v.selfFailed }

// Fail records that p and its older incarnations failed and reports whether
// this was news. A notice about a rank outside the world, a negative
// incarnation, or an incarnation already known failed is ignored; one about
// an incarnation newer than any known (a respawn not heard of, which then
// failed) is accepted. Fail of this process's own incarnation makes
// SelfFailed true.
func (v *View) Fail(p ID) bool {
	if !v.InRange(p.Rank) || p.Inc < 0 || p.Inc <= v.deadOf(p.Rank) {
		return false
	}
	v.failures += uint64(p.Inc - v.deadOf(p.Rank))
	v.dead.set(p.Rank, p.Inc)
	if p.Inc > v.incOf(p.Rank) {
		v.setInc(p.Rank, p.Inc) // the newest incarnation we know of is the failed one
	}
	if p.Rank == v.self && !v.Live(p.Rank) {
		v.selfFailed = true
	}
	return true
}

// Join records that p, a new incarnation of rank p.Rank (a respawn), is
// live and takes that rank's place; its older incarnations are failed. It
// reports whether this was news. Join of this process's own rank, of an
// incarnation already known or known failed, or of one older than the
// newest known, is ignored: a failed process never comes back.
func (v *View) Join(p ID) bool {
	if !v.InRange(p.Rank) || p.Rank == v.self || p.Inc <= v.deadOf(p.Rank) {
		return false
	}
	if p.Inc < v.incOf(p.Rank) || (p.Inc == v.incOf(p.Rank) && v.Live(p.Rank)) {
		return false
	}
	if p.Inc > 0 {
		v.Fail(ID{Rank: p.Rank, Inc: p.Inc - 1})
	}
	v.setInc(p.Rank, p.Inc)
	return true
}

// Ring returns this process's successor and predecessor in the ring of live
// ranks (rank order, wrapping around): the next live rank after it and the
// previous one, None when no other rank is live. In a ring of two live
// ranks both are the other one.
func (v *View) Ring() (succ, pred int) {
	n := v.n
	succ, pred = None, None
	for i := 1; i < n; i++ {
		if r := (v.self + i) % n; v.Live(r) {
			succ = r
			break
		}
	}
	for i := 1; i < n; i++ {
		if r := (v.self - i + n) % n; v.Live(r) {
			pred = r
			break
		}
	}
	return succ, pred
}
