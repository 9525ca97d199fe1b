// Package trace records the failure-and-recovery timeline of one process
// of a job (a rank, or the launcher) and writes it as Chrome trace-event
// JSON, the format Perfetto and chrome://tracing open; it also merges the
// files of a job, computes the recovery phases of every failure from them
// (phases.go) and renders the timeline as a self-contained HTML page
// (html.go). ftmpirun --trace and FTMPI_TRACE turn it on; cmd/ftmpi-trace
// is its command.
//
// What a Recorder keeps, per process: every fault-tolerance event
// (failures, revocations, agreements, shrink, spawn, spares, Reinit
// epochs, checkpoints; up to MaxFT, then counted as dropped), and MPI call
// spans (from the call table's observer, internal/rte) up to Limits.Calls, plus
// Limits.Window more after each fault-tolerance event, so the calls around
// every recovery are in the file even when a long job used up the budget
// long before; spans shorter than Limits.MinCall are not kept. What is not
// kept is counted and written in the file's otherData.
//
// Timestamps are the wall clock (CLOCK_REALTIME, time.Now) in
// microseconds since the Unix epoch: the processes of one host share it, so
// their events compare; processes on other hosts are offset by the hosts'
// clock skew (NTP keeps it to a fraction of a millisecond on a LAN, which
// is the order of the phases measured here: read cross-host phases with
// that in mind).
//
// It must not slow a process when tracing is off (a nil *Recorder: every
// method is a nil check and returns), do I/O while recording (files are
// written by WriteFile, at the end of the World), keep process-global
// state (one Recorder belongs to one World or one launcher), or decide
// anything: it only records what the callers did.
package trace

import (
	"sync"
	"sync/atomic"
	"time"
)

// Categories of events (the "cat" field). Phases (phases.go) read them.
const (
	CatMPI        = "mpi"        // an MPI call span (internal/rte's call table)
	CatFailure    = "failure"    // a failure: kill, exit, detection, notice
	CatRevoke     = "revoke"     // a revocation sent or received
	CatAgree      = "agree"      // an agreement span (args: result)
	CatRepair     = "repair"     // shrink, spawn, merge, replace, spare taken
	CatReinit     = "reinit"     // a Reinit epoch began, a rollback
	CatCheckpoint = "checkpoint" // a checkpoint written or read
	CatLauncher   = "launcher"   // the launcher's decisions and log lines
)

// Names of the events the phases are computed from.
const (
	// Launcher (pid LauncherPid).
	NameKill    = "kill"    // an injected signal sent; args proc, signal
	NameExit    = "exit"    // a process ended; args proc, inc, code, signal
	NameRespawn = "respawn" // a process respawned for Reinit; args proc, inc, epoch
	NameSpawn   = "spawn"   // processes spawned; args procs
	NameLog     = "log"     // one of the policy's log lines; args text
	// Ranks.
	NameKnown    = "failure known" // this process learnt that args.proc failed (args.cause)
	NameDeclared = "declared"      // this process declared args.proc failed (a suspicion confirmed)
	NameRevokeTx = "revoke sent"   // Revoke called here; args comm
	NameRevokeRx = "revoke received"
	NameAgree    = "agree"       // span; args comm, result, err
	NameShrink   = "shrink"      // span
	NameSpawnR   = "spawn"       // span (Comm.Spawn at a rank)
	NameMerge    = "merge"       // span (Intercomm_merge)
	NameReplace  = "replace"     // span (Comm.Replace)
	NameSpare    = "spare taken" // instant: a spare took a failed rank (args proc)
	NameEpoch    = "epoch"       // instant: a Reinit epoch began (args epoch)
	NameRollback = "rollback"    // instant: a Reinit rollback began here
	NameCkptW    = "checkpoint write"
	NameCkptR    = "checkpoint read"
)

// LauncherPid is the pid of the launcher's events in a merged file.
const LauncherPid = 1 << 20

// Event is one event of the timeline. Ph is 'X' (a span of Dur µs from
// TS) or 'i' (an instant). Args holds what the event names (process ids,
// communicator, result); call spans use the fixed fields instead, so that
// recording one does not allocate.
type Event struct {
	Name string
	Cat  string
	Ph   byte
	TS   int64 // µs since the Unix epoch (wall clock)
	Dur  int64 // µs, spans
	Tid  int   // lane within the process (0: the process's main lane)
	Args map[string]any
	// In, when not 0, puts the event in process In-1's lane instead of
	// the recorder's (the launcher's view of a process: its death).
	In int

	// Call spans (Cat CatMPI): the communicator, the peer or root
	// (-1: none), the tag (-1: none or any).
	Comm      string
	Peer, Tag int32
	Root      int32
	Seq       int64
}

// Now is the recorder's clock: the wall clock in µs since the Unix epoch
// (CLOCK_REALTIME).
func Now() int64 { return time.Now().UnixMicro() }

// Limits bound what a Recorder keeps.
type Limits struct {
	Calls   int   // MPI call spans kept (besides the windows); default DefaultCalls
	Window  int   // call spans kept after each fault-tolerance event; default DefaultWindow
	MinCall int64 // µs: shorter call spans are not kept; default 0 (all)
}

// Defaults of Limits, and the cap on fault-tolerance events.
const (
	DefaultCalls  = 1000
	DefaultWindow = 256
	MaxFT         = 100000
)

