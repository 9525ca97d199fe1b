package mpi_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
)

// Reinit inside mpi.Run (seed 000): a rank killed inside the resilient
// function is started again as its next incarnation, the others roll back,
// all in a new epoch on a fresh in-process fabric.

// runWithin runs fn as n ranks under mpi.Run and fails the test if the job
// does not end within d (a hang), printing every goroutine.
func runWithin(t *testing.T, n int, d time.Duration, fn func(w *mpi.World) error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- mpi.Run(n, fn) }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		buf := make([]byte, 32<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("job of %d ranks did not end within %v (hang); goroutines:\n%s", n, d, buf)
		return nil
	}
}

// waitCtx waits until ctx is cancelled (the rank's epoch ended), at most d.
func waitCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(d):
		return fmt.Errorf("the resilient function's context was not cancelled within %v", d)
	}
}

// run records what every run of the resilient function saw.
type reinitRun struct {
	rank, epoch int
	state       mpi.ReinitState
	restored    int // the checkpoint version it resumed from (0: none)
}

type reinitLog struct {
	mu   sync.Mutex
	runs []reinitRun
	errs []string
}

func (l *reinitLog) add(r reinitRun) {
	l.mu.Lock()
	l.runs = append(l.runs, r)
	l.mu.Unlock()
}

func (l *reinitLog) fail(format string, a ...any) error {
	err := fmt.Errorf(format, a...)
	l.mu.Lock()
	l.errs = append(l.errs, err.Error())
	l.mu.Unlock()
	return err
}

// of returns the runs in epoch, by rank.
func (l *reinitLog) of(epoch int) map[int]reinitRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[int]reinitRun{}
	for _, r := range l.runs {
		if r.epoch == epoch {
			m[r.rank] = r
		}
	}
	return m
}

// steps is the iterative computation of the small tests: nsteps steps,
// each an Allreduce whose sum is checked, then a checkpoint of the next
// step (checkpoint package, files in dir). victim(epoch, step) names the
// rank that dies after the checkpoint of that step (-1: none): every
// rank takes part in a barrier first, so the kill is tied to the event
// that all of them have the checkpoint. The run is recorded in log with
// the checkpoint version it resumed from (the newest every rank has).
func steps(ctx context.Context, w *mpi.World, st mpi.ReinitState, dir string, nsteps int, log *reinitLog, victim func(epoch, step int) int) error {
	c := w.CommWorld()
	rank, n := c.Rank(), c.Size()
	store, err := checkpoint.Open(dir, rank)
	if err != nil {
		return log.fail("rank %d: open checkpoints: %v", rank, err)
	}
	mine := 0
	if v, err := store.Latest(); err == nil {
		mine = v
	}
	common := []int64{0}
	if err := mpi.Allreduce(c, []int64{int64(mine)}, common, mpi.Min); err != nil {
		return log.fail("rank %d: allreduce of the checkpoints: %v", rank, err)
	}
	step := 0
	if common[0] > 0 {
		b, err := store.Load(int(common[0]))
		if err != nil {
			return log.fail("rank %d: load checkpoint %d: %v", rank, common[0], err)
		}
		step = int(binary.LittleEndian.Uint64(b))
	}
	log.add(reinitRun{rank: rank, epoch: w.Epoch(), state: st, restored: int(common[0])})
	for ; step < nsteps; step++ {
		sum := []int64{0}
		if err := mpi.Allreduce(c, []int64{int64(rank + step)}, sum, mpi.Sum); err != nil {
			return log.fail("rank %d epoch %d step %d: allreduce: %v", rank, w.Epoch(), step, err)
		}
		if want := int64(n*(n-1)/2 + n*step); sum[0] != want {
			return log.fail("rank %d epoch %d step %d: sum %d, want %d", rank, w.Epoch(), step, sum[0], want)
		}
		if err := store.Save(step+1, binary.LittleEndian.AppendUint64(nil, uint64(step+1))); err != nil {
			return log.fail("rank %d: save: %v", rank, err)
		}
		if v := victim(w.Epoch(), step); v >= 0 {
			if err := c.Barrier(); err != nil {
				return log.fail("rank %d: barrier before the kill: %v", rank, err)
			}
			if v == rank {
				w.Kill()
			}
		}
	}
	return nil
}

