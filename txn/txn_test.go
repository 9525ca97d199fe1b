package txn_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
	"github.com/ftmpi/ftmpi/txn"
)

// counter is a process's state: a number saved as 8 bytes.
type counter struct{ v int64 }

func (c *counter) config() txn.Config {
	return txn.Config{
		Save:    func() ([]byte, error) { return binary.LittleEndian.AppendUint64(nil, uint64(c.v)), nil },
		Restore: func(b []byte) error { c.v = int64(binary.LittleEndian.Uint64(b)); return nil },
	}
}

// result is what one rank ended with.
type result struct {
	v     int64
	st    txn.Stats
	errs  []error // Step's error per step
	lost  [][]int // Recover's lost ranks, per call
	alive bool
}

// run runs steps transactions on n in-process ranks. body is each step's
// part: it adds the communicator's size to the counter, after first
// changing the counter (so a rollback that does not restore shows); hook
// runs inside the part before its Allreduce (kills, application errors)
// and after (late kills).
func run(t *testing.T, n, steps int, cfg func(*counter, *txn.Config), before, after func(w *mpi.World, step, attempt int) error) []result {
	t.Helper()
	res := make([]result, n)
	var mu sync.Mutex
	err := mpi.Run(n, func(w *mpi.World) error {
		r := w.Rank()
		var ctr counter
		c := ctr.config()
		var lost [][]int
		c.Recover = func(_ *mpi.Comm, l []int) error { lost = append(lost, slices.Clone(l)); return nil }
		if cfg != nil {
			cfg(&ctr, &c)
		}
		tx, err := txn.New(w.CommWorld(), c)
		if err != nil {
			return err
		}
		var errs []error
		for step := 0; step < steps; step++ {
			attempt := -1
			errs = append(errs, tx.Step(func(c *mpi.Comm) error {
				attempt++
				base := ctr.v
				ctr.v += 1000 // a partial update the rollback must undo
				if err := before(w, step, attempt); err != nil {
					return err
				}
				sum := []int64{0}
				if err := mpi.Allreduce(c, []int64{1}, sum, mpi.Sum); err != nil {
					return err
				}
				ctr.v = base + sum[0]
				return after(w, step, attempt)
			}))
			mu.Lock()
			res[r] = result{v: ctr.v, st: tx.Stats(), errs: slices.Clone(errs), lost: lost, alive: true}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func none(*mpi.World, int, int) error { return nil }

// killAt kills rank at step's first attempt.
func killAt(rank, step int) func(*mpi.World, int, int) error {
	return func(w *mpi.World, s, a int) error {
		if w.Rank() == rank && s == step && a == 0 {
			w.Kill()
		}
		return nil
	}
}

func TestCommitsWithoutFailure(t *testing.T) {
	for r, res := range run(t, 4, 5, nil, none, none) {
		if res.v != 20 || res.st.Commits != 5 || res.st.Rollbacks != 0 || res.st.Repairs != 0 {
			t.Errorf("rank %d: counter %d, stats %+v; want 20 and 5 commits, no rollback", r, res.v, res.st)
		}
		for s, err := range res.errs {
			if err != nil {
				t.Errorf("rank %d step %d: %v", r, s, err)
			}
		}
	}
}

// checkSurvivors: rank killed was lost in step 2 (of 5, 4 ranks): the
// survivors rolled it back once and redid it on 3 ranks: 4+4+3+3+3.
func checkSurvivors(t *testing.T, res []result, killed int) {
	t.Helper()
	for r, x := range res {
		if r == killed {
			continue
		}
		if !x.alive {
			t.Fatalf("rank %d did not finish", r)
		}
		if x.v != 17 {
			t.Errorf("rank %d: counter %d, want 17 (4+4+3+3+3: step 2 rolled back and redone on 3 ranks)", r, x.v)
		}
		if x.st.Commits != 5 || x.st.Rollbacks != 1 || x.st.Repairs != 1 || !slices.Equal(x.st.Lost, []int{killed}) {
			t.Errorf("rank %d: stats %+v, want 5 commits, 1 rollback, 1 repair, lost [%d]", r, x.st, killed)
		}
		if len(x.lost) != 1 || !slices.Equal(x.lost[0], []int{killed}) {
			t.Errorf("rank %d: Recover saw %v, want [[%d]]", r, x.lost, killed)
		}
		for s, err := range x.errs {
			if err != nil {
				t.Errorf("rank %d step %d: %v", r, s, err)
			}
		}
	}
}

// A process killed inside a step: the others' parts fail, the step is
// rolled back at every survivor (the partial update undone) and redone on
// the survivors.
func TestKillInStepRollsBackAndRetries(t *testing.T) {
	checkSurvivors(t, run(t, 4, 5, nil, killAt(2, 2), none), 2)
}

// A process killed after its part succeeded, before the agreement: every
// survivor's part succeeded, but the agreement finds the failure, and the
// step is rolled back everywhere all the same (its state is lost with the
// process).
func TestKillAfterPartRollsBackEverywhere(t *testing.T) {
	checkSurvivors(t, run(t, 4, 5, nil, none, killAt(2, 2)), 2)
}

// Without Restore the partial update survives the rollback: the test
// above would see it (this is what makes it a test of the rollback).
func TestWithoutRestoreTheRollbackShows(t *testing.T) {
	res := run(t, 4, 5, func(_ *counter, c *txn.Config) { c.Restore = nil }, killAt(2, 2), none)
	if res[0].v == 17 {
		t.Fatalf("counter 17 without Restore: the partial update did not show")
	}
}

// An application error at one process: the step is rolled back at every
// process and not retried; Step returns the error there and ErrAborted
// elsewhere; nobody is lost and the next steps commit on all 4.
func TestApplicationErrorRollsBackWithoutRetry(t *testing.T) {
	bad := errors.New("bad input")
	res := run(t, 4, 4, nil, func(w *mpi.World, s, a int) error {
		if w.Rank() == 1 && s == 1 {
			return bad
		}
		return nil
	}, none)
	for r, x := range res {
		if x.v != 12 { // 4 + (step 1 rolled back) + 4 + 4
			t.Errorf("rank %d: counter %d, want 12", r, x.v)
		}
		want := txn.ErrAborted
		if r == 1 {
			want = bad
		}
		if !errors.Is(x.errs[1], want) {
			t.Errorf("rank %d step 1: %v, want %v", r, x.errs[1], want)
		}
		if x.errs[0] != nil || x.errs[2] != nil || x.errs[3] != nil {
			t.Errorf("rank %d: errors %v", r, x.errs)
		}
		if x.st.Commits != 3 || x.st.Rollbacks != 1 || x.st.Repairs != 1 || len(x.st.Lost) != 0 {
			t.Errorf("rank %d: stats %+v", r, x.st)
		}
		if len(x.lost) != 1 || len(x.lost[0]) != 0 {
			t.Errorf("rank %d: Recover saw %v, want one call with nobody lost", r, x.lost)
		}
	}
}

// A step that keeps failing gives up after MaxRetries retries with the
// last failure.
func TestRetriesAreBounded(t *testing.T) {
	res := run(t, 4, 1, func(_ *counter, c *txn.Config) { c.MaxRetries = 1 }, func(w *mpi.World, s, a int) error {
		if w.Rank() == 3-a { // rank 3 dies in the first attempt, rank 2 in the retry
			w.Kill()
		}
		return nil
	}, none)
	for r := 0; r < 2; r++ {
		err := res[r].errs[0]
		// This process's last error is the failure or its consequence (the
		// other survivor revoked first).
		if !errors.Is(err, txn.ErrRetries) || !strings.Contains(err.Error(), "2 attempts; the last lost [2]") ||
			!errors.Is(err, mpi.ErrProcFailed) && !errors.Is(err, mpi.ErrRevoked) {
			t.Errorf("rank %d: %v, want ErrRetries after 2 attempts, rank 2 lost the last time", r, err)
		}
		if res[r].v != 0 {
			t.Errorf("rank %d: counter %d, want the initial 0 restored", r, res[r].v)
		}
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	if _, err := txn.New(nil, txn.Config{}); err == nil || !strings.Contains(err.Error(), "nil communicator") {
		t.Errorf("New(nil): %v", err)
	}
	err := mpi.Run(1, func(w *mpi.World) error {
		if _, err := txn.New(w.CommWorld(), txn.Config{MaxRetries: -1}); err == nil || !strings.Contains(err.Error(), "MaxRetries -1") {
			return fmt.Errorf("MaxRetries -1: %v", err)
		}
		save := errors.New("disk full")
		if _, err := txn.New(w.CommWorld(), txn.Config{Save: func() ([]byte, error) { return nil, save }}); !errors.Is(err, save) {
			return fmt.Errorf("a failing Save: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
