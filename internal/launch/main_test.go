package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

var (
	ftmpirunBin string // built once in TestMain
	rankprogBin string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ftmpi-launch-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ftmpirunBin = filepath.Join(dir, "ftmpirun")
	rankprogBin = filepath.Join(dir, "rankprog")
	if err := jobtest.Build([]string{ftmpirunBin, rankprogBin}, []string{"../../cmd/ftmpirun", "./testdata/rankprog"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func newMark(t *testing.T) string { return jobtest.NewMark(t) }

func markedPids(mark string) []int { return jobtest.MarkedPids(mark) }

func assertNoLeftovers(t *testing.T, mark string, d time.Duration) {
	t.Helper()
	jobtest.AssertNoLeftovers(t, mark, d)
}

type result struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
}

// run executes ftmpirun with args, waits at most limit, and checks that
// nothing of the job is left behind.
func run(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	r := jobtest.Run(t, limit, nil, ftmpirunBin, args...)
	return result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr, elapsed: r.Elapsed}
}

func expectCode(t *testing.T, r result, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, want, r.stdout, r.stderr)
	}
}

func expectStderr(t *testing.T, r result, substr string) {
	t.Helper()
	if !strings.Contains(r.stderr, substr) {
		t.Fatalf("stderr lacks %q:\n%s", substr, r.stderr)
	}
}

// started is an ftmpirun running in the background.
type started struct {
	cmd    *exec.Cmd
	mark   string
	lines  chan string // stdout lines
	stderr *bytes.Buffer
	tmpDir string // FTMPI_TMPDIR, known once a rank is ready
	done   chan struct{}
	err    error
}

func start(t *testing.T, args ...string) *started {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv is start with env added to ftmpirun's environment.
func startEnv(t *testing.T, env []string, args ...string) *started {
	t.Helper()
	s := &started{mark: newMark(t), lines: make(chan string, 1024), stderr: new(bytes.Buffer), done: make(chan struct{})}
	s.cmd = exec.Command(ftmpirunBin, args...)
	s.cmd.Env = append(append(os.Environ(), env...), "FTMPI_TESTMARK="+s.mark)
	s.cmd.Stderr = s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.done
		assertNoLeftovers(t, s.mark, 5*time.Second)
	})
	return s
}

// readyPids waits for n "ready pid P" lines.
func (s *started) readyPids(t *testing.T, n int, d time.Duration) []int {
	t.Helper()
	deadline := time.After(d)
	var pids []int
	for len(pids) < n {
		select {
		case l, ok := <-s.lines:
			if !ok {
				t.Fatalf("ftmpirun ended before %d ranks were ready; stderr:\n%s", n, s.stderr)
			}
			var pid int
			var tmp string
			if _, err := fmt.Sscanf(l, "ready pid %d tmp %s", &pid, &tmp); err == nil {
				pids = append(pids, pid)
				s.tmpDir = tmp
			}
		case <-deadline:
			t.Fatalf("only %d of %d ranks ready after %v", len(pids), n, d)
		}
	}
	return pids
}

func (s *started) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	go func() {
		for range s.lines {
		}
	}()
	select {
	case <-s.done:
	case <-time.After(d):
		t.Fatalf("ftmpirun did not exit within %v", d)
	}
	if ee, ok := s.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return 0
}

func pidAlive(pid int) bool { return jobtest.PidAlive(pid) }
