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
// Waiting: every process has a doorbell, a page its peers map and an
// eventfd they hold (both passed at set-up); a sender looks at the page
// after publishing and writes the eventfd only when the receiver said it
// sleeps and no goroutine of it polls, so the hot path stays a poll.
// The rings are polled by one goroutine at a time: the receiver (one
// goroutine per transport, polling every ring), or a goroutine waiting
// for its own request (PollUntil: caller-driven progress, which saves the
// two goroutine switches of a hand-over), which delivers bulk frames
// inline and leaves urgent frames, payloads read from the sender's memory
// and the end of a peer to the receiver. The receiver spins briefly when told to (ranks
// do not outnumber cores) and no caller polls, then sleeps reading
// the eventfd through the Go runtime's netpoller: an idle receiver holds
// no thread in a system call (a futex did, and the runtime's monitor ran
// to take its processor back at every sleep: a quarter of the CPU of an
// idle job of 500 ranks on 2 cores, issue 24), and each sleep is bounded
// (sleepBound: longer when many ranks share a core) only against a lost
// wake-up. A polling caller offers its core to other threads
// (sched_yield) at every check once it has polled a quarter of its budget
// or after it saw its thread lose the core (a crowded host), so a peer
// sharing the core runs instead of waiting for the budget's end. A writer that finds a ring full waits on the direction's
// space word, bumped by the consumer; a peer's death or Close wakes it
// too.
//
// Set-up (setup.go, hello.go): a pair is set up only between processes
// that proved the job's secret to each other (wireauth, protocol
// ProtoShm, before any descriptor is passed or accepted); the dialler's
// process id is the one its handshake proved, and it must be a process of
// this host's part of the job (the peer table). The accept loop is
// internal/acceptloop's, so no flood of connections stops it. The memory
// files are sealed against resizing before they are passed, and a
// receiver checks the seals and the size before it maps one; a refused
// set-up is logged (rate-limited) and is a failed connection attempt. A
// malformed ring record is logged and the peer treated as lost.
//
// The package must not interpret frames beyond their length and its
// reserved bits, and keeps no process-global state.
package shm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/peertab"
	"github.com/ftmpi/ftmpi/internal/wireauth"
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

	// Peers is how many processes may set up a pair with this one at
	// once (the job's size): the listener keeps at least that many
	// connections waiting for their handshake (acceptloop.CapFor). 0: the
	// default cap.
	Peers int

	// NoCMA makes every payload this process sends or receives travel
	// through the rings, even where the receiver may read the sender's
	// memory (process_vm_readv). Otherwise whether a peer's large frames
	// are read from its memory is this process's choice, the reader's (it
	// tries a read at the pair's set-up), and the peer's NoCMA.
	NoCMA bool

	// Auth is the job's secret: every pair set-up, dialled or accepted,
	// runs the wireauth handshake (protocol wireauth.ProtoShm, scope
	// Scope, the two process ids) before any descriptor is passed, and a
	// connection that fails it is closed and logged. nil: no handshake,
	// for tests and in-process use only.
	Auth *wireauth.Key
	// AuthLater (with a nil Auth): the secret comes later, by SetAuth
	// before SetPeers; set-ups wait for it.
	AuthLater bool
	Scope     uint64 // what the pairs belong to; both ends must agree
	// Log receives why a set-up was refused and why a pair was closed for
	// a malformed record (nil: standard error).
	Log func(msg string)

	beforePublish func()                                                                    // tests: runs between writing a record and publishing it
	fastStep      func(step int)                                                            // tests: runs at each step of sendFast (1: token taken, 2: checked, 3: published, 4: peer woken)
	afterPartial  func(p *pair)                                                             // tests: runs once directLocked let the token go with part of a chunked frame written
	kernelYield   func()                                                                    // tests: replaces sched_yield (Transport.sysYield)
	maxPending    int                                                                       // tests: acceptloop.Config.MaxPending
	logBurst      int                                                                       // tests: the refusals logged per window (acceptloop.RateLog.Burst)
	sleepMax      time.Duration                                                             // tests: the longest doorbell sleep, not scaled (0: sleepMax scaled by sleepBound), long to make a lost wake-up a hang
	cores         int                                                                       // tests: the host's cores for sleepBound (0: runtime.NumCPU)
	onSleep       func(time.Duration)                                                       // tests: called as the receiver goes to sleep on the doorbell, with the sleep's bound
	onLastLook    func()                                                                    // tests: called as a caller polls once more on its way out of PollUntil (leavePoll)
	vmRead        func(pid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) // tests: replaces process_vm_readv (the probe and payload reads)
}

