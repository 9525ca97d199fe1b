package launch

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
)

// TestTreeKidsLayout: for many (hosts, fan-out), every remote host is
// started exactly once, by a node started before it, no node starts more
// than K, the launch is flat when hosts <= K, and the tree has the least
// depth a K-ary tree can have.
func TestTreeKidsLayout(t *testing.T) {
	for _, c := range []struct {
		m, k int
		want [][]int
	}{
		{5, 2, [][]int{{1, 2}, {3, 4}, {5}, nil, nil, nil}},
		{4, 4, [][]int{{1, 2, 3, 4}, nil, nil, nil, nil}},
		{3, 1, [][]int{{1}, {2}, {3}, nil}},
		{0, 3, [][]int{nil}},
	} {
		if got := treeKids(c.m, c.k); !reflect.DeepEqual(got, c.want) {
			t.Errorf("treeKids(%d, %d) = %v, want %v", c.m, c.k, got, c.want)
		}
	}
	for m := 0; m <= 300; m++ {
		for _, k := range []int{1, 2, 3, 4, 5, 8, 16, 32, 64, 1000} {
			if k == 1 && m > 60 {
				continue // a chain: depth m
			}
			kids := treeKids(m, k)
			parent := make([]int, m+1)
			for i := range parent {
				parent[i] = -1
			}
			for n, cs := range kids {
				if len(cs) > k {
					t.Fatalf("m=%d k=%d: node %d starts %d > k", m, k, n, len(cs))
				}
				for _, c := range cs {
					if c < 1 || c > m || parent[c] >= 0 || n >= c {
						t.Fatalf("m=%d k=%d: node %d started by %d (before: %d)", m, k, c, n, parent[c])
					}
					parent[c] = n
				}
			}
			depth := 0
			for n := 1; n <= m; n++ {
				if parent[n] < 0 {
					t.Fatalf("m=%d k=%d: node %d started by nobody", m, k, n)
				}
				d := 0
				for p := n; p != 0; p = parent[p] {
					d++
				}
				depth = max(depth, d)
			}
			// The least depth: the smallest d with k + k^2 + ... + k^d >= m.
			least, reach, level := 0, 0, 1
			for reach < m {
				level *= k
				reach += level
				least++
			}
			if depth != least || treeDepth(m, k) != depth {
				t.Fatalf("m=%d k=%d: depth %d (treeDepth %d), want %d", m, k, depth, treeDepth(m, k), least)
			}
			if flat := len(kids[0]) == m; flat != (m <= k) {
				t.Fatalf("m=%d k=%d: head starts %d of %d", m, k, len(kids[0]), m)
			}
		}
	}
}

// TestTreeNodesHello: the subtrees handed to the head's children name
// every remote host once, by its index, and pass the wire's checks.
// TestTreeTooDeep: a chain (--fanout 1) over more remote hosts than the
// depth bound is refused before anything starts, naming the fix.
func TestTreeTooDeep(t *testing.T) {
	var hosts []HostSlots
	var remote []int
	for i := 0; i <= maxTreeDepth+1; i++ {
		hosts = append(hosts, HostSlots{Name: "h" + strconv.Itoa(i), Slots: 1})
		if i > 0 {
			remote = append(remote, i)
		}
	}
	_, _, err := startTree(Config{Hosts: hosts, Fanout: 1}, remote, agentwire.Msg{}, netip.MustParseAddr("127.0.0.1"), "/x", nil, nil, t.Logf)
	if err == nil || !strings.Contains(err.Error(), "depth 1001 (at most 1000): use a larger fan-out") {
		t.Fatalf("got %v", err)
	}
}

func TestTreeNodesHello(t *testing.T) {
	hosts := []HostSlots{{Name: "h1", Slots: 1}}
	var remote []int
	for i := 1; i <= 40; i++ {
		hosts = append(hosts, HostSlots{Name: "h" + strconv.Itoa(i+1), Slots: 1})
		remote = append(remote, i)
	}
	kids := treeKids(len(remote), 3)
	seen := map[int]int{}
	var walk func([]agentwire.Node)
	walk = func(ns []agentwire.Node) {
		for _, n := range ns {
			seen[n.Index]++
			if hosts[n.Index].Name != n.Host {
				t.Fatalf("node %+v names another host", n)
			}
			walk(n.Kids)
		}
	}
	for _, c := range kids[0] {
		sub := treeNodes(kids, c, remote, hosts)
		walk(sub)
		i := remote[c-1]
		m := agentwire.Msg{Type: agentwire.THello, Version: agentwire.Version, Job: "j", Host: hosts[i].Name, Node: i, HBPeriod: 1, HBTimeout: 2,
			Attach: "127.0.0.1:1", Launch: []string{"ssh"}, Self: "/x/ftmpirun", Tree: sub}
		var buf bytes.Buffer
		if err := agentwire.Write(&buf, m); err != nil {
			t.Fatal(err)
		}
		if got, err := agentwire.Read(bufio.NewReader(&buf)); err != nil || !reflect.DeepEqual(got.Tree, sub) {
			t.Fatalf("hello of %s: %v", hosts[i].Name, err)
		}
		seen[i]++
	}
	for _, i := range remote {
		if seen[i] != 1 {
			t.Fatalf("host index %d appears %d times", i, seen[i])
		}
	}
}