// Recorder records the events of one process (or the launcher). A nil
// *Recorder records nothing: every method returns at once.
type Recorder struct {
	pid   int    // the process id in the job (LauncherPid for the launcher)
	label string // its name in the viewer: "rank 2", "proc 4 (spawned)"
	lim   Limits

	full   atomic.Bool // the call budget is used up and no window is open
	mu     sync.Mutex
	events []Event
	nFT    int
	nCalls int
	window int // call spans still kept beyond the budget
	drop   struct{ calls, short, ft int64 }
	meta   map[string]any
	names  map[int]string  // other processes' names (InstantIn)
	onFull func(full bool) // SetFullHook
}

// SetFullHook sets fn, called (outside the Recorder's lock, on the
// recording goroutine) when call spans stop being kept (full true: the
// budget and the window are used up) and when a fault-tolerance event
// opens a new window (full false): the caller can then stop and restart
// what feeds Call (the call table's observer, whose clock reads are most
// of the cost of tracing an MPI call). Set it before recording.
func (r *Recorder) SetFullHook(fn func(full bool)) {
	if r != nil {
		r.onFull = fn
	}
}

// New returns a Recorder for process pid named label, with lim (zero
// fields: the defaults).
func New(pid int, label string, lim Limits) *Recorder {
	if lim.Calls <= 0 {
		lim.Calls = DefaultCalls
	}
	if lim.Window <= 0 {
		lim.Window = DefaultWindow
	}
	// The budget's room at once: growing the slice while recording was
	// most of the cost of a kept span.
	return &Recorder{pid: pid, label: label, lim: lim, meta: map[string]any{}, events: make([]Event, 0, min(lim.Calls, DefaultCalls)+64)}
}

// Pid is the process id the Recorder records for.
func (r *Recorder) Pid() int {
	if r == nil {
		return -1
	}
	return r.pid
}

// SetMeta records a key of the process's metadata (written in the
// process_name event's args: host, pid, incarnation, epoch).
func (r *Recorder) SetMeta(key string, v any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.meta[key] = v
	r.mu.Unlock()
}

// Instant records an instant event now.
func (r *Recorder) Instant(cat, name string, args map[string]any) {
	if r == nil {
		return
	}
	r.add(Event{Name: name, Cat: cat, Ph: 'i', TS: Now(), Args: args})
}

// InstantAt records an instant event at ts (Now's clock).
func (r *Recorder) InstantAt(ts int64, cat, name string, args map[string]any) {
	if r == nil {
		return
	}
	r.add(Event{Name: name, Cat: cat, Ph: 'i', TS: ts, Args: args})
}

// InstantIn records an instant event now in the lane of process pid,
// named label unless that process names itself (the launcher's record
// of a process's death, which the process cannot write).
func (r *Recorder) InstantIn(pid int, label, cat, name string, args map[string]any) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.names == nil {
		r.names = map[int]string{}
	}
	r.names[pid] = label
	r.mu.Unlock()
	r.add(Event{Name: name, Cat: cat, Ph: 'i', TS: Now(), Args: args, In: pid + 1})
}

// Span records a span from start (Now's clock) to now.
func (r *Recorder) Span(cat, name string, start int64, args map[string]any) {
	if r == nil {
		return
	}
	end := Now()
	r.add(Event{Name: name, Cat: cat, Ph: 'X', TS: start, Dur: max(end-start, 0), Args: args})
}

// Begin returns the start of a span (Now), or 0 when r is nil: the
// caller's `defer r.Span(cat, name, r.Begin(), ...)` costs a nil check when
// tracing is off.
func (r *Recorder) Begin() int64 {
	if r == nil {
		return 0
	}
	return Now()
}

func (r *Recorder) add(ev Event) {
	r.mu.Lock()
	reopened := false
	if r.nFT >= MaxFT {
		atomic.AddInt64(&r.drop.ft, 1)
	} else {
		r.nFT++
		r.events = append(r.events, ev)
		r.window = r.lim.Window
		reopened = r.full.Swap(false)
	}
	r.mu.Unlock()
	if reopened && r.onFull != nil {
		r.onFull(false)
	}
}

// Call records an MPI call span of op from start to end (Now's clock) on
// the lane tid. It does not allocate (beyond the growth of the event
// slice); once the budget is used up and no window is open it is one
// atomic load.
func (r *Recorder) Call(op, comm string, peer, root, tag int32, seq int64, start, end int64, tid int) {
	if r == nil {
		return
	}
	if end-start < r.lim.MinCall {
		atomic.AddInt64(&r.drop.short, 1)
		return
	}
	if r.full.Load() {
		atomic.AddInt64(&r.drop.calls, 1)
		return
	}
	r.mu.Lock()
	switch {
	case r.nCalls < r.lim.Calls:
		r.nCalls++
	case r.window > 0:
		r.window--
	default:
		r.full.Store(true)
		r.mu.Unlock()
		atomic.AddInt64(&r.drop.calls, 1)
		if r.onFull != nil {
			r.onFull(true)
		}
		return
	}
	r.events = append(r.events, Event{Name: op, Cat: CatMPI, Ph: 'X', TS: start, Dur: max(end-start, 0), Tid: tid,
		Comm: comm, Peer: peer, Root: root, Tag: tag, Seq: seq})
	r.mu.Unlock()
}

// Events returns a copy of the events recorded so far, in recording order.
func (r *Recorder) Events() []Event {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Dropped returns the numbers of call spans not kept (budget used up,
// shorter than the minimum) and of fault-tolerance events not kept.
func (r *Recorder) Dropped() (calls, short, ft int64) {
	if r == nil {
		return 0, 0, 0
	}
	return atomic.LoadInt64(&r.drop.calls), atomic.LoadInt64(&r.drop.short), atomic.LoadInt64(&r.drop.ft)
}
