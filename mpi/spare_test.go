package mpi

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runSpares runs fn under RunSpares with a deadline (a hang is a failure).
func runSpares(t *testing.T, n, spares int, fn func(w *World) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- RunSpares(n, spares, DefaultConfig(), fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("RunSpares did not return within 60 s")
		return nil
	}
}

// views records, per process, the members each one sees in its repaired
// communicator (checkRepaired).
type views struct {
	mu    sync.Mutex
	procs map[int][]int
}

func newViews() *views { return &views{procs: map[int][]int{}} }

// check runs checkRepaired(nc, want) at w's process and records what it saw.
func (v *views) check(w *World, nc *Comm, want int) error {
	got, err := checkRepaired(nc, want)
	v.mu.Lock()
	v.procs[w.rank] = got
	v.mu.Unlock()
	return err
}

// untilFailure runs barriers on c until one fails: a failure of a member
// ends the loop at every survivor, whenever it happens.
func untilFailure(c *Comm) error {
	for i := 0; i < 1_000_000; i++ {
		if err := c.Barrier(); err != nil {
			if !isFailure(err) && !errors.Is(err, ErrRevoked) {
				return err
			}
			return nil
		}
	}
	return errors.New("no failure seen")
}

// checkRepaired checks, at every member of nc (survivors and new
// processes alike), that nc has want members, that a collective over it
// works, and returns nc's process ids.
func checkRepaired(nc *Comm, want int) ([]int, error) {
	if nc.Size() != want {
		return nil, fmt.Errorf("repaired size %d, want %d", nc.Size(), want)
	}
	sum := []int64{0}
	if err := Allreduce(nc, []int64{int64(nc.Rank())}, sum, Sum); err != nil {
		return nil, fmt.Errorf("allreduce over the repaired communicator: %w", err)
	}
	if w := int64(want * (want - 1) / 2); sum[0] != w {
		return nil, fmt.Errorf("allreduce of the ranks %d, want %d", sum[0], w)
	}
	return slices.Clone(nc.groupProcs()), nil
}

