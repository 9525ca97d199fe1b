// Package calls is one rank's table of the MPI calls in progress: for each
// goroutine blocked in a wait of package mpi, which call it is (operation,
// communicator, peer or root, tag, count and type, collective sequence
// number) and since when it waits, with a progress counter that says the
// rank moved. The hang report (internal/hang) reads it through Snapshot,
// and an optional Observer (the trace timeline) sees every Enter and Leave.
//
// The table is written on the wait paths of every MPI call, so it must not
// allocate, take a lock or block there: a slot is claimed by one atomic
// compare-and-swap in a fixed array, its fields are atomic words published
// under a sequence counter (a seqlock that readers retry), and a call that
// finds every slot taken is only counted (Overflow). It must not know the
// mpi types, do I/O or keep process-global mutable state: a Table belongs
// to one World.
package calls

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Slots is the number of calls a Table tracks at once (goroutines of one
// rank blocked in MPI at the same time); more are counted in Overflow.
const Slots = 64

// Special values of Entry fields.
const (
	None = -2 // Peer, PeerProc, Root, Tag, Count, Seq: not applicable
	Any  = -1 // Peer, Tag: MPI_ANY_SOURCE, MPI_ANY_TAG
)

// Entry is one call in progress. Peer and Root are ranks in the
// communicator; PeerProc is the peer's process (its rank in the job's
// first world), for matching waits across communicators.
type Entry struct {
	Op       string // the MPI name: "MPI_Recv"
	Of       string // the operation of the request waited for ("MPI_Irecv" under "MPI_Wait"), or ""
	Comm     string // the communicator's name: "MPI_COMM_WORLD"
	Ctx      uint32 // its context id
	Peer     int32  // the peer of a point-to-point call, Any, or None
	PeerProc int32  // the peer's process, or None
	Root     int32  // the root of a rooted collective, or None
	Tag      int32  // the tag, Any, or None
	Count    int64  // elements, or None
	Type     string // the element type's name, or ""
	Seq      int64  // the collective call's sequence number on Comm, or None
	Since    int64  // when the wait began (Now; Snapshot and Event set it)
	// Background: the wait of a nonblocking operation's own goroutine
	// (an MPI_Iallreduce in progress), not of a call the program made.
	Background bool
}

// Blank returns an Entry of op on comm (name, context id) with every
// optional field set to None: callers fill what their call has.
func Blank(op, comm string, ctx uint32) Entry {
	return Entry{Op: op, Comm: comm, Ctx: ctx, Peer: None, PeerProc: None, Root: None, Tag: None, Count: None, Seq: None}
}

// base is the origin of Now's monotonic clock (immutable).
var base = time.Now()

// Now is the table's monotonic clock, in nanoseconds.
func Now() int64 { return int64(time.Since(base)) }

// Event is what an Observer is told: the entry of slot Slot entered or
// left at At (Now). Leave events carry the entry as it was entered.
type Event struct {
	Leave bool
	Slot  int
	At    int64
	Entry
}

// Observer receives the table's events, on the goroutine of the call, in
// order for one slot. It must be quick and must not call back into MPI.
type Observer func(ev Event)

// str is a string as two atomic words (data pointer, length).
type str struct {
	p atomic.Pointer[byte]
	n atomic.Int64
}

// store writes v's words that differ (an atomic load is a plain read, a
// store a locked one: a slot reused by the same call stores nothing).
func (s *str) store(v string) {
	if p := unsafe.StringData(v); s.p.Load() != p {
		s.p.Store(p)
	}
	if n := int64(len(v)); s.n.Load() != n {
		s.n.Store(n)
	}
}

// raw is a string's words, loaded; make it a string only once the
// seqlock validated the read.
type raw struct {
	p *byte
	n int64
}

func (s *str) load() raw { return raw{s.p.Load(), s.n.Load()} }

func (r raw) String() string {
	if r.p == nil || r.n <= 0 {
		return ""
	}
	return unsafe.String(r.p, r.n)
}

// word is an atomic word stored only when it changes.
type word struct{ atomic.Uint64 }

func (w *word) set(v uint64) {
	if w.Load() != v {
		w.Store(v)
	}
}

// A slot's state is its seq modulo 4: free, being written (claimed by a
// CAS from free), published; Leave moves it to the next free value. So
// seq/4 counts the calls that left the slot, and a reader that saw seq g
// published and the same g after reading the fields read one entry whole.
const (
	stFree    = 0
	stWriting = 1
	stLive    = 2
)

// slot holds one entry.
type slot struct {
	seq  atomic.Uint64
	op   str
	of   str
	comm str
	typ  str
	ids  word // ctx<<32 | tag
	peer word // peer<<32 | peerProc
	root word // uint32(root) | background<<32
	cnt  word
	cseq word
	_    [8]byte // keep neighbours' writes off this slot's lines
}

// Table is one rank's calls in progress. The zero Table is ready; a nil
// *Table tracks nothing (Enter returns -1).
type Table struct {
	slots    [Slots]slot
	overflow atomic.Uint64
	moved    atomic.Uint64
	obs      atomic.Pointer[Observer]

	// The readers' side (Sample, Snapshot), under mu: when each slot's
	// occupant (its seq) was first seen, and when progress last moved.
	mu     sync.Mutex
	seen   [Slots]seen
	lastP  uint64
	moveAt int64
}

type seen struct {
	gen uint64
	at  int64
}

// SetObserver sets (nil: removes) the function told of every Enter and
// Leave. No MPI counterpart.
func (t *Table) SetObserver(fn Observer) {
	if fn == nil {
		t.obs.Store(nil)
		return
	}
	t.obs.Store(&fn)
}

// Enter records that the calling goroutine waits in call *e and returns
// the slot to give Leave, or -1 when the table is full (counted in
// Overflow) or nil. It reads no clock (Sample dates the waits) unless an
// Observer is set, and does not keep e. No MPI counterpart.
func (t *Table) Enter(e *Entry) int {
	if t == nil {
		return -1
	}
	for i := range t.slots {
		s := &t.slots[i]
		g := s.seq.Load()
		if g&3 != stFree || !s.seq.CompareAndSwap(g, g+stWriting) {
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
		s.seq.Store(g + stLive)
		if o := t.obs.Load(); o != nil {
			ev := Event{Slot: i, At: Now(), Entry: *e}
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
func (t *Table) Leave(i int) {
	if t == nil || i < 0 {
		return
	}
	s := &t.slots[i]
	g := s.seq.Load()
	if o := t.obs.Load(); o != nil {
		if e, _, ok := s.read(); ok {
			(*o)(Event{Leave: true, Slot: i, At: Now(), Entry: e})
		}
	}
	s.seq.Store(g&^3 + 4)
}

// Progress counts progress of the rank: waits left, and Moved calls.
// No MPI counterpart.
func (t *Table) Progress() uint64 {
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
func (t *Table) Moved() {
	if t != nil {
		t.moved.Add(1)
	}
}

// Sample notes, at now (Now), which calls are in progress and whether
// the rank progressed since the last sample: a wait's Since is the first
// sample that saw it, so its precision is the period of the samples (the
// wait path reads no clock). Snapshot samples too. No MPI counterpart.
func (t *Table) Sample(now int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.sample(now)
	t.mu.Unlock()
}

func (t *Table) sample(now int64) {
	if p := t.Progress(); p != t.lastP || t.moveAt == 0 {
		t.lastP, t.moveAt = p, now
	}
	for i := range t.slots {
		if g := t.slots[i].seq.Load(); g&3 == stLive && t.seen[i].gen != g {
			t.seen[i] = seen{g, now}
		}
	}
}

// Moving returns when the samples last saw the progress counter change
// (the first sample counts as a change); 0 before any sample.
func (t *Table) Moving() int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.moveAt
}

// Overflow counts the Enters that found every slot taken.
func (t *Table) Overflow() uint64 {
	if t == nil {
		return 0
	}
	return t.overflow.Load()
}

// read copies the slot's entry; ok is false when the slot changed during
// every try or is free.
func (s *slot) read() (Entry, uint64, bool) {
	for try := 0; try < 8; try++ {
		a := s.seq.Load()
		switch a & 3 {
		case stWriting:
			continue
		case stFree:
			return Entry{}, 0, false
		}
		ids, peer := s.ids.Load(), s.peer.Load()
		op, of, comm, typ := s.op.load(), s.of.load(), s.comm.load(), s.typ.load()
		root := s.root.Load()
		e := Entry{
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
	return Entry{}, 0, false
}

// Snapshot samples at now (Now) and copies the live entries, oldest wait
// first; an entry's Since is when a sample first saw it. No MPI
// counterpart.
func (t *Table) Snapshot(now int64) []Entry {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sample(now)
	var out []Entry
	for i := range t.slots {
		s := &t.slots[i]
		if s.seq.Load()&3 != stLive {
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
