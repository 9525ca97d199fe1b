package procstat

import (
	"os"
	"os/exec"
	"testing"
)

// This process is running with a start time; an exited one is not found.
func TestRead(t *testing.T) {
	state, start, ok := Read(os.Getpid())
	if !ok || start == 0 || (state != "R" && state != "S") {
		t.Fatalf("self: state %q, start %d, ok %v", state, start, ok)
	}
	c := exec.Command("sleep", "0")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := Read(c.Process.Pid); ok {
		t.Fatalf("process %d exited and was reaped, yet Read found it", c.Process.Pid)
	}
	if StartTime(c.Process.Pid) != 0 {
		t.Fatal("StartTime of a gone process is not 0")
	}
}
