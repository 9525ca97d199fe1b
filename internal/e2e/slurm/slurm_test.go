// Package slurm_test holds the scenarios that run ftmpi on a real Slurm
// cluster (package slurmtest: munged, slurmctld and three slurmd nodes in
// namespace hosts, one cluster shared by every test of the binary and
// reset after each): a plain srun as a smoke test of the cluster;
// ftmpirun inside salloc and sbatch, its agents started by srun, through a
// node's crash (reinit, a spawned replacement, a relaunch without the
// node), a node cut off, and its own death; and ranks started by srun
// itself (srun --mpi=pmi2: the PMI bootstrap, no ftmpirun, no head) through
// a rank's kill, a node's crash and a node cut off. Every kill and cut is
// tied to a line the job printed. They need root, the Slurm packages, sshd
// and nft (skipped otherwise) and, like the multi-host scenarios, run once:
// under -race they are skipped (race-built ranks on 2 cores would blow
// CI's budget; the srun launch path is raced by TestSlurmAllocationFakeSrun
// in package launch).
package slurm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/ownerdir"
	"github.com/ftmpi/ftmpi/internal/slurmtest"
	"github.com/ftmpi/ftmpi/libmpi/ctest"
	"go.uber.org/goleak"
)

const nodes = 3

// bin holds the binaries built once by TestMain.
var bin = map[string]string{}

func TestMain(m *testing.M) {
	// Named for its owner (ownerdir): one left by a run that never reached
	// the end of TestMain (go test's -timeout, a kill) is removed by the
	// next run. Not "ftmpi-slurm-": the checkpoint directories' prefix.
	dir, err := ownerdir.Make(os.TempDir(), "ftmpi-slurmbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Chmod(dir, 0o755)
	names := []string{"ftmpirun", "ring", "reinit-async", "refinement", "jacobi", "cof", "hangcheck"}
	pkgs := []string{"../../../cmd/ftmpirun", "../../../examples/ring", "../../../examples/reinit-async", "../../../examples/refinement",
		"../../../examples/jacobi", "../../../examples/cof", "../testdata/hangcheck"}
	var outs []string
	for _, n := range names {
		bin[n] = filepath.Join(dir, n)
		outs = append(outs, bin[n])
	}
	code := 0
	if jobtest.RaceEnabled {
		fmt.Fprintln(os.Stderr, "Slurm scenarios skipped under -race (see the package comment)")
	} else if err := slurmtest.Available(); err != nil {
		fmt.Fprintln(os.Stderr, "Slurm scenarios skipped:", err) // nothing to build for
	} else if err := jobtest.Build(outs, pkgs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if code == 0 {
		code = m.Run()
	}
	if err := slurmtest.CloseShared(); err != nil {
		fmt.Fprintln(os.Stderr, "slurm cluster teardown:", err)
		code = 1
	}
	ownerdir.Remove(dir)
	ctest.Cleanup() // the C programs and ftmpirun the C scenarios compiled
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func cluster(t *testing.T) *slurmtest.Cluster {
	t.Helper()
	if jobtest.RaceEnabled {
		t.Skip("skipped under -race: run once without it (see the package comment)")
	}
	return slurmtest.Shared(t, nodes)
}

// job is a command running on the login host, its output read line by line.
type job struct {
	*jobtest.Live
	t     *testing.T
	ctx   context.Context
	limit time.Duration
}

// Wait waits for the job's end and returns its exit code; a job that ran
// into its limit (killed: a hang) fails the test.
func (j *job) Wait() int {
	j.t.Helper()
	code := j.Live.Wait()
	if errors.Is(j.ctx.Err(), context.DeadlineExceeded) {
		j.t.Fatalf("the job still ran at its %v limit and was killed (a hang)\nstdout:\n%s\nstderr:\n%s", j.limit, j.Stdout(), j.Stderr())
	}
	return code
}

func start(t *testing.T, c *slurmtest.Cluster, limit time.Duration, env []string, name string, args ...string) *job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := c.Command(ctx, name, args...)
	cmd.Env = append(cmd.Env, "GOTRACEBACK=all")
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = os.TempDir()
	// A job still running shortly before its limit hangs: its tasks are
	// sent SIGQUIT first, so that their goroutines are on its stderr.
	dump := time.AfterFunc(limit-limit/8, func() { quitTasks(c) })
	t.Cleanup(func() { dump.Stop() })
	return &job{Live: jobtest.StartLive(t, cmd, cancel), t: t, ctx: ctx, limit: limit}
}

// quitTasks sends SIGQUIT to every task of a job step on every node (the
// children of slurmstepd): a Go task prints its goroutines and exits.
func quitTasks(c *slurmtest.Cluster) {
	for i := 1; i <= nodes; i++ {
		for _, pid := range c.TaskPids(i) {
			syscall.Kill(pid, syscall.SIGQUIT)
		}
	}
}

func noLeftovers(t *testing.T, c *slurmtest.Cluster) {
	t.Helper()
	if left := c.WaitNoJob(15 * time.Second); left != nil {
		t.Fatalf("processes left on the cluster: %v", left)
	}
}

func resultLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, "result:"); i >= 0 {
			lines = append(lines, l[i:])
		}
	}
	return lines
}

