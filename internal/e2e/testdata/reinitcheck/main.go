// Command reinitcheck exercises the rules of seed 000 (Reinit) for the
// end-to-end tests; each mode prints one "result:" line at rank 0.
//
//	rules    no failure: the undefined-behaviour cases give clear errors
//	blocked  async: ranks blocked on a rank that gets killed roll back at
//	         once; states and the old epoch's communicators are checked
//	sync     sync: errors are returned until TestFailure rolls back
//	outside  the failure happens after Reinit returned: the job ends
//	before   the failure happens before anyone calls Reinit: the job ends
//	asynctf  async: TestFailure after a known failure returns nil and does
//	         nothing; the next MPI call rolls back
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: reinitcheck rules|blocked|sync|outside|before")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "reinitcheck:", err)
		os.Exit(1)
	}
	var res string
	switch os.Args[1] {
	case "rules":
		res = rules(w)
	case "blocked":
		res = blocked(w)
	case "sync":
		res = syncMode(w)
	case "outside":
		res = outside(w)
	case "before":
		res = before(w)
	case "asynctf":
		res = asyncTestFailure(w)
	default:
		fmt.Fprintln(os.Stderr, "reinitcheck: unknown mode", os.Args[1])
		os.Exit(2)
	}
	if w.Rank() == 0 {
		fmt.Println("result:", res)
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "reinitcheck: finalize:", err)
		os.Exit(1)
	}
}

func check(bad *[]string, name string, err error, want string) {
	if err == nil || !strings.Contains(err.Error(), want) {
		*bad = append(*bad, fmt.Sprintf("%s: got %v, want an error containing %q", name, err, want))
	}
}

func rules(w *mpi.World) string {
	var bad []string
	nop := func(context.Context, *mpi.World, mpi.ReinitState) error { return nil }
	check(&bad, "reinit-before-handler", mpi.Reinit(w, nop), "before MPI_Reinit")
	check(&bad, "handler-on-self", w.CommSelf().SetErrhandler(mpi.ErrorsReinitAsync), "only be set on MPI_COMM_WORLD")
	dup, err := w.CommWorld().Dup()
	if err != nil {
		return "dup: " + err.Error()
	}
	check(&bad, "handler-on-dup", dup.SetErrhandler(mpi.ErrorsReinitSync), "only be set on MPI_COMM_WORLD")
	if err := w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync); err != nil {
		return "set async: " + err.Error()
	}
	check(&bad, "switch-to-sync", w.CommWorld().SetErrhandler(mpi.ErrorsReinitSync), "may not replace it")
	var state mpi.ReinitState = -1
	err = mpi.Reinit(w, func(_ context.Context, w *mpi.World, st mpi.ReinitState) error {
		state = st
		check(&bad, "finalize-inside", w.Finalize(), "after Reinit returns")
		check(&bad, "nested-reinit", mpi.Reinit(w, nop), "more than once")
		if err := mpi.TestFailure(w); err != nil {
			bad = append(bad, "test-failure without failure: "+err.Error())
		}
		return w.CommWorld().Barrier() // still usable: Finalize inside was refused
	})
	if err != nil {
		bad = append(bad, "reinit: "+err.Error())
	}
	if state != mpi.ReinitNew {
		bad = append(bad, fmt.Sprintf("state %v, want new", state))
	}
	check(&bad, "second-reinit", mpi.Reinit(w, nop), "more than once")
	if len(bad) > 0 {
		return "rules FAILED: " + strings.Join(bad, "; ")
	}
	return "rules ok"
}

// gatherStates returns every rank's state, joined.
func gatherStates(c *mpi.Comm, st mpi.ReinitState) (string, error) {
	all := make([]int32, c.Size())
	if err := mpi.Allgather(c, []int32{int32(st)}, all); err != nil {
		return "", err
	}
	names := make([]string, len(all))
	for i, v := range all {
		names[i] = mpi.ReinitState(v).String()
	}
	return strings.Join(names, ","), nil
}

func blocked(w *mpi.World) string {
	w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
	var oldDup *mpi.Comm
	var res string
	unwound := false
	err := mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
		c := w.CommWorld()
		if w.Epoch() == 0 {
			d, err := c.Dup()
			if err != nil {
				return err
			}
			oldDup = d
			// Everybody waits for a message nobody sends: only the
			// rollback can end this. Rank 2 gets killed once every rank
			// is past the barrier (the test's --inject waits for the line).
			buf := []int32{0}
			defer func() { unwound = true }() // runs when the panic unwinds
			if err := c.Barrier(); err != nil {
				return err
			}
			if c.Rank() == 0 {
				fmt.Println("reinitcheck: every rank is about to block")
			}
			_, err = mpi.Recv(c, buf, (c.Rank()+1)%c.Size(), 99)
			return fmt.Errorf("epoch 0 receive returned: %v", err)
		}
		states, err := gatherStates(c, st)
		if err != nil {
			return err
		}
		old := "unused"
		if oldDup != nil {
			if err := oldDup.Barrier(); errors.Is(err, mpi.ErrProcFailed) {
				old = "procfailed"
			} else {
				old = fmt.Sprintf("%v", err)
			}
		}
		if ctx.Err() != nil {
			return errors.New("context of the current epoch cancelled")
		}
		res = fmt.Sprintf("blocked epoch=%d states=%s unwound=%v olddup=%s", w.Epoch(), states, unwound || c.Rank() == 2, old)
		return nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	return res
}

