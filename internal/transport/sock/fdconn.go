package sock

// A connection's socket outside the runtime's poller (issue 28 item 6).
//
// A socket the runtime polls (a net.Conn) is in its epoll set for reading
// for as long as it is open, and whenever a processor is idle a thread
// sleeps in epoll_wait: every frame that arrives wakes that thread, also
// when a polling caller (PollUntil) reads the frame itself. fdConn takes
// the socket out of that set once the handshake is done: the socket is a
// plain non-blocking descriptor, and epoll instances of its own (one for
// readability; one for writability, made when the send buffer first
// fills), which the runtime does poll, report it only while armed
// (EPOLLONESHOT: one report per arming).
// The reader goroutine arms readability only when it waits and no caller
// has polled lately (rx.parkArm); the writer arms writability when the
// send buffer is full. So a stream that polling callers read costs no
// wake-up of a thread per frame, and an idle connection still costs no
// thread (its reader is parked in the runtime's poller on the armed
// epoll instance).
//
// The descriptor is closed by the last of Close and the system calls in
// progress on it (a count), so a number that Close gave back to the
// system is never read or written by a late caller.

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// fdConn is a connected stream socket read and written with non-blocking
// system calls; it implements net.Conn and syscall.Conn.
type fdConn struct {
	fd    int
	refs  atomic.Int64 // 2 for each system call in progress on fd; bit 0: closed
	once  sync.Once
	rd    *os.File // epoll instance: fd readable (one-shot, armed by rx.parkArm)
	rdRaw syscall.RawConn
	// wr, the epoll instance for writability (one-shot, armed by a full
	// send buffer), is made on the first full send buffer: most
	// connections never need it. wrMu guards it and wdl (the write
	// deadline, applied when it is made).
	wrMu  sync.Mutex
	wr    *os.File
	wrRaw syscall.RawConn
	wdl   time.Time
	// arm decides, each time the reader waits, whether readability wakes
	// it (true) or only a deadline or a kick does (rx.parkArm); nil: arm.
	arm func() bool
	// armed: readability is armed in rd and not reported since (the
	// reader's; atomic for tests).
	armed        atomic.Bool
	reported     bool // the reader's last wait got a report (which disarms)
	laddr, raddr net.Addr
	evs          [4]syscall.EpollEvent // the reader's
	wevs         [4]syscall.EpollEvent // the writer's
	iov          [2]syscall.Iovec      // the writer's
	// onFull, when set by the write side's owner, is called before a
	// write waits for room in the send buffer (the writer's held
	// wake-ups, writeLoop).
	onFull func()
}

// errClosedConn is what a call on a closed fdConn returns.
var errClosedConn = net.ErrClosed

// newFdConn takes c's socket out of the runtime's poller: a duplicate of
// its descriptor becomes an fdConn and c is closed. On error c is left as
// it was.
func newFdConn(c net.Conn) (*fdConn, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errors.New("no file descriptor")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if e != 0 {
			derr = os.NewSyscallError("fcntl", e)
			return
		}
		fd = int(r)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, derr
	}
	fc := &fdConn{fd: fd, laddr: c.LocalAddr(), raddr: c.RemoteAddr()}
	fail := func(err error) (*fdConn, error) {
		if fc.rd != nil {
			fc.rd.Close()
		}
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return fail(err)
	}
	if fc.rd, fc.rdRaw, err = oneShot(fd, "sock-rd"); err != nil {
		return fail(err)
	}
	c.Close() // the duplicate keeps the connection open
	return fc, nil
}

// oneShot makes an epoll instance that holds fd disarmed (armed by
// EPOLL_CTL_MOD, one report per arming), polled by the runtime.
func oneShot(fd int, name string) (*os.File, syscall.RawConn, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, nil, os.NewSyscallError("epoll_create1", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLONESHOT, Fd: int32(fd)}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(ep)
		return nil, nil, os.NewSyscallError("epoll_ctl", err)
	}
	if err := syscall.SetNonblock(ep, true); err != nil {
		syscall.Close(ep)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(ep), name) // non-blocking: the runtime polls it
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rc, nil
}

