package launch

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

func TestParseHostList(t *testing.T) {
	got, err := parseHostList("h1:4,h2,[fd00::1]:2,h1:1")
	want := []HostSlots{{"h1", 5}, {"h2", 1}, {"fd00::1", 2}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	for _, bad := range []string{"h1:0", "h1:x", ",h2", "fd00::1:2", "[fd00::1", ":3"} {
		if _, err := parseHostList(bad); err == nil {
			t.Errorf("parseHostList(%q) accepted", bad)
		}
	}
}

func TestParseHostfile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hosts")
	os.WriteFile(p, []byte("# cluster\nh1 slots=4 max_slots=8\nh2:2   # MPICH form\n\nh3\n"), 0o600)
	got, err := parseHostfile(p)
	want := []HostSlots{{"h1", 4}, {"h2", 2}, {"h3", 1}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v, want %v", got, err, want)
	}
	os.WriteFile(p, []byte("h1 slots=4\nh2 cores=2\n"), 0o600)
	if _, err := parseHostfile(p); err == nil || !strings.Contains(err.Error(), ":2: unknown field \"cores=2\"") {
		t.Fatalf("bad field: %v", err)
	}
	os.WriteFile(p, []byte("h1 slots=0\n"), 0o600)
	if _, err := parseHostfile(p); err == nil || !strings.Contains(err.Error(), "slots=\"0\"") {
		t.Fatalf("zero slots: %v", err)
	}
}

func TestMapRanks(t *testing.T) {
	hs := []HostSlots{{"a", 2}, {"b", 2}, {"c", 1}}
	for _, c := range []struct {
		n      int
		by     string
		over   bool
		want   []int
		errSub string
	}{
		{5, MapBySlot, false, []int{0, 0, 1, 1, 2}, ""},
		{5, MapByNode, false, []int{0, 1, 2, 0, 1}, ""},
		{3, MapBySlot, false, []int{0, 0, 1}, ""},
		{6, MapBySlot, false, nil, "6 ranks asked but only 5 slots on the hosts (a:2,b:2,c:1): add slots or use --oversubscribe"},
		{7, MapBySlot, true, []int{0, 0, 1, 1, 2, 0, 1}, ""},
		{2, "core", false, nil, "invalid --map-by"},
	} {
		got, err := mapRanks(hs, c.n, c.by, c.over)
		if c.errSub != "" {
			if err == nil || !strings.Contains(err.Error(), c.errSub) {
				t.Errorf("n=%d by=%s: err %v, want %q", c.n, c.by, err, c.errSub)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("n=%d by=%s over=%v: %v %v, want %v", c.n, c.by, c.over, got, err, c.want)
		}
	}
}

func TestParseArgsMultiHost(t *testing.T) {
	cfg, err := ParseArgs([]string{"--host", "a:2,b:2", "-x", "FOO=1", "-x", "BAR", "--map-by", "node", "--interface", "10.0.0.0/8", "prog"})
	if err != nil || cfg.N != 4 || cfg.MapBy != MapByNode || !reflect.DeepEqual(cfg.Export, []string{"FOO=1", "BAR"}) || cfg.Interface != "10.0.0.0/8" {
		t.Fatalf("%+v %v", cfg, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "5", "--host", "a:2,b:2", "prog"}, "5 ranks asked but only 4 slots"},
		{[]string{"--host", "a:2", "--hostfile", "/nonexistent", "prog"}, "cannot be combined"},
		{[]string{"--hostfile", "/nonexistent", "prog"}, "--hostfile: open /nonexistent"},
		{[]string{"--host", "a:2", "--interface", "10.0.0.0/99", "prog"}, "invalid --interface"},
		{[]string{"--host", "a:2", "-x", "=v", "prog"}, "invalid -x"},
		{[]string{"--host", "a:2", "--wdir", "/nonexistent", "prog"}, "invalid --wdir"},
	} {
		_, err := ParseArgs(c.args)
		var ue *UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		} else if !strings.Contains(err.Error(), "usage") && !asUsage(err, &ue) {
			t.Errorf("%q: %T is not a UsageError", c.args, err)
		}
	}
	if _, err := ParseArgs([]string{"-n", "5", "--oversubscribe", "--host", "a:2,b:2", "prog"}); err != nil {
		t.Fatalf("--oversubscribe: %v", err)
	}
}

func asUsage(err error, ue **UsageError) bool {
	u, ok := err.(*UsageError)
	*ue = u
	return ok
}

