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
