package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// A same-user process that is not part of the job (the test, without the
// job's secret) attacks rank 0's shared-memory socket while the job runs,
// before any rank has set up a pair: the plain pair hello of every other
// rank with a segment it then shrinks (before the set-up was
// authenticated, this took the real rank's place, and the shrink killed
// rank 0 with SIGBUS), a claim of process id -5 (rank 0 reported -5 lost),
// a wrong secret, and 100 connections that never speak. Every attempt is
// refused with its reason logged, and the job prints its failure-free
// result.
func TestHostileShmSetUp(t *testing.T) {
	prog := buildOnce(t, "hostileshm")
	const np = 4
	mark := jobtest.NewMark(t)
	goFile := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin["ftmpirun"], "-n", fmt.Sprint(np), "--transport", "shm", "--timeout", "100s", prog, goFile)
	cmd.Env = append(os.Environ(), jobtest.MarkVar+"="+mark)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	finished := false
	defer func() {
		if !finished {
			cmd.Process.Kill()
			cmd.Wait()
			jobtest.AssertNoLeftovers(t, mark, 2*time.Second)
		}
	}()
	sc := bufio.NewScanner(out)
	var stdout []string
	var ready string
	for ready == "" && sc.Scan() {
		stdout = append(stdout, sc.Text())
		if strings.HasPrefix(sc.Text(), "ready ") {
			ready = sc.Text()
		}
	}
	if ready == "" {
		cmd.Wait()
		finished = true
		t.Fatalf("no ready line\nstdout:\n%s\nstderr:\n%s", strings.Join(stdout, "\n"), stderr.String())
	}
	var dir string
	var pid int
	if _, err := fmt.Sscanf(ready, "ready dir=%s pid=%d", &dir, &pid); err != nil {
		t.Fatalf("%q: %v", ready, err)
	}
	socks, _ := filepath.Glob(filepath.Join(dir, "r0.*shm.sock"))
	if len(socks) != 1 {
		t.Fatalf("rank 0's shared-memory socket in %s: %v", dir, socks)
	}
	rank0 := socks[0]

	// Connections that never speak, held while the job runs.
	for range 100 {
		c := dialRogue(t, "unix", rank0)
		defer c.Close()
	}
	// The plain pair hello (magic, process id, pid, probe address) of
	// every other rank and of -5, each with a segment and a doorbell,
	// and a frame's worth of bytes; the segment shrunk afterwards.
	minus5 := -5
	for _, claim := range []uint64{1, 2, 3, uint64(minus5)} {
		seg, bell := memfdOf(t, 663552), memfdOf(t, 4096)
		c := dialRogue(t, "unix", rank0).(*net.UnixConn)
		var hello [24 + 48]byte
		binary.LittleEndian.PutUint32(hello[0:], 0x66746d73)
		binary.LittleEndian.PutUint64(hello[4:], claim)
		binary.LittleEndian.PutUint32(hello[12:], uint32(os.Getpid()))
		if _, _, err := c.WriteMsgUnix(hello[:], unix.UnixRights(seg, bell), nil); err != nil {
			t.Fatal(err)
		}
		refused(t, c)
		if err := unix.Ftruncate(seg, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A wrong secret, claiming rank 1.
	rogueKey, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	c := dialRogue(t, "unix", rank0)
	if err := wireauth.Dial(c, rogueKey, wireauth.Hello{Proto: wireauth.ProtoShm, From: 1, To: 0}); !errors.Is(err, wireauth.ErrMAC) {
		t.Fatalf("rank 0 answered a wrong secret's handshake with a MAC this side could check (%v)", err)
	}
	c.Close()

	// The job goes on: its normal result.
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		stdout = append(stdout, sc.Text())
	}
	err = cmd.Wait()
	finished = true
	jobtest.AssertNoLeftovers(t, mark, 2*time.Second)
	all, errText := strings.Join(stdout, "\n"), stderr.String()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil || !strings.Contains(all, fmt.Sprintf("result: pairs and allreduce sum=%d size=%d", (np-1)*np*(np-1)/2, np)) {
		t.Fatalf("exit %v\nstdout:\n%s\nstderr:\n%s", err, all, errText)
	}
	for _, want := range []string{
		"ftmpi: process 0: refused a shared-memory set-up: wireauth: malformed handshake: bad magic 0x66746d73",
		"ftmpi: process 0: refused a shared-memory set-up: wireauth: no proof from the peer claiming 1",
	} {
		if !strings.Contains(errText, want) {
			t.Errorf("the log lacks %q\nstderr:\n%s", want, errText)
		}
	}
	for _, bad := range []string{"panic", "SIGBUS", "lost", "failed", "-5"} {
		if strings.Contains(errText, bad) {
			t.Errorf("the log has %q: an impostor got through\nstderr:\n%s", bad, errText)
		}
	}
}

// memfdOf makes an unsealed memory file of size bytes (closed with the
// test).
func memfdOf(t *testing.T, size int) int {
	t.Helper()
	fd, err := unix.MemfdCreate("impostor", unix.MFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		t.Fatal(err)
	}
	return fd
}