// fakeSSH writes a launch agent that runs the command on this machine
// (each "host" is then a separate agent process with its own host id), and
// records the agent's pid in dir/agent-HOST.pid.
func fakeSSH(t *testing.T) (path, dir string) {
	dir = t.TempDir()
	path = filepath.Join(dir, "fakessh")
	script := "#!/bin/sh\nhost=$1; shift\necho $$ > " + dir + "/agent-$host.pid\nexec sh -c \"exec $*\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// TestMultiHostFakeSSH: three "hosts" (this one and two agents started
// through a fake ssh), the ranks on different hosts over TCP on loopback;
// -x and --wdir reach remote ranks.
func TestMultiHostFakeSSH(t *testing.T) {
	ssh, _ := fakeSSH(t)
	ring := filepath.Join(t.TempDir(), "ring")
	if err := jobtest.Build([]string{ring}, []string{"../../examples/ring"}); err != nil {
		t.Fatal(err)
	}
	r := run(t, 60*time.Second, "--host", "localhost:1,fake2:2,fake3:1", "--interface", "lo", "--launch-agent", ssh,
		"--tag-output", ring)
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "[0] result: ranks=4 token=6 ok") {
		t.Fatalf("ring over 3 hosts:\n%s\n%s", r.stdout, r.stderr)
	}
	wdir := t.TempDir()
	r = run(t, 60*time.Second, "--host", "localhost:1,fake2:1", "--interface", "lo", "--launch-agent", ssh,
		"-x", "MH_FOO=bar", "--wdir", wdir, "--tag-output", "sh", "-c", "echo $MH_FOO $FTMPI_HOST $(pwd)")
	expectCode(t, r, 0)
	for _, want := range []string{"[0] bar localhost " + wdir, "[1] bar fake2 " + wdir} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestMultiHostAgentLost: the agent of a host is SIGKILLed once the ranks
// started; the head reports its rank as failed (HostLost) and the
// survivor, told of it, finishes; the lost rank dies with its agent.
func TestMultiHostAgentLost(t *testing.T) {
	ssh, dir := fakeSSH(t)
	mark := newMark(t)
	cmd := exec.Command(ftmpirunBin, "--host", "localhost:1,fake2:1", "--interface", "127.0.0.0/8", "--launch-agent", ssh,
		"--on-failure", "continue", "-v", rankprogBin, "waitfail", "1", "10")
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark, EnvAgentHBPeriod+"=100ms", EnvAgentHBTimeout+"=1s")
	code, err, log := runKillingAgent(t, cmd, dir, "fake2")
	if code != 10 || !strings.Contains(log, "host fake2 lost") {
		t.Fatalf("exit %d (%v), want 10 with the host lost\n%s", code, err, log)
	}
	assertNoLeftovers(t, mark, 5*time.Second)
}

// runKillingAgent runs cmd (an ftmpirun over the fake ssh of dir), kills
// the agent of host with SIGKILL once the launcher logs "ranks started",
// and returns the exit code, Wait's error and the launcher's standard
// error. The run is killed after 60 s.
func runKillingAgent(t *testing.T, cmd *exec.Cmd, dir, host string) (int, error, string) {
	t.Helper()
	return runKillingAgentWhen(t, cmd, dir, host, nil)
}

// TestMultiHostPreloadBinary: with --preload-binary the remote rank runs
// the copy its agent received (in the agent's job directory), the local
// one the program itself.
func TestMultiHostPreloadBinary(t *testing.T) {
	ssh, _ := fakeSSH(t)
	prog := filepath.Join(t.TempDir(), "mysh")
	b, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh to copy")
	}
	if err := os.WriteFile(prog, b, 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, 60*time.Second, "--host", "localhost:1,fake2:1", "--interface", "lo", "--launch-agent", ssh,
		"--preload-binary", "--tag-output", prog, "-c", "echo $0")
	expectCode(t, r, 0)
	if !strings.Contains(r.stdout, "[0] "+prog+"\n") || !strings.Contains(r.stdout, "/preload-mysh\n") ||
		strings.Contains(r.stdout, "[1] "+prog+"\n") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestMultiHostSlowStdoutIsNoHostLoss: ftmpirun's stdout is not read for
