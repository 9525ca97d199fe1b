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
	Self    int           // this rank
	Host    string        // this rank's host id
	Mode    Mode          // "" means ModeAuto
	Dir     string        // directory for the Unix socket ("" disables Unix)
	TCPAddr string        // listen address for TCP, "" means 127.0.0.1:0
	SpinFn  func() time.Duration // reader spin before parking (read per connection); nil or 0 disables
	Handler transport.Handler
	Name    string // socket file name stem (default "r<Self>")
}

const (
	helloMagic = 0x66746d70 // "ftmp"
	kindBye    = 0xff
	sockBuf    = 4 << 20
	smallWrite = 16 << 10
)

// Transport implements transport.Transport over sockets.
type Transport struct {
	cfg   Config
	peers atomic.Pointer[[]Peer]

	lnUnix net.Listener
	lnTCP  net.Listener

	mu     sync.Mutex
	out    map[int]*outConn
	in     map[net.Conn]struct{}
	closed bool

	wg sync.WaitGroup
}

type outConn struct {
	mu      sync.Mutex // serialises writes (frames are never interleaved)
	c       net.Conn
	err     error
	scratch []byte
	hdr     [transport.HeaderSize]byte
	bufs    [2][]byte
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
	t := &Transport{cfg: cfg, out: make(map[int]*outConn), in: make(map[net.Conn]struct{})}
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
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.in[c] = struct{}{}
		t.wg.Add(1)
		t.mu.Unlock()
		go t.readLoop(c)
	}
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

// readLoop reads the frames of one accepted connection.
func (t *Transport) readLoop(c net.Conn) {
	defer t.wg.Done()
	defer func() {
		t.mu.Lock()
		delete(t.in, c)
		t.mu.Unlock()
		c.Close()
	}()
	tune(c)
	var src io.Reader = c
	if t.cfg.SpinFn != nil {
		if spin := t.cfg.SpinFn(); spin > 0 {
			if sc, ok := c.(syscall.Conn); ok {
				if rc, err := sc.SyscallConn(); err == nil {
					src = &spinReader{rc: rc, spin: spin}
				}
			}
		}
	}
	br := bufio.NewReaderSize(src, 64<<10)
	var hb [transport.HeaderSize]byte
	if _, err := io.ReadFull(br, hb[:12]); err != nil {
		return
	}
	if binary.LittleEndian.Uint32(hb[0:]) != helloMagic {
		return
	}
	peer := int(binary.LittleEndian.Uint64(hb[4:]))
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
		dst, cookie := t.cfg.Handler.Frame(peer, &h)
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
		t.cfg.Handler.Payload(peer, &h, dst, cookie)
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
// up to spin before letting the poller park the goroutine.
type spinReader struct {
	rc   syscall.RawConn
	spin time.Duration
}

func (s *spinReader) Read(p []byte) (int, error) {
	var n int
	var rerr error
	var start time.Time
	parked := false
	err := s.rc.Read(func(fd uintptr) bool {
		for i := 0; ; i++ {
			n, rerr = syscall.Read(int(fd), p)
			if rerr != syscall.EAGAIN {
				return true
			}
			if parked {
				return false
			}
			if i == 0 {
				start = time.Now()
			} else if i&7 == 0 && time.Since(start) > s.spin {
				parked = true
				return false
			}
			runtime.Gosched()
		}
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (t *Transport) conn(to int) (*outConn, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, transport.ErrClosed
	}
	oc := t.out[to]
	if oc == nil {
		oc = &outConn{}
		t.out[to] = oc
	}
	t.mu.Unlock()
	oc.mu.Lock()
	if oc.c == nil && oc.err == nil {
		oc.c, oc.err = t.dial(to)
	}
	if oc.err != nil {
		err := oc.err
		oc.mu.Unlock()
		return nil, err
	}
	return oc, nil // locked
}

func (t *Transport) dial(to int) (net.Conn, error) {
	pp := t.peers.Load()
	if pp == nil || to < 0 || to >= len(*pp) {
		return nil, fmt.Errorf("no address for rank %d", to)
	}
	p := (*pp)[to]
	network, addr := "tcp", p.TCP
	if t.cfg.Mode != ModeTCP && p.Unix != "" && (p.Host == t.cfg.Host || p.TCP == "") {
		network, addr = "unix", p.Unix
	}
	if addr == "" {
		return nil, fmt.Errorf("rank %d has no reachable address", to)
	}
	var c net.Conn
	var err error
	// A peer's listener exists before the address table is published, so a
	// refused connection means the peer is gone; retry briefly only for the
	// transient errors of a busy accept queue.
	for attempt := 0; ; attempt++ {
		c, err = net.DialTimeout(network, addr, 5*time.Second)
		if err == nil || attempt >= 20 || !errors.Is(err, syscall.EAGAIN) {
			break
		}
		time.Sleep(time.Millisecond << min(attempt, 6))
	}
	if err != nil {
		return nil, fmt.Errorf("connect to rank %d at %s %s: %w", to, network, addr, err)
	}
	tune(c)
	var hello [12]byte
	binary.LittleEndian.PutUint32(hello[0:], helloMagic)
	binary.LittleEndian.PutUint64(hello[4:], uint64(t.cfg.Self))
	if _, err := c.Write(hello[:]); err != nil {
		c.Close()
		return nil, fmt.Errorf("connect to rank %d: %w", to, err)
	}
	return c, nil
}

// Send implements transport.Transport.
func (t *Transport) Send(to int, h *transport.Header, payload []byte) error {
	oc, err := t.conn(to)
	if err != nil {
		if errors.Is(err, transport.ErrClosed) {
			return err
		}
		return fmt.Errorf("%w: %v", transport.ErrPeerLost, err)
	}
	defer oc.mu.Unlock()
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
		nb := net.Buffers(oc.bufs[:])
		_, err = nb.WriteTo(oc.c)
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
	outs := make([]*outConn, 0, len(t.out))
	for _, oc := range t.out {
		outs = append(outs, oc)
	}
	t.mu.Unlock()
	var bye [transport.HeaderSize]byte
	(&transport.Header{Kind: kindBye}).Encode(bye[:])
	for _, oc := range outs {
		oc.mu.Lock()
		if oc.c != nil && oc.err == nil {
			oc.c.SetWriteDeadline(time.Now().Add(time.Second))
			oc.c.Write(bye[:])
			oc.c.Close()
		}
		oc.err = transport.ErrClosed
		oc.mu.Unlock()
	}
	t.closeListeners()
	t.mu.Lock()
	for c := range t.in {
		c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	if t.lnUnix != nil {
		os.Remove(t.lnUnix.Addr().String())
	}
	return nil
}
