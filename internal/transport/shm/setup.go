package shm

// Pair set-up: accepting and dialling, the handshakes, the watcher.

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// errShed is a connection the accept loop closed before it authenticated
// (too slow, or the oldest of a flood): not logged per connection.
var errShed = errors.New("closed by the accept loop before it authenticated")

// handle serves one accepted connection (acceptloop): a pair set-up. A
// refused one is closed and logged.
func (t *Transport) handle(pc *acceptloop.Pending) {
	c, ok := pc.Conn.(*net.UnixConn)
	if !ok {
		pc.Close()
		return
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		c.Close()
		return
	}
	t.hs[c] = false
	t.wg.Add(1)
	t.mu.Unlock()
	defer t.wg.Done()
	err := t.accept(pc, c)
	if errors.Is(err, net.ErrClosed) {
		err = errShed // the loop (or Close) closed it: too slow, or the oldest of a flood
	}
	if err != nil {
		c.Close()
		t.mu.Lock()
		closed := t.closed
		t.mu.Unlock()
		if !closed && !errors.Is(err, errShed) && !errors.Is(err, transport.ErrClosed) && !hungUp(err) {
			t.refused(err)
		}
	}
	t.mu.Lock()
	delete(t.hs, c)
	t.mu.Unlock()
}

// hungUp reports whether err is the peer going away without claiming
// anything (closed before a byte of its hello) or while this side wrote
// (a dialler that ended, or the loser of a simultaneous dial): nothing to
// refuse, nothing logged. A claim left unproved is still a refusal.
func hungUp(err error) bool {
	return (errors.Is(err, wireauth.ErrNoHello) && errors.Is(err, io.EOF)) ||
		errors.Is(err, unix.EPIPE) || errors.Is(err, unix.ECONNRESET)
}

// readFds reads exactly len(b) bytes from c and the descriptors sent with
// them (want of them).
func readFds(c *net.UnixConn, b []byte, want int) ([]int, error) {
	oob := make([]byte, unix.CmsgSpace(4*want))
	n, oobn, flags, _, err := c.ReadMsgUnix(b, oob)
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
	if flags&unix.MSG_CTRUNC != 0 {
		closeFds(fds)
		return nil, fmt.Errorf("more than %d descriptors passed", want)
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
		if fd >= 0 {
			unix.Close(fd)
		}
	}
}

// authKey returns the job's secret (nil: the transport runs without
// one), waiting for SetAuth with Config.AuthLater until deadline.
func (t *Transport) authKey(deadline time.Time) (*wireauth.Key, error) {
	if t.authReady == nil {
		return t.key.Load(), nil
	}
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case <-t.authReady:
		return t.key.Load(), nil
	case <-wait.C:
		return nil, errors.New("the job's secret never came (SetAuth)")
	case <-t.ctx.Done():
		return nil, transport.ErrClosed
	}
}

// checkHello decides whether an authenticated hello may set up a pair
// with this process: the right protocol, scope and identities.
func (t *Transport) checkHello(h wireauth.Hello) error {
	switch {
	case h.Proto != wireauth.ProtoShm:
		return fmt.Errorf("protocol %d is not the shared-memory set-up's", h.Proto)
	case h.Scope != t.cfg.Scope:
		return fmt.Errorf("scope %d, this process is in %d", h.Scope, t.cfg.Scope)
	case h.To != uint64(t.cfg.Self):
		return fmt.Errorf("addressed to process %d, this is process %d", h.To, t.cfg.Self)
	}
	return checkClaim(h.From, t.cfg.Self)
}

// waitPeer waits until the peer table says whether process peer is on
// this host (a process beyond the table, spawned, may set up its pair
// before this one learns of it) and refuses it if it is not.
func (t *Transport) waitPeer(peer int, deadline time.Time) error {
	var wait *time.Timer
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return transport.ErrClosed
		}
		a := t.addrs.Load()
		if a != nil && peer < len(*a) {
			here := (*a)[peer] != ""
			t.mu.Unlock()
			if !here {
				return fmt.Errorf("process %d is not a process of the job on this host", peer)
			}
			return nil
		}
		n := 0
		if a != nil {
			n = len(*a)
		}
		ch := t.peersSet
		t.mu.Unlock()
		if wait == nil {
			wait = time.NewTimer(time.Until(deadline))
			defer wait.Stop()
		}
		select {
		case <-ch:
		case <-wait.C:
			return fmt.Errorf("process %d is not in the job (%d processes)", peer, n)
		case <-t.ctx.Done():
			return transport.ErrClosed
		}
	}
}

// peerCred returns the process id the kernel knows for c's other end
// (SO_PEERCRED: the process that connected, or that listened), checked
// to be of this process's user.
func (t *Transport) peerCred(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != t.uid {
		return 0, fmt.Errorf("the peer (pid %d) runs as user %d, this process as %d", cred.Pid, cred.Uid, t.uid)
	}
	return int(cred.Pid), nil
}

