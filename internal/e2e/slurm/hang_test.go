package slurm_test

import (
	"strings"
	"testing"
	"time"
)

// Issue 23: the hang report under srun, without a head: the ranks gather
// it among themselves (FTMPI_HANG_TIMEOUT) and the job is aborted with
// code 125 through PMI. One report per job, naming the ranks and calls at
// fault: mismatched collectives, a receive deadlock, and survivors of a
// task that killed itself, one shrinking, the others waiting on the
// unrevoked communicator.
func TestSrunHangReport(t *testing.T) {
	c := cluster(t)
	for _, tc := range []struct {
		mode string
		args []string
		want []string
	}{
		{mode: "mismatch", args: []string{"-n", "3", bin["hangcheck"], "mismatch"}, want: []string{
			"mismatched collectives on MPI_COMM_WORLD: rank 0 in MPI_Reduce (root 0, 2 x int32) #2; ranks 1,2 in MPI_Bcast (root 0, 2 x int32) #2"}}, // #2: hangcheck calls a Barrier first (29dc3c1)
		{mode: "deadlock", args: []string{"-n", "3", bin["hangcheck"], "deadlock"}, want: []string{
			"deadlock: 0 waits for 1, 1 waits for 0, both in MPI_Recv tag 5 on MPI_COMM_WORLD"}},
		{mode: "failure", args: []string{"--no-kill", "--kill-on-bad-exit=0", "-N2", "--ntasks-per-node=2", bin["hangcheck"], "failure-self"}, want: []string{
			"rank 2 failed",
			"rank 0 is in MPI_Comm_shrink, ranks 1,3 wait in MPI_Recv on MPI_COMM_WORLD: revoke MPI_COMM_WORLD"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			j := start(t, c, 90*time.Second, []string{"FTMPI_HANG_TIMEOUT=1s"}, "srun", append([]string{"--mpi=pmi2"}, tc.args...)...)
			code := j.Wait()
			show := "stdout:\n" + j.Stdout() + "\nstderr:\n" + j.Stderr()
			if code == 0 {
				t.Fatalf("exit 0 after a hang: %s", show)
			}
			if n := strings.Count(j.Stderr(), "ftmpi: hang report (no progress for 1s)"); n != 1 {
				t.Fatalf("%d reports, want 1: %s", n, show)
			}
			for _, w := range tc.want {
				if !strings.Contains(j.Stderr(), w) {
					t.Errorf("report lacks %q: %s", w, show)
				}
			}
			t.Logf("srun exit %d", code)
			noLeftovers(t, c)
		})
	}
}
