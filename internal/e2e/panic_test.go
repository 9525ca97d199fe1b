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
	prog := buildOnce(t, "panicfinalize", "./testdata/panicfinalize")
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
