// Package p2p is the point-to-point protocol engine of one rank: the
// matching of incoming messages against posted receives (MPI's
// non-overtaking order, ANY_SOURCE, ANY_TAG), the eager protocol for small
// messages and the rendezvous protocol (RTS, CTS, DATA) for large and
// synchronous ones, so that an unexpected large message is never buffered
// whole at the receiver.
//
// Every request is in one place the engine can find: posted (waiting for a
// match), in the rendezvous tables (a send waiting for CTS, a receive
// waiting for DATA), or in flight (a receive whose payload the transport is
// placing in its buffer, a send whose DATA the transport is writing). A
// failure (FailPeer) or a revocation (Poison) reaches each of them: it
// completes the first kinds at once, and marks an in-flight request, which
// completes with the mark as soon as the transport gives its buffer back
// (the transport completes every frame it accepted, with an error when it
// was cut short: see package transport). PoisonTags does the same for the
// requests on given (context, tag) pairs (in package mpi: a collective call
// that failed at some member), leaving the rest of the context usable. A
// send's cancellation waits in the cancellation table for the receiver's
// answer (cancel.go), which a live receiver always gives, revoked context
// or not; FailPeer completes it.
//
// Protocol sends made from transport callbacks (CTS, DATA) and control
// frames are posted to the transport's per-peer queues (never a goroutine
// per message); control frames go on the urgent lane.
//
// It sees communicators only as context ids and ranks; it must not know
// about groups, error handlers or collectives, and it never blocks while
// holding its lock (no I/O under the lock).
package p2p

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// flagDiscard, in a CTS's Header.Flags, tells the sender that the receiver
// drops the message (it does not fit the receive): DATA goes without payload.
const flagDiscard uint16 = 1

// flagLayout, in a request to send's Header.Flags, says that its Seq holds
// the layout of its struct type (a point-to-point message: no collective
// word), see hdrDType.
const flagLayout uint16 = 2

// Frame kinds.
const (
	KindEager     uint8 = 1 + iota // payload follows
	KindRTS                        // request to send: A=send id, B=message bytes
	KindCTS                        // clear to send: A=send id, B=receive id (Flags&flagDiscard: the receiver drops the message)
	KindData                       // rendezvous payload: A=receive id
	KindCancel                     // cancel a sent message (cancel.go): A=message id (Flags&flagCancelRdv: a request to send's)
	KindCancelAck                  // answer to KindCancel: A=message id (Flags&flagCancelled: withdrawn)
	// KindControl frames carry fault-tolerance protocol messages
	// (heartbeats, failure notices, revoke, agreement). They bypass
	// matching, revocation and the lost-peer filter, and go to the
	// control handler.
	KindControl = 16
)

// ControlHandler receives control frames; it must not block (hand work to
// another goroutine) and must copy payload if it keeps it.
type ControlHandler func(from int, h transport.Header, payload []byte)

// Wildcards, as in MPI.
const (
	AnySource = -1
	AnyTag    = -1
)

// DefaultEagerLimit is the largest message sent eagerly.
const DefaultEagerLimit = 64 << 10

// Errors reported by the engine; the mpi package maps them to MPI classes.
var (
	ErrTruncate = errors.New("message truncated")
	ErrType     = errors.New("datatype mismatch")
	ErrPeerLost = errors.New("peer lost")
	ErrRevoked  = errors.New("communication context revoked")
	ErrClosed   = errors.New("engine closed")
	// ErrOtherCall completes a receive posted with IrecvSig when a message
	// with its context and tag but another word arrived from another
	// source: the senders are in another call (Status holds the message's
	// source, type and word).
	ErrOtherCall = errors.New("message of another call")
)

// Status describes a completed receive (or probe).
type Status struct {
	Source    int // sender's rank in the communicator
	Tag       int
	Bytes     int // bytes received (or announced, for probes)
	DType     DType
	Cancelled bool
	Err       error
	// Sig is the word the sender passed to IsendSig (the header's Seq of
	// an eager message or of a request to send), opaque to the engine: the
	// collectives carry the signature of the call in it. 0 when no message
	// matched (a receive completed by a failure, a poison or a cancel).
	Sig uint64
}

// Req is an outstanding send or receive.
type Req struct {
	e      *Engine
	isRecv bool

	// Matching parameters of a receive.
	ctx   uint32
	src   int32 // comm rank or AnySource
	tag   int32 // or AnyTag
	dtype DType
	peer  int // world rank of the peer, -1 for AnySource

	buf []byte
	id  uint64
	sig uint64 // a receive's IrecvSig word (0: none)
	// alloc: a receive whose buffer the engine provides at the match
	// (IrecvAlloc); pooled is that buffer's pool handle, recycled by
	// Release.
	alloc  bool
	pooled *[]byte

	prev, next *Req  // links of the posted queue or the in-flight list
	where      uint8 // which of them r is in
	mark       error // in flight: the failure or revocation it completes with

	st     Status
	done   atomic.Bool
	ch     chan struct{}
	waiter atomic.Pointer[chan struct{}]
	// sleeping: a waiter may block on ch (set before it re-checks done),
	// so complete sends the token only then: a request completed while
	// its owner polls costs no channel operation.
	sleeping atomic.Bool
	// xfer is the size of the rendezvous payload r moves, once known: a
	// send's at Isend, a receive's when its request to send is accepted
	// (0: eager, not yet matched, or dropped). See PollBytes.
	xfer atomic.Int64

	// The owner's hook (OnBlock), run once by Blocking; its op and peer,
	// and the slot it returned plus one (0: not run). Only the owner's
	// goroutine touches them.
	hook     BlockHook
	hookOp   string
	hookPeer int
	hookSlot int
}

// BlockHook is told, once, that a wait on a request goes on: its poll
// passed a brief stretch (some microseconds) without the request
// completing, or it is about to sleep (Req.OnBlock). Package mpi records
// the wait in the call table then, so that a wait its reply ends within
// a ping-pong's round trip records nothing. It returns a value the
// request keeps for its owner (BlockSlot). No MPI counterpart.
type BlockHook interface {
	Blocking(r *Req) int
}

// OnBlock sets h to be told once (Blocking) that a wait on r goes on, with
// op and peer kept for it (BlockOp); only r's owner calls it, before it
// waits. No MPI counterpart.
func (r *Req) OnBlock(h BlockHook, op string, peer int) {
	r.hook, r.hookOp, r.hookPeer, r.hookSlot = h, op, peer, 0
}

// BlockOp returns what OnBlock kept. No MPI counterpart.
func (r *Req) BlockOp() (op string, peer int) { return r.hookOp, r.hookPeer }

// Blocking runs r's hook (OnBlock) if it has not run: a transport's
// PollUntil calls it (through interface{ Blocking() }) when its poll goes
// on past a brief stretch, and a wait before it sleeps. It is called on
// the waiting goroutine. No MPI counterpart.
func (r *Req) Blocking() {
	if h := r.hook; h != nil {
		r.hook = nil
		r.hookSlot = h.Blocking(r) + 1
	}
}

// BlockSlot returns what the hook returned, or -1 if it did not run.
// No MPI counterpart.
func (r *Req) BlockSlot() int { return r.hookSlot - 1 }

// Where a request is linked.
const (
	nowhere uint8 = iota
	inPosted
	inFlight
)

// reqList is a doubly-linked list of requests (through prev/next).
type reqList struct{ head, tail *Req }

func (l *reqList) push(r *Req, where uint8) {
	r.next = nil
	r.prev = l.tail
	if l.tail != nil {
		l.tail.next = r
	} else {
		l.head = r
	}
	l.tail = r
	r.where = where
}

func (l *reqList) unlink(r *Req) {
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		l.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		l.tail = r.prev
	}
	r.prev, r.next, r.where = nil, nil, nowhere
}

// Done reports whether r has completed.
func (r *Req) Done() bool { return r.done.Load() }

// PollBytes is the size of the rendezvous payload r waits for, once known
// (0 before, and for eager messages): a transport whose goroutines move a
// payload that large anyway stops a waiting caller's polling (sock's
// PollUntil), which would only take a processor from them. No MPI
// counterpart.
func (r *Req) PollBytes() int64 { return r.xfer.Load() }

// Status returns the completion status; valid once Done.
func (r *Req) Status() Status { return r.st }

