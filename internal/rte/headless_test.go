package rte

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
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
		st, s, ok := procStat(stopped.Process.Pid)
		if ok && st == "T" {
			sstart = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep never stopped: %q", st)
		}
		time.Sleep(5 * time.Millisecond) // polling /proc, bounded by the deadline
	}
	eps := []boot.Endpoint{
		{Host: "h", Pid: self, Start: start},                 // alive
		{Host: "h", Pid: self, Start: start + 1},             // the pid is another process's now
		{Host: "other", Pid: self, Start: start},             // another host: cannot look
		{Host: "h"},                                          // identity unknown
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
	err := stopped.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the stopped suspect was not killed: %v", err)
	}
	if err := confirm(9, 0, "test"); err != nil {
		t.Fatalf("out of range: %v", err)
	}
}
