package ctest

import (
	"fmt"
	"strings"
	"testing"
)

// TestFTAgreeMismatch: a C program whose rank 1 calls MPIX_Comm_agree
// where the others call MPIX_Comm_shrink gets MPI_ERR_OTHER at every rank
// through libmpi, with a string naming both calls (the agreement decides
// the mismatch: rte.AgreeMismatch), and goes on (no hang: runC's
// --timeout would end it).
func TestFTAgreeMismatch(t *testing.T) {
	bin := Compile(t, "testdata/ft_agree_mismatch.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	want := []string{"result: allreduce rc 0 sum 6"}
	for rank := range 4 {
		want = append(want, fmt.Sprintf("mismatch: rank %d other 1 named 1 null 1", rank))
	}
	for _, w := range want {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("stdout lacks %q", w)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
