package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/nshosts"
)

// Multi-host scenarios: 3 namespace hosts with sshd (package nshosts),
// ftmpirun started on h1, agents on h2 and h3 over ssh. Each test brings
// its hosts up and down; every kill is tied to a line the job printed.
// They need root, sshd and nft (skipped otherwise) and run once: under
// -race they are skipped (the race-built ranks over ssh on 2 cores make
// the suite too slow for CI's budget; the launcher's shell is raced by the
// fake-ssh test in package launch).

// mhAgentTimeout is the agent heartbeat timeout of the scenarios: short
// enough to keep them quick, long enough that a loaded CI machine does not
// lose a healthy host.
const mhAgentTimeout = 3 * time.Second

// mhJob is ftmpirun running on host 1.
type mhJob struct{ *jobtest.Live }

func multiHostHosts(t *testing.T) *nshosts.Hosts {
	t.Helper()
	if jobtest.RaceEnabled {
		t.Skip("skipped under -race: run once without it (CI runs both; see the file comment)")
	}
	// Each test has its own hosts, and mostly waits (heartbeat timeouts,
	// ssh): two at a time (go test's -parallel is GOMAXPROCS).
	t.Parallel()
	return nshosts.ForTest(t, 3)
}

// startMH starts ftmpirun with args on host 1 of h, with the hosts'
// ssh and a short agent heartbeat.
func startMH(t *testing.T, h *nshosts.Hosts, limit time.Duration, args ...string) *mhJob {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := h.CommandContext(ctx, 1, bin["ftmpirun"], args...)
	cmd.Env = append(os.Environ(), "FTMPI_SSH="+h.SSH(), "FTMPI_AGENT_HB_PERIOD=200ms", "FTMPI_AGENT_HB_TIMEOUT="+mhAgentTimeout.String())
	cmd.Dir = os.TempDir()
	return &mhJob{jobtest.StartLive(t, cmd, cancel)}
}

func checkNoLeftovers(t *testing.T, h *nshosts.Hosts) {
	t.Helper()
	if left := h.WaitNoJob(10 * time.Second); left != nil {
		t.Fatalf("processes left on the hosts: %v", left)
	}
}

func mhResult(t *testing.T, j *mhJob) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(j.Stdout(), "\n") {
		if strings.HasPrefix(l, "result:") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one result line, got %d\nstdout:\n%s\nstderr:\n%s", len(lines), j.Stdout(), j.Stderr())
	}
	return lines[0]
}

// refinementReference is the failure-free result line (one host).
var refinementRef struct {
	once sync.Once
	line string
}

func refinementArgs() []string { return []string{"-delay", "2ms", "-ckpt", "100", "-progress"} }

func refinementReference(t *testing.T) string {
	refinementRef.once.Do(func() {
		r := ftmpirun(t, append([]string{"-n", "6", bin["refinement"]}, refinementArgs()...)...)
		if r.Code == 0 {
			refinementRef.line = resultLine(t, r)
		}
	})
	if refinementRef.line == "" {
		t.Fatal("the failure-free refinement run failed")
	}
	return refinementRef.line
}

