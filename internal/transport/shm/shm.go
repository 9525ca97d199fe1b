// Package shm is the shared-memory transport between the ranks of one
// host. Each pair of ranks that talk shares a segment (an anonymous
// memory file, memfd, passed over a Unix socket: no name in /dev/shm or in
// the job directory, so nothing is left behind whoever crashes) holding,
// per direction, an urgent and a bulk single-producer single-consumer
// ring of frames in the transport's format (transport.Header and payload;
// payloads larger than a quarter of a ring follow their header in chunk
// records). Frames to ranks without a shared-memory address (other
// hosts) go to a fallback transport (the sockets).
//
// Liveness: the Unix socket the segment was passed on stays open and
// carries nothing more until the end: an orderly Close writes a goodbye
// byte after its last frame, a process that dies closes it without one.
// The socket's break is the failure (exactly as with the socket
// transport); the receiver then delivers the frames the peer published
// before it died, ends a frame its death cut short with an error, and
// reports the peer lost. A producer publishes a record with a store of
// the ring's tail after the bytes are written, so a peer killed inside a
// write never makes its receiver see part of a frame.
//
// Waiting: every process has a doorbell page that its peers map; a sender
// bumps the doorbell word after publishing and wakes the receiver with
// FUTEX_WAKE only when it said it sleeps. The receiver (one goroutine per
// transport, polling every ring) spins briefly when told to (ranks do not
// outnumber cores), then sleeps with FUTEX_WAIT. A writer that finds a
// ring full waits on the direction's space word, bumped by the consumer;
// a peer's death or Close wakes it too.
//
// The package must not interpret frames beyond their length and its
// reserved bits, and keeps no process-global state.
package shm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Config configures a Transport.
type Config struct {
	Self    int
	Dir     string // directory of the listening socket (required)
	Name    string // socket file name stem (default "r<Self>.shm")
	Handler transport.Handler
	// Fallback carries the frames to ranks without a shared-memory address
	// (nil: such a send fails). Close closes it.
	Fallback transport.Transport
	// SpinFn is how long the receiver spins before it sleeps (read at each
	// idle period); nil or 0: it never spins.
	SpinFn func() time.Duration
	// Yield makes the spinning receiver give the processor to other
	// processes (sched_yield) between polls.
	Yield bool
	// ConnectTimeout bounds setting up a pair (dial and handshake); 0
	// means 30 s.
	ConnectTimeout time.Duration

	// NoCMA makes every payload travel through the rings, even where the
	// receiver may read the sender's memory (process_vm_readv).
	NoCMA bool

	beforePublish func() // tests: runs between writing a record and publishing it
}

const (
	helloMagic     = 0x66746d73 // "ftms"
	replyAccept    = 1
	replyRefuse    = 2
	byeByte        = 0xb7
	connectTimeout = 30 * time.Second
	closeFlush     = time.Second            // how long Close lets queued frames drain
	sleepMax       = 100 * time.Millisecond // longest futex sleep (a lost wake-up costs at most this)
)

// Peer states (pair.state).
const (
	alive int32 = iota
	gone        // orderly goodbye
	lost        // the socket broke without one
)

// Transport implements transport.Transport over shared memory.
type Transport struct {
	cfg   Config
	pid   int
	probe [8]byte // a peer reads it to learn whether it may read this process's memory
	ln    *net.UnixListener
	path  string
	addrs atomic.Pointer[[]string]

	bell      region
	bellFd    int
	bellSeq   *atomic.Uint32
	bellSleep *atomic.Uint32

	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	pairs   map[int]*pair
	hs      map[*net.UnixConn]struct{} // connections in their handshake
	closed  bool
	closeBy atomic.Int64 // unix nanos after which writers give up (0: not closing)

	rx     atomic.Pointer[[]*pair] // the pairs the receiver polls
	stop   atomic.Bool
	rxDone chan struct{}

	wg sync.WaitGroup
}

// pair is this rank's side of the segment shared with one peer.
type pair struct {
	t    *Transport
	rank int

	// Set-up; guarded by Transport.mu.
	up      atomic.Bool // the segment is mapped and the socket connected (set once)
	dialing bool
	expect  bool // our dial was refused: the peer's is on its way
	err     error
	ready   chan struct{} // closed when up, err, dialing or expect change

	c       *net.UnixConn // nil for the pair of this rank with itself
	pid     int           // the peer's process id
	byeOnce sync.Once
	seg     region
	pbell   region // the peer's doorbell
	out     dirView
	in      dirView
	state   atomic.Int32
	why     error // why the peer was lost; written before state

	// Sending; guarded by mu (held for a copy into a ring, never across a
	// wait).
	mu       sync.Mutex
	idle     sync.Cond // broadcast when writing clears
	urgent   fifo
	bulk     fifo
	writing  bool // the writer goroutine runs
	werr     error
	unmapped bool

	// Receiving; owned by the receiver goroutine.
	ur, br   rxFrame
	finished bool
}