// victims returns the victim function of steps for a table epoch ->
// {rank, step}.
func victims(at map[int][2]int) func(epoch, step int) int {
	return func(epoch, step int) int {
		if v, ok := at[epoch]; ok && v[1] == step {
			return v[0]
		}
		return -1
	}
}

func noVictim(epoch, step int) int { return -1 }

// reinitSteps runs steps under Reinit (ErrorsReinitAsync) as n ranks with
// the kills of at, and fails the test on any error.
func reinitSteps(t *testing.T, n, nsteps int, at map[int][2]int) *reinitLog {
	t.Helper()
	dir := t.TempDir()
	log := &reinitLog{}
	err := runWithin(t, n, 60*time.Second, func(w *mpi.World) error {
		if err := w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync); err != nil {
			return err
		}
		return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			return steps(ctx, w, st, dir, nsteps, log, victims(at))
		})
	})
	if err != nil || len(log.errs) > 0 {
		t.Fatalf("Run: %v; rank errors: %v", err, log.errs)
	}
	return log
}

// checkEpoch asserts that every rank ran the resilient function in epoch
// with the state it should have (restarted: the killed ranks' new
// incarnations) and restored at least version minRestored.
func checkEpoch(t *testing.T, log *reinitLog, n, epoch int, restarted map[int]bool, minRestored int) {
	t.Helper()
	runs := log.of(epoch)
	if len(runs) != n {
		t.Fatalf("epoch %d: %d ranks ran the resilient function, want %d: %v", epoch, len(runs), n, runs)
	}
	for r := range n {
		want := mpi.ReinitReinited
		switch {
		case epoch == 0:
			want = mpi.ReinitNew
		case restarted[r]:
			want = mpi.ReinitRestarted
		}
		got := runs[r]
		if got.state != want {
			t.Errorf("epoch %d rank %d: state %v, want %v", epoch, r, got.state, want)
		}
		if got.restored < minRestored {
			t.Errorf("epoch %d rank %d: resumed from checkpoint %d, want at least %d", epoch, r, got.restored, minRestored)
		}
	}
}

// A rank killed in the middle of the resilient function: it is started
// again (its next incarnation enters the resilient function as
// ReinitRestarted, as a process respawned by ftmpirun does), the others
// roll back (ReinitReinited), the epoch number is 1 in the second run,
// every rank resumes from the checkpoint all of them took before the
// kill (the new incarnation reads its predecessor's file), and the
// computation ends with the failure-free sums.
func TestRunReinitRespawnsKilledRank(t *testing.T) {
	const n, victim, killStep = 6, 2, 4
	log := reinitSteps(t, n, 8, map[int][2]int{0: {victim, killStep}})
	checkEpoch(t, log, n, 0, nil, 0)
	checkEpoch(t, log, n, 1, map[int]bool{victim: true}, killStep+1)
	if runs := log.of(2); len(runs) != 0 {
		t.Errorf("an epoch 2 nobody caused: %v", runs)
	}
}

// Two failures, one per epoch: rank 1 in epoch 0, rank 4 (a survivor of
// the first) in epoch 1. Three epochs; in the third both are new
// incarnations and resume from the checkpoint taken before the second
// kill.
func TestRunReinitTwoFailures(t *testing.T) {
	const n = 5
	log := reinitSteps(t, n, 8, map[int][2]int{0: {1, 2}, 1: {4, 5}})
	checkEpoch(t, log, n, 0, nil, 0)
	checkEpoch(t, log, n, 1, map[int]bool{1: true}, 3)
	checkEpoch(t, log, n, 2, map[int]bool{4: true}, 6)
}