// TestSlurmSrunSmoke: a plain srun of a shell program, one task on each
// node, each in its node's namespace host (its own address), and a
// 6-task step spread over the nodes.
func TestSlurmSrunSmoke(t *testing.T) {
	c := cluster(t)
	j := start(t, c, 60*time.Second, nil, "srun", "-N3", "--ntasks-per-node=2", "-l", "sh", "-c",
		`echo "task $SLURM_PROCID of $SLURM_NTASKS on $SLURMD_NODENAME $(ip -4 -o addr show dev eth0 | awk '{print $4}')"`)
	if code := j.Wait(); code != 0 {
		t.Fatalf("srun exit %d\n%s\n%s", code, j.Stdout(), j.Stderr())
	}
	for i := 1; i <= nodes; i++ {
		want := fmt.Sprintf("of 6 on %s %s/24", c.Node(i), c.Hosts.Addr(i))
		if n := strings.Count(j.Stdout(), want); n != 2 {
			t.Fatalf("%d tasks print %q, want 2:\n%s", n, want, j.Stdout())
		}
	}
	noLeftovers(t, c)
}

// TestSlurmSallocRing: ftmpirun inside salloc over the 3 nodes takes its
// hosts and slots from the allocation and starts one agent per node with
// srun (it runs on the login host, which is in no allocation); the ring
// goes round over TCP between the nodes.
func TestSlurmSallocRing(t *testing.T) {
	c := cluster(t)
	j := start(t, c, 90*time.Second, nil, "salloc", "-N3", "--ntasks-per-node=2", "--no-kill",
		bin["ftmpirun"], "-v", "--tag-output", bin["ring"])
	code := j.Wait()
	if code != 0 || !strings.Contains(j.Stdout(), "[0] result: ranks=6 token=15 ok") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	for i := 1; i <= nodes; i++ {
		if want := "agent on " + c.Node(i) + ": pid"; !strings.Contains(j.Stderr(), want) {
			t.Fatalf("stderr lacks %q:\n%s", want, j.Stderr())
		}
	}
	// Fewer slots than ranks: a clear error before anything starts.
	j = start(t, c, 60*time.Second, nil, "salloc", "-N3", "--ntasks-per-node=1", bin["ftmpirun"], "-n", "4", bin["ring"])
	if code := j.Wait(); code == 0 || !strings.Contains(j.Stderr(), "(slots from SLURM_TASKS_PER_NODE): 4 ranks asked but only 3 slots on the hosts (h1:1,h2:1,h3:1)") {
		t.Fatalf("-n 4 in 3 slots: exit %d\n%s", code, j.Stderr())
	}
	noLeftovers(t, c)
}

