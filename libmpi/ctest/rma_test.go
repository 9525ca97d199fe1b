package ctest

import (
	"strings"
	"testing"
)

// TestRMA: windows from C at np 4 (rma_basic.c): a fence ring of Put and
// Get with a displacement unit, an accumulate counter under exclusive
// locks, fetch-and-op tickets, compare-and-swap, post/start/complete/wait
// and test, the window attributes, group and name, MPI_ERR_RMA_RANGE and
// MPI_ERR_RMA_SYNC returned under MPI_ERRORS_RETURN, and MPI_Win_allocate
// (displacement unit 1) with Rput and Get_accumulate; a strided target
// datatype, MPI_PROC_NULL targets, a window error handler written in C,
// attributes of a window keyval with a C delete callback, and a dynamic
// window (MPI_Win_create_dynamic, attach, detach).
func TestRMA(t *testing.T) {
	bin := Compile(t, "testdata/rma_basic.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"rank 0: ring put 31 get 300", "rank 1: ring put 1 get 0", "rank 2: ring put 11 get 100", "rank 3: ring put 21 get 200",
		"rank 0: ticket-ok 1", "rank 1: ticket-ok 1", "rank 2: ticket-ok 1", "rank 3: ticket-ok 1",
		"result: counter 10 tickets 4 cas-slot-set 1",
		"result: cas winners 1",
		"rank 0: pscw got 7", "rank 2: pscw got 21",
		"result: attrs 1 group 4 ident 1 name ringwin 7",
		"rank 0: range class 49 want 49 sync class 51 want 51 errh-return 1",
		"rank 3: range class 49 want 49 sync class 51 want 51 errh-return 1",
		"rank 0: alloc fetched 1.5 2.5 0.0 now 3.5 14.5 15.5 10.0",
		"rank 1: alloc fetched 2.5 3.5 0.0 now 0.5 11.5 12.5 10.0",
		"rank 2: alloc fetched 3.5 4.5 0.0 now 1.5 12.5 13.5 10.0",
		"rank 3: alloc fetched 4.5 5.5 0.0 now 2.5 13.5 14.5 10.0",
		"rank 0: freed 1", "rank 3: freed 1",
		"rank 0: strided -1 3 13 23 -1 -1 errh calls 2 last 16 same-win 1 bad 49",
		"rank 2: strided -1 1 11 21 -1 -1 errh calls 2 last 16 same-win 1 bad 49",
		"rank 0: keyval got 1 gone 1 deletes 2 invalid 1", "rank 3: keyval got 1 gone 1 deletes 2 invalid 1",
		"rank 0: dynamic got 9 flavor 1", "rank 1: dynamic got 0 flavor 1", "rank 2: dynamic got 3 flavor 1",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
