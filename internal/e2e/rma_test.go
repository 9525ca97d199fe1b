package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// rmaBin builds testdata/rmacheck next to the other test binaries.
func rmaBin(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "rmacheck")
}

// Issue 16: a Put+Fence halo exchange between processes, over both socket
// transports; its sum is conserved (the ring average of 1..np).
func TestRMAHaloAcrossProcesses(t *testing.T) {
	b := rmaBin(t)
	for _, tr := range []string{"unix", "tcp"} {
		r := ftmpirun(t, "-n", "4", "--transport", tr, b)
		if r.Code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", tr, r.Code, r.Stdout, r.Stderr)
		}
		if got := resultLine(t, r); got != "result: rma halo ok np=4 sum=10.000000" {
			t.Fatalf("%s: %q", tr, got)
		}
	}
}

// Seed 002 A.2.4, 003 17.11 with a real SIGKILL: the survivors' next
// fence raises ErrProcFailed (no hang), GetFailed names the dead rank, and
// the window keeps working among the survivors.
func TestRMAHaloSurvivesSIGKILL(t *testing.T) {
	b := rmaBin(t)
	r := ftmpirun(t, "-n", "4", "--on-failure", "continue", b, "kill")
	if got := resultLine(t, r); got != "result: rma halo survived kill: procfailed=true" {
		t.Fatalf("got %q\nstdout:\n%s\nstderr:\n%s", got, r.Stdout, r.Stderr)
	}
	for _, rank := range []int{0, 1, 3} {
		if !strings.Contains(r.Stdout, fmt.Sprintf("rmacheck: rank %d survived", rank)) {
			t.Fatalf("rank %d did not survive\nstdout:\n%s\nstderr:\n%s", rank, r.Stdout, r.Stderr)
		}
	}
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", r.Code, r.Stderr)
	}
}

// Seed 002 A.2.4 (2), argued deviation (docs/semantics.md): a process
// SIGKILLed while holding an exclusive lock: the target's server releases
// it, the survivors acquire it and finish; no update is lost.
func TestRMALockHolderSIGKILL(t *testing.T) {
	b := rmaBin(t)
	r := ftmpirun(t, "-n", "4", "--on-failure", "continue", b, "lockkill")
	if got := resultLine(t, r); got != "result: rma lock holder killed: counter=32 want=32" {
		t.Fatalf("got %q\nstdout:\n%s\nstderr:\n%s", got, r.Stdout, r.Stderr)
	}
	for _, rank := range []int{0, 1, 3} {
		if !strings.Contains(r.Stdout, fmt.Sprintf("rmacheck: rank %d survived", rank)) {
			t.Fatalf("rank %d did not survive\nstdout:\n%s\nstderr:\n%s", rank, r.Stdout, r.Stderr)
		}
	}
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", r.Code, r.Stderr)
	}
}