// A killed rank is replaced by a spare: every survivor keeps its rank, the
// spare returns from its wait as the failed rank with the repaired
// communicator as CommWorld (Replacement), a collective over it works, and
// the unused spare ends without running fn.
func TestReplaceWithSpares(t *testing.T) {
	var spareCalls atomic.Int32
	seen := newViews()
	err := runSpares(t, 4, 2, func(w *World) error {
		if nc := w.Replacement(); nc != nil {
			spareCalls.Add(1)
			if w.CommWorld() != nc || w.Rank() != 3 || nc.Rank() != 3 {
				return fmt.Errorf("spare %d: CommWorld %v, rank %d", w.rank, w.CommWorld() == nc, w.Rank())
			}
			return seen.check(w, nc, 4)
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if c.Size() != 4 {
			return fmt.Errorf("CommWorld has %d ranks with 2 spares, want 4", c.Size())
		}
		if w.Rank() == 3 {
			w.Kill()
		}
		if err := untilFailure(c); err != nil {
			return err
		}
		nc, err := c.Replace()
		if err != nil {
			return fmt.Errorf("rank %d: Replace: %w", w.Rank(), err)
		}
		if nc.Rank() != c.Rank() {
			return fmt.Errorf("rank %d is rank %d after Replace", c.Rank(), nc.Rank())
		}
		err = seen.check(w, nc, 4)
		if len(w.Spares()) != 1 {
			return fmt.Errorf("rank %d: %d spares left, want 1", w.Rank(), len(w.Spares()))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := spareCalls.Load(); n != 1 {
		t.Fatalf("fn ran at %d spares, want 1 (the unused spare must not run it)", n)
	}
	for p, got := range seen.procs {
		if !slices.Equal(got, []int{0, 1, 2, 4}) {
			t.Errorf("process %d sees the repaired members %v, want [0 1 2 4]", p, got)
		}
	}
	if len(seen.procs) != 4 {
		t.Errorf("%d processes checked the repaired communicator, want 4", len(seen.procs))
	}
}

// A spare that died before being taken is not taken: the repair uses the
// next one, and the dead one is gone from every survivor's pool.
func TestReplaceSpareKilledBeforeTaken(t *testing.T) {
	seen := newViews()
	err := runSpares(t, 4, 2, func(w *World) error {
		if nc := w.Replacement(); nc != nil {
			return seen.check(w, nc, 4)
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if w.Rank() == 0 {
			w.runWorlds[4].killInProc() // the first spare dies
		}
		if err := c.Barrier(); err != nil { // every rank learnt of it (in process: at once)
			return err
		}
		if sp := w.Spares(); !slices.Equal(sp, []int{5}) {
			return fmt.Errorf("rank %d: spares %v after the death of spare 4, want [5]", w.Rank(), sp)
		}
		if w.Rank() == 3 {
			w.Kill()
		}
		if err := untilFailure(c); err != nil {
			return err
		}
		nc, err := c.Replace()
		if err != nil {
			return err
		}
		return seen.check(w, nc, 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	for p, got := range seen.procs {
		if !slices.Equal(got, []int{0, 1, 2, 5}) {
			t.Errorf("process %d sees %v, want [0 1 2 5]", p, got)
		}
	}
	if len(seen.procs) != 4 {
		t.Errorf("%d processes checked the repaired communicator, want 4", len(seen.procs))
	}
}

// More failed ranks than spares: the rest would be spawned, which Run
// cannot do; every survivor gets the same ErrSpawn, and the spares the
// attempt picked are released at the end (Run returns).
func TestReplaceNoSparesLeft(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	err := runSpares(t, 4, 1, func(w *World) error {
		if w.Replacement() != nil {
			return errors.New("a spare was taken by a repair that could not complete")
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if w.Rank() == 2 || w.Rank() == 3 {
			w.Kill()
		}
		if err := untilFailure(c); err != nil {
			return err
		}
		_, err := c.Replace()
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 {
		t.Fatalf("%d survivors returned from Replace, want 2", len(errs))
	}
	for _, e := range errs {
		if !errors.Is(e, ErrSpawn) {
			t.Errorf("Replace with no spare left under Run: %v, want ErrSpawn at every survivor", e)
		}
	}
}

// A survivor that fails during the repair (after the spares were
// activated, before the outcome was agreed) makes the survivors abandon
// the attempt and start over: the spare that accepted waits again, goes
// back to the pool, and the second attempt replaces both failed ranks with
// the two spares (there are no more).
func TestReplaceFailureDuringRepair(t *testing.T) {
	seen := newViews()
	var hooked atomic.Int32
	err := runSpares(t, 4, 2, func(w *World) error {
		if nc := w.Replacement(); nc != nil {
			return seen.check(w, nc, 4)
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if w.Rank() == 1 {
			w.replaceHook = func(step string) {
				if step == "activated" && hooked.Add(1) == 1 {
					w.Kill() // dies inside Replace, between activation and the outcome
				}
			}
		}
		if w.Rank() == 3 {
			w.Kill()
		}
		if err := untilFailure(c); err != nil {
			return err
		}
		nc, err := c.Replace()
		if err != nil {
			return err
		}
		return seen.check(w, nc, 4)
	})
	if err != nil {
		t.Fatal(err)
	}
	if hooked.Load() == 0 {
		t.Fatal("rank 1 never reached the activation step")
	}
	if len(seen.procs) != 4 {
		t.Fatalf("%d processes checked the repaired communicator, want 4", len(seen.procs))
	}
	for p, got := range seen.procs {
		checkUniform(t, seen.procs, p, got)
		if got[0] != 0 || got[2] != 2 || got[1] < 4 || got[3] < 4 || got[1] == got[3] {
			t.Errorf("process %d sees %v: want 0 and 2 in place, ranks 1 and 3 taken by the two spares", p, got)
		}
	}
}

// leaderFailsAfterActivation runs n ranks and spares spares; the ranks in
// killed die, and leader (the repair's leader) dies once it activated its
// spares, before the second agreement. It returns what each process saw
// of the repaired communicator.
func leaderFailsAfterActivation(t *testing.T, n, spares, leader int, killed ...int) map[int][]int {
	t.Helper()
	seen := newViews()
	var hooked atomic.Int32
	err := runSpares(t, n, spares, func(w *World) error {
		if nc := w.Replacement(); nc != nil {
			return seen.check(w, nc, n)
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if w.Rank() == leader {
			w.replaceHook = func(step string) {
				if step == "activated" && hooked.Add(1) == 1 {
					w.Kill() // between the activation and the agreement
				}
			}
		}
		if slices.Contains(killed, w.Rank()) {
			w.Kill()
		}
		if err := untilFailure(c); err != nil {
			return err
		}
		nc, err := c.Replace()
		if err != nil {
			return fmt.Errorf("Replace: %w", err)
		}
		return seen.check(w, nc, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	if hooked.Load() == 0 {
		t.Fatalf("rank %d never reached the activation step", leader)
	}
	if len(seen.procs) != n {
		t.Fatalf("%d processes checked the repaired communicator, want %d", len(seen.procs), n)
	}
	return seen.procs
}

// The leader of the repair (rank 0) fails after it activated the spare,
// before it told the others its pick: they abandon the attempt without
// knowing whom it activated and send Drop to every spare; the spare waits
// again, and the second attempt, led by rank 1, takes both spares for the
// two failed ranks.
func TestReplaceLeaderFailsAfterActivation(t *testing.T) {
	for p, got := range leaderFailsAfterActivation(t, 4, 2, 0, 3) {
		if got[1] != 1 || got[2] != 2 || got[0] < 4 || got[3] < 4 || got[0] == got[3] {
			t.Errorf("process %d sees %v: want 1 and 2 in place, ranks 0 and 3 taken by the two spares", p, got)
		}
	}
}

// Ranks 0 and 4 failed, so rank 1 leads the repair; it fails after
// activating two spares, before the second agreement: the others send
// Drop to every spare, and the next attempt, led by rank 2, replaces
// ranks 0, 1 and 4 with the three spares.
func TestReplaceSecondLeaderFailsAfterActivation(t *testing.T) {
	for p, got := range leaderFailsAfterActivation(t, 5, 3, 1, 0, 4) {
		if got[2] != 2 || got[3] != 3 || got[0] < 5 || got[1] < 5 || got[4] < 5 {
			t.Errorf("process %d sees %v: want 2 and 3 in place, ranks 0, 1 and 4 taken by the spares", p, got)
		}
	}
}

// Without a failure Replace returns a communicator of the same ranks and
// takes no spare.
func TestReplaceNoFailure(t *testing.T) {
	err := runSpares(t, 3, 1, func(w *World) error {
		if w.Replacement() != nil {
			return errors.New("a spare was taken without a failure")
		}
		c := w.CommWorld()
		nc, err := c.Replace()
		if err != nil {
			return err
		}
		if nc.Size() != 3 || nc.Rank() != c.Rank() {
			return fmt.Errorf("size %d rank %d, want 3 and %d", nc.Size(), nc.Rank(), c.Rank())
		}
		if len(w.Spares()) != 1 {
			return fmt.Errorf("%d spares left, want 1", len(w.Spares()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkUniform fails t when process p's view got of a repaired
// communicator differs from any other process's in procs.
func checkUniform(t *testing.T, procs map[int][]int, p int, got []int) {
	t.Helper()
	for q, other := range procs {
		if !slices.Equal(got, other) {
			t.Errorf("process %d sees %v, process %d %v: not uniform", p, got, q, other)
			return
		}
	}
}
