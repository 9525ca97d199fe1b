package ctest

import (
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// TestCollCheckMode: with FTMPI_CHECK=1 (the checking mode, through the
// C library) a mismatched MPI_Bcast root, a reduction against a
// broadcast, a count and an operation that differ are an error of the
// class naming what differs at every rank under MPI_ERRORS_RETURN, the
// broadcast's root included; a Gatherv with per-rank counts passes; the
// communicator stays usable; MPI_Finalize reports nothing held.
func TestCollCheckMode(t *testing.T) {
	bin := Compile(t, "testdata/coll_check.c")
	r := jobtest.Run(t, 90*time.Second, []string{"FTMPI_CHECK=1"}, Ftmpirun(t), "-n", "3", "--timeout", "60s", bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	collWant(t, r.Stdout,
		"result: bcast-root classes 8 8 8",
		"result: reduce-bcast classes 16 16 16", // MPI_ERR_OTHER
		"result: bcast-count classes 2 2 2",
		"result: allreduce-op classes 10 10 10",
		"result: gatherv-counts classes 0 0 0",
		"result: usable after 1")
	for _, w := range []string{
		"rank 0 bcast-root: MPI_Bcast on MPI_COMM_WORLD: MPI_ERR_ROOT: invalid root: rank 2 called MPI_Bcast (root 1, 4 x int32); this rank MPI_Bcast (root 0, 4 x int32)",
		"rank 2 bcast-root: MPI_Bcast on MPI_COMM_WORLD: MPI_ERR_ROOT: invalid root: rank 0 called MPI_Bcast (root 0, 4 x int32); this rank MPI_Bcast (root 1, 4 x int32)",
		"rank 0 reduce-bcast: MPI_Reduce on MPI_COMM_WORLD: MPI_ERR_OTHER: other error: rank 1 called MPI_Bcast (root 0, 4 x int32); this rank MPI_Reduce (root 0, 4 x int32, MPI_SUM)",
	} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.Stdout)
		}
	}
	if strings.Contains(r.Stderr, "ftmpi check:") {
		t.Errorf("stderr reports something held:\n%s", r.Stderr)
	}
}
