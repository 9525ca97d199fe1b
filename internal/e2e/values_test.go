package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Issue 12: Go values (a struct broadcast, structs sent to rank 0, maps
// of word counts merged by AllreduceValue) give the same result line for
// any number of processes, and after a real SIGKILL of a rank before it
// reports: rank 0's RecvValue from it raises ErrProcFailed, the
// AllreduceValue fails at every survivor, and the survivors shrink and
// count again.
func TestValuesExample(t *testing.T) {
	prog := buildOnce(t, "values")
	single := jobtest.Run(t, 60*time.Second, nil, prog)
	mustSucceed(t, single)
	want := resultLine(t, single)
	if !strings.HasPrefix(want, "result: word-count docs=2000 words=100000 distinct=24 ") {
		t.Fatalf("singleton result %q", want)
	}
	for _, np := range []string{"3", "4"} {
		r := ftmpirun(t, "-n", np, prog)
		mustSucceed(t, r)
		if got := resultLine(t, r); got != want {
			t.Fatalf("np %s: %q, singleton %q", np, got, want)
		}
	}
	r := ftmpirunQuickExit(t, "-n", "4", "--timeout", "60s", "--on-failure", "continue", prog, "-kill", "2")
	mustSucceed(t, r)
	if got := resultLine(t, r); got != want {
		t.Fatalf("with rank 2 killed: %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "report of rank 2: RecvValue on MPI_COMM_WORLD (peer 2): MPI_ERR_PROC_FAILED") ||
		!strings.Contains(r.Stdout, "round 0 failed") {
		t.Fatalf("no failed report or round\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
