package sock

// Receiving: the frame reader of a connection (a state machine over the
// connection's bytes that any owner can resume), its reader goroutine,
// and caller-driven progress (PollUntil).
//
// Ownership of a connection's read side (rx.own) passes between its
// reader goroutine and polling callers; only the owner reads the socket
// or touches the reader's state, so a frame is never read by two at once,
// and a frame one owner began (its Frame call made, part of its payload
// read) is finished by whoever owns the connection next. No lock is held
// across a read: the word is taken with a compare-and-swap and reads are
// non-blocking.
//
// The reader goroutine owns the connection while it reads; when the
// socket is empty it lets go (unless it is inside something only it may
// finish, below) and waits for readability in the runtime's poller. Woken
// while callers poll, it does not take the connection back: it marks it
// (missed) and waits again, and the last caller to stop polling looks at
// the marked connections once more itself, so that frames read by callers
// cost no wake-up of a reader goroutine. Woken while no caller polls but
// one still holds the connection (its last read may have come before the
// bytes that woke the reader), it marks it too, and that caller looks at
// the mark after it lets go: a failed taker marks and tries once more, a
// releaser lets go and then looks, so one of the two always reads.
//
// Out of the runtime's poller (fdConn), the reader goroutine waits with
// readability disarmed while callers poll (parkArm): it wakes after a
// quiet period, or when kicked, instead of at each frame; a caller that
// reads frames while readability is armed kicks it once so it disarms,
// and a caller that gives up polling to block kicks it so it arms.
//
// A polling caller delivers only whole bulk frames, from its own
// goroutine. Urgent frames (control traffic, whose handlers may take
// locks a waiting caller holds), chunked frames, the transport's own
// frames, malformed input and the end of the connection are left where
// they are and handed to the reader goroutine (handoff), which delivers
// them and reports the peer lost or the frame malformed as before.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/transport"
)

const (
	rxBufSize = 64 << 10
	// directMin is the smallest rest of a payload read straight into its
	// buffer instead of through the connection's.
	directMin = 32 << 10
	// inlineBatch bounds the frames a polling caller delivers from one
	// connection per poll, so a steady stream does not keep it there.
	inlineBatch = 16
	// A polling caller yields its processor to other goroutines every
	// pollYield polls and reads the clock every pollClock.
	pollYield = 4
	pollClock = 8
	// bulkPoll is the smallest payload whose waiting caller does not
	// poll (PollUntil, a request with PollBytes): the reader and writer
	// goroutines move it anyway, and a caller spinning beside them only
	// takes a processor from them.
	bulkPoll = 256 << 10
)

// Who owns a connection's read side (rx.own).
const (
	ownFree   int32 = 0
	ownReader int32 = 1
	ownCaller int32 = 2
)

// Where the frame reader is.
const (
	stHeader      = iota // between frames
	stBody               // in the payload of the whole frame cur
	stChunkHeader        // in the chunked frame cur, before a chunk or a whole frame between chunks
	stChunk              // in the data of a chunk of cur (chunkLeft bytes left)
	stInner              // in the payload of the whole frame inner, between chunks of cur
)

// What process stopped at.
const (
	pNeed  = iota // more bytes are needed
	pLeave        // (a caller) the next step is the reader goroutine's
	pBatch        // (a caller) it delivered its batch
	pBye          // the goodbye: the connection ends without error
	pFail         // the connection broke (rx.err); every open frame got its Payload
)

// rxFrame is a frame being received: announced to the handler, its
// payload read up to off.
type rxFrame struct {
	h       transport.Header // as given to the handler (reserved bits cleared)
	dst     []byte
	cookie  any
	off     uint64
	keep    bool // dst has the payload's length: read into it (else discard)
	urgent  bool
	chunked bool
	open    bool // Frame was called, Payload not yet
}