// TestMultiHostRing: the ring over 3 hosts, two ranks each (Unix sockets
// within a host, TCP between hosts), on the hosts' own network.
func TestMultiHostRing(t *testing.T) {
	h := multiHostHosts(t)
	j := startMH(t, h, 90*time.Second, "--host", "h1:2,h2:2,h3:2", "--interface", h.Subnet4(), "--tag-output", bin["ring"])
	if code := j.Wait(); code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stdout(), "[0] result: ranks=6 token=15 ok") {
		t.Fatalf("ring output:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
	// The same over the hosts' IPv6 network, mapped by node, the hosts in
	// a hostfile (both forms).
	hostfile := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(hostfile, []byte("h1 slots=2   # Open MPI form\nh2:2\nh3 slots=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	j = startMH(t, h, 90*time.Second, "--hostfile", hostfile, "--map-by", "node", "--interface", h.Subnet6(), "-v", "--tag-output", bin["ring"])
	if code := j.Wait(); code != 0 {
		t.Fatalf("IPv6: exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stdout(), "[0] result: ranks=6 token=15 ok") || !strings.Contains(j.Stderr(), "address "+h.Addr6(2)) {
		t.Fatalf("IPv6 ring output:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
	// And with the program sent to h2 and h3 over the agents' ssh sessions.
	j = startMH(t, h, 90*time.Second, "--host", "h1:2,h2:2,h3:2", "--preload-binary", "--tag-output", bin["ring"])
	if code := j.Wait(); code != 0 || !strings.Contains(j.Stdout(), "[0] result: ranks=6 token=15 ok") {
		t.Fatalf("--preload-binary: exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostRefinementRemoteRankKilled: a rank on h3 is SIGKILLed
// (through its agent) when the job committed its first checkpoint; the
// survivors on every host recover and print the failure-free result.
func TestMultiHostRefinementRemoteRankKilled(t *testing.T) {
	h := multiHostHosts(t)
	want := refinementReference(t)
	args := append([]string{"--host", "h1:2,h2:2,h3:2", "--on-failure", "continue",
		"--inject", "kill:rank=5,on=iteration 100 committed", bin["refinement"]}, refinementArgs()...)
	j := startMH(t, h, 120*time.Second, args...)
	code := j.Wait()
	if got := mhResult(t, j); got != want {
		t.Fatalf("result %q, want %q\nstderr:\n%s", got, want, j.Stderr())
	}
	if code != 0 || !strings.Contains(j.Stderr(), "injected kill of rank 5") {
		t.Fatalf("exit %d\nstderr:\n%s", code, j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// killHostCase runs refinement over 3 hosts and, once the first
// checkpoint is committed, takes h3 down by kill (every process in its
// namespace, agent and sshd included) after cutting its link first if
// silent. The ranks of h3 (4 and 5) are failed; the survivors finish
// with the failure-free result.
func killHostCase(t *testing.T, silent bool) {
	h := multiHostHosts(t)
	want := refinementReference(t)
	args := append([]string{"--host", "h1:2,h2:2,h3:2", "--on-failure", "continue", bin["refinement"]}, refinementArgs()...)
	j := startMH(t, h, 120*time.Second, args...)
	j.WaitLine("iteration 100 committed")
	cut := time.Now()
	if silent {
		if err := h.Isolate(3); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Kill(3); err != nil {
		t.Fatal(err)
	}
	j.WaitLine("host h3 lost")
	t.Logf("host h3 declared lost %v after it was cut or killed (agent heartbeat timeout %v)", time.Since(cut).Round(time.Millisecond), mhAgentTimeout)
	code := j.Wait()
	if got := mhResult(t, j); got != want {
		t.Fatalf("result %q, want %q\nstderr:\n%s", got, want, j.Stderr())
	}
	if code != 0 || !strings.Contains(j.Stderr(), "host h3 lost") {
		t.Fatalf("exit %d\nstderr:\n%s", code, j.Stderr())
	}
	if silent && !strings.Contains(j.Stderr(), "no heartbeat from its agent") {
		t.Fatalf("a silent host must be found by the heartbeat:\n%s", j.Stderr())
	}
	if silent {
		if err := h.Heal(3); err != nil {
			t.Fatal(err)
		}
	}
	checkNoLeftovers(t, h)
}

func TestMultiHostHostKilled(t *testing.T) { killHostCase(t, false) }

func TestMultiHostSilentHostDeath(t *testing.T) { killHostCase(t, true) }

// TestMultiHostPartitionHealed: h3 is cut off both ways (alive); the
// head declares its agent lost, the survivors recover and finish; on h3
// the agent loses the head and kills its ranks. The link is healed after
// the survivors recovered: nothing of h3 rejoins, nothing is left on any
// host.
func TestMultiHostPartitionHealed(t *testing.T) {
	h := multiHostHosts(t)
	want := refinementReference(t)
	args := append([]string{"--host", "h1:2,h2:2,h3:2", "--on-failure", "continue", bin["refinement"]}, refinementArgs()...)
	j := startMH(t, h, 120*time.Second, args...)
	j.WaitLine("iteration 100 committed")
	if err := h.Isolate(3); err != nil {
		t.Fatal(err)
	}
	j.WaitLine("refinement: recovery 1")
	// On h3 the agent must kill its ranks by itself (it cannot hear the head).
	deadline := time.Now().Add(30 * time.Second)
	for len(h.JobPids(3)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Heal(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := mhResult(t, j); got != want {
		t.Fatalf("result %q, want %q\nstderr:\n%s", got, want, j.Stderr())
	}
	if code != 0 || !strings.Contains(j.Stderr(), "host h3 lost") || strings.Contains(j.Stdout(), "converged on 6") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostJacobiReplacementOnAnotherHost: examples/jacobi -ft over 3
// hosts (ranks mapped by node: h1 {0,3}, h2 {1}, h3 {2}); h3 is killed
// at a checkpoint; the survivors spawn the replacement of rank 2, which
// the launcher places on a host with a free slot (h2), and the result is
// the failure-free one.
func TestMultiHostJacobiReplacementOnAnotherHost(t *testing.T) {
	h := multiHostHosts(t)
	b := collExamples(t)
	args := []string{b["jacobi"], "-ft", "-n", "64", "-check", "100", "-ckpt", "500", "-progress"}
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s"}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\n%s\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	j := startMH(t, h, 120*time.Second, append([]string{"-n", "4", "--host", "h1:2,h2:2,h3:2", "--map-by", "node",
		"--on-failure", "continue", "-v"}, args...)...)
	j.WaitLine("iteration 2000 committed")
	if err := h.Kill(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := mhResult(t, j); got != want || code != 0 {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stderr(), "host h3 lost") || !strings.Contains(j.Stdout(), "jacobi: recovered") ||
		!strings.Contains(j.Stderr(), "] on h2") {
		t.Fatalf("no host loss or recovery:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostReinitRespawnOnSurvivingHost: examples/reinit-async over 3
// hosts (by node: h1 {0,3}, h2 {1}, h3 {2}); h3 is killed at step 1000;
// rank 2 is respawned on a surviving host with a free slot (its own is
// gone), restores from its buddy's copy (its files were on h3's job
// directory), and the run ends with the failure-free result.
func TestMultiHostReinitRespawnOnSurvivingHost(t *testing.T) {
	h := multiHostHosts(t)
	b := reinitBins(t)
	args := []string{b["reinit-async"], "-steps", "2500", "-every", "100", "-pace", "500us", "-progress"}
	base := reinitRun(t, append([]string{"-n", "4", "--timeout", "60s"}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\n%s\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	j := startMH(t, h, 120*time.Second, append([]string{"-n", "4", "--host", "h1:2,h2:2,h3:2", "--map-by", "node",
		"--on-failure", "reinit"}, args...)...)
	j.WaitLine("step 1000 done")
	if err := h.Kill(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := mhResult(t, j); got != want || code != 0 {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stderr(), "host h3 lost") || !strings.Contains(j.Stderr(), "respawning it (incarnation 1 on host h2)") {
		t.Fatalf("no host loss or respawn:\nstdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostHeadHostLost: the head's host dies (ftmpirun with it); the
// agents on the other hosts lose the head and kill their ranks: nothing
// is left anywhere (the job is over, as for mpirun).
func TestMultiHostHeadHostLost(t *testing.T) {
	h := multiHostHosts(t)
	args := append([]string{"--host", "h1:2,h2:2,h3:2", "--on-failure", "continue", bin["refinement"]}, refinementArgs()...)
	j := startMH(t, h, 120*time.Second, args...)
	j.WaitLine("iteration 100 committed")
	if err := h.Kill(1); err != nil {
		t.Fatal(err)
	}
	if code := j.Wait(); code == 0 {
		t.Fatalf("ftmpirun survived its host's death\n%s", j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostMasterWorkerHostKilled: examples/masterworker over 3
// hosts; h3 (workers 4 and 5) is killed once the master counted 10 tasks;
// the master requeues their tasks and prints the failure-free result.
func TestMultiHostMasterWorkerHostKilled(t *testing.T) {
	h := multiHostHosts(t)
	args := []string{bin["masterworker"], "-tasks", "60", "-delay", "50ms", "-progress"}
	base := ftmpirun(t, append([]string{"-n", "6"}, args...)...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\n%s\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	j := startMH(t, h, 120*time.Second, append([]string{"--host", "h1:2,h2:2,h3:2", "--on-failure", "continue"}, args...)...)
	j.WaitLine("tasks done: 10 of")
	if err := h.Kill(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := mhResult(t, j); got != want || code != 0 {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stdout(), "failed workers [4 5]") {
		t.Fatalf("the master did not drop workers 4 and 5:\n%s", j.Stdout())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostHeadIsolated: a partition isolates the head's host h1
// (both ways). The head's side goes on: h2 and h3 are lost, their ranks
// failed, and refinement finishes on h1's two ranks with the failure-free
// result; on h2 and h3 the agents lose the head and kill their ranks.
// After the heal nothing is left anywhere.
func TestMultiHostHeadIsolated(t *testing.T) {
	h := multiHostHosts(t)
	want := refinementReference(t)
	args := append([]string{"--host", "h1:2,h2:2,h3:2", "--on-failure", "continue", bin["refinement"]}, refinementArgs()...)
	j := startMH(t, h, 120*time.Second, args...)
	j.WaitLine("iteration 100 committed")
	if err := h.Isolate(1); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if err := h.Heal(1); err != nil {
		t.Fatal(err)
	}
	if got := mhResult(t, j); got != want || code != 0 {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	if !strings.Contains(j.Stderr(), "host h2 lost") || !strings.Contains(j.Stderr(), "host h3 lost") || !strings.Contains(j.Stdout(), "converged on 2 ranks") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", j.Stdout(), j.Stderr())
	}
	checkNoLeftovers(t, h)
}

// TestMultiHostRestartWithoutLostHost: Checkpoint-on-Failure across hosts
// (examples/cof, checkpoints on the shared filesystem): h3, holding the
// checksum rank, is killed; the survivors checkpoint and exit; ftmpirun
// relaunches the job on h1 and h2 only (oversubscribed) and the result is
// the failure-free one.
func TestMultiHostRestartWithoutLostHost(t *testing.T) {
	h := multiHostHosts(t)
	cof := buildOnce(t, "cof")
	base := ftmpirunQuickExit(t, "-n", "4", "--timeout", "60s", cof, "-dir", t.TempDir(), "-progress")
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\n%s\n%s", base.Code, base.Stdout, base.Stderr)
	}
	want := resultLine(t, base)
	dir := t.TempDir()
	j := startMH(t, h, 120*time.Second, "-n", "4", "--host", "h1:2,h2:1,h3:1", "--restart-on-failure", "1", cof, "-dir", dir, "-progress")
	j.WaitLine("launch 0: iteration 600 done")
	if err := h.Kill(3); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	if got := mhResult(t, j); got != want || code != 0 {
		t.Fatalf("exit %d, result %q, want %q\nstdout:\n%s\nstderr:\n%s", code, got, want, j.Stdout(), j.Stderr())
	}
	for _, s := range []string{"host h3 lost", "relaunching without the lost host(s) h3", "relaunched the job (relaunch 1 of 1)"} {
		if !strings.Contains(j.Stderr(), s) {
			t.Fatalf("stderr lacks %q:\n%s", s, j.Stderr())
		}
	}
	checkNoLeftovers(t, h)
}
