package e2e

import (
	"strings"
	"testing"
)

// Seed 002 6.2 / appendix B under a real SIGKILL: a library sees the
// failure, revokes its communicator and returns; the application shrinks,
// re-creates both libraries and resumes from its last checkpoint. Same
// result line as without the failure, exit code 0, nothing left behind.
func TestLibcomposeExampleSurvivesKill(t *testing.T) {
	prog := buildOnce(t, "libcompose")
	// -progress: the lowest rank prints "checkpoint at step S agreed", and
	// the kill is tied to that line, not to a time.
	job := []string{prog, "-n", "48", "-steps", "60", "-ckpt", "10", "-delay", "15ms", "-progress"}
	base := ftmpirun(t, append([]string{"-n", "4", "--timeout", "40s"}, job...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	t.Logf("failure-free: %s (%v)", want, base.Elapsed)

	r := ftmpirun(t, append([]string{"-n", "4", "--timeout", "40s", "--on-failure", "continue", "--inject", "kill:rank=2,on=step 20 agreed"}, job...)...)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := resultLine(t, r); got != want {
		t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
	}
	for _, s := range []string{"ftmpirun: injected kill", "libcompose: recovery 1: world rank(s) [2] failed", "'s communicator revoked", "finished on 3 ranks"} {
		if !strings.Contains(r.Stderr, s) {
			t.Fatalf("no %q on stderr\nstdout:\n%s\nstderr:\n%s", s, r.Stdout, r.Stderr)
		}
	}
	t.Logf("with a kill: %v\n%s", r.Elapsed, r.Stderr)
}