// rx is the read side of one connection.
type rx struct {
	t    *Transport
	peer int

	// Owned by whoever holds own.
	buf        []byte
	r, w       int // buffered bytes: buf[r:w]
	st         int
	cur, inner rxFrame
	chunkLeft  uint64
	rerr       error // what the last read ended with (EOF included), acted on when the bytes run out
	err        error // why the connection ends (set once)
	direct     *rxFrame
	wouldBlock bool
	frames     uint64 // frames delivered (Payload called)
	// holding is set while the reader goroutine of a TCP connection
	// (fdConn) processes frames: the wake-ups of the requests that whole
	// (not chunked) rendezvous payloads complete are then held (held)
	// while the next payload comes in, and made before the reader waits
	// or looks elsewhere (wakeHeld).
	holding bool
	held    []func()

	own     atomic.Int32
	handoff atomic.Bool // a caller left something only the reader goroutine does
	stop    atomic.Bool // the reader goroutine is ending: callers keep off
	// missed is set by the reader goroutine woken when it leaves x to
	// callers: the last of them to stop polling, or the caller that holds
	// x when it lets go, looks at x once more (retake, lookAgain).
	missed atomic.Int32
	// waiting is set while the reader goroutine waits for readability
	// without owning x: a caller handing x over kicks it out of that wait
	// with a read deadline in the past (the bytes the caller read do not
	// wake it: the kernel reports only what is still readable).
	waiting atomic.Int32
	c       net.Conn

	// The reader goroutine's alone.
	rc        syscall.RawConn // nil when fed by a test
	readerFn  func(fd uintptr) bool
	pollFn    func(fd uintptr)
	released  bool // it let go of own before waiting for readability
	spin      time.Duration
	spinStart time.Time
	// parkArm's: the pollSeq it last saw, the quiet period it waits
	// without readability armed (0: armed), and whether that wait has a
	// deadline set.
	seenSeq  uint64
	seenGave uint64
	quiet    time.Duration
	timed    bool
	// disarmed is set while the reader goroutine waits out a quiet
	// period: a caller that gives up polling (to block) kicks it, so it
	// arms readability at once.
	disarmed atomic.Bool
	// fc is the connection when out of the runtime's poller (nil when
	// not: a plain net.Conn, or a test's); kickedArm is set by the
	// caller that read frames on x while readability was armed and
	// kicked the reader to disarm it (once, until parkArm looks).
	fc        *fdConn
	kickedArm atomic.Bool
}

// While polling callers read a connection, its reader goroutine waits
// with readability disarmed (fdConn): a frame that arrives then wakes no
// thread. It wakes after a quiet period instead, quietMin at first and
// twice as long each time callers polled meanwhile, up to quietMax; when
// none did, it arms readability and waits for the next frame without a
// deadline (an idle connection wakes nobody). A frame that arrives when
// no caller polls any more waits at most the quiet period; anything a
// caller must leave to the reader (handOff) kicks it at once.
var (
	quietMin = 200 * time.Microsecond
	quietMax = 2 * time.Millisecond
)

// parkArm is the fdConn's choice before the reader goroutine waits: true
// to be woken by readability, false to wait out a quiet period (a read
// deadline) while callers poll the connection. Reader goroutine only.
func (x *rx) parkArm() bool {
	t := x.t
	x.kickedArm.Store(false)
	seq, gave := t.pollSeq.Load(), t.gaveUp.Load()
	// Callers polled since the last look (or poll now), and none gave up
	// to block meanwhile.
	active := (t.polling.Load() != 0 || seq != x.seenSeq) && gave == x.seenGave
	x.seenSeq, x.seenGave = seq, gave
	if x.released && active && !x.handoff.Load() && !x.stop.Load() {
		x.quiet = min(max(2*x.quiet, quietMin), quietMax)
		x.c.SetReadDeadline(time.Now().Add(x.quiet))
		x.timed = true
		x.disarmed.Store(true)
		if t.gaveUp.Load() != gave {
			x.c.SetReadDeadline(aLongTimeAgo) // a caller gave up meanwhile: arm
		}
		x.rekick()
		return false
	}
	x.disarmed.Store(false)
	x.quiet = 0
	if x.timed {
		x.timed = false
		x.c.SetReadDeadline(time.Time{})
		x.rekick()
	}
	return true
}

