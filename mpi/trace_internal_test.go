package mpi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// An operation that fails because the transport saw the connection to its
// peer break, before the runtime confirmed the failure, tells the caller
// MPI_ERR_PROC_FAILED: the timeline records then that this process learnt
// of the failure (the "told" phase), so that a revocation the caller makes
// on that error does not come before it (CI's
// TestTraceOfTheDemoHasEveryRankAndPhase: "revoked 0.411 ms before
// detected", the demo's shared-memory pair broke before the launcher's
// notice came).
func TestTransportLossIsKnownInTheTimeline(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Trace = t.TempDir()
	err := RunConfig(2, cfg, func(w *World) error {
		if w.Rank() != 0 {
			return nil
		}
		if w.trc == nil {
			return errors.New("no trace recorder with Config.Trace set")
		}
		c := w.CommWorld()
		broken := fmt.Errorf("%w: rank 1: connection from rank 1 closed without goodbye", transport.ErrPeerLost)
		err := c.engineErr("MPI_Send", 1, fmt.Errorf("%w: %w", p2p.ErrPeerLost, broken))
		if !errors.Is(err, ErrProcFailed) {
			return fmt.Errorf("the error is %v, want MPI_ERR_PROC_FAILED", err)
		}
		for _, ev := range w.trc.Events() {
			if ev.Cat == trace.CatFailure && ev.Name == trace.NameKnown && ev.Args["proc"] == 1 {
				return nil
			}
		}
		return fmt.Errorf("no %s event for process 1 in %+v", trace.NameKnown, w.trc.Events())
	})
	if err != nil {
		t.Fatal(err)
	}
}
