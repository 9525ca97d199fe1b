package hostagent

import (
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exitRecorder is a Reporter that hands exit reports to a channel.
type exitRecorder chan ExitReport

func (exitRecorder) Output(int, bool, []byte) {}
func (r exitRecorder) Exited(e ExitReport)    { r <- e }

// The head checks a suspect whose pid it was not told (no hello yet)
// through its agent: Pid knows the pid of the incarnation it runs, and
// only that one.
func TestLocalAgentPid(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	rec := make(exitRecorder, 1)
	a := NewLocalAgent("host", rec)
	a.Start([]RankSpec{{Rank: 0, Incarnation: 2, Path: sleep, Args: []string{"60"}}})
	pid := a.Pid(0, 2)
	if pid <= 0 {
		t.Fatalf("Pid(0, 2) = %d", pid)
	}
	if state, alive := ProcState(pid); !alive {
		t.Fatalf("process %d is %s", pid, state)
	}
	if p := a.Pid(0, 1); p != 0 {
		t.Errorf("Pid of another incarnation = %d", p)
	}
	if p := a.Pid(1, 2); p != 0 {
		t.Errorf("Pid of a rank the agent does not run = %d", p)
	}
	a.SignalIncarnation(0, 2, syscall.SIGKILL)
	select {
	case e := <-rec:
		if e.Pid != pid || e.Signal != syscall.SIGKILL {
			t.Errorf("exit %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit report within 10s")
	}
	a.Wait()
	if p := a.Pid(0, 2); p != 0 {
		t.Errorf("Pid after reaping = %d", p)
	}
}

// outputRecorder is a Reporter that keeps what it is given.
type outputRecorder struct {
	mu    sync.Mutex
	out   []byte
	exits chan ExitReport
}

func (r *outputRecorder) Output(_ int, _ bool, b []byte) {
	r.mu.Lock()
	r.out = append(r.out, b...)
	r.mu.Unlock()
}
func (r *outputRecorder) Exited(e ExitReport) { r.exits <- e }

// A rank that wrote its lines and exited before its forwarders could
// read (they wait for the start's announcement, which on a loaded host
// may come after the drain deadline set at the reap) still has them
// forwarded: the pipe is drained past the deadline. (The runtime fails a
// read past its deadline without looking: launch's
// TestMultiHostPerNodeBindTo lost a rank's line 1 in 200 runs at load 15.)
func TestLocalAgentOutputAfterDrainDeadline(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	rec := &outputRecorder{exits: make(chan ExitReport, 1)}
	a := NewLocalAgent("host", rec)
	var waitErr error
	a.StartThen([]RankSpec{{Rank: 0, Path: sh, Args: []string{"-c", "echo one; echo two >&2; echo three"}}}, func() {
		deadline := time.Now().Add(10 * time.Second)
		for a.Pid(0, 0) != 0 { // reaped: the drain deadline is set
			if time.Now().After(deadline) {
				waitErr = errors.New("the rank was not reaped within 10s")
				return
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(drainGrace + 50*time.Millisecond) // the deadline has passed
	})
	if waitErr != nil {
		t.Fatal(waitErr)
	}
	select {
	case e := <-rec.exits:
		if e.Status != 0 || e.StartErr != nil {
			t.Fatalf("exit %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit report within 10s")
	}
	a.Wait()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, l := range []string{"one\n", "two\n", "three\n"} {
		if !strings.Contains(string(rec.out), l) {
			t.Errorf("output %q lacks %q", rec.out, l)
		}
	}
}