// longer than the agent heartbeat timeout while a remote rank prints a
// lot: the head's reader of that agent is stuck handing lines over, which
// is no sign of a lost host; the job ends normally with every line.
func TestMultiHostSlowStdoutIsNoHostLoss(t *testing.T) {
	ssh, _ := fakeSSH(t)
	mark := newMark(t)
	cmd := exec.Command(ftmpirunBin, "--host", "localhost:1,fake2:1", "--interface", "lo", "--launch-agent", ssh,
		"sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done")
	// A timeout of 2 s, not shorter: on a loaded 2-core machine (the
	// suite's other packages) a 300 ms one was missed by starvation alone,
	// and a 1 s one once under -race at load 34-53.
	const hbTimeout = 2 * time.Second
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark, EnvAgentHBPeriod+"=100ms", EnvAgentHBTimeout+"="+hbTimeout.String())
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	// The stimulus: nobody reads stdout for 3 heartbeat timeouts (the
	// pipe fills within milliseconds: 2 ranks print 1.2 MB).
	time.Sleep(3 * hbTimeout)
	n := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n++
	}
	err := cmd.Wait()
	if err != nil || n != 40000 || strings.Contains(stderr.String(), "lost") {
		t.Fatalf("exit %v, %d lines (want 40000)\nstderr:\n%s", err, n, stderr.String())
	}
	assertNoLeftovers(t, mark, 5*time.Second)
}

// TestMultiHostSuspectRemoteRank: a rank on another host is stopped; rank
// 0 suspects it; the head asks that host's agent for the process's state
// (stopped), the agent kills it, and the survivors are told.
func TestMultiHostSuspectRemoteRank(t *testing.T) {
	ssh, _ := fakeSSH(t)
	r := run(t, 60*time.Second, "--host", "localhost:2,fake2:1", "--interface", "lo", "--launch-agent", ssh,
		"--on-failure", "continue", "--inject", "stop:rank=2,at=200ms", rankprogBin, "suspect", "2", "20")
	expectCode(t, r, 20)
	expectStderr(t, r, "ftmpirun: killing rank 2: declared failed by rank 0: no heartbeat\n")
	if !strings.Contains(r.stdout, "rank 0 suspected 2\n") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestMultiHostLostRankNamesItsPid: the agent of a host is SIGKILLed
// while its rank runs but has not connected to the head (no hello, which
// is where a rank tells its pid); the head's messages name the rank's
// real pid, which the agent reported when it started it, not "pid 0".
func TestMultiHostLostRankNamesItsPid(t *testing.T) {
	ssh, dir := fakeSSH(t)
	mark := newMark(t)
	cmd := exec.Command(ftmpirunBin, "--host", "localhost:1,fake2:1", "--interface", "lo", "--launch-agent", ssh,
		"--on-failure", "continue", "sh", "-c", `if [ "$FTMPI_RANK" = 1 ]; then echo "remote pid $$"; exec sleep 60; fi`)
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark, EnvAgentHBPeriod+"=100ms", EnvAgentHBTimeout+"=1s")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer kill.Stop()
	sc := bufio.NewScanner(out)
	pid := 0
	for pid == 0 && sc.Scan() {
		fmt.Sscanf(sc.Text(), "remote pid %d", &pid)
	}
	if pid <= 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the remote rank never printed its pid\nstderr:\n%s", stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "agent-fake2.pid"))
	agent, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || agent <= 0 {
		t.Fatalf("agent pid: %v %q", err, b)
	}
	syscall.Kill(agent, syscall.SIGKILL)
	for sc.Scan() {
	}
	cmd.Wait()
	want := fmt.Sprintf("rank 1 (pid %d) killed by signal 9 (killed), its host fake2 was lost", pid)
	if !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr lacks %q:\n%s", want, stderr.String())
	}
	assertNoLeftovers(t, mark, 5*time.Second)
}

// TestMultiHostAgentStartFails: the launch agent fails before the agent
// answers (ssh refused: an sshd that resets the connection, a host that
// does not resolve); ftmpirun says so and exits at once. It used to wait
// forever for the answer it had already read.
func TestMultiHostAgentStartFails(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "badssh")
	script := "#!/bin/sh\necho 'kex_exchange_identification: read: Connection reset by peer' >&2\nexit 255\n"
	if err := os.WriteFile(bad, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, 30*time.Second, "--host", "localhost:1,fake2:1,fake3:1", "--interface", "lo", "--launch-agent", bad, "true")
	expectCode(t, r, 1)
	expectStderr(t, r, "cannot start the agent on host fake2: ")
	expectStderr(t, r, "(kex_exchange_identification: read: Connection reset by peer)")
}