// StatusRef is Status read in place: valid once Done, until r is
// released. No MPI counterpart.
func (r *Req) StatusRef() *Status { return &r.st }

// IsRecv reports whether r is a receive.
func (r *Req) IsRecv() bool { return r.isRecv }

// Posted returns what r was posted with, for the call tracking of package
// mpi (the call table, internal/rte): its tag, element type and buffer length in bytes
// (-1 for a receive whose buffer the engine provides). Only the request's
// owner calls it.
func (r *Req) Posted() (tag int32, dt DType, n int) {
	if r.alloc {
		return r.tag, r.dtype, -1
	}
	return r.tag, r.dtype, len(r.buf)
}

// complete marks r done and wakes its waiters. Nothing of r is touched
// after done is set (the waiter may already be recycling r); a late token
// on ch is harmless because Wait re-checks done.
func (r *Req) complete() {
	ch := r.ch
	w := r.waiter.Load()
	r.done.Store(true)
	// done is stored before sleeping is loaded, and a waiter stores
	// sleeping before it loads done (both sequentially consistent): either
	// the waiter sees done or this sees sleeping and sends the token.
	wakeWaiters(ch, r.sleeping.Load(), w)
}

// wakeWaiters sends the completion's tokens: on ch when a waiter may
// sleep on it, and on w when one is registered (never blocking).
func wakeWaiters(ch chan struct{}, sleeping bool, w *chan struct{}) {
	if sleeping {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	if w != nil {
		select {
		case *w <- struct{}{}:
		default:
		}
	}
}

// completeHeld is complete that returns the wake-up of r's waiters
// instead of making it (nil when none sleeps or is registered); as in
// complete, nothing of r is touched after done is set.
func (r *Req) completeHeld() func() {
	ch := r.ch
	w := r.waiter.Load()
	r.done.Store(true)
	sleeping := r.sleeping.Load()
	if !sleeping && w == nil {
		return nil
	}
	return func() { wakeWaiters(ch, sleeping, w) }
}

// Wait blocks until r completes or abort is closed (nil abort never fires).
// It spins briefly (yielding the processor) before blocking.
func (r *Req) Wait(abort <-chan struct{}) bool { return r.WaitCancel(abort, nil) == WaitDone }

// What WaitCancel and WaitSignalCancel returned.
const (
	WaitDone      = 0 // the request completed
	WaitAborted   = 1 // abort closed first
	WaitSignalled = 2 // sig closed first
	WaitCancelled = 3 // cancel closed first (the request is still pending)
)

// WaitCancel is Wait that also returns WaitCancelled when cancel closes
// first (a nil cancel never fires and costs nothing): WaitDone when r
// completed, WaitAborted when abort closed.
func (r *Req) WaitCancel(abort, cancel <-chan struct{}) int {
	if r.done.Load() {
		return WaitDone
	}
	if spin := r.e.spin; spin > 0 {
		r.Blocking()
		start := time.Now()
		for i := 0; ; i++ {
			runtime.Gosched()
			if r.done.Load() {
				return WaitDone
			}
			if i&15 == 15 && time.Since(start) > spin {
				break
			}
		}
	}
	return r.WaitSignalCancel(abort, nil, cancel)
}

// Poller is a transport whose frames a goroutine waiting for a request
// can receive itself (caller-driven progress, internal/transport/shm and
// internal/transport/sock):
// PollUntil polls for at most budget, delivering frames to the engine from
// the caller's goroutine, until c.Done(), and returns c.Done(). It must
// not deliver control frames inline (their handler may take locks the
// waiting goroutine holds). When c has a Blocking method (a Req), a poll
// that goes on past a brief stretch calls it once (Req.Blocking).
type Poller interface {
	PollUntil(c interface{ Done() bool }, budget time.Duration) bool
}

type pollCfg struct {
	p      Poller
	budget time.Duration
}

// SetPoller makes blocking waits (Wait and its variants) poll p for at
// most budget before they park; nil p or budget <= 0 turns it off. Only
// where every rank of the host has a core: the waiter spins.
func (e *Engine) SetPoller(p Poller, budget time.Duration) {
	if p == nil || budget <= 0 {
		e.poller.Store(nil)
		return
	}
	e.poller.Store(&pollCfg{p: p, budget: budget})
}

// NewLocalReq returns a request that no message completes: its owner
// completes it with Finish (used for operations run by a goroutine, such
// as nonblocking collectives). Wait, SetWaiter and Release work on it as on
// any request.
func (e *Engine) NewLocalReq() *Req { return e.newReq() }

// Finish completes a request made by NewLocalReq with status st. It must
// be called exactly once.
func (r *Req) Finish(st Status) {
	r.st = st
	r.complete()
}

// WaitSignal is Wait that also returns when sig fires: 0 when r completed,
// 1 when abort closed, 2 when sig closed first.
func (r *Req) WaitSignal(abort, sig <-chan struct{}) int { return r.WaitSignalCancel(abort, sig, nil) }

// WaitSignalCancel is WaitSignal that also returns WaitCancelled when cancel
// closes first (nil never fires).
func (r *Req) WaitSignalCancel(abort, sig, cancel <-chan struct{}) int {
	if !r.done.Load() {
		if pc := r.e.poller.Load(); pc != nil && pc.p.PollUntil(r, pc.budget) {
			return WaitDone
		}
	}
	if !r.done.Load() {
		r.Blocking()
		r.sleeping.Store(true)
	}
	for !r.done.Load() {
		select {
		case <-r.ch:
		case <-abort:
			if r.done.Load() {
				return WaitDone
			}
			return WaitAborted
		case <-sig:
			if r.done.Load() {
				return WaitDone
			}
			return WaitSignalled
		case <-cancel:
			if r.done.Load() {
				return WaitDone
			}
			return WaitCancelled
		}
	}
	return WaitDone
}

// SetWaiter registers a channel signalled (non-blocking) on completion;
// used by Waitany/Waitsome. Pass nil to clear.
func (r *Req) SetWaiter(c *chan struct{}) { r.waiter.Store(c) }

// msg is an arrived message no receive matched yet (or one being filled).
type msg struct {
	from     int
	h        transport.Header
	data     []byte
	pooled   *[]byte
	complete bool
	drain    bool  // matched at arrival by a receive too small: drain, copy the prefix
	held     bool  // taken out of the queue by a matched probe (mprobe.go)
	cut      error // held and its payload cut short: the error its receive gets
	recv     *Req  // matched while its payload was still arriving
	prev     *msg
	next     *msg
}

var msgPool = sync.Pool{New: func() any { return new(msg) }}

func newMsg(from int, h *transport.Header) *msg {
	m := msgPool.Get().(*msg)
	m.from, m.h = from, *h
	return m
}

// freeMsg recycles an arrived message once nothing refers to it.
func freeMsg(m *msg) {
	*m = msg{}
	msgPool.Put(m)
}

type probeWaiter struct {
	ctx      uint32
	src, tag int32
	ch       chan struct{}
}

// Engine is the protocol state of one rank.
type Engine struct {
	self       int
	tr         transport.Transport
	trSet      chan struct{} // closed once tr is set (SetTransport)
	trOnce     sync.Once
	eagerLimit int
	spin       time.Duration
	poller     atomic.Pointer[pollCfg] // caller-driven progress (SetPoller)

	mu          sync.Mutex
	posted      reqList // receives waiting for a match
	flying      reqList // requests whose completion the transport owes
	unexHead    *msg
	unexTail    *msg
	sends       map[uint64]*Req  // rendezvous sends waiting for CTS
	recvs       map[uint64]*Req  // rendezvous receives waiting for DATA
	cancels     map[sentKey]*Req // cancellations of sent messages waiting for the receiver's answer (cancel.go); nil until the first
	nextID      uint64
	probes      []*probeWaiter
	lost        map[int]error
	lostOrder   []int                         // the keys of lost, in the order they were declared
	failSig     atomic.Pointer[chan struct{}] // closed and replaced when a peer is lost
	poisonSig   atomic.Pointer[chan struct{}] // closed and replaced when a context is newly poisoned (Poison)
	revoked     map[uint32]error              // poisoned contexts: their operations all fail with this error (ErrRevoked, ...)
	tagPoison   map[ctxTag]error              // poisoned (context, tag) pairs: one failed collective call (PoisonTags)
	nTagPoison  atomic.Int32                  // len(tagPoison), read without the lock
	nRevoked    atomic.Int32                  // len(revoked), read without the lock
	control     atomic.Pointer[ControlHandler]
	ctlMu       sync.Mutex                 // orders early control frames with the handler's installation
	ctlEarly    []ctlFrame                 // control frames that arrived before the handler; ctlMu held
	lostSubs    atomic.Pointer[[]*lostSub] // SubscribeLost's subscribers, copied on write (lostMu)
	lostMu      sync.Mutex                 // serialises SubscribeLost and its cancel
	suspectHook atomic.Pointer[func(peer int, cause error)]
	lostCount   atomic.Int64
	sent        atomic.Uint64 // messages started by Isend (eager or rendezvous)
	closed      bool
	untyped     bool // Config.Untyped

	// ctlCheck validates a control frame's header (SetControlCheck).
	ctlCheck atomic.Pointer[func(transport.Header) error]
}

// Config tunes an Engine.
type Config struct {
	Self       int           // this rank's world rank
	EagerLimit int           // 0 means DefaultEagerLimit
	Spin       time.Duration // how long Wait spins before blocking
	// Untyped: a message matches a receive whatever their element types
	// (MPI's rule for C, where type matching is the program's duty and
	// MPI_PACKED matches anything); only lengths are checked.
	Untyped bool
}

// New returns an engine; call SetTransport before use.
func New(cfg Config) *Engine {
	if cfg.EagerLimit <= 0 {
		cfg.EagerLimit = DefaultEagerLimit
	}
	e := &Engine{
		self:       cfg.Self,
		trSet:      make(chan struct{}),
		eagerLimit: cfg.EagerLimit,
		spin:       cfg.Spin,
		untyped:    cfg.Untyped,
		sends:      make(map[uint64]*Req),
		recvs:      make(map[uint64]*Req),
		lost:       make(map[int]error),
		revoked:    make(map[uint32]error),
		tagPoison:  make(map[ctxTag]error),
	}
	sig, psig := make(chan struct{}), make(chan struct{})
	e.failSig.Store(&sig)
	e.poisonSig.Store(&psig)
	return e
}

// SetTransport sets the transport used for sending. The transports
// deliver frames from the moment they listen, before the start-up
// exchange that precedes this call: a frame answered at once on arrival
// (a peer's cancel request) waits for it (transport).
func (e *Engine) SetTransport(tr transport.Transport) {
	select {
	case <-e.trSet:
		if e.tr == tr {
			return // set already: the Net's, then the Rank's (internal/rte)
		}
	default:
	}
	e.tr = tr
	e.trOnce.Do(func() { close(e.trSet) })
}

// transport returns the transport once SetTransport set it: for the
// answers sent from a receiver goroutine to a frame that a peer, further
// on in its start than this process, can send before this process's
// Init set it. A cancel request answered on a nil transport crashed the
// process (libmpi/ctest TestCancelSendC/unix and /tcp, 5 of 42 runs at
// load 30+: nil pointer dereference in cancelFrame).
func (e *Engine) transport() transport.Transport {
	<-e.trSet
	return e.tr
}

var reqPool = sync.Pool{New: func() any { return &Req{ch: make(chan struct{}, 1)} }}

// newReq takes a request from the pool and resets what Release left
// (issue 28: the reset is done here, when a receive is posted, which in a
// ping-pong is while the peer works, not between a receive's completion
// and the reply; Release only drops the references).
func (e *Engine) newReq() *Req {
	r := reqPool.Get().(*Req)
	r.reset()
	r.e = e
	return r
}

// reset clears what Release left of a request (newReq).
func (r *Req) reset() {
	r.isRecv, r.id, r.where = false, 0, nowhere
	r.alloc = false
	r.ctx, r.src, r.tag, r.dtype, r.peer, r.sig = 0, 0, 0, 0, 0, 0
	r.st = Status{}
	r.hookPeer, r.hookSlot = 0, 0
	if r.done.Load() { // a released request: done is reset here, an atomic exchange
		r.done.Store(false)
	}
	if r.waiter.Load() != nil { // most requests never had one: no store (an atomic exchange) for them
		r.waiter.Store(nil)
	}
}

// Release returns a completed request to the pool. The caller must not use
// r afterwards. It drops r's references (the pool keeps no buffer or
// error alive) and leaves the rest of the reset to newReq.
func (e *Engine) Release(r *Req) {
	if !r.done.Load() {
		return
	}
	if r.sleeping.Load() {
		select {
		case <-r.ch:
		default:
		}
		r.sleeping.Store(false)
	}
	putBuf(r.pooled)
	r.e, r.buf, r.prev, r.next, r.mark, r.pooled = nil, nil, nil, nil, nil, nil
	r.st.Err = nil
	r.hook, r.hookOp = nil, ""
	if r.xfer.Load() != 0 { // a released request names no payload (PollBytes); eager ones never set it: no store
		r.xfer.Store(0)
	}
	reqPool.Put(r)
}

// Isend sends buf eagerly or by rendezvous. For an eager send it
// returns (nil, nil) when the data is already handed to the transport.
// sync forces the rendezvous (MPI_Ssend semantics: completes only once the
// receive has matched).
func (e *Engine) Isend(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte, sync bool) (*Req, error) {
	return e.IsendSig(ctx, src, peer, tag, dtype, buf, sync, 0)
}

// IsendSig is Isend carrying sig beside the tag (in the header's Seq of the
// eager message or of the request to send, a field those frames do not
// otherwise use); the receive's Status.Sig holds it. The engine does not
// match on it.
func (e *Engine) IsendSig(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte, sync bool, sig uint64) (*Req, error) {
	r, _, err := e.IsendMsg(ctx, src, peer, tag, dtype, buf, sync, sig)
	return r, err
}

// IsendMsg is IsendSig that also names the message it sent, for
// CancelSend (cancel.go). An eager message carries its number (the
// engine's count of messages sent, Sent) in the header's B, which eager
// frames do not otherwise use: naming it costs nothing.
func (e *Engine) IsendMsg(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte, sync bool, sig uint64) (*Req, SentMsg, error) {
	if err := e.peerErr(peer, ctx, tag); err != nil {
		return nil, SentMsg{}, err
	}
	n := e.sent.Add(1)
	if !sync && len(buf) <= e.eagerLimit {
		h := transport.Header{Kind: KindEager, DType: uint8(dtype), Ctx: ctx, Src: src, Tag: tag, N: uint64(len(buf)), A: dtype.Layout(), B: n, Seq: sig}
		if err := e.tr.Send(peer, h, buf); err != nil {
			return nil, SentMsg{}, e.sendErr(peer, err)
		}
		return nil, SentMsg{peer: peer, ctx: ctx, id: n}, nil
	}
	r := e.newReq()
	r.peer = peer
	r.buf = buf
	r.ctx, r.src, r.tag, r.dtype = ctx, src, tag, dtype
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, SentMsg{}, ErrClosed
	}
	// Checked again under the lock: a FailPeer or Poison since peerErr
	// would not find r in the table.
	if err := e.ctxErrLocked(ctx, tag); err != nil {
		e.mu.Unlock()
		return nil, SentMsg{}, err
	}
	if cause, lost := e.lost[peer]; lost {
		e.mu.Unlock()
		return nil, SentMsg{}, peerLost(peer, cause)
	}
	e.nextID++
	r.id = e.nextID
	r.xfer.Store(int64(len(buf)))
	e.sends[r.id] = r
	e.mu.Unlock()
	h := transport.Header{Kind: KindRTS, DType: uint8(dtype), Ctx: ctx, Src: src, Tag: tag, A: r.id, B: uint64(len(buf)), Seq: sig}
	if sig == 0 && dtype.Layout() != 0 {
		h.Seq, h.Flags = dtype.Layout(), flagLayout // a point-to-point message's layout (see hdrDType)
	}
	if err := e.tr.Send(peer, h, nil); err != nil {
		e.mu.Lock()
		delete(e.sends, r.id)
		e.mu.Unlock()
		return nil, SentMsg{}, e.sendErr(peer, err)
	}
	return r, SentMsg{peer: peer, ctx: ctx, id: r.id, rdv: true}, nil
}

