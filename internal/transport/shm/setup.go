package shm

// Pair set-up: accepting and dialling, the handshake, the watcher.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/transport"
)

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