func syncMode(w *mpi.World) string {
	w.CommWorld().SetErrhandler(mpi.ErrorsReinitSync)
	returned := 0
	var res string
	err := mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
		c := w.CommWorld()
		if w.Epoch() == 0 {
			deadline := time.Now().Add(30 * time.Second)
			for n := 0; time.Now().Before(deadline); n++ {
				if n == 1 && c.Rank() == 0 {
					fmt.Println("reinitcheck: barriers running") // the test kills rank 1 now
				}
				if err := c.Barrier(); err != nil {
					if !errors.Is(err, mpi.ErrProcFailed) {
						return fmt.Errorf("barrier: %v", err)
					}
					returned++
					if returned == 3 { // errors keep being returned until TestFailure
						mpi.TestFailure(w)
						return errors.New("TestFailure returned after a failure")
					}
				}
			}
			return errors.New("no failure within 30s")
		}
		states, err := gatherStates(c, st)
		if err != nil {
			return err
		}
		sawErrors := returned >= 3 || st == mpi.ReinitRestarted
		res = fmt.Sprintf("sync epoch=%d states=%s errors-returned=%v", w.Epoch(), states, sawErrors)
		return mpi.TestFailure(w)
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	return res
}

func outside(w *mpi.World) string {
	w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
	if err := mpi.Reinit(w, func(context.Context, *mpi.World, mpi.ReinitState) error { return nil }); err != nil {
		fmt.Fprintln(os.Stderr, "reinitcheck:", err)
		os.Exit(1)
	}
	// Outside Reinit: wait for a message nobody sends; rank 1 gets killed
	// once every rank returned from Reinit (the test waits for the line).
	c := w.CommWorld()
	if err := c.Barrier(); err != nil {
		fmt.Fprintln(os.Stderr, "reinitcheck: barrier:", err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		fmt.Println("reinitcheck: every rank returned from Reinit")
	}
	buf := []int32{0}
	_, err := mpi.Recv(c, buf, (c.Rank()+1)%c.Size(), 99)
	return fmt.Sprintf("outside: receive returned %v", err)
}

// before: rank 1 SIGKILLs itself once every rank is initialized and has
// left the start-up barrier, before anyone called Reinit; the survivors
// make no further MPI call until the file
// named by $REINITCHECK_GO exists (the test creates it once the launcher
// has handled the death), then call Reinit. Seed 000 1.4.2: with no active
// rollback location the failure is fatal, so the job must end before a
// survivor's resilient function reports anything.
func before(w *mpi.World) string {
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReinitAsync)
	if err := c.Barrier(); err != nil { // every rank initialized, nobody failed yet
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: barrier: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	// Rank 1 dies once every other rank has left the barrier (their
	// arrival messages), not while one still needs its part of it: a
	// barrier failing at a survivor would be an MPI call seeing the
	// failure, which this case excludes.
	if w.Rank() == 1 {
		for r := 0; r < c.Size(); r++ {
			if r != 1 {
				if _, err := mpi.Recv(c, []int32{0}, r, 98); err != nil {
					fmt.Fprintf(os.Stderr, "reinitcheck: rank 1: arrival of rank %d: %v\n", r, err)
					os.Exit(1)
				}
			}
		}
		fmt.Fprintln(os.Stderr, "reinitcheck: rank 1 kills itself before MPI_Reinit")
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if err := mpi.Send(c, []int32{1}, 1, 98); err != nil {
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: arrival: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	goFile := os.Getenv("REINITCHECK_GO")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(goFile); err == nil {
			break
		}
		if goFile == "" || time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: $REINITCHECK_GO (%q) never appeared\n", w.Rank(), goFile)
			os.Exit(3)
		}
		time.Sleep(5 * time.Millisecond) // polling for the test's signal, bounded by the deadline
	}
	var res string
	err := mpi.Reinit(w, func(_ context.Context, w *mpi.World, st mpi.ReinitState) error {
		states, err := gatherStates(w.CommWorld(), st)
		res = fmt.Sprintf("before: resilient function ran, epoch=%d states=%s", w.Epoch(), states)
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: %s\n", w.Rank(), res)
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	return res
}

// asyncTestFailure: seed 000 1.3, MPI_Test_failure under the asynchronous
// handler "returns success and does nothing". In epoch 0 rank 2 kills
// itself once every rank is inside Reinit; the survivors wait, making no
// MPI call, until the failure is known (ctx cancelled), call TestFailure,
// which must return nil without rolling back, and then a Barrier, which
// rolls back. Epoch 1 reports the states and what TestFailure did.
func asyncTestFailure(w *mpi.World) string {
	w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
	tf := "not-called"
	var res string
	err := mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
		c := w.CommWorld()
		if w.Epoch() == 0 {
			if err := c.Barrier(); err != nil { // every rank is inside Reinit
				return err
			}
			if c.Rank() == 2 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
				return errors.New("no failure known within 30s")
			}
			tf = "returned-nil"
			if err := mpi.TestFailure(w); err != nil {
				tf = "returned-" + err.Error()
			}
			c.Barrier() // rolls back
			return errors.New("Barrier after a failure returned under the async handler")
		}
		states, err := gatherStates(c, st)
		if err != nil {
			return err
		}
		res = fmt.Sprintf("asynctf epoch=%d states=%s testfailure=%s", w.Epoch(), states, tf)
		return nil
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "reinitcheck: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	return res
}
