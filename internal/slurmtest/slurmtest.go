// Package slurmtest makes a throw-away Slurm cluster for tests on one Linux
// machine, from Debian's packages (slurmctld, slurmd, slurm-client, munge)
// and without systemd: N compute nodes, each a namespace host of package
// nshosts running one slurmd, and one more host (the "login" host) running
// munged and slurmctld, where salloc, sbatch and srun are run. Every file
// (configuration, munge key, state, spools, logs) lives in one temporary
// directory; the daemons run in the foreground as children of the caller.
// A node can be crashed (every process in its namespace killed: slurmd,
// slurmstepd, the tasks) or cut off (nshosts.Isolate) and started again.
// Close removes everything: processes, namespaces, files.
//
// It needs what nshosts needs (root, ip, nft, sshd) plus the Slurm and
// munge daemons and clients; Available says what is missing. It must not
// be used outside tests and the bench scripts: it changes the machine's
// network namespaces and runs daemons as root.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/nshosts"
	"github.com/ftmpi/ftmpi/internal/procstat"
)

// Packages are the Debian packages the cluster is made of (installed with
// apt-get install --no-install-recommends).
const Packages = "slurmctld slurmd slurm-client munge"

var tools = []string{"slurmctld", "slurmd", "srun", "salloc", "sbatch", "sinfo", "scontrol", "squeue", "scancel", "munged", "munge", "unmunge"}

// Available reports why a cluster cannot be made here (nil: it can).
func Available() error {
	if err := nshosts.Available(); err != nil {
		return err
	}
	var missing []string
	for _, tool := range tools {
		if _, err := lookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("a Slurm cluster needs %s (apt-get install --no-install-recommends %s)", strings.Join(missing, ", "), Packages)
	}
	return nil
}

// lookPath finds a tool in PATH or in the sbin directories (a root
// shell's PATH may lack them).
func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// Cluster is a running Slurm cluster: nodes h1..hN, login host h(N+1).
type Cluster struct {
	Hosts *nshosts.Hosts
	Nodes int    // number of compute nodes
	Dir   string // every file of the cluster
	Conf  string // slurm.conf (SLURM_CONF of every client)
	CPUs  int    // CPUs each node advertises

	daemons []*daemon // munged, slurmctld, slurmd h1..hN (index 2+i-1); a crashed node's is replaced
}

type daemon struct {
	name string
	host int
	cmd  *exec.Cmd
	done chan struct{} // closed once reaped
}

// Ports inside every namespace (each host has its own port space).
const (
	ctlPort = 6817
	dPort   = 6818
)

// Options tune a cluster. The zero value is usable.
type Options struct {
	CPUs int // CPUs each node advertises (default 4; may exceed the machine's)
	// SlurmdTimeout is how long a silent node stays up for slurmctld
	// (default 10s).
	SlurmdTimeout time.Duration
}

