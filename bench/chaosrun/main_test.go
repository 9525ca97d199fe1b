package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestResultLineIsTheLast(t *testing.T) {
	out := []byte("[0] hello\nresult: a\nnoise\nresult: b\n")
	if got := resultLine(out); got != "result: b" {
		t.Fatalf("resultLine = %q, want the last result line", got)
	}
	if got := resultLine([]byte("[1] hello\n[0] result: c 1\n[12] x\n")); got != "result: c 1" {
		t.Fatalf("resultLine of tagged output = %q, want the line without its tag", got)
	}
	if got := resultLine([]byte("no result\n")); got != "" {
		t.Fatalf("resultLine without one = %q", got)
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct{ stderr, want string }{
		{"ftmpirun: injected kill of rank 2 at 1.2s\nftmpirun: rank 3 killed by signal 9; restart limit reached (--max-restarts 16): ending the job\n", "reinit: restart limit reached (--max-restarts)"},
		{"ftmpirun: rank 2 exited with status 1 after rank 1 returned from MPI_Reinit: no rollback location, ending the job\n", "reinit: failure after a rank returned from Reinit (seed 000 1.4.2)"},
		// Unknown causes: the last launcher line that is not an injection,
		// numbers replaced, so that equal causes group.
		{"ftmpirun: injected kill of rank 2 at 1.2s\nftmpirun: rank 2 (pid 4242) killed by signal 9 after 12.5ms\nrank 1: oops\n",
			"ftmpirun: rank N (pid N) killed by signal N after N"},
		{"just one line 7\n", "just one line N"},
	} {
		if got := classify(c.stderr, false); got != c.want {
			t.Errorf("classify(%q) = %q, want %q", c.stderr, got, c.want)
		}
	}
	if got := classify("x 1\n", true); !strings.HasPrefix(got, "correct result, non-zero exit: ") {
		t.Errorf("classify with the right result = %q", got)
	}
}

func TestSummaryCounts(t *testing.T) {
	runs := []Run{
		{Example: "a", NP: 8, Chaos: "seed=1,mttf=1s", Outcome: "correct", Ms: 10, Kills: 1},
		{Example: "a", NP: 8, Chaos: "seed=2,mttf=1s", Outcome: "clean", Class: "k", Ms: 20, Stops: 1},
		{Example: "a", NP: 8, Chaos: "seed=3,mttf=1s", Outcome: "clean", Class: "k", Ms: 30},
		{Example: "a", NP: 8, Chaos: "seed=4,mttf=1s", Outcome: "hang", Orphans: []string{"1 x state T"}, Ms: 40},
		{Example: "a", NP: 4, Chaos: "seed=1,mttf=1s", Outcome: "wrong", Ms: 5},
	}
	var buf bytes.Buffer
	printSummary(&buf, runs)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("summary lines:\n%s", buf.String())
	}
	var s4, s8 Summary
	if err := json.Unmarshal([]byte(lines[0]), &s4); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &s8); err != nil {
		t.Fatal(err)
	}
	if s4.NP != 4 || s4.Runs != 1 || s4.Wrong != 1 {
		t.Errorf("np 4 summary %+v", s4)
	}
	if s8.Runs != 4 || s8.Correct != 1 || s8.Clean != 2 || s8.Hangs != 1 || s8.Orphans != 1 ||
		s8.Classes["k"] != 2 || s8.MeanMs != 25 || s8.Kills != 1 || s8.Stops != 1 || s8.Faulted != 2 || s8.NoFault != 2 || s8.Chaos != "seed=S,mttf=1s" {
		t.Errorf("np 8 summary %+v", s8)
	}
}

func TestReclassifyReadsTheKeptStderr(t *testing.T) {
	f := t.TempDir() + "/x.err"
	body := "# ftmpirun -n 8 ...\n# exit 1 outcome clean class \"old\" orphans []\n" +
		"ftmpirun: rank 3 killed by signal 9; restart limit reached (--max-restarts 16): ending the job\n\n# stdout:\nresult: x\n"
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := reclassify(f, "old"); got != "reinit: restart limit reached (--max-restarts)" {
		t.Errorf("reclassify = %q", got)
	}
	if got := reclassify(f+".gone", "old"); got != "old" {
		t.Errorf("reclassify of a missing file = %q, want the old class", got)
	}
}

// TestOrphansFindsAndKillsMarkedProcesses: a process holding the run's
// mark in its environment after the run is reported and killed; one
// with another mark is left alone.
func TestOrphansFindsAndKillsMarkedProcesses(t *testing.T) {
	mark := fmt.Sprintf("chaosrun-test-%d", os.Getpid())
	start := func(m string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+m)
		if err := cmd.Start(); err != nil {
			t.Skipf("no sleep: %v", err)
		}
		return cmd
	}
	mine, other := start(mark), start(mark+"-other")
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	done := make(chan error, 1)
	go func() { done <- mine.Wait() }()
	got := orphans(mark)
	if len(got) != 1 || !strings.HasPrefix(got[0], strconv.Itoa(mine.Process.Pid)+" sleep 60 state ") {
		t.Fatalf("orphans = %q, want the one sleep holding the mark", got)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan was not killed")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process with another mark was touched: %v", err)
	}
	if got := orphans(mark); got != nil {
		t.Fatalf("orphans after the kill = %q", got)
	}
}
