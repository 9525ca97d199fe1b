package rte

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/hang"
	"github.com/ftmpi/ftmpi/internal/rankenv"
	"github.com/ftmpi/ftmpi/internal/rte/hangdrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// The hang report (issue 23; docs/debugging.md), as the runtime makes it.
// Every rank keeps the table of the calls it waits in (Rank.Calls, which
// the API fills: calls.go). A report is made by one rank, the reporter: the
// lowest live member of CommWorld. It asks every other live member for its
// calls with a ctl.Hang query over the job's own transport
// (internal/rte/hangdrive: so it works under ftmpirun, srun or mpiexec
// without a head, and Run), waits for the answers until a deadline (a rank
// that does not answer is reported as such), and writes one report
// (internal/hang) to HangWatch.Output or the Diag's writer.
//
// What starts a report: the watchdog of the reporter (HangWatch.Timeout:
// it is itself blocked without progress for that long, and the answers
// show every live rank so), then HangWatch.End unless the action is to
// report only; or the launcher (ftmpirun's --timeout and SIGQUIT:
// LauncherHang at every rank, the reporter answers it with the report and
// tells the launcher it is done).

// HangDelegate is what the hang reports need of the API above the runtime
// (memberlist's delegates are the model): CommWorld's members, the
// failures in order and what this process knows of each call's
// communicator (the calls themselves are the Rank's table, Rank.Calls).
// Every function must be safe to call from any goroutine and must not
// block.
type HangDelegate struct {
	// Members is CommWorld's process ids in rank order; nil when this
	// process makes no report (no CommWorld yet, or a waiting spare).
	Members func() []int
	// Failed is the failures in the order they were known.
	Failed func() []int
	// Comm is what this process knows of the communicator of context ctx
	// (false: no such communicator).
	Comm func(ctx uint32) (HangComm, bool)
}

// HangComm is what a hang answer says of a call's communicator.
type HangComm struct {
	Size int
	// Members are its process ids in rank order (nil: CommWorld's).
	Members []int
	// Lost are its failed members (ranks), Acked those of them acknowledged.
	Lost, Acked []int
	Revoked     bool
	// Agree is its agreements at this member (nil: no fault-tolerance
	// state yet: none made).
	Agree *AgreeState
}

// HangWatch is how a rank watches for hangs (StartHang).
type HangWatch struct {
	// Timeout, when positive, makes the reporter report a hang after no
	// progress for that long (0: only the launcher asks for reports).
	Timeout time.Duration
	// ReportOnly: after the watchdog's report the ranks keep waiting (the
	// hang action "report"); otherwise End ends the job.
	ReportOnly bool
	// Env: FTMPI_HANG_TIMEOUT and FTMPI_HANG_ACTION apply over Timeout and
	// ReportOnly (under Run, where the process's environment is not read
	// at Init); a malformed value leaves them.
	Env bool
	// Output receives the reports (nil: the Diag's writer).
	Output io.Writer
	// Finalized reports whether the process finalized (no report then).
	Finalized func() bool
	// End ends the job after the watchdog's report (reason: what to print).
	End func(reason string)
	// Done ends the watchdog (with the Rank's Stop): the epoch's abort.
	Done <-chan struct{}
}

// hangState is a Rank's part in hang reports.
type hangState struct {
	del   HangDelegate
	drv   *hangdrive.Driver
	watch HangWatch // set by StartHang before its goroutine starts
	// mu guards seen: the reporter's own progress when the watchdog last
	// reported (no new report until it changes).
	mu   sync.Mutex
	seen int64
	// asked: when (CallNow) the watchdog last asked the ranks; it asks
	// again only half a timeout later (a rank blocked for long while
	// another computes costs two queries per timeout, not one per sample).
	// Only the watchdog's goroutine reads and writes it.
	asked int64
}

// initHang makes the hang driver of r (its ctl.Hang frames registered by
// NewRank).
func (r *Rank) initHang(d HangDelegate) {
	r.hang.del = d
	r.hang.drv = hangdrive.New(hangdrive.Env{Net: r.Eng, Self: r.Proc, Answer: r.hangSelf})
}

// onHang handles a ctl.Hang frame (the driver answers a query at once and
// files an answer). A malformed or late answer is dropped without a word:
// the report says that rank did not answer.
func (r *Rank) onHang(from int, h transport.Header, payload []byte) {
	_ = r.hang.drv.Handle(from, h, payload)
}

// hangPeriod is the period of the samples that date the waits when the
// hang timeout is t (0: off).
func hangPeriod(t time.Duration) time.Duration {
	period := time.Second
	if t > 0 {
		period = min(period, max(t/4, 5*time.Millisecond))
	}
	return period
}

// StartHang starts the goroutine that samples the call table (dating the
// waits) and, with a hang timeout, watches for a hang; it ends with the
// Rank's Stop or hw.Done. Call it once, after Start.
func (r *Rank) StartHang(hw HangWatch) {
	if hw.Env {
		rs := rankenv.Settings{HangTimeout: hw.Timeout, HangAction: rankenv.HangAbort}
		if hw.ReportOnly {
			rs.HangAction = rankenv.HangReport
		}
		if rankenv.Apply(os.LookupEnv, &rs) == nil {
			hw.Timeout, hw.ReportOnly = rs.HangTimeout, rs.HangAction == rankenv.HangReport
		}
	}
	r.hang.watch = hw
	period := hangPeriod(hw.Timeout)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		tk := time.NewTicker(period)
		defer tk.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-hw.Done:
				return
			case <-tk.C:
			}
			r.Calls.Sample(CallNow())
			if hw.Timeout > 0 {
				r.watchHang()
			}
		}
	}()
}

