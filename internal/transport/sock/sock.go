// Package sock is the socket transport: Unix-domain sockets between ranks on
// the same host and TCP (with TCP_NODELAY) between hosts, or on one host when
// TCP is forced. Connections are opened lazily on the first frame to a peer
// and are one-way: a rank sends on the connections it dialled and receives
// on the ones it accepted, so two ranks connecting to each other at the same
// moment never race.
//
// Each accepted connection has one reader goroutine that spins briefly on
// non-blocking reads (yielding the processor) before parking in the poller,
// then reads payloads straight into the buffer the handler names. The
// package must not interpret frames beyond their length.
package sock

import (
	"bufio"
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

	"github.com/ftmpi/ftmpi/internal/transport"
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
}

const (
	helloMagic  = 0x66746d70 // "ftmp"
	replyAccept = 1
	replyRefuse = 2

	connectTimeout = 30 * time.Second
	kindBye        = 0xff
	sockBuf        = 4 << 20
	smallWrite     = 16 << 10
)

// Transport implements transport.Transport over sockets.
type Transport struct {
	cfg   Config
	peers atomic.Pointer[[]Peer]

	lnUnix net.Listener
	lnTCP  net.Listener

	mu     sync.Mutex
	sendTo map[int]*peerState
	conns  map[*conn]struct{}
	closed bool

	wg sync.WaitGroup
}

// peerState is how this rank sends to one peer; guarded by Transport.mu.
type peerState struct {
	send    *conn         // the connection frames to this peer go on; fixed once set
	err     error         // dial error: the peer is unreachable
	dialing bool          // a dial to this peer is in progress
	expect  bool          // our dial was refused: the peer's own connection is on its way
	ready   chan struct{} // closed when send, err or dialing changes
}

func (ps *peerState) changed() {
	if ps.ready != nil {
		close(ps.ready)
	}
	ps.ready = make(chan struct{})
}

// conn is one socket; its reader runs in its own goroutine.
type conn struct {
	mu      sync.Mutex // serialises writes (frames are never interleaved)
	c       net.Conn
	err     error // first write error
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
	t := &Transport{cfg: cfg, sendTo: make(map[int]*peerState), conns: make(map[*conn]struct{})}
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
	for _, ln := range []net.Listener{t.lnUnix, t.lnTCP} {
		if ln != nil {
			t.wg.Add(1)
			go t.acceptLoop(ln)
		}
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
	return p
}

// SetPeers installs the address table, indexed by rank.
func (t *Transport) SetPeers(p []Peer) { t.peers.Store(&p) }

func (t *Transport) closeListeners() {
	if t.lnUnix != nil {
		t.lnUnix.Close()
	}
	if t.lnTCP != nil {
		t.lnTCP.Close()
	}
}

func (t *Transport) acceptLoop(ln net.Listener) {
	defer t.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		cc := &conn{c: c}
		if !t.track(cc) {
			c.Close()
			return
		}
		go t.readLoop(cc, -1)
	}
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
		ps = &peerState{ready: make(chan struct{})}
		t.sendTo[r] = ps
	}
	return ps
}