// Up starts a cluster of nodes compute nodes and waits until every node is
// idle. On error nothing is left behind. dir "" makes a temporary
// directory (kept short: Unix socket paths must fit in 108 bytes).
func Up(nodes int, dir string, o Options) (_ *Cluster, err error) {
	if nodes < 1 || nodes > 64 {
		return nil, fmt.Errorf("slurmtest: %d nodes: want 1..64", nodes)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	if o.CPUs == 0 {
		o.CPUs = 4
	}
	if o.SlurmdTimeout == 0 {
		o.SlurmdTimeout = 10 * time.Second
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "slurmt-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // slurmstepd and munge clients traverse it
		return nil, err
	}
	c := &Cluster{Nodes: nodes, Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), CPUs: o.CPUs}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	hosts, err := nshosts.Up(nodes+1, filepath.Join(dir, "hosts"))
	if err != nil {
		return nil, err
	}
	c.Hosts = hosts
	for _, d := range []string{"state", "log", "munge", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(c.Conf, []byte(c.config(o)), 0o644); err != nil {
		return nil, err
	}
	if err := c.startMunge(); err != nil {
		return nil, err
	}
	if err := c.start("slurmctld", c.Login(), "slurmctld", "-D", "-f", c.Conf); err != nil {
		return nil, err
	}
	for i := 1; i <= nodes; i++ {
		if err := c.StartNode(i); err != nil {
			return nil, err
		}
	}
	if err := c.WaitIdle(15 * time.Second); err != nil {
		return nil, err
	}
	return c, nil
}

// Login is the index of the login host (slurmctld, munged, the clients).
func (c *Cluster) Login() int { return c.Nodes + 1 }

// Node is node i's name (1..Nodes), as every host resolves it.
func (c *Cluster) Node(i int) string { return c.Hosts.Name(i) }

// NodeList is the nodes in Slurm's hostlist form ("h[1-3]").
func (c *Cluster) NodeList() string {
	if c.Nodes == 1 {
		return "h1"
	}
	return fmt.Sprintf("h[1-%d]", c.Nodes)
}

// nodeTmp is the cluster's TmpFS: on every node, that node's own directory.
func (c *Cluster) nodeTmp() string { return filepath.Join(c.Dir, "ntmp", "self") }

func (c *Cluster) munge() string { return filepath.Join(c.Dir, "munge", "munge.sock") }

func (c *Cluster) config(o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# generated by package slurmtest
ClusterName=ftmpitest
SlurmctldHost=localhost(%s)
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
StateSaveLocation=%s
TmpFS=%s
SlurmdSpoolDir=%s/%%n
SlurmctldPidFile=%s/slurmctld.pid
SlurmdPidFile=%s/slurmd-%%n.pid
SlurmctldLogFile=%s/slurmctld.log
SlurmdLogFile=%s/slurmd-%%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=%d
MessageTimeout=3
SlurmctldTimeout=30
KillOnBadExit=0
WaitTime=0
InactiveLimit=0
KillWait=2
MinJobAge=2
`, c.Hosts.Addr(c.Login()), ctlPort, dPort, c.munge(), filepath.Join(c.Dir, "state"), c.nodeTmp(), filepath.Join(c.Dir, "spool"),
		c.Dir, c.Dir, filepath.Join(c.Dir, "log"), filepath.Join(c.Dir, "log"), int(o.SlurmdTimeout/time.Second))
	for i := 1; i <= c.Nodes; i++ {
		fmt.Fprintf(&b, "NodeName=%s NodeAddr=%s NodeHostname=%s CPUs=%d RealMemory=1000 State=UNKNOWN\n",
			c.Node(i), c.Hosts.Addr(i), c.Node(i), o.CPUs)
	}
	fmt.Fprintf(&b, "PartitionName=debug Nodes=%s Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8\n", c.NodeList())
	return b.String()
}

func (c *Cluster) startMunge() error {
	key := filepath.Join(c.Dir, "munge", "munge.key")
	k := make([]byte, 1024)
	_, _ = rand.Read(k)
	if err := os.WriteFile(key, k, 0o400); err != nil {
		return err
	}
	if err := c.start("munged", c.Login(), "munged", "-F", "--socket="+c.munge(), "--key-file="+key,
		"--pid-file="+filepath.Join(c.Dir, "munge", "munged.pid"), "--log-file="+filepath.Join(c.Dir, "log", "munged.log"),
		"--seed-file="+filepath.Join(c.Dir, "munge", "munged.seed")); err != nil {
		return err
	}
	// The socket appears once munged is ready; a round trip proves it.
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		enc := exec.Command("munge", "-n", "-S", c.munge())
		var cred []byte
		if cred, last = enc.Output(); last == nil {
			dec := exec.Command("unmunge", "-S", c.munge())
			dec.Stdin = bytes.NewReader(cred)
			if out, err := dec.CombinedOutput(); err == nil {
				return nil
			} else {
				last = fmt.Errorf("unmunge: %v: %s", err, bytes.TrimSpace(out))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("slurmtest: munged not answering: %v (log: %s)", last, c.logTail("munged.log"))
}

// nodeShell starts a node's slurmd (sh -c nodeShell SLURMD NS OWN SELF NAME
// ARGS...): in
// a mount namespace of its own, the host's /etc/hosts bound over the
// machine's, only the network namespace entered. Not `ip netns exec`: it
// mounts a /sys of the namespace's own, without the cgroup file systems
// slurmd insists on finding at start.
// The node's own directory is bound over ntmp/self, the cluster's TmpFS
// (where the pmix plugin makes its per-step directories, whose names are
// the same on every node: a shared /tmp would make them collide).
// The node has its own host name too (a UTS namespace): what tells
// machines apart (Open MPI's shared-memory segments and session
// directories, ftmpi's host identity) tells the nodes apart.
const nodeShell = `d=$0 ns=$1 own=$2 self=$3 name=$4; shift 4; mount --bind "/etc/netns/$ns/hosts" /etc/hosts && mount --bind "$own" "$self" && hostname "$name" && exec nsenter --net="/run/netns/$ns" "$d" "$@"`

// start runs a daemon in the foreground on host i; its output goes to
// log/NAME.out.
func (c *Cluster) start(name string, host int, tool string, args ...string) error {
	path, err := lookPath(tool)
	if err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		return err
	}
	defer out.Close()
	var cmd *exec.Cmd
	if host == c.Login() {
		cmd = c.Hosts.Command(host, path, args...)
	} else {
		cmd = exec.Command("unshare", append([]string{"--mount", "--uts", "--propagation", "slave", "sh", "-c", nodeShell, path, c.Hosts.NS(host),
			filepath.Join(c.Dir, "ntmp", c.Node(host)), c.nodeTmp(), c.Node(host)}, args...)...)
	}
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("slurmtest: starting %s: %v", name, err)
	}
	d := &daemon{name: name, host: host, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(d.done) }()
	c.daemons = append(c.daemons, d)
	return nil
}

// StartNode starts node i's slurmd (again, after CrashNode).
func (c *Cluster) StartNode(i int) error {
	if i < 1 || i > c.Nodes {
		return fmt.Errorf("slurmtest: no node %d", i)
	}
	for _, d := range []string{filepath.Join(c.Dir, "spool", c.Node(i)), filepath.Join(c.Dir, "ntmp", c.Node(i)), c.nodeTmp()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(filepath.Join(c.Dir, "ntmp", c.Node(i)), 0o1777); err != nil {
		return err
	}
	return c.start("slurmd-"+c.Node(i), i, "slurmd", "-D", "-N", c.Node(i), "-f", c.Conf)
}

// CrashNode is what a crashed host looks like: every process on node i
// (slurmd, every slurmstepd, every task) is SIGKILLed, until none is left
// but the host's sshd (package nshosts').
func (c *Cluster) CrashNode(i int) error {
	if i < 1 || i > c.Nodes {
		return fmt.Errorf("slurmtest: no node %d", i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := c.Hosts.JobPids(i)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slurmtest: processes left on crashed node %s: %v", c.Node(i), pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Env is the environment of a Slurm client of this cluster.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Command runs a command on the login host with the cluster's SLURM_CONF.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := c.Hosts.CommandContext(ctx, c.Login(), name, args...)
	cmd.Env = c.Env()
	return cmd
}

// run runs a client command on the login host with a deadline.
func (c *Cluster) run(d time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out, err := c.Command(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return string(out), nil
}

// States is every node's state as sinfo tells it ("h1" -> "idle").
func (c *Cluster) States() (map[string]string, error) {
	out, err := c.run(10*time.Second, "sinfo", "-h", "-N", "-o", "%N %T")
	if err != nil {
		return nil, err
	}
	st := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			st[f[0]] = f[1]
		}
	}
	return st, nil
}

// WaitIdle waits until slurmctld answers, no job is left and every node
// is idle, at most d.
func (c *Cluster) WaitIdle(d time.Duration) error {
	deadline := time.Now().Add(d)
	var last string
	for {
		st, err := c.States()
		if err == nil {
			idle := len(st) == c.Nodes
			for _, s := range st {
				idle = idle && s == "idle"
			}
			if idle {
				q, err := c.run(10*time.Second, "squeue", "-h", "-o", "%i")
				if err == nil && strings.TrimSpace(q) == "" {
					return nil
				}
				last = fmt.Sprintf("jobs left: %q %v", strings.TrimSpace(q), err)
			} else {
				last = fmt.Sprint(st)
			}
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			logs := "slurmctld log: " + c.logTail("slurmctld.log")
			for i := 1; i <= c.Nodes; i++ {
				logs += "\nslurmd " + c.Node(i) + " log: " + c.logTail("slurmd-"+c.Node(i)+".log") + c.logTail("slurmd-"+c.Node(i)+".out")
			}
			return fmt.Errorf("slurmtest: nodes not idle after %v: %s\n%s", d, last, logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Reset brings the cluster back to its first state after a test: every
// job cancelled, every crashed node started again, every cut healed, every
// node idle (at most d).
func (c *Cluster) Reset(d time.Duration) error {
	_, _ = c.run(10*time.Second, "scancel", "--quiet", "--full", "--user=root")
	for i := 1; i <= c.Nodes; i++ {
		if err := c.Hosts.Heal(i); err != nil {
			return err
		}
		if !c.nodeRunning(i) {
			if err := c.StartNode(i); err != nil {
				return err
			}
		}
	}
	return c.WaitIdle(d)
}

// nodeRunning tells whether node i's latest slurmd is alive.
func (c *Cluster) nodeRunning(i int) bool {
	for k := len(c.daemons) - 1; k >= 0; k-- {
		d := c.daemons[k]
		if d.host == i {
			select {
			case <-d.done:
				return false
			default:
				return true
			}
		}
	}
	return false
}

// daemonPid tells whether pid is one of the cluster's daemons.
func (c *Cluster) daemonPid(pid int) bool {
	for _, d := range c.daemons {
		if d.cmd.Process != nil && d.cmd.Process.Pid == pid {
			return true
		}
	}
	return false
}

// ppid is pid's parent (0 if unknown).
func ppid(pid int) int {
	f, ok := procstat.Fields(pid)
	if !ok || len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// JobPids lists the processes of host i other than the cluster's daemons,
// the helpers slurmctld forks (slurmscriptd) and nshosts' sshd: what a
// finished job must not leave behind (on a node: slurmstepd and tasks).
func (c *Cluster) JobPids(i int) []int {
	var out []int
	for _, pid := range c.Hosts.JobPids(i) {
		switch {
		case c.daemonPid(pid):
		case i == c.Login() && c.daemonPid(ppid(pid)): // slurmscriptd, forked by slurmctld
		default: // on a node, slurmd's children (slurmstepd) belong to jobs
			out = append(out, pid)
		}
	}
	return out
}

// JobPidsNamed lists the job processes of host i whose command name
// (/proc/PID/comm) is comm.
func (c *Cluster) JobPidsNamed(i int, comm string) []int {
	var out []int
	for _, pid := range c.JobPids(i) {
		if commOf(pid) == comm {
			out = append(out, pid)
		}
	}
	return out
}

// TaskPids lists the tasks of job steps on host i: the job processes
// whose parent is a slurmstepd.
func (c *Cluster) TaskPids(i int) []int {
	var out []int
	for _, pid := range c.JobPids(i) {
		if commOf(pid) != "slurmstepd" && commOf(ppid(pid)) == "slurmstepd" {
			out = append(out, pid)
		}
	}
	return out
}

// commOf is pid's command name ("" if unknown).
func commOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	return strings.TrimSpace(string(b))
}

// WaitNoJob waits until no process but the daemons is left on any host,
// at most d; it returns the leftovers (host name -> pid and command line)
// if some remain.
func (c *Cluster) WaitNoJob(d time.Duration) map[string][]string {
	deadline := time.Now().Add(d)
	for {
		left := map[string][]string{}
		for i := 1; i <= c.Login(); i++ {
			for _, pid := range c.JobPids(i) {
				cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
				if len(cmd) == 0 {
					continue // exited meanwhile, or a zombie about to be reaped
				}
				left[c.Hosts.Name(i)] = append(left[c.Hosts.Name(i)], fmt.Sprintf("%d %s", pid, strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " ")))
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *Cluster) logTail(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", name))
	if len(b) > 1000 {
		b = b[len(b)-1000:]
	}
	return string(bytes.TrimSpace(b))
}

// Close kills every process of the cluster, removes its namespaces and
// its directory. It is safe to call more than once.
func (c *Cluster) Close() error {
	var errs []error
	if c.Hosts != nil {
		errs = append(errs, c.Hosts.Close()) // kills everything in every namespace
	}
	for _, d := range c.daemons {
		select {
		case <-d.done:
			continue
		case <-time.After(5 * time.Second):
		}
		// Not reaped, so its pid is still its own: kill it directly.
		_ = syscall.Kill(d.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			errs = append(errs, fmt.Errorf("slurmtest: %s not reaped", d.name))
		}
	}
	c.daemons = nil
	if c.Dir != "" {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

// Down tears down the cluster whose directory is dir, made by Up in
// another process (bench/slurm-start.sh).
func Down(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "slurm.conf")); err != nil {
		return fmt.Errorf("slurmtest: %s holds no cluster: %v", dir, err)
	}
	err := nshosts.Down(filepath.Join(dir, "hosts"))
	return errors.Join(err, os.RemoveAll(dir))
}
