package rte

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/internal/transport"
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
	// Dir is where the timeline's file is written (WriteTrace).
	Dir string
	// Calls, if not nil, is the call table whose blocking waits become
	// the MPI call spans, one lane per slot.
	Calls *CallTable
}

// newRecorder makes the recorder of one World: its metadata (start time,
// incarnation, epoch, the OS process id and host, the clock), the MPI call
// spans of c.Calls, and the epoch's instant when the epoch is not the
// first. The call spans' observer is removed while the recorder keeps no
// call spans (its budget used up: the table then reads no clock) and set
// again, with fresh entry times, when a fault-tolerance event opens a
// window.
func newRecorder(c TraceConfig) *trace.Recorder {
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

// timeline is a Rank's part in the recovery timeline (Config.Trace,
// FTMPI_TRACE, ftmpirun --trace): the World's recorder, nil while tracing
// is off (every recording site is then one atomic load and a nil check,
// and allocates nothing: TestTimelineOffAllocatesNothing), and what the
// runtime's own events need: the failures already recorded as known.
// The runtime records where its events happen: the revocations sent
// (CommFT.RevokeCall) and received (the ctl.Revoke frames' dispatch,
// Frames), each agreement's span (CommFT), a failure known here (its loss
// subscription, subscribed by NewRank before any other). The API hands
// over the spans of its own calls (TraceRepair), a spare taken into a
// communicator it builds (TraceSpareTaken), the end of its epoch
// (TraceRollback), an operation's failure it raises before the runtime
// confirms it (TraceKnown) and its users' spans (TraceSpan).
type timeline struct {
	rec   atomic.Pointer[trace.Recorder] // StartTrace; nil: off
	cfg   TraceConfig                    // StartTrace's, read once rec is set
	write sync.Once                      // WriteTrace
	mu    sync.Mutex
	known map[int]bool // failures recorded as known (once each)
}

// rec is the recorder of r's World, nil when tracing is off (or r is nil).
func (r *Rank) rec() *trace.Recorder {
	if r == nil {
		return nil
	}
	return r.tl.rec.Load()
}

// StartTrace starts the recovery timeline of this epoch's World (no MPI
// counterpart): its metadata (start time, incarnation, epoch, the OS
// process id and host, the clock), the MPI call spans of c.Calls, and the
// epoch's instant when the epoch is not the first. From then on the
// runtime records its events, and the API's calls hand over theirs.
// Called once, before the World is used.
func (r *Rank) StartTrace(c TraceConfig) {
	r.tl.cfg = c
	r.tl.rec.Store(newRecorder(c))
}

// Tracing reports whether this World records its timeline (no MPI
// counterpart).
func (r *Rank) Tracing() bool { return r.rec() != nil }

// WriteTrace writes the timeline into StartTrace's TraceConfig.Dir (once;
// trace.FileName: by process, incarnation, epoch and OS process id); a
// file that cannot be written is reported on the Diag. Nothing when
// tracing is off. No MPI counterpart.
func (r *Rank) WriteTrace() {
	t := r.rec()
	if t == nil {
		return
	}
	r.tl.write.Do(func() {
		c := r.tl.cfg
		path := trace.FileName(c.Dir, c.Proc, c.Inc, c.Epoch, os.Getpid())
		if err := t.File().WriteFile(path); err != nil {
			r.Diag().Logf("process %d: cannot write its trace: %v", c.Proc, err)
		}
	})
}

// TraceBegin returns the start of a span (the timeline's clock, µs), 0
// when tracing is off. No MPI counterpart.
func (r *Rank) TraceBegin() int64 { return r.rec().Begin() }

// TraceSpan records a span from start (TraceBegin's clock) to now named
// name in category cat, with args (the API's users' spans: checkpoints).
// No MPI counterpart.
func (r *Rank) TraceSpan(cat, name string, start int64, args map[string]any) {
	r.rec().Span(cat, name, start, args)
}

// RepairCall names an API call whose span the timeline keeps in its
// repair category.
type RepairCall uint8

// The API's repair calls (the spans' names are internal/trace's).
const (
	RepairShrink  RepairCall = iota // MPI_Comm_shrink
	RepairMerge                     // MPI_Intercomm_merge
	RepairReplace                   // MPIX_Comm_replace
	RepairSpawn                     // MPI_Comm_spawn, MPI_Comm_spawn_multiple
)

var repairNames = [...]string{RepairShrink: trace.NameShrink, RepairMerge: trace.NameMerge, RepairReplace: trace.NameReplace, RepairSpawn: trace.NameSpawnR}

// TraceRepair records the span of the API's repair call from start
// (TraceBegin) to now, with args (the communicator, the error). The span
// is the call's, from its entry to its return, which only the API sees.
// No MPI counterpart.
func (r *Rank) TraceRepair(call RepairCall, start int64, args map[string]any) {
	r.rec().Span(trace.CatRepair, repairNames[call], start, args)
}

// TraceSpareTaken records that this process, a spare, was taken by a
// repair as rank rank of the communicator named comm, which the API
// builds. No MPI counterpart.
func (r *Rank) TraceSpareTaken(comm string, rank int) {
	if t := r.rec(); t != nil {
		t.Instant(trace.CatRepair, trace.NameSpare, map[string]any{"proc": r.Proc, "comm": comm, "rank": rank})
	}
}

// TraceRollback records that this World's epoch ended by a Reinit
// rollback, for reason (the API ends a World's epoch once: its Reinit
// hook, called by Process.Advance, or its own Reinit loop when a newer
// epoch came while it opened one). No MPI counterpart.
func (r *Rank) TraceRollback(reason string) {
	if t := r.rec(); t != nil {
		t.Instant(trace.CatReinit, trace.NameRollback, map[string]any{"epoch": r.tl.cfg.Epoch, "reason": reason})
	}
}

// TraceKnown records that this process learnt of peer's failure from an
// operation that failed with MPI_ERR_PROC_FAILED before the loss reached
// the runtime (the transport saw the connection break, or the API raises
// it as the loss is being delivered). Once per process, whichever comes
// first: the loss subscription's record, with its cause, or this one. No
// MPI counterpart.
func (r *Rank) TraceKnown(peer int) { r.traceKnown(peer, nil) }

// traceKnown records, the first time, that this process learnt of peer's
// failure, by the loss (cause) or by an operation's error (nil).
func (r *Rank) traceKnown(peer int, cause error) {
	t := r.rec()
	if t == nil {
		return
	}
	r.tl.mu.Lock()
	if r.tl.known == nil {
		r.tl.known = map[int]bool{}
	}
	first := !r.tl.known[peer]
	r.tl.known[peer] = true
	r.tl.mu.Unlock()
	if !first {
		return
	}
	a := map[string]any{"proc": peer, "cause": "an operation failed with MPI_ERR_PROC_FAILED"}
	if cause != nil {
		a["cause"] = cause.Error()
	}
	t.Instant(trace.CatFailure, trace.NameKnown, a)
}

// traceRevokes wraps the API's handler of ctl.Revoke frames (nil: none)
// so that the first frame revoking a context here is recorded.
func (r *Rank) traceRevokes(h func(from int, hd transport.Header, payload []byte)) func(int, transport.Header, []byte) {
	if h == nil {
		return nil
	}
	return func(from int, hd transport.Header, payload []byte) {
		t := r.rec()
		if t == nil || r.Eng.IsRevoked(hd.Ctx) {
			h(from, hd, payload)
			return
		}
		h(from, hd, payload)
		if r.Eng.IsRevoked(hd.Ctx) {
			t.Instant(trace.CatRevoke, trace.NameRevokeRx, map[string]any{"ctx": hd.Ctx, "from": from})
		}
	}
}
