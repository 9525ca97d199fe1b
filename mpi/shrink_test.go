package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Shrink decides the failed set and the new communicator's context-id
// pair in one agreement (the pairs offered reserved at every member, so
// no claim check follows), with and without a failure; the reservation
// ends with the call: one pair more is in use, none of the window.
func TestShrinkIsOneAgreement(t *testing.T) {
	const n, victim = 5, 3
	killed := newGate()
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		shrinkOnce := func(what string, cur *mpi.Comm) (*mpi.Comm, error) {
			begun, inUse := mpi.AgreementsBegun(cur), mpi.CtxPairsInUse(w)
			s, err := cur.Shrink()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			if d := mpi.AgreementsBegun(cur) - begun; d != 1 {
				return nil, fmt.Errorf("rank %d, %s: Shrink ran %d agreements, want 1", w.Rank(), what, d)
			}
			if got := mpi.CtxPairsInUse(w); got != inUse+1 {
				return nil, fmt.Errorf("rank %d, %s: %d context pairs in use after Shrink, want %d (reservation left?)", w.Rank(), what, got, inUse+1)
			}
			return s, nil
		}
		s, err := shrinkOnce("failure-free", c)
		if err != nil {
			return err
		}
		if s.Size() != n || ringCheck(s, 1) != nil {
			return fmt.Errorf("failure-free shrink: size %d", s.Size())
		}
		if err := s.Free(); err != nil {
			return err
		}
		if c.Rank() == victim {
			killed.open()
			w.Kill()
		}
		killed.wait(t)
		c.Revoke()
		s, err = shrinkOnce("after a failure", c)
		if err != nil {
			return err
		}
		if slices.Contains(s.Group().WorldRanks(), victim) || s.Size() != n-1 {
			return fmt.Errorf("shrunk to %v, want every rank but %d", s.Group().WorldRanks(), victim)
		}
		return ringCheck(s, 2)
	})
}

// No reservation is left when Shrink fails (a mismatched agreement: one
// rank agrees while the others shrink) nor when the window holds no pair
// free at every member (rank 0 has the whole window taken: the general
// context-id agreement runs instead, and its result is uniform).
func TestShrinkLeavesNoReservation(t *testing.T) {
	const n = 4
	var mu sync.Mutex
	ctxs := map[int]uint32{}
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		inUse := mpi.CtxPairsInUse(w)
		if c.Rank() == 1 {
			if _, err := c.Agree(true); !errors.Is(err, mpi.ErrOther) {
				return fmt.Errorf("Agree beside Shrinks: %v, want a mismatch (ErrOther)", err)
			}
		} else if s, err := c.Shrink(); !errors.Is(err, mpi.ErrOther) {
			if s != nil {
				s.Free()
			}
			return fmt.Errorf("rank %d: Shrink beside an Agree: %v, want a mismatch (ErrOther)", c.Rank(), err)
		}
		if got := mpi.CtxPairsInUse(w); got != inUse {
			return fmt.Errorf("rank %d: %d context pairs in use after the failed Shrink, want %d", c.Rank(), got, inUse)
		}
		// The window starts at pair 0 (CtxLowFirst); rank 0 has all of it
		// taken.
		mpi.CtxLowFirst(w)
		var taken []int
		if c.Rank() == 0 {
			for p := range 8 * 64 {
				if mpi.CtxTakeForTest(w, []int{p}) {
					taken = append(taken, p)
				}
			}
		}
		inUse = mpi.CtxPairsInUse(w)
		begun := mpi.AgreementsBegun(c)
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		if d := mpi.AgreementsBegun(c) - begun; d < 2 {
			return fmt.Errorf("rank %d: %d agreements, want the general context-id agreement after the first", c.Rank(), d)
		}
		if got := mpi.CtxPairsInUse(w); got != inUse+1 {
			return fmt.Errorf("rank %d: %d context pairs in use after Shrink, want %d", c.Rank(), got, inUse+1)
		}
		mpi.CtxReleaseForTest(w, taken)
		mu.Lock()
		ctxs[c.Rank()] = mpi.CtxOf(s)
		mu.Unlock()
		if mpi.CtxOf(s) < 2*8*64 {
			return fmt.Errorf("rank %d: context %d, from the window rank 0 had taken", c.Rank(), mpi.CtxOf(s))
		}
		if err := ringCheck(s, 3); err != nil {
			return err
		}
		return s.Free()
	})
	for r, x := range ctxs {
		if x != ctxs[0] {
			t.Fatalf("rank %d shrunk to context %d, rank 0 to %d", r, x, ctxs[0])
		}
	}
}

