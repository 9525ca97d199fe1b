package rte

import (
	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/rte/reinitdrive"
	"github.com/ftmpi/ftmpi/internal/rte/sparedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// HeadlessReinit is a process's driver of MPI_Reinit without a head (srun
// or mpiexec with FTMPI_REINIT=1; internal/rte/reinitdrive: the State, the
// ctl.Reinit frames, the decision and the endpoint exchange), shared by
// the Ranks of its epochs (RankConfig.Reinit). The failure round's
// agreement, which runs on a communicator, is the API's.
type HeadlessReinit struct{ *reinitdrive.Driver }

// NewHeadlessReinit is the driver of the start described by info.
func NewHeadlessReinit(info boot.Info) *HeadlessReinit {
	return &HeadlessReinit{reinitdrive.New(info.Proc, reinitdrive.Initial(info.WorldSize(), info.Size))}
}

// ReinitState is who is who in a Reinit epoch without a head: what the
// survivors' round decides (HeadlessReinit.Decide) and every member joins.
type ReinitState = reincarnate.State

// ErrDeclaredFailed is HeadlessReinit.Decide's error at a process the
// others declared failed in the round: it must stop (fail-stop).
var ErrDeclaredFailed = reinitdrive.ErrDeclaredFailed

// onReinit handles a ctl.Reinit frame (on a transport goroutine: the
// driver records and signals, never blocks nor sends); a decision for this
// process as a waiting spare goes to the spare's wait (the first copy
// wins). Without a driver (no FTMPI_REINIT=1 here), or malformed, the
// frame is dropped with a diagnostic.
func (r *Rank) onReinit(from int, h transport.Header, payload []byte) {
	if r.reinit == nil {
		r.Diag().Logf("process %d: a Reinit frame from process %d without FTMPI_REINIT=1 here: dropped", r.Proc, from)
		return
	}
	dec, err := r.reinit.Handle(from, h, payload, r.Spares.IsSpare())
	if err != nil {
		r.Diag().Logf("%v", err)
		return
	}
	if dec != nil {
		r.Spares.Offer(sparedrive.Outcome{Next: dec.Next, Ended: dec.Ended})
	}
}
