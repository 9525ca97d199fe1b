package mpi

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// waitEntered waits (up to a deadline) until w has heard that each of
// procs entered Finalize.
func waitEntered(w *World, procs ...int) error {
	ch := w.fence.signal()
	deadline := time.After(30 * time.Second)
	for {
		w.fence.mu.Lock()
		all := true
		for _, p := range procs {
			all = all && w.fence.entered[p]
		}
		w.fence.mu.Unlock()
		if all {
			return nil
		}
		select {
		case <-ch:
		case <-deadline:
			return fmt.Errorf("process %d did not hear of %v entering Finalize within 30s", w.rank, procs)
		}
	}
}

// The fence of a process without a head (finalizeFence): a process that
// entered Finalize does not leave it while another has not entered it and
// is not failed; it leaves once the last one enters, or fails.
func TestFinalizeFenceWaitsForEveryProcess(t *testing.T) {
	for _, last := range []string{"enters", "fails"} {
		t.Run("last "+last, func(t *testing.T) {
			var left [2]atomic.Bool
			runDPM(t, 3, func(w *World, c *Comm) error {
				if w.rank < 2 {
					w.finalizeFence()
					left[w.rank].Store(true)
					return nil
				}
				// Rank 2 hears both enter Finalize: neither may have left it.
				if err := waitEntered(w, 0, 1); err != nil {
					return err
				}
				for r := range left {
					if left[r].Load() {
						return fmt.Errorf("rank %d left Finalize before rank 2 entered it", r)
					}
				}
				if last == "fails" {
					w.Kill() // the others' fence counts the failure
				}
				w.finalizeFence()
				return nil
			})
			for r := range left {
				if !left[r].Load() {
					t.Fatalf("rank %d never left Finalize", r)
				}
			}
		})
	}
}