const (
	byeByte        = 0xb7
	connectTimeout = 30 * time.Second
	closeFlush     = time.Second            // how long Close lets queued frames drain
	sleepMax       = 100 * time.Millisecond // longest doorbell sleep up to sleepFreeLoad ranks a core (a lost wake-up costs at most this)
	sleepFreeLoad  = 8                      // ranks per core up to which the receiver's sleep bound is sleepMax
	sleepMost      = 5 * time.Second        // the longest sleep bound, however many ranks share a core
)

// sleepBound is the longest doorbell sleep of a receiver on a host where
// local ranks of the job share cores: base up to sleepFreeLoad ranks a
// core, then scaled by ranks per core / sleepFreeLoad (as the launcher
// scales the heartbeat, internal/launch: withHeartbeat), at most
// sleepMost. The bound only limits what a lost wake-up would cost: a
// sender wakes a sleeping receiver at once. An idle rank wakes once per
// bound, so 2,000 ranks on 2 cores waking every 100 ms would cost 20,000
// process wake-ups a second.
func sleepBound(base time.Duration, local, cores int) time.Duration {
	cores = max(1, cores)
	load := (max(0, local) + cores - 1) / cores
	if load <= sleepFreeLoad {
		return base
	}
	if time.Duration(load/sleepFreeLoad) >= sleepMost/max(base, 1) {
		return max(base, sleepMost)
	}
	return max(base, min(base*time.Duration(load)/sleepFreeLoad, sleepMost))
}

// Peer states (pair.state).
const (
	alive int32 = iota
	gone        // orderly goodbye
	lost        // the socket broke without one
)

