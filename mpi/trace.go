package mpi

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/calls"
	"github.com/ftmpi/ftmpi/internal/trace"
)

// The failure-and-recovery timeline (Config.Trace, FTMPI_TRACE, ftmpirun
// --trace): each World records its events in a trace.Recorder (nil when
// off: every recording site is one nil check) and writes them when it is
// released or aborts. Event names and categories are internal/trace's.

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
	r := trace.New(w.rank, label, trace.Limits{})
	r.SetMeta("start_us", trace.Now())
	r.SetMeta("incarnation", inc)
	r.SetMeta("epoch", w.epoch)
	r.SetMeta("os_pid", os.Getpid())
	if h, err := os.Hostname(); err == nil {
		r.SetMeta("host", h)
	}
	r.SetMeta("clock", "CLOCK_REALTIME µs; comparable across the processes of one host")
	w.trc = r
	w.trcInc = inc
	if w.calls != nil {
		// MPI call spans: the blocking waits the call table records
		// (internal/calls), one lane per slot. Its clock is monotonic
		// (ns); off maps it onto the wall clock once.
		// The observer is removed while the recorder keeps no call spans
		// (its budget used up: the table then reads no clock) and set
		// again, with fresh entry times, when a fault-tolerance event
		// opens a window.
		off := trace.Now()*1000 - calls.Now()
		observe := func() {
			var enter [calls.Slots]atomic.Int64 // 0: entered before this observer
			w.calls.SetObserver(func(ev calls.Event) {
				if !ev.Leave {
					enter[ev.Slot].Store(ev.At)
					return
				}
				start := enter[ev.Slot].Swap(0)
				if start == 0 {
					return
				}
				// ev's fields are passed by value: taking its address would
				// move it to the heap, an allocation per call.
				r.Call(ev.Op, ev.Comm, ev.Peer, ev.Root, ev.Tag, ev.Seq, (start+off)/1000, (ev.At+off)/1000, ev.Slot+1)
			})
		}
		observe()
		r.SetFullHook(func(full bool) {
			if full {
				w.calls.SetObserver(nil)
			} else {
				observe()
			}
		})
	}
	if w.epoch > 0 {
		r.Instant(trace.CatReinit, trace.NameEpoch, map[string]any{"epoch": w.epoch})
	}
}

// writeTrace writes the timeline of this World (once).
func (w *World) writeTrace() {
	if w.trc == nil {
		return
	}
	w.trcOnce.Do(func() {
		path := trace.FileName(w.cfg.Trace, w.rank, w.trcInc, w.epoch, os.Getpid())
		if err := w.trc.File().WriteFile(path); err != nil {
			w.logf("process %d: cannot write its trace: %v", w.rank, err)
		}
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