// members is CommWorld's process ids (nil: no report from here).
func (r *Rank) members() []int {
	if f := r.hang.del.Members; f != nil {
		return f()
	}
	return nil
}

// reporter reports whether this process makes the job's hang reports: the
// lowest live member of CommWorld.
func (r *Rank) reporter() bool {
	for _, p := range r.members() {
		if p == r.Proc {
			return true
		}
		if !r.Eng.IsLost(p) {
			return false
		}
	}
	return false
}

// watchHang is the watchdog's check at the reporter: blocked without
// progress for the timeout here, then at every rank.
func (r *Rank) watchHang() {
	hw := &r.hang.watch
	t := hw.Timeout
	c := r.Calls
	if !r.reporter() || hw.Finalized != nil && hw.Finalized() {
		return
	}
	now := CallNow()
	moved := c.Moving()
	r.hang.mu.Lock()
	seen := r.hang.seen
	r.hang.mu.Unlock()
	if moved == seen || time.Duration(now-moved) < t || r.hang.asked != 0 && time.Duration(now-r.hang.asked) < t/2 {
		return // progress within the timeout, reported already, or asked within it
	}
	self := r.hangSelf()
	if !self.Blocked() {
		return
	}
	r.hang.asked = now
	in := r.gatherHang(fmt.Sprintf("no progress for %v", t))
	if !hang.Hung(in, t) {
		return
	}
	r.hang.mu.Lock()
	r.hang.seen = moved
	r.hang.mu.Unlock()
	r.writeHang(hang.Report(in))
	if !hw.ReportOnly && hw.End != nil {
		hw.End("hang report: no progress at any rank (see the report above)")
	}
}

// writeHang writes report to the configured output.
func (r *Rank) writeHang(report string) {
	out := r.hang.watch.Output
	if out == nil {
		out = r.Diag().Writer()
	}
	io.WriteString(out, report)
}

// ReportHang makes and writes a report (reason: "--timeout", "SIGQUIT")
// at the reporter and is a no-op elsewhere. It returns whether this
// process reported.
func (r *Rank) ReportHang(reason string) bool {
	if !r.reporter() {
		return false
	}
	r.writeHang(hang.Report(r.gatherHang(reason)))
	return true
}

// LauncherHang is the launcher's request for a report (boot.EventHang):
// the reporter tells the launcher it makes it, writes it, and tells it it
// is written.
func (r *Rank) LauncherHang(reason string) {
	if !r.reporter() {
		return
	}
	if r.client != nil {
		_ = r.client.HangReport(false)
	}
	r.ReportHang(reason)
	if r.client != nil {
		_ = r.client.HangReport(true)
	}
}

// gatherHang asks every other live member of CommWorld for its calls and
// returns the material of a report, with this process's own calls.
func (r *Rank) gatherHang(reason string) hang.Input {
	failed := r.hang.del.Failed
	if failed == nil {
		failed = func() []int { return nil }
	}
	return r.hang.drv.Gather(reason, r.members(), failed, r.stop)
}

// hangSelf is this process's answer: the calls it waits in, with what it
// knows of their communicators.
func (r *Rank) hangSelf() hang.Rank {
	out := hang.Rank{Rank: r.Proc, Answered: true}
	c := r.Calls
	now := CallNow()
	es := c.Snapshot(now)
	out.Overflow = c.Overflow()
	if m := c.Moving(); m > 0 {
		out.Idle = time.Duration(now - m)
	}
	for _, e := range es {
		out.Calls = append(out.Calls, r.hangCall(e, now))
	}
	return out
}

// maxMembers bounds the member list an answer carries.
const maxMembers = 4096

func (r *Rank) hangCall(e Call, now int64) hang.Call {
	hc := hang.Call{Op: e.Op, Of: e.Of, Comm: e.Comm, Ctx: e.Ctx, Peer: int(e.Peer), PeerProc: int(e.PeerProc),
		Root: int(e.Root), Tag: int(e.Tag), Count: e.Count, Type: e.Type, Seq: e.Seq,
		Waited: time.Duration(now - e.Since), Background: e.Background}
	if r.hang.del.Comm == nil {
		return hc
	}
	c, ok := r.hang.del.Comm(e.Ctx)
	if !ok {
		return hc
	}
	hc.Size = c.Size
	if c.Members != nil && len(c.Members) <= maxMembers {
		hc.Members = slices.Clone(c.Members)
	}
	hc.Lost = c.Lost
	hc.Acked = c.Acked
	hc.Revoked = c.Revoked
	if a := c.Agree; a != nil {
		hc.Agree = &hang.Agree{Begun: int64(a.Begun), Waiting: hang.None}
		if a.Waiting {
			hc.Agree.Waiting, hc.Agree.Kind = int64(a.Seq), a.Kind.String()
		}
	}
	return hc
}
