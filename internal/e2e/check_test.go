package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// Issue 23: under ftmpirun --check a collective whose root differs at one
// rank is an error at every rank, the broadcast's root included, the
// communicator keeps working, and Finalize lists what each rank still
// holds.
func TestCheckModeUnderFtmpirun(t *testing.T) {
	prog := buildOnce(t, "checkmode")
	r := ftmpirun(t, "-n", "3", "--check", "--timeout", "60s", prog)
	show := "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr
	if r.Code != 0 {
		t.Fatalf("exit %d, want 0: %s", r.Code, show)
	}
	for rank := range 3 {
		other := "rank 2 called MPI_Bcast (root 1, 4 x int64); this rank MPI_Bcast (root 0, 4 x int64)"
		if rank == 2 {
			other = "rank 0 called MPI_Bcast (root 0, 4 x int64); this rank MPI_Bcast (root 1, 4 x int64)"
		}
		for _, w := range []string{
			fmt.Sprintf("rank %d: bcast: MPI_Bcast on MPI_COMM_WORLD: MPI_ERR_ROOT: invalid root: %s\n", rank, other),
			fmt.Sprintf("rank %d: allreduce 3\n", rank),
		} {
			if !strings.Contains(r.Stdout, w) {
				t.Errorf("stdout lacks %q: %s", w, show)
			}
		}
		if w := fmt.Sprintf("ftmpi check: at MPI_Finalize, rank %d still holds: 1 communicator (dup(MPI_COMM_WORLD))\n", rank); !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, show)
		}
	}
}
