package mpi

import (
	"slices"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// The hang report (issue 23; docs/debugging.md) is made by the runtime
// (internal/rte/hang.go: the watchdog, the reporter, the ctl.Hang queries
// and answers through internal/rte/hangdrive, the report's output). The
// World gives it what only the API knows, as a delegate: CommWorld's
// members, the failures in order, and what it knows of each call's
// communicator; and how to end the job after a report. The calls this
// process waits in are the runtime's table (rte.Rank.Calls), which the
// API fills (track.go).

// hangDelegate is what the runtime's hang reports need of w.
func (w *World) hangDelegate() rte.HangDelegate {
	return rte.HangDelegate{
		Members: func() []int {
			if w.world == nil || w.rt.Spares.IsSpare() {
				return nil
			}
			return w.world.memberWorldRanks()
		},
		Failed: w.failedOrder,
		Comm:   w.hangComm,
	}
}

// hangComm is what w knows of the communicator of context ctx, for a hang
// answer.
func (w *World) hangComm(ctx uint32) (rte.HangComm, bool) {
	w.ft.mu.Lock()
	c := w.ft.byCtx[ctx]
	w.ft.mu.Unlock()
	if c == nil {
		return rte.HangComm{}, false
	}
	hc := rte.HangComm{Size: c.size, Members: c.members, Lost: c.failedMembers(), Revoked: c.IsRevoked()}
	if f := c.ft.Load(); f != nil {
		st := f.d.AgreeState()
		hc.Agree = &st
		f.mu.Lock()
		for _, p := range f.acked {
			if slices.Contains(hc.Lost, p) {
				hc.Acked = append(hc.Acked, p)
			}
		}
		f.mu.Unlock()
	}
	return hc, true
}

// startHang starts the runtime's hang watch with w's configuration. Under
// Run, FTMPI_HANG_TIMEOUT and FTMPI_HANG_ACTION apply over the Config (as
// FTMPI_CHECK does).
func (w *World) startHang() {
	w.rt.StartHang(rte.HangWatch{
		Timeout: w.cfg.HangTimeout, ReportOnly: w.cfg.HangAction == HangReport, Env: w.run != nil,
		Output: w.cfg.HangOutput, Finalized: w.finalized.Load, End: w.hangAbort, Done: w.abort,
	})
}

// hangAbort ends the job with HangExitCode after a report.
func (w *World) hangAbort(reason string) {
	switch {
	case w.run != nil:
		w.run.Abort(w.rank, HangExitCode)
	default:
		w.rt.WriteTrace()
		if w.proc != nil {
			w.proc.Abort(HangExitCode, reason)
		}
		w.diag().Exit(HangExitCode)
	}
}

// onLauncherHang is the launcher's request for a report (rte.Hooks.Hang).
func (w *World) onLauncherHang(reason string) { w.rt.LauncherHang(reason) }