func (e *Engine) sendErr(peer int, err error) error {
	if errors.Is(err, transport.ErrClosed) {
		return ErrClosed
	}
	return peerLost(peer, err)
}

func (e *Engine) peerErr(peer int, ctx uint32, tag int32) error {
	if e.lostCount.Load() == 0 && e.nRevoked.Load() == 0 && e.nTagPoison.Load() == 0 {
		// Nothing was ever lost, revoked or poisoned: the answer is nil
		// without the lock (a FailPeer or Poison racing with this send is
		// ordered after it, as it would be after the lock's release).
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ctxErrLocked(ctx, tag); err != nil {
		return err
	}
	if err, ok := e.lost[peer]; ok {
		return peerLost(peer, err)
	}
	return nil
}

func matches(ctx uint32, src, tag int32, h *transport.Header) bool {
	return ctx == h.Ctx && (src == AnySource || src == h.Src) && (tag == AnyTag || tag == h.Tag)
}

// Irecv posts a receive. peer is the world rank of src (-1 for AnySource).
func (e *Engine) Irecv(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte) (*Req, error) {
	return e.IrecvSig(ctx, src, peer, tag, dtype, buf, 0)
}

// IrecvSig is Irecv for a message sent with IsendSig(..., sig). A message
// with the receive's context and tag from ANOTHER source whose word is not
// sig (and not 0) completes the receive at once with ErrOtherCall and that
// message's status (the message itself stays queued): the collectives use
// it to see a member in another call than this one even when the member
// they wait for never sends (coll_sig.go in package mpi). Matching is
// unchanged.
func (e *Engine) IrecvSig(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte, sig uint64) (*Req, error) {
	return e.irecv(ctx, src, peer, tag, dtype, buf, sig, false)
}

func (e *Engine) irecv(ctx uint32, src int32, peer int, tag int32, dtype DType, buf []byte, sig uint64, alloc bool) (*Req, error) {
	r := e.newReq()
	r.isRecv, r.alloc = true, alloc
	r.ctx, r.src, r.tag, r.dtype, r.peer, r.buf, r.sig = ctx, src, tag, dtype, peer, buf, sig
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if err := e.ctxErrLocked(ctx, tag); err != nil {
		e.mu.Unlock()
		r.st = Status{Source: int(src), Tag: int(tag), Err: err}
		r.complete()
		return r, nil
	}
	for m := e.unexHead; m != nil; m = m.next {
		if !matches(ctx, src, tag, &m.h) {
			if sig != 0 && otherCall(r, &m.h) {
				e.mu.Unlock()
				completeOther(r, &m.h)
				return r, nil
			}
			continue
		}
		e.unlinkMsg(m)
		switch m.h.Kind {
		case KindEager:
			if !m.complete {
				// Its payload is still arriving: r is in flight until the
				// transport completes the frame.
				m.recv = r
				r.peer = m.from
				e.flying.push(r, inFlight)
				if cause, lost := e.lost[m.from]; lost {
					r.mark = peerLost(m.from, cause)
				}
				e.mu.Unlock()
				return r, nil
			}
			e.mu.Unlock()
			e.deliverEager(r, m)
			freeMsg(m)
			return r, nil
		case KindRTS:
			e.acceptRTS(r, m.from, &m.h) // unlocks
			freeMsg(m)
			return r, nil
		}
	}
	if peer >= 0 {
		if err, ok := e.lost[peer]; ok {
			e.mu.Unlock()
			r.st = Status{Source: int(src), Tag: int(tag), Err: peerLost(peer, err)}
			r.complete()
			return r, nil
		}
	}
	e.appendPosted(r)
	e.mu.Unlock()
	return r, nil
}

// acceptRTS matches receive r with a rendezvous announcement; called with
// e.mu held, returns with it released.
func (e *Engine) acceptRTS(r *Req, from int, h *transport.Header) {
	d := hdrDType(h)
	if d == DTStruct && r.dtype.Code() == DTStruct {
		d = r.dtype // a collective's: the layout comes with the data (KindData)
	}
	r.st = Status{Source: int(h.Src), Tag: int(h.Tag), Bytes: int(h.B), DType: d, Sig: hdrSig(h)}
	r.peer = from
	if cause, lost := e.lost[from]; lost {
		// An announcement queued before its sender was lost: the data
		// can never come, and FailPeer has run already.
		e.mu.Unlock()
		r.st.Err = peerLost(from, cause)
		r.complete()
		return
	}
	var flags uint16
	allocFor(r, d, int(h.B))
	if err := checkFit(r, d, int(h.B)); err != nil {
		r.st.Err = err
		flags = flagDiscard
	} else {
		r.xfer.Store(int64(h.B))
	}
	e.nextID++
	r.id = e.nextID
	e.recvs[r.id] = r
	cts := transport.Header{Kind: KindCTS, Flags: flags, Ctx: h.Ctx, A: h.A, B: r.id}
	e.mu.Unlock()
	// A CTS that cannot be written means the connection broke: the peer is
	// then lost, and FailPeer finds r in the rendezvous table.
	e.tr.Post(from, cts, nil, nil)
}

// hdrDType is the type of the message h announces: an eager message
// carries its layout in A; a request to send without a word (IsendSig's
// sig 0) in Seq, marked by flagLayout; a request to send with a word
// carries only the code, and its DATA frame the layout (checked when the
// data arrives).
func hdrDType(h *transport.Header) DType {
	switch {
	case h.Kind == KindEager:
		return DType(h.DType) | DType(h.A<<8)
	case h.Kind == KindRTS && h.Flags&flagLayout != 0:
		return DType(h.DType) | DType(h.Seq<<8)
	}
	return DType(h.DType)
}

// hdrSig is the IsendSig word of h (a request to send with flagLayout has
// none: its Seq is the layout).
func hdrSig(h *transport.Header) uint64 {
	if h.Kind == KindRTS && h.Flags&flagLayout != 0 {
		return 0
	}
	return h.Seq
}

func checkFit(r *Req, dtype DType, n int) error { return r.e.fit(r.dtype, len(r.buf), dtype, n) }

// fit is checkFit for a receive of type want whose buffer holds room
// bytes, of a message of type got and n bytes.
func (e *Engine) fit(want DType, room int, got DType, n int) error {
	if got != want && !e.untyped {
		return fmt.Errorf("%w: message has type %s, receive buffer has type %s", ErrType, DTypeName(got), DTypeName(want))
	}
	if n > room {
		return fmt.Errorf("%w: message of %d bytes, receive buffer holds %d", ErrTruncate, n, room)
	}
	return nil
}

func (e *Engine) deliverEager(r *Req, m *msg) {
	r.st = Status{Source: int(m.h.Src), Tag: int(m.h.Tag), Bytes: len(m.data), DType: hdrDType(&m.h), Sig: m.h.Seq}
	if r.alloc && r.st.DType == r.dtype {
		// The message's own buffer becomes the receive's: no copy.
		r.buf, r.pooled = m.data, m.pooled
		m.pooled = nil
		r.complete()
		return
	}
	r.st.Err = checkFit(r, r.st.DType, len(m.data))
	copy(r.buf, m.data) // on truncation the fitting prefix
	putBuf(m.pooled)
	r.complete()
}

// Frame implements transport.Handler.
func (e *Engine) Frame(from int, hv transport.Header) ([]byte, any) {
	h := &hv
	if err := checkFrame(h); err != nil {
		return reject(from, h, err)
	}
	switch h.Kind {
	case KindControl:
		if chk := e.ctlCheck.Load(); chk != nil {
			if err := (*chk)(hv); err != nil {
				return reject(from, h, err)
			}
		}
		if h.N == 0 {
			return nil, ctlCookie{}
		}
		b, pooled := getBuf(int(h.N))
		return b, ctlCookie{pooled}
	case KindEager:
		e.mu.Lock()
		if e.dropLocked(from, h) {
			e.mu.Unlock()
			return nil, nil
		}
		if r := e.matchPosted(h); r != nil {
			r.peer = from
			e.flying.push(r, inFlight)
			e.mu.Unlock()
			r.st = Status{Source: int(h.Src), Tag: int(h.Tag), Bytes: int(h.N), DType: hdrDType(h), Sig: h.Seq}
			allocFor(r, r.st.DType, int(h.N))
			if err := checkFit(r, r.st.DType, int(h.N)); err != nil {
				r.st.Err = err
				if h.N == 0 {
					return nil, r
				}
				// Drain into a scratch buffer; the fitting prefix is copied.
				m := newMsg(from, h)
				m.recv, m.drain = r, true
				m.data, m.pooled = getBuf(int(h.N))
				return m.data, m
			}
			return r.buf[:h.N], r
		}
		other := e.otherCallLocked(h)
		m := newMsg(from, h)
		// Once m is queued and the lock released, a receive may match it and
		// (if complete) recycle it: take what is returned first, and give
		// no cookie for a complete (empty) message.
		var data []byte
		var cookie any
		if h.N > 0 {
			m.data, m.pooled = getBuf(int(h.N))
			data, cookie = m.data, m
		} else {
			m.complete = true
		}
		e.appendUnex(m)
		e.wakeProbes(h)
		e.mu.Unlock()
		if other != nil {
			completeOther(other, h)
		}
		return data, cookie
	case KindRTS:
		e.mu.Lock()
		if e.dropLocked(from, h) {
			e.mu.Unlock()
			return nil, nil
		}
		if r := e.matchPosted(h); r != nil {
			e.acceptRTS(r, from, h)
			return nil, nil
		}
		other := e.otherCallLocked(h)
		m := newMsg(from, h)
		m.complete = true
		e.appendUnex(m)
		e.wakeProbes(h)
		e.mu.Unlock()
		if other != nil {
			completeOther(other, h)
		}
		return nil, nil
	case KindCTS:
		e.mu.Lock()
		r := e.sends[h.A]
		delete(e.sends, h.A)
		if r == nil {
			e.mu.Unlock()
			return nil, nil
		}
		e.flying.push(r, inFlight)
		e.mu.Unlock()
		d := transport.Header{Kind: KindData, Ctx: r.ctx, A: h.B, B: r.dtype.Layout(), N: uint64(len(r.buf))}
		payload := r.buf
		if h.Flags&flagDiscard != 0 { // the receiver drops the message
			d.N, payload = 0, nil
		}
		e.tr.Post(from, d, payload, (*dataSent)(r))
		return nil, nil
	case KindCancel:
		e.cancelFrame(from, h)
		return nil, nil
	case KindCancelAck:
		e.cancelAck(from, h)
		return nil, nil
	case KindData:
		e.mu.Lock()
		r := e.recvs[h.A]
		delete(e.recvs, h.A)
		if r == nil {
			e.mu.Unlock()
			return nil, nil
		}
		if h.N > uint64(len(r.buf)) {
			// The clear to send said what the receive takes; a larger
			// payload cannot be placed: the receive fails with the
			// connection the transport closes.
			e.mu.Unlock()
			err := fmt.Errorf("rendezvous data of %d bytes for a %d-byte receive", h.N, len(r.buf))
			r.st.Err = peerLost(from, err)
			r.complete()
			return reject(from, h, err)
		}
		e.flying.push(r, inFlight)
		e.mu.Unlock()
		if r.st.Err == nil && r.dtype.Code() == DTStruct && h.B != r.dtype.Layout() {
			// The layouts differ (the codes matched at the request to
			// send): drop the data.
			r.st.DType = MakeStruct(h.B)
			r.st.Err = checkFit(r, r.st.DType, 0)
		}
		if r.st.Err != nil || h.N == 0 {
			return nil, r
		}
		return r.buf[:h.N], r
	}
	return nil, nil
}

// dataSent is a rendezvous send whose DATA frame is posted: the transport
// tells it the outcome.
type dataSent Req

// Deferrable implements transport.Deferrable: DATA is addressed to its
// receive by id, so the frames sent after it (the next requests to send,
// clears to send) may overtake it. Before, over TCP, a window of rendezvous
// sends went one round trip per message: each request to send waited in
// the socket's queue behind the previous message's payload, so its clear to
// send could come only once that payload was read.
func (d *dataSent) Deferrable() {}

// SendDone implements transport.Done.
func (d *dataSent) SendDone(err error) {
	d.sent(err)
	(*Req)(d).complete()
}

// SendDoneHeld implements transport.Held.
func (d *dataSent) SendDoneHeld(err error) func() {
	d.sent(err)
	return (*Req)(d).completeHeld()
}

// sent records the outcome of the DATA frame (SendDone).
func (d *dataSent) sent(err error) {
	r := (*Req)(d)
	e := r.e
	e.mu.Lock()
	e.flying.unlink(r)
	if r.mark != nil {
		err = r.mark
	} else if err != nil {
		err = e.sendErr(r.peer, err)
	}
	e.mu.Unlock()
	r.st.Err = err
}

// Payload implements transport.Handler: the frame that Frame accepted is
// complete (err == nil) or was cut short.
func (e *Engine) Payload(from int, h transport.Header, dst []byte, cookie any, err error) {
	switch c := cookie.(type) {
	case ctlCookie:
		if err == nil {
			e.deliverControl(from, h, dst)
		}
		putBuf(c.pooled)
	case *Req:
		if c != nil {
			e.landed(c, from, err)
		}
	case *msg:
		e.mu.Lock()
		c.complete = true
		r := c.recv
		if r == nil {
			if err != nil && c.held {
				// Held by a matched probe: its receive gets the error.
				c.cut = peerLost(from, err)
				e.mu.Unlock()
				return
			}
			if err != nil || !c.held && e.ctxErrLocked(c.h.Ctx, c.h.Tag) != nil {
				// Unexpected and cut short, or its context revoked (or its
				// call poisoned) while its payload arrived, after Poison
				// discarded the complete ones: nobody will receive it, and
				// left queued a probe would still find it.
				e.unlinkMsg(c)
				e.mu.Unlock()
				putBuf(c.pooled)
				freeMsg(c)
			} else {
				e.mu.Unlock()
			}
			return
		}
		fail := e.landedLocked(r, from, err)
		e.mu.Unlock()
		switch {
		case fail != nil:
			if !c.drain {
				r.st = Status{Source: int(c.h.Src), Tag: int(c.h.Tag), Bytes: len(c.data), DType: hdrDType(&c.h), Sig: c.h.Seq}
			}
			r.st.Err = fail
			putBuf(c.pooled)
			freeMsg(c)
			r.complete()
		case c.drain:
			// Truncated eager receive matched at arrival: the fitting
			// prefix (the status already says truncated).
			copy(r.buf, c.data)
			putBuf(c.pooled)
			freeMsg(c)
			r.complete()
		default:
			e.deliverEager(r, c)
			freeMsg(c)
		}
	}
}

// landed completes in-flight receive r, whose payload the transport is done
// with (err says it was cut short).
// PayloadHeld implements transport.HeldPayload: a rendezvous payload
// that landed whole completes its receive and returns the wake-up of its
// waiter; everything else (an eager message into a posted receive
// included) is Payload.
func (e *Engine) PayloadHeld(from int, h transport.Header, dst []byte, cookie any, err error) func() {
	r, ok := cookie.(*Req)
	if !ok || r == nil || err != nil || r.xfer.Load() == 0 {
		e.Payload(from, h, dst, cookie, err)
		return nil
	}
	e.mu.Lock()
	fail := e.landedLocked(r, from, nil)
	e.mu.Unlock()
	if fail != nil {
		r.st.Err = fail
	}
	return r.completeHeld()
}

func (e *Engine) landed(r *Req, from int, err error) {
	e.mu.Lock()
	fail := e.landedLocked(r, from, err)
	e.mu.Unlock()
	if fail != nil {
		r.st.Err = fail
	}
	r.complete()
}

// landedLocked takes r out of the in-flight list and returns the error it
// completes with, if any: the mark of a failure or revocation that came
// while its payload was arriving, else the cut. e.mu held.
func (e *Engine) landedLocked(r *Req, from int, err error) error {
	e.flying.unlink(r)
	if r.mark != nil {
		return r.mark
	}
	if err != nil {
		return peerLost(from, err)
	}
	return nil
}

// dropLocked reports whether an arriving message must be discarded: its
// context is revoked, or its sender was declared lost (a message that
// arrives after the loss must not complete a receive posted after an
// earlier one failed for lack of it: seed 003, 17.6, advice to
// implementors). e.mu held.
func (e *Engine) dropLocked(from int, h *transport.Header) bool {
	if e.ctxErrLocked(h.Ctx, h.Tag) != nil {
		return true
	}
	if len(e.lost) == 0 {
		return false
	}
	_, lost := e.lost[from]
	return lost
}

// PeerLost implements transport.Handler: operations that can only be
// completed by peer fail.
//
// If a suspect hook is installed, the loss is only a suspicion handed to it
// (the runtime confirms it, e.g. by having the launcher kill the peer, and
// then calls FailPeer): a broken connection alone must not make a live
// process failed at one rank and not at the others.
func (e *Engine) PeerLost(peer int, err error) {
	if f := e.suspectHook.Load(); f != nil {
		(*f)(peer, err)
		return
	}
	e.FailPeer(peer, err)
}

// SetSuspectHook installs the receiver of transport-level peer losses (see
// PeerLost).
func (e *Engine) SetSuspectHook(f func(peer int, cause error)) { e.suspectHook.Store(&f) }

// FailPeer completes with an error every pending operation that depends on
// peer, and makes later ones fail at once.
func (e *Engine) FailPeer(peer int, cause error) {
	e.drainFrom(peer)
	e.mu.Lock()
	if _, ok := e.lost[peer]; ok {
		e.mu.Unlock()
		return
	}
	e.lost[peer] = cause
	e.lostOrder = append(e.lostOrder, peer)
	e.lostCount.Add(1)
	var failed []*Req
	for r := e.posted.head; r != nil; {
		next := r.next
		if r.peer == peer {
			e.unlinkPosted(r)
			failed = append(failed, r)
		}
		r = next
	}
	for id, r := range e.sends {
		if r.peer == peer {
			delete(e.sends, id)
			failed = append(failed, r)
		}
	}
	for id, r := range e.recvs {
		if r.peer == peer {
			delete(e.recvs, id)
			failed = append(failed, r)
		}
	}
	for k, r := range e.cancels {
		if k.peer == peer {
			delete(e.cancels, k)
			failed = append(failed, r)
		}
	}
	// In-flight requests complete when the transport gives their buffer
	// back, which it does promptly for a peer that is gone.
	for r := e.flying.head; r != nil; r = r.next {
		if r.peer == peer && r.mark == nil {
			r.mark = peerLost(peer, cause)
		}
	}
	e.mu.Unlock()
	if subs := e.lostSubs.Load(); subs != nil {
		for _, sub := range *subs {
			sub.f(peer, cause)
		}
	}
	// Waiters are woken once the hook has recorded the loss, so what they
	// re-examine includes it; the operations that failed are completed
	// last, so that (with one processor per rank) their callers, readied
	// last, run first, before what the hook queued.
	next := make(chan struct{})
	close(*e.failSig.Swap(&next))
	for _, r := range failed {
		if r.isRecv && r.st.Err == nil {
			r.st.Source, r.st.Tag = int(r.src), int(r.tag)
		}
		r.st.Err = peerLost(peer, cause)
		r.complete()
	}
}

// FailPeers is FailPeer for several peers lost at once (causes[i] is
// peers[i]'s, "no cause given" where causes is short or nil; a peer lost
// already, or named twice, is skipped): one pass
// over the pending operations for all of them, one wake-up of the waiters,
// and each batch subscriber (SubscribeLostBatch) called once with the
// peers newly lost, in the order given, which is the order they are
// recorded in; the other subscribers are called once per peer, in that
// order. Its ordering guarantees are FailPeer's. It has no MPI
// counterpart: an in-process kill of many ranks costs each survivor one
// notification, not one per rank killed (issue 24).
func (e *Engine) FailPeers(peers []int, causes []error) {
	e.drainFrom(peers...)
	e.mu.Lock()
	var newPeers []int
	var newCauses []error
	for i, p := range peers {
		if _, ok := e.lost[p]; ok {
			continue
		}
		cause := errNoCause
		if i < len(causes) && causes[i] != nil {
			cause = causes[i]
		}
		e.lost[p] = cause
		e.lostOrder = append(e.lostOrder, p)
		newPeers = append(newPeers, p)
		newCauses = append(newCauses, cause)
	}
	if len(newPeers) == 0 {
		e.mu.Unlock()
		return
	}
	e.lostCount.Add(int64(len(newPeers)))
	type failedReq struct {
		r   *Req
		err error
	}
	var failed []failedReq
	lostCause := func(p int) (error, bool) {
		c, ok := e.lost[p]
		if !ok || !slices.Contains(newPeers, p) {
			return nil, false
		}
		return c, true
	}
	for r := e.posted.head; r != nil; {
		next := r.next
		if c, ok := lostCause(r.peer); ok {
			e.unlinkPosted(r)
			failed = append(failed, failedReq{r, c})
		}
		r = next
	}
	for id, r := range e.sends {
		if c, ok := lostCause(r.peer); ok {
			delete(e.sends, id)
			failed = append(failed, failedReq{r, c})
		}
	}
	for id, r := range e.recvs {
		if c, ok := lostCause(r.peer); ok {
			delete(e.recvs, id)
			failed = append(failed, failedReq{r, c})
		}
	}
	for k, r := range e.cancels {
		if c, ok := lostCause(k.peer); ok {
			delete(e.cancels, k)
			failed = append(failed, failedReq{r, c})
		}
	}
	for r := e.flying.head; r != nil; r = r.next {
		if c, ok := lostCause(r.peer); ok && r.mark == nil {
			r.mark = peerLost(r.peer, c)
		}
	}
	e.mu.Unlock()
	if subs := e.lostSubs.Load(); subs != nil {
		for _, sub := range *subs {
			if sub.batch != nil {
				sub.batch(newPeers, newCauses)
				continue
			}
			for i, p := range newPeers {
				sub.f(p, newCauses[i])
			}
		}
	}
	next := make(chan struct{})
	close(*e.failSig.Swap(&next))
	for _, fr := range failed {
		r := fr.r
		if r.isRecv && r.st.Err == nil {
			r.st.Source, r.st.Tag = int(r.src), int(r.tag)
		}
		r.st.Err = peerLost(r.peer, fr.err)
		r.complete()
	}
}

// errNoCause is the cause of a loss FailPeers was given none for.
var errNoCause = errors.New("no cause given")

// lostSub is one subscriber of SubscribeLost (a pointer: cancel finds it
// by identity); batch is set for SubscribeLostBatch's, whose f calls it
// with one peer.
type lostSub struct {
	f     func(peer int, cause error)
	batch func(peers []int, causes []error)
}

// SubscribeLostBatch is SubscribeLost for a subscriber that takes the
// peers FailPeers records at once in one call (FailPeer's one peer in a
// call of its own). It has no MPI counterpart.
func (e *Engine) SubscribeLostBatch(f func(peers []int, causes []error)) (cancel func()) {
	return e.subscribeLost(&lostSub{batch: f, f: func(peer int, cause error) { f([]int{peer}, []error{cause}) }})
}

// SubscribeLost adds f to the subscribers of peer losses: FailPeer calls
// every subscriber once per lost peer, in the order they subscribed, in
// the goroutine that reported the loss, once the peer is recorded lost and
// before its pending operations complete with the error (not under the
// engine's lock): a caller that sees the error also sees what the
// subscribers recorded. A subscriber must not block (it delays the waiters'
// wake-up) and must not wait for the launcher. The returned function
// removes f; losses reported after it returns do not reach f.
func (e *Engine) SubscribeLost(f func(peer int, cause error)) (cancel func()) {
	return e.subscribeLost(&lostSub{f: f})
}

func (e *Engine) subscribeLost(sub *lostSub) (cancel func()) {
	e.lostMu.Lock()
	var subs []*lostSub
	if old := e.lostSubs.Load(); old != nil {
		subs = append(subs, *old...)
	}
	subs = append(subs, sub)
	e.lostSubs.Store(&subs)
	e.lostMu.Unlock()
	return func() {
		e.lostMu.Lock()
		defer e.lostMu.Unlock()
		old := e.lostSubs.Load()
		if old == nil {
			return
		}
		subs := make([]*lostSub, 0, len(*old))
		for _, s := range *old {
			if s != sub {
				subs = append(subs, s)
			}
		}
		e.lostSubs.Store(&subs)
	}
}

// Sent is the number of messages this engine started (point-to-point and
// collective traffic, not protocol or control frames).
func (e *Engine) Sent() uint64 { return e.sent.Load() }

// LostCount is the number of peers lost so far; it only grows, so a caller
// can cache conclusions drawn from the lost set until it changes.
func (e *Engine) LostCount() int64 { return e.lostCount.Load() }

type ctlCookie struct{ pooled *[]byte }

// ctlFrame is a control frame kept until the handler is installed.
type ctlFrame struct {
	from    int
	h       transport.Header
	payload []byte
}

// deliverControl hands a control frame to the handler. A peer can send one
// as soon as it knows this rank's address, which may be before the runtime
// installed its handler: such frames are kept (a lost agreement or revoke
// message would hang the operation that needs it) and delivered, in
// arrival order, by SetControlHandler.
func (e *Engine) deliverControl(from int, h transport.Header, payload []byte) {
	f := e.control.Load()
	if f == nil {
		e.ctlMu.Lock()
		if f = e.control.Load(); f == nil {
			e.ctlEarly = append(e.ctlEarly, ctlFrame{from, h, slices.Clone(payload)})
			e.ctlMu.Unlock()
			return
		}
		e.ctlMu.Unlock()
	}
	(*f)(from, h, payload)
}

// SetControlCheck sets the validation of control frames' headers, run
// before their payload is read: a frame it refuses closes the connection
// it came on (transport.Reject).
func (e *Engine) SetControlCheck(f func(transport.Header) error) { e.ctlCheck.Store(&f) }

// SetControlHandler installs the receiver of control frames and delivers
// to it those that arrived before. It is meant to be called once; frames
// of each peer reach the handler in arrival order.
func (e *Engine) SetControlHandler(f ControlHandler) {
	e.ctlMu.Lock()
	defer e.ctlMu.Unlock()
	// Deliver the early frames before publishing f: a frame arriving
	// meanwhile waits on ctlMu, so it cannot overtake them.
	for _, m := range e.ctlEarly {
		f(m.from, m.h, m.payload)
	}
	e.ctlEarly = nil
	e.control.Store(&f)
}

// SendControl queues a control frame (h.Kind is set to KindControl) with
// payload for peer on the transport's urgent lane and returns at once: it
// is safe to call from any goroutine, transport callbacks included, and a
// slow or stopped peer never delays it nor the frames to other peers.
// payload must not be modified afterwards. The error only says the peer is
// known lost; a frame that cannot be written later is dropped (the peer is
// then lost, which its connection reports).
func (e *Engine) SendControl(peer int, h transport.Header, payload []byte) error {
	h.Kind = KindControl
	h.Flags |= transport.FlagUrgent
	h.N = uint64(len(payload))
	if e.IsLost(peer) {
		return fmt.Errorf("%w: rank %d", ErrPeerLost, peer)
	}
	e.tr.Post(peer, h, payload, nil)
	return nil
}

// TellLost posts a control frame (no payload) to a peer that was
// declared lost, which SendControl refuses: without a launcher to kill
// it, a process declared failed that is still alive is told so (and then
// ends itself).
func (e *Engine) TellLost(peer int, h transport.Header) {
	h.Kind = KindControl
	h.Flags |= transport.FlagUrgent
	h.N = 0
	e.tr.Post(peer, h, nil, nil)
}

// FailureSignal returns a channel closed at the next peer loss, so a waiter
// can re-examine what the failure means for it (ULFM's ErrPending).
func (e *Engine) FailureSignal() <-chan struct{} {
	return *e.failSig.Load()
}

// PoisonSignal returns a channel closed at the next Poison or Revoke that
// poisons a context anew (after its operations were failed), so a waiter
// outside the engine (the shared-memory collectives' futex sleeper) can
// re-examine its context. It has no MPI counterpart.
func (e *Engine) PoisonSignal() <-chan struct{} {
	return *e.poisonSig.Load()
}

// FirstLost returns the first peer, in the order they were declared lost,
// for which member reports true, or -1: what a waiter among a set of
// processes checks after a failure, in time proportional to the failures
// rather than to the set (member runs under the engine's lock and must not
// call the engine).
func (e *Engine) FirstLost(member func(peer int) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.lostOrder {
		if member(p) {
			return p
		}
	}
	return -1
}

// IsLost reports whether peer was declared lost.
func (e *Engine) IsLost(peer int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.lost[peer]
	return ok
}

// Revoke makes every pending and future operation on the given contexts
// complete with ErrRevoked and discards their unexpected messages
// (MPI_Comm_revoke's local effect). It is idempotent.
func (e *Engine) Revoke(ctxs ...uint32) { e.Poison(ErrRevoked, ctxs...) }

// Poison makes every pending and future operation on the given contexts
// complete with err, and discards their queued messages. A context keeps
// the first error it was poisoned with, except that ErrRevoked overrides. Used for revocation and for the
// collective context of a communicator that lost a member.
func (e *Engine) Poison(err error, ctxs ...uint32) {
	e.mu.Lock()
	fresh := false
	for _, c := range ctxs {
		if old := e.revoked[c]; old == nil || (err == ErrRevoked && old != ErrRevoked) {
			e.revoked[c] = err // revocation overrides any other poison
			fresh = true
		}
	}
	e.nRevoked.Store(int32(len(e.revoked)))
	if !fresh {
		e.mu.Unlock()
		return
	}
	var failed []*Req
	var errs []error
	for r := e.posted.head; r != nil; {
		next := r.next
		if err := e.revoked[r.ctx]; err != nil {
			e.unlinkPosted(r)
			failed, errs = append(failed, r), append(errs, err)
		}
		r = next
	}
	for id, r := range e.sends {
		if err := e.revoked[r.ctx]; err != nil {
			delete(e.sends, id)
			failed, errs = append(failed, r), append(errs, err)
		}
	}
	for id, r := range e.recvs {
		if err := e.revoked[r.ctx]; err != nil {
			delete(e.recvs, id)
			failed, errs = append(failed, r), append(errs, err)
		}
	}
	// In-flight requests complete with err when the transport gives their
	// buffer back (the data is already on its way).
	for r := e.flying.head; r != nil; r = r.next {
		if err := e.revoked[r.ctx]; err != nil && (r.mark == nil || err == ErrRevoked && !errors.Is(r.mark, ErrRevoked)) {
			r.mark = err
		}
	}
	for m := e.unexHead; m != nil; {
		next := m.next
		if e.revoked[m.h.Ctx] != nil && m.complete && m.recv == nil {
			e.unlinkMsg(m)
			putBuf(m.pooled)
			freeMsg(m)
		}
		m = next
	}
	e.wakeAllProbes()
	e.mu.Unlock()
	completeFailed(failed, errs)
	next := make(chan struct{})
	close(*e.poisonSig.Swap(&next))
}

// IsPoisoned reports whether ctx was revoked or poisoned with any error,
// or holds a poisoned call (PoisonTags): its operations fail, or late
// messages of a failed call may still arrive, so the context id must not
// be reused.
func (e *Engine) IsPoisoned(ctx uint32) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.revoked[ctx] != nil {
		return true
	}
	for k := range e.tagPoison {
		if k.ctx == ctx {
			return true
		}
	}
	return false
}

