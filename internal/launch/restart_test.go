package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// cofRun runs ftmpirun without the race detector's one-second pause at
// the exit of every process built with -race (relaunches multiply it).
func cofRun(t *testing.T, args ...string) result {
	t.Helper()
	env := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	r := jobtest.Run(t, 60*time.Second, env, ftmpirunBin, args...)
	return result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr, elapsed: r.Elapsed}
}

// launches parses cofprog's "rank r launch k job J tmp T" lines: for each
// launch k, the set of (job, tmp) pairs and how many ranks printed one.
type launchInfo struct {
	job, tmp string
	ranks    int
	ok       int // "launch k: ok" lines
}

var launchLine = regexp.MustCompile(`(?m)^rank (\d+) launch (\d+) job (\S+) tmp (\S+)$`)

func launches(t *testing.T, r result) []launchInfo {
	t.Helper()
	var ls []launchInfo
	for _, m := range launchLine.FindAllStringSubmatch(r.stdout, -1) {
		var k int
		fmt.Sscan(m[2], &k)
		for len(ls) <= k {
			ls = append(ls, launchInfo{})
		}
		l := &ls[k]
		if l.ranks > 0 && (l.job != m[3] || l.tmp != m[4]) {
			t.Fatalf("launch %d has two jobs: %s %s and %s %s", k, l.job, l.tmp, m[3], m[4])
		}
		l.job, l.tmp = m[3], m[4]
		l.ranks++
	}
	for k := range ls {
		ls[k].ok = strings.Count(r.stdout, fmt.Sprintf(" launch %d: ok\n", k))
	}
	return ls
}

func TestRestartOnFailure(t *testing.T) {
	dir := t.TempDir()
	cofprog := filepath.Join(dir, "cofprog")
	if err := jobtest.Build([]string{cofprog}, []string{"./testdata/cofprog"}); err != nil {
		t.Fatal(err)
	}
	relaunched := regexp.MustCompile(`ftmpirun: relaunched the job \(relaunch (\d+) of (\d+)\): every rank had exited \S+ after the failure, 4 new ranks started \S+ after it\n`)

	// Two launches fail (rank 1 SIGKILLs itself, the survivors exit), the
	// third succeeds: each launch is a new job with its own job directory,
	// the ranks learn which relaunch it is, and the exit code is the
	// successful launch's.
	t.Run("relaunches until success", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "4", "--restart-on-failure=2", cofprog, "2", "1")
		expectCode(t, r, 0)
		ls := launches(t, r)
		if len(ls) != 3 {
			t.Fatalf("%d launches, want 3\nstdout:\n%s\nstderr:\n%s", len(ls), r.stdout, r.stderr)
		}
		seen := map[string]bool{}
		for k, l := range ls {
			if l.ranks != 4 || seen[l.job] || seen[l.tmp] {
				t.Fatalf("launch %d: %+v (jobs and directories must be new)\nstdout:\n%s", k, l, r.stdout)
			}
			seen[l.job], seen[l.tmp] = true, true
			if _, err := os.Stat(l.tmp); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("job directory %s of launch %d left behind: %v", l.tmp, k, err)
			}
		}
		if ls[2].ok != 4 || ls[0].ok+ls[1].ok != 0 {
			t.Fatalf("ok lines per launch: %d %d %d\nstdout:\n%s", ls[0].ok, ls[1].ok, ls[2].ok, r.stdout)
		}
		ms := relaunched.FindAllStringSubmatch(r.stderr, -1)
		if len(ms) != 2 || ms[0][1] != "1" || ms[1][1] != "2" || ms[0][2] != "2" {
			t.Fatalf("relaunch notices %v\nstderr:\n%s", ms, r.stderr)
		}
	})

	// The relaunches are used up: the job ends with the failure's exit
	// code (the SIGKILLed rank's, not a survivor's) and says why.
	t.Run("gives up after N relaunches", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "4", "--restart-on-failure=1", cofprog, "5", "1")
		expectCode(t, r, 128+9)
		expectStderr(t, r, "ftmpirun: the job failed (rank 1 killed by signal 9")
		expectStderr(t, r, "after 1 relaunches (--restart-on-failure=1); giving up with exit code 137\n")
		if ls := launches(t, r); len(ls) != 2 || ls[1].ranks != 4 {
			t.Fatalf("launches %+v, want 2\nstdout:\n%s", ls, r.stdout)
		}
		if n := len(relaunched.FindAllString(r.stderr, -1)); n != 1 {
			t.Fatalf("%d relaunch notices, want 1\nstderr:\n%s", n, r.stderr)
		}
	})

	t.Run("no failure, no relaunch", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "4", "--restart-on-failure=3", cofprog, "0", "1")
		expectCode(t, r, 0)
		if ls := launches(t, r); len(ls) != 1 || ls[0].ok != 4 || strings.Contains(r.stderr, "relaunch") {
			t.Fatalf("launches %+v\nstdout:\n%s\nstderr:\n%s", ls, r.stdout, r.stderr)
		}
	})

	// Without the flag a failure is final (here with --on-failure continue).
	t.Run("without the flag", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "4", "--on-failure", "continue", cofprog, "1", "1")
		if ls := launches(t, r); len(ls) != 1 || strings.Contains(r.stderr, "relaunch") || r.code == 0 {
			t.Fatalf("exit %d, launches %+v\nstdout:\n%s\nstderr:\n%s", r.code, ls, r.stdout, r.stderr)
		}
	})

	// --on-failure abort kills the survivors instead of notifying them;
	// the job is relaunched all the same (restart from periodic checkpoints).
	t.Run("abort policy", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "4", "--on-failure", "abort", "--restart-on-failure=1", cofprog, "1", "1")
		expectCode(t, r, 0)
		if ls := launches(t, r); len(ls) != 2 || ls[1].ok != 4 || strings.Contains(r.stdout, "launch 0: ok") {
			t.Fatalf("launches %+v\nstdout:\n%s\nstderr:\n%s", ls, r.stdout, r.stderr)
		}
		expectStderr(t, r, "relaunch 1 of 1")
	})

	// An Abort that no failure preceded is the program's decision: no relaunch.
	t.Run("abort without failure", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "4", "--restart-on-failure=2", rankprogBin, "abort", "2", "7")
		expectCode(t, r, 7)
		if strings.Contains(r.stderr, "relaunch") {
			t.Fatalf("relaunched after a plain abort:\n%s", r.stderr)
		}
	})

	// An injected fault happens once, not in every launch: the plan's
	// clock runs on across relaunches.
	t.Run("injection once", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "3", "--restart-on-failure=3", "--inject", "kill:rank=1,at=200ms", cofprog, "1", "1", "hold")
		expectCode(t, r, 0)
		if ls := launches(t, r); len(ls) != 2 || ls[1].ok != 3 || strings.Count(r.stderr, "ftmpirun: injected kill") != 1 {
			t.Fatalf("launches %+v\nstdout:\n%s\nstderr:\n%s", ls, r.stdout, r.stderr)
		}
	})

	// An event the first launch did not reach (it ended at the first kill)
	// belongs to the relaunch. This tests the timed plan itself: the first
	// launch ends tens of milliseconds after the first kill, so the second,
	// 2.8 s later on the plan's clock, is in the relaunch even on a machine
	// ten times slower.
	t.Run("injection carried over", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "3", "--restart-on-failure=3", "--inject", "kill:rank=1,at=200ms;kill:rank=2,at=3s", cofprog, "2", "1", "hold")
		expectCode(t, r, 0)
		ls := launches(t, r)
		if len(ls) != 3 || ls[2].ok != 3 || strings.Count(r.stderr, "ftmpirun: injected kill") != 2 {
			t.Fatalf("launches %+v\nstdout:\n%s\nstderr:\n%s", ls, r.stdout, r.stderr)
		}
		expectStderr(t, r, "injected kill of rank 1 at 200ms")
		expectStderr(t, r, "injected kill of rank 2 at")
	})

	// --timeout bounds all launches together. A launch takes a fraction of
	// a second (under -race on a loaded machine, 3 s were sometimes not
	// enough for two); 15 s leave room for a machine ten times slower.
	t.Run("timeout bounds the relaunches", func(t *testing.T) {
		t.Parallel()
		r := cofRun(t, "-n", "2", "--timeout", "15s", "--restart-on-failure=100000", cofprog, "1000000", "1")
		expectCode(t, r, ExitTimeout)
		if r.elapsed > 45*time.Second {
			t.Fatalf("took %v", r.elapsed)
		}
		if n := len(launches(t, r)); n < 2 {
			t.Fatalf("only %d launches in 15s\nstderr:\n%s", n, r.stderr)
		}
		if !strings.Contains(r.stderr, "ftmpirun: job timed out after 15s") {
			t.Fatalf("no timeout message:\n%s", r.stderr)
		}
	})
}

func TestRestartOnFailureFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" : valid
		pol  string
		n    int
	}{
		{[]string{"--restart-on-failure=2"}, "", OnFailureContinue, 2},
		{[]string{"--restart-on-failure", "1", "--on-failure", "abort"}, "", OnFailureAbort, 1},
		{[]string{"--on-failure", "continue", "--restart-on-failure=3"}, "", OnFailureContinue, 3},
		{[]string{"--restart-on-failure=0"}, "", OnFailureAbort, 0},
		{nil, "", OnFailureAbort, 0},
		{[]string{"--restart-on-failure=-1"}, "invalid --restart-on-failure -1: want an integer from 0 to", "", 0},
		{[]string{"--restart-on-failure=x"}, `invalid --restart-on-failure "x": want an integer`, "", 0},
		{[]string{"--restart-on-failure=1.5"}, `invalid --restart-on-failure "1.5": want an integer`, "", 0},
		{[]string{"--restart-on-failure=1", "--on-failure", "reinit"}, "--restart-on-failure cannot be combined with --on-failure reinit", "", 0},
	} {
		args := append(append([]string{"-n", "2"}, tc.args...), "prog")
		cfg, err := ParseArgs(args)
		var ue *UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", args, err)
		case tc.want == "" && (cfg.OnFailure != tc.pol || cfg.RestartOnFailure != tc.n):
			t.Errorf("%q: policy %q restarts %d, want %q %d", args, cfg.OnFailure, cfg.RestartOnFailure, tc.pol, tc.n)
		case tc.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want a usage error containing %q", args, err, tc.want)
		}
	}
	// Through Main: exit code 2, the message and where the help is.
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"-n", "2", "--restart-on-failure=-3", "true"}, nil, &stdout, &stderr, nil); code != ExitUsage {
		t.Fatalf("exit code %d, want %d", code, ExitUsage)
	}
	if s := stderr.String(); !strings.Contains(s, "ftmpirun: invalid --restart-on-failure -3") || !strings.HasSuffix(s, "\nsee ftmpirun --help\n") {
		t.Fatalf("stderr:\n%s", s)
	}
	// Run validates a Config too.
	stderr.Reset()
	if code := Run(Config{N: 1, Program: "true", RestartOnFailure: -1, Stdout: &stdout, Stderr: &stderr}); code != ExitUsage {
		t.Fatalf("Run with RestartOnFailure -1: exit code %d", code)
	}
}
