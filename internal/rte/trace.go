package rte

import (
	"os"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/trace"
)

// TraceConfig is what one World's failure-and-recovery timeline
// (Config.Trace, FTMPI_TRACE, ftmpirun --trace) is made from.
type TraceConfig struct {
	// Proc is the process id (the timeline's process).
	Proc int
	// Label names the process in the timeline ("rank 3", "proc 5
	// (spare)", ...).
	Label      string
	Inc, Epoch int
	// Calls, if not nil, is the call table whose blocking waits become
	// the MPI call spans, one lane per slot.
	Calls *CallTable
}

// StartTrace makes the recorder of one World: its metadata (start time,
// incarnation, epoch, the OS process id and host, the clock), the MPI call
// spans of c.Calls, and the epoch's instant when the epoch is not the
// first. The call spans' observer is removed while the recorder keeps no
// call spans (its budget used up: the table then reads no clock) and set
// again, with fresh entry times, when a fault-tolerance event opens a
// window.
func StartTrace(c TraceConfig) *trace.Recorder {
	r := trace.New(c.Proc, c.Label, trace.Limits{})
	r.SetMeta("start_us", trace.Now())
	r.SetMeta("incarnation", c.Inc)
	r.SetMeta("epoch", c.Epoch)
	r.SetMeta("os_pid", os.Getpid())
	if h, err := os.Hostname(); err == nil {
		r.SetMeta("host", h)
	}
	r.SetMeta("clock", "CLOCK_REALTIME µs; comparable across the processes of one host")
	if t := c.Calls; t != nil {
		// The table's clock is monotonic (ns); off maps it onto the wall
		// clock once.
		off := trace.Now()*1000 - CallNow()
		observe := func() {
			var enter [CallSlots]atomic.Int64 // 0: entered before this observer
			t.SetObserver(func(ev CallEvent) {
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
				t.SetObserver(nil)
			} else {
				observe()
			}
		})
	}
	if c.Epoch > 0 {
		r.Instant(trace.CatReinit, trace.NameEpoch, map[string]any{"epoch": c.Epoch})
	}
	return r
}

// WriteTrace writes the timeline r of the World c was made for into dir
// (trace.FileName: by process, incarnation, epoch and OS process id); a
// file that cannot be written is reported to d.
func WriteTrace(r *trace.Recorder, dir string, c TraceConfig, d *Diag) {
	path := trace.FileName(dir, c.Proc, c.Inc, c.Epoch, os.Getpid())
	if err := r.File().WriteFile(path); err != nil {
		d.Logf("process %d: cannot write its trace: %v", c.Proc, err)
	}
}