// acquire counts a system call on fd; false once closed.
func (c *fdConn) acquire() bool {
	if c.refs.Add(2)&1 != 0 {
		c.release()
		return false
	}
	return true
}

// release ends what acquire counted; the last one after Close closes fd.
func (c *fdConn) release() {
	if c.refs.Add(-2) == 1 {
		c.once.Do(func() { syscall.Close(c.fd) })
	}
}

// Close implements net.Conn: waiters get an error now, fd is closed once
// no system call is on it.
func (c *fdConn) Close() error {
	for {
		v := c.refs.Load()
		if v&1 != 0 {
			return errClosedConn
		}
		if c.refs.CompareAndSwap(v, v|1) {
			break
		}
	}
	c.rd.Close()
	c.wrMu.Lock()
	if c.wr != nil {
		c.wr.Close()
	}
	c.wrMu.Unlock()
	if c.refs.Load() == 1 {
		c.once.Do(func() { syscall.Close(c.fd) })
	}
	return nil
}

// ctl arms (events) or disarms (0) fd in the epoll instance of rc.
func (c *fdConn) ctl(rc syscall.RawConn, events uint32) error {
	if !c.acquire() {
		return errClosedConn
	}
	defer c.release()
	var err error
	cerr := rc.Control(func(e uintptr) {
		ev := syscall.EpollEvent{Events: events | syscall.EPOLLONESHOT, Fd: int32(c.fd)}
		err = syscall.EpollCtl(int(e), syscall.EPOLL_CTL_MOD, c.fd, &ev)
	})
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// wait parks in the runtime's poller until ep reports fd (armed before),
// its deadline passes or it is closed; evs receives what it reports, got
// (if not nil) whether it reported.
func wait(rc syscall.RawConn, evs []syscall.EpollEvent, got *bool) error {
	return rc.Read(func(e uintptr) bool {
		for {
			n, err := syscall.EpollWait(int(e), evs, 0)
			if err == syscall.EINTR {
				continue
			}
			if n > 0 && got != nil {
				*got = true
			}
			return n > 0 || err != nil
		}
	})
}

// SyscallConn implements syscall.Conn.
func (c *fdConn) SyscallConn() (syscall.RawConn, error) { return fdRaw{c}, nil }

// fdRaw is fdConn's syscall.RawConn: Read waits between its function's
// calls in the readability epoll instance, armed as c.arm says.
type fdRaw struct{ c *fdConn }

func (r fdRaw) Control(f func(fd uintptr)) error {
	if !r.c.acquire() {
		return errClosedConn
	}
	defer r.c.release()
	f(uintptr(r.c.fd))
	return nil
}

func (r fdRaw) Read(f func(fd uintptr) bool) error {
	c := r.c
	for {
		if done, ok := c.call(f); !ok {
			return errClosedConn
		} else if done {
			return nil
		}
		// Armed until reported: a frame a caller read before the
		// runtime looked leaves it armed.
		if want := c.arm == nil || c.arm(); want != c.armed.Load() {
			ev := uint32(0)
			if want {
				ev = syscall.EPOLLIN | syscall.EPOLLRDHUP
			}
			if err := c.ctl(c.rdRaw, ev); err != nil {
				return err
			}
			c.armed.Store(want)
		}
		c.reported = false
		err := wait(c.rdRaw, c.evs[:], &c.reported)
		if c.reported {
			c.armed.Store(false)
		}
		if err != nil {
			return err
		}
	}
}

func (r fdRaw) Write(f func(fd uintptr) bool) error {
	c := r.c
	for {
		if done, ok := c.call(f); !ok {
			return errClosedConn
		} else if done {
			return nil
		}
		if err := c.waitOut(); err != nil {
			return err
		}
	}
}

// call runs f on the descriptor, held open meanwhile; ok is false if the
// connection is closed (f not run).
func (c *fdConn) call(f func(fd uintptr) bool) (done, ok bool) {
	if !c.acquire() {
		return false, false
	}
	done = f(uintptr(c.fd))
	c.release()
	return done, true
}

// waitOut waits until fd is writable (or the write deadline, or Close).
func (c *fdConn) waitOut() error {
	c.wrMu.Lock()
	if c.wr == nil {
		if c.refs.Load()&1 != 0 {
			c.wrMu.Unlock()
			return errClosedConn
		}
		wr, rc, err := oneShot(c.fd, "sock-wr")
		if err != nil {
			c.wrMu.Unlock()
			return err
		}
		wr.SetReadDeadline(c.wdl)
		c.wr, c.wrRaw = wr, rc
	}
	rc := c.wrRaw
	c.wrMu.Unlock()
	if err := c.ctl(rc, syscall.EPOLLOUT); err != nil {
		return err
	}
	return wait(rc, c.wevs[:], nil)
}

// Read implements net.Conn (the handshake is over when a connection
// becomes an fdConn: the reader reads through SyscallConn).
func (c *fdConn) Read(b []byte) (int, error) {
	var n int
	var err error
	rerr := fdRaw{c}.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Read(int(fd), b)
			if err == syscall.EINTR {
				continue
			}
			return err != syscall.EAGAIN
		}
	})
	if rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, os.NewSyscallError("read", err)
	}
	if n <= 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write implements net.Conn.
