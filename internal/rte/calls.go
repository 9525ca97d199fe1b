package rte

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// The table of the calls in progress (issue 23; moved here from
// internal/calls, issue 25): the Rank owns one (Rank.Calls), the API
// records in it, the hang reports (hang.go) and the trace timeline
// (trace.go) read it. For each goroutine blocked in a wait of package mpi
// (or of the collective engine's shared-memory path, through the API's
// coll.ShmComm) it says which call it is (operation, communicator, peer or
// root, tag, count and type, collective sequence number) and since when it
// waits, with a progress counter that says the rank moved; an optional
// CallObserver (the trace timeline) sees every Enter and Leave.
//
// The table is written on the wait paths of every MPI call, so it must not
// allocate, take a lock or block there: a slot is claimed by one atomic
// compare-and-swap in a fixed array, its fields are atomic words published
// under a sequence counter (a seqlock that readers retry), and a call that
// finds every slot taken is only counted (Overflow). It must not know the
// mpi types, do I/O or keep process-global mutable state: a CallTable
// belongs to one Rank.

// CallSlots is the number of calls a CallTable tracks at once
// (goroutines of one rank blocked in MPI at the same time); more are
// counted in Overflow.
const CallSlots = 64

// Special values of Call fields.
const (
	CallNone = -2 // Peer, PeerProc, Root, Tag, Count, Seq: not applicable
	CallAny  = -1 // Peer, Tag: MPI_ANY_SOURCE, MPI_ANY_TAG
)

// Call is one call in progress. Peer and Root are ranks in the
// communicator; PeerProc is the peer's process (its rank in the job's
// first world), for matching waits across communicators.
type Call struct {
	Op       string // the MPI name: "MPI_Recv"
	Of       string // the operation of the request waited for ("MPI_Irecv" under "MPI_Wait"), or ""
	Comm     string // the communicator's name: "MPI_COMM_WORLD"
	Ctx      uint32 // its context id
	Peer     int32  // the peer of a point-to-point call, CallAny, or CallNone
	PeerProc int32  // the peer's process, or CallNone
	Root     int32  // the root of a rooted collective, or CallNone
	Tag      int32  // the tag, CallAny, or CallNone
	Count    int64  // elements, or CallNone
	Type     string // the element type's name, or ""
	Seq      int64  // the collective call's sequence number on Comm, or CallNone
	Since    int64  // when the wait began (CallNow; Snapshot and CallEvent set it)
	// Background: the wait of a nonblocking operation's own goroutine
	// (an MPI_Iallreduce in progress), not of a call the program made.
	Background bool
}

// BlankCall returns a Call of op on comm (name, context id) with every
// optional field set to CallNone: callers fill what their call has.
func BlankCall(op, comm string, ctx uint32) Call {
	return Call{Op: op, Comm: comm, Ctx: ctx, Peer: CallNone, PeerProc: CallNone, Root: CallNone, Tag: CallNone, Count: CallNone, Seq: CallNone}
}

// callBase is the origin of CallNow's monotonic clock (immutable).
var callBase = time.Now()

// CallNow is the table's monotonic clock, in nanoseconds.
func CallNow() int64 { return int64(time.Since(callBase)) }

// CallEvent is what a CallObserver is told: the entry of slot Slot entered or
// left at At (CallNow). Leave events carry the entry as it was entered.
type CallEvent struct {
	Leave bool
	Slot  int
	At    int64
	Call
}

// CallObserver receives the table's events, on the goroutine of the call, in
// order for one slot. It must be quick and must not call back into MPI.
type CallObserver func(ev CallEvent)

// str is a string as two atomic words (data pointer, length).
type callStr struct {
	p atomic.Pointer[byte]
	n atomic.Int64
}

// store writes v's words that differ (an atomic load is a plain read, a
// store a locked one: a slot reused by the same call stores nothing).
func (s *callStr) store(v string) {
	if p := unsafe.StringData(v); s.p.Load() != p {
		s.p.Store(p)
	}
	if n := int64(len(v)); s.n.Load() != n {
		s.n.Store(n)
	}
}

