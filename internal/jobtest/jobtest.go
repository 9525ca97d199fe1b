// Package jobtest holds helpers for tests that start real multi-process
// jobs: building binaries once (with -race when the test runs under it),
// running ftmpirun with a deadline, and proving that no process of the job
// is left behind. It is imported only by tests.
package jobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// RaceEnabled reports whether the test binary runs under -race; binaries
// built by Build then use the race detector too.
var RaceEnabled bool

// Build compiles each Go package pkgs[i] into outs[i].
func Build(outs, pkgs []string) error {
	for i := range outs {
		args := []string{"build", "-o", outs[i]}
		if RaceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, pkgs[i])...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("building %s: %v\n%s", pkgs[i], err, out)
		}
	}
	return nil
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
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return !(i > 0 && i+2 < len(stat) && stat[i+2] == 'Z')
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
// and checks that nothing of the job is left behind.
func Run(t testing.TB, limit time.Duration, env []string, bin string, args ...string) Result {
	t.Helper()
	mark := NewMark(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), env...), MarkVar+"="+mark)
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