// IsRevoked reports whether ctx was revoked.
func (e *Engine) IsRevoked(ctx uint32) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Is(e.revoked[ctx], ErrRevoked)
}

// Cancel cancels a pending receive that has not matched yet. It reports
// whether the cancellation succeeded. It does not cancel sends (false):
// see CancelSend.
func (e *Engine) Cancel(r *Req) bool {
	if !r.isRecv {
		return false
	}
	e.mu.Lock()
	inQueue := r.where == inPosted
	if inQueue {
		e.unlinkPosted(r)
	}
	e.mu.Unlock()
	if !inQueue {
		return false
	}
	r.st = Status{Source: int(r.src), Tag: int(r.tag), Cancelled: true}
	r.complete()
	return true
}

// Iprobe looks for a matching message without receiving it.
func (e *Engine) Iprobe(ctx uint32, src, tag int32) (Status, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.probeLocked(ctx, src, tag)
}

func (e *Engine) probeLocked(ctx uint32, src, tag int32) (Status, bool) {
	for m := e.unexHead; m != nil; m = m.next {
		if matches(ctx, src, tag, &m.h) {
			n := int(m.h.N)
			if m.h.Kind == KindRTS {
				n = int(m.h.B)
			}
			return Status{Source: int(m.h.Src), Tag: int(m.h.Tag), Bytes: n, DType: hdrDType(&m.h)}, true
		}
	}
	return Status{}, false
}

