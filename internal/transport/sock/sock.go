// Package sock is the socket transport: Unix-domain sockets between ranks on
// the same host and TCP (with TCP_NODELAY) between hosts, or on one host when
// TCP is forced. Connections are opened lazily on the first frame to a peer
// and are bidirectional: each pair of ranks ends up with one connection that
// both send on. When both ranks dial each other at the same moment, the
// connection dialled by the lower rank wins and the other is refused in the
// handshake, before any frame travels on it. With the job's secret
// (Config.Auth) the handshake is wireauth's: both ends prove they know it
// and who they are; a connection that fails it is closed and logged.
//
// Accepting: each listener's loop is package acceptloop's, so no client
// can stop it: out of descriptors it retries; a connection whose hello is
// not verified within ConnectTimeout is closed, and so is the oldest of
// too many such connections (a flood holds a bounded number of this
// process's descriptors); buffers are allocated only once the hello is
// verified; refused hellos are logged at a bounded rate. A dial that
// finds this process out of descriptors is retried until ConnectTimeout.
//
// Validation: a frame that breaks the wire rules (reserved flag bits, a
// whole frame over chunkSize, a chunk out of place), or that the handler
// refuses (transport.Reject), closes its connection with the defect
// logged, and the peer is reported lost; nothing panics on peer input.
//
// Reading: each connection has one reader goroutine that spins briefly on
// non-blocking reads (yielding the processor) before parking in the poller,
// and reads large payloads straight into the buffer the handler names.
// Once its handshake is done a connection's socket leaves the runtime's
// poller (fdconn.go): it is reported to its reader only while armed, and
// the reader leaves it disarmed while polling callers read it, so frames
// that callers read wake no thread; an idle connection is armed and holds
// no thread.
// Every frame handed to the handler ends in one Payload call, with an error
// when the connection broke inside it (see package transport). A goroutine
// waiting for a request may read the connections itself (PollUntil:
// caller-driven progress, see recv.go); one owner at a time reads a
// connection.
//
// Writing: each peer has a send queue with three lanes (urgent, bulk and
// deferred: the frames Posted with a transport.Deferrable Done, rendezvous
// payloads, written once the other two are empty, so that a request or a
// clear to send is never queued behind a payload) and
// at most one goroutine writing to its connection at a time: a Send to an
// idle connection writes from the caller's goroutine (the zero-copy fast
// path: header and payload in one writev); otherwise the frame is queued
// and the peer's writer goroutine (one per peer, started on first need)
// writes it. Payloads above chunkSize go
// out in chunks, and queued urgent frames are written between chunks, so
// heartbeats and revocations never wait for a whole bulk transfer. No lock
// is held across a socket write; a slow or stopped peer only stalls its own
// queue. Connection set-up (dialling, the handshake) happens in the peer's
// writer goroutine too, never in a Post caller.
//
// Wire: a frame is its 48-byte header and its payload; a chunked frame's
// header carries flagChunked and its payload follows as chunk frames
// (flagConn, kind connChunk), between which whole urgent frames may appear.
// flagConn frames (chunks and the goodbye) use reserved header bits, not
// the protocol's frame kinds, and never reach the handler. The package
// must not interpret frames beyond their length and these bits.
package sock

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/peertab"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// Mode selects which socket family is used between ranks of the same host.
type Mode string

// Modes.
const (
	ModeAuto Mode = "auto" // Unix sockets on one host, TCP across hosts
	ModeUnix Mode = "unix" // Unix sockets (same host only)
	ModeTCP  Mode = "tcp"  // TCP everywhere
)

// Peer is how to reach a rank.
type Peer struct {
	Host string
	Unix string // socket path, "" if none
	TCP  string // host:port, "" if none
	// Nonce is the peer's published handshake nonce (hex, Self with
	// Config.Auth): with it the handshake takes one round trip
	// (wireauth.FastDial) instead of two. "" if none.
	Nonce string
}

// Config configures a Transport.
type Config struct {
	Self    int                  // this rank
	Host    string               // this rank's host id
	Mode    Mode                 // "" means ModeAuto
	Dir     string               // directory for the Unix socket ("" disables Unix)
	TCPAddr string               // listen address for TCP, "" means 127.0.0.1:0
	SpinFn  func() time.Duration // reader spin before parking (read per connection); nil or 0 disables
	// Yield makes a spinning reader give the processor to other processes
	// (sched_yield) between attempts instead of only to other goroutines:
	// the right choice when ranks outnumber cores.
	Yield   bool
	Handler transport.Handler
	Name    string // socket file name stem (default "r<Self>")
	// ConnectTimeout bounds setting up a connection to a peer (dial and
	// handshake); 0 means 30 s.
	ConnectTimeout time.Duration
	// Auth is the job's secret: every connection, dialled or accepted,
	// runs the wireauth handshake (protocol wireauth.ProtoSock, scope
	// Scope, the two process ids) before any frame, and a connection
	// that fails it is closed and logged. nil: the plain hello (a process
	// id), for tests and in-process use only.
	Auth *wireauth.Key
	// AuthLater (with a nil Auth) means the secret is not known yet at
	// Listen (a bootstrap without a launcher learns it in the same
	// exchange that publishes this transport's address): SetAuth gives
	// it, before SetPeers, and accepted connections wait for it.
	AuthLater bool
	Scope     uint64 // what the connections belong to (the Reinit epoch); both ends must agree
	// Peers is how many processes may dial this one at once (the job's
	// size): the listeners keep at least that many connections waiting
	// for their handshake (acceptloop.CapFor). 0: the default cap.
	Peers int
	// Log receives the reasons connections were refused or closed for a
	// malformed frame (nil: standard error).
	Log func(msg string)
}