func (p *pair) changed() {
	close(p.ready)
	p.ready = make(chan struct{})
}

// item is a queued frame; off counts the payload bytes written, started
// whether its header is.
type item struct {
	h       transport.Header
	payload []byte
	done    transport.Done
	w       *waiter
	started bool
	off     int
	ack     uint64 // a payload read from this process's memory: the ring's head once it is read
}

func (it *item) finish(err error) {
	if it.done != nil {
		it.done.SendDone(err)
	}
	if it.w != nil {
		it.w.ch <- err
	}
}

type waiter struct{ ch chan error }

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

type fifo struct {
	q    []item
	head int
}

func (f *fifo) len() int     { return len(f.q) - f.head }
func (f *fifo) push(it item) { f.q = append(f.q, it) }
func (f *fifo) front() *item { return &f.q[f.head] }
func (f *fifo) pop() item {
	it := f.q[f.head]
	f.q[f.head] = item{}
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	}
	return it
}

// Listen creates the doorbell and the listening socket and starts the
// receiver. Peers must be set with SetPeers before the first Send.
func Listen(cfg Config) (*Transport, error) {
	if cfg.Dir == "" {
		return nil, errors.New("shm: no directory for the listening socket")
	}
	if cfg.Handler == nil {
		return nil, errors.New("shm: no handler")
	}
	if cfg.Name == "" {
		cfg.Name = "r" + strconv.Itoa(cfg.Self) + ".shm"
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	t := &Transport{cfg: cfg, pid: os.Getpid(), pairs: map[int]*pair{}, hs: map[*net.UnixConn]struct{}{}, rxDone: make(chan struct{})}
	copy(t.probe[:], probeMagic)
	var err error
	t.bell, t.bellFd, err = newRegion("ftmpi-bell", bellSize)
	if err != nil {
		return nil, fmt.Errorf("shm doorbell: %w", err)
	}
	t.bellSeq, t.bellSleep = t.bell.u32(offBellSeq), t.bell.u32(offBellSleep)
	t.path = filepath.Join(cfg.Dir, cfg.Name+".sock")
	_ = os.Remove(t.path)
	t.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: t.path, Net: "unix"})
	if err != nil {
		t.bell.unmap()
		unix.Close(t.bellFd)
		return nil, fmt.Errorf("listen on unix socket %s: %w", t.path, err)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	empty := []*pair{}
	t.rx.Store(&empty)
	t.wg.Add(1)
	go t.acceptLoop()
	go t.recvLoop()
	return t, nil
}

// Addr is the address peers give SetPeers for this rank.
func (t *Transport) Addr() string { return t.path }

// SetPeers installs the address table, indexed by rank: "" for ranks
// reached through the fallback.
func (t *Transport) SetPeers(addrs []string) { t.addrs.Store(&addrs) }

// local reports whether rank to is reached through shared memory.
func (t *Transport) local(to int) bool {
	a := t.addrs.Load()
	return a != nil && to >= 0 && to < len(*a) && (*a)[to] != ""
}

func (t *Transport) addrOf(to int) string {
	a := t.addrs.Load()
	if a == nil || to < 0 || to >= len(*a) {
		return ""
	}
	return (*a)[to]
}

// pairOf returns the state of peer r, created on first use; t.mu held.
func (t *Transport) pairLocked(r int) *pair {
	p := t.pairs[r]
	if p == nil {
		p = &pair{t: t, rank: r, ready: make(chan struct{})}
		p.idle.L = &p.mu
		t.pairs[r] = p
	}
	return p
}

func (t *Transport) pair(r int) (*pair, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transport.ErrClosed
	}
	return t.pairLocked(r), nil
}

// Send implements transport.Transport: a frame that fits the ring now is
// written from the caller's goroutine; otherwise it waits its turn.
func (t *Transport) Send(to int, h transport.Header, payload []byte) error {
	if !t.local(to) {
		if t.cfg.Fallback == nil {
			return fmt.Errorf("%w: no address for rank %d", transport.ErrPeerLost, to)
		}
		return t.cfg.Fallback.Send(to, h, payload)
	}
	p, err := t.pair(to)
	if err != nil {
		return err
	}
	h.N = uint64(len(payload))
	p.mu.Lock()
	if p.werr != nil {
		err := p.werr
		p.mu.Unlock()
		return err
	}
	it := item{h: h, payload: payload}
	if p.directLocked(&it) {
		sleeping := p.ringLocked()
		p.mu.Unlock()
		p.wakePeer(sleeping)
		return nil
	}
	sleeping := it.started && p.ringLocked()
	w := waiterPool.Get().(*waiter)
	it.w = w
	p.queueLocked(it)
	p.mu.Unlock()
	p.wakePeer(sleeping)
	err = <-w.ch
	waiterPool.Put(w)
	return err
}

