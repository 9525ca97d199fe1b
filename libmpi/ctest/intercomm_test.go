package ctest

import "testing"

// TestIntercommSplit: MPI_Comm_split of an intercommunicator built by
// MPI_Intercomm_create (uneven colours, MPI_UNDEFINED, a colour on one
// side only), a message across the result and its sizes, and
// MPI_Comm_create of an intercommunicator.
func TestIntercommSplit(t *testing.T) {
	bin := Compile(t, "testdata/intercomm_split.c")
	r := runC(t, "5", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wantLines(t, r.Stdout,
		"result: rank 0 split inter 1 1/2 remote 1 got 4 create 1/1 got 3\n",
		"result: rank 1 split null create null\n",
		"result: rank 2 split inter 1 0/2 remote 1 got 4 create null\n",
		"result: rank 3 split null create 1/1 got 0\n",
		"result: rank 4 split inter 1 0/1 remote 2 got 2 create null\n",
	)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}

// TestIntercommIdup: MPI_Comm_idup of overlapping communicators (a ring
// of pairs, and MPI_COMM_WORLD) started in different orders at different
// ranks and completed with MPI_Waitall (MPICH's comm_idup_overlap hung).
func TestIntercommIdup(t *testing.T) {
	bin := Compile(t, "testdata/intercomm_idup.c")
	r := runC(t, "4", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	wantLines(t, r.Stdout,
		"result: rank 0 left 3/2 right 1/2 world 6/4 congruent 1 1 1\n",
		"result: rank 1 left 1/2 right 3/2 world 6/4 congruent 1 1 1\n",
		"result: rank 2 left 3/2 right 5/2 world 6/4 congruent 1 1 1\n",
		"result: rank 3 left 5/2 right 3/2 world 6/4 congruent 1 1 1\n",
	)
	if t.Failed() {
		t.Logf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
}
