package e2e

import (
	"strings"
	"testing"
)

// The same failure semantics over every transport (issue 15, item 3): one
// scenario of each recovery model, each under a real SIGKILL tied to a
// line the program prints, forced over shared memory, Unix sockets and
// TCP. Each must finish with the result of the failure-free run (taken
// over the default transport), so a transport that tore a message, lost
// a failure notice or hung a survivor fails here. The full example suites
// run over the default (shared memory on one host); this is the matrix.
func TestFailureModelsOverEveryTransport(t *testing.T) {
	rb := reinitBins(t)
	_, rtExample := rtBins(t)
	refArgs := []string{bin["refinement"], "-n", "20", "-delay", "1ms", "-ckpt", "100", "-progress"}
	heatArgs := []string{rb["reinit-async"], "-steps", "2500", "-every", "100", "-pace", "500us", "-progress"}

	base := ftmpirunQuickExit(t, append([]string{"-n", "4", "--timeout", "40s"}, refArgs...)...)
	mustSucceed(t, base)
	refWant := resultLine(t, base)
	base = reinitRun(t, append([]string{"-n", "4", "--timeout", "60s"}, heatArgs...)...)
	mustSucceed(t, base)
	heatWant := resultLine(t, base)

	for _, tr := range []string{"shm", "unix", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel() // independent jobs, mostly paced or waiting
			t.Run("ulfm-refinement", func(t *testing.T) {
				r := ftmpirunQuickExit(t, append([]string{"-n", "4", "--timeout", "40s", "--transport", tr,
					"--on-failure", "continue", "--inject", "kill:rank=2,on=iteration 100 committed"}, refArgs...)...)
				mustSucceed(t, r)
				if got := resultLine(t, r); got != refWant {
					t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, refWant, r.Stdout, r.Stderr)
				}
				if !strings.Contains(r.Stdout, "converged on 3 ranks") {
					t.Fatalf("no recovery to 3 ranks\nstdout:\n%s", r.Stdout)
				}
			})
			t.Run("runthrough-bcast", func(t *testing.T) {
				r := ftmpirunQuickExit(t, "-n", "4", "--timeout", "60s", "--transport", tr, "--on-failure", "continue",
					"--inject", "kill:rank=2,on=reached bcast:20:0.",
					rtExample, "-example", "bcast", "-n", "60", "-delay", "10ms", "-progress")
				mustSucceed(t, r)
				if got := resultLine(t, r); got != "result: bcast last 62" {
					t.Fatalf("result %q, want the last broadcast of the last block\nstdout:\n%s\nstderr:\n%s", got, r.Stdout, r.Stderr)
				}
			})
			t.Run("reinit-async", func(t *testing.T) {
				r := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s", "--transport", tr, "--on-failure", "reinit",
					"--inject", "kill:rank=2,on=step 1000 done"}, heatArgs...)...)
				mustSucceed(t, r)
				if got := resultLine(t, r); got != heatWant {
					t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, heatWant, r.Stdout, r.Stderr)
				}
				if !strings.Contains(r.Stdout, " in epoch 1:") {
					t.Fatalf("no rollback seen\nstdout:\n%s", r.Stdout)
				}
			})
			t.Run("recv-from-killed", func(t *testing.T) {
				r := ftmpirun(t, "-n", "2", "--transport", tr, "--on-failure", "continue", bin["p2pcheck"], "crashrecv")
				if got := resultLine(t, r); r.Code != 0 || got != "result: recv from dead rank: procfailed=true" {
					t.Fatalf("exit %d, result %q\nstderr:\n%s", r.Code, got, r.Stderr)
				}
			})
		})
	}
}