// maxProc bounds the process ids a peer may claim.
const maxProc = 1 << 24

const (
	helloMagic  = 0x66746d70 // "ftmp"
	replyAccept = 1
	replyRefuse = 2
	helloSize   = 12 // the plain hello: magic, process id

	connectTimeout = 30 * time.Second
	closeFlush     = time.Second // how long Close lets queued frames drain
	sockBuf        = 4 << 20
	smallWrite     = 16 << 10
	// chunkSize is the largest piece of a payload written at once: urgent
	// frames wait at most for one chunk.
	chunkSize = 1 << 20

	// Reserved header bits (transport.FlagsReserved) used on the wire.
	flagConn    uint16 = 1 << 14 // a frame of this package; Kind is a conn* kind
	flagChunked uint16 = 1 << 13 // the payload follows as connChunk frames
	connBye     uint8  = 1       // orderly goodbye: no more frames on this connection
	connChunk   uint8  = 2       // a piece of the payload of the chunked frame being read

	// flagsKnown are the reserved bits that may appear on the wire.
	flagsKnown = transport.FlagUrgent | flagConn | flagChunked
)

// Transport implements transport.Transport over sockets.
type Transport struct {
	cfg   Config
	peers atomic.Pointer[[]Peer]
	// resolve makes sure a peer's address is in peers before this
	// process dials it (SetResolve; nil: the table is complete).
	resolve atomic.Pointer[func(to int) error]

	lnUnix net.Listener
	lnTCP  net.Listener
	auth   *wireauth.Listener // the accepting side of handshakes (Config.Auth)
	// refused logs the connections refused in their handshake: a flood
	// of them gets a few lines and a count, not a line each.
	refused *acceptloop.RateLog
	// With Config.AuthLater: the published nonce, and a channel closed by
	// SetAuth (then auth and cfg.Auth are set).
	nonce     [wireauth.NonceSize]byte
	authReady chan struct{}

	ctx    context.Context // cancelled by Close: writers finish, dials give up
	cancel context.CancelFunc

	mu     sync.Mutex
	sendTo map[int]*peerState
	// fast is sendTo without the lock (peer's path on every send);
	// shut is closed, readable without it.
	fast   peertab.Table[peerState]
	shut   atomic.Bool
	conns  map[*conn]struct{}
	dials  map[net.Conn]struct{} // connections in their handshake
	closed bool

	wg sync.WaitGroup

	// Caller-driven progress (recv.go): the connections' read sides, and
	// how many goroutines poll them.
	rxs     atomic.Pointer[[]*rx]
	hot     atomic.Pointer[rx] // the connection that last gave a polling caller frames
	polling atomic.Int32
	// pollSeq counts PollUntil calls: a reader whose connection callers
	// read keeps readability disarmed while it moves (rx.parkArm).
	pollSeq atomic.Uint64
	gaveUp  atomic.Uint64 // PollUntil calls that ended with their condition unmet
}

// peerState is how this rank sends to one peer.
type peerState struct {
	rank int

	// Connection set-up; guarded by Transport.mu.
	send    *conn         // the connection frames to this peer go on; fixed once set
	err     error         // dial error: the peer is unreachable
	dialing bool          // a dial to this peer is in progress
	expect  bool          // our dial was refused: the peer's own connection is on its way
	ready   chan struct{} // closed when send, err or dialing changes

	// Sending; guarded by mu (never held across I/O).
	mu     sync.Mutex
	idle   sync.Cond // broadcast when busy clears
	cc     *conn     // send, once established
	urgent fifo
	bulk   fifo
	// deferred holds the frames Posted with a transport.Deferrable Done
	// (rendezvous payloads): written after urgent and bulk, so a request
	// or a clear to send never waits behind a queued payload.
	deferred fifo
	busy     bool          // a goroutine owns the write side of cc
	werr     error         // set once: every later frame fails with it
	wake     chan struct{} // wakes the writer goroutine
	writing  bool          // the writer goroutine was started
}

func (ps *peerState) changed() {
	if ps.ready != nil {
		close(ps.ready)
	}
	ps.ready = make(chan struct{})
}

func (ps *peerState) queued() bool {
	return ps.urgent.len() > 0 || ps.bulk.len() > 0 || ps.deferred.len() > 0
}

// item is a queued frame.
type item struct {
	h       transport.Header
	payload []byte
	done    transport.Done
	w       *waiter // a Send waiting for its frame
}

func (it *item) finish(err error) {
	if it.done != nil {
		it.done.SendDone(err)
	}
	if it.w != nil {
		it.w.ch <- err
	}
}

// waiter is how a Send that had to queue its frame learns the outcome.
type waiter struct{ ch chan error }

var waiterPool = sync.Pool{New: func() any { return &waiter{ch: make(chan error, 1)} }}

// fifo is a queue of items that reuses its storage.
type fifo struct {
	q    []item
	head int
}

func (f *fifo) len() int     { return len(f.q) - f.head }
func (f *fifo) push(it item) { f.q = append(f.q, it) }
func (f *fifo) pop() item {
	it := f.q[f.head]
	f.q[f.head] = item{}
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	}
	return it
}

// conn is one socket; its reader runs in its own goroutine. Writes are
// made by the goroutine that owns the peer's busy flag (or by Close).
type conn struct {
	c       net.Conn
	scratch []byte
	hdr     [transport.HeaderSize]byte
	bufs    [2][]byte
	nb      net.Buffers
}

