package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// shortRoot is an empty temporary root short enough for unix socket paths
// (t.TempDir's names can exceed maxShortTmp).
func shortRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("/tmp", "fl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// A SIGKILLed ftmpirun cannot remove its job directory (its ranks die with
// it): the next launch on the same temporary root removes it, and leaves
// the directory of a launcher that is still running alone.
func TestSIGKILLedLauncherDirIsSweptByNextLaunch(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	env := []string{"TMPDIR=" + root}
	dead := startEnv(t, env, "-n", "2", rankprogBin, "hang")
	dead.readyPids(t, 2, limit)
	deadDir := dead.tmpDir
	if filepath.Dir(deadDir) != root {
		t.Fatalf("job directory %s is not under %s", deadDir, root)
	}
	if err := dead.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	dead.wait(t, limit)
	if _, err := os.Stat(filepath.Join(deadDir, "ctl")); err != nil {
		t.Fatalf("the killed launcher's job directory should still be there before the next launch: %v", err)
	}
	alive := startEnv(t, env, "-n", "1", rankprogBin, "hang")
	alive.readyPids(t, 1, limit)

	r := jobtest.Run(t, limit, env, ftmpirunBin, "-n", "1", "true")
	expectCode(t, result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}, 0)
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("the dead launcher's job directory %s survived the next launch (%v)", deadDir, err)
	}
	if _, err := os.Stat(alive.tmpDir); err != nil {
		t.Errorf("the running launcher's job directory was removed: %v", err)
	}
	if err := alive.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	alive.wait(t, limit)
	if left := entries(t, root); len(left) != 0 {
		t.Errorf("left in %s: %v", root, left)
	}
}

// ftmpirun ... | head -1: when its stdout is closed, ftmpirun stops the
// ranks, removes the job directory and exits 141 (128+SIGPIPE).
func TestClosedStdoutEndsJobAndCleansUp(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	mark := newMark(t)
	cmd := exec.Command(ftmpirunBin, "-n", "2", "yes")
	cmd.Env = append(os.Environ(), "TMPDIR="+root, "FTMPI_TESTMARK="+mark)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	line := make(chan error, 1)
	go func() {
		var b [2]byte
		_, err := out.Read(b[:]) // the first output ("y\n"): a job directory exists
		if es, _ := os.ReadDir(root); err == nil && len(es) != 1 {
			err = fmt.Errorf("%d job directories in %s while the job runs, want 1", len(es), root)
		}
		out.Close() // as head -1 does
		line <- err
		done <- cmd.Wait()
	}()
	select {
	case err := <-line:
		if err != nil {
			cmd.Process.Kill()
			<-done
			t.Fatal(err)
		}
	case <-time.After(limit):
		cmd.Process.Kill()
		t.Fatalf("no output within %v", limit)
	}
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 141 {
			t.Errorf("ftmpirun ended with %v, want exit code 141", err)
		}
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("ftmpirun did not end within %v of its stdout closing", limit)
	}
	if left := entries(t, root); len(left) != 0 {
		t.Errorf("left in %s: %v", root, left)
	}
	assertNoLeftovers(t, mark, 5*time.Second)
}
