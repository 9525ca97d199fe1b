// Command reinit-sync is seed 000's example 1.2 in Go: global restart with
// synchronous error handling. CommWorld gets ErrorsReinitSync: after a
// failure MPI calls return errors (as with ErrorsReturn) and the program
// goes back to the resilient function only when it calls
// mpi.TestFailure, here once per step before the checkpoint, so a
// checkpoint is never written from a step that saw a failure:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure reinit --inject kill:rank=1,at=300ms ./examples/reinit-sync
//
// The result line is the same as a run without failures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/examples/internal/heat"
	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	p := heat.Flags()
	flag.Parse()
	// MPI_Init, then the Reinit handler on MPI_COMM_WORLD before MPI_Reinit.
	w, st := heat.Start("reinit-sync", p, mpi.ErrorsReinitSync)
	var sum float64
	errorsSeen := 0
	err := mpi.Reinit(w, func(_ context.Context, w *mpi.World, state mpi.ReinitState) error {
		c := w.CommWorld()
		s := heat.New(*p, c.Rank(), c.Size())
		resumed, err := heat.Restore(st, c, s)
		if err != nil {
			mpi.TestFailure(w) // a failure during the restore: roll back again
			return err
		}
		if c.Rank() == 0 {
			if resumed {
				fmt.Printf("reinit-sync: %s in epoch %d: resume from checkpoint at step %d\n", state, w.Epoch(), s.Step)
			} else {
				fmt.Printf("reinit-sync: %s in epoch %d: initialise\n", state, w.Epoch())
			}
		}
		for s.Step < p.Steps {
			if err := s.Advance(c); err != nil {
				errorsSeen++ // returned, as with ErrorsReturn
			}
			mpi.TestFailure(w) // does not return after a failure
			if s.Step%p.Every == 0 {
				if err := st.SaveCollective(c, s.Step, s.Encode()); err != nil {
					mpi.TestFailure(w)
					return err
				}
			}
		}
		sum, err = s.Checksum(c)
		if err != nil {
			mpi.TestFailure(w)
		}
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "reinit-sync: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("reinit-sync: done; rank 0 saw %d returned errors\n", errorsSeen)
		fmt.Printf("result: heat n=%d steps=%d checksum=%.15e\n", p.N, p.Steps, sum)
	}
	w.Finalize()
}