// Listen creates the listeners and starts accepting. Peers must be set with
// SetPeers before the first Send.
func Listen(cfg Config) (*Transport, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeAuto
	}
	if cfg.Name == "" {
		cfg.Name = "r" + strconv.Itoa(cfg.Self)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	t := &Transport{cfg: cfg, sendTo: make(map[int]*peerState), conns: make(map[*conn]struct{}),
		dials: make(map[net.Conn]struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	if cfg.Auth != nil {
		n, err := wireauth.Nonce()
		if err != nil {
			return nil, err
		}
		t.auth = wireauth.NewListener(cfg.Auth, n)
	} else if cfg.AuthLater {
		n, err := wireauth.Nonce()
		if err != nil {
			return nil, err
		}
		t.nonce, t.authReady = n, make(chan struct{})
	}
	if cfg.Mode != ModeTCP && cfg.Dir != "" {
		path := filepath.Join(cfg.Dir, cfg.Name+".sock")
		_ = os.Remove(path)
		ln, err := net.Listen("unix", path)
		if err != nil {
			return nil, fmt.Errorf("listen on unix socket %s: %w", path, err)
		}
		t.lnUnix = ln
	}
	if cfg.Mode != ModeUnix {
		addr := cfg.TCPAddr
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.closeListeners()
			return nil, fmt.Errorf("listen on tcp %s: %w", addr, err)
		}
		t.lnTCP = ln
	}
	t.refused = &acceptloop.RateLog{Logf: func(msg string) { t.logf("%s", msg) }}
	if t.lnUnix != nil {
		t.wg.Add(1)
		go t.acceptLoop(t.lnUnix, "unix listener")
	}
	if t.lnTCP != nil {
		t.wg.Add(1)
		go t.acceptLoop(t.lnTCP, "tcp listener")
	}
	return t, nil
}

// Self returns how peers reach this rank.
func (t *Transport) Self() Peer {
	p := Peer{Host: t.cfg.Host}
	if t.lnUnix != nil {
		p.Unix = t.lnUnix.Addr().String()
	}
	if t.lnTCP != nil {
		p.TCP = t.lnTCP.Addr().String()
	}
	switch {
	case t.authReady != nil:
		p.Nonce = hex.EncodeToString(t.nonce[:])
	case t.auth != nil:
		n := t.auth.Nonce()
		p.Nonce = hex.EncodeToString(n[:])
	}
	return p
}

// SetAuth gives the job's secret to a transport made with
// Config.AuthLater, before SetPeers; once only.
func (t *Transport) SetAuth(k *wireauth.Key) error {
	if t.authReady == nil || k == nil {
		return errors.New("sock: SetAuth needs Config.AuthLater and a key")
	}
	select {
	case <-t.authReady:
		return errors.New("sock: SetAuth called twice")
	default:
	}
	t.cfg.Auth = k
	t.auth = wireauth.NewListener(k, t.nonce)
	close(t.authReady)
	return nil
}

// SetPeers installs the address table, indexed by rank.
func (t *Transport) SetPeers(p []Peer) { t.peers.Store(&p) }

// SetResolve installs fn, called on a peer's writer goroutine when this
// process must dial that peer (no connection from it exists yet), before
// the dial: fn makes sure the peer's address is in the table (SetPeers),
// reading it if need be (a bootstrap that reads a peer's endpoint on first
// use). A peer that connected first is never resolved. An error of fn is
// the peer's failure, as a failed dial is: the frames queued for it fail
// with it and the handler is told the peer is lost. Set before the first
// Send. It has no MPI counterpart.
func (t *Transport) SetResolve(fn func(to int) error) { t.resolve.Store(&fn) }

func (t *Transport) closeListeners() {
	if t.lnUnix != nil {
		t.lnUnix.Close()
	}
	if t.lnTCP != nil {
		t.lnTCP.Close()
	}
}

// acceptLoop accepts connections on ln until Close (package acceptloop:
// out of descriptors it retries; a connection whose hello is not verified
// within ConnectTimeout is closed, and so is the oldest of too many such
// connections). Each gets a reader goroutine that runs the handshake.
func (t *Transport) acceptLoop(ln net.Listener, name string) {
	defer t.wg.Done()
	acceptloop.Serve(ln, acceptloop.Config{Name: name, HandshakeTimeout: t.cfg.ConnectTimeout,
		MaxPending: acceptloop.CapFor(t.cfg.Peers),
		Logf:       func(format string, args ...any) { t.logf(format, args...) }},
		func(p *acceptloop.Pending) {
			cc := &conn{c: p.Conn}
			if !t.track(cc) {
				p.Close()
				return
			}
			t.readLoop(cc, -1, p)
		})
}

// untrack forgets a connection that was refused.
func (t *Transport) untrack(cc *conn) {
	t.mu.Lock()
	delete(t.conns, cc)
	t.mu.Unlock()
}

// track registers a connection (and its reader); false after Close.
func (t *Transport) track(cc *conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.conns[cc] = struct{}{}
	t.wg.Add(1)
	return true
}

// peerLocked returns the state of peer r; t.mu held.
func (t *Transport) peerLocked(r int) *peerState {
	ps := t.sendTo[r]
	if ps == nil {
		ps = &peerState{rank: r, ready: make(chan struct{}), wake: make(chan struct{}, 1)}
		ps.idle.L = &ps.mu
		t.sendTo[r] = ps
		t.fast.Store(r, ps)
	}
	return ps
}

// establishLocked makes cc the connection frames to ps go on; t.mu held.
// With own set, the caller owns the write side (busy) and must release it.
func (t *Transport) establishLocked(ps *peerState, cc *conn, own bool) {
	ps.send = cc
	ps.expect = false
	ps.err = nil
	ps.changed()
	ps.mu.Lock()
	ps.cc = cc
	// An error recorded before the peer had a connection is that of a
	// failed dial of this process (not Close's: accepted refuses once the
	// transport is closed, and a dial after Close fails): it ended the
	// frames sent during the dial, not the connection the peer has now
	// made. Kept, every later frame to the peer failed while the peer's
	// frames arrived (the shared-memory transport's bigxfer hang, bd9c0cc).
	ps.werr = nil
	if own {
		ps.busy = true
	}
	ps.mu.Unlock()
}

// accepted decides whether a connection dialled by peer becomes the
// connection both ranks send on. When both ranks dial each other at once,
// the connection dialled by the lower rank wins; the other is refused
// before any frame travels on it. When accepted, the caller owns the write
// side (to send the handshake reply before any frame) and releases it.
func (t *Transport) accepted(peer int, cc *conn) (*peerState, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	ps := t.peerLocked(peer)
	if ps.send != nil || (ps.dialing && peer > t.cfg.Self) {
		return nil, false
	}
	t.establishLocked(ps, cc, true)
	return ps, true
}

// unpolled tunes c and, for a TCP connection (between hosts, where
// callers poll sockets), takes its socket out of the runtime's poller
// (fdConn); if that fails, c is used as it is. Unix connections (same
// host, beside shared memory) stay as they are.
func unpolled(c net.Conn) net.Conn {
	tune(c)
	if _, ok := c.(*net.TCPConn); !ok {
		return c
	}
	if fc, err := newFdConn(c); err == nil {
		return fc
	}
	return c
}

func tune(c net.Conn) {
	switch cc := c.(type) {
	case *net.TCPConn:
		cc.SetNoDelay(true)
		cc.SetReadBuffer(sockBuf)
		cc.SetWriteBuffer(sockBuf)
	case *net.UnixConn:
		cc.SetReadBuffer(sockBuf)
		cc.SetWriteBuffer(sockBuf)
	}
}

// acceptHello reads the hello of an accepted connection (a wireauth
// handshake with Config.Auth, else the plain hello) and returns the
// process id the peer proved (or claimed); answer, non-nil after a
// one-round-trip handshake, makes the reply that carries the verdict.
func (t *Transport) acceptHello(c net.Conn, br *bufio.Reader) (peer int, answer func(byte) []byte, err error) {
	c.SetReadDeadline(time.Now().Add(t.cfg.ConnectTimeout))
	defer c.SetReadDeadline(time.Time{})
	if t.authReady != nil {
		wait := time.NewTimer(t.cfg.ConnectTimeout)
		defer wait.Stop()
		select {
		case <-t.authReady:
		case <-wait.C:
			return 0, nil, errors.New("the job's secret never came (SetAuth)")
		case <-t.ctx.Done():
			return 0, nil, errors.New("transport closed")
		}
	}
	if t.auth != nil {
		h, answer, err := t.auth.Accept(br, c, t.checkHello)
		if err != nil {
			return 0, nil, err
		}
		return int(h.From), answer, nil
	}
	var hello [helloSize]byte
	if _, err := io.ReadFull(br, hello[:]); err != nil {
		return 0, nil, fmt.Errorf("no hello: %w", err)
	}
	peer, err = decodeHello(hello[:], t.cfg.Self)
	return peer, nil, err
}

// checkHello decides whether an authenticated hello may open a connection
// to this process: the right protocol, scope and identities.
func (t *Transport) checkHello(h wireauth.Hello) error {
	switch {
	case h.Proto != wireauth.ProtoSock:
		return fmt.Errorf("protocol %d is not the transport's", h.Proto)
	case h.Scope != t.cfg.Scope:
		return fmt.Errorf("scope %d (an epoch of another time?), this process is in %d", h.Scope, t.cfg.Scope)
	case h.To != uint64(t.cfg.Self):
		return fmt.Errorf("addressed to process %d, this is process %d", h.To, t.cfg.Self)
	}
	return checkPeer(h.From, t.cfg.Self)
}

// checkPeer validates the process id a peer claims (a process may
// connect to itself: one-sided windows send to their own rank).
func checkPeer(from uint64, self int) error {
	if from >= maxProc {
		return fmt.Errorf("claims process id %d (at most %d)", from, maxProc-1)
	}
	return nil
}

// decodeHello parses the plain hello (no Config.Auth).
func decodeHello(b []byte, self int) (int, error) {
	if len(b) != helloSize {
		return 0, fmt.Errorf("hello of %d bytes", len(b))
	}
	if m := binary.LittleEndian.Uint32(b); m != helloMagic {
		return 0, fmt.Errorf("bad hello magic %#x", m)
	}
	from := binary.LittleEndian.Uint64(b[4:])
	if err := checkPeer(from, self); err != nil {
		return 0, err
	}
	return int(from), nil
}

// remote describes the other end of c for a log line.
func remote(c net.Conn) string {
	if a := c.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		return " from " + a.String()
	}
	return ""
}

