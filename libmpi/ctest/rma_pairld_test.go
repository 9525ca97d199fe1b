package ctest

import (
	"strings"
	"testing"
)

// TestRMAPairLongDouble: MPI_REPLACE and MPI_NO_OP accumulates on the pair
// types (MPI_DOUBLE_INT, MPI_FLOAT_INT, MPI_LONG_INT, MPI_SHORT_INT) and
// MPI_SUM / MPI_PROD on MPI_LONG_DOUBLE combined at the target in long
// double precision, MPI_BAND on it refused (rma_pairld.c, np 3).
func TestRMAPairLongDouble(t *testing.T) {
	bin := Compile(t, "testdata/rma_pairld.c")
	r := runC(t, "3", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"rank 0: pairld errors 0", "rank 1: pairld errors 0", "rank 2: pairld errors 0"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