// Probe blocks until a matching message has arrived, abort is closed
// (ok=false), or peer (world rank, -1 for any) is lost.
func (e *Engine) Probe(ctx uint32, src int32, peer int, tag int32, abort <-chan struct{}) (Status, error) {
	st, _, err := e.ProbeSignal(ctx, src, peer, tag, abort, nil)
	return st, err
}

// ProbeSignal is Probe that also returns, with fired set, when sig closes
// first (a caller passes FailureSignal to re-examine its failure rules).
func (e *Engine) ProbeSignal(ctx uint32, src int32, peer int, tag int32, abort, sig <-chan struct{}) (st Status, fired bool, err error) {
	_, st, how, err := e.probeWait(ctx, src, peer, tag, abort, sig, nil, false)
	return st, how == WaitSignalled, err
}

func (e *Engine) removeProbe(w *probeWaiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, p := range e.probes {
		if p == w {
			e.probes = append(e.probes[:i], e.probes[i+1:]...)
			return
		}
	}
}

// wakeProbes wakes waiting probes that h matches; e.mu held.
func (e *Engine) wakeProbes(h *transport.Header) {
	if len(e.probes) == 0 {
		return
	}
	kept := e.probes[:0]
	for _, w := range e.probes {
		if matches(w.ctx, w.src, w.tag, h) {
			w.ch <- struct{}{}
			continue
		}
		kept = append(kept, w)
	}
	e.probes = kept
}

