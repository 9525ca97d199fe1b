package e2e

import (
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// elemBins builds testdata/elemcheck and examples/particles next to the
// other test binaries (TestMain removes that directory).
func elemBins(t *testing.T) (check, example string) {
	t.Helper()
	return buildOnce(t, "elemcheck"), buildOnce(t, "particles")
}

// Issue 12: struct elements and derived datatypes between processes, over
// both socket transports: round trips, a layout mismatch reported as
// ErrType, a vector received as a contiguous slice, MINLOC.
func TestStructElementsAcrossProcesses(t *testing.T) {
	check, _ := elemBins(t)
	for _, tr := range []string{"unix", "tcp"} {
		for _, np := range []string{"2", "4"} {
			r := ftmpirun(t, "-n", np, "--transport", tr, check)
			if r.Code != 0 {
				t.Fatalf("%s np %s: exit %d\nstdout:\n%s\nstderr:\n%s", tr, np, r.Code, r.Stdout, r.Stderr)
			}
			want := "result: elemcheck ok np=" + np + " minloc=(0,"
			if got := resultLine(t, r); !strings.HasPrefix(got, want) {
				t.Fatalf("%s np %s: %q, want prefix %q", tr, np, got, want)
			}
		}
	}
}

// A struct receive from a rank killed by SIGKILL fails with ErrProcFailed.
func TestStructRecvFromKilledRank(t *testing.T) {
	check, _ := elemBins(t)
	r := ftmpirun(t, "-n", "2", "--on-failure", "continue", check, "crash")
	if got := resultLine(t, r); got != "result: struct recv from dead rank: procfailed=true" {
		t.Fatalf("got %q\nstderr:\n%s", got, r.Stderr)
	}
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0\nstderr:\n%s", r.Code, r.Stderr)
	}
}

// examples/particles prints the same result line at any process count.
func TestParticlesExampleIndependentOfProcessCount(t *testing.T) {
	_, ex := elemBins(t)
	single := jobtest.Run(t, 60e9, nil, ex)
	if single.Code != 0 {
		t.Fatalf("1 process: exit %d\n%s", single.Code, single.Stderr)
	}
	want := resultLine(t, single)
	for _, np := range []string{"2", "3", "5"} {
		r := ftmpirun(t, "-n", np, ex)
		if r.Code != 0 {
			t.Fatalf("np %s: exit %d\nstdout:\n%s\nstderr:\n%s", np, r.Code, r.Stdout, r.Stderr)
		}
		if got := resultLine(t, r); got != want {
			t.Fatalf("np %s: %q, 1 process %q", np, got, want)
		}
	}
}
