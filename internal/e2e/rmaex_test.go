package e2e

import (
	"strings"
	"testing"
)

// rmaExamples builds examples/halo-rma and examples/counter next to the
// other test binaries.
func rmaExamples(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"halo-rma": buildOnce(t, "halo-rma"),
		"counter":  buildOnce(t, "counter"),
	}
}

// rmaExampleCase is one run of an example with real SIGKILLs.
type rmaExampleCase struct {
	name string
	args []string // ftmpirun options (kills injected) before the program
	prog []string // the program's own options
	want string   // a line rank 0 prints after the repair
}

// runRMAExample runs prog failure-free (np 4 and np 1), then each case,
// and asserts the failure-free result line everywhere.
func runRMAExample(t *testing.T, prog string, args []string, cases []rmaExampleCase) {
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s", prog}, args...)...)
	mustSucceed(t, base)
	want := resultLine(t, base)
	single := reinitRun(t, append([]string{"-n", "1", "--timeout", "60s", prog}, args...)...)
	mustSucceed(t, single)
	if got := resultLine(t, single); got != want {
		t.Fatalf("np 1: %q, np 4: %q", got, want)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := append([]string{"-n", "4", "--timeout", "60s", "--on-failure", "continue"}, tc.args...)
			a = append(append(append(a, prog), args...), tc.prog...)
			r := reinitRun(t, a...)
			mustSucceed(t, r)
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, tc.want) {
				t.Fatalf("no %q\nstdout:\n%s\nstderr:\n%s", tc.want, r.Stdout, r.Stderr)
			}
		})
	}
}

// Issue 16 item 7: the Put+Fence halo exchange on a Cartesian grid
// survives real SIGKILLs (in the middle of an epoch, of rank 0, of two
// ranks one after the other) with the failure-free result line.
func TestHaloRMASurvivesSIGKILL(t *testing.T) {
	b := rmaExamples(t)
	runRMAExample(t, b["halo-rma"], []string{"-iters", "300", "-ckpt", "25", "-progress"}, []rmaExampleCase{
		{"kill-rank2-mid-epoch", nil, []string{"-kill", "2@110"}, "halo-rma: recovered: 3 ranks left, resuming from iteration 100"},
		{"kill-rank0", nil, []string{"-kill", "0@60"}, "halo-rma: recovered: 3 ranks left, resuming from iteration 50"},
		{"two-kills", nil, []string{"-kill", "3@40,1@230"}, "halo-rma: recovered: 2 ranks left, resuming from iteration 225"},
	})
}

// Issue 16 item 7: the hash table filled through a shared counter with
// passive-target atomics survives real SIGKILLs: of a rank holding an
// owner's exclusive lock (the lock is released, the others go on), of a
// rank holding none with a ticket drawn, of the counter's rank; the
// failure-free result line every time.
func TestCounterSurvivesSIGKILL(t *testing.T) {
	b := rmaExamples(t)
	runRMAExample(t, b["counter"], []string{"-items", "120", "-work", "2000"}, []rmaExampleCase{
		{"kill-holding-lock", nil, []string{"-kill-holding", "2@3"}, "counter: shrunk to 3 ranks"},
		{"kill-no-lock", nil, []string{"-kill", "1@2"}, "counter: shrunk to 3 ranks"},
		{"kill-counter-rank", nil, []string{"-kill", "0@3"}, "counter: shrunk to 3 ranks"},
		{"two-kills", nil, []string{"-kill", "3@1", "-kill-holding", "1@4"}, "counter: shrunk to 2 ranks"},
	})
}