// Shrinks on one communicator run while other goroutines of every rank
// create and free communicators on three other parents, every first
// attempt starting at pair 0 (CtxLowFirst) so that the creations meet the
// shrinks' reservations: no two live communicators of a process share a
// pair, every shrink's result is the same at every rank and works, and
// once all is freed only CommWorld's and CommSelf's pairs are in use.
func TestShrinkConcurrentWithCreation(t *testing.T) {
	const n, per, shrinks = 4, 60, 30
	var mu sync.Mutex
	shrunk := make([][n]uint32, shrinks) // the context of each rank's k-th shrink
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		mpi.CtxLowFirst(w)
		a, err := c.Dup()
		if err != nil {
			return err
		}
		b, err := c.Split(c.Rank()/2, 0)
		if err != nil {
			return err
		}
		sh, err := c.Dup()
		if err != nil {
			return err
		}
		parents := []*mpi.Comm{a, b, w.CommSelf()}
		made := make([][]*mpi.Comm, len(parents)+1) // the last: the shrinks'
		errs := make([]error, len(parents)+1)
		var wg sync.WaitGroup
		for i, p := range parents {
			wg.Go(func() { made[i], errs[i] = createAndFree(p, per) })
		}
		wg.Go(func() {
			i := len(parents)
			for k := range shrinks {
				s, err := sh.Shrink()
				if err != nil {
					errs[i] = fmt.Errorf("shrink %d: %w", k, err)
					return
				}
				mu.Lock()
				shrunk[k][c.Rank()] = mpi.CtxOf(s)
				mu.Unlock()
				if err := ringCheck(s, 4); err != nil {
					errs[i] = fmt.Errorf("shrink %d: %w", k, err)
					return
				}
				made[i] = append(made[i], s)
				if k%3 == 2 {
					made[i][k-1].Free()
					made[i][k-1] = nil
				}
			}
		})
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		seen := map[uint32]string{mpi.CtxOf(c): "world", mpi.CtxOf(w.CommSelf()): "self", mpi.CtxOf(a): "a", mpi.CtxOf(b): "b", mpi.CtxOf(sh): "sh"}
		if err := distinctContexts(seen, made); err != nil {
			return fmt.Errorf("rank %d: %w", c.Rank(), err)
		}
		freeAll(made)
		for _, x := range []*mpi.Comm{a, b, sh} {
			x.Free()
		}
		if got := mpi.CtxPairsInUse(w); got != 2 {
			return fmt.Errorf("rank %d: %d pairs in use after freeing everything, want 2", c.Rank(), got)
		}
		return nil
	})
	for k, ranks := range shrunk {
		for r, x := range ranks {
			if x != ranks[0] {
				t.Fatalf("shrink %d: rank %d got context %d, rank 0 %d", k, r, x, ranks[0])
			}
		}
	}
}

// A member killed at each step of Shrink (before contributing its
// reserved window, once the agreement decided, after keeping the pair,
// after building the communicator): every survivor returns the same
// communicator (without the victim if it died before contributing),
// with one pair more in use (no reservation left); a communicator that
// still holds the victim reports the failure and a second Shrink drops
// it.
func TestShrinkMemberKilledAtEveryStep(t *testing.T) {
	t.Cleanup(func() { mpi.SetShrinkHookForTest(nil) })
	const n = 5
	for _, step := range []string{"reserved", "decided", "claimed", "built"} {
		for _, victim := range []int{0, 2, 4} {
			t.Run(fmt.Sprintf("%s/victim%d", step, victim), func(t *testing.T) {
				var hooked atomic.Bool
				mpi.SetShrinkHookForTest(func(w *mpi.World, s string) {
					if w.Rank() == victim && s == step {
						hooked.Store(true)
						w.Kill()
					}
				})
				defer mpi.SetShrinkHookForTest(nil)
				var mu sync.Mutex
				views := map[int]string{}
				run(t, n, func(w *mpi.World, c *mpi.Comm) error {
					inUse := mpi.CtxPairsInUse(w)
					s, err := c.Shrink()
					if err != nil {
						return fmt.Errorf("rank %d: %w", c.Rank(), err)
					}
					if got := mpi.CtxPairsInUse(w); got != inUse+1 {
						return fmt.Errorf("rank %d: %d context pairs in use after Shrink, want %d", c.Rank(), got, inUse+1)
					}
					members := s.Group().WorldRanks()
					mu.Lock()
					views[c.Rank()] = fmt.Sprint(mpi.CtxOf(s), members)
					mu.Unlock()
					s.SetErrhandler(mpi.ErrorsReturn)
					err = s.Barrier()
					if !slices.Contains(members, victim) {
						if err != nil {
							return fmt.Errorf("rank %d: Barrier without the victim: %v", c.Rank(), err)
						}
						return nil
					}
					if err == nil {
						// The victim died in or after Barrier's part it owed
						// this rank: the agreement tells it.
						if _, err = s.Agree(true); err == nil {
							return fmt.Errorf("rank %d: nothing reports the victim's failure in %v", c.Rank(), members)
						}
					}
					if !errors.Is(err, mpi.ErrProcFailed) && !errors.Is(err, mpi.ErrRevoked) {
						return fmt.Errorf("rank %d: %v, want ErrProcFailed", c.Rank(), err)
					}
					s.Revoke()
					s2, err := s.Shrink()
					if err != nil {
						return err
					}
					if slices.Contains(s2.Group().WorldRanks(), victim) || s2.Size() != n-1 {
						return fmt.Errorf("rank %d: second Shrink gave %v", c.Rank(), s2.Group().WorldRanks())
					}
					return ringCheck(s2, 5)
				})
				if !hooked.Load() {
					t.Fatalf("rank %d never reached step %q", victim, step)
				}
				if len(views) != n-1 {
					t.Fatalf("%d survivors returned from Shrink, want %d", len(views), n-1)
				}
				for r, v := range views {
					if v != views[(victim+1)%n] {
						t.Fatalf("rank %d got %s, rank %d %s", r, v, (victim+1)%n, views[(victim+1)%n])
					}
				}
			})
		}
	}
}
