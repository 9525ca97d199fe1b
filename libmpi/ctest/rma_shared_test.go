package ctest

import (
	"strings"
	"testing"
)

// TestRMAShared: shared-memory windows from C at np 4, each rank a
// process (rma_shared.c): MPI_Win_allocate_shared on the
// MPI_COMM_TYPE_SHARED communicator, MPI_Win_shared_query of every rank
// and of MPI_PROC_NULL, stores through another process's part read after
// a barrier, Put/Accumulate/Fetch_and_op read back through the pointers,
// the attributes, alloc_shared_noncontig with the _c forms, and
// MPI_ERR_RMA_FLAVOR for a query on an MPI_Win_create window.
func TestRMAShared(t *testing.T) {
	bin := Compile(t, "testdata/rma_shared.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for rank := range "0123" {
		if want := "rank " + string(rune('0'+rank)) + ": shared errors 0"; !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
