package ctest

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// runC runs the C program bin under ftmpirun with np ranks and flags.
// wantResult fails t unless the C program's run r exited 0 and printed want.
func wantResult(t *testing.T, r jobtest.Result, want string) {
	t.Helper()
	if r.Code != 0 || !strings.Contains(r.Stdout, want) {
		t.Fatalf("exit %d, want %q\nstdout:\n%s\nstderr:\n%s", r.Code, want, r.Stdout, r.Stderr)
	}
}

func runC(t *testing.T, np string, flags []string, bin string, args ...string) jobtest.Result {
	t.Helper()
	a := append([]string{"-n", np, "--timeout", "60s"}, flags...)
	a = append(a, bin)
	return jobtest.Run(t, 90*time.Second, nil, Ftmpirun(t), append(a, args...)...)
}

func TestRing(t *testing.T) {
	bin := Compile(t, "testdata/ring.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if want := "result: sum 6 count 1 source 3 tag 7 wtime-ok 1"; !strings.Contains(r.Stdout, want) {
		t.Fatalf("stdout lacks %q:\n%s", want, r.Stdout)
	}
}

// TestIsendrecvAndGrequest: MPI_Isendrecv(_replace) shift a ring;
// a generalized request completes at MPI_Grequest_complete, its query
// function fills the status MPI_Wait returns, its free function runs once.
func TestIsendrecvAndGrequest(t *testing.T) {
	bin := Compile(t, "testdata/p2p_greq.c")
	r := runC(t, "3", nil, bin)
	if r.Code != 0 || !strings.Contains(r.Stdout, "result: errors 0\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}
