package launch

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
)

// expectUsageLine checks a usage error: exit code 2 and a stderr that fits
// a screen, the one line that says what is wrong (holding msg) and where
// the help is, never the whole help (issue 26).
func expectUsageLine(t *testing.T, args []string, r result, msg string) {
	t.Helper()
	if r.code != ExitUsage {
		t.Errorf("%q: exit code %d, want %d; stderr:\n%s", args, r.code, ExitUsage, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ftmpirun: ") || !strings.Contains(lines[0], msg) ||
		lines[1] != "see ftmpirun --help" {
		t.Errorf("%q: want the line %q and \"see ftmpirun --help\", got:\n%s", args, msg, r.stderr)
	}
}

// The flags mpirun scripts carry are accepted with the meaning mpirun
// users know (issue 26).
func TestMpirunFlagsParse(t *testing.T) {
	t.Setenv("FTMPI_INJECT", "")
	t.Setenv("SLURM_JOB_ID", "")
	abs, _ := filepath.Abs("out")
	for _, tc := range []struct {
		args []string
		want func(c Config) any
		val  any
	}{
		{[]string{"--allow-run-as-root", "-n", "2", "prog"}, func(c Config) any { return c.N }, 2},
		{[]string{"-allow-run-as-root", "-np", "3", "prog"}, func(c Config) any { return c.N }, 3},
		{[]string{"--wd", "/", "-n", "1", "prog"}, func(c Config) any { return c.Wdir }, "/"},
		{[]string{"-N", "3", "prog"}, func(c Config) any { return [2]int{c.N, c.PerNode} }, [2]int{3, 3}},
		{[]string{"--npernode", "2", "-n", "1", "prog"}, func(c Config) any { return [2]int{c.N, c.PerNode} }, [2]int{1, 2}},
		{[]string{"-H", "a:1,b:1", "-N", "2", "prog"}, func(c Config) any { return [2]any{c.N, c.Hosts} },
			[2]any{4, []HostSlots{{"a", 2}, {"b", 2}}}},
		{[]string{"--host", "a:4,b:4", "--map-by", "ppr:1:node", "prog"}, func(c Config) any { return [2]any{c.N, c.Hosts} },
			[2]any{2, []HostSlots{{"a", 1}, {"b", 1}}}},
		{[]string{"--map-by", "PPR:2:NODE", "prog"}, func(c Config) any { return [2]int{c.N, c.PerNode} }, [2]int{2, 2}},
		{[]string{"-n", "2", "--map-by", "node:OVERSUBSCRIBE", "prog"}, func(c Config) any { return [2]any{c.MapBy, c.Oversubscribe} },
			[2]any{MapByNode, true}},
		{[]string{"-n", "2", "--map-by", "core", "prog"}, func(c Config) any { return c.MapBy }, MapBySlot},
		{[]string{"-n", "2", "--bind-to", "core", "--report-bindings", "prog"}, func(c Config) any { return [2]any{c.BindTo, c.ReportBindings} },
			[2]any{hostagent.BindCore, true}},
		{[]string{"-n", "2", "--bind-to", "socket:overload-allowed", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindSocket},
		{[]string{"-n", "2", "--bind-to", "none", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindNone},
		// Not named: Open MPI 4.1's default, cores for a job of at most
		// two processes on this host, else none (defaultBind).
		{[]string{"-n", "2", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindCore},
		{[]string{"-n", "1", "--spares", "1", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindCore},
		{[]string{"-n", "3", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindNone},
		{[]string{"-n", "2", "--spares", "1", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindNone},
		{[]string{"-H", "a:1,b:1", "-n", "2", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindNone},
		{[]string{"-N", "2", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindCore},
		{[]string{"-N", "3", "prog"}, func(c Config) any { return c.BindTo }, hostagent.BindNone},
		{[]string{"-n", "2", "--output-filename", "out", "--timestamp-output", "--merge-stderr-to-stdout", "prog"},
			func(c Config) any { return [3]any{c.OutputDir, c.Timestamp, c.MergeStderr} }, [3]any{abs, true, true}},
		{[]string{"-n", "2", "--timeout", "90s", "prog"}, func(c Config) any { return c.Timeout }, 90 * time.Second},
		{[]string{"-n", "2", "--stdin", "1", "prog"}, func(c Config) any { return [2]any{c.StdinRank, c.NoStdin} }, [2]any{1, false}},
		{[]string{"-n", "2", "--stdin", "none", "prog"}, func(c Config) any { return [2]any{c.StdinRank, c.NoStdin} }, [2]any{0, true}},
		// MPICH's hydra spellings; a pair flag's words after PROGRAM are the program's.
		{[]string{"-genv", "A", "1 2", "-env", "B", "x", "-genvall", "-n", "2", "prog", "-genv", "C", "3"},
			func(c Config) any { return [2]any{c.Export, c.Args} }, [2]any{[]string{"A=1 2", "B=x"}, []string{"-genv", "C", "3"}}},
		{[]string{"-hosts", "a,b", "-ppn", "2", "-iface", "eth0", "-prepend-rank", "prog"},
			func(c Config) any { return [4]any{c.N, c.Hosts, c.Interface, c.TagOutput} },
			[4]any{4, []HostSlots{{"a", 2}, {"b", 2}}, "eth0", true}},
	} {
		c, err := ParseArgs(tc.args)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if got := tc.want(c); !reflect.DeepEqual(got, tc.val) {
			t.Errorf("%q: got %v, want %v", tc.args, got, tc.val)
		}
	}
	if _, err := ParseArgs([]string{"--version"}); err != ErrVersion {
		t.Errorf("--version: %v", err)
	}
}

// A usage mistake is one line (plus where the help is), exit code 2; the
// flags ftmpirun does not have say what does their job.
func TestMpirunUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-n", "2", "--timeout", "1", "true"}, `invalid --timeout "1": give a unit, e.g. 1s, 2m or 1.5h`},
		{[]string{"-n", "2", "--timeout", "soon", "true"}, `want a duration with a unit, e.g. 30s, 2m`},
		{[]string{"-n", "2", "--mca", "btl", "self,tcp", "true"}, "ftmpi has no MCA parameters (--mca btl self,tcp): choose the transport with --transport"},
		{[]string{"--mca", "btl_tcp_if_include", "eth0", "-n", "2", "true"}, "name the network between hosts with --interface"},
		{[]string{"-n", "2", "-mca", "plm_rsh_agent", "rsh", "true"}, "--launch-agent"},
		{[]string{"-n", "2", "--mca", "mpi_leave_pinned", "1", "true"}, "(--mca mpi_leave_pinned 1): no ftmpirun flag or variable does this; drop the flag"},
		{[]string{"-n", "2", "--stdin", "all", "true"}, `invalid --stdin "all": want a rank or none`},
		{[]string{"-n", "2", "--stdin", "2", "true"}, `invalid --stdin 2: the job's ranks are 0 to 1`},
		{[]string{"-n", "2", "--bind-to", "board", "true"}, `invalid --bind-to "board": want core, socket, hwthread or none`},
		{[]string{"-n", "2", "--map-by", "socket", "true"}, `invalid --map-by "socket": want slot, node or ppr:N:node`},
		{[]string{"-n", "2", "--map-by", "ppr:2:socket", "true"}, `ppr:N:node is the only ppr form`},
		{[]string{"-n", "3", "-N", "2", "true"}, "-n 3 (with 0 spares) is more than -N 2 ranks per host on 1 host(s)"},
		{[]string{"-n", "2", "--no-such-flag", "true"}, "unknown flag --no-such-flag"},
		{[]string{"-n", "2", "--tag-output=maybe", "true"}, `invalid --tag-output="maybe": want true or false`},
	} {
		r := run(t, limit, tc.args...)
		expectUsageLine(t, tc.args, r, tc.msg)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "--version")
	expectCode(t, r, 0)
	if !strings.HasPrefix(r.stdout, "ftmpirun (ftmpi) ") || r.stderr != "" {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// An unresolvable --host says so, without sending the user to --interface
// (the host would fail at ssh all the same).
func TestUnresolvableHost(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "--host", "localhost:1,no-such-host.invalid:1", "true")
	expectCode(t, r, 1)
	expectStderr(t, r, "cannot resolve host no-such-host.invalid")
	if strings.Contains(r.stderr, "--interface") {
		t.Fatalf("stderr hints --interface:\n%s", r.stderr)
	}
}

// Injected faults the job never reached are reported in one line.
func TestInjectNeverFired(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "-n", "2", "--inject", "kill:rank=1,at=1h;stop:rank=0,on=no such line", "true")
	expectCode(t, r, 0)
	var lines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, "never fired") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "kill:rank=1,at=1h0m0s; stop:rank=0,on=no such line never fired: the job ended first") {
		t.Fatalf("want one line naming both faults, stderr:\n%s", r.stderr)
	}
	// A fault that fired is not reported.
	r = run(t, limit, "-n", "1", "--inject", "kill:rank=0,on=hello", "echo", "hello")
	if strings.Contains(r.stderr, "never fired") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}

// Config.Stdin that is no file (or a terminal) reaches rank 0 through a
// pipe ftmpirun fills; the other ranks read /dev/null.
func TestStdinCopiedToRankZero(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := Run(Config{N: 2, Program: "/bin/sh", Args: []string{"-c", `echo "$FTMPI_RANK:$(cat)"`}, TagOutput: true,
		Stdin: strings.NewReader("to rank 0"), Stdout: &stdout, Stderr: &stderr, Env: append(os.Environ(), "FTMPI_TESTMARK="+newMark(t))})
	if code != 0 || !strings.Contains(stdout.String(), "[0] 0:to rank 0\n") || !strings.Contains(stdout.String(), "[1] 1:\n") {
		t.Fatalf("code %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	// --stdin 1: to rank 1 instead.
	stdout.Reset()
	code = Run(Config{N: 2, Program: "/bin/sh", Args: []string{"-c", `echo "$FTMPI_RANK:$(cat)"`}, TagOutput: true, StdinRank: 1,
		Stdin: strings.NewReader("to rank 1"), Stdout: &stdout, Stderr: &stderr, Env: append(os.Environ(), "FTMPI_TESTMARK="+newMark(t))})
	if code != 0 || !strings.Contains(stdout.String(), "[0] 0:\n") || !strings.Contains(stdout.String(), "[1] 1:to rank 1\n") {
		t.Fatalf("--stdin 1: code %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
}

// -N and --bind-to over several hosts: -N 2 puts two ranks on each host
// whatever its slots, and a remote agent binds its ranks by their place
// on its host and reports it (through the rank's stderr) as the local one.
func TestMultiHostPerNodeBindTo(t *testing.T) {
	ssh, _ := fakeSSH(t)
	r := run(t, 60*time.Second, "--host", "localhost,fake2", "-N", "2", "--interface", "lo", "--launch-agent", ssh,
		"--bind-to", "hwthread", "--report-bindings", "--tag-output",
		"sh", "-c", `echo "$FTMPI_HOST $(grep Cpus_allowed_list /proc/self/status | cut -f2)"`)
	expectCode(t, r, 0)
	report := regexp.MustCompile(`ftmpirun: rank (\d) \(pid \d+ on (\S+)\) bound to socket \d+, core \d+, hwthread \d+: cpus (\S+)`)
	ms := report.FindAllStringSubmatch(r.stdout+r.stderr, -1)
	if len(ms) != 4 {
		t.Fatalf("want 4 binding reports\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	for _, m := range ms {
		host := "localhost"
		if m[1] >= "2" {
			host = "fake2"
		}
		if want := "[" + m[1] + "] " + host + " " + m[3] + "\n"; m[2] != host || !strings.Contains(r.stdout, want) {
			t.Errorf("rank %s reported on %s with cpus %s; stdout lacks %q:\n%s", m[1], m[2], m[3], want, r.stdout)
		}
	}
}

// Rank 0 on another host gets ftmpirun's stdin over its agent's
// connection, piece by piece (a large input in pieces, and a rank 0 that
// reads nothing ends the job as usual).
func TestStdinToRemoteRank(t *testing.T) {
	ssh, _ := fakeSSH(t)
	big := strings.Repeat("0123456789abcdef", 3<<16) // 3 MiB: many pieces
	for _, tc := range []struct {
		stdin, script, want string
	}{
		{"hello remote\n", `echo "$FTMPI_RANK $FTMPI_HOST:$(cat)"`, "[0] 0 fake2:hello remote\n[1] 1 localhost:\n"},
		{big, `echo "$FTMPI_RANK $(wc -c)"`, "[0] 0 3145728\n[1] 1 0\n"},
		{big, `echo "$FTMPI_RANK"`, "[0] 0\n[1] 1\n"},
	} {
		mark := newMark(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, ftmpirunBin, "--host", "fake2,localhost", "--interface", "lo", "--launch-agent", ssh,
			"--tag-output", "sh", "-c", tc.script)
		cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark)
		cmd.Stdin = strings.NewReader(tc.stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
		slices.Sort(lines)
		if got := strings.Join(lines, "\n") + "\n"; err != nil || got != tc.want {
			t.Errorf("%s: %v\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", tc.script, err, got, tc.want, &stderr)
		}
		jobtest.AssertNoLeftovers(t, mark, 2*time.Second)
	}
}
