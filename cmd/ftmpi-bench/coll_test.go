package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// The loop of a collective benchmark is sized from warmed loops, not from
// one call: a first timed call that is slow (as the first call after a
// gated Barrier at np 16, which met members asleep) does not make the
// loop short. Here the third call of f (the first timed one) takes the
// whole budget, 200 ms, and the others (an in-process Barrier) well under
// 20 ms; sized from that one call the loop had 1 call, now at least 10.
func TestCalibrateSizesFromAWarmedLoop(t *testing.T) {
	const budget = 200 * time.Millisecond
	got := make([]int, 2)
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		var calls atomic.Int64
		f := func() error {
			if calls.Add(1) == 3 {
				time.Sleep(budget) // the slow first timed call (what is measured, not a synchronisation)
			}
			return c.Barrier()
		}
		n, err := calibrate(c, f, budget)
		got[c.Rank()] = n
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != got[1] {
		t.Fatalf("the ranks sized different loops: %v", got)
	}
	if got[0] < 10 {
		t.Fatalf("loop of %d calls for a budget of %v, want at least 10 (every call but one well under 20 ms)", got[0], budget)
	}
}
