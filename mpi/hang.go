package mpi

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/calls"
	"github.com/ftmpi/ftmpi/internal/hang"
	"github.com/ftmpi/ftmpi/internal/rankenv"
	"github.com/ftmpi/ftmpi/internal/rte/hangdrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// The hang report (issue 23; docs/debugging.md). Every rank keeps the table
// of the calls it waits in (track.go). A report is made by one rank, the
// reporter: the lowest live member of CommWorld. It asks every other live
// member for its calls with a ctl.Hang query over the job's own transport
// (internal/rte/hangdrive: so it works under ftmpirun, srun or mpiexec
// without a head, and Run),
// waits for the answers until a deadline (a rank that does not answer is
// reported as such), and writes one report (internal/hang) to
// Config.HangOutput or stderr.
//
// What starts a report: the watchdog of the reporter (Config.HangTimeout:
// it is itself blocked without progress for that long, and the answers
// show every live rank so), then Config.HangAction; or the launcher
// (ftmpirun's --timeout and SIGQUIT: a boot.EventHang to every rank, the
// reporter answers it with the report and tells the launcher it is done).

// hangState is a World's part in hang reports.
type hangState struct {
	mu  sync.Mutex
	drv *hangdrive.Driver // the queries and answers (made on first use)
	// seen: the reporter's own progress when the watchdog last reported
	// (no new report until it changes).
	seen int64
	// period of the samples that date the waits (internal/calls).
	period time.Duration
	// asked: when (calls.Now) the watchdog last asked the ranks; it asks
	// again only half a timeout later (a rank blocked for long while
	// another computes costs two queries per timeout, not one per sample).
	asked int64
}

// hangDrv returns w's hang report driver, made on first use.
func (w *World) hangDrv() *hangdrive.Driver {
	w.hangs.mu.Lock()
	defer w.hangs.mu.Unlock()
	if w.hangs.drv == nil {
		w.hangs.drv = hangdrive.New(hangdrive.Env{Net: w.eng, Self: w.rank, Answer: w.hangSelf})
	}
	return w.hangs.drv
}

// hangTimeout is the job's hang timeout (0: off), hangAction its action.
func (w *World) hangTimeout() time.Duration { return w.cfg.HangTimeout }

// startHang starts the goroutine that
// samples the call table (dating the waits) and, with a hang timeout,
// watches for a hang. Under Run, FTMPI_HANG_TIMEOUT and FTMPI_HANG_ACTION
// apply over the Config (as FTMPI_CHECK does).
func (w *World) startHang() {
	if w.run != nil {
		rs := rankenv.Settings{HangTimeout: w.cfg.HangTimeout, HangAction: w.cfg.HangAction}
		if rankenv.Apply(os.LookupEnv, &rs) == nil {
			w.cfg.HangTimeout, w.cfg.HangAction = rs.HangTimeout, rs.HangAction
		}
	}
	period := time.Second
	if t := w.hangTimeout(); t > 0 {
		period = min(period, max(t/4, 5*time.Millisecond))
	}
	w.hangs.period = period
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-w.abort:
				return
			case <-tk.C:
			}
			w.calls.Sample(calls.Now())
			if w.hangTimeout() > 0 {
				w.watchHang()
			}
		}
	}()
}

// reporter reports whether this process makes the job's hang reports: the
// lowest live member of CommWorld.
func (w *World) reporter() bool {
	if w.world == nil || w.spares.IsSpare() {
		return false
	}
	for _, p := range w.world.memberWorldRanks() {
		if p == w.rank {
			return true
		}
		if !w.eng.IsLost(p) {
			return false
		}
	}
	return false
}

// watchHang is the watchdog's check at the reporter: blocked without
// progress for the timeout here, then at every rank.
func (w *World) watchHang() {
	t := w.hangTimeout()
	if !w.reporter() || w.finalized.Load() {
		return
	}
	now := calls.Now()
	moved := w.calls.Moving()
	w.hangs.mu.Lock()
	seen := w.hangs.seen
	w.hangs.mu.Unlock()
	if moved == seen || time.Duration(now-moved) < t || w.hangs.asked != 0 && time.Duration(now-w.hangs.asked) < t/2 {
		return // progress within the timeout, reported already, or asked within it
	}
	self := w.hangSelf()
	if !self.Blocked() {
		return
	}
	w.hangs.asked = now // only the watchdog's goroutine reads and writes it
	in := w.gatherHang(fmt.Sprintf("no progress for %v", t))
	if !hang.Hung(in, t) {
		return
	}
	w.hangs.mu.Lock()
	w.hangs.seen = moved
	w.hangs.mu.Unlock()
	w.writeHang(hang.Report(in))
	if w.cfg.HangAction != HangReport {
		w.hangAbort()
	}
}

