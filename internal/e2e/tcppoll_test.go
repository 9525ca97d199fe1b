package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Caller-driven progress over TCP (issue 13, item 7: a goroutine waiting
// for a request reads the sockets itself) while ranks are SIGKILLed: with
// FTMPI_SPIN fixed, the waiting goroutines of four ranks poll their
// connections even on two cores, so frames cut by a death, failure
// notices and revocations meet polling callers and are handed to the
// reader goroutines. Each run must end with the failure-free result.
func TestTCPPollingCallersUnderKill(t *testing.T) {
	_, rtExample := rtBins(t)
	refArgs := []string{bin["refinement"], "-n", "20", "-delay", "1ms", "-ckpt", "100", "-progress"}
	spin := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"), "FTMPI_SPIN=30us"}
	run := func(args ...string) jobtest.Result {
		t.Helper()
		return jobtest.Run(t, 90*time.Second, spin, bin["ftmpirun"], args...)
	}
	base := run(append([]string{"-n", "4", "--timeout", "40s", "--transport", "tcp"}, refArgs...)...)
	mustSucceed(t, base)
	refWant := resultLine(t, base)
	t.Run("ulfm-refinement", func(t *testing.T) {
		r := run(append([]string{"-n", "4", "--timeout", "40s", "--transport", "tcp",
			"--on-failure", "continue", "--inject", "kill:rank=2,on=iteration 100 committed"}, refArgs...)...)
		mustSucceed(t, r)
		if got := resultLine(t, r); got != refWant || !strings.Contains(r.Stdout, "converged on 3 ranks") {
			t.Fatalf("result %q, want the failure-free %q after a recovery to 3 ranks\nstdout:\n%s\nstderr:\n%s", got, refWant, r.Stdout, r.Stderr)
		}
	})
	t.Run("runthrough-bcast", func(t *testing.T) {
		r := run("-n", "4", "--timeout", "60s", "--transport", "tcp", "--on-failure", "continue",
			"--inject", "kill:rank=2,on=reached bcast:20:0.",
			rtExample, "-example", "bcast", "-n", "60", "-delay", "10ms", "-progress")
		mustSucceed(t, r)
		if got := resultLine(t, r); got != "result: bcast last 62" {
			t.Fatalf("result %q, want the last broadcast of the last block\nstdout:\n%s\nstderr:\n%s", got, r.Stdout, r.Stderr)
		}
	})
	t.Run("recv-from-killed", func(t *testing.T) {
		r := run("-n", "2", "--transport", "tcp", "--on-failure", "continue", bin["p2pcheck"], "crashrecv")
		if got := resultLine(t, r); r.Code != 0 || got != "result: recv from dead rank: procfailed=true" {
			t.Fatalf("exit %d, result %q\nstderr:\n%s", r.Code, got, r.Stderr)
		}
	})
}
