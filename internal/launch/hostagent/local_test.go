package hostagent

import (
	"os/exec"
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