// Post implements transport.Transport.
func (t *Transport) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	if !t.local(to) {
		if t.cfg.Fallback == nil {
			if done != nil {
				done.SendDone(fmt.Errorf("%w: no address for rank %d", transport.ErrPeerLost, to))
			}
			return
		}
		t.cfg.Fallback.Post(to, h, payload, done)
		return
	}
	p, err := t.pair(to)
	if err != nil {
		if done != nil {
			done.SendDone(err)
		}
		return
	}
	h.N = uint64(len(payload))
	p.mu.Lock()
	if err := p.werr; err != nil {
		p.mu.Unlock()
		if done != nil {
			done.SendDone(err)
		}
		return
	}
	it := item{h: h, payload: payload}
	if p.directLocked(&it) {
		sleeping := p.ringLocked()
		p.mu.Unlock()
		p.wakePeer(sleeping)
		if done != nil {
			done.SendDone(nil)
		}
		return
	}
	sleeping := it.started && p.ringLocked()
	it.done = done
	p.queueLocked(it)
	p.mu.Unlock()
	p.wakePeer(sleeping)
}

// directLocked writes what fits of a frame into its ring from the
// caller's goroutine when nothing is queued before it (an urgent frame:
// on the urgent lane; a bulk one: on either lane), and reports whether
// the frame is written; if not, what was written of it is recorded in it
// and the caller queues it (the writer goroutine goes on from there);
// p.mu held.
func (p *pair) directLocked(it *item) bool {
	if !p.up.Load() || p.urgent.len() > 0 {
		return false
	}
	r := &p.out.urgent
	if it.h.Flags&transport.FlagUrgent == 0 {
		if p.bulk.len() > 0 {
			return false
		}
		r = &p.out.bulk
	}
	fin, _ := p.writeItem(r, it)
	return fin
}

// ringLocked bumps the peer's doorbell after a publish and reports
// whether the peer sleeps (wakePeer then wakes it, outside the lock);
// p.mu held, the segment mapped.
func (p *pair) ringLocked() bool {
	seq := p.pbell.u32(offBellSeq)
	seq.Add(1)
	return p.pbell.u32(offBellSleep).Load() != 0
}

func (p *pair) wakePeer(sleeping bool) {
	if !sleeping {
		return
	}
	p.mu.Lock()
	if !p.unmapped {
		futexWakeAll(p.pbell.u32(offBellSeq))
	}
	p.mu.Unlock()
}

// queueLocked appends it to its lane and makes sure the writer goroutine
// will write it; p.mu held, p.werr nil.
func (p *pair) queueLocked(it item) {
	if it.h.Flags&transport.FlagUrgent != 0 {
		p.urgent.push(it)
	} else {
		p.bulk.push(it)
	}
	if !p.writing {
		p.writing = true
		p.t.wg.Add(1)
		go p.writeLoop()
		return
	}
	if p.up.Load() && !p.unmapped {
		p.out.wakeProducer() // the writer may wait for space on the other lane
	}
}

// progressLocked writes what fits of the queued frames, the urgent lane
// first; a bulk frame waits while urgent ones are queued, so that a bulk
// frame never overtakes an urgent one sent before it. It returns the
// frames completely written; p.mu held, the pair up.
func (p *pair) progressLocked(done []item) ([]item, bool) {
	progressed := false
	for p.urgent.len() > 0 {
		fin, prog := p.writeItem(&p.out.urgent, p.urgent.front())
		progressed = progressed || prog
		if !fin {
			return done, progressed
		}
		done = append(done, p.urgent.pop())
	}
	for p.bulk.len() > 0 {
		fin, prog := p.writeItem(&p.out.bulk, p.bulk.front())
		progressed = progressed || prog
		if !fin {
			return done, progressed
		}
		done = append(done, p.bulk.pop())
	}
	return done, progressed
}

