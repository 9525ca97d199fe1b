package rte

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/procstat"
)

// Without a head a rank looks at the suspects of its own host as the
// launcher would: alive (running or sleeping) refutes, stopped is killed,
// gone or of another host is failed.
func TestHeadlessConfirm(t *testing.T) {
	self, start := ProcIdentity()
	if start == 0 {
		t.Fatal("no start time of this process")
	}
	stopped := exec.Command("sleep", "30")
	if err := stopped.Start(); err != nil {
		t.Fatal(err)
	}
	defer stopped.Process.Kill()
	syscall.Kill(stopped.Process.Pid, syscall.SIGSTOP)
	deadline := time.Now().Add(10 * time.Second)
	var sstart uint64
	for {
		st, s, ok := procstat.Read(stopped.Process.Pid)
		if ok && st == "T" {
			sstart = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep never stopped: %q", st)
		}
		time.Sleep(5 * time.Millisecond) // polling /proc, bounded by the deadline
	}
	tmp := t.TempDir()
	deadDir, otherDir := filepath.Join(tmp, "ftmpi-pmi-123"), filepath.Join(tmp, "mine")
	for _, d := range []string{deadDir, otherDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	eps := []boot.Endpoint{
		{Host: "h", Pid: self, Start: start}, // alive
		// The pid is another process's now: the process is gone, its directory goes.
		{Host: "h", Pid: self, Start: start + 1, Addrs: map[string]string{"unix": filepath.Join(deadDir, "r1.0.sock")}},
		{Host: "other", Pid: self, Start: start}, // another host: cannot look
		// Identity unknown: failed, but its directory is kept (and so is one the bootstrap did not make).
		{Host: "h", Addrs: map[string]string{"unix": filepath.Join(otherDir, "r.sock")}},
		{Host: "h", Pid: stopped.Process.Pid, Start: sstart}, // stopped: killed
	}
	confirm := headlessConfirm("h", eps)
	if err := confirm(0, 0, "test"); !errors.Is(err, errAlive) {
		t.Fatalf("alive suspect: %v", err)
	}
	for r := 1; r < len(eps); r++ {
		if err := confirm(r, 0, "test"); err != nil {
			t.Fatalf("suspect %d: %v", r, err)
		}
	}
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Fatalf("the dead process's socket directory is left: %v", err)
	}
	if _, err := os.Stat(otherDir); err != nil {
		t.Fatalf("another directory was removed: %v", err)
	}
	err := stopped.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the stopped suspect was not killed: %v", err)
	}
	if err := confirm(9, 0, "test"); err != nil {
		t.Fatalf("out of range: %v", err)
	}
}

// A process without a head that learns a process of its own host failed
// (by its own detection or by the others' notice) removes the failed
// one's socket directories, which it cannot remove any more; not those of
// another host's process (another file system, as far as it knows), nor
// its own, nor one the bootstrap did not make.
func TestPeerGoneRemovesDirsOfThisHost(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	dead, deadShm, remote, self, foreign := mk("ftmpi-pmi-1"), mk("ftmpi-pmi-1s"), mk("ftmpi-pmi-2"), mk("ftmpi-pmi-0"), mk("mine")
	eps := []boot.Endpoint{
		{Host: "h", Addrs: map[string]string{"unix": filepath.Join(self, "r0.sock")}},
		{Host: "h", Addrs: map[string]string{"unix": filepath.Join(dead, "r1.sock"), "shm": filepath.Join(deadShm, "r1.shm")}},
		{Host: "other", Addrs: map[string]string{"unix": filepath.Join(remote, "r2.sock")}},
		{Host: "h", Addrs: map[string]string{"unix": filepath.Join(foreign, "r3.sock")}},
	}
	gone := peerGone("h", 0, eps)
	for _, p := range []int{0, 1, 2, 3, -1, 4} {
		gone(p)
	}
	gone(1) // twice: idempotent
	for dir, want := range map[string]bool{dead: false, deadShm: false, remote: true, self: true, foreign: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