// logf logs why a connection was refused or closed.
func (t *Transport) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if t.cfg.Log != nil {
		t.cfg.Log(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "ftmpi: process %d: %s\n", t.cfg.Self, msg)
}

// malformedError is a frame that breaks the wire rules: the connection is
// closed with it logged.
type malformedError struct{ err error }

func (e *malformedError) Error() string { return "malformed frame: " + e.err.Error() }

// checkHeader validates what the transport owns in a header: its reserved
// bits and the payload length of a whole frame (a writer chunks every
// payload above chunkSize).
func checkHeader(h *transport.Header) error {
	if bad := h.Flags & transport.FlagsReserved &^ flagsKnown; bad != 0 {
		return fmt.Errorf("unknown transport flags %#x", bad)
	}
	chunked := h.Flags&flagChunked != 0
	switch {
	case h.Flags&flagConn != 0 && chunked:
		return fmt.Errorf("a transport frame marked chunked")
	case chunked && h.N <= chunkSize:
		return fmt.Errorf("a chunked frame of %d bytes (chunks are for payloads over %d)", h.N, chunkSize)
	case !chunked && h.N > chunkSize:
		return fmt.Errorf("a whole frame of %d bytes (at most %d)", h.N, chunkSize)
	}
	return nil
}

// malformed closes the connection of peer for a malformed frame, logs the
// reason and reports the peer lost.
func (t *Transport) malformed(peer int, err error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return
	}
	t.logf("closed the connection from process %d: %v", peer, err)
	t.cfg.Handler.PeerLost(peer, err)
}