// writeItem writes what fits of it into r: the whole frame when it needs
// no chunks, else its header and as many chunks as fit.
func (p *pair) writeItem(r *ring, it *item) (finished, progressed bool) {
	before := p.t.cfg.beforePublish
	n := len(it.payload)
	if r == &p.out.bulk && n >= cmaMin && (it.ack != 0 || !it.started && p.out.cma.Load() == 1) {
		// The receiver reads the payload from this process's memory; the
		// frame is written once its record is consumed.
		if it.started {
			return r.head.Load() >= it.ack, false
		}
		h := it.h
		h.Flags |= flagCMA
		var body [cmaBody]byte
		binary.LittleEndian.PutUint64(body[:], uint64(uintptr(unsafe.Pointer(&it.payload[0]))))
		if !r.put(&h, body[:], before) {
			return false, false
		}
		it.started, it.ack = true, r.tail.Load()
		return false, true
	}
	if !it.started {
		if recLen(uint64(n)) <= r.maxRec() {
			if !r.put(&it.h, it.payload, before) {
				return false, false
			}
			return true, true
		}
		h := it.h
		h.Flags |= flagChunked
		if !r.put(&h, nil, before) {
			return false, false
		}
		it.started, progressed = true, true
	}
	maxChunk := int(r.maxRec()) - transport.HeaderSize
	for it.off < n {
		c := min(maxChunk, n-it.off)
		ch := transport.Header{Kind: recChunk, Flags: flagShm, N: uint64(c)}
		if !r.put(&ch, it.payload[it.off:it.off+c], before) {
			return false, progressed
		}
		it.off += c
		progressed = true
	}
	return true, progressed
}

// writeLoop writes the queued frames of one peer, setting the pair up
// first if needed, and ends when the queue is empty or sending ended.
func (p *pair) writeLoop() {
	t := p.t
	defer t.wg.Done()
	var done []item
	for {
		p.mu.Lock()
		if p.werr == nil && !p.up.Load() {
			p.mu.Unlock()
			if err := t.connect(p); err != nil {
				p.fail(err)
			}
			continue
		}
		if p.werr != nil {
			failed := p.drainLocked()
			err := p.werr
			p.writing = false
			p.idle.Broadcast()
			p.mu.Unlock()
			for i := range failed {
				failed[i].finish(err)
			}
			return
		}
		var progressed bool
		done, progressed = p.progressLocked(done[:0])
		var seq uint32
		waiting := false
		if !progressed && (p.urgent.len() > 0 || p.bulk.len() > 0) {
			// Ask the consumer to wake us, then look once more (it may have
			// freed space before it saw the request).
			p.out.spaceWait.Store(1)
			seq = p.out.spaceSeq.Load()
			done, progressed = p.progressLocked(done)
			waiting = !progressed
		}
		sleeping := false
		if len(done) > 0 || progressed {
			sleeping = p.ringLocked()
		}
		empty := p.urgent.len() == 0 && p.bulk.len() == 0
		if empty {
			p.writing = false
			p.idle.Broadcast()
		}
		spaceSeq := p.out.spaceSeq
		p.mu.Unlock()
		p.wakePeer(sleeping)
		for i := range done {
			done[i].finish(nil)
			done[i] = item{}
		}
		if empty {
			return
		}
		if waiting {
			if by := t.closeBy.Load(); by != 0 && time.Now().UnixNano() > by {
				// A payload the receiver may be reading from this process's
				// memory: the goodbye comes first, so the receiver, which
				// checks the connection after reading, discards what it read
				// if the caller reuses the buffer.
				if p.c != nil {
					p.sayBye()
				}
				p.fail(transport.ErrClosed)
				continue
			}
			futexWaitOn(spaceSeq, seq, sleepMax)
		}
	}
}

// fail ends sending to p with err: queued frames fail with it (the writer
// goroutine fails them if it runs).
func (p *pair) fail(err error) {
	p.mu.Lock()
	if p.werr == nil {
		p.werr = err
	}
	var failed []item
	if !p.writing {
		failed = p.drainLocked()
	} else if p.up.Load() && !p.unmapped {
		p.out.wakeProducer()
	}
	err = p.werr
	p.idle.Broadcast()
	p.mu.Unlock()
	for i := range failed {
		failed[i].finish(err)
	}
}

func (p *pair) drainLocked() []item {
	var out []item
	for p.urgent.len() > 0 {
		out = append(out, p.urgent.pop())
	}
	for p.bulk.len() > 0 {
		out = append(out, p.bulk.pop())
	}
	return out
}