// wakeAllProbes wakes every blocked probe (used on peer loss and shutdown).
func (e *Engine) wakeAllProbes() {
	for _, w := range e.probes {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	e.probes = nil
}

// Close fails every pending operation. In-flight requests complete when
// the transport (closed first) gives their buffers back.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	var pend []*Req
	for r := e.posted.head; r != nil; r = r.next {
		pend = append(pend, r)
	}
	e.posted = reqList{}
	for _, r := range e.sends {
		pend = append(pend, r)
	}
	for _, r := range e.recvs {
		pend = append(pend, r)
	}
	for _, r := range e.cancels {
		pend = append(pend, r)
	}
	clear(e.sends)
	clear(e.recvs)
	clear(e.cancels)
	e.wakeAllProbes()
	e.mu.Unlock()
	for _, r := range pend {
		r.st.Err = ErrClosed
		r.complete()
	}
}

// matchPosted finds and unlinks the first posted receive matching h.
func (e *Engine) matchPosted(h *transport.Header) *Req {
	for r := e.posted.head; r != nil; r = r.next {
		if matches(r.ctx, r.src, r.tag, h) {
			e.unlinkPosted(r)
			return r
		}
	}
	return nil
}

func (e *Engine) appendPosted(r *Req) { e.posted.push(r, inPosted) }

