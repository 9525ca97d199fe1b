package slurm_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/libmpi/ctest"
)

// cRefinementWant is the failure-free result of examples/c/refinement.c.
const cRefinementWant = "result: refinement n=2000 sum=15977.669291 x[n/2]=9.370079"

// TestSrunCRefinementRankKilled: the C program of seed 002 A.5.2 built by
// ftmpicc, started by srun --mpi=pmi2 itself (no ftmpirun: the Go runtime
// in libmpi bootstraps over PMI-2 as a Go program does), 6 tasks on 3
// nodes; rank 5 is SIGKILLed at a printed iteration; the survivors shrink
// and print the failure-free result.
func TestSrunCRefinementRankKilled(t *testing.T) {
	c := cluster(t)
	prog := ctest.Compile(t, "../../../examples/c/refinement.c", "-lm")
	// The tasks run on the namespace hosts: the program's directory must
	// be readable there (ctest's work directory is private).
	for d := filepath.Dir(prog); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	// The job's last iteration comes well under a second after its
	// "iteration 10", and the line reaches the test through srun: a kill
	// that lands later finds the job done, which then prints the
	// failure-free result without a recovery (seen once at load ~10 with
	// the victim looked for after the line). The victim's pid is found
	// while the job starts, and only such a run is tried again, at most
	// twice: rank 5 killed mid-computation cannot leave that result without
	// a recovery (its rows are in every iteration's sum).
	for try := 1; ; try++ {
		j := start(t, c, 120*time.Second, nil, "srun", "--mpi=pmi2", "--no-kill", "--kill-on-bad-exit=0", "-N3", "--ntasks-per-node=2", prog)
		pid := findTask(t, c, j, 5, filepath.Base(prog))
		j.WaitLine("refinement: iteration 10")
		killed := syscall.Kill(pid, syscall.SIGKILL) == nil
		j.Wait() // srun's code says a task was killed; the result is what counts
		if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != cRefinementWant {
			t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, cRefinementWant, j.Stdout(), j.Stderr())
		}
		if !strings.Contains(j.Stdout(), "refinement: recovery") && try < 3 {
			t.Logf("try %d: the kill of rank 5 (sent: %v) landed after the job's last iteration; again", try, killed)
			continue
		}
		if !strings.Contains(j.Stdout(), "refinement: recovery 1") {
			t.Fatalf("no recovery:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
		}
		break
	}
	noLeftovers(t, c)
}
