package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// mpirun's flags that scripts carry, end to end (issue 26): each test runs
// ioprobe (testdata), which prints what each rank sees of its start.

// runIn runs ftmpirun with args and stdin, like jobtest.Run.
func runIn(t *testing.T, stdin string, args ...string) jobtest.Result {
	t.Helper()
	mark := jobtest.NewMark(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin["ftmpirun"], args...)
	cmd.Env = append(os.Environ(), "FTMPI_TIMEOUT_DUMP=1", jobtest.MarkVar+"="+mark)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := jobtest.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		jobtest.AssertNoLeftovers(t, mark, 0)
		t.Fatalf("ftmpirun %q did not finish\nstdout:\n%s\nstderr:\n%s", args, res.Stdout, res.Stderr)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	jobtest.AssertNoLeftovers(t, mark, 2*time.Second)
	return res
}

// probe is one ioprobe line.
type probe struct {
	stdin, wd, cpus string
	agree           bool
}

var probeLine = regexp.MustCompile(`rank (\d+) stdin (".*") wd (\S+) cpus (\S+) threads-agree (true|false)$`)

// probes parses the ioprobe lines of out by rank; want is the rank count.
func probes(t *testing.T, r jobtest.Result, want int) map[int]probe {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	ps := map[int]probe{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		m := probeLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var rank int
		var in string
		fmt.Sscan(m[1], &rank)
		fmt.Sscanf(m[2], "%q", &in)
		ps[rank] = probe{stdin: in, wd: m[3], cpus: m[4], agree: m[5] == "true"}
	}
	if len(ps) != want {
		t.Fatalf("want %d ranks' lines, got %d\nstdout:\n%s\nstderr:\n%s", want, len(ps), r.Stdout, r.Stderr)
	}
	return ps
}

// ftmpirun's stdin goes to rank 0, as mpirun's; the others read nothing.
func TestMpirunStdinToRankZero(t *testing.T) {
	t.Parallel()
	probe := buildOnce(t, "ioprobe")
	ps := probes(t, runIn(t, "line one\nline two\n", "-n", "3", probe), 3)
	if ps[0].stdin != "line one\nline two\n" || ps[1].stdin != "" || ps[2].stdin != "" {
		t.Fatalf("stdin by rank: %+v", ps)
	}
}

// --wd DIR (Open MPI's spelling of --wdir) and -N: N ranks on the host.
func TestMpirunWdAndPerNode(t *testing.T) {
	t.Parallel()
	probe := buildOnce(t, "ioprobe")
	dir := t.TempDir()
	ps := probes(t, runIn(t, "", "-N", "2", "--allow-run-as-root", "--wd", dir, probe), 2)
	for r, p := range ps {
		if p.wd != dir {
			t.Errorf("rank %d: wd %s, want %s", r, p.wd, dir)
		}
	}
}