// recvLoop polls every pair's rings and delivers their frames; it sleeps
// on the doorbell when all are empty.
func (t *Transport) recvLoop() {
	defer close(t.rxDone)
	spinning := false
	var idleSince time.Time
	for !t.stop.Load() {
		if t.pollAll() {
			spinning = false
			continue
		}
		if t.cfg.SpinFn != nil {
			if spin := t.cfg.SpinFn(); spin > 0 {
				if !spinning {
					spinning, idleSince = true, time.Now()
				}
				if time.Since(idleSince) < spin {
					runtime.Gosched()
					if t.cfg.Yield {
						syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
					}
					continue
				}
			}
		}
		spinning = false
		seq := t.bellSeq.Load()
		t.bellSleep.Store(1)
		if t.pollAll() || t.stop.Load() {
			t.bellSleep.Store(0)
			continue
		}
		futexWaitOn(t.bellSeq, seq, sleepMax)
		t.bellSleep.Store(0)
	}
}

// ringSelf wakes this transport's own receiver.
func (t *Transport) ringSelf() {
	t.bellSeq.Add(1)
	futexWakeAll(t.bellSeq)
}

func (t *Transport) pollAll() bool {
	progress := false
	ended := false
	for _, p := range *t.rx.Load() {
		if p.finished {
			continue
		}
		prog, fin := p.poll()
		progress = progress || prog
		ended = ended || fin
	}
	if ended {
		t.mu.Lock()
		var keep []*pair
		for _, p := range *t.rx.Load() {
			if !p.finished {
				keep = append(keep, p)
			}
		}
		t.rx.Store(&keep)
		t.mu.Unlock()
	}
	return progress
}

// poll delivers the frames published on p's incoming rings: the urgent
// ring first and again between bulk records, bulk records only up to the
// tail seen before the urgent ring was read (so an urgent frame published
// before a bulk one is delivered first). When the peer is gone (seen
// before the tails were read: what it published before is all there),
// the frames are drained, a cut frame ends with an error, and the peer is
// reported lost (unless it said goodbye). finished is true then.
func (p *pair) poll() (progress, finished bool) {
	st := p.state.Load()
	var err error
	bt := p.in.bulk.tail.Load()
	progress, err = p.drainUrgent()
	for err == nil && !p.ur.active && p.in.bulk.head.Load() != bt {
		if err = consume(&p.in.bulk, &p.br, bt, p); err == nil {
			var prog bool
			prog, err = p.drainUrgent()
			progress = progress || prog
		}
		progress = true
	}
	if progress && p.in.spaceWait.Load() != 0 {
		p.in.spaceWait.Store(0)
		p.in.wakeProducer()
	}
	if err == nil && st == alive {
		return progress, false
	}
	p.end(st, err)
	return true, true
}

func (p *pair) drainUrgent() (bool, error) {
	progress := false
	ut := p.in.urgent.tail.Load()
	for p.in.urgent.head.Load() != ut {
		if err := consume(&p.in.urgent, &p.ur, ut, p); err != nil {
			return true, err
		}
		progress = true
	}
	return progress, nil
}

// end finishes receiving from p: the peer is gone (st) or wrote a bad
// record (err). Frames cut short end with an error, the peer is reported
// lost unless it said goodbye between frames, and the segment is unmapped.
func (p *pair) end(st int32, err error) {
	t := p.t
	if err != nil {
		st = lost
		if p.c != nil {
			p.c.Close() // the peer sees the break
		}
	} else if st == lost {
		err = p.why
	}
	cut := false
	for _, rx := range []*rxFrame{&p.br, &p.ur} {
		if rx.active {
			f := *rx
			*rx = rxFrame{}
			cerr := err
			if cerr == nil {
				cerr = fmt.Errorf("rank %d said goodbye inside a frame", p.rank)
			}
			t.cfg.Handler.Payload(p.rank, f.h, f.dst, f.cookie, cerr)
			cut = true
		}
	}
	if cut && err == nil {
		err = fmt.Errorf("rank %d said goodbye inside a frame", p.rank)
		st = lost
	}
	p.fail(fmt.Errorf("%w: rank %d: %v", transport.ErrPeerLost, p.rank, errOr(err, "it closed its transport")))
	p.mu.Lock()
	p.unmapLocked()
	p.mu.Unlock()
	p.finished = true
	if st == lost && !t.stop.Load() {
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		if !closed {
			t.cfg.Handler.PeerLost(p.rank, err)
		}
	}
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// unmapLocked releases the pair's mappings once nothing can touch them:
// sending ended (werr set, so no writer enters the rings) and the
// receiver is done; p.mu held.
func (p *pair) unmapLocked() {
	if p.unmapped || !p.up.Load() {
		return
	}
	p.unmapped = true
	p.seg.unmap()
	if p.c != nil { // else pbell is this transport's own doorbell
		p.pbell.unmap()
	}
}

// Close writes what is queued (for up to closeFlush: a peer that does not
// read loses it), says goodbye to every peer, and releases the memory,
// the sockets and the goroutines. Peers see an orderly goodbye. It closes
// the fallback too.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.closeBy.Store(time.Now().Add(closeFlush).UnixNano())
	t.cancel()
	t.ln.Close()
	for c := range t.hs {
		c.Close()
	}
	pairs := make([]*pair, 0, len(t.pairs))
	for _, p := range t.pairs {
		p.changed()
		pairs = append(pairs, p)
	}
	t.mu.Unlock()
	for _, p := range pairs {
		p.mu.Lock()
		if p.writing && p.up.Load() && !p.unmapped {
			p.out.wakeProducer()
		}
		for p.writing {
			p.idle.Wait()
		}
		if p.werr == nil {
			p.werr = transport.ErrClosed
		}
		failed := p.drainLocked()
		p.mu.Unlock()
		for i := range failed {
			failed[i].finish(transport.ErrClosed)
		}
		if p.up.Load() && p.c != nil {
			p.sayBye()
		}
	}
	t.stop.Store(true)
	t.ringSelf()
	<-t.rxDone
	t.wg.Wait()
	for _, p := range pairs {
		p.mu.Lock()
		p.unmapLocked()
		p.mu.Unlock()
	}
	t.bell.unmap()
	unix.Close(t.bellFd)
	os.Remove(t.path)
	if t.cfg.Fallback != nil {
		return t.cfg.Fallback.Close()
	}
	return nil
}