// TestSlurmSallocReinitNodeCrash: examples/reinit-async under ftmpirun
// --on-failure reinit inside salloc --no-kill over 3 nodes (by node: h1
// {0,3}, h2 {1}, h3 {2}); node h3 crashes at step 1000 (slurmd, the
// agent's slurmstepd, the agent and rank 2 SIGKILLed). The head loses h3's
// agent, rank 2 is respawned on a surviving node with a free slot, and the
// run ends with the failure-free result line.
func TestSlurmSallocReinitNodeCrash(t *testing.T) {
	c := cluster(t)
	args := append([]string{bin["reinit-async"]}, reinitArgs()...)
	want := reinitReference(t, c)
	env := []string{"FTMPI_AGENT_HB_PERIOD=200ms", "FTMPI_AGENT_HB_TIMEOUT=3s"}
	salloc := []string{"-N3", "--ntasks-per-node=2", "--no-kill", bin["ftmpirun"], "-n", "4", "--map-by", "node", "--on-failure", "reinit"}
	j := start(t, c, 150*time.Second, env, "salloc", append(salloc, args...)...)
	j.WaitLine("step 1000 done")
	if err := c.CrashNode(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	got := resultLines(j.Stdout())
	if code != 0 || len(got) != 1 || got[0] != want {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stderr(), "host h3 lost") || !strings.Contains(j.Stderr(), "respawning it (incarnation 1 on host h") {
		t.Fatalf("no host loss or respawn:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
}

// TestSrunRing: srun --mpi=pmi2 -n 4 ./ring: the ranks find each other
// through Slurm's PMI-2 server, without ftmpirun; then 6 ranks over the 3
// nodes.
func TestSrunRing(t *testing.T) {
	c := cluster(t)
	j := start(t, c, 60*time.Second, nil, "srun", "--mpi=pmi2", "-n", "4", bin["ring"])
	if code := j.Wait(); code != 0 || !strings.Contains(j.Stdout(), "result: ranks=4 token=6 ok") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	j = start(t, c, 60*time.Second, nil, "srun", "--mpi=pmi2", "-N3", "--ntasks-per-node=2", bin["ring"])
	if code := j.Wait(); code != 0 || !strings.Contains(j.Stdout(), "result: ranks=6 token=15 ok") {
		t.Fatalf("6 ranks on 3 nodes: exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
}

func refinementArgs() []string { return []string{"-delay", "2ms", "-ckpt", "100", "-progress"} }

var refinementRef struct {
	once sync.Once
	line string
}

// refinementReference is the failure-free result line (ftmpirun, one host).
func refinementReference(t *testing.T, c *slurmtest.Cluster) string {
	t.Helper()
	refinementRef.once.Do(func() {
		j := start(t, c, 90*time.Second, nil, bin["ftmpirun"], append([]string{"-n", "6", bin["refinement"]}, refinementArgs()...)...)
		if code := j.Wait(); code == 0 && len(resultLines(j.Stdout())) == 1 {
			refinementRef.line = resultLines(j.Stdout())[0]
		}
	})
	if refinementRef.line == "" {
		t.Fatal("the failure-free refinement run failed")
	}
	return refinementRef.line
}

// taskPid finds the process of task procid (SLURM_PROCID) named comm on
// node i.
func taskPid(c *slurmtest.Cluster, i, procid int, comm string) int {
	want := "SLURM_PROCID=" + strconv.Itoa(procid)
	for _, pid := range c.JobPidsNamed(i, comm) {
		env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				return pid
			}
		}
	}
	return 0
}

// srunRefinement starts examples/refinement as 6 tasks of srun, two per
// node (ranks 4 and 5 on h3), with the options a fault-tolerant step
// needs: --no-kill (a node's failure does not end the job) and -K0 (a
// task's death does not end the step).
func srunRefinement(t *testing.T, c *slurmtest.Cluster, env ...string) *job {
	args := append([]string{"--mpi=pmi2", "--no-kill", "--kill-on-bad-exit=0", "-N3", "--ntasks-per-node=2", "-l", bin["refinement"]}, refinementArgs()...)
	return start(t, c, 120*time.Second, env, "srun", args...)
}

// TestSrunRefinementRankKilled: refinement under srun (no head: the ranks
// detect the failure themselves); rank 5 is SIGKILLed when the first
// checkpoint is committed; the survivors shrink, roll back and print the
// failure-free result.
func TestSrunRefinementRankKilled(t *testing.T) {
	c := cluster(t)
	want := refinementReference(t, c)
	tmp, check := jobtest.SockDir(t)
	j := srunRefinement(t, c, tmp)
	j.WaitLine("iteration 100 committed")
	pid := taskPid(c, 3, 5, "refinement")
	if pid == 0 {
		t.Fatalf("rank 5 not found on h3\nstdout:\n%s", j.Stdout())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j.Wait() // srun's code says a task was killed; the result is what counts
	if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != want {
		t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stdout(), "world rank(s) [5] failed") {
		t.Fatalf("no recovery from rank 5's failure:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
	check(j.Stdout(), j.Stderr())
}

// TestSrunRefinementNodeCrash: refinement under srun --no-kill; node h3
// crashes (slurmd, slurmstepd, ranks 4 and 5) when the first checkpoint is
// committed; the four survivors on h1 and h2 detect it, shrink and print
// the failure-free result. srun ends once slurmctld has declared the node
// down.
func TestSrunRefinementNodeCrash(t *testing.T) {
	c := cluster(t)
	want := refinementReference(t, c)
	j := srunRefinement(t, c)
	j.WaitLine("iteration 100 committed")
	if err := c.CrashNode(3); err != nil {
		t.Fatal(err)
	}
	j.Wait()
	if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != want {
		t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stdout(), "world rank(s) [4 5] failed") && !strings.Contains(j.Stdout(), "converged on 4 ranks") {
		t.Fatalf("no recovery from h3's ranks:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
}

// TestSlurmSbatchRing: ftmpirun in an sbatch script. The script runs on the
// allocation's first node (h1), so ftmpirun runs h1's ranks itself and
// starts the agents of h2 and h3 with srun; sbatch --wait ends with the
// job's exit code.
func TestSlurmSbatchRing(t *testing.T) {
	c := cluster(t)
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	script := filepath.Join(dir, "job.sh")
	out := filepath.Join(dir, "job.out")
	body := "#!/bin/sh\n#SBATCH -N 3\n#SBATCH --ntasks-per-node=2\n#SBATCH --no-kill\nexec " + bin["ftmpirun"] + " -v --tag-output " + bin["ring"] + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	j := start(t, c, 90*time.Second, nil, "sbatch", "--wait", "--output="+out, script)
	code := j.Wait()
	b, _ := os.ReadFile(out)
	if code != 0 || !strings.Contains(string(b), "[0] result: ranks=6 token=15 ok") {
		t.Fatalf("sbatch exit %d\n%s%s\njob output:\n%s", code, j.Stdout(), j.Stderr(), b)
	}
	for _, want := range []string{"agent on h2: pid", "agent on h3: pid"} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("job output lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "agent on h1") {
		t.Fatalf("an agent was started for the batch host h1:\n%s", b)
	}
	noLeftovers(t, c)
}

// TestSlurmSallocNodeCutOff: refinement under ftmpirun --on-failure
// continue inside salloc over 3 nodes (h3 holds ranks 4 and 5); h3 is cut
// off (every packet in and out dropped) at the first committed checkpoint.
// The head hears no heartbeat from h3's agent and declares its ranks
// failed; the survivors finish with the failure-free result; h3's agent,
// hearing no head, kills its ranks (fail-stop): once the link heals,
// nothing of the job is left on any node.
func TestSlurmSallocNodeCutOff(t *testing.T) {
	c := cluster(t)
	want := refinementReference(t, c)
	env := []string{"FTMPI_AGENT_HB_PERIOD=200ms", "FTMPI_AGENT_HB_TIMEOUT=3s"}
	args := append([]string{"-N3", "--ntasks-per-node=2", "--no-kill", bin["ftmpirun"], "--on-failure", "continue", bin["refinement"]}, refinementArgs()...)
	j := start(t, c, 120*time.Second, env, "salloc", args...)
	j.WaitLine("iteration 100 committed")
	if err := c.Hosts.Isolate(3); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(c.JobPidsNamed(3, "refinement")) > 0 { // the agent on h3 kills its ranks
		if time.Now().After(deadline) {
			t.Fatalf("the ranks on the cut-off node still run: %v", c.JobPidsNamed(3, "refinement"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	code := j.Wait()
	if got := resultLines(j.Stdout()); code != 0 || len(got) != 1 || got[0] != want {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stderr(), "host h3 lost") {
		t.Fatalf("h3 not lost:\nstderr:\n%s", j.Stderr())
	}
	if err := c.Hosts.Heal(3); err != nil {
		t.Fatal(err)
	}
	if left := c.WaitNoJob(60 * time.Second); left != nil {
		t.Fatalf("processes left on the cluster after the heal: %v", left)
	}
}

// baseline runs a failure-free job with ftmpirun on the login host alone
// and returns its result line.
func baseline(t *testing.T, c *slurmtest.Cluster, args ...string) string {
	t.Helper()
	j := start(t, c, 90*time.Second, nil, bin["ftmpirun"], args...)
	if code := j.Wait(); code != 0 || len(resultLines(j.Stdout())) != 1 {
		t.Fatalf("failure-free run: exit %d\n%s\n%s", code, j.Stdout(), j.Stderr())
	}
	return resultLines(j.Stdout())[0]
}

// TestSlurmSallocJacobiSpawnNodeCrash: examples/jacobi -ft under ftmpirun
// in salloc over 3 nodes (by node: h1 {0,3}, h2 {1}, h3 {2}); h3 crashes
// at a checkpoint; the survivors spawn the replacement of rank 2, which
// the launcher places on the node with a free slot (h2, through its srun
// agent), and the result is the failure-free one.
func TestSlurmSallocJacobiSpawnNodeCrash(t *testing.T) {
	c := cluster(t)
	args := []string{bin["jacobi"], "-ft", "-n", "64", "-check", "100", "-ckpt", "500", "-progress"}
	want := baseline(t, c, append([]string{"-n", "4"}, args...)...)
	env := []string{"FTMPI_AGENT_HB_PERIOD=200ms", "FTMPI_AGENT_HB_TIMEOUT=3s"}
	salloc := []string{"-N3", "--ntasks-per-node=2", "--no-kill", bin["ftmpirun"], "-n", "4", "--map-by", "node", "--on-failure", "continue", "-v"}
	j := start(t, c, 150*time.Second, env, "salloc", append(salloc, args...)...)
	j.WaitLine("iteration 2000 committed")
	if err := c.CrashNode(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := resultLines(j.Stdout()); code != 0 || len(got) != 1 || got[0] != want {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stderr(), "host h3 lost") || !strings.Contains(j.Stdout(), "jacobi: recovered") || !strings.Contains(j.Stderr(), "] on h2") {
		t.Fatalf("no host loss or recovery:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
}

// TestSlurmSallocRestartWithoutLostNode: Checkpoint-on-Failure
// (examples/cof, --restart-on-failure 1) under ftmpirun in salloc over 3
// nodes (by node: h1 {0,3}, h2 {1}, h3 {2}); h3 crashes; the survivors
// checkpoint and exit; ftmpirun relaunches the job on h1 and h2 only (new
// srun agents) and the result is the failure-free one.
func TestSlurmSallocRestartWithoutLostNode(t *testing.T) {
	c := cluster(t)
	want := baseline(t, c, "-n", "4", bin["cof"], "-dir", t.TempDir(), "-progress")
	dir := t.TempDir()
	_ = os.Chmod(dir, 0o777)
	env := []string{"FTMPI_AGENT_HB_PERIOD=200ms", "FTMPI_AGENT_HB_TIMEOUT=3s"}
	j := start(t, c, 150*time.Second, env, "salloc", "-N3", "--ntasks-per-node=2", "--no-kill",
		bin["ftmpirun"], "-n", "4", "--map-by", "node", "--restart-on-failure", "1", bin["cof"], "-dir", dir, "-progress")
	j.WaitLine("launch 0: iteration 600 done")
	if err := c.CrashNode(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := resultLines(j.Stdout()); code != 0 || len(got) != 1 || got[0] != want {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	for _, s := range []string{"host h3 lost", "relaunching without the lost host(s) h3", "relaunched the job (relaunch 1 of 1)"} {
		if !strings.Contains(j.Stderr(), s) {
			t.Fatalf("stderr lacks %q:\n%s", s, j.Stderr())
		}
	}
	noLeftovers(t, c)
}

// TestSlurmSallocHeadKilled: ftmpirun is SIGKILLed inside salloc while the
// ranks run on the 3 nodes: its srun agents lose it and kill their ranks,
// salloc ends, and nothing of the job is left on any node.
func TestSlurmSallocHeadKilled(t *testing.T) {
	c := cluster(t)
	env := []string{"FTMPI_AGENT_HB_PERIOD=200ms", "FTMPI_AGENT_HB_TIMEOUT=3s"}
	args := append([]string{"-N3", "--ntasks-per-node=2", "--no-kill", bin["ftmpirun"], "--on-failure", "continue", bin["refinement"]}, refinementArgs()...)
	j := start(t, c, 120*time.Second, env, "salloc", args...)
	j.WaitLine("iteration 100 committed")
	heads := c.JobPidsNamed(c.Login(), "ftmpirun")
	if len(heads) != 1 {
		t.Fatalf("ftmpirun processes on the login host: %v", heads)
	}
	if err := syscall.Kill(heads[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j.Wait()
	if strings.Contains(j.Stdout(), "result:") {
		t.Fatalf("the job finished although its head was killed:\n%s", j.Stdout())
	}
	noLeftovers(t, c)
}

// TestSrunRefinementNodeCutOff: refinement under srun --mpi=pmi2 (no head);
// node h3 (ranks 4 and 5) is cut off at the first committed checkpoint. The
// four others declare h3's ranks failed (heartbeat), shrink and print the
// failure-free result; the ranks on h3, cut off from every other process,
// end themselves (fail-stop without a head): nothing is left once the link
// heals.
func TestSrunRefinementNodeCutOff(t *testing.T) {
	c := cluster(t)
	want := refinementReference(t, c)
	tmp, check := jobtest.SockDir(t)
	j := srunRefinement(t, c, tmp)
	j.WaitLine("iteration 100 committed")
	t0 := time.Now()
	if err := c.Hosts.Isolate(3); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(c.JobPidsNamed(3, "refinement")) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the ranks on the cut-off node still run: %v", c.JobPidsNamed(3, "refinement"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("h3's ranks gone after %v", time.Since(t0))
	j.WaitLine("result:")
	t.Logf("result after %v", time.Since(t0))
	if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != want {
		t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, j.Stdout(), j.Stderr())
	}
	if err := c.Hosts.Heal(3); err != nil {
		t.Fatal(err)
	}
	j.Wait()
	t.Logf("srun done after %v\nstderr:\n%s", time.Since(t0), j.Stderr())
	if left := c.WaitNoJob(60 * time.Second); left != nil {
		t.Fatalf("processes left on the cluster after the heal: %v", left)
	}
	check(j.Stdout(), j.Stderr()) // h3's ranks ended themselves (cut off from the rest)
}

// TestSrunJacobiReplacedFromSpare: examples/jacobi -ft -replace as 5 tasks
// of srun --mpi=pmi2 --no-kill -K0 over the 3 nodes with FTMPI_SPARES=1 exported to the step: task 4 is a spare
// waiting in Init, the world has 4 ranks. Rank 2 is SIGKILLed when the
// checkpoint of iteration 1000 is committed; Comm.Replace (no launcher: it
// cannot spawn) takes the spare, which says so ("4: jacobi: spare process
// taken as rank 2": srun -l prefixes its task id), and the run ends with
// the failure-free result.
//
// 32 points (3000 iterations): each iteration is a chain of small
// messages around the ring, and with the suite's other jobs on the same
// two cores a hop waits for a CPU (up to ~8 ms an iteration was measured):
// 64 points (10300 iterations) ran into the limit that way, a slow job
// and not a hang (the goroutine dump showed every rank in its halo
// exchange, the checkpoints still coming).
func TestSrunJacobiReplacedFromSpare(t *testing.T) {
	c := cluster(t)
	args := []string{bin["jacobi"], "-ft", "-replace", "-n", "32", "-check", "100", "-ckpt", "500", "-progress"}
	want := baseline(t, c, append([]string{"-n", "4"}, args...)...)
	srun := []string{"--mpi=pmi2", "--no-kill", "--kill-on-bad-exit=0", "-N3", "-n", "5", "-l"}
	j := start(t, c, 120*time.Second, []string{"FTMPI_SPARES=1"}, "srun", append(srun, args...)...)
	// Rank 2's pid is found while the job runs up to the line, so the kill
	// follows the line at once: looked for after it, across the nodes, a
	// loaded machine let the job end first ("rank 2 not found").
	pid := findTask(t, c, j, 2, "jacobi")
	j.WaitLine("iteration 1000 committed")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// srun's code says a task was killed; the result is what counts, and
	// that the step ended by itself (-1: killed at the deadline, a hang).
	if code := j.Wait(); code == -1 {
		t.Fatalf("the job hung until its deadline\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != want {
		t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stdout(), "jacobi: recovered: ranks [2] replaced") || !strings.Contains(j.Stdout(), "4: jacobi: spare process taken as rank 2") {
		t.Fatalf("rank 2 not replaced by the spare (task 4):\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	noLeftovers(t, c)
}

func reinitArgs() []string {
	return []string{"-steps", "2500", "-every", "100", "-pace", "500us", "-progress"}
}

var reinitRef struct {
	once sync.Once
	line string
}

// reinitReference is examples/reinit-async's failure-free result line
// (ftmpirun, 4 ranks on one host).
func reinitReference(t *testing.T, c *slurmtest.Cluster) string {
	t.Helper()
	reinitRef.once.Do(func() {
		j := start(t, c, 90*time.Second, nil, bin["ftmpirun"], append([]string{"-n", "4", bin["reinit-async"]}, reinitArgs()...)...)
		if code := j.Wait(); code == 0 && len(resultLines(j.Stdout())) == 1 {
			reinitRef.line = resultLines(j.Stdout())[0]
		}
	})
	if reinitRef.line == "" {
		t.Fatal("the failure-free reinit-async run failed")
	}
	return reinitRef.line
}

// findTask waits (at most 60 s) until task procid of the job runs on one
// of the nodes and returns its pid.
func findTask(t *testing.T, c *slurmtest.Cluster, j *job, procid int, comm string) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if pid := anyTaskPid(c, procid, comm); pid != 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %d not found on any node within 60 s\nstdout:\n%s", procid, j.Stdout())
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// anyTaskPid is the pid of task procid on whichever node runs it, 0 if
// none does.
func anyTaskPid(c *slurmtest.Cluster, procid int, comm string) int {
	for i := 1; i <= nodes; i++ {
		if pid := taskPid(c, i, procid, comm); pid != 0 {
			return pid
		}
	}
	return 0
}

// killTask SIGKILLs task procid of the job (whichever node runs it).
func killTask(t *testing.T, c *slurmtest.Cluster, j *job, procid int, comm string) {
	t.Helper()
	pid := anyTaskPid(c, procid, comm)
	if pid == 0 {
		t.Fatalf("task %d not found on any node\nstdout:\n%s", procid, j.Stdout())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// srunReinitSpares starts examples/reinit-async as 6 tasks of srun over
// the 3 nodes (of 16 CPUs each: srun puts tasks 0-3 on h1, the spares 4
// and 5 on h2 and h3) with FTMPI_REINIT=1
// and FTMPI_SPARES=2: 4 ranks and 2 spares, no head (MPI_Reinit without
// a launcher: the survivors adopt a spare per failed rank).
func srunReinitSpares(t *testing.T, c *slurmtest.Cluster) *job {
	t.Helper()
	dir, err := os.MkdirTemp("", "ftmpi-slurm-ckpt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	_ = os.Chmod(dir, 0o777)
	srun := []string{"--mpi=pmi2", "--no-kill", "--kill-on-bad-exit=0", "-N3", "-n", "6", "-l", bin["reinit-async"], "-ckpt", dir}
	return start(t, c, 120*time.Second, []string{"FTMPI_SPARES=2", "FTMPI_REINIT=1"}, "srun", append(srun, reinitArgs()...)...)
}

// TestSrunReinitAsyncSpares: examples/reinit-async under srun with two
// spares and no head. Rank 1 (task 1) is SIGKILLed when step 800 is
// reported, rank 3 (task 3) when the run resumed in epoch 1: the
// survivors agree on the failure, adopt spare 4, then spare 5, roll back
// twice and print the failure-free result. Then a second run with a third
// kill, of the spare that became rank 1 (task 4, on h2) in epoch 2: no spare
// is left, and the survivors end with the error that says so (the first
// one's MPI_Abort ends the step), not a hang. In between, two kills at
// once.
func TestSrunReinitAsyncSpares(t *testing.T) {
	c := cluster(t)
	want := reinitReference(t, c)
	t.Run("two-kills", func(t *testing.T) {
		j := srunReinitSpares(t, c)
		j.WaitLine("heat: step 800 done")
		killTask(t, c, j, 1, "reinit-async")
		j.WaitLine("reinit-async: reinited in epoch 1:")
		killTask(t, c, j, 3, "reinit-async")
		if code := j.Wait(); code == -1 { // srun's code says tasks were killed; the result is what counts
			t.Fatalf("the job hung until its deadline\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
		}
		if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != want {
			t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, j.Stdout(), j.Stderr())
		}
		if !strings.Contains(j.Stdout(), "reinited in epoch 2:") || !strings.Contains(j.Stdout(), "done after 2 rollbacks") {
			t.Fatalf("not two rollbacks:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
		}
		noLeftovers(t, c)
	})
	// Two kills back to back: one round for both, or a second round when
	// the second dies during the first (after sending its endpoint to some
	// members only: the others open the epoch without it and announce it).
	t.Run("concurrent-kills", func(t *testing.T) {
		j := srunReinitSpares(t, c)
		j.WaitLine("heat: step 800 done")
		killTask(t, c, j, 1, "reinit-async")
		killTask(t, c, j, 3, "reinit-async")
		if code := j.Wait(); code == -1 {
			t.Fatalf("the job hung until its deadline\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
		}
		if got := resultLines(j.Stdout()); len(got) != 1 || got[0] != want {
			t.Fatalf("result %q, want %q\nstdout:\n%s\nstderr:\n%s", got, want, j.Stdout(), j.Stderr())
		}
		noLeftovers(t, c)
	})
	t.Run("no-spare-left", func(t *testing.T) {
		j := srunReinitSpares(t, c)
		j.WaitLine("heat: step 800 done")
		killTask(t, c, j, 1, "reinit-async")
		j.WaitLine("reinit-async: reinited in epoch 1:")
		killTask(t, c, j, 3, "reinit-async")
		j.WaitLine("reinit-async: reinited in epoch 2:")
		killTask(t, c, j, 4, "reinit-async") // rank 1's second incarnation
		code := j.Wait()                     // -1: killed at the deadline
		const why = "no launcher to start processes: rank(s) [1] failed, 0 spare process(es) waiting ([]): not enough waiting spare processes, the job cannot continue"
		if code == 0 || code == -1 || !strings.Contains(j.Stderr(), why) || len(resultLines(j.Stdout())) != 0 {
			t.Fatalf("exit %d, want non-zero with %q\nstdout:\n%s\nstderr:\n%s", code, why, j.Stdout(), j.Stderr())
		}
		noLeftovers(t, c)
	})
}