// rekick kicks the reader goroutine itself (a deadline in the past) when
// a caller handed it x while it was setting its own deadline, which may
// have replaced the caller's kick.
func (x *rx) rekick() {
	if x.handoff.Load() || x.stop.Load() {
		x.c.SetReadDeadline(aLongTimeAgo)
	}
}

func newRx(t *Transport, peer int) *rx {
	x := &rx{t: t, peer: peer, buf: make([]byte, rxBufSize)}
	x.readerFn = x.readerTry
	x.pollFn = x.pollRead
	return x
}

// readLoop reads the frames of one connection. peer is -1 for an accepted
// connection (p, pending in its listener's accept loop), whose first bytes
// name the peer.
func (t *Transport) readLoop(cc *conn, peer int, p *acceptloop.Pending) {
	defer t.wg.Done()
	// (cc.c is replaced by the handshake of an accepted connection:
	// unpolled; read it after that)
	defer func() { cc.c.Close() }()
	var early []byte // frames the peer sent right behind its hello
	if peer < 0 {
		var ok bool
		if peer, early, ok = t.handshake(cc, p); !ok {
			t.untrack(cc)
			return
		}
	}
	c := cc.c
	// Buffers only for connections that proved themselves: a flood of
	// connections that never do costs no memory beyond the accept loop's
	// cap.
	tune(c)
	x := newRx(t, peer)
	x.c = c
	if fc, ok := c.(*fdConn); ok {
		fc.arm = x.parkArm
		x.fc = fc
	}
	x.w = copy(x.buf, early)
	var err error
	if sc, ok := c.(syscall.Conn); !ok {
		err = fmt.Errorf("connection of rank %d has no file descriptor", peer)
	} else if x.rc, err = sc.SyscallConn(); err == nil {
		x.own.Store(ownReader)
		t.addRx(x)
		err = x.receive()
		x.stop.Store(true)
		t.removeRx(x)
	}
	if bad, ok := err.(*malformedError); ok {
		t.malformed(peer, bad)
	} else if err != nil {
		t.lost(peer, err)
	}
}

// handshake runs the accepting side of an accepted connection's
// handshake and answers it. It returns the peer's process id and the
// bytes read behind the hello, or false if the connection was refused (or
// closed by the accept loop, or not the one both ranks send on).
func (t *Transport) handshake(cc *conn, p *acceptloop.Pending) (int, []byte, bool) {
	c := cc.c
	br := bufio.NewReaderSize(c, 4<<10)
	peer, answer, err := t.acceptHello(c, br)
	if err != nil {
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		// A connection the accept loop closed (deadline, flood) is its
		// to log.
		if !closed && !errors.Is(err, net.ErrClosed) {
			t.refused.Printf("refused a connection%s: %v", remote(c), err)
		}
		return 0, nil, false
	}
	if !p.Authenticated() { // closed meanwhile by the accept loop (deadline or flood)
		return 0, nil, false
	}
	var early []byte
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		early = append([]byte(nil), b...)
	}
	verdict := byte(replyRefuse)
	ps, ok := t.accepted(peer, cc)
	if ok {
		verdict = replyAccept
		// Out of the runtime's poller before anything else writes on it
		// (this goroutine owns the write side until release); not once
		// Close has taken the connections.
		t.mu.Lock()
		if !t.closed {
			cc.c = unpolled(c)
			c = cc.c
		}
		t.mu.Unlock()
	}
	reply := []byte{verdict}
	if answer != nil { // the one-round-trip handshake: the verdict with the MAC
		reply = answer(verdict)
	}
	_, err = c.Write(reply)
	if ok {
		t.release(ps, err)
	}
	return peer, early, err == nil && ok
}

// addRx makes x's connection one that callers poll.
func (t *Transport) addRx(x *rx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var list []*rx
	if p := t.rxs.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, x)
	t.rxs.Store(&list)
}

func (t *Transport) removeRx(x *rx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.rxs.Load()
	if p == nil {
		return
	}
	list := make([]*rx, 0, len(*p))
	for _, y := range *p {
		if y != x {
			list = append(list, y)
		}
	}
	t.rxs.Store(&list)
	t.hot.CompareAndSwap(x, nil)
}

