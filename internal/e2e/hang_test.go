package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// hangExitCode is the documented exit code of a job a hang report ended
// (docs/launching.md).
const hangExitCode = 125

// Issue 23: a hung job prints one report naming the ranks and calls at
// fault, then ends with exit code 125 (--hang-timeout, --hang-action
// abort by default).
func TestHangReportUnderFtmpirun(t *testing.T) {
	prog := buildOnce(t, "hangcheck")
	for _, tc := range []struct {
		mode  string
		n     int
		flags []string
		want  []string
	}{
		{mode: "mismatch", n: 3, want: []string{
			"rank 0 in MPI_Reduce (root 0, 2 x int32) on MPI_COMM_WORLD #2",
			"2 of 3 ranks (1,2) in MPI_Bcast (root 0, 2 x int32) on MPI_COMM_WORLD #2",
			"mismatched collectives on MPI_COMM_WORLD: rank 0 in MPI_Reduce (root 0, 2 x int32) #2; ranks 1,2 in MPI_Bcast (root 0, 2 x int32) #2"}},
		{mode: "deadlock", n: 3, want: []string{
			"deadlock: 0 waits for 1, 1 waits for 0, both in MPI_Recv tag 5 on MPI_COMM_WORLD",
			"rank 2 in MPI_Barrier on MPI_COMM_WORLD #1"}},
		{mode: "failure", n: 4, flags: []string{"--on-failure", "continue", "--inject", "kill:rank=2,on=rank 2: ready"}, want: []string{
			"rank 2 failed",
			"rank 0 in MPI_Comm_shrink on MPI_COMM_WORLD",
			"2 of 4 ranks (1,3) in MPI_Recv from 0 tag 7 on MPI_COMM_WORLD",
			"MPI_COMM_WORLD lost rank 2 (nobody revoked it",
			"rank 0 is in MPI_Comm_shrink, ranks 1,3 wait in MPI_Recv on MPI_COMM_WORLD: revoke MPI_COMM_WORLD"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			args := append([]string{"-n", strconv.Itoa(tc.n), "--timeout", "60s", "--hang-timeout", "500ms"}, tc.flags...)
			args = append(args, prog, tc.mode)
			r := ftmpirun(t, args...)
			checkHangReport(t, r, tc.want)
		})
	}
}

// checkHangReport: the job ended with the hang report's exit code after
// exactly one report of a 500ms --hang-timeout, which holds every line of
// want.
func checkHangReport(t *testing.T, r jobtest.Result, want []string) {
	t.Helper()
	show := "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr
	if r.Code != hangExitCode {
		t.Fatalf("exit %d, want %d: %s", r.Code, hangExitCode, show)
	}
	if n := strings.Count(r.Stderr, "ftmpi: hang report (no progress for 500ms)"); n != 1 {
		t.Fatalf("%d reports, want 1: %s", n, show)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("report lacks %q: %s", w, show)
		}
	}
}

// --timeout prints the report before the kill (no --hang-timeout): the
// job still ends with the timeout's 124.
func TestHangReportOnTimeout(t *testing.T) {
	prog := buildOnce(t, "hangcheck")
	r := jobtest.Run(t, 90*time.Second, nil, bin["ftmpirun"], "-n", "2", "--timeout", "3s", prog, "deadlock")
	show := "stdout:\n" + r.Stdout + "\nstderr:\n" + r.Stderr
	if r.Code != 124 {
		t.Fatalf("exit %d, want 124: %s", r.Code, show)
	}
	for _, w := range []string{"ftmpi: hang report (--timeout 3s)", "deadlock: 0 waits for 1, 1 waits for 0, both in MPI_Recv tag 5"} {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, show)
		}
	}
}

// The same reports without a head, under MPICH's mpiexec.hydra: the ranks
// gather them among themselves (FTMPI_HANG_TIMEOUT) and abort with 125.
func TestHangReportUnderHydra(t *testing.T) {
	h := hydra(t)
	g := guard(t)
	prog := buildOnce(t, "hangcheck")
	for _, tc := range []struct {
		mode string
		args []string
		want []string
	}{
		{mode: "mismatch", args: []string{"-n", "3", prog, "mismatch"}, want: []string{
			"mismatched collectives on MPI_COMM_WORLD: rank 0 in MPI_Reduce (root 0, 2 x int32) #2; ranks 1,2 in MPI_Bcast (root 0, 2 x int32) #2"}},
		{mode: "deadlock", args: []string{"-n", "3", prog, "deadlock"}, want: []string{
			"deadlock: 0 waits for 1, 1 waits for 0, both in MPI_Recv tag 5 on MPI_COMM_WORLD"}},
		// Rank 2 kills itself after its line (hydra has no --inject on=);
		// -disable-auto-cleanup and ftmpi-guard keep hydra from killing
		// the survivors.
		{mode: "failure", args: []string{"-disable-auto-cleanup", "-n", "4", g, prog, "failure-self"}, want: []string{
			"rank 2 failed",
			"rank 0 is in MPI_Comm_shrink, ranks 1,3 wait in MPI_Recv on MPI_COMM_WORLD: revoke MPI_COMM_WORLD"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			tmp, _ := jobtest.SockDir(t) // an aborted job's processes are killed: they cannot remove theirs (as TestHydraAbort)
			r := jobtest.Run(t, 90*time.Second, hydraEnv(tmp, "FTMPI_HANG_TIMEOUT=500ms"), h, tc.args...)
			checkHangReport(t, r, tc.want)
		})
	}
}
