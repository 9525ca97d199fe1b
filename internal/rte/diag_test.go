package rte

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A Diag with an output and a quit of its own writes and ends there: one
// line each, prefixed, the status passed on.
func TestDiagReplaced(t *testing.T) {
	var out bytes.Buffer
	var codes []int
	d := &Diag{Out: &out, Quit: func(code int) { codes = append(codes, code) }}
	d.Logf("process %d: %s", 3, "dropped")
	d.Logf("already ends\n")
	d.Exit(7)
	if got, want := out.String(), "ftmpi: process 3: dropped\nftmpi: already ends\n"; got != want {
		t.Fatalf("output %q, want %q", got, want)
	}
	if len(codes) != 1 || codes[0] != 7 {
		t.Fatalf("quit with %v, want [7]", codes)
	}
	if d.Writer() != &out {
		t.Fatal("Writer is not Out")
	}
}

// The nil Diag writes to stderr and exits the process with the status.
func TestDiagNilExits(t *testing.T) {
	if os.Getenv("FTMPI_TEST_DIAG_EXIT") != "" {
		var d *Diag
		d.Logf("going with %d", 5)
		d.Exit(5)
		return // not reached
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDiagNilExits$")
	cmd.Env = append(os.Environ(), "FTMPI_TEST_DIAG_EXIT=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 5 {
		t.Fatalf("exit %v, want status 5\nstderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ftmpi: going with 5\n") {
		t.Fatalf("stderr %q", stderr.String())
	}
}
