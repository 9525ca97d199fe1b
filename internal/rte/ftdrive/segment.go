package ftdrive

// How the members of a communicator find one agreement segment
// (internal/ft/shmagree maps it), however they were launched (ftmpirun,
// srun or hydra through PMI, spawned, connected): a name every member
// derives alike (UseSegment's: package mpi's digest keyed by the job's
// secret, so no other job and no other user can know it before it is
// used) names a Unix socket in the abstract namespace, not a file. The
// first member to bind it makes the segment, an anonymous memory file
// (memfd) sealed against resizing, and passes its descriptor to each
// member that connects; the others connect and map what they are passed.
// Nothing ever appears in a file system: the kernel drops the name when
// its listener closes (every other member was served, or the
// communicator is freed: Agreements.Close) or its process dies, and the
// memory when the last mapping is gone, so a killed job leaves nothing
// behind.
//
// Refusals (each an error of openSegment; the communicator's agreements
// then take the message protocol at this member, and the others fall
// back after shmagree.Patience at most, as for a member that never
// arrives): a listener that runs as another user (SO_PEERCRED), a reply
// that is not the segment's (magic, member count), a descriptor that is
// not a memory file of the segment's size sealed against resizing. A
// listener that accepts and never answers costs the member OpenWait at
// most. A member that never arrives keeps the listener's goroutine until
// the communicator is freed, nothing more.

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/ft/shmagree"
)

// OpenWait bounds how long a member looks for the segment of a name whose
// listener is another member's (the connection, the descriptor's
// arrival).
var OpenWait = 2 * time.Second

const (
	replyMagic = 0x67617466 // "ftag" on the wire
	replySize  = 8          // magic, members
	sealsWant  = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
)

// sockAddr is the abstract Unix socket address of rendezvous name name
// (a digest: any name fits a socket address).
func sockAddr(name string) *net.UnixAddr {
	d := sha256.Sum256([]byte(name))
	return &net.UnixAddr{Name: fmt.Sprintf("@ftmpi-agree-%x", d[:16]), Net: "unix"}
}

// server passes the segment's memory file to the members that connect to
// its name, until n-1 did or stop.
type server struct {
	ln   *net.UnixListener
	fd   int
	n    int
	done chan struct{}
	once sync.Once
}

// openSegment maps member me's view of the segment of n members named
// name: made here (srv non-nil: this process serves it until srv.stop) or
// passed by the member that made it.
func openSegment(name string, n, me int) (*shmagree.Seg, *server, error) {
	fd, srv, err := rendezvous(name, n)
	if err != nil {
		return nil, nil, err
	}
	s, err := shmagree.Map(fd, n, me)
	if srv == nil {
		unix.Close(fd) // passed here: the mapping keeps the memory
	}
	if err != nil {
		if srv != nil {
			srv.stop()
		}
		return nil, nil, err
	}
	if srv != nil && n == 1 {
		srv.stop()
		srv = nil
	}
	return s, srv, nil
}

// rendezvous returns a descriptor of the segment's memory file of n
// members named name: made here (srv non-nil: srv owns the descriptor and
// passes it on) or passed by the member that made it (the caller's).
func rendezvous(name string, n int) (fd int, srv *server, err error) {
	addr := sockAddr(name)
	deadline := time.Now().Add(OpenWait)
	for {
		ln, lerr := net.ListenUnix("unix", addr)
		if lerr == nil {
			return create(ln, n)
		}
		if !errors.Is(lerr, syscall.EADDRINUSE) {
			return -1, nil, fmt.Errorf("agreement segment: listen on its name: %w", lerr)
		}
		c, derr := net.DialUnix("unix", nil, addr)
		if derr == nil {
			fd, err := fetch(c, n, deadline)
			c.Close()
			return fd, nil, err
		}
		// The name's listener is gone (its member closed it or died) or
		// not listening yet (bound a moment ago): bind or connect again.
		if !errors.Is(derr, syscall.ECONNREFUSED) && !errors.Is(derr, syscall.ENOENT) {
			return -1, nil, fmt.Errorf("agreement segment: connect to its name: %w", derr)
		}
		if time.Now().After(deadline) {
			return -1, nil, fmt.Errorf("agreement segment: its name is bound but nobody serves it within %v", OpenWait)
		}
		runtime.Gosched()
	}
}

// create makes the segment's memory file, sized and sealed against
// resizing, and serves it on ln.
func create(ln *net.UnixListener, n int) (int, *server, error) {
	fd, err := unix.MemfdCreate("ftmpi-agree", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err == nil {
		err = unix.Ftruncate(fd, int64(shmagree.Size(n)))
		if err == nil {
			_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, sealsWant)
		}
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		ln.Close()
		return -1, nil, fmt.Errorf("agreement segment: %w: %w", errMake, err)
	}
	srv := &server{ln: ln, fd: fd, n: n, done: make(chan struct{})}
	go srv.serve()
	return fd, srv, nil
}