// Transport implements transport.Transport over shared memory.
type Transport struct {
	cfg   Config
	whole transport.WholeHandler // cfg.Handler, when it takes whole frames
	uid   int
	probe [8]byte // a peer reads it to learn whether it may read this process's memory
	ln    *net.UnixListener
	path  string
	addrs atomic.Pointer[[]string]
	// resolve makes sure a peer's address is in addrs before this
	// process dials it (SetResolve; nil: the table is complete).
	resolve atomic.Pointer[func(to int) error]

	key       atomic.Pointer[wireauth.Key] // the job's secret (Config.Auth, SetAuth)
	authReady chan struct{}                // Config.AuthLater: closed by SetAuth

	refusals *acceptloop.RateLog // refused set-ups: a burst per window, then counted

	bell      region
	bellFd    int
	bellSleep *atomic.Uint32
	bellPoll  *atomic.Uint32     // callers polling now (PollUntil); senders do not wake the receiver while it is not 0
	bellBeat  *atomic.Uint32     // bumped every pollLetGo polls of a caller (PollUntil): peers see whether it runs
	evFd      int                // the doorbell's eventfd: senders write it to wake the sleeping receiver
	ev        *os.File           // evFd, waited on through the runtime's netpoller (never call its Fd: that makes it blocking)
	evRC      syscall.RawConn    // ev's, for reads by readEventfd
	evRead    func(uintptr) bool // readEventfd bound to t
	evBuf     [8]byte            // the receiver's read of ev
	sleepFor  atomic.Int64       // the receiver's longest sleep (sleepBound, set by SetPeers)

	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	pairs    map[int]*pair
	fast     peertab.Table[pair]    // pairs without the lock (pair's path on every send)
	shut     atomic.Bool            // closed, readable without the lock
	hs       map[*net.UnixConn]bool // connections in their handshake: true for this process's dials
	peersSet chan struct{}          // closed and replaced by SetPeers
	closed   bool
	closeBy  atomic.Int64 // unix nanos after which writers give up (0: not closing)

	rx        atomic.Pointer[[]*pair] // the pairs the receiver polls
	rxLock    atomic.Int32            // who polls the rings now: 0 nobody, rxByReceiver, rxByCaller or rxByDrain
	handoff   atomic.Bool             // a caller left frames to the receiver: callers do not poll until it has
	rxMissed  atomic.Int32            // the receiver found a caller holding the rings on its way to sleep
	rxGoid    atomic.Int64            // the receiver goroutine's id (Drain)
	drainGoid atomic.Int64            // the id of the goroutine draining a pair (Drain), while rxLock is rxByDrain
	goidAsked atomic.Int64            // how many times Drain asked for its caller's goroutine id (tests)
	cur       *pair                   // the pair whose frames the holder of rxLock delivers now (Drain); guarded by rxLock
	rxParked  atomic.Int32            // the receiver waits on rxWake for callers to stop polling
	rxWake    chan struct{}           // its token (capacity 1)
	stop      atomic.Bool
	rxDone    chan struct{}

	crowdedUntil atomic.Int64 // unix nanos until which the host counts as crowded (noteGap)

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
	pid     int           // the peer's process id (the kernel's word: SO_PEERCRED)
	byeOnce sync.Once
	seg     region
	pbell   region // the peer's doorbell
	pev     int    // the peer's doorbell eventfd (this transport's own for the pair with itself)
	out     dirView
	in      dirView
	state   atomic.Int32
	why     error // why the peer was lost; written before state

	// Sending without the lock (sendFast): prod is the producer token
	// (prodFree, prodHeld, prodGone), slow whether a frame must take the
	// locked path (setSlowLocked).
	prod atomic.Int32
	slow atomic.Bool

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

	// The peer's doorbell beat at the last look of a polling caller
	// (peerStalled); guarded by rxLock.
	beat     uint32
	beatSeen bool
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
	if cfg.Auth != nil && cfg.AuthLater {
		return nil, errors.New("shm: Auth and AuthLater both set")
	}
	t := &Transport{cfg: cfg, uid: os.Geteuid(), pairs: map[int]*pair{}, hs: map[*net.UnixConn]bool{},
		peersSet: make(chan struct{}), rxDone: make(chan struct{}), rxWake: make(chan struct{}, 1)}
	t.whole, _ = cfg.Handler.(transport.WholeHandler)
	copy(t.probe[:], probeMagic)
	t.refusals = &acceptloop.RateLog{Logf: func(msg string) { t.logf("%s", msg) }, Burst: cfg.logBurst}
	if cfg.Auth != nil {
		t.key.Store(cfg.Auth)
	} else if cfg.AuthLater {
		t.authReady = make(chan struct{})
	}
	var err error
	t.bell, t.bellFd, err = newRegion("ftmpi-bell", bellSize)
	if err != nil {
		return nil, fmt.Errorf("shm doorbell: %w", err)
	}
	t.bellSleep, t.bellPoll, t.bellBeat = t.bell.u32(offBellSleep), t.bell.u32(offBellPoll), t.bell.u32(offBellBeat)
	t.sleepFor.Store(int64(cmp.Or(cfg.sleepMax, sleepMax))) // scaled by SetPeers unless a test fixed it
	t.evFd, err = newEventfd()
	if err != nil {
		t.bell.unmap()
		unix.Close(t.bellFd)
		return nil, fmt.Errorf("shm doorbell: %w", err)
	}
	t.ev = os.NewFile(uintptr(t.evFd), "ftmpi-bell")
	t.evRC, err = t.ev.SyscallConn()
	if err == nil {
		err = t.ev.SetReadDeadline(time.Time{})
	}
	t.evRead = t.readEventfd
	if err != nil {
		// Not in the netpoller: a sleep would return at once.
		t.ev.Close()
		t.bell.unmap()
		unix.Close(t.bellFd)
		return nil, fmt.Errorf("shm doorbell: the eventfd cannot be waited on: %w", err)
	}
	t.path = filepath.Join(cfg.Dir, cfg.Name+".sock")
	_ = os.Remove(t.path)
	t.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: t.path, Net: "unix"})
	if err != nil {
		t.bell.unmap()
		unix.Close(t.bellFd)
		t.ev.Close()
		return nil, fmt.Errorf("listen on unix socket %s: %w", t.path, err)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	empty := []*pair{}
	t.rx.Store(&empty)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		acceptloop.Serve(t.ln, acceptloop.Config{
			Name:             "shared-memory listener " + t.path,
			HandshakeTimeout: min(cfg.ConnectTimeout, acceptloop.DefaultHandshakeTimeout),
			MaxPending:       cmp.Or(cfg.maxPending, acceptloop.CapFor(cfg.Peers)),
			Logf:             t.logf,
		}, t.handle)
	}()
	go t.recvLoop()
	return t, nil
}