// wireErr names a broken connection.
func (t *Transport) wireErr(peer int, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("connection from rank %d closed without goodbye", peer)
	}
	return err
}

func (t *Transport) lost(peer int, err error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return
	}
	t.cfg.Handler.PeerLost(peer, t.wireErr(peer, err))
}

// dialRetries bounds the dials of a connection that the peer closed in
// its handshake (its accept loop, flooded, shed it): a peer that refuses
// this process's hello closes it too, and must not cost more than a
// moment.
const dialRetries = 4

// dial connects to rank to and reports whether it accepted the connection
// as the one both ranks send on. A connection closed in its handshake is
// dialled again a few times, and a dial that finds this process out of
// descriptors is retried until ConnectTimeout (they come back: a flood's
// connections are closed by the accept loops).
func (t *Transport) dial(to int) (net.Conn, bool, error) {
	deadline := time.Now().Add(t.cfg.ConnectTimeout)
	backoff := 5 * time.Millisecond
	logged := false
	for attempt := 0; ; attempt++ {
		c, ok, err := t.dialOnce(to)
		if err == nil || !retryDial(err, attempt) || time.Now().Add(backoff).After(deadline) {
			return c, ok, err
		}
		if !logged && outOfDescriptors(err) {
			logged = true
			t.logf("%v; retrying until descriptors free up (at most %v)", err, t.cfg.ConnectTimeout)
		}
		wait := time.NewTimer(backoff)
		select {
		case <-t.ctx.Done():
			wait.Stop()
			return nil, false, transport.ErrClosed
		case <-wait.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// retryDial says whether dial's attempt number attempt, failed with err,
// is worth another.
func retryDial(err error, attempt int) bool {
	switch {
	case outOfDescriptors(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return attempt < dialRetries
	}
	return false
}

// outOfDescriptors says whether err is this process (or the system) out
// of descriptors or socket buffers.
func outOfDescriptors(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS)
}

// dialOnce is one attempt of dial.
func (t *Transport) dialOnce(to int) (net.Conn, bool, error) {
	pp := t.peers.Load()
	if pp == nil || to < 0 || to >= len(*pp) {
		return nil, false, fmt.Errorf("no address for rank %d", to)
	}
	p := (*pp)[to]
	network, addr := "tcp", p.TCP
	if t.cfg.Mode != ModeTCP && p.Unix != "" && (p.Host == t.cfg.Host || p.TCP == "") {
		network, addr = "unix", p.Unix
	}
	if addr == "" {
		return nil, false, fmt.Errorf("rank %d has no reachable address", to)
	}
	var c net.Conn
	var err error
	// A peer's listener exists before the address table is published, so a
	// refused connection means the peer is gone; retry briefly only for the
	// transient errors of a busy accept queue.
	d := net.Dialer{Timeout: t.cfg.ConnectTimeout}
	for attempt := 0; ; attempt++ {
		c, err = d.DialContext(t.ctx, network, addr)
		if err == nil || attempt >= 20 || !errors.Is(err, syscall.EAGAIN) {
			break
		}
		time.Sleep(time.Millisecond << min(attempt, 6))
	}
	if err != nil {
		return nil, false, fmt.Errorf("connect to rank %d at %s %s: %w", to, network, addr, err)
	}
	// Close ends a handshake with a peer that does not answer (stopped).
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.Close()
		return nil, false, transport.ErrClosed
	}
	t.dials[c] = struct{}{}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.dials, c)
		t.mu.Unlock()
	}()
	tune(c)
	var reply [1]byte
	c.SetDeadline(time.Now().Add(t.cfg.ConnectTimeout))
	if t.cfg.Auth != nil {
		h := wireauth.Hello{Proto: wireauth.ProtoSock, Scope: t.cfg.Scope, From: uint64(t.cfg.Self), To: uint64(to)}
		if n, err := hex.DecodeString(p.Nonce); err == nil && len(n) == wireauth.NonceSize {
			v, err := wireauth.FastDial(c, t.cfg.Auth, h, [wireauth.NonceSize]byte(n))
			if err != nil {
				c.Close()
				return nil, false, fmt.Errorf("connect to rank %d: %w", to, err)
			}
			c.SetDeadline(time.Time{})
			return t.verdict(c, to, v)
		}
		if err := wireauth.Dial(c, t.cfg.Auth, h); err != nil {
			c.Close()
			return nil, false, fmt.Errorf("connect to rank %d: %w", to, err)
		}
	} else {
		var hello [helloSize]byte
		binary.LittleEndian.PutUint32(hello[0:], helloMagic)
		binary.LittleEndian.PutUint64(hello[4:], uint64(t.cfg.Self))
		if _, err := c.Write(hello[:]); err != nil {
			c.Close()
			return nil, false, fmt.Errorf("connect to rank %d: %w", to, err)
		}
	}
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		c.Close()
		return nil, false, fmt.Errorf("connect to rank %d: no handshake reply: %w", to, err)
	}
	c.SetDeadline(time.Time{})
	return t.verdict(c, to, reply[0])
}