// accepted decides whether a connection dialled by peer becomes the
// connection both ranks send on. When both ranks dial each other at once,
// the connection dialled by the lower rank wins; the other is refused
// before any frame travels on it.
func (t *Transport) accepted(peer int, cc *conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ps := t.peerLocked(peer)
	if ps.send != nil || (ps.dialing && peer > t.cfg.Self) {
		return false
	}
	ps.send = cc
	ps.expect = false
	ps.changed()
	return true
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

// readLoop reads the frames of one connection. peer is -1 for an accepted
// connection, whose first bytes name the peer.
func (t *Transport) readLoop(cc *conn, peer int) {
	defer t.wg.Done()
	c := cc.c
	defer c.Close()
	tune(c)
	var src io.Reader = c
	if t.cfg.SpinFn != nil {
		if spin := t.cfg.SpinFn(); spin > 0 {
			if sc, ok := c.(syscall.Conn); ok {
				if rc, err := sc.SyscallConn(); err == nil {
					src = newSpinReader(rc, spin, t.cfg.Yield)
				}
			}
		}
	}
	br := bufio.NewReaderSize(src, 64<<10)
	var hb [transport.HeaderSize]byte
	if peer < 0 {
		if _, err := io.ReadFull(br, hb[:12]); err != nil {
			return
		}
		if binary.LittleEndian.Uint32(hb[0:]) != helloMagic {
			return
		}
		peer = int(binary.LittleEndian.Uint64(hb[4:]))
		reply := []byte{replyRefuse}
		ok := t.accepted(peer, cc)
		if ok {
			reply[0] = replyAccept
		}
		if _, err := c.Write(reply); err != nil || !ok {
			t.untrack(cc)
			return
		}
	}
	var h transport.Header
	for {
		if _, err := io.ReadFull(br, hb[:]); err != nil {
			t.lost(peer, err)
			return
		}
		h.Decode(hb[:])
		if h.Kind == kindBye {
			return
		}
		dst, cookie := t.cfg.Handler.Frame(peer, h)
		if h.N > 0 {
			var err error
			if uint64(len(dst)) == h.N {
				_, err = io.ReadFull(br, dst)
			} else {
				_, err = br.Discard(int(h.N))
			}
			if err != nil {
				t.lost(peer, err)
				return
			}
		}
		t.cfg.Handler.Payload(peer, h, dst, cookie)
	}
}

func (t *Transport) lost(peer int, err error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("connection from rank %d closed without goodbye", peer)
	}
	t.cfg.Handler.PeerLost(peer, err)
}

// spinReader reads with non-blocking syscalls, yielding the processor for
// up to spin before letting the poller park the goroutine. Its state lives
// in the struct so that a read allocates nothing.
type spinReader struct {
	rc     syscall.RawConn
	spin   time.Duration
	fn     func(fd uintptr) bool
	p      []byte
	n      int
	rerr   error
	start  time.Time
	parked bool
	yield  bool
}

func newSpinReader(rc syscall.RawConn, spin time.Duration, yield bool) *spinReader {
	s := &spinReader{rc: rc, spin: spin, yield: yield}
	s.fn = s.try
	return s
}

// try is the RawConn.Read callback: true when the read is done (data,
// EOF or an error), false to wait for readability.
func (s *spinReader) try(fd uintptr) bool {
	for i := 0; ; i++ {
		s.n, s.rerr = syscall.Read(int(fd), s.p)
		if s.rerr != syscall.EAGAIN {
			return true
		}
		if s.parked {
			return false
		}
		if i == 0 {
			s.start = time.Now()
		} else if i&7 == 0 && time.Since(s.start) > s.spin {
			s.parked = true
			return false
		}
		runtime.Gosched()
		if s.yield {
			syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
}

func (s *spinReader) Read(p []byte) (int, error) {
	s.p, s.parked = p, false
	err := s.rc.Read(s.fn)
	s.p = nil
	if err != nil {
		return 0, err
	}
	if s.rerr != nil {
		if s.rerr == syscall.EINTR {
			return 0, nil // bufio retries
		}
		return 0, s.rerr
	}
	if s.n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return s.n, nil
}

// sendConn returns the connection to send to peer on, locked for writing.
func (t *Transport) sendConn(to int) (*conn, error) {
	deadline := time.Now().Add(t.cfg.ConnectTimeout)
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, transport.ErrClosed
		}
		ps := t.peerLocked(to)
		if cc := ps.send; cc != nil {
			t.mu.Unlock()
			cc.mu.Lock()
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
			case <-time.After(time.Until(deadline)):
				return nil, fmt.Errorf("connect to rank %d: no connection after %v", to, t.cfg.ConnectTimeout)
			}
			continue
		}
		ps.dialing = true
		t.mu.Unlock()

		c, ok, err := t.dial(to)
		var cc *conn
		if err == nil && ok {
			cc = &conn{c: c}
			if !t.track(cc) {
				c.Close()
				return nil, transport.ErrClosed
			}
			go t.readLoop(cc, to)
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
		case ok:
			if ps.send == nil {
				ps.send = cc
			} // else both dials were accepted: cc stays open for reading only
		default:
			ps.expect = ps.send == nil
		}
		ps.changed()
		t.mu.Unlock()
	}
}

