package launch

import (
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// eventSockaddr is the address of a rank's event socket.
type eventSockaddr struct {
	sa  unix.RawSockaddrUnix
	len uint32 // address length for sendmsg
}

// eventAddr parses the address of a rank's event socket (the path of a
// unix datagram socket), nil if there is none or it is not one.
func eventAddr(name string) *eventSockaddr {
	a := &eventSockaddr{sa: unix.RawSockaddrUnix{Family: unix.AF_UNIX}}
	if len(name) < 2 || name[0] != '/' || len(name) >= len(a.sa.Path) || strings.IndexByte(name, 0) >= 0 {
		return nil
	}
	for i := 0; i < len(name); i++ {
		a.sa.Path[i] = int8(name[i])
	}
	a.len = uint32(unsafe.Offsetof(a.sa.Path)) + uint32(len(name)) + 1 // with the terminating NUL
	return a
}

// sendEvents sends line as a datagram to the event socket of each
// connection's rank in conns (each has one), as many as possible in one
// sendmmsg, and returns which ones the kernel took. It never waits (a full
// socket is skipped). Under h.mu.
func (h *head) sendEvents(conns []*ctlConn, line []byte) map[*ctlConn]bool {
	sent := make(map[*ctlConn]bool, len(conns))
	if len(conns) == 0 || len(line) == 0 {
		return sent
	}
	if !h.evOpened {
		h.evOpened = true
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil || h.closed {
			if err == nil {
				unix.Close(fd)
			}
			fd = -1
		}
		h.evFD = fd
	}
	if h.evFD < 0 {
		return sent
	}
	if len(conns) > 1 {
		// A broadcast (a failure's notice to every survivor): each
		// datagram wakes a rank that, on a crowded host, preempts this
		// thread inside the call (ftrace at np 16 on 2 cores: 2-10 ms
		// between the first and the last of 15 with a killed rank's
		// exit holding the other core), so the last ranks are woken late.
		// Run above them for the call if allowed (rtFor).
		restore, raised := rtFor(!h.noRT)
		defer restore()
		if raised {
			h.rtBroadcasts.Add(1)
		}
	}
	iov := &unix.Iovec{Base: &line[0]}
	iov.SetLen(len(line))
	msgs := make([]unix.Mmsghdr, len(conns))
	for i, c := range conns {
		a := c.evAddr
		msgs[i].Hdr.Name = (*byte)(unsafe.Pointer(&a.sa))
		msgs[i].Hdr.Namelen = a.len
		msgs[i].Hdr.Iov = iov
		msgs[i].Hdr.SetIovlen(1)
	}
	for i := 0; i < len(msgs); {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(h.evFD), uintptr(unsafe.Pointer(&msgs[i])), uintptr(len(msgs)-i), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case errno == unix.EINTR:
		case errno != 0 || n == 0:
			i++ // msgs[i] failed (the socket is gone or full): the control connection carries it
		default:
			for k := 0; k < int(n); k++ {
				sent[conns[i+k]] = true
			}
			i += int(n) // a short count means msgs[i] failed: the next call reports it
		}
	}
	runtime.KeepAlive(line)
	runtime.KeepAlive(iov)
	for _, c := range conns {
		runtime.KeepAlive(c.evAddr)
	}
	return sent
}

// closeEvents closes the datagram socket (under h.mu, at close).
func (h *head) closeEvents() {
	if h.evOpened && h.evFD >= 0 {
		unix.Close(h.evFD)
	}
	h.evOpened, h.evFD = true, -1 // never reopened
}

// rtFor makes the calling thread real-time (SCHED_FIFO, the lowest
// priority) until the returned function is called, so that the ranks its
// datagrams wake do not preempt it before the last is sent; where that is
// not permitted (no CAP_SYS_NICE nor RLIMIT_RTPRIO: most users) it does
// nothing (raised false). The goroutine keeps its thread meanwhile; the
// thread's policy and nice value are restored before it is let go.
// EnvNoRT=1 in ftmpirun's environment turns it off (head.noRT).
func rtFor(enabled bool) (restore func(), raised bool) {
	if !enabled {
		return func() {}, false
	}
	runtime.LockOSThread()
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil || old.Policy != unix.SCHED_NORMAL {
		runtime.UnlockOSThread()
		return func() {}, false
	}
	if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}, 0) != nil {
		runtime.UnlockOSThread()
		return func() {}, false
	}
	return func() {
		// Back to what it was; if that fails, the thread must not run
		// other goroutines real-time: it ends with this goroutine's lock.
		if unix.SchedSetAttr(0, &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: old.Policy, Nice: old.Nice}, 0) == nil {
			runtime.UnlockOSThread()
		}
	}, true
}

// EnvNoRT, set to 1 in ftmpirun's environment, keeps a failure notice's
// broadcast at the launcher's normal priority (rtFor; measurements).
const EnvNoRT = "FTMPI_NOTIFY_NO_RT"