// stopReaders keeps polling callers off every connection (Close, after
// closing them: their reader goroutines end).
func (t *Transport) stopReaders() {
	if p := t.rxs.Load(); p != nil {
		for _, x := range *p {
			x.stop.Store(true)
		}
	}
}

// receive is the reader goroutine's loop: it delivers the connection's
// frames until its goodbye (nil) or an error (a *malformedError for a
// frame that breaks the wire rules, else why the connection broke). It
// owns x when called and whenever it processes.
func (x *rx) receive() error {
	defer x.wakeHeld()
	_, hold := x.t.cfg.Handler.(transport.HeldPayload)
	hold = hold && x.fc != nil
	for {
		x.holding = hold
		res := x.process(false)
		x.holding = false
		switch res {
		case pBye:
			return nil
		case pFail:
			return x.err
		}
		x.waitRead()
	}
}

// heldMax bounds the wake-ups a reader or writer goroutine holds back.
const heldMax = 8

// wakeHeld makes the wake-ups the reader goroutine held back (holding):
// before it waits for readability, lets go of x, finds the socket empty
// between payloads, or ends, and once heldMax are held. A waiter for a
// payload that landed is so woken once per run of payloads that come
// back to back, not once per payload while the reader copies the next
// one (each wake-up there started a second thread beside the reader on
// two shared cores: docs/benchmarks.md, "Session 18: TCP bandwidth").
func (x *rx) wakeHeld() {
	for i, w := range x.held {
		w()
		x.held[i] = nil
	}
	x.held = x.held[:0]
}

// waitRead reads what comes next, waiting for it in the runtime's poller;
// it returns owning x.
func (x *rx) waitRead() {
	x.spin = 0
	if fn := x.t.cfg.SpinFn; fn != nil {
		x.spin = fn()
	}
	for {
		err := x.rc.Read(x.readerFn)
		if err == nil {
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) { // kicked (handOff), or a quiet period ended (parkArm)
			x.c.SetReadDeadline(time.Time{})
			x.timed = false
			if !x.released || x.retake() {
				return
			}
			continue
		}
		// Closed: take x back from whoever holds it (a caller does not
		// hold it long, and keeps off once stop is set).
		if x.released {
			x.stop.Store(true)
			for !x.own.CompareAndSwap(ownFree, ownReader) {
				runtime.Gosched()
			}
			x.owned()
		}
		if x.rerr == nil {
			x.rerr = err
		}
		return
	}
}

// retake tries to take x back for the reader goroutine, which let go of it
// and was woken: true when it owns x. Handed x, it waits for the caller
// that holds x to let go. Else it marks x (missed) before it looks: while
// callers poll it leaves x to them, and the last of them looks at every
// marked connection (PollUntil); when none polls but one holds x (the last
// look, or a caller that began since), that caller looks at the mark after
// it lets go (poll). Whatever woke this goroutine is so read by a caller
// when it does not take x itself.
func (x *rx) retake() bool {
	if x.handoff.Load() || x.stop.Load() {
		for !x.own.CompareAndSwap(ownFree, ownReader) {
			runtime.Gosched() // a caller that took x before it saw the hand-off lets go
		}
		x.owned()
		return true
	}
	x.missed.Store(1)
	if x.t.polling.Load() == 0 && x.own.CompareAndSwap(ownFree, ownReader) {
		x.owned()
		return true
	}
	if testHookRetakeLeft != nil {
		testHookRetakeLeft(x)
	}
	return false
}

// Test hooks, nil outside tests: the reader goroutine left x to callers
// (retake), and a caller is about to let go of x after a read found the
// socket empty (pollOnce).
var testHookRetakeLeft, testHookPollEmpty func(x *rx)

// owned records that the reader goroutine holds x again.
func (x *rx) owned() {
	x.released = false
	x.waiting.Store(0)
	x.missed.Store(0)
	x.handoff.Store(false)
}

