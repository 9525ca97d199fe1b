package ftdrive

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/ft/shmagree"
)

var names atomic.Uint64

// segName is a rendezvous name no other test (nor another run) uses.
func segName(t *testing.T) string {
	return fmt.Sprintf("test-%d-%d-%s", os.Getpid(), names.Add(1), t.Name())
}

// nameBound reports whether name's socket address is bound (a bind of it
// fails), without connecting (a connection would be served).
func nameBound(t *testing.T, name string) bool {
	t.Helper()
	ln, err := net.ListenUnix("unix", sockAddr(name))
	if err == nil {
		ln.Close()
		return false
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal(err)
	}
	return true
}

// fakeListener serves name as a hostile or broken process of this user
// would: answer writes what it passes to each connection.
func fakeListener(t *testing.T, name string, answer func(c *net.UnixConn)) {
	t.Helper()
	ln, err := net.ListenUnix("unix", sockAddr(name))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			answer(c)
			c.Close()
		}
	}()
}

func reply(magic, n uint32) []byte {
	b := make([]byte, replySize)
	binary.LittleEndian.PutUint32(b, magic)
	binary.LittleEndian.PutUint32(b[4:], n)
	return b
}

// memfd makes a memory file of size bytes with seals.
func memfd(t *testing.T, size, seals int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	if seals != 0 {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			t.Fatal(err)
		}
	}
	return fd
}

// A name held by a listener of this user that passes anything but the
// segment is refused (openSegment's error: the caller's agreements take the
// message protocol), within OpenWait, never mapped. What the listener
// offered is a refusal a process says on stderr (errRefused); a listener
// that went away or never answered (its member died or stopped) is a
// failure, and the fallback is silent (MPICH's ft tests fail a rank that
// prints: senddead, gather, shrink did with the segment on by default).
func TestOpenRefusesBadSegments(t *testing.T) {
	old := OpenWait
	OpenWait = 200 * time.Millisecond
	defer func() { OpenWait = old }()
	const n = 3
	file, err := os.CreateTemp(t.TempDir(), "plain")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := file.Truncate(int64(shmagree.Size(n))); err != nil {
		t.Fatal(err)
	}
	sealed, unsealed, short := memfd(t, shmagree.Size(n), sealsWant), memfd(t, shmagree.Size(n), 0), memfd(t, shmagree.Size(n)-8, sealsWant)
	for _, c := range []struct {
		name, want string
		answer     func(c *net.UnixConn)
		quiet      bool // a failure, not a refusal: not said on stderr
	}{
		{"silent", "none from its listener", func(c *net.UnixConn) { io.Copy(io.Discard, c) }, true}, // until the member gives up
		{"gone", "none from its listener", func(c *net.UnixConn) {}, true},                           // closed at once, as by a member's death
		{"magic", "not a segment's", func(c *net.UnixConn) { c.Write(reply(1, n)) }, false},
		{"members", "made for 4 members", func(c *net.UnixConn) {
			c.WriteMsgUnix(reply(replyMagic, 4), unix.UnixRights(sealed), nil)
		}, false},
		{"no descriptor", "0 descriptors", func(c *net.UnixConn) { c.Write(reply(replyMagic, n)) }, false},
		{"plain file", "not a memory file", func(c *net.UnixConn) {
			c.WriteMsgUnix(reply(replyMagic, n), unix.UnixRights(int(file.Fd())), nil)
		}, false},
		{"unsealed", "not sealed", func(c *net.UnixConn) {
			c.WriteMsgUnix(reply(replyMagic, n), unix.UnixRights(unsealed), nil)
		}, false},
		{"short", "bytes, want", func(c *net.UnixConn) {
			c.WriteMsgUnix(reply(replyMagic, n), unix.UnixRights(short), nil)
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := segName(t)
			fakeListener(t, name, c.answer)
			start := time.Now()
			s, _, err := openSegment(name, n, 1)
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q, want it to say %q", err, c.want)
			}
			if said := errors.Is(err, errRefused); said == c.quiet {
				t.Fatalf("error %q: a refusal said on stderr %v, want %v", err, said, !c.quiet)
			}
			if d := time.Since(start); d > OpenWait+5*time.Second {
				t.Fatalf("refused after %v", d)
			}
		})
	}
}