// verdict is dial's outcome for the peer's handshake reply v.
func (t *Transport) verdict(c net.Conn, to int, v byte) (net.Conn, bool, error) {
	if v != replyAccept && v != replyRefuse {
		c.Close()
		return nil, false, fmt.Errorf("connect to rank %d: handshake reply %d", to, v)
	}
	return c, v == replyAccept, nil
}

// connect returns the connection to send to ps on, dialling it or waiting
// for the peer's own dial. Only the peer's writer goroutine calls it.
func (t *Transport) connect(ps *peerState) (*conn, error) {
	to := ps.rank
	deadline := time.NewTimer(t.cfg.ConnectTimeout)
	defer deadline.Stop()
	resolved := t.resolve.Load() == nil
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, transport.ErrClosed
		}
		if cc := ps.send; cc != nil {
			t.mu.Unlock()
			return cc, nil
		}
		if ps.err != nil {
			err := ps.err
			t.mu.Unlock()
			return nil, err
		}
		if ps.dialing || ps.expect {
			ready := ps.ready
			t.mu.Unlock()
			select {
			case <-ready:
			case <-deadline.C:
				return nil, fmt.Errorf("connect to rank %d: no connection after %v", to, t.cfg.ConnectTimeout)
			}
			continue
		}
		if !resolved {
			// This process must dial: the peer's address first (not
			// marked dialing meanwhile, so a connection from the peer
			// during the read is accepted and used instead).
			t.mu.Unlock()
			resolved = true
			if err := (*t.resolve.Load())(to); err != nil {
				t.mu.Lock()
				if ps.send == nil {
					ps.err = err
				}
				ps.changed()
				t.mu.Unlock()
			}
			continue
		}
		ps.dialing = true
		t.mu.Unlock()

		c, ok, err := t.dial(to)
		var cc *conn
		if err == nil && ok {
			cc = &conn{c: unpolled(c)}
			if !t.track(cc) {
				c.Close()
				return nil, transport.ErrClosed
			}
			go t.readLoop(cc, to, nil)
		} else if c != nil {
			c.Close()
		}
		t.mu.Lock()
		ps.dialing = false
		switch {
		case err != nil:
			if ps.send == nil {
				ps.err = err
			}
			ps.changed()
		case ok && ps.send == nil:
			t.establishLocked(ps, cc, false)
		case ok: // both dials were accepted: cc stays open for reading only
			ps.changed()
		default:
			ps.expect = ps.send == nil
			ps.changed()
		}
		t.mu.Unlock()
	}
}

// peer returns the sending state of rank to: without a lock once it
// exists (peertab), else created under t.mu.
func (t *Transport) peer(to int) (*peerState, error) {
	if ps := t.fast.Load(to); ps != nil {
		if t.shut.Load() {
			return nil, transport.ErrClosed
		}
		return ps, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transport.ErrClosed
	}
	return t.peerLocked(to), nil
}

// sendErr is the error of a frame to rank to that could not be written.
func sendErr(to int, err error) error {
	if errors.Is(err, transport.ErrClosed) || errors.Is(err, transport.ErrPeerLost) {
		return err
	}
	return fmt.Errorf("%w: send to rank %d: %v", transport.ErrPeerLost, to, err)
}

// Send implements transport.Transport. On an idle connection the frame is
// written from the caller's goroutine; otherwise it waits its turn in the
// peer's queue (a frame without payload is queued and not waited for).
func (t *Transport) Send(to int, h transport.Header, payload []byte) error {
	ps, err := t.peer(to)
	if err != nil {
		return err
	}
	ps.mu.Lock()
	if ps.werr != nil {
		err := ps.werr
		ps.mu.Unlock()
		return err
	}
	if cc := ps.cc; cc != nil && !ps.busy && !ps.queued() {
		ps.busy = true
		ps.mu.Unlock()
		err := t.write(ps, cc, h, payload)
		if err != nil {
			err = sendErr(to, err)
		}
		t.release(ps, err)
		return err
	}
	if len(payload) == 0 && ps.cc != nil {
		// Nothing for the caller to keep, and the connection is up (busy
		// writing): the frame is queued, not waited for (a rendezvous
		// send's request to send must not wait for the payload being
		// written: the requests of a window of sends all go ahead of the
		// payloads, see transport.Deferrable). It keeps its place on the
		// bulk lane; a write that fails breaks the connection, and the
		// peer is reported lost. Before the connection is up the caller
		// waits, and learns if it cannot be made.
		t.queueLocked(ps, item{h: h})
		ps.mu.Unlock()
		return nil
	}
	w := waiterPool.Get().(*waiter)
	t.queueLocked(ps, item{h: h, payload: payload, w: w})
	ps.mu.Unlock()
	err = <-w.ch
	waiterPool.Put(w)
	return err
}

