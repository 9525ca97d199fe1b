package e2e

import (
	"strings"
	"testing"
)

// TestTxnExampleSurvivesKills: examples/txn (package txn, seed 002
// 6.1.3) computes the same total with real processes killed in a step
// (tied to the line rank 0 prints after a commit): the step is rolled back
// at the survivors, the communicator shrunk, and the step redone; the
// statistics line names the lost ranks.
func TestTxnExampleSurvivesKills(t *testing.T) {
	prog := buildOnce(t, "txn")
	args := []string{"-n", "200000", "-chunk", "10000", "-pace", "10ms", "-progress"} // 20 steps: a kill has 13 steps to land
	base := ftmpirun(t, append([]string{"-n", "4", prog}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	if !strings.HasSuffix(want, "correct=true") {
		t.Fatalf("failure-free result %q", want)
	}
	for _, tc := range []struct {
		name   string
		inject []string
		stats  string
	}{
		{"kill-rank2", []string{"kill:rank=2,on=txn: step 3 committed"}, "1 rollbacks, 1 repairs, lost [2], 3 processes"},
		// Rank 0 prints the progress lines; after its death the new rank 0
		// (old rank 1) does; the second kill is of old rank 3, rank 2 of
		// the shrunk communicator.
		{"kill-rank0-then-rank3", []string{"kill:rank=0,on=txn: step 2 committed", "kill:rank=3,on=txn: step 6 committed"},
			"2 rollbacks, 2 repairs, lost [0 2], 2 processes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := []string{"-n", "4", "--on-failure", "continue"}
			for _, in := range tc.inject {
				a = append(a, "--inject", in)
			}
			r := ftmpirun(t, append(append(a, prog), args...)...)
			if r.Code != 0 || resultLine(t, r) != want {
				t.Fatalf("exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, "txn: 20 commits, "+tc.stats) {
				t.Fatalf("stats line lacks %q\nstdout:\n%s\nstderr:\n%s", tc.stats, r.Stdout, r.Stderr)
			}
		})
	}
}