// SetAuth gives the job's secret to a transport made with
// Config.AuthLater, before SetPeers; once only.
func (t *Transport) SetAuth(k *wireauth.Key) error {
	if t.authReady == nil || k == nil {
		return errors.New("shm: SetAuth needs Config.AuthLater and a key")
	}
	if !t.key.CompareAndSwap(nil, k) {
		return errors.New("shm: SetAuth called twice")
	}
	close(t.authReady)
	return nil
}

// logf logs why a set-up was refused or a pair closed.
func (t *Transport) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if t.cfg.Log != nil {
		t.cfg.Log(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "ftmpi: process %d: %s\n", t.cfg.Self, msg)
}

// refused logs a refused set-up (rate-limited: a flood of bad
// connections does not flood the log).
func (t *Transport) refused(err error) {
	t.refusals.Printf("refused a shared-memory set-up: %v", err)
}

// Addr is the address peers give SetPeers for this rank.
func (t *Transport) Addr() string { return t.path }

// SetPeers installs the address table, indexed by rank: "" for ranks
// reached through the fallback. Only the processes with an address here
// may set up a pair with this one (a set-up from a process beyond the
// table waits for a SetPeers that names it: a spawned process).
func (t *Transport) SetPeers(addrs []string) {
	if t.cfg.sleepMax == 0 {
		local := 0
		for _, a := range addrs {
			if a != "" {
				local++
			}
		}
		t.sleepFor.Store(int64(sleepBound(sleepMax, local, cmp.Or(t.cfg.cores, runtime.NumCPU()))))
	}
	t.mu.Lock()
	t.addrs.Store(&addrs)
	close(t.peersSet)
	t.peersSet = make(chan struct{})
	t.mu.Unlock()
}

// SetResolve installs fn, called on a pair's writer goroutine when this
// process must set the pair up itself (the peer did not set it up first),
// before the dial: fn makes sure the peer's address is in the table
// (SetPeers), reading it if need be (a bootstrap that reads a peer's
// endpoint on first use; the table holds a placeholder meanwhile, so that
// the peer's own set-up is accepted). A pair the peer set up first never
// resolves. An error of fn fails the pair: its frames fail with it. Set
// before the first Send. It has no MPI counterpart.
func (t *Transport) SetResolve(fn func(to int) error) { t.resolve.Store(&fn) }

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
		t.fast.Store(r, p)
	}
	return p
}

// pair returns the state of peer r: without a lock once it exists
// (peertab), else created under t.mu.
func (t *Transport) pair(r int) (*pair, error) {
	if p := t.fast.Load(r); p != nil {
		if t.shut.Load() {
			return nil, transport.ErrClosed
		}
		return p, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transport.ErrClosed
	}
	return t.pairLocked(r), nil
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
	t.shut.Store(true)
	t.closeBy.Store(time.Now().Add(closeFlush).UnixNano())
	t.cancel()
	t.ln.Close()
	for c, dialled := range t.hs {
		if dialled {
			// A set-up this process began (a frame queued just before
			// Close: the detector's first heartbeat) may finish within
			// the flush time, and then ends with a goodbye: cut in the
			// middle, the peer would log an unproved claim.
			c.SetDeadline(time.Unix(0, t.closeBy.Load()))
		} else {
			c.Close()
		}
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
		p.setSlowLocked()
		// A fast sender that took the token before sending ended
		// finishes its record before the goodbye.
		if p.lockProd() {
			p.prod.Store(prodFree)
		}
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
	// Callers may still be polling: take the rings from them for good
	// before they are unmapped (a caller sees stop and lets go).
	for !t.rxLock.CompareAndSwap(0, rxByReceiver) {
		runtime.Gosched()
	}
	t.wg.Wait()
	for _, p := range pairs {
		p.mu.Lock()
		p.unmapLocked()
		p.mu.Unlock()
	}
	t.bell.unmap()
	unix.Close(t.bellFd)
	t.ev.Close()
	os.Remove(t.path)
	t.refusals.Stop()
	if t.cfg.Fallback != nil {
		return t.cfg.Fallback.Close()
	}
	return nil
}