// serve passes the memory file to each member that connects (this user's
// processes only) until n-1 were served or the listener closes; then the
// name is gone.
func (s *server) serve() {
	defer close(s.done)
	defer unix.Close(s.fd)
	defer s.ln.Close()
	var reply [replySize]byte
	binary.LittleEndian.PutUint32(reply[0:], replyMagic)
	binary.LittleEndian.PutUint32(reply[4:], uint32(s.n))
	for served := 0; served < s.n-1; {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return // closed (Remove, Close)
		}
		if _, err := peerUID(c); err == nil {
			c.SetWriteDeadline(time.Now().Add(OpenWait))
			if _, _, err := c.WriteMsgUnix(reply[:], unix.UnixRights(s.fd), nil); err == nil {
				served++
			}
		}
		c.Close()
	}
}

// stop closes the listener (the name is dropped) and waits for serve.
func (s *server) stop() {
	s.once.Do(func() { s.ln.Close() })
	<-s.done
}

// peerUID returns the user of c's other end, an error if it is not this
// process's.
func peerUID(c *net.UnixConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	if int(cred.Uid) != os.Geteuid() {
		return int(cred.Uid), fmt.Errorf("its listener (pid %d) runs as user %d, this process as %d", cred.Pid, cred.Uid, os.Geteuid())
	}
	return int(cred.Uid), nil
}

// errRefused marks a segment refused for what its listener offered
// (another user's process, a reply that is not a segment's, the wrong
// size, seals or descriptors): worth a line on stderr. A listener that
// went away before it replied (its member died or freed the communicator)
// is not: that is a failure the agreements handle, and the fallback to
// messages is silent (MPICH's fault-tolerance tests count any line a
// rank prints as a failure).
var errRefused = errors.New("agreement segment refused")

// errMake marks a segment this member could not make (memfd_create,
// ftruncate or the seals failed: a limit of the host): worth a line too.
var errMake = errors.New("make it")

// fetch reads the segment's memory file from the member that serves it on
// c and checks it: the caller's descriptor.
func fetch(c *net.UnixConn, n int, deadline time.Time) (int, error) {
	if _, err := peerUID(c); err != nil {
		return -1, fmt.Errorf("%w: %w", errRefused, err)
	}
	c.SetReadDeadline(deadline)
	var reply [replySize]byte
	oob := make([]byte, unix.CmsgSpace(4*2))
	k, oobn, flags, _, err := c.ReadMsgUnix(reply[:], oob)
	var fds []int
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil {
			for i := range msgs {
				if f, e := unix.ParseUnixRights(&msgs[i]); e == nil {
					fds = append(fds, f...)
				}
			}
		}
	}
	bad := func(err error) (int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return -1, err
	}
	switch {
	case err != nil:
		return bad(fmt.Errorf("agreement segment: none from its listener: %w", err))
	case k == 0 && oobn == 0:
		return bad(errors.New("agreement segment: none from its listener: it closed the connection"))
	case k != replySize || binary.LittleEndian.Uint32(reply[0:]) != replyMagic:
		return bad(fmt.Errorf("%w: its listener's reply is not a segment's", errRefused))
	case binary.LittleEndian.Uint32(reply[4:]) != uint32(n):
		return bad(fmt.Errorf("%w: made for %d members, not %d", errRefused, binary.LittleEndian.Uint32(reply[4:]), n))
	case len(fds) != 1 || flags&unix.MSG_CTRUNC != 0:
		return bad(fmt.Errorf("%w: %d descriptors passed, want 1", errRefused, len(fds)))
	}
	if err := checkMemfd(fds[0], shmagree.Size(n)); err != nil {
		return bad(fmt.Errorf("%w: %w", errRefused, err))
	}
	return fds[0], nil
}

// checkMemfd checks a passed descriptor before it is mapped: a regular
// file of exactly size bytes whose size can never change (else whoever
// holds it could shrink it under the mapping: a SIGBUS at the next step).
func checkMemfd(fd, size int) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("not a memory file (F_GET_SEALS: %v)", err)
	}
	if seals&sealsWant != sealsWant {
		return fmt.Errorf("a memory file not sealed against resizing (seals %#x)", seals)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(size) {
		return fmt.Errorf("a file of mode %#o and %d bytes, want a memory file of %d", st.Mode, st.Size, size)
	}
	return nil
}
