package slurm_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// TestSrunSweepsEmptyLeftovers: what a killed srun job can leave in
// TMPDIR, an EMPTY socket directory (a rank killed between removing a
// directory's owner file and the directory itself, or between making one
// and writing its owner file: srun jobs of 1,000 tasks killed at high load
// left ~1,000), is removed by the next job's start once it is older than
// ownerdir.EmptyGrace; the job leaves nothing in TMPDIR.
func TestSrunSweepsEmptyLeftovers(t *testing.T) {
	c := cluster(t)
	tmp, check := jobtest.SockDir(t)
	dir := strings.TrimPrefix(tmp, "TMPDIR=")
	old := time.Now().Add(-2 * time.Minute)
	for _, name := range []string{"ftmpi-pmi-111", "ftmpi-pmi-222"} {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
	}
	j := start(t, c, 60*time.Second, []string{tmp}, "srun", "--mpi=pmi2", "-n", "2", bin["ring"])
	if code := j.Wait(); code != 0 || !strings.Contains(j.Stdout(), "result: ranks=2 token=1 ok") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
	check(j.Stdout(), j.Stderr())
}
