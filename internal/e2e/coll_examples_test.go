package e2e

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// collExamples builds examples/jacobi and examples/pi once.
func collExamples(t *testing.T) map[string]string {
	t.Helper()
	return map[string]string{
		"jacobi": buildOnce(t, "jacobi"),
		"pi":     buildOnce(t, "pi"),
	}
}

// Issue 3: the Jacobi solver's result line is identical for 1 and 8
// processes (and pi's for 1 and 4).
func TestJacobiAndPiResultsIndependentOfProcessCount(t *testing.T) {
	b := collExamples(t)
	jargs := []string{"-n", "48", "-tol", "1e-7", "-check", "50"}
	single := jobtest.Run(t, 60e9, nil, b["jacobi"], jargs...)
	multi := ftmpirun(t, append([]string{"-n", "8", b["jacobi"]}, jargs...)...)
	if single.Code != 0 || multi.Code != 0 {
		t.Fatalf("exit codes %d, %d\n%s\n%s", single.Code, multi.Code, single.Stderr, multi.Stderr)
	}
	if a, m := resultLine(t, single), resultLine(t, multi); a != m {
		t.Fatalf("jacobi: 1 process %q, 8 processes %q", a, m)
	}
	p1 := jobtest.Run(t, 60e9, nil, b["pi"], "-samples", "200000")
	p4 := ftmpirun(t, "-n", "4", b["pi"], "-samples", "200000")
	if a, m := resultLine(t, p1), resultLine(t, p4); a != m {
		t.Fatalf("pi: 1 process %q, 4 processes %q", a, m)
	}
}