// A name bound by another user's process (it saw the name in
// /proc/net/unix and bound it once it was free) is refused at once: its
// listener's user is not this process's. Needs root (to run the
// listener as another user).
func TestOpenRefusesOtherUsersListener(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a process of another user")
	}
	// The test binary, where user nobody can run it.
	dir, err := os.MkdirTemp("", "shmagree-squat")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "squat")
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := segName(t)
	cmd := exec.Command(bin, "-test.run=^TestSquatHelper$")
	cmd.Env = append(os.Environ(), "SHMAGREE_SQUAT="+name)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("user nobody cannot run the test binary from %s: %v", dir, err)
		}
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-ready:
		if line != "squatting\n" {
			t.Fatalf("the other user's process said %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the other user's process did not bind the name within 30 s")
	}
	start := time.Now()
	s, _, err := openSegment(name, 2, 1)
	if err == nil {
		s.Close()
		t.Fatal("opened a segment served by another user")
	}
	if !strings.Contains(err.Error(), "runs as user 65534") || !errors.Is(err, errRefused) {
		t.Fatalf("error %q, want a refusal (said on stderr) naming the other user", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("refused after %v", d)
	}
}

// TestSquatHelper is the other user's process of
// TestOpenRefusesOtherUsersListener: it binds the name and serves a
// well-formed segment until its standard input closes.
func TestSquatHelper(t *testing.T) {
	name := os.Getenv("SHMAGREE_SQUAT")
	if name == "" {
		t.Skip("the helper of TestOpenRefusesOtherUsersListener")
	}
	_, srv, err := rendezvous(name, 2)
	if err != nil || srv == nil {
		t.Fatalf("bind the name: %v (served: %v)", err, srv != nil)
	}
	defer srv.stop()
	fmt.Println("squatting")
	io.Copy(io.Discard, os.Stdin)
}

// open maps member me's view of the segment of n members named name.
func open(t *testing.T, name string, n, me int) (*shmagree.Seg, *server) {
	t.Helper()
	s, srv, err := openSegment(name, n, me)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if srv != nil {
			srv.stop()
		}
		s.Close()
	})
	return s, srv
}

// The first member to open a name makes the segment and serves it; the
// others are passed it (one memory: a decision over it); once every
// member has it the name is gone (the listener closed: nothing is left
// anywhere should the job be killed), and a member opening the name
// after stop makes a new segment.
func TestSegmentRendezvous(t *testing.T) {
	name := segName(t)
	a, srv := open(t, name, 2, 0)
	if srv == nil {
		t.Fatal("the first member does not serve the segment")
	}
	if !nameBound(t, name) {
		t.Fatal("the name is gone before every member opened the segment")
	}
	b, bsrv := open(t, name, 2, 1)
	if bsrv != nil {
		t.Fatal("the second member made a segment of its own")
	}
	select {
	case <-srv.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the listener still serves after every member opened the segment")
	}
	if nameBound(t, name) {
		t.Fatal("the name is still bound after every member opened the segment")
	}
	never := func(int) bool { return false }
	done := make(chan shmagree.Outcome, 1)
	go func() {
		_, o, _ := a.Agree(1, agree.Value{Flags: 1}, never, nil, nil)
		done <- o
	}()
	if _, o, _ := b.Agree(1, agree.Value{Flags: 1}, never, nil, nil); o != shmagree.Decided {
		t.Fatalf("b: %v", o)
	}
	select {
	case o := <-done:
		if o != shmagree.Decided {
			t.Fatalf("a: %v", o)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a did not decide")
	}
	// stop drops the name of a segment not every member has yet.
	name2 := segName(t)
	_, srv2 := open(t, name2, 3, 0)
	srv2.stop()
	if _, srv3 := open(t, name2, 3, 1); srv3 == nil {
		t.Fatal("the name still led to the stopped member's segment")
	}
}