// sayBye writes the goodbye on p's connection and closes it (once); p up.
func (p *pair) sayBye() {
	p.byeOnce.Do(func() {
		p.c.SetWriteDeadline(time.Now().Add(closeFlush))
		p.c.Write([]byte{byeByte})
		p.c.Close()
	})
}

// probeMagic is what Transport.probe holds.
const probeMagic = "ftmpiCMA"

// canRead reports whether this process may read the memory of process pid
// (process_vm_readv; refused by ptrace rules such as Yama's), trying on
// the peer's probe at addr.
func canRead(pid int, addr uint64) bool {
	var b [8]byte
	local := []unix.Iovec{{Base: &b[0], Len: 8}}
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: 8}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	return err == nil && n == 8 && string(b[:]) == probeMagic
}

// readPeer reads len(dst) bytes at addr in the peer's memory into dst, in
// pieces between which the peer's urgent frames are delivered. The
// connection is checked after the read: open, the peer lived through it
// (its process id was not reused) and had not given up the frame.
func (p *pair) readPeer(dst []byte, addr uint64) error {
	for off := 0; off < len(dst); {
		n := min(cmaPiece, len(dst)-off)
		local := []unix.Iovec{{Base: &dst[off], Len: uint64(n)}}
		remote := []unix.RemoteIovec{{Base: uintptr(addr) + uintptr(off), Len: n}}
		got, err := unix.ProcessVMReadv(p.pid, local, remote, 0)
		if err != nil || got != n {
			return fmt.Errorf("rank %d's payload (%d of %d bytes read): %v", p.rank, off+max(got, 0), len(dst), errOr(err, "short read"))
		}
		off += n
		if off < len(dst) {
			if _, err := p.drainUrgent(); err != nil {
				return err
			}
		}
	}
	if !p.open() {
		return fmt.Errorf("rank %d ended while its payload was read", p.rank)
	}
	return nil
}

// open reports whether p's connection has neither ended nor carries the
// goodbye.
func (p *pair) open() bool {
	rc, err := p.c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	rc.Control(func(fd uintptr) {
		var b [1]byte
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		ok = err == unix.EAGAIN
	})
	return ok && p.state.Load() == alive
}

// --- pair set-up ---------------------------------------------------------