// callRaw is a string's words, loaded; make it a string only once the
// seqlock validated the read.
type callRaw struct {
	p *byte
	n int64
}

func (s *callStr) load() callRaw { return callRaw{s.p.Load(), s.n.Load()} }

func (r callRaw) String() string {
	if r.p == nil || r.n <= 0 {
		return ""
	}
	return unsafe.String(r.p, r.n)
}

// word is an atomic word stored only when it changes.
type callWord struct{ atomic.Uint64 }

func (w *callWord) set(v uint64) {
	if w.Load() != v {
		w.Store(v)
	}
}

// A slot's state is its seq modulo 4: free, being written (claimed by a
// CAS from free), published; Leave moves it to the next free value. So
// seq/4 counts the calls that left the slot, and a reader that saw seq g
// published and the same g after reading the fields read one entry whole.
const (
	slotFree    = 0
	slotWriting = 1
	slotLive    = 2
)

// slot holds one entry.
type callSlot struct {
	seq  atomic.Uint64
	op   callStr
	of   callStr
	comm callStr
	typ  callStr
	ids  callWord // ctx<<32 | tag
	peer callWord // peer<<32 | peerProc
	root callWord // uint32(root) | background<<32
	cnt  callWord
	cseq callWord
	_    [8]byte // keep neighbours' writes off this slot's lines
}

// CallTable is one rank's calls in progress. The zero CallTable is ready; a nil
// *CallTable tracks nothing (Enter returns -1).
type CallTable struct {
	slots    [CallSlots]callSlot
	overflow atomic.Uint64
	moved    atomic.Uint64
	obs      atomic.Pointer[CallObserver]

	// The readers' side (Sample, Snapshot), under mu: when each slot's
	// occupant (its seq) was first seen, and when progress last moved.
	mu     sync.Mutex
	seen   [CallSlots]callSeen
	lastP  uint64
	moveAt int64
}

type callSeen struct {
	gen uint64
	at  int64
}

// SetObserver sets (nil: removes) the function told of every Enter and
// Leave. No MPI counterpart.
func (t *CallTable) SetObserver(fn CallObserver) {
	if fn == nil {
		t.obs.Store(nil)
		return
	}
	t.obs.Store(&fn)
}

// Observed reports whether an observer is set (SetObserver): a wait that
// would be recorded only once it goes on (package mpi's blocking receive,
// p2p.Req.OnBlock) is then recorded at once, so that the observer (the
// trace timeline) sees every wait. No MPI counterpart.
func (t *CallTable) Observed() bool { return t != nil && t.obs.Load() != nil }

// Enter records that the calling goroutine waits in call *e and returns
// the slot to give Leave, or -1 when the table is full (counted in
// Overflow) or nil. It reads no clock (Sample dates the waits) unless an
// CallObserver is set, and does not keep e. No MPI counterpart.
func (t *CallTable) Enter(e *Call) int {
	if t == nil {
		return -1
	}
	for i := range t.slots {
		s := &t.slots[i]
		g := s.seq.Load()
		if g&3 != slotFree || !s.seq.CompareAndSwap(g, g+slotWriting) {
			continue
		}
		s.op.store(e.Op)
		s.of.store(e.Of)
		s.comm.store(e.Comm)
		s.typ.store(e.Type)
		s.ids.set(uint64(e.Ctx)<<32 | uint64(uint32(e.Tag)))
		s.peer.set(uint64(uint32(e.Peer))<<32 | uint64(uint32(e.PeerProc)))
		bg := uint64(0)
		if e.Background {
			bg = 1 << 32
		}
		s.root.set(uint64(uint32(e.Root)) | bg)
		s.cnt.set(uint64(e.Count))
		s.cseq.set(uint64(e.Seq))
		s.seq.Store(g + slotLive)
		if o := t.obs.Load(); o != nil {
			ev := CallEvent{Slot: i, At: CallNow(), Call: *e}
			ev.Since = ev.At
			(*o)(ev)
		}
		return i
	}
	t.overflow.Add(1)
	return -1
}

