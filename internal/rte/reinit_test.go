package rte

import (
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/rte/reinitdrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// The Rank handles the ctl.Reinit frames (registered by NewRank, nothing
// by the API): a decision reaches a waiting spare's wait through the
// spares' driver, and a process without the headless Reinit driver drops
// the frame with a diagnostic.
func TestRankReinitFrames(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 2
	j := newTestJob(n)
	defer j.close()
	plain := NewRank(j.config(0))
	out := &syncBuf{wrote: make(chan struct{}, 16)}
	plain.SetDiag(&Diag{Out: out})
	h := transport.Header{Tag: int32(ctl.Reinit), B: reinitdrive.KindDecide, A: 1}
	next := ReinitState{Epoch: 1, Procs: []int{1}, Inc: []int{1}, Pool: []int{}}
	if err := plain.Ctl.Dispatch(1, h, next.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "without FTMPI_REINIT=1") {
		t.Fatalf("diagnostic %q does not say the process has no headless Reinit", out.String())
	}
	hr := NewHeadlessReinit(boot.Info{Proc: 1, Rank: 1, Size: n, Universe: n, Spares: 1, Reinit: true})
	cfg := j.config(1)
	cfg.Spares, cfg.Reinit = SpareConfig{Pool: []int{1}, IsSpare: true, Pairs: 4}, hr
	spare := NewRank(cfg)
	if err := spare.Ctl.Dispatch(0, h, next.Encode(nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-spare.Spares.Outcome():
		if o.Next == nil || o.Next.Epoch != 1 {
			t.Fatalf("the spare's outcome %+v, want the decision of epoch 1", o)
		}
	default:
		t.Fatal("the decision did not reach the spare's wait")
	}
}
