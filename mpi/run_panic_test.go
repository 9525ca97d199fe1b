package mpi_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// panicAtRankOne is named so that the test can find it in the stack.
func panicAtRankOne(w *mpi.World) error {
	if w.Rank() == 1 {
		panic(errors.New("boom at rank 1"))
	}
	return w.CommWorld().Barrier() // released by the teardown, with an error
}

// Under mpi.Run a panicking rank's error keeps the panic value and the
// goroutine's stack at the panic (where it happened, not only what).
func TestRunKeepsPanicStack(t *testing.T) {
	err := mpi.Run(3, panicAtRankOne)
	var pe *mpi.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Run: %v, want a *mpi.PanicError", err)
	}
	if pe.Rank != 1 || pe.Value == nil || !strings.Contains(string(pe.Stack), "panicAtRankOne") {
		t.Fatalf("panic error rank %d value %v, stack:\n%s\nwant rank 1 and panicAtRankOne in the stack", pe.Rank, pe.Value, pe.Stack)
	}
	if msg := err.Error(); !strings.Contains(msg, "boom at rank 1") || !strings.Contains(msg, "panicAtRankOne") {
		t.Fatalf("error text lacks the value or the stack:\n%s", msg)
	}
	if pe.Unwrap() == nil || pe.Unwrap().Error() != "boom at rank 1" {
		t.Fatalf("Unwrap: %v, want the panic value", pe.Unwrap())
	}
}

// Issue 26: under mpi.Run too, a rank that panics while a deferred
// Finalize runs (the README's idiom) is reported as that rank's failure,
// with its value and stack, and the others, waiting for it in a Barrier,
// are released: Run returns, it does not hang.
func TestRunPanicUnderDeferredFinalize(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- mpi.Run(3, func(w *mpi.World) error {
			defer w.Finalize()
			return panicAtRankOne(w)
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Run hung after a rank panicked under a deferred Finalize")
	}
	var pe *mpi.PanicError
	if !errors.As(err, &pe) || pe.Rank != 1 || !strings.Contains(string(pe.Stack), "panicAtRankOne") {
		t.Fatalf("Run: %v, want rank 1's *mpi.PanicError with its stack", err)
	}
}

// Issue 26: a failure error says each fact once: the call, the
// communicator, the peer, the class, and the failed process named once
// ("rank 2: rank 2 failed: ..." before).
func TestProcFailedErrorNamesTheRankOnce(t *testing.T) {
	var got error
	err := mpi.Run(3, func(w *mpi.World) error {
		c := w.CommWorld()
		if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
			return err
		}
		switch w.Rank() {
		case 2:
			w.Kill()
		case 0:
			buf := make([]int, 1)
			_, got = mpi.Recv(c, buf, 2, 0)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !errors.Is(got, mpi.ErrProcFailed) {
		t.Fatalf("Recv from the killed rank: %v, want MPI_ERR_PROC_FAILED", got)
	}
	msg := got.Error()
	if n := strings.Count(msg, "rank 2"); n != 1 || !strings.HasPrefix(msg, "MPI_Recv on MPI_COMM_WORLD (peer 2): MPI_ERR_PROC_FAILED: process failed: rank 2") {
		t.Fatalf("error %q: names rank 2 %d times, want once after the class", msg, n)
	}
	t.Log(msg)
}
