// Package jobtest holds helpers for tests that start real multi-process
// jobs: building binaries once (with -race when the test runs under it),
// running ftmpirun with a deadline, and proving that no process of the job
// is left behind. It is imported only by tests and must not be by a program.
package jobtest

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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ownerdir"
	"github.com/ftmpi/ftmpi/internal/procstat"
)

// RaceEnabled reports whether the test binary runs under -race; binaries
// built by Build then use the race detector too.
var RaceEnabled bool

// Build compiles each Go package pkgs[i] into outs[i]. Outputs in one
// directory, each named as its package's last path element, are built by
// one go build (-o DIR/ with every package: the go command loads and checks
// the packages once and links the programs in parallel; 6 programs of
// package e2e took 10.3 s so against 21.8 s one go build each at load 10);
// any other output by a go build of its own.
func Build(outs, pkgs []string) error {
	if len(outs) != len(pkgs) {
		return fmt.Errorf("jobtest.Build: %d outputs for %d packages", len(outs), len(pkgs))
	}
	flags := []string{"build"}
	if RaceEnabled {
		flags = append(flags, "-race")
	}
	byDir := map[string][]string{}
	var dirs []string
	var single []int
	seen := map[string]bool{}
	for i, o := range outs {
		name, dir := filepath.Base(o), filepath.Dir(o)
		if name != filepath.Base(pkgs[i]) || seen[o] {
			single = append(single, i)
			continue
		}
		seen[o] = true
		if byDir[dir] == nil {
			dirs = append(dirs, dir)
		}
		byDir[dir] = append(byDir[dir], pkgs[i])
	}
	for _, dir := range dirs {
		args := append(append(append([]string(nil), flags...), "-o", dir+string(filepath.Separator)), byDir[dir]...)
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", strings.Join(byDir[dir], " "), err, out)
		}
	}
	for _, i := range single {
		args := append(append([]string(nil), flags...), "-o", outs[i], pkgs[i])
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkgs[i], err, out)
		}
	}
	return nil
}

// Bins builds a test package's binaries once, into a temporary directory
// that Remove deletes (call it from TestMain after m.Run). The zero value
// is ready to use.
type Bins struct {
	once sync.Once
	err  error
	dir  string
}

// Get builds (on the first call) the Go package pkgs[i] as the binary
// names[i] and returns their paths; a build failure fails t, at every call.
func (b *Bins) Get(t testing.TB, names, pkgs []string) []string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = ownerdir.Make(os.TempDir(), "ftmpi-bins-"); b.err != nil {
			return
		}
		b.err = Build(b.paths(names), pkgs)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.paths(names)
}

func (b *Bins) paths(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(b.dir, n)
	}
	return out
}

// Remove deletes the binaries' directory, if Get made one. A directory
// left by a test binary that never called it (killed, or timed out) names
// its dead owner and is removed by the next Get's (ownerdir).
func (b *Bins) Remove() {
	if b.dir != "" {
		ownerdir.Remove(b.dir)
	}
}

// MarkVar is the environment variable that tags every process of a test job.
const MarkVar = "FTMPI_TESTMARK"

// NewMark returns a unique value for MarkVar; every process of a test's job
// inherits it, which lets leftovers be found.
func NewMark(t testing.TB) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return strings.ReplaceAll(t.Name(), "/", "_") + "-" + hex.EncodeToString(b[:])
}