func (t *Transport) acceptLoop() {
	defer t.wg.Done()
	for {
		c, err := t.ln.AcceptUnix()
		if err != nil {
			return
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.hs[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.accept(c)
	}
}

// readFds reads exactly len(b) bytes from c and the descriptors sent with
// them (want of them).
func readFds(c *net.UnixConn, b []byte, want int) ([]int, error) {
	oob := make([]byte, unix.CmsgSpace(4*want))
	n, oobn, _, _, err := c.ReadMsgUnix(b, oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if oobn > 0 {
		msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		if perr == nil {
			for i := range msgs {
				if f, e := unix.ParseUnixRights(&msgs[i]); e == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	if n < len(b) {
		if _, err := io.ReadFull(c, b[n:]); err != nil {
			closeFds(fds)
			return nil, err
		}
	}
	if len(fds) != want {
		closeFds(fds)
		return nil, fmt.Errorf("%d descriptors passed, want %d", len(fds), want)
	}
	return fds, nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// accept answers a peer's dial: it carries the peer's rank, the segment
// and the peer's doorbell. When both ranks dial each other at once, the
// dial of the lower rank wins; the other is refused.
func (t *Transport) accept(c *net.UnixConn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.hs, c)
		t.mu.Unlock()
	}()
	c.SetDeadline(time.Now().Add(t.cfg.ConnectTimeout))
	var hello [helloSize]byte
	fds, err := readFds(c, hello[:], 2)
	if err != nil || binary.LittleEndian.Uint32(hello[0:]) != helloMagic {
		closeFds(fds)
		c.Close()
		return
	}
	peer := int(binary.LittleEndian.Uint64(hello[4:]))
	pid := int(binary.LittleEndian.Uint32(hello[12:]))
	probe := binary.LittleEndian.Uint64(hello[16:])
	defer closeFds(fds)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.Close()
		return
	}
	p := t.pairLocked(peer)
	if p.up.Load() || (p.dialing && peer > t.cfg.Self) {
		t.mu.Unlock()
		reply := t.reply(replyRefuse)
		c.Write(reply[:])
		c.Close()
		return
	}
	seg, err := mapRegion(fds[0], segSize)
	if err != nil {
		t.mu.Unlock()
		c.Close()
		return
	}
	pbell, err := mapRegion(fds[1], bellSize)
	if err != nil {
		seg.unmap()
		t.mu.Unlock()
		c.Close()
		return
	}
	p.pid = pid
	if !t.cfg.NoCMA && canRead(pid, probe) {
		viewDir(seg, 0).cma.Store(1)
	}
	t.establishLocked(p, c, seg, pbell, 1)
	t.mu.Unlock()
	reply := t.reply(replyAccept)
	_, _, err = c.WriteMsgUnix(reply[:], unix.UnixRights(t.bellFd), nil)
	c.SetDeadline(time.Time{})
	if err != nil {
		c.Close() // the watcher reports the peer lost
	}
}

// selfLocked sets up the pair of this rank with itself: one direction of
// a segment of its own, this transport's doorbell, no connection (it
// cannot be lost); t.mu held.
func (t *Transport) selfLocked(p *pair) error {
	seg, fd, err := newRegion("ftmpi-self", segSize)
	if err != nil {
		return err
	}
	unix.Close(fd)
	p.seg, p.pbell = seg, t.bell
	p.in = viewDir(seg, 0)
	p.out = p.in
	p.up.Store(true)
	p.changed()
	rx := append(append([]*pair(nil), *t.rx.Load()...), p)
	t.rx.Store(&rx)
	return nil
}

// establishLocked makes p up on connection c and segment seg, where this
// rank receives on direction in; t.mu held.
func (t *Transport) establishLocked(p *pair, c *net.UnixConn, seg, pbell region, in int) {
	p.c, p.seg, p.pbell = c, seg, pbell
	p.in, p.out = viewDir(seg, in), viewDir(seg, 1-in)
	p.expect = false
	p.up.Store(true)
	p.changed()
	rx := append(append([]*pair(nil), *t.rx.Load()...), p)
	t.rx.Store(&rx)
	t.ringSelf() // the peer may have published (and rung) before the pair was polled
	t.wg.Add(1)
	go t.watch(p)
	p.mu.Lock()
	if p.writing {
		p.out.wakeProducer()
	}
	p.mu.Unlock()
}

// watch reads p's socket, which carries nothing but the goodbye: its end
// is the peer's.
func (t *Transport) watch(p *pair) {
	defer t.wg.Done()
	var b [1]byte
	n, err := p.c.Read(b[:])
	st := lost
	switch {
	case n == 1 && b[0] == byeByte:
		st = gone
	case err == nil || errors.Is(err, io.EOF):
		err = fmt.Errorf("connection from rank %d closed without goodbye", p.rank)
	}
	p.why = err
	p.state.Store(st)
	p.fail(fmt.Errorf("%w: rank %d: %v", transport.ErrPeerLost, p.rank, errOr(err, "it closed its transport")))
	t.ringSelf()
}

// connect sets p up, dialling the peer or waiting for the peer's own
// dial. Only p's writer goroutine calls it.
func (t *Transport) connect(p *pair) error {
	deadline := time.NewTimer(t.cfg.ConnectTimeout)
	defer deadline.Stop()
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return transport.ErrClosed
		}
		if p.up.Load() {
			t.mu.Unlock()
			return nil
		}
		if p.err != nil {
			err := p.err
			t.mu.Unlock()
			return err
		}
		if p.dialing || p.expect {
			ready := p.ready
			t.mu.Unlock()
			select {
			case <-ready:
			case <-deadline.C:
				return fmt.Errorf("connect to rank %d: no connection after %v", p.rank, t.cfg.ConnectTimeout)
			}
			continue
		}
		if p.rank == t.cfg.Self {
			err := t.selfLocked(p)
			t.mu.Unlock()
			return err
		}
		p.dialing = true
		t.mu.Unlock()
		err := t.dial(p)
		t.mu.Lock()
		p.dialing = false
		if err != nil && !p.up.Load() {
			if errors.Is(err, errRefused) {
				p.expect = true
			} else {
				p.err = err
			}
		}
		p.changed()
		t.mu.Unlock()
	}
}

var errRefused = errors.New("refused")

// The handshake: the dialler's hello (magic, rank, process id, probe
// address; with the segment's and its doorbell's descriptors) and the
// reply (accept or refuse, process id, probe address; with the doorbell's
// descriptor when accepted).
const (
	helloSize = 24
	replySize = 13
)

func (t *Transport) hello() (b [helloSize]byte) {
	binary.LittleEndian.PutUint32(b[0:], helloMagic)
	binary.LittleEndian.PutUint64(b[4:], uint64(t.cfg.Self))
	binary.LittleEndian.PutUint32(b[12:], uint32(t.pid))
	binary.LittleEndian.PutUint64(b[16:], uint64(uintptr(unsafe.Pointer(&t.probe[0]))))
	return b
}

func (t *Transport) reply(status byte) (b [replySize]byte) {
	b[0] = status
	binary.LittleEndian.PutUint32(b[1:], uint32(t.pid))
	binary.LittleEndian.PutUint64(b[5:], uint64(uintptr(unsafe.Pointer(&t.probe[0]))))
	return b
}

// dial connects to p's peer, creates the segment and passes it; on
// acceptance p is up.
func (t *Transport) dial(p *pair) error {
	addr := t.addrOf(p.rank)
	if addr == "" {
		return fmt.Errorf("no address for rank %d", p.rank)
	}
	d := net.Dialer{Timeout: t.cfg.ConnectTimeout}
	nc, err := d.DialContext(t.ctx, "unix", addr)
	if err != nil {
		return fmt.Errorf("connect to rank %d at %s: %w", p.rank, addr, err)
	}
	c := nc.(*net.UnixConn)
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.Close()
		return transport.ErrClosed
	}
	t.hs[c] = struct{}{}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.hs, c)
		t.mu.Unlock()
	}()
	seg, segFd, err := newRegion("ftmpi-pair", segSize)
	if err != nil {
		c.Close()
		return err
	}
	defer unix.Close(segFd) // the peer has its own descriptor once it read the hello
	hello := t.hello()
	c.SetDeadline(time.Now().Add(t.cfg.ConnectTimeout))
	fail := func(err error) error {
		seg.unmap()
		c.Close()
		return err
	}
	if _, _, err := c.WriteMsgUnix(hello[:], unix.UnixRights(segFd, t.bellFd), nil); err != nil {
		return fail(fmt.Errorf("connect to rank %d: %w", p.rank, err))
	}
	var reply [replySize]byte
	c.SetReadDeadline(time.Now().Add(t.cfg.ConnectTimeout))
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := c.ReadMsgUnix(reply[:], oob)
	var fds []int
	if err == nil && oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil && len(msgs) == 1 {
			fds, _ = unix.ParseUnixRights(&msgs[0])
		}
	}
	if err == nil && n < replySize {
		_, err = io.ReadFull(c, reply[n:])
	}
	if err != nil {
		closeFds(fds)
		return fail(fmt.Errorf("connect to rank %d: no handshake reply: %w", p.rank, err))
	}
	if reply[0] != replyAccept {
		closeFds(fds)
		return fail(errRefused)
	}
	if len(fds) != 1 {
		closeFds(fds)
		return fail(fmt.Errorf("connect to rank %d: %d descriptors in the reply, want its doorbell", p.rank, len(fds)))
	}
	pid := int(binary.LittleEndian.Uint32(reply[1:]))
	probe := binary.LittleEndian.Uint64(reply[5:])
	pbell, err := mapRegion(fds[0], bellSize)
	unix.Close(fds[0])
	if err != nil {
		return fail(fmt.Errorf("connect to rank %d: doorbell: %w", p.rank, err))
	}
	c.SetDeadline(time.Time{})
	t.mu.Lock()
	if t.closed || p.up.Load() {
		t.mu.Unlock()
		pbell.unmap()
		return fail(transport.ErrClosed)
	}
	p.pid = pid
	if !t.cfg.NoCMA && canRead(pid, probe) {
		viewDir(seg, 1).cma.Store(1)
	}
	t.establishLocked(p, c, seg, pbell, 0)
	t.mu.Unlock()
	return nil
}
