package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The ULFM examples (seed 002 A.5) under real SIGKILLs: each must finish
// with exit code 0 and print the same result line as a failure-free run,
// after reporting that it recovered. Problem sizes keep each job at a
// few seconds under -race. The kills are tied to points of the run (lines
// the examples print with -progress), not to times, so they land mid-run
// on a fast machine and on a loaded one alike.

type ulfmCase struct {
	name    string
	inject  []string // --inject specs
	recover string   // a regular expression matching the line every recovery prints (stdout)
	count   int      // how many times it must appear at least
	final   string   // a line the lowest survivor prints at the end (stdout)
}

// ftmpirunQuickExit is ftmpirun without the race detector's one-second
// pause at the exit of every process built with -race.
func ftmpirunQuickExit(t *testing.T, args ...string) jobtest.Result {
	t.Helper()
	env := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	return jobtest.Run(t, 90*time.Second, env, bin["ftmpirun"], args...)
}

// runULFMExample runs bin[prog] with args on 4 ranks without failures, then
// once per case with its injected kills.
func runULFMExample(t *testing.T, prog string, args []string, cases []ulfmCase) {
	job := append([]string{bin[prog]}, args...)
	base := ftmpirunQuickExit(t, append([]string{"-n", "4", "--timeout", "40s"}, job...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	t.Logf("failure-free: %s (%v)", want, base.Elapsed)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-n", "4", "--timeout", "40s", "--on-failure", "continue"}
			for _, spec := range tc.inject {
				args = append(args, "--inject", spec)
			}
			r := ftmpirunQuickExit(t, append(args, job...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
			}
			if got := resultLine(t, r); got != want {
				t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
			}
			if n := strings.Count(r.Stderr, "ftmpirun: injected kill"); n != len(tc.inject) {
				t.Fatalf("%d injected kills reported, want %d\nstderr:\n%s", n, len(tc.inject), r.Stderr)
			}
			if n := len(regexp.MustCompile(tc.recover).FindAllStringIndex(r.Stdout, -1)); n < tc.count {
				t.Fatalf("%d recovery lines %q, want at least %d\nstdout:\n%s\nstderr:\n%s",
					n, tc.recover, tc.count, r.Stdout, r.Stderr)
			}
			if !strings.Contains(r.Stdout, tc.final) {
				t.Fatalf("no line %q\nstdout:\n%s\nstderr:\n%s", tc.final, r.Stdout, r.Stderr)
			}
			t.Logf("%v", r.Elapsed)
		})
	}
}

// Seed 002 A.5.2: Allreduce fails, revoke, agree, shrink, roll back to the
// last agreed checkpoint, at least one more iteration, same answer.
func TestRefinementExampleSurvivesKills(t *testing.T) {
	args := []string{"-n", "20", "-delay", "1ms", "-ckpt", "100", "-progress"}
	const rec = "refinement: recovery "
	runULFMExample(t, "refinement", args, []ulfmCase{
		{"kill-rank2-early", []string{"kill:rank=2,on=iteration 100 committed"}, rec, 1, "converged on 3 ranks"},
		{"kill-rank0-later", []string{"kill:rank=0,on=iteration 400 committed"}, rec, 1, "converged on 3 ranks"},
		// The second kill at the first checkpoint after the first recovery.
		{"two-kills", []string{"kill:rank=1,on=iteration 100 committed", "kill:rank=3,on=committed on 3 ranks"}, rec, 1, "converged on 2 ranks"},
	})
}

// Seed 002 A.5.1: the master's ANY_SOURCE receive raises ErrPending, the
// master acknowledges, drops the failed worker and requeues its task;
// every task is counted exactly once.
func TestMasterWorkerExampleSurvivesKills(t *testing.T) {
	args := []string{"-tasks", "60", "-delay", "50ms", "-progress"}
	// The master learns of a worker's death either way: a send to it fails
	// (ErrProcFailed), or the wildcard receive of results raises
	// ErrPending and the master acknowledges the failure. Which comes
	// first depends on where the master is when the kill lands.
	const rec = `acknowledged the failure of worker|worker \d+ is dead`
	runULFMExample(t, "masterworker", args, []ulfmCase{
		{"kill-worker2-early", []string{"kill:rank=2,on=tasks done: 5 of"}, rec, 1, "failed workers [2]"},
		{"kill-worker3-later", []string{"kill:rank=3,on=tasks done: 30 of"}, rec, 1, "failed workers [3]"},
		{"kill-two-workers", []string{"kill:rank=1,on=tasks done: 10 of", "kill:rank=3,on=tasks done: 25 of"}, rec, 2, "failed workers [1 3]"},
	})
}