// --output-filename DIR: Open MPI 4.1's layout, DIR/1/rank.R/stdout and
// stderr, beside the usual forwarding; with --merge-stderr-to-stdout,
// stderr goes to stdout (and to the stdout file).
func TestMpirunOutputFilename(t *testing.T) {
	t.Parallel()
	probe := buildOnce(t, "ioprobe")
	dir := filepath.Join(t.TempDir(), "out")
	r := runIn(t, "", "-n", "2", "--output-filename", dir, probe)
	probes(t, r, 2)
	if !strings.Contains(r.Stderr, "rank 1 err") {
		t.Fatalf("stderr not forwarded:\n%s", r.Stderr)
	}
	for rank := 0; rank < 2; rank++ {
		out, err1 := os.ReadFile(filepath.Join(dir, "1", fmt.Sprintf("rank.%d", rank), "stdout"))
		errs, err2 := os.ReadFile(filepath.Join(dir, "1", fmt.Sprintf("rank.%d", rank), "stderr"))
		if err1 != nil || err2 != nil {
			t.Fatalf("rank %d: %v %v", rank, err1, err2)
		}
		if !strings.HasPrefix(string(out), fmt.Sprintf("rank %d stdin", rank)) || string(errs) != fmt.Sprintf("rank %d err\n", rank) {
			t.Errorf("rank %d: stdout file %q, stderr file %q", rank, out, errs)
		}
	}

	dir = filepath.Join(t.TempDir(), "merged")
	r = runIn(t, "", "-n", "2", "--merge-stderr-to-stdout", "--output-filename", dir, probe)
	probes(t, r, 2)
	if !strings.Contains(r.Stdout, "rank 0 err\n") || strings.Contains(r.Stderr, "rank 0 err") {
		t.Fatalf("merged: stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	out, err := os.ReadFile(filepath.Join(dir, "1", "rank.0", "stdout"))
	if err != nil || !strings.Contains(string(out), "rank 0 err\n") || !strings.Contains(string(out), "rank 0 stdin") {
		t.Fatalf("merged stdout file %q: %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "1", "rank.0", "stderr")); !os.IsNotExist(err) {
		t.Fatalf("merged: a stderr file exists (%v)", err)
	}
}

// --timestamp-output prefixes every line with its time, before the tag.
func TestMpirunTimestampOutput(t *testing.T) {
	t.Parallel()
	probe := buildOnce(t, "ioprobe")
	r := runIn(t, "", "-n", "2", "--timestamp-output", "--tag-output", probe)
	probes(t, r, 2)
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \[[01]\] rank [01] `)
	year := fmt.Sprint(time.Now().Year())
	for _, out := range []string{r.Stdout, r.Stderr} {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "rank ") {
				n++
				if !stamp.MatchString(l) || !strings.HasPrefix(l, year) {
					t.Errorf("line without time stamp: %q", l)
				}
			}
		}
		if n != 2 {
			t.Errorf("want 2 rank lines, got %d in:\n%s", n, out)
		}
	}
}

// --bind-to core binds each rank (every thread of it) to one core, the
// one --report-bindings names; --bind-to none leaves them unbound; without
// --bind-to a job of two ranks is bound to cores and one of three is not.
func TestMpirunBindToCore(t *testing.T) {
	t.Parallel()
	probe := buildOnce(t, "ioprobe")
	self := ""
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				self = strings.TrimSpace(v)
			}
		}
	}
	r := runIn(t, "", "-n", "2", "--bind-to", "core", "--report-bindings", probe)
	ps := probes(t, r, 2)
	report := regexp.MustCompile(`(?m)^ftmpirun: rank (\d) \(pid \d+ on \S+\) bound to socket \d+, core \d+: cpus (\S+)$`)
	ms := report.FindAllStringSubmatch(r.Stderr, -1)
	if len(ms) != 2 {
		t.Fatalf("want 2 binding reports, stderr:\n%s", r.Stderr)
	}
	for _, m := range ms {
		var rank int
		fmt.Sscan(m[1], &rank)
		if p := ps[rank]; p.cpus != m[2] || !p.agree {
			t.Errorf("rank %d: runs on cpus %s (all threads: %v), report says %s", rank, p.cpus, p.agree, m[2])
		}
	}
	multi := strings.ContainsAny(self, ",-") // this test may use more than one CPU
	if multi && ps[0].cpus == self {
		t.Errorf("rank 0 not bound: cpus %s, as the test's %s", ps[0].cpus, self)
	}
	if multi && ps[0].cpus == ps[1].cpus {
		t.Logf("ranks 0 and 1 share cpus %s (one core with several threads?)", ps[0].cpus)
	}

	r = runIn(t, "", "-n", "1", "--bind-to", "none", "--report-bindings", probe)
	ps = probes(t, r, 1)
	if !strings.Contains(r.Stderr, "ftmpirun: rank 0 (pid ") || !strings.Contains(r.Stderr, ") not bound: cpus ") || ps[0].cpus != self {
		t.Fatalf("--bind-to none: cpus %s (test's %s), stderr:\n%s", ps[0].cpus, self, r.Stderr)
	}

	// Not named: bound to cores at np 2, as Open MPI does; not at np 3.
	r = runIn(t, "", "-n", "2", "--report-bindings", probe)
	ps = probes(t, r, 2)
	if ms := report.FindAllStringSubmatch(r.Stderr, -1); len(ms) != 2 {
		t.Fatalf("np 2, no --bind-to: want 2 binding reports, stderr:\n%s", r.Stderr)
	}
	for rank, p := range ps {
		if multi && p.cpus == self || !p.agree {
			t.Errorf("np 2, no --bind-to: rank %d runs on cpus %s (all threads: %v), the test's %s", rank, p.cpus, p.agree, self)
		}
	}
	r = runIn(t, "", "-n", "3", "--report-bindings", probe)
	ps = probes(t, r, 3)
	for rank, p := range ps {
		if p.cpus != self {
			t.Errorf("np 3, no --bind-to: rank %d bound to cpus %s (test's %s), stderr:\n%s", rank, p.cpus, self, r.Stderr)
		}
	}
}

// A usage mistake fits a screen: its line and where the help is, exit 2.
func TestMpirunUsageErrorOneLine(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-n", "2", "--timeout", "1", bin["hello"]},
		{"--mca", "btl", "self,tcp", "-n", "2", bin["hello"]},
		{"-n", "2", "--bogus", bin["hello"]},
	} {
		r := jobtest.Run(t, 30*time.Second, nil, bin["ftmpirun"], args...)
		lines := strings.Split(strings.TrimSuffix(r.Stderr, "\n"), "\n")
		if r.Code != 2 || len(lines) != 2 || !strings.HasPrefix(lines[0], "ftmpirun: ") || lines[1] != "see ftmpirun --help" || r.Stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", args, r.Code, r.Stdout, r.Stderr)
		}
	}
}