// Post implements transport.Transport.
func (t *Transport) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	ps, err := t.peer(to)
	if err == nil {
		ps.mu.Lock()
		if err = ps.werr; err == nil {
			t.queueLocked(ps, item{h: h, payload: payload, done: done})
		}
		ps.mu.Unlock()
	}
	if err != nil && done != nil {
		done.SendDone(err)
	}
}

// queueLocked appends it to its lane and makes sure a goroutine will write
// it; ps.mu held, ps.werr nil.
func (t *Transport) queueLocked(ps *peerState, it item) {
	if it.h.Flags&transport.FlagUrgent != 0 {
		ps.urgent.push(it)
	} else if _, ok := it.done.(transport.Deferrable); ok {
		ps.deferred.push(it)
	} else {
		ps.bulk.push(it)
	}
	if !ps.busy { // else the owner looks at the queue before it lets go
		t.kickLocked(ps)
	}
}

// kickLocked wakes (or starts) the writer goroutine of ps; ps.mu held,
// ps.werr nil (so Close has not begun waiting for the goroutines).
func (t *Transport) kickLocked(ps *peerState) {
	if !ps.writing {
		ps.writing = true
		t.wg.Add(1)
		go t.writeLoop(ps)
		return
	}
	// The writer waits on wake while the transport is open, and on idle
	// once Close has begun (it writes what is queued before it lets go):
	// a frame posted in between must wake it either way, or Close waits
	// for a queue nobody writes.
	ps.idle.Broadcast()
	select {
	case ps.wake <- struct{}{}:
	default:
	}
}

// release gives up the write side of ps after a write that ended with err
// (or, from the writer, after a failed connect). A write error breaks the
// connection for good: what is queued fails with it.
func (t *Transport) release(ps *peerState, err error) {
	var failed []item
	ps.mu.Lock()
	ps.busy = false
	if err != nil && ps.werr == nil {
		ps.werr = sendErr(ps.rank, err)
		if ps.cc != nil {
			ps.cc.c.Close()
		}
	}
	werr := ps.werr
	if werr != nil {
		failed = ps.drainLocked()
	} else if ps.queued() {
		t.kickLocked(ps)
	}
	ps.idle.Broadcast()
	ps.mu.Unlock()
	for i := range failed {
		failed[i].finish(werr)
	}
}

// failDial fails ps's queue with err, the error of this process's own dial
// of the peer, unless the peer's connection was accepted meanwhile (the
// queue is written there; the acceptor may own the write side); it reports
// whether it failed ps.
func (t *Transport) failDial(ps *peerState, err error) bool {
	ps.mu.Lock()
	if ps.cc != nil {
		ps.mu.Unlock()
		return false
	}
	if ps.werr == nil {
		ps.werr = sendErr(ps.rank, err)
	}
	werr := ps.werr
	failed := ps.drainLocked()
	ps.idle.Broadcast()
	ps.mu.Unlock()
	for i := range failed {
		failed[i].finish(werr)
	}
	return true
}

// drainLocked empties both lanes; ps.mu held.
func (ps *peerState) drainLocked() []item {
	var out []item
	for ps.urgent.len() > 0 {
		out = append(out, ps.urgent.pop())
	}
	for ps.bulk.len() > 0 {
		out = append(out, ps.bulk.pop())
	}
	for ps.deferred.len() > 0 {
		out = append(out, ps.deferred.pop())
	}
	return out
}

// writeLoop writes the queued frames of one peer, connecting first if
// needed; it ends once the peer's sending ended (Close, a broken
// connection).
//
// On a TCP connection (fdConn) the wake-up of a rendezvous send's waiter
// (transport.Held) whose payload is written whole (not chunked: at most
// chunkSize; held over chunked payloads, 4 and 16 MiB windows were 7% and
// 20% slower) is held while more frames are queued behind its DATA:
// it is made when the queue is empty, before a write waits for room in
// the send buffer, once heldMax are held, or when the loop ends. The
// request is complete at once (a waiter that looks sees it); only a
// sleeping waiter wakes later, once per run of payloads instead of once
// per payload, while this goroutine is still writing (each wake-up there
// started a second thread beside the writer on two shared cores:
// docs/benchmarks.md, "Session 18: TCP bandwidth").
func (t *Transport) writeLoop(ps *peerState) {
	defer t.wg.Done()
	var held []func()
	wake := func() {
		for i, w := range held {
			w()
			held[i] = nil
		}
		held = held[:0]
	}
	defer wake()
	for {
		ps.mu.Lock()
		if ps.werr != nil {
			ps.writing = false // a connection the peer makes later starts another
			ps.mu.Unlock()
			return
		}
		if ps.busy || !ps.queued() {
			ps.mu.Unlock()
			if len(held) > 0 {
				wake()
				continue
			}
			select {
			case <-ps.wake:
			case <-t.ctx.Done():
				// Close sets werr once the queue is written.
				ps.mu.Lock()
				for ps.werr == nil && !ps.queued() {
					ps.idle.Wait()
				}
				ps.mu.Unlock()
			}
			continue
		}
		cc := ps.cc
		if cc == nil {
			ps.mu.Unlock()
			if _, err := t.connect(ps); err != nil && t.failDial(ps, err) {
				// A listener exists before its address is published:
				// a peer that cannot be reached is lost, also when only
				// control frames (which complete nobody) were queued.
				if !errors.Is(err, transport.ErrClosed) {
					t.lost(ps.rank, err)
				}
			}
			continue
		}
		ps.busy = true
		var it item
		switch {
		case ps.urgent.len() > 0:
			it = ps.urgent.pop()
		case ps.bulk.len() > 0:
			it = ps.bulk.pop()
		default:
			it = ps.deferred.pop()
		}
		ps.mu.Unlock()
		fc, _ := cc.c.(*fdConn)
		if fc != nil && len(held) > 0 {
			fc.onFull = wake // (the write side's owner's alone)
		}
		err := t.write(ps, cc, it.h, it.payload)
		if fc != nil {
			fc.onFull = nil
		}
		if err != nil {
			err = sendErr(ps.rank, err)
		}
		if hd, ok := it.done.(transport.Held); ok && fc != nil && err == nil && it.w == nil && len(it.payload) <= chunkSize {
			if w := hd.SendDoneHeld(nil); w != nil {
				held = append(held, w)
			}
		} else {
			it.finish(err)
		}
		t.release(ps, err)
		if len(held) >= heldMax {
			wake()
		}
	}
}

