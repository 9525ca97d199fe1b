package launch

import (
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/rankenv"
)

// The hang report (issue 23, package mpi's hang.go): the ranks make it
// among themselves; the launcher only asks for one (--timeout before the
// kill, SIGQUIT to ftmpirun) with a ctlwire.EventHang to every rank, and
// waits until the rank that makes it says so (ctlwire.OpHangDone, kind
// started; at most hangStartWait) and then that it is written (at most
// hangReportWait). --hang-timeout and --hang-action are the ranks'
// FTMPI_HANG_TIMEOUT and FTMPI_HANG_ACTION.

// hangReportWait bounds the wait for a report the launcher asked for (the
// ranks wait 2 s for each other's answers), hangStartWait the wait for the
// rank that makes it to say so (none does when the ranks are not ftmpi's
// MPI processes, or the reporter is stopped).
const (
	hangReportWait = 4 * time.Second
	hangStartWait  = time.Second
)

// hangFlags checks --hang-timeout and --hang-action with the ranks' own
// parser and exports them to every rank.
func hangFlags(cfg *Config, timeout, action string) error {
	var s rankenv.Settings
	vals := map[string]string{rankenv.HangTimeout: timeout, rankenv.HangAction: action}
	lookup := func(k string) (string, bool) { v, ok := vals[k]; return v, ok && v != "" }
	if err := rankenv.Apply(lookup, &s); err != nil {
		return &UsageError{fmt.Sprintf("--hang-timeout/--hang-action: %v", err)}
	}
	if timeout != "" {
		cfg.Export = append(cfg.Export, rankenv.HangTimeout+"="+timeout)
	}
	if action != "" {
		cfg.Export = append(cfg.Export, rankenv.HangAction+"="+action)
	}
	return nil
}

// hangAsk is the head's request for a report in progress.
type hangAsk struct {
	started, done chan struct{} // closed by the reporter's OpHangDone of each kind; nil: none asked
}

// askHangReport asks the ranks for a hang report and waits until it is
// written, the ranks are gone, or hangReportWait; it says whether the
// report came. Without a rank connected it returns at once.
func (h *head) askHangReport(reason string) bool {
	started, done := make(chan struct{}), make(chan struct{})
	h.mu.Lock()
	if len(h.conns) == 0 {
		h.mu.Unlock()
		return false // no MPI rank (or none yet): nothing to ask
	}
	h.hang.started, h.hang.done = started, done
	to := make([]policy.Conn, 0, len(h.conns))
	for id := range h.conns {
		to = append(to, id)
	}
	h.notify(to, ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventHang, Reason: reason})
	h.mu.Unlock()
	tm := time.NewTimer(hangStartWait)
	defer tm.Stop()
	select {
	case <-started:
	case <-done:
		return true
	case <-h.allExited:
		return false
	case <-tm.C:
		return false
	}
	tm.Reset(hangReportWait)
	select {
	case <-done:
		return true
	case <-h.allExited:
	case <-tm.C:
	}
	return false
}

// hangDone is the reporter's OpHangDone of kind (ctlwire.HangStarted,
// ctlwire.HangWritten).
func (h *head) hangDone(kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := &h.hang.done
	if kind == ctlwire.HangStarted {
		ch = &h.hang.started
	}
	if *ch != nil {
		close(*ch)
		*ch = nil
	}
}