// A second failure during the epoch change: rank 1 is killed; rank 3,
// whose context that cancels, is killed before it rejoined (its epoch-0
// World): the epoch 1 that rank 1's death began never opens (its fence
// waits for rank 3), epoch 2 supersedes it, and ranks 1 and 3 both enter
// it as new incarnations. As under ftmpirun (a failure during the rejoin
// fence starts a newer epoch).
func TestRunReinitFailureDuringEpochChange(t *testing.T) {
	const n = 6
	log := &reinitLog{}
	dir := t.TempDir()
	err := runWithin(t, n, 60*time.Second, func(w *mpi.World) error {
		if err := w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync); err != nil {
			return err
		}
		return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			c := w.CommWorld()
			if w.Epoch() > 0 {
				return steps(ctx, w, st, dir, 4, log, noVictim)
			}
			if err := steps(ctx, w, st, dir, 2, log, noVictim); err != nil {
				return err
			}
			if err := c.Barrier(); err != nil {
				return log.fail("rank %d: barrier: %v", c.Rank(), err)
			}
			switch c.Rank() {
			case 1:
				w.Kill()
			case 3:
				// Its context is cancelled by rank 1's death; it dies
				// before rejoining.
				if err := waitCtx(ctx, 30*time.Second); err != nil {
					return log.fail("rank 3: %v", err)
				}
				w.Kill()
			}
			// The others block until the rollback (rank 1 is gone).
			err := c.Barrier()
			return log.fail("rank %d: barrier with a dead rank returned: %v", c.Rank(), err)
		})
	})
	if err != nil || len(log.errs) > 0 {
		t.Fatalf("Run: %v; rank errors: %v", err, log.errs)
	}
	checkEpoch(t, log, n, 0, nil, 0)
	if runs := log.of(1); len(runs) != 0 {
		t.Errorf("epoch 1 opened though rank 3 died before rejoining it: %v", runs)
	}
	checkEpoch(t, log, n, 2, map[int]bool{1: true, 3: true}, 2)
}

// Seed 000 1.4.2 in process: a failure while a live rank is outside
// Reinit ends the job, as under ftmpirun; Run returns an *AbortError
// whose Reason says which rank was outside.
func TestRunReinitFailureOutsideIsFatal(t *testing.T) {
	cases := []struct {
		name, want string
		fn         func(w *mpi.World) error
	}{
		{
			// Rank 0 returned from Reinit; rank 3 dies afterwards (it
			// receives rank 0's message sent after its return).
			name: "after-return", want: "rank 3 killed by fault injection after rank 0 returned from MPI_Reinit: no rollback location",
			fn: func(w *mpi.World) error {
				w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
				err := mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
					c := w.CommWorld()
					if err := c.Barrier(); err != nil || c.Rank() == 0 {
						return err
					}
					if c.Rank() == 3 {
						if _, err := mpi.Recv(c, []int32{0}, 0, 7); err != nil {
							return err
						}
						w.Kill()
					}
					return c.Barrier() // fails: the job ends
				})
				if err != nil {
					return err
				}
				if w.CommWorld().Rank() == 0 {
					return mpi.Send(w.CommWorld(), []int32{1}, 3, 7)
				}
				return nil
			},
		},
		{
			// A plain failure (no rank had called Reinit), then Reinit:
			// that failure had no rollback location.
			name: "before-reinit", want: "rank 3 killed by fault injection before rank",
			fn: func(w *mpi.World) error {
				c := w.CommWorld()
				c.SetErrhandler(mpi.ErrorsReturn)
				if c.Rank() == 3 {
					w.Kill()
				}
				if _, err := mpi.Recv(c, []int32{0}, 3, 0); !errors.Is(err, mpi.ErrProcFailed) {
					return fmt.Errorf("receive from the killed rank: %v, want ErrProcFailed", err)
				}
				c.SetErrhandler(mpi.ErrorsReinitAsync)
				return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
					return fmt.Errorf("the resilient function ran after a failure without a rollback location")
				})
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := runWithin(t, 5, 60*time.Second, tc.fn)
			var ae *mpi.AbortError
			if !errors.As(err, &ae) || !strings.Contains(ae.Reason, tc.want) || !strings.Contains(ae.Reason, "seed 000 1.4.2") {
				t.Fatalf("Run: %v; want an *AbortError whose reason has %q", err, tc.want)
			}
		})
	}
}

// As ftmpirun's --max-restarts (default 16): an in-process job recovers
// from 16 failures; the 17th ends it with an *AbortError that says so.
// Rank 1 dies in every epoch, once every rank is in it.
func TestRunReinitRestartLimitEndsJob(t *testing.T) {
	var mu sync.Mutex
	last := -1
	err := runWithin(t, 3, 60*time.Second, func(w *mpi.World) error {
		w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
		return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			mu.Lock()
			last = max(last, w.Epoch())
			mu.Unlock()
			c := w.CommWorld()
			if err := c.Barrier(); err != nil {
				return err
			}
			if c.Rank() == 1 {
				w.Kill()
			}
			return c.Barrier()
		})
	})
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "restart limit reached (16") {
		t.Fatalf("Run: %v; want an *AbortError for the restart limit", err)
	}
	if last != 16 {
		t.Errorf("the newest epoch was %d, want 16", last)
	}
}