// dial connects to rank to and reports whether it accepted the connection
// as the one both ranks send on.
func (t *Transport) dial(to int) (net.Conn, bool, error) {
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
	for attempt := 0; ; attempt++ {
		c, err = net.DialTimeout(network, addr, t.cfg.ConnectTimeout)
		if err == nil || attempt >= 20 || !errors.Is(err, syscall.EAGAIN) {
			break
		}
		time.Sleep(time.Millisecond << min(attempt, 6))
	}
	if err != nil {
		return nil, false, fmt.Errorf("connect to rank %d at %s %s: %w", to, network, addr, err)
	}
	tune(c)
	var hello [12]byte
	binary.LittleEndian.PutUint32(hello[0:], helloMagic)
	binary.LittleEndian.PutUint64(hello[4:], uint64(t.cfg.Self))
	var reply [1]byte
	c.SetDeadline(time.Now().Add(t.cfg.ConnectTimeout))
	if _, err := c.Write(hello[:]); err != nil {
		c.Close()
		return nil, false, fmt.Errorf("connect to rank %d: %w", to, err)
	}
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		c.Close()
		return nil, false, fmt.Errorf("connect to rank %d: no handshake reply: %w", to, err)
	}
	c.SetDeadline(time.Time{})
	return c, reply[0] == replyAccept, nil
}

// Send implements transport.Transport.
func (t *Transport) Send(to int, h transport.Header, payload []byte) error {
	oc, err := t.sendConn(to)
	if err != nil {
		if errors.Is(err, transport.ErrClosed) {
			return err
		}
		return fmt.Errorf("%w: %v", transport.ErrPeerLost, err)
	}
	defer oc.mu.Unlock()
	if oc.err != nil {
		return fmt.Errorf("%w: send to rank %d: %v", transport.ErrPeerLost, to, oc.err)
	}
	n := len(payload)
	if n <= smallWrite {
		need := transport.HeaderSize + n
		if cap(oc.scratch) < need {
			oc.scratch = make([]byte, transport.HeaderSize+smallWrite)
		}
		b := oc.scratch[:need]
		h.Encode(b)
		copy(b[transport.HeaderSize:], payload)
		_, err = oc.c.Write(b)
	} else {
		h.Encode(oc.hdr[:])
		oc.bufs[0], oc.bufs[1] = oc.hdr[:], payload
		oc.nb = oc.bufs[:]
		_, err = oc.nb.WriteTo(oc.c)
		oc.bufs[1] = nil
	}
	if err != nil {
		oc.err = err
		oc.c.Close()
		return fmt.Errorf("%w: send to rank %d: %v", transport.ErrPeerLost, to, err)
	}
	return nil
}

// Close says goodbye on every outgoing connection, closes everything and
// waits for the transport's goroutines.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	all := make([]*conn, 0, len(t.conns))
	for cc := range t.conns {
		all = append(all, cc)
	}
	// Senders waiting for a connection to appear give up now, not after
	// connectTimeout.
	for _, ps := range t.sendTo {
		ps.changed()
	}
	t.mu.Unlock()
	// Every connection gets a goodbye, so the peer's reader ends quietly
	// instead of reporting this rank lost.
	var bye [transport.HeaderSize]byte
	(&transport.Header{Kind: kindBye}).Encode(bye[:])
	for _, cc := range all {
		cc.mu.Lock()
		if cc.err == nil {
			cc.c.SetWriteDeadline(time.Now().Add(time.Second))
			cc.c.Write(bye[:])
		}
		cc.err = transport.ErrClosed
		cc.c.Close()
		cc.mu.Unlock()
	}
	t.closeListeners()
	t.wg.Wait()
	if t.lnUnix != nil {
		os.Remove(t.lnUnix.Addr().String())
	}
	return nil
}