func (e *Engine) unlinkPosted(r *Req) { e.posted.unlink(r) }

func (e *Engine) appendUnex(m *msg) {
	m.prev = e.unexTail
	if e.unexTail != nil {
		e.unexTail.next = m
	} else {
		e.unexHead = m
	}
	e.unexTail = m
}

func (e *Engine) unlinkMsg(m *msg) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		e.unexHead = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		e.unexTail = m.prev
	}
	m.prev, m.next = nil, nil
}

// ctxTag is a (context, tag) pair: the messages of one collective call.
type ctxTag struct {
	ctx uint32
	tag int32
}

// ctxErrLocked is the error every operation on (ctx, tag) fails with: the
// context's poison or revocation, else the pair's (PoisonTags). e.mu held.
func (e *Engine) ctxErrLocked(ctx uint32, tag int32) error {
	if len(e.revoked) != 0 {
		if err := e.revoked[ctx]; err != nil {
			return err
		}
	}
	if e.nTagPoison.Load() == 0 {
		return nil
	}
	return e.tagPoison[ctxTag{ctx, tag}]
}

// PoisonTags makes every pending and future operation on ctx with one of
// tags complete with err, and discards their queued and arriving messages:
// the collective call that uses those tags failed at some member (package
// mpi releases the other members' calls this way). Unlike Poison it keeps
// the context usable; the poison stays until ClearTags (the caller clears
// it before the tags can be reused). A pair keeps the first error.
func (e *Engine) PoisonTags(err error, ctx uint32, tags ...int32) {
	e.mu.Lock()
	fresh := false
	for _, t := range tags {
		k := ctxTag{ctx, t}
		if e.tagPoison[k] == nil {
			e.tagPoison[k] = err
			fresh = true
		}
	}
	e.nTagPoison.Store(int32(len(e.tagPoison)))
	if !fresh {
		e.mu.Unlock()
		return
	}
	hit := func(c uint32, t int32) error {
		if c != ctx {
			return nil
		}
		return e.tagPoison[ctxTag{c, t}]
	}
	var failed []*Req
	var errs []error
	for r := e.posted.head; r != nil; {
		next := r.next
		if err := hit(r.ctx, r.tag); err != nil {
			e.unlinkPosted(r)
			failed, errs = append(failed, r), append(errs, err)
		}
		r = next
	}
	for id, r := range e.sends {
		if err := hit(r.ctx, r.tag); err != nil {
			delete(e.sends, id)
			failed, errs = append(failed, r), append(errs, err)
		}
	}
	for id, r := range e.recvs {
		if err := hit(r.ctx, r.tag); err != nil {
			delete(e.recvs, id)
			failed, errs = append(failed, r), append(errs, err)
		}
	}
	for r := e.flying.head; r != nil; r = r.next {
		if err := hit(r.ctx, r.tag); err != nil && r.mark == nil {
			r.mark = err
		}
	}
	for m := e.unexHead; m != nil; {
		next := m.next
		if hit(m.h.Ctx, m.h.Tag) != nil && m.complete && m.recv == nil {
			e.unlinkMsg(m)
			putBuf(m.pooled)
			freeMsg(m)
		}
		m = next
	}
	e.mu.Unlock()
	completeFailed(failed, errs)
}

