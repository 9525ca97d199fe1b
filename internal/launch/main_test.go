package launch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
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
	for _, b := range [][2]string{{ftmpirunBin, "../../cmd/ftmpirun"}, {rankprogBin, "./testdata/rankprog"}} {
		args := []string{"build", "-o", b[0]}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, b[1])...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b[1], err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
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

// newMark returns a unique value for the FTMPI_TESTMARK variable; every
// process of a test's job inherits it, which lets leftovers be found.
func newMark(t *testing.T) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return t.Name() + "-" + hex.EncodeToString(b[:])
}

// markedPids lists live (non-zombie) processes whose environment holds mark.
func markedPids(mark string) []int {
	want := []byte("FTMPI_TESTMARK=" + mark + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// assertNoLeftovers fails unless every process of the job is gone within d.
func assertNoLeftovers(t *testing.T, mark string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pids := markedPids(mark)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("leftover processes of the job: %v", pids)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
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
	mark := newMark(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, ftmpirunBin, args...)
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		assertNoLeftovers(t, mark, 0)
		t.Fatalf("ftmpirun %q did not finish within %v\nstdout:\n%s\nstderr:\n%s", args, limit, res.stdout, res.stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("ftmpirun %q: %v", args, err)
	}
	assertNoLeftovers(t, mark, 2*time.Second)
	return res
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
	s := &started{mark: newMark(t), lines: make(chan string, 1024), stderr: new(bytes.Buffer), done: make(chan struct{})}
	s.cmd = exec.Command(ftmpirunBin, args...)
	s.cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+s.mark)
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

func pidAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return !(i > 0 && i+2 < len(stat) && stat[i+2] == 'Z')
}

// raceEnabled is set when the tests run under -race; the binaries are then
// built with the race detector too.
var raceEnabled bool