// Leave ends the wait of slot i (Enter's result; -1 is ignored), which
// counts as progress. No MPI counterpart.
func (t *CallTable) Leave(i int) {
	if t == nil || i < 0 {
		return
	}
	s := &t.slots[i]
	g := s.seq.Load()
	if o := t.obs.Load(); o != nil {
		if e, _, ok := s.read(); ok {
			(*o)(CallEvent{Leave: true, Slot: i, At: CallNow(), Call: e})
		}
	}
	s.seq.Store(g&^3 + 4)
}

// Progress counts progress of the rank: waits left, and Moved calls.
// No MPI counterpart.
func (t *CallTable) Progress() uint64 {
	if t == nil {
		return 0
	}
	p := t.moved.Load()
	for i := range t.slots {
		p += t.slots[i].seq.Load() >> 2
	}
	return p
}

// Moved counts progress made outside a tracked wait (a call that
// completed without blocking). No MPI counterpart.
func (t *CallTable) Moved() {
	if t != nil {
		t.moved.Add(1)
	}
}

// Sample notes, at now (CallNow), which calls are in progress and whether
// the rank progressed since the last sample: a wait's Since is the first
// sample that saw it, so its precision is the period of the samples (the
// wait path reads no clock). Snapshot samples too. No MPI counterpart.
func (t *CallTable) Sample(now int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.sample(now)
	t.mu.Unlock()
}

func (t *CallTable) sample(now int64) {
	if p := t.Progress(); p != t.lastP || t.moveAt == 0 {
		t.lastP, t.moveAt = p, now
	}
	for i := range t.slots {
		if g := t.slots[i].seq.Load(); g&3 == slotLive && t.seen[i].gen != g {
			t.seen[i] = callSeen{g, now}
		}
	}
}

// Moving returns when the samples last saw the progress counter change
// (the first sample counts as a change); 0 before any sample.
func (t *CallTable) Moving() int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.moveAt
}

// Overflow counts the Enters that found every slot taken.
func (t *CallTable) Overflow() uint64 {
	if t == nil {
		return 0
	}
	return t.overflow.Load()
}

// read copies the slot's entry; ok is false when the slot changed during
// every try or is free.
func (s *callSlot) read() (Call, uint64, bool) {
	for try := 0; try < 8; try++ {
		a := s.seq.Load()
		switch a & 3 {
		case slotWriting:
			continue
		case slotFree:
			return Call{}, 0, false
		}
		ids, peer := s.ids.Load(), s.peer.Load()
		op, of, comm, typ := s.op.load(), s.of.load(), s.comm.load(), s.typ.load()
		root := s.root.Load()
		e := Call{
			Ctx:      uint32(ids >> 32),
			Tag:      int32(uint32(ids)),
			Peer:     int32(uint32(peer >> 32)),
			PeerProc: int32(uint32(peer)),
			Root:     int32(uint32(root)),
			Count:    int64(s.cnt.Load()),
			Seq:      int64(s.cseq.Load()),
		}
		if s.seq.Load() == a {
			e.Op, e.Of, e.Comm, e.Type = op.String(), of.String(), comm.String(), typ.String()
			e.Background = root>>32 != 0
			return e, a, true
		}
	}
	return Call{}, 0, false
}

// Snapshot samples at now (CallNow) and copies the live entries, oldest wait
// first; an entry's Since is when a sample first saw it. No MPI
// counterpart.
func (t *CallTable) Snapshot(now int64) []Call {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sample(now)
	var out []Call
	for i := range t.slots {
		s := &t.slots[i]
		if s.seq.Load()&3 != slotLive {
			continue
		}
		if e, g, ok := s.read(); ok {
			e.Since = now
			if t.seen[i].gen == g {
				e.Since = t.seen[i].at
			}
			out = append(out, e)
		}
	}
	for i := 1; i < len(out); i++ { // few entries: insertion sort
		for j := i; j > 0 && out[j].Since < out[j-1].Since; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