// ClearTags removes the poison of (ctx, tag) for each of tags.
func (e *Engine) ClearTags(ctx uint32, tags ...int32) {
	e.mu.Lock()
	for _, t := range tags {
		delete(e.tagPoison, ctxTag{ctx, t})
	}
	e.nTagPoison.Store(int32(len(e.tagPoison)))
	e.mu.Unlock()
}

// TagPoisons is the number of poisoned (context, tag) pairs; a caller
// checks it (without a lock) before clearing stale ones.
func (e *Engine) TagPoisons() int { return int(e.nTagPoison.Load()) }

// otherCall reports whether message h, which receive r does not match, is
// of another call than r (see IrecvSig).
func otherCall(r *Req, h *transport.Header) bool {
	w := hdrSig(h)
	return r.sig != 0 && w != 0 && w != r.sig && h.Ctx == r.ctx && h.Tag == r.tag
}

// otherCallLocked unlinks and returns a posted receive that unexpected
// message h shows in another call (IrecvSig), if any. Only messages that
// carry a word are looked at. e.mu held.
func (e *Engine) otherCallLocked(h *transport.Header) *Req {
	if hdrSig(h) == 0 {
		return nil
	}
	for r := e.posted.head; r != nil; r = r.next {
		if otherCall(r, h) {
			e.unlinkPosted(r)
			return r
		}
	}
	return nil
}

// completeOther completes receive r, no longer in any table, with the
// status of message h of another call.
func completeOther(r *Req, h *transport.Header) {
	n := int(h.N)
	if h.Kind == KindRTS {
		n = int(h.B)
	}
	r.st = Status{Source: int(h.Src), Tag: int(h.Tag), Bytes: n, DType: hdrDType(h), Sig: hdrSig(h), Err: ErrOtherCall}
	r.complete()
}

// completeFailed completes each request of failed with its error in errs
// (outside e.mu): a receive's status names what it was posted for.
func completeFailed(failed []*Req, errs []error) {
	for i, r := range failed {
		if r.isRecv {
			r.st.Source, r.st.Tag = int(r.src), int(r.tag)
		}
		r.st.Err = errs[i]
		r.complete()
	}
}
