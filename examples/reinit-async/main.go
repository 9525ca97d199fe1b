// Command reinit-async is seed 000's example 1.1 in Go: global restart with
// asynchronous error handling. CommWorld gets ErrorsReinitAsync, and
// mpi.Reinit runs the resilient function: load the newest common
// checkpoint (or initialise), then compute and checkpoint until done. When
// a process fails, ftmpirun respawns it and every rank is sent back into
// the resilient function at once (a blocked call unwinds; the context is
// cancelled for compute loops), and the run resumes from the checkpoint:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure reinit --inject kill:rank=2,at=300ms ./examples/reinit-async
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
	loseFiles := flag.Bool("lose-files", false, "a respawned rank deletes its own checkpoint files first (a lost node disk): it restores from its buddy's in-memory copy")
	dieAt := flag.String("die-at", "", "RANK:STEP: that rank's first process SIGKILLs itself when it reaches STEP (a deterministic failure for tests)")
	corrupt := flag.Bool("corrupt", false, "a respawned rank flips a byte of its newest checkpoint file first: the damage is detected and the buddy's copy used")
	flag.Parse()
	// MPI_Init, then the Reinit handler on MPI_COMM_WORLD before MPI_Reinit.
	w, st := heat.Start("reinit-async", p, mpi.ErrorsReinitAsync)
	dieRank, dieStep := -1, -1
	if *dieAt != "" {
		if _, err := fmt.Sscanf(*dieAt, "%d:%d", &dieRank, &dieStep); err != nil {
			fmt.Fprintf(os.Stderr, "reinit-async: -die-at %q: want RANK:STEP\n", *dieAt)
			os.Exit(2)
		}
	}
	var sum float64
	rollbacks := 0
	err := mpi.Reinit(w, func(ctx context.Context, w *mpi.World, state mpi.ReinitState) error {
		if state != mpi.ReinitNew {
			rollbacks++
		}
		c := w.CommWorld()
		if state == mpi.ReinitRestarted && *loseFiles {
			if err := st.Remove(); err != nil {
				return err
			}
			fmt.Printf("reinit-async: rank %d lost its checkpoint files\n", c.Rank())
		}
		if state == mpi.ReinitRestarted && *corrupt {
			if v, err := st.Latest(); err == nil {
				if err := flipByte(st.Path(v)); err != nil {
					return err
				}
				fmt.Printf("reinit-async: rank %d corrupted its checkpoint %d\n", c.Rank(), v)
			}
		}
		s := heat.New(*p, c.Rank(), c.Size())
		resumed, err := heat.Restore(st, c, s)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if resumed {
				fmt.Printf("reinit-async: %s in epoch %d: resume from checkpoint at step %d\n", state, w.Epoch(), s.Step)
			} else {
				fmt.Printf("reinit-async: %s in epoch %d: initialise\n", state, w.Epoch())
			}
		}
		for s.Step < p.Steps {
			if ctx.Err() != nil {
				return nil // a failure: Reinit rolls back
			}
			if err := s.Advance(c); err != nil {
				return err
			}
			if s.Step == dieStep && c.Rank() == dieRank && state != mpi.ReinitRestarted {
				w.Kill()
			}
			if s.Step%p.Every == 0 {
				if err := st.SaveCollective(c, s.Step, s.Encode()); err != nil {
					return err
				}
			}
		}
		sum, err = s.Checksum(c)
		return err
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "reinit-async: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("reinit-async: done after %d rollbacks at rank 0\n", rollbacks)
		fmt.Printf("result: heat n=%d steps=%d checksum=%.15e\n", p.N, p.Steps, sum)
	}
	w.Finalize()
}

// flipByte damages the middle of a file (fault injection for -corrupt).
func flipByte(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	b[len(b)/2] ^= 0xff
	return os.WriteFile(path, b, 0o644)
}
