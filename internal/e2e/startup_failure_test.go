package e2e

import "testing"

// A rank killed before it published its endpoint (during Init) is a
// failure like any other: Init still succeeds at the others, and an
// operation with the dead rank raises ErrProcFailed instead of Init failing
// (seed 003 17.5.2: a high quality implementation does not abort).
func TestRankKilledDuringStartup(t *testing.T) {
	r := ftmpirun(t, "-n", "4", "--on-failure", "continue", "--inject", "kill:rank=2,at=0s", bin["p2pcheck"], "recvfrom2")
	if got := resultLine(t, r); got != "result: recv from failed rank 2: procfailed=true" {
		t.Fatalf("got %q\nstderr:\n%s", got, r.Stderr)
	}
	if r.Code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.Code, r.Stderr)
	}
}