// MarkedPids lists live (non-zombie) processes whose environment holds mark.
func MarkedPids(mark string) []int {
	want := []byte(MarkVar + "=" + mark + "\x00")
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
		if PidAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// PidAlive reports whether pid exists and is not a zombie.
func PidAlive(pid int) bool {
	f, ok := procstat.Fields(pid)
	return ok && f[0] != "Z"
}

// AssertNoLeftovers fails unless every process of the job is gone within d;
// leftovers are killed so one failure does not cascade.
func AssertNoLeftovers(t testing.TB, mark string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		pids := MarkedPids(mark)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("leftover processes of the job: %v", pids)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// Result is the outcome of a finished command.
type Result struct {
	Code           int
	Stdout, Stderr string
	Elapsed        time.Duration
}

// Run executes bin with args (and extra environment), waits at most limit,
// and checks that nothing of the job is left behind. An ftmpirun --timeout
// that strikes first sends every rank SIGQUIT before its SIGKILL
// (FTMPI_TIMEOUT_DUMP, unless env says otherwise): a hang comes with every
// rank's goroutines in Stderr.
func Run(t testing.TB, limit time.Duration, env []string, bin string, args ...string) Result {
	t.Helper()
	mark := NewMark(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(append(os.Environ(), "FTMPI_TIMEOUT_DUMP=1"), env...), MarkVar+"="+mark)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String(), Elapsed: time.Since(start)}
	if ctx.Err() != nil {
		AssertNoLeftovers(t, mark, 0)
		t.Fatalf("%s %q did not finish within %v\nstdout:\n%s\nstderr:\n%s", bin, args, limit, res.Stdout, res.Stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	AssertNoLeftovers(t, mark, 2*time.Second)
	return res
}

// Live is a running command a test watches: its standard output and error
// are kept whole, and each of their lines is also offered, as it comes, to
// WaitLine (lines nobody waits for are dropped from the offer, never from
// the kept output).
type Live struct {
	t      testing.TB
	cmd    *exec.Cmd
	cancel context.CancelFunc
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	lines  chan string
	done   chan struct{} // closed when both outputs reached their end
}

// StartLive starts cmd, made with a context that cancel ends (its
// deadline bounds the whole job). The test's cleanup cancels a job it did
// not wait for and waits for its outputs to end.
func StartLive(t testing.TB, cmd *exec.Cmd, cancel context.CancelFunc) *Live {
	t.Helper()
	j := &Live{t: t, cmd: cmd, cancel: cancel, lines: make(chan string, 4096), done: make(chan struct{})}
	so, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	se, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, p := range []struct {
		r   *bufio.Scanner
		buf *bytes.Buffer
	}{{bufio.NewScanner(so), &j.stdout}, {bufio.NewScanner(se), &j.stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p.r.Scan() {
				line := p.r.Text()
				j.mu.Lock()
				p.buf.WriteString(line + "\n")
				j.mu.Unlock()
				select {
				case j.lines <- line:
				default:
				}
			}
		}()
	}
	go func() { wg.Wait(); close(j.done) }()
	t.Cleanup(func() { // a test that failed before Wait: end the job
		j.cancel()
		<-j.done
	})
	return j
}

// WaitLine waits for a line holding s (standard output or error); the job
// ending first fails the test.
func (j *Live) WaitLine(s string) {
	j.t.Helper()
	for {
		select {
		case l := <-j.lines:
			if strings.Contains(l, s) {
				return
			}
		case <-j.done:
			// Every line is offered before done closes: look at the
			// ones still offered (select picks either ready case).
			for {
				select {
				case l := <-j.lines:
					if strings.Contains(l, s) {
						return
					}
				default:
					j.t.Fatalf("job ended before printing %q\nstdout:\n%s\nstderr:\n%s", s, j.Stdout(), j.Stderr())
				}
			}
		}
	}
}

// Stdout is the standard output so far.
func (j *Live) Stdout() string { j.mu.Lock(); defer j.mu.Unlock(); return j.stdout.String() }

// Stderr is the standard error so far.
func (j *Live) Stderr() string { j.mu.Lock(); defer j.mu.Unlock(); return j.stderr.String() }

// Cmd is the command (its Process, to signal it).
func (j *Live) Cmd() *exec.Cmd { return j.cmd }

// Wait waits for the command's exit and returns its code.
func (j *Live) Wait() int {
	j.t.Helper()
	defer j.cancel()
	go func() {
		for range j.lines { // drain: nobody waits on lines any more
		}
	}()
	<-j.done
	err := j.cmd.Wait()
	close(j.lines)
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	} else if err != nil {
		j.t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", j.cmd.Path, err, j.Stdout(), j.Stderr())
	}
	return 0
}

// Repeats is how many times a test runs each of its cases: 1, or the
// positive number in the environment variable name (a long repetition,
// such as issue 28's 200 runs of every crash case, is asked for by hand,
// never by CI). Anything else in it fails the test.
func Repeats(t testing.TB, name string) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