// hangAbort ends the job with HangExitCode after a report.
func (w *World) hangAbort() {
	const reason = "hang report: no progress at any rank (see the report above)"
	switch {
	case w.run != nil:
		w.run.Abort(w.rank, HangExitCode)
	default:
		w.writeTrace()
		switch {
		case w.rt.Client != nil:
			w.rt.Client.Abort(HangExitCode, reason)
		case w.proc != nil:
			w.proc.Abort(HangExitCode, reason)
		}
		w.diag().Exit(HangExitCode)
	}
}

// writeHang writes report to the configured output.
func (w *World) writeHang(report string) {
	out := w.diag().Writer()
	if w.cfg.HangOutput != nil {
		out = w.cfg.HangOutput
	}
	io.WriteString(out, report)
}

// ReportHang is the report of a launcher's request (reason: "--timeout",
// "SIGQUIT"): made and written at the reporter, a no-op elsewhere. It
// returns whether this process reported.
func (w *World) reportHang(reason string) bool {
	if !w.reporter() {
		return false
	}
	w.writeHang(hang.Report(w.gatherHang(reason)))
	return true
}

// gatherHang asks every other live member of CommWorld for its calls and
// returns the material of a report, with this process's own calls.
func (w *World) gatherHang(reason string) hang.Input {
	return w.hangDrv().Gather(reason, w.world.memberWorldRanks(), w.failedOrder, w.stop)
}

// onHang handles a ctl.Hang frame (the driver answers a query at once and
// files an answer). A malformed or late answer is dropped without a word,
// as before the driver: the report says that rank did not answer.
func (w *World) onHang(from int, h transport.Header, payload []byte) {
	_ = w.hangDrv().Handle(from, h, payload)
}

// hangSelf is this process's answer: the calls it waits in, with what it
// knows of their communicators.
func (w *World) hangSelf() hang.Rank {
	now := calls.Now()
	es := w.calls.Snapshot(now)
	r := hang.Rank{Rank: w.rank, Answered: true, Overflow: w.calls.Overflow()}
	if m := w.calls.Moving(); m > 0 {
		r.Idle = time.Duration(now - m)
	}
	for _, e := range es {
		r.Calls = append(r.Calls, w.hangCall(e, now))
	}
	return r
}

// maxMembers bounds the member list an answer carries.
const maxMembers = 4096

func (w *World) hangCall(e calls.Entry, now int64) hang.Call {
	hc := hang.Call{Op: e.Op, Of: e.Of, Comm: e.Comm, Ctx: e.Ctx, Peer: int(e.Peer), PeerProc: int(e.PeerProc),
		Root: int(e.Root), Tag: int(e.Tag), Count: e.Count, Type: e.Type, Seq: e.Seq,
		Waited: time.Duration(now - e.Since), Background: e.Background}
	w.ft.mu.Lock()
	c := w.ft.byCtx[e.Ctx]
	w.ft.mu.Unlock()
	if c == nil {
		return hc
	}
	hc.Size = c.size
	if c.members != nil && len(c.members) <= maxMembers {
		hc.Members = slices.Clone(c.members)
	}
	hc.Lost = c.failedMembers()
	if f := c.ft.Load(); f != nil {
		f.mu.Lock()
		for _, p := range f.acked {
			if slices.Contains(hc.Lost, p) {
				hc.Acked = append(hc.Acked, p)
			}
		}
		f.mu.Unlock()
	}
	hc.Revoked = c.IsRevoked()
	return hc
}

// onLauncherHang is the launcher's request for a report (boot.EventHang):
// the reporter tells the launcher it makes it, writes it, and tells it
// it is written.
func (w *World) onLauncherHang(reason string) {
	if !w.reporter() {
		return
	}
	if w.rt.Client != nil {
		_ = w.rt.Client.HangReport(false)
	}
	w.reportHang(reason)
	if w.rt.Client != nil {
		_ = w.rt.Client.HangReport(true)
	}
}
