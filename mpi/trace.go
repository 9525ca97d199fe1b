package mpi

import (
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// The failure-and-recovery timeline (Config.Trace, FTMPI_TRACE, ftmpirun
// --trace): each World records its events in a trace.Recorder (nil when
// off: every recording site is one nil check), made by the runtime
// (rte.StartTrace: the metadata, the MPI call spans of the call table) and
// written by it (rte.WriteTrace) when the World is released or aborts.
// Event names and categories are internal/trace's.

// startTrace starts this World's recorder if cfg.Trace asks for it; inc is
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
	w.trc = rte.StartTrace(rte.TraceConfig{Proc: w.rank, Label: label, Inc: inc, Epoch: w.epoch, Calls: w.rt.Calls})
	w.trcInc = inc
}

// writeTrace writes the timeline of this World (once).
func (w *World) writeTrace() {
	if w.trc == nil {
		return
	}
	w.trcOnce.Do(func() {
		rte.WriteTrace(w.trc, w.cfg.Trace, rte.TraceConfig{Proc: w.rank, Inc: w.trcInc, Epoch: w.epoch}, w.diag())
	})
}

// TraceSpan records a span from start to now named name in category cat
// of this process's timeline (ftmpirun --trace, Config.Trace), with args
// shown beside it; it does nothing when tracing is off (test Tracing
// first to build args only when needed). Package checkpoint records its
// writes and reads with it ("checkpoint", "checkpoint write"). No MPI
// counterpart (MPI_Pcontrol is the standard's hook for profilers, without
// names).
func (w *World) TraceSpan(cat, name string, start time.Time, args map[string]any) {
	if w == nil || w.trc == nil {
		return
	}
	w.trc.Span(cat, name, start.UnixMicro(), args)
}

// Tracing reports whether this process records its timeline
// (Config.Trace). It has no MPI counterpart.
func (w *World) Tracing() bool { return w != nil && w.trc != nil }

// traceSpan records a fault-tolerance span of c from start (trace.Now)
// to now, with c's name and the error's class if any.
func (c *Comm) traceSpan(cat, name string, start int64, err error, extra map[string]any) {
	r := c.w.trc
	if r == nil {
		return
	}
	a := map[string]any{"comm": c.name, "ctx": c.ctx}
	for k, v := range extra {
		a[k] = v
	}
	if err != nil {
		a["error"] = err.Error()
	}
	r.Span(cat, name, start, a)
}