// readerTry is the reader goroutine's RawConn.Read callback: true once it
// owns x and read something (or an error); false to wait for readability.
// It spins first (SpinFn) while no caller polls; before it waits it lets
// go of x if a caller may go on from here.
func (x *rx) readerTry(fd uintptr) bool {
	if x.released {
		// What a caller left in the buffer comes first.
		return x.retake()
	}
	for i := 0; ; i++ {
		n, err := syscall.Read(int(fd), x.target())
		if err == syscall.EINTR {
			continue
		}
		if err != syscall.EAGAIN {
			x.got(n, err)
			return true
		}
		if len(x.held) > 0 && x.st != stBody && x.st != stChunk {
			// Between payloads: nothing more is coming in now.
			x.wakeHeld()
		}
		if x.spin > 0 && x.t.polling.Load() == 0 {
			if i == 0 {
				x.spinStart = time.Now()
			} else if i&7 == 0 && time.Since(x.spinStart) > x.spin {
				x.spin = 0
			}
			if x.spin > 0 {
				runtime.Gosched()
				if x.t.cfg.Yield {
					syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
				}
				continue
			}
		}
		x.spin = 0 // no spin after a wake-up: something came
		x.wakeHeld()
		if x.inlineOK() {
			x.released = true
			x.waiting.Store(1)
			x.own.Store(ownFree)
		}
		return false
	}
}

// inlineOK reports whether a polling caller may go on from where x is:
// between frames or inside the payload of a whole bulk frame; owner only.
func (x *rx) inlineOK() bool {
	return x.err == nil && x.rerr == nil && (x.st == stHeader || x.st == stBody && !x.cur.urgent)
}

