package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Seed 000 1.4.2 and 1.6 item 6: a failure before the survivors called
// Reinit finds no active rollback location, so it is fatal (the handler
// set before applies), also when the survivors make no MPI call before
// calling Reinit. Rank 1 SIGKILLs itself after a barrier; the survivors
// call Reinit only once the launcher has reported the death (the test
// watches its stderr and then creates the file they wait for), so they
// are as late as can be. The job must end with the killed rank's code
// and the reason, and no resilient function may run.
func TestReinitFailureBeforeReinitIsFatal(t *testing.T) {
	b := reinitBins(t)
	mark := jobtest.NewMark(t)
	goFile := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin["ftmpirun"], "-n", "3", "--on-failure", "reinit", "--timeout", "60s", b["reinitcheck"], "before")
	cmd.Env = append(os.Environ(), jobtest.MarkVar+"="+mark, "REINITCHECK_GO="+goFile,
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	var stdout bytes.Buffer
	stderr := &lineWatcher{on: func(line string) {
		// The launcher's line about the death: it has decided by now.
		if strings.Contains(line, "rank 1 (pid ") {
			if err := os.WriteFile(goFile, nil, 0o644); err != nil {
				t.Error(err)
			}
		}
	}}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	cmd.WaitDelay = 5 * time.Second // ranks holding the output open past the deadline
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ctx.Err() != nil {
		jobtest.AssertNoLeftovers(t, mark, 0)
		t.Fatalf("the job did not end within the deadline\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	jobtest.AssertNoLeftovers(t, mark, 5*time.Second)
	out, errs := stdout.String(), stderr.String()
	if code != 128+9 || !strings.Contains(errs, "before rank 0 called MPI_Reinit: no rollback location") ||
		strings.Contains(errs, "resilient function ran") || strings.Contains(out, "result:") {
		t.Fatalf("exit %d, want 137 (the killed rank's) with the job ended before rank 0 called MPI_Reinit and no resilient function run\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// lineWatcher is an io.Writer that keeps what is written and calls on with
// every complete line (exec copies a command's output from one goroutine).
type lineWatcher struct {
	buf     bytes.Buffer
	partial []byte
	on      func(line string)
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.buf.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.on(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

func (w *lineWatcher) String() string { return w.buf.String() }
