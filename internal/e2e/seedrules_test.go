package e2e

import "testing"

// The failure rules of issue 11 under ftmpirun with a real SIGKILL: a
// probe blocked on the killed rank is released with ErrProcFailed, Iprobe
// of it and a wildcard probe raise ErrProcFailed, Waitany of a pending
// wildcard receive raises ErrPending, an Isend to the dead rank fails at
// completion only; and a tag above TagUB is ErrTag (seed 002 A.1, A.2,
// A.2.2; MPI 3.2.3).
func TestFailureRulesUnderSIGKILL(t *testing.T) {
	r := ftmpirun(t, "-n", "2", "--on-failure", "continue", bin["p2pcheck"], "failrules")
	want := "result: failrules probe=procfailed iprobe=procfailed probeany=procfailed waitany=pending isend=deferred-procfailed tag=errtag"
	if got := resultLine(t, r); got != want || r.Code != 0 {
		t.Fatalf("exit %d, got %q, want %q\nstderr:\n%s", r.Code, got, want, r.Stderr)
	}
}

// Seed 000 1.3: under ErrorsReinitAsync, TestFailure after a known failure
// returns nil and does nothing (the rollback comes with the next MPI call,
// as the asynchronous handler's).
func TestReinitTestFailureUnderAsyncHandler(t *testing.T) {
	b := reinitBins(t)
	r := reinitRun(t, "-n", "3", "--on-failure", "reinit", "--timeout", "40s", b["reinitcheck"], "asynctf")
	want := "result: asynctf epoch=1 states=reinited,reinited,restarted testfailure=returned-nil"
	if r.Code != 0 || resultLine(t, r) != want {
		t.Fatalf("exit %d, want result %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}