// PollUntil is caller-driven progress: the calling goroutine, waiting for
// c (a request of the handler), reads the connections itself with
// non-blocking reads for at most budget, delivering whole bulk frames to
// the handler from its own goroutine, until c.Done(). It returns
// c.Done(). What it must not deliver (see the top of this file) is handed
// to the connection's reader goroutine. Each round reads at most two
// connections: the one that last gave a caller frames and the next in
// turn. Any number of goroutines may poll at once; one at a time reads a
// connection. The caller must hold no lock the handler takes. Only where
// ranks have a core each: it spins.
//
// A c with a PollBytes method (p2p.Req) that reports a payload of at
// least bulkPoll bytes is not polled for, or no longer once it reports
// one: the caller returns (false) to block while the connection's reader
// goroutine, or the peer's writer goroutine, moves the payload. Over TCP
// on two cores a caller spinning beside them took a processor from the
// copies: windows of 1 and 4 MiB sends were 4% and 16% slower with it
// (paired runs on a loaded machine, docs/benchmarks.md, "Session 17: TCP
// bandwidth").
func (t *Transport) PollUntil(c interface{ Done() bool }, budget time.Duration) bool {
	if c.Done() {
		return true
	}
	sized, _ := c.(interface{ PollBytes() int64 })
	if sized != nil && sized.PollBytes() >= bulkPoll {
		t.giveUp()
		return c.Done()
	}
	t.polling.Add(1)
	t.pollSeq.Add(1)
	start := time.Now()
	turn := 0
	locked := transport.LockedCallers()
	for i := 1; ; i++ {
		// Each round: the connection that last gave a caller frames, and
		// the next in turn (a round reads two sockets at most, however
		// many peers there are).
		hot := t.hot.Load()
		if hot != nil && hot.callerTake() {
			hot.poll()
		}
		if p := t.rxs.Load(); p != nil && len(*p) > 0 && !c.Done() {
			turn++
			if x := (*p)[turn%len(*p)]; x != hot && x.callerTake() && x.poll() {
				t.hot.Store(x)
			}
		}
		if c.Done() {
			break
		}
		if i%pollYield == 0 {
			spun := time.Duration(0)
			if i%pollClock == 0 {
				if spun = time.Since(start); spun >= budget {
					break
				}
				if sized != nil && sized.PollBytes() >= bulkPoll {
					break // a large payload was announced meanwhile
				}
			}
			// A C thread's goroutine yields its processor only past a
			// quarter of the budget (as internal/transport/shm's
			// PollUntil, transport.SetLockedCallers).
			if !locked || spun >= budget/4 {
				runtime.Gosched()
			}
			if t.cfg.Yield {
				syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
	}
	if t.polling.Add(-1) == 0 {
		// The last look, for the reader goroutines woken while callers
		// polled: what woke them may still be unread.
		if p := t.rxs.Load(); p != nil {
			for _, x := range *p {
				x.lookAgain()
			}
		}
	}
	done := c.Done()
	if !done {
		t.giveUp()
	}
	return done
}

// giveUp is told that a caller gives up polling and will wait for a
// reader goroutine: those waiting out a quiet period (parkArm) arm
// readability now.
func (t *Transport) giveUp() {
	t.gaveUp.Add(1)
	if p := t.rxs.Load(); p != nil {
		for _, x := range *p {
			if x.disarmed.Load() && x.c != nil {
				x.c.SetReadDeadline(aLongTimeAgo)
			}
		}
	}
}

// callerTake tries to take x for a polling caller; false if another owner
// has it, it was handed to the reader goroutine or the reader ends.
func (x *rx) callerTake() bool {
	if x.handoff.Load() || x.stop.Load() || !x.own.CompareAndSwap(ownFree, ownCaller) {
		return false
	}
	if x.handoff.Load() || x.stop.Load() { // set before the swap: the reader may wait for it
		x.handOff()
		return false
	}
	return true
}

// poll reads and delivers what x has for a caller, which owns x, and lets
// go of it (handing it to the reader goroutine if needed); then it reads x
// again while x is marked (lookAgain). True if it delivered frames.
func (x *rx) poll() bool {
	delivered, handed := x.pollOnce()
	if !handed && x.lookAgain() {
		delivered = true
	}
	return delivered
}

// pollOnce is poll up to letting go of x: handed reports that it handed x
// to the reader goroutine (which then reads everything that comes).
func (x *rx) pollOnce() (delivered, handed bool) {
	frames := x.frames
	leave := false
	for {
		res := x.process(true)
		if res != pNeed {
			// pBatch too: what is left may be all read already, so no
			// readability would wake the reader goroutine for it.
			leave = true
			break
		}
		x.wouldBlock = false
		if err := x.rc.Control(x.pollFn); err != nil && x.rerr == nil {
			x.rerr = err
			continue
		}
		if x.wouldBlock {
			break
		}
	}
	delivered = x.frames != frames // read while x is held
	if delivered && x.fc != nil && x.fc.armed.Load() && !x.kickedArm.Swap(true) {
		// Callers read x while its readability is armed (the reader
		// armed it before they began): each frame wakes a thread in the
		// runtime's poller. The reader, kicked, disarms it (parkArm).
		x.c.SetReadDeadline(aLongTimeAgo)
	}
	if leave {
		x.handOff()
		return delivered, true
	}
	if testHookPollEmpty != nil {
		testHookPollEmpty(x)
	}
	x.own.Store(ownFree)
	return delivered, false
}

// lookAgain reads x for a caller while it is marked missed (the reader
// goroutine was woken and left x to callers, retake), and lets go of it
// each time; true if it delivered frames. Finding x held by another
// caller, it marks x again and tries once more: either that caller lets go
// after the mark and looks at it, or the second try takes x.
func (x *rx) lookAgain() bool {
	delivered := false
	for x.missed.Load() != 0 && x.missed.Swap(0) != 0 {
		if !x.callerTake() {
			if x.handoff.Load() || x.stop.Load() {
				return delivered // the reader goroutine reads what comes
			}
			x.missed.Store(1)
			if !x.callerTake() {
				return delivered
			}
			x.missed.Store(0)
		}
		d, handed := x.pollOnce()
		delivered = delivered || d
		if handed {
			return delivered
		}
	}
	return delivered
}

// handOff gives x, owned by a caller, to the reader goroutine: waiting for
// readability, it is kicked out of the wait.
func (x *rx) handOff() {
	x.handoff.Store(true)
	x.own.Store(ownFree)
	if x.waiting.Load() != 0 && x.c != nil {
		x.c.SetReadDeadline(aLongTimeAgo)
	}
}

// aLongTimeAgo is a read deadline that has passed.
var aLongTimeAgo = time.Unix(1, 0)

// pollRead is a caller's RawConn.Control callback: one non-blocking read.
func (x *rx) pollRead(fd uintptr) {
	for {
		n, err := syscall.Read(int(fd), x.target())
		switch err {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			x.wouldBlock = true
		default:
			x.got(n, err)
		}
		return
	}
}

// target is where the next read goes: the rest of a payload being read
// straight into its buffer, or the connection's buffer (compacted).
func (x *rx) target() []byte {
	x.direct = nil
	if x.r == x.w {
		x.r, x.w = 0, 0
		var f *rxFrame
		left := uint64(0)
		switch x.st {
		case stBody:
			f, left = &x.cur, x.cur.h.N-x.cur.off
		case stChunk:
			f, left = &x.cur, x.chunkLeft
		case stInner:
			f, left = &x.inner, x.inner.h.N-x.inner.off
		}
		if f != nil && f.keep && left >= directMin {
			x.direct = f
			return f.dst[f.off : f.off+left]
		}
	} else if len(x.buf)-x.w < transport.HeaderSize {
		x.w = copy(x.buf, x.buf[x.r:x.w])
		x.r = 0
	}
	return x.buf[x.w:]
}

// got records a read of n bytes into target() that ended with err
// (syscall.Read's results: n 0 and no error is the end of the stream).
func (x *rx) got(n int, err error) {
	if n > 0 {
		if f := x.direct; f != nil {
			f.off += uint64(n)
			if x.st == stChunk {
				x.chunkLeft -= uint64(n)
			}
		} else {
			x.w += n
		}
	}
	x.direct = nil
	switch {
	case err == nil && n <= 0:
		x.rerr = io.EOF
	case err == nil:
	case err == io.EOF:
		x.rerr = err
	default:
		if en, ok := err.(syscall.Errno); ok {
			err = os.NewSyscallError("read", en)
		}
		x.rerr = err
	}
}

// process delivers what the buffered bytes hold; owner only. A caller
// (inline) delivers whole bulk frames only and stops where the reader
// goroutine must go on (pLeave); the reader goroutine delivers
// everything and ends the open frames when the connection fails.
func (x *rx) process(inline bool) int {
	batch := 0
	for {
		if x.err != nil {
			if inline {
				return pLeave
			}
			return x.fail()
		}
		switch x.st {
		case stHeader:
			h, ok := x.peekHeader()
			if !ok {
				if x.err == nil {
					return pNeed
				}
				continue
			}
			if inline {
				if h.Flags&(transport.FlagUrgent|flagConn|flagChunked) != 0 {
					return pLeave
				}
				if batch == inlineBatch {
					return pBatch
				}
			}
			x.r += transport.HeaderSize
			if h.Flags&flagConn != 0 {
				if h.Kind != connBye || h.N != 0 {
					x.err = &malformedError{fmt.Errorf("rank %d sent a transport frame of kind %d (%d bytes) outside a chunked payload", x.peer, h.Kind, h.N)}
					continue
				}
				return pBye
			}
			if x.open(&x.cur, h, true) {
				if x.cur.chunked {
					x.st = stChunkHeader
				} else {
					x.st = stBody
				}
			}
		case stBody:
			if inline && x.cur.urgent {
				return pLeave
			}
			if !x.take(&x.cur, x.cur.h.N-x.cur.off) {
				if x.err == nil {
					return pNeed
				}
				continue
			}
			x.finish(&x.cur, nil)
			x.st = stHeader
			batch++
		case stChunkHeader:
			if inline {
				return pLeave
			}
			if x.cur.off == x.cur.h.N {
				x.finish(&x.cur, nil)
				x.st = stHeader
				continue
			}
			h, ok := x.peekHeader()
			if !ok {
				if x.err == nil {
					return pNeed
				}
				continue
			}
			x.r += transport.HeaderSize
			if h.Flags&flagConn == 0 { // a whole frame between chunks
				if x.open(&x.inner, h, false) {
					x.st = stInner
				}
				continue
			}
			if h.Kind != connChunk || h.N == 0 || h.N > x.cur.h.N-x.cur.off {
				x.err = &malformedError{fmt.Errorf("rank %d sent a bad chunk (kind %d, %d bytes) at byte %d of a %d-byte payload", x.peer, h.Kind, h.N, x.cur.off, x.cur.h.N)}
				continue
			}
			x.chunkLeft = h.N
			x.st = stChunk
		case stChunk:
			if inline {
				return pLeave
			}
			before := x.cur.off
			done := x.take(&x.cur, x.chunkLeft)
			x.chunkLeft -= x.cur.off - before
			if !done {
				if x.err == nil {
					return pNeed
				}
				continue
			}
			x.st = stChunkHeader
		case stInner:
			if inline {
				return pLeave
			}
			if !x.take(&x.inner, x.inner.h.N-x.inner.off) {
				if x.err == nil {
					return pNeed
				}
				continue
			}
			x.finish(&x.inner, nil)
			x.st = stChunkHeader
		}
	}
}

// peekHeader decodes and checks the buffered header of the next frame
// (not consumed); false when it is not all there (x.err set if it never
// will be) or breaks the rules (x.err set).
func (x *rx) peekHeader() (transport.Header, bool) {
	var h transport.Header
	if x.w-x.r < transport.HeaderSize {
		x.readFailed()
		return h, false
	}
	h.Decode(x.buf[x.r : x.r+transport.HeaderSize])
	if err := checkHeader(&h); err != nil {
		x.err = &malformedError{err}
		return h, false
	}
	return h, true
}

// take moves up to want buffered bytes of f's payload into its buffer (or
// drops them); true when want bytes were there (x.err set when they never
// will be).
func (x *rx) take(f *rxFrame, want uint64) bool {
	n := min(uint64(x.w-x.r), want)
	if n > 0 {
		if f.keep {
			copy(f.dst[f.off:f.off+n], x.buf[x.r:x.r+int(n)])
		}
		x.r += int(n)
		f.off += n
	}
	if n == want {
		return true
	}
	x.readFailed()
	return false
}

// readFailed turns the error of the last read into why the connection
// ends, once the bytes before it are used up.
func (x *rx) readFailed() {
	if x.rerr != nil && x.err == nil {
		x.err = x.t.wireErr(x.peer, x.rerr)
	}
}

// open announces frame h to the handler; false if the handler refused it
// or it cannot be where it is (x.err set).
func (x *rx) open(f *rxFrame, h transport.Header, outer bool) bool {
	chunked := h.Flags&flagChunked != 0
	urgent := h.Flags&transport.FlagUrgent != 0
	h.Flags &^= transport.FlagsReserved
	hd := x.t.cfg.Handler
	dst, cookie := hd.Frame(x.peer, h)
	if rj, ok := cookie.(*transport.Reject); ok {
		err := &malformedError{rj.Err}
		hd.Payload(x.peer, h, nil, cookie, err)
		x.frames++
		x.err = err
		return false
	}
	*f = rxFrame{h: h, dst: dst, cookie: cookie, keep: uint64(len(dst)) == h.N, urgent: urgent, chunked: chunked, open: true}
	if chunked && !outer {
		x.err = &malformedError{fmt.Errorf("rank %d sent a chunked frame inside a chunked payload", x.peer)}
		return false
	}
	return true
}

// finish ends frame f with its Payload call.
func (x *rx) finish(f *rxFrame, err error) {
	g := *f
	*f = rxFrame{}
	x.frames++
	if x.holding && !g.chunked {
		w := x.t.cfg.Handler.(transport.HeldPayload).PayloadHeld(x.peer, g.h, g.dst, g.cookie, err)
		if w != nil {
			x.held = append(x.held, w)
			if len(x.held) >= heldMax {
				x.wakeHeld()
			}
		}
		return
	}
	x.t.cfg.Handler.Payload(x.peer, g.h, g.dst, g.cookie, err)
}

// fail ends the open frames with x.err (the frame between chunks first)
// and returns pFail.
func (x *rx) fail() int {
	if x.inner.open {
		x.finish(&x.inner, x.err)
	}
	if x.cur.open {
		x.finish(&x.cur, x.err)
	}
	return pFail
}