// write writes one frame to cc; the caller owns the write side of ps. A
// payload above chunkSize goes out in chunks, with the urgent frames queued
// meanwhile written between them.
func (t *Transport) write(ps *peerState, cc *conn, h transport.Header, payload []byte) error {
	if len(payload) <= chunkSize {
		return cc.writeFrame(h, payload)
	}
	h.Flags |= flagChunked
	h.N = uint64(len(payload))
	if err := cc.writeFrame(h, nil); err != nil {
		return err
	}
	for off := 0; off < len(payload); {
		if err := t.writeUrgent(ps, cc); err != nil {
			return err
		}
		end := min(off+chunkSize, len(payload))
		ch := transport.Header{Kind: connChunk, Flags: flagConn}
		if err := cc.writeFrame(ch, payload[off:end]); err != nil {
			return err
		}
		off = end
	}
	return nil
}

// writeUrgent writes the queued urgent frames of ps (whole, never chunked).
func (t *Transport) writeUrgent(ps *peerState, cc *conn) error {
	for {
		ps.mu.Lock()
		if ps.urgent.len() == 0 || len(ps.urgent.q[ps.urgent.head].payload) > chunkSize {
			// (a large urgent frame waits for the end of the chunked one:
			// whole frames are never above chunkSize)
			ps.mu.Unlock()
			return nil
		}
		it := ps.urgent.pop()
		ps.mu.Unlock()
		err := cc.writeFrame(it.h, it.payload)
		if err != nil {
			err = sendErr(ps.rank, err)
		}
		it.finish(err)
		if err != nil {
			return err
		}
	}
}

// writeFrame writes h and payload as they are; h.N is len(payload) unless
// h announces a chunked payload.
func (cc *conn) writeFrame(h transport.Header, payload []byte) error {
	n := len(payload)
	if h.Flags&flagChunked == 0 {
		h.N = uint64(n)
	}
	var err error
	if fc, ok := cc.c.(*fdConn); ok {
		// Header and payload in one writev, no copy.
		h.Encode(cc.hdr[:])
		_, err = fc.writev(cc.hdr[:], payload)
		return err
	}
	if n <= smallWrite {
		need := transport.HeaderSize + n
		if cap(cc.scratch) < need {
			cc.scratch = make([]byte, transport.HeaderSize+smallWrite)
		}
		b := cc.scratch[:need]
		h.Encode(b)
		copy(b[transport.HeaderSize:], payload)
		_, err = cc.c.Write(b)
	} else {
		h.Encode(cc.hdr[:])
		cc.bufs[0], cc.bufs[1] = cc.hdr[:], payload
		cc.nb = cc.bufs[:]
		_, err = cc.nb.WriteTo(cc.c)
		cc.bufs[1] = nil
	}
	return err
}

// Close writes what is queued (for up to closeFlush), says goodbye on every
// connection, closes everything and waits for the transport's goroutines.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.shut.Store(true)
	t.cancel()
	all := make([]*conn, 0, len(t.conns))
	for cc := range t.conns {
		all = append(all, cc)
	}
	peers := make([]*peerState, 0, len(t.sendTo))
	// Writers waiting for a connection to appear give up now, not after
	// connectTimeout.
	for _, ps := range t.sendTo {
		ps.changed()
		peers = append(peers, ps)
	}
	for c := range t.dials {
		c.Close()
	}
	t.mu.Unlock()
	// A write to a peer that does not read ends at the deadline.
	deadline := time.Now().Add(closeFlush)
	for _, cc := range all {
		cc.c.SetWriteDeadline(deadline)
	}
	// Let each peer's queue drain, then take its write side for good.
	for _, ps := range peers {
		ps.mu.Lock()
		for ps.werr == nil && (ps.busy || ps.queued() && ps.writing) {
			ps.idle.Wait()
		}
		if ps.werr == nil {
			ps.werr = transport.ErrClosed
		}
		failed := ps.drainLocked()
		ps.idle.Broadcast()
		ps.mu.Unlock()
		for i := range failed {
			failed[i].finish(transport.ErrClosed)
		}
	}
	// Every connection gets a goodbye, so the peer's reader ends quietly
	// instead of reporting this rank lost. No frame is being written: each
	// peer's write side ended above and the other connections are only
	// read from.
	bye := transport.Header{Kind: connBye, Flags: flagConn}
	for _, cc := range all {
		cc.writeFrame(bye, nil)
		cc.c.Close()
	}
	t.stopReaders()
	t.closeListeners()
	t.wg.Wait()
	t.refused.Stop()
	if t.lnUnix != nil {
		os.Remove(t.lnUnix.Addr().String())
	}
	return nil
}
