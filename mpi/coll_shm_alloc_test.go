package mpi_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// A blocking Barrier, Allreduce 8 B, Bcast 8 B (np 4) and Allgather 8 B through
// a communicator's shared segment allocate nothing per call, at any rank
// (issue 28: three closures a call were a sixth of an Allreduce 8 B at
// np 2). The count is the whole process's (every rank of Run, and anything
// else running): the test fails at one allocation per four calls, where
// the per-call closures gave two to three per call and rank.
func TestShmCollectivesDoNotAllocate(t *testing.T) {
	const calls = 2000
	ops := []struct {
		name string
		f    func(c *mpi.Comm, send, recv []float64) error
	}{
		{"barrier", func(c *mpi.Comm, send, recv []float64) error { return c.Barrier() }},
		{"allreduce", func(c *mpi.Comm, send, recv []float64) error { return mpi.Allreduce(c, send, recv[:1], mpi.Sum) }},
		{"bcast", func(c *mpi.Comm, send, recv []float64) error { return mpi.Bcast(c, send, 0) }},
		{"allgather", func(c *mpi.Comm, send, recv []float64) error { return mpi.Allgather(c, send, recv) }},
	}
	for _, np := range []int{2, 4} {
		for _, op := range ops {
			if op.name == "bcast" && np < 4 {
				continue // point-to-point at np 2 (coll.ShmUse)
			}
			var before, after runtime.MemStats
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				send, recv := []float64{float64(c.Rank())}, make([]float64, np)
				for range 10 { // the segment's set-up and the first calls allocate
					if err := op.f(c, send, recv); err != nil {
						return err
					}
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				if c.Rank() == 0 {
					runtime.ReadMemStats(&before)
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				s0 := mpi.ShmCallsForTest(c)
				for range calls {
					if err := op.f(c, send, recv); err != nil {
						return err
					}
				}
				if got := mpi.ShmCallsForTest(c) - s0; got != calls {
					return fmt.Errorf("np %d %s: %d of %d calls through the segment", np, op.name, got, calls)
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				if c.Rank() == 0 {
					runtime.ReadMemStats(&after)
				}
				return nil
			})
			if n := after.Mallocs - before.Mallocs; n >= calls/4 {
				t.Errorf("np %d %s: %d allocations in %d calls at each of %d ranks", np, op.name, n, calls, np)
			} else {
				t.Logf("np %d %s: %d allocations in %d calls at each of %d ranks", np, op.name, n, calls, np)
			}
		}
	}
}