func (c *fdConn) Write(b []byte) (int, error) {
	return c.writev(b, nil)
}

// writev writes a then b (b may be nil) with as few system calls as the
// send buffer allows: one writev when both fit.
func (c *fdConn) writev(a, b []byte) (int, error) {
	total := len(a) + len(b)
	done := 0
	for done < total {
		if !c.acquire() {
			return done, errClosedConn
		}
		var n int
		var err error
		if done < len(a) && len(b) > 0 {
			c.iov[0] = syscall.Iovec{Base: &a[done]}
			c.iov[0].SetLen(len(a) - done)
			c.iov[1] = syscall.Iovec{Base: &b[0]}
			c.iov[1].SetLen(len(b))
			r, _, e := syscall.Syscall(syscall.SYS_WRITEV, uintptr(c.fd), uintptr(unsafe.Pointer(&c.iov[0])), 2)
			n = int(r)
			if e != 0 {
				n, err = 0, e
			}
			c.iov[0].Base, c.iov[1].Base = nil, nil
		} else if done < len(a) {
			n, err = syscall.Write(c.fd, a[done:])
		} else {
			n, err = syscall.Write(c.fd, b[done-len(a):])
		}
		c.release()
		switch {
		case err == syscall.EINTR:
		case err == syscall.EAGAIN:
			if f := c.onFull; f != nil {
				f()
			}
			if werr := c.waitOut(); werr != nil {
				return done, werr
			}
		case err != nil:
			return done, os.NewSyscallError("write", err)
		case n > 0:
			done += n
		}
	}
	return done, nil
}

func (c *fdConn) LocalAddr() net.Addr  { return c.laddr }
func (c *fdConn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline implements net.Conn.
func (c *fdConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline bounds the reader's wait (a deadline in the past kicks
// it out: rx.handOff).
func (c *fdConn) SetReadDeadline(t time.Time) error { return c.rd.SetReadDeadline(t) }

// SetWriteDeadline bounds a write's wait for room in the send buffer.
func (c *fdConn) SetWriteDeadline(t time.Time) error {
	c.wrMu.Lock()
	defer c.wrMu.Unlock()
	c.wdl = t
	if c.wr == nil {
		return nil
	}
	return c.wr.SetReadDeadline(t)
}