// accept answers a peer's dial: the handshake (the peer proves the job's
// secret and this process proves it back), then the peer's hello with the
// segment and the peer's doorbell. When both ranks dial each other at
// once, the dial of the lower rank wins; the other is refused.
func (t *Transport) accept(pc *acceptloop.Pending, c *net.UnixConn) error {
	deadline := time.Now().Add(t.cfg.ConnectTimeout)
	c.SetDeadline(deadline)
	key, err := t.authKey(deadline)
	if err != nil {
		return err
	}
	proved := -1
	if key != nil {
		h, err := wireauth.Accept(c, c, key, t.checkHello)
		if err != nil {
			return err
		}
		proved = int(h.From)
		if !pc.Authenticated() {
			return errShed
		}
	}
	var hb [helloSize]byte
	fds, err := readFds(c, hb[:], helloFds)
	if err != nil {
		return fmt.Errorf("no pair hello: %w", err)
	}
	defer closeFds(fds)
	hello, err := decodePairHello(hb[:])
	if err != nil {
		return err
	}
	if key == nil {
		if err := checkClaim(hello.Rank, t.cfg.Self); err != nil {
			return err
		}
		if !pc.Authenticated() {
			return errShed
		}
	} else if hello.Rank != uint64(proved) {
		return fmt.Errorf("the pair hello names process %d, the handshake proved %d", int64(hello.Rank), proved)
	}
	peer := int(hello.Rank)
	if err := t.waitPeer(peer, deadline); err != nil {
		return err
	}
	pid, err := t.peerCred(c)
	if err != nil {
		return fmt.Errorf("process %d: %w", peer, err)
	}
	seg, err := mapPeerRegion(fds[0], segSize, "segment")
	if err != nil {
		return fmt.Errorf("process %d passed a bad %w", peer, err)
	}
	pbell, err := mapPeerRegion(fds[1], bellSize, "doorbell")
	if err != nil {
		seg.unmap()
		return fmt.Errorf("process %d passed a bad %w", peer, err)
	}
	if err := checkEventfd(fds[2]); err != nil {
		seg.unmap()
		pbell.unmap()
		return fmt.Errorf("process %d passed a bad doorbell eventfd: %w", peer, err)
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		seg.unmap()
		pbell.unmap()
		return transport.ErrClosed
	}
	p := t.pairLocked(peer)
	if p.up.Load() || (p.dialing && peer > t.cfg.Self) {
		t.mu.Unlock()
		seg.unmap()
		pbell.unmap()
		reply := pairReply{Status: replyRefuse, Probe: t.probeAddr()}.encode()
		c.Write(reply[:])
		c.Close()
		return nil
	}
	p.pid = pid
	if !t.cfg.NoCMA && t.canRead(pid, hello.Probe) {
		// This process reads the peer's large frames from its memory:
		// the flag is on the direction it receives on (1), which the
		// peer writes.
		viewDir(seg, 1).cma.Store(1)
	}
	t.establishLocked(p, c, seg, pbell, fds[2], 1)
	fds[2] = -1 // the pair's now
	t.mu.Unlock()
	reply := pairReply{Status: replyAccept, Probe: t.probeAddr()}.encode()
	_, _, err = c.WriteMsgUnix(reply[:], unix.UnixRights(t.bellFd, t.evFd), nil)
	c.SetDeadline(time.Time{})
	if err != nil {
		c.Close() // the watcher reports the peer lost
	}
	return nil
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
	p.seg, p.pbell, p.pev = seg, t.bell, t.evFd
	p.in = viewDir(seg, 0)
	p.out = p.in
	p.up.Store(true)
	p.changed()
	rx := append(append([]*pair(nil), *t.rx.Load()...), p)
	t.rx.Store(&rx)
	return nil
}

