package e2e

import (
	"strings"
	"testing"
)

// Issue 4: examples/jacobi -ft survives real SIGKILLs by replacement
// (revoke, shrink, spawn, merge, split back to the old ranks, the lost block
// from the left neighbour's copy) and prints the failure-free result line.
func TestJacobiSurvivesKillsByReplacement(t *testing.T) {
	b := collExamples(t)
	// The kills are tied to points of the run, not to times: -progress
	// makes rank 0 print "jacobi: checkpoint at iteration I committed
	// after R repairs" at every checkpoint (about 20 of them), and
	// ftmpirun fires an on= injection at the first line holding its text.
	// A kill at a time landed after the end of the run on a fast machine.
	args := []string{b["jacobi"], "-ft", "-n", "64", "-check", "100", "-ckpt", "500", "-progress"}
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s"}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	for _, tc := range []struct {
		name      string
		inject    []string
		recovered int
		extra     []string // more arguments of jacobi
	}{
		{"kill-rank2", []string{"kill:rank=2,on=iteration 2000 committed"}, 1, nil},
		{"kill-rank0", []string{"kill:rank=0,on=iteration 2000 committed"}, 1, nil},
		{"kill-last-rank", []string{"kill:rank=3,on=iteration 2000 committed"}, 1, nil},
		// The second kill waits for the first checkpoint after the first
		// repair: two repairs, whatever the machine's speed.
		{"two-kills", []string{"kill:rank=1,on=iteration 1500 committed", "kill:rank=2,on=after 1 repairs"}, 2, nil},
		// Rank 3 dies before it contributes to the result's gather: rank 0
		// (and rank 3's parent in the gather's tree) fail it, the others
		// finish it. Every rank must still leave through one agreement:
		// the example's old run let the others agree on the result while
		// rank 0 went on to Shrink (a mismatched agreement, MPI_ERR_OTHER).
		{"kill-at-gather", nil, 1, []string{"-kill-at-gather", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := []string{"-n", "4", "--on-failure", "continue", "--timeout", "60s"}
			for _, s := range tc.inject {
				a = append(a, "--inject", s)
			}
			r := reinitRun(t, append(append(a, args...), tc.extra...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if n := strings.Count(r.Stdout, "jacobi: recovered: ranks"); n < tc.recovered {
				t.Fatalf("%d recoveries reported, want %d\nstdout:\n%s\nstderr:\n%s", n, tc.recovered, r.Stdout, r.Stderr)
			}
			t.Logf("%v", r.Elapsed)
		})
	}
}