func TestFanoutSettings(t *testing.T) {
	cfg, err := ParseArgs([]string{"--host", "a,b,c", "--fanout", "2", "prog"})
	if err != nil || cfg.Fanout != 2 {
		t.Fatalf("--fanout 2: %v %d", err, cfg.Fanout)
	}
	if cfg, err = ParseArgs([]string{"--host", "a,b,c", "prog"}); err != nil || cfg.Fanout != DefaultFanout {
		t.Fatalf("default: %v %d", err, cfg.Fanout)
	}
	t.Setenv(EnvFanout, "3")
	if cfg, err = ParseArgs([]string{"--host", "a,b,c", "prog"}); err != nil || cfg.Fanout != 3 {
		t.Fatalf("%s=3: %v %d", EnvFanout, err, cfg.Fanout)
	}
	if cfg, err = ParseArgs([]string{"--host", "a,b,c", "--fanout", "5", "prog"}); err != nil || cfg.Fanout != 5 {
		t.Fatalf("the flag wins: %v %d", err, cfg.Fanout)
	}
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--host", "a,b", "--fanout", "0", "prog"}, "", "invalid --fanout"},
		{[]string{"--host", "a,b", "--fanout", "x", "prog"}, "", "invalid --fanout"},
		{[]string{"--host", "a,b", "prog"}, "-1", "invalid FTMPI_FANOUT"},
	} {
		t.Setenv(EnvFanout, c.env)
		_, err := ParseArgs(c.args)
		var ue *UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) || !asUsage(err, &ue) {
			t.Errorf("%q %s=%q: %v, want a usage error %q", c.args, EnvFanout, c.env, err, c.want)
		}
	}
	if useTree(Config{Fanout: 4}, 4) || !useTree(Config{Fanout: 4}, 5) || useTree(Config{}, DefaultFanout) {
		t.Fatal("flat up to the fan-out, a tree beyond")
	}
	if useTree(Config{Fanout: 2, SlurmJob: "7"}, 9) || !useTree(Config{Fanout: 2, SlurmJob: "7", LaunchAgent: "ssh"}, 9) {
		t.Fatal("under Slurm (agents by srun) the launch stays flat")
	}
}

// treeSSH writes a launch agent that runs the command on this machine as
// a child of its own, so that the agent outlives it as a remote agent
// outlives its ssh client (ssh dies with the agent that started it), and
// records the agent's pid in dir/agent-HOST.pid.
func treeSSH(t *testing.T) (path, dir string) {
	dir = t.TempDir()
	path = filepath.Join(dir, "treessh")
	script := "#!/bin/sh\nhost=$1; shift\nexec 3<&0\nsh -c \"exec $*\" <&3 3<&- &\necho $! > " + dir + "/agent-$host.pid\nwait $!\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, dir
}

