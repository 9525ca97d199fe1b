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
