package mpi

import (
	"fmt"
	"testing"
	"time"
)

// Calls prepared on a communicator's segment before the earlier ones
// ran (the preallocated run of coll.ShmPath.Prepare is taken) each run their own
// arguments, in whatever order they run: here three Allreduces prepared
// first and run last to first, then a fourth that takes the preallocated
// run again.
func TestShmPreparedCallsRunTheirOwnArguments(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		done <- Run(2, func(w *World) error {
			c := w.CommWorld()
			c.SetErrhandler(ErrorsReturn)
			if err := c.Barrier(); err != nil { // sets the segment up
				return err
			}
			if !c.coll.shm.On() {
				return fmt.Errorf("the segment is not in use")
			}
			var recv [3][]int64
			var runs [3]collRun
			for i := range runs {
				recv[i] = make([]int64, 1)
				run, err := allreducePrep(c, "MPI_Allreduce", []int64{int64((i + 1) * (c.Rank() + 1))}, recv[i], Sum)
				if err != nil {
					return err
				}
				runs[i] = run
			}
			calls := c.shmCalls()
			for i := len(runs) - 1; i >= 0; i-- {
				if err := runs[i](); err != nil {
					return err
				}
			}
			if got := c.shmCalls() - calls; got != 3 {
				return fmt.Errorf("%d of 3 calls through the segment", got)
			}
			for i := range recv {
				if want := int64(3 * (i + 1)); recv[i][0] != want {
					return fmt.Errorf("call %d: %d, want %d", i, recv[i][0], want)
				}
			}
			if c.coll.shm.Armed() {
				return fmt.Errorf("a run left its arguments armed")
			}
			r := make([]int64, 1)
			if err := Allreduce(c, []int64{10}, r, Sum); err != nil {
				return err
			}
			if r[0] != 20 || c.coll.shm.Armed() {
				return fmt.Errorf("allreduce after them: %d (armed %v), want 20", r[0], c.coll.shm.Armed())
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("job did not finish within 60 s")
	}
}