// Seed 000's rules in process, as under ftmpirun
// (e2e: TestReinitRulesGiveClearErrors): Reinit without a Reinit handler
// on CommWorld, a second Reinit, and Finalize inside the resilient
// function return ErrOther; Finalize after Reinit returned works (the
// current epoch's World is finalized).
func TestRunReinitRules(t *testing.T) {
	err := runWithin(t, 3, 60*time.Second, func(w *mpi.World) error {
		c := w.CommWorld()
		noop := func(context.Context, *mpi.World, mpi.ReinitState) error { return nil }
		if err := mpi.Reinit(w, noop); !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "1.4.1") {
			return fmt.Errorf("Reinit without a Reinit handler: %v, want ErrOther (seed 000 1.4.1)", err)
		}
		c.SetErrhandler(mpi.ErrorsReinitSync)
		err := mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			if err := w.Finalize(); !errors.Is(err, mpi.ErrOther) {
				return fmt.Errorf("Finalize inside Reinit: %v, want ErrOther", err)
			}
			if err := mpi.Reinit(w, noop); !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "more than once") {
				return fmt.Errorf("a second Reinit inside the first: %v, want ErrOther", err)
			}
			return w.CommWorld().Barrier()
		})
		if err != nil {
			return err
		}
		if err := mpi.Reinit(w, noop); !errors.Is(err, mpi.ErrOther) {
			return fmt.Errorf("a second Reinit after the first: %v, want ErrOther", err)
		}
		return w.Finalize()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A panic inside the resilient function is not a process failure under
// Run: it is a bug, reported with its stack (*PanicError), and the job
// ends; nothing is respawned (a panic that recurs would respawn forever).
func TestRunReinitPanicEndsJob(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	err := runWithin(t, 4, 60*time.Second, func(w *mpi.World) error {
		w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
		return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			mu.Lock()
			runs++
			mu.Unlock()
			c := w.CommWorld()
			if err := c.Barrier(); err != nil {
				return err
			}
			if c.Rank() == 2 {
				panic("bug in rank 2")
			}
			return c.Barrier()
		})
	})
	var pe *mpi.PanicError
	if !errors.As(err, &pe) || pe.Rank != 2 {
		t.Fatalf("Run: %v; want rank 2's *PanicError", err)
	}
	if runs != 4 {
		t.Errorf("the resilient function ran %d times, want 4 (no epoch after a panic)", runs)
	}
}

// ErrorsReinitSync in process: after the kill the survivors' calls return
// ErrProcFailed until TestFailure, which rolls back.
func TestRunReinitSync(t *testing.T) {
	const n, victim = 4, 1
	log := &reinitLog{}
	err := runWithin(t, n, 60*time.Second, func(w *mpi.World) error {
		w.CommWorld().SetErrhandler(mpi.ErrorsReinitSync)
		return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			c := w.CommWorld()
			log.add(reinitRun{rank: c.Rank(), epoch: w.Epoch(), state: st})
			if err := c.Barrier(); err != nil {
				return log.fail("rank %d: barrier: %v", c.Rank(), err)
			}
			if w.Epoch() == 0 {
				if c.Rank() == victim {
					w.Kill()
				}
				err := c.Barrier()
				if !errors.Is(err, mpi.ErrProcFailed) {
					return log.fail("rank %d: barrier with the dead rank: %v, want ErrProcFailed", c.Rank(), err)
				}
				mpi.TestFailure(w) // rolls back
				return log.fail("rank %d: TestFailure returned after a failure", c.Rank())
			}
			sum := []int64{0}
			if err := mpi.Allreduce(c, []int64{1}, sum, mpi.Sum); err != nil || sum[0] != n {
				return log.fail("rank %d: allreduce in epoch 1: %d, %v", c.Rank(), sum[0], err)
			}
			return mpi.TestFailure(w)
		})
	})
	if err != nil || len(log.errs) > 0 {
		t.Fatalf("Run: %v; rank errors: %v", err, log.errs)
	}
	checkEpoch(t, log, n, 0, nil, 0)
	checkEpoch(t, log, n, 1, map[int]bool{victim: true}, 0)
}

// loadavg is the machine's load (the first three fields of
// /proc/loadavg), for the measurements' log lines.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