// TestTreeLaunchInnerAgentLost: five hosts, fan-out 2: the head starts
// f2 and f3, f2 starts f4 and f5. Once every rank started, f2's agent is
// SIGKILLed: its rank (1) is failed, the ranks of its children f4 and f5
// (3 and 4) are told and finish, as do 0 and 2; the job's code is rank 0's
// (waitfail: 10 + rank).
func TestTreeLaunchInnerAgentLost(t *testing.T) {
	ssh, dir := treeSSH(t)
	mark := newMark(t)
	cmd := exec.Command(ftmpirunBin, "--host", "localhost:1,f2:1,f3:1,f4:1,f5:1", "--interface", "127.0.0.0/8", "--launch-agent", ssh,
		"--fanout", "2", "--on-failure", "continue", "-v", rankprogBin, "waitfail", "1", "10")
	// The kill is seen by the connection's end at once; a long heartbeat
	// timeout keeps a loaded machine from losing a healthy agent.
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark, EnvAgentHBPeriod+"=100ms", EnvAgentHBTimeout+"=10s")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	code, err, log := runKillingAgent(t, cmd, dir, "f2")
	if code != 10 || !strings.Contains(log, "host f2 lost") {
		t.Fatalf("exit %d (%v), want 10 with the host lost\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), log)
	}
	for _, want := range []string{"agent on f2 attached (started by the head)", "agent on f3 attached (started by the head)",
		"agent on f4 attached (started by f2)", "agent on f5 attached (started by f2)"} {
		if !strings.Contains(log, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, log)
		}
	}
	for _, r := range []int{0, 2, 3, 4} {
		if want := "rank " + strconv.Itoa(r) + " saw failure of 1"; !strings.Contains(stdout.String(), want) {
			t.Fatalf("stdout lacks %q:\n%s\nstderr:\n%s", want, stdout.String(), log)
		}
	}
	if strings.Count(log, " lost (") != 1 {
		t.Fatalf("only f2 may be lost:\n%s", log)
	}
	assertNoLeftovers(t, mark, 5*time.Second)
}

// TestAttachedAgentHelloThenEOF: an agent of a tree launch gets its hello
// and at once the end of its input (the launch command closes it); it
// attaches to the head over TCP (this test's listener), says ready with
// its host and index there, writes nothing on its standard output, and
// ends with the head's Bye, exit 0. (The hello and the end of the input
// used to race in one select: "no hello from the head: EOF" in about one
// launch of four under -race, when the agent's process starts slowly; in
// process here the race is rarely lost, so this test alone does not catch
// it: TestTreeLaunchInnerAgentLost under -race did.)
func TestAttachedAgentHelloThenEOF(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for i := 0; i < 3; i++ {
		hello := agentHello()
		hello.Host, hello.Node, hello.Attach = "h3", 2, ln.Addr().String()
		var in bytes.Buffer
		if err := agentwire.Write(&in, hello); err != nil {
			t.Fatal(err)
		}
		var out, errw syncBuffer
		code := make(chan int, 1)
		go func() { code <- RunAgent(&in, &out, &errw) }()
		accepted := make(chan net.Conn, 1)
		go func() {
			nc, _ := ln.Accept()
			accepted <- nc
		}()
		var nc net.Conn
		select {
		case nc = <-accepted:
		case c := <-code:
			t.Fatalf("agent %d exited %d without attaching: %s", i, c, errw.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("agent %d did not attach: %s", i, errw.String())
		}
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		r := bufio.NewReader(nc)
		m, err := agentwire.Read(r)
		if err != nil || m.Type != agentwire.TReady || m.Host != "h3" || m.Node != 2 || m.Job != hello.Job || m.Error != "" {
			t.Fatalf("agent %d: first frame %+v, %v", i, m, err)
		}
		if err := agentwire.Write(nc, agentwire.Msg{Type: agentwire.TBye}); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, r)
		select {
		case c := <-code:
			if c != 0 {
				t.Fatalf("agent %d: exit %d after bye: %s", i, c, errw.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("agent %d: no exit after bye", i)
		}
		nc.Close()
		if out.String() != "" {
			t.Fatalf("agent %d wrote %q on its standard output (a tree agent's is unused)", i, out.String())
		}
	}
}

// TestTreeLaunchChildCannotStart: the launch command of f4, which f2's
// agent runs, fails as ssh does for a host it cannot reach; f2 reports it
// to the head, and ftmpirun says which host, why and who started it, and
// exits 1 with nothing left running.
func TestTreeLaunchChildCannotStart(t *testing.T) {
	ssh, _ := treeSSH(t)
	wrap := filepath.Join(t.TempDir(), "wrapssh")
	script := "#!/bin/sh\nif [ \"$1\" = f4 ]; then echo 'ssh: connect to host f4 port 22: No route to host' >&2; exit 255; fi\nexec " + ssh + " \"$@\"\n"
	if err := os.WriteFile(wrap, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// run checks that nothing of the job (agents included) is left.
	r := run(t, 60*time.Second, "--host", "localhost:1,f2:1,f3:1,f4:1,f5:1", "--interface", "127.0.0.0/8",
		"--launch-agent", wrap, "--fanout", "2", rankprogBin, "waitfail", "1", "10")
	expectCode(t, r, 1)
	expectStderr(t, r, "cannot start the agent on host f4: its launch command ended before the agent attached: exit status 255 (ssh: connect to host f4 port 22: No route to host) (started by f2)")
}
