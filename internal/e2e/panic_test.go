package e2e

import (
	"strings"
	"testing"
	"time"
)

// Issue 26's first finding: a rank that panics under the README's idiom,
// defer w.Finalize(), hung the job silently until --timeout: the deferred
// Finalize waited in the finalize fence for the other ranks, which waited
// for the panicking rank in their Barrier, and the panic was never
// printed. Now Finalize, run by a panic, lets the panic go on: the panic
// and its stack are printed, the rank dies of it, and the job ends as
// with any failed process, under every policy.
func TestPanicUnderDeferredFinalize(t *testing.T) {
	prog := buildOnce(t, "panicfinalize")
	for _, policy := range []string{"", "continue"} {
		name := policy
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			var flags []string
			if policy != "" {
				flags = []string{"--on-failure", policy}
			}
			r := eojRun(t, 3, flags, prog)
			show := "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr
			if r.Elapsed > 45*time.Second || strings.Contains(r.Stderr, "timeout") {
				t.Fatalf("the job hung (%v): %s", r.Elapsed, show)
			}
			if r.Code == 0 {
				t.Fatalf("exit 0 after a rank panicked: %s", show)
			}
			for _, want := range []string{"assignment to entry in nil map", "panicfinalize/main.go", "rank 1"} {
				if !strings.Contains(r.Stderr, want) {
					t.Fatalf("stderr lacks %q: %s", want, show)
				}
			}
			if strings.Contains(r.Stdout, "rank 1: passed") {
				t.Fatalf("rank 1 went on after its panic: %s", show)
			}
			t.Logf("exit %d after %v", r.Code, r.Elapsed.Round(time.Millisecond))
		})
	}
}

// PanicExitCode is the documented exit code of a job whose process
// panicked (README, "Exit codes"): the Go runtime's exit status for an
// unrecovered panic.
const panicExitCode = 2

// Issue 26: a job whose rank 1 panics (no deferred Finalize) while the
// others wait for it in a Barrier ended with code 2 in some runs and 1 in
// others: the survivors' Barrier fails and, under MPI_ERRORS_ARE_FATAL,
// they abort the job with code 1, which won when it reached the launcher
// before the panicking rank's exit. The job's code is the root cause's,
// the panic's 2, in every run.
func TestPanicExitCodeIsAlwaysTheSame(t *testing.T) {
	prog := buildOnce(t, "panicfinalize")
	var codes []int
	for i := 0; i < 5; i++ {
		r := eojRun(t, 3, nil, prog, "-nodefer")
		codes = append(codes, r.Code)
		if r.Code != panicExitCode {
			t.Fatalf("run %d: exit %d, want %d (codes so far %v)\nstdout:\n%s\nstderr:\n%s", i, r.Code, panicExitCode, codes, r.Stdout, r.Stderr)
		}
		if !strings.Contains(r.Stderr, "assignment to entry in nil map") {
			t.Fatalf("run %d: the panic was not printed:\n%s", i, r.Stderr)
		}
	}
	t.Logf("exit codes %v", codes)
}

// Issue 26: under --on-failure continue the survivors learn of the
// panicked rank and their Barrier fails; their fatal error names the
// failed rank once after the class (it read "process failed: rank 1:
// rank 1 failed: rank 1 (pid ...)"), and the job's code is still the
// panic's.
func TestPanicSurvivorsErrorNamesTheRankOnce(t *testing.T) {
	prog := buildOnce(t, "panicfinalize")
	r := eojRun(t, 3, []string{"--on-failure", "continue"}, prog, "-nodefer")
	show := "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr
	if r.Code != panicExitCode {
		t.Fatalf("exit %d, want %d: %s", r.Code, panicExitCode, show)
	}
	n := 0
	for _, line := range strings.Split(r.Stderr, "\n") {
		_, cause, ok := strings.Cut(line, "MPI_ERR_PROC_FAILED: process failed: ")
		if !ok {
			continue
		}
		n++
		t.Log(line)
		if strings.Contains(cause, "rank 1: rank 1") || strings.Contains(cause, "rank 1 failed: rank 1") || strings.Contains(cause, "rank 1 failed (rank 1") {
			t.Errorf("the failed rank is not named once: %q", line)
		}
	}
	if n == 0 {
		t.Fatalf("no survivor reported the failure: %s", show)
	}
}
