package e2e

import (
	"testing"
)

// Persistent requests under a real SIGKILL (testdata/persistcheck): the
// echo peer of a persistent send and receive kills itself between two
// Starts; Start never fails, Wait gives ErrProcFailed (seed 002 A.2), for
// a persistent all-reduction too; a wildcard persistent receive is
// ErrPending until FailureAck, then completes; after Revoke a persistent
// send completes with ErrRevoked; after Shrink a persistent all-reduction
// on the new communicator works at both survivors.
func TestPersistentRequestsUnderSIGKILL(t *testing.T) {
	r := ftmpirun(t, "-n", "3", "--on-failure", "continue", buildOnce(t, "persistcheck"))
	want := "result: persist echo=ok recv=procfailed send=procfailed allreduce=procfailed wild=pending-then-ok revoked=revoked shrunk=ok rank2=ok"
	if got := resultLine(t, r); got != want || r.Code != 0 {
		t.Fatalf("exit %d, got %q, want %q\nstderr:\n%s", r.Code, got, want, r.Stderr)
	}
}
