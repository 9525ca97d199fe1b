package mpi

import (
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// The failure-and-recovery timeline (Config.Trace, FTMPI_TRACE, ftmpirun
// --trace) is the runtime's (rte.Rank.StartTrace): it records its events
// where they happen (revocations, agreements, failures known) and writes
// the file (rte.Rank.WriteTrace) when the World is released or aborts.
// The API hands it what only the API sees: the spans of its repair calls
// (traceRepair), a spare taken into the communicator it builds, the end
// of its epoch, an operation's failure it raises first, and its users'
// spans (TraceSpan).

// startTrace starts this World's timeline if cfg.Trace asks for it; inc is
// the process's incarnation, spare whether it starts as a spare.
func (w *World) startTrace(inc int, spare bool) {
	if w.cfg.Trace == "" {
		return
	}
	label := fmt.Sprintf("rank %d", w.rank)
	switch {
	case w.world != nil && w.world.members != nil && len(w.world.members) > 0 && w.world.members[0] != 0 && !spare:
		label = fmt.Sprintf("proc %d (spawned, rank %d of its world)", w.rank, w.world.rank)
	case spare:
		label = fmt.Sprintf("proc %d (spare)", w.rank)
	}
	if inc > 0 {
		label += fmt.Sprintf(" inc %d", inc)
	}
	if w.epoch > 0 {
		label += fmt.Sprintf(" epoch %d", w.epoch)
	}
	w.rt.StartTrace(rte.TraceConfig{Proc: w.rank, Label: label, Inc: inc, Epoch: w.epoch, Dir: w.cfg.Trace, Calls: w.rt.Calls})
}

// TraceSpan records a span from start to now named name in category cat
// of this process's timeline (ftmpirun --trace, Config.Trace), with args
// shown beside it; it does nothing when tracing is off (test Tracing
// first to build args only when needed). Package checkpoint records its
// writes and reads with it ("checkpoint", "checkpoint write"). No MPI
// counterpart (MPI_Pcontrol is the standard's hook for profilers, without
// names).
func (w *World) TraceSpan(cat, name string, start time.Time, args map[string]any) {
	if w == nil || !w.rt.Tracing() {
		return
	}
	w.rt.TraceSpan(cat, name, start.UnixMicro(), args)
}

// Tracing reports whether this process records its timeline
// (Config.Trace). It has no MPI counterpart.
func (w *World) Tracing() bool { return w != nil && w.rt.Tracing() }

// traceRepair starts the timeline's span of the repair call on c and
// returns what ends it (with c's name and context, the error's text if
// any, and extra), or nil when tracing is off: a call begins with
// `if end := c.traceRepair(...); end != nil { defer func() { end(err) }() }`.
func (c *Comm) traceRepair(call rte.RepairCall, extra map[string]any) func(err error) {
	if c == nil || !c.w.rt.Tracing() {
		return nil
	}
	start := c.w.rt.TraceBegin()
	return func(err error) {
		a := map[string]any{"comm": c.name, "ctx": c.ctx}
		for k, v := range extra {
			a[k] = v
		}
		if err != nil {
			a["error"] = err.Error()
		}
		c.w.rt.TraceRepair(call, start, a)
	}
}