// establishLocked makes p up on connection c and segment seg, where this
// rank receives on direction in, the peer's doorbell page pbell and
// eventfd pev (the pair's now); t.mu held.
func (t *Transport) establishLocked(p *pair, c *net.UnixConn, seg, pbell region, pev, in int) {
	p.c, p.seg, p.pbell, p.pev = c, seg, pbell, pev
	p.in, p.out = viewDir(seg, in), viewDir(seg, 1-in)
	p.expect = false
	p.err = nil
	p.up.Store(true)
	p.changed()
	rx := append(append([]*pair(nil), *t.rx.Load()...), p)
	t.rx.Store(&rx)
	t.ringSelf() // the peer may have published (and rung) before the pair was polled
	t.wg.Add(1)
	go t.watch(p)
	p.mu.Lock()
	// An error recorded before the pair was up is that of a failed set-up
	// attempt of this process (a dial, lookup or handshake that failed;
	// not Close's, which is never followed by a set-up): it ended the
	// frames sent during the attempt, not the pair the peer has now set
	// up. Kept, every later frame to the peer failed while the peer's
	// frames arrived, and a peer loss the runtime refuted (a suspicion,
	// the process alive) left the job hung.
	p.werr = nil
	p.setSlowLocked()
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
	resolved := t.resolve.Load() == nil || p.rank == t.cfg.Self
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
		if !resolved {
			// This process must dial: the peer's address first (not
			// marked dialing meanwhile, so a set-up by the peer during
			// the read is accepted and used instead).
			t.mu.Unlock()
			resolved = true
			if err := (*t.resolve.Load())(p.rank); err != nil {
				t.mu.Lock()
				if !p.up.Load() {
					p.err = err
				}
				p.changed()
				t.mu.Unlock()
			}
			continue
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

func (t *Transport) probeAddr() uint64 { return uint64(uintptr(unsafe.Pointer(&t.probe[0]))) }

// dial connects to p's peer, runs the handshake (the peer proves the
// job's secret before anything is passed), creates the segment and
// passes it; on acceptance p is up.
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
	deadline := time.Now().Add(t.cfg.ConnectTimeout)
	c.SetDeadline(deadline) // under t.mu: Close shortens it
	t.hs[c] = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.hs, c)
		t.mu.Unlock()
	}()
	key, err := t.authKey(deadline)
	if err == nil && key != nil {
		err = wireauth.Dial(c, key, wireauth.Hello{Proto: wireauth.ProtoShm, Scope: t.cfg.Scope, From: uint64(t.cfg.Self), To: uint64(p.rank)})
	}
	if err != nil {
		c.Close()
		return fmt.Errorf("connect to rank %d: %w", p.rank, err)
	}
	pid, err := t.peerCred(c)
	if err != nil {
		c.Close()
		return fmt.Errorf("connect to rank %d: %w", p.rank, err)
	}
	seg, segFd, err := newRegion("ftmpi-pair", segSize)
	if err != nil {
		c.Close()
		return err
	}
	defer unix.Close(segFd) // the peer has its own descriptor once it read the hello
	fail := func(err error) error {
		seg.unmap()
		c.Close()
		return err
	}
	hello := pairHello{Rank: uint64(t.cfg.Self), Probe: t.probeAddr()}.encode()
	if _, _, err := c.WriteMsgUnix(hello[:], unix.UnixRights(segFd, t.bellFd, t.evFd), nil); err != nil {
		return fail(fmt.Errorf("connect to rank %d: %w", p.rank, err))
	}
	var rb [replySize]byte
	oob := make([]byte, unix.CmsgSpace(4*replyFdsWant))
	n, oobn, flags, _, err := c.ReadMsgUnix(rb[:], oob)
	var fds []int
	if err == nil && oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for i := range msgs {
				if f, e := unix.ParseUnixRights(&msgs[i]); e == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	if err == nil && n < replySize {
		_, err = io.ReadFull(c, rb[n:])
	}
	if err != nil {
		closeFds(fds)
		return fail(fmt.Errorf("connect to rank %d: no handshake reply: %w", p.rank, err))
	}
	reply, err := decodePairReply(rb[:])
	if err != nil {
		closeFds(fds)
		return fail(fmt.Errorf("connect to rank %d: %w", p.rank, err))
	}
	if reply.Status != replyAccept {
		closeFds(fds)
		return fail(errRefused)
	}
	if len(fds) != replyFdsWant || flags&unix.MSG_CTRUNC != 0 {
		closeFds(fds)
		return fail(fmt.Errorf("connect to rank %d: %d descriptors in the reply, want its doorbell's two", p.rank, len(fds)))
	}
	pbell, err := mapPeerRegion(fds[0], bellSize, "doorbell")
	unix.Close(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return fail(fmt.Errorf("connect to rank %d: it passed a bad %w", p.rank, err))
	}
	pev := fds[1]
	if err := checkEventfd(pev); err != nil {
		unix.Close(pev)
		pbell.unmap()
		return fail(fmt.Errorf("connect to rank %d: it passed a bad doorbell eventfd: %w", p.rank, err))
	}
	t.mu.Lock()
	if t.closed || p.up.Load() {
		t.mu.Unlock()
		pbell.unmap()
		unix.Close(pev)
		if t.closed {
			// The peer set the pair up: it hears a goodbye, not a loss.
			c.SetWriteDeadline(time.Now().Add(closeFlush))
			c.Write([]byte{byeByte})
		}
		return fail(transport.ErrClosed)
	}
	c.SetDeadline(time.Time{})
	p.pid = pid
	if !t.cfg.NoCMA && t.canRead(pid, reply.Probe) {
		viewDir(seg, 0).cma.Store(1) // the direction this process receives on, as in accept
	}
	t.establishLocked(p, c, seg, pbell, pev, 0)
	t.mu.Unlock()
	return nil
}
