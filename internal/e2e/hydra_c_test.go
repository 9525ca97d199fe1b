package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/libmpi/ctest"
)

// TestHydraCRefinementSurvivesKill: the C refinement example (ftmpicc,
// libmpi) started by MPICH's mpiexec.hydra, each process under
// ftmpi-guard; rank 2 is SIGKILLed at a printed iteration and the
// survivors print the failure-free result, as the Go refinement does.
func TestHydraCRefinementSurvivesKill(t *testing.T) {
	h := hydra(t)
	g := guard(t)
	prog := ctest.Compile(t, "../../examples/c/refinement.c", "-lm")
	t0 := time.Now()
	base := jobtest.Run(t, 90*time.Second, hydraEnv(), h, "-n", "4", prog)
	t.Logf("failure-free run: %v", time.Since(t0))
	if base.Code != 0 || !strings.Contains(base.Stdout, cRefinementWant) {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", base.Code, base.Stdout, base.Stderr)
	}
	tmp, check := jobtest.SockDir(t)
	out, errOut, code := runKillOnLine(t, h, []string{"-disable-auto-cleanup", "-n", "4", g, prog},
		"refinement: iteration 10", prog, 2, tmp)
	t.Logf("run with a kill: %v", time.Since(t0))
	check(out, errOut)
	r := jobtest.Result{Code: code, Stdout: out, Stderr: errOut}
	if got := resultLine(t, r); got != cRefinementWant {
		t.Fatalf("result %q, want the failure-free %q\nstdout:\n%s\nstderr:\n%s", got, cRefinementWant, out, errOut)
	}
	if !strings.Contains(out, "refinement: recovery 1") || !strings.Contains(errOut, "(PMI rank 2) killed by signal 9") || !hydraKillCode(code) {
		t.Fatalf("exit %d; want rank 2 killed and a recovery\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
