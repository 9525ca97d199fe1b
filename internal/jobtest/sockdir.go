package jobtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SockDir is a TMPDIR for the socket directories of a job's processes
// started by srun or mpiexec (the namespace hosts share one file system),
// and the check that the job left none: each process removes its own at
// exit, also one that ends itself by the fail-stop rule; the processes of
// its host that learn a process failed remove the failed one's. The check
// names each directory left and its owner (pid and start time) and shows
// the job's output given to it.
func SockDir(t *testing.T) (env string, check func(stdout, stderr string)) {
	dir := t.TempDir()
	return "TMPDIR=" + dir, func(stdout, stderr string) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, e := range ents {
			owner, _ := os.ReadFile(filepath.Join(dir, e.Name(), "owner"))
			left = append(left, fmt.Sprintf("%s (owner pid, start: %s)", e.Name(), strings.TrimSpace(string(owner))))
		}
		if len(left) > 0 {
			t.Fatalf("the job left %d socket directories: %v\nstdout:\n%s\nstderr:\n%s", len(left), left, stdout, stderr)
		}
	}
}
