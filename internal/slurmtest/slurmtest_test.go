package slurmtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClusterSrunCrashRestart: the cluster runs a step on every node (each
// task in its node's namespace), survives the crash of a node, takes it
// back, and Close leaves nothing.
func TestClusterSrunCrashRestart(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	start := time.Now()
	c, err := Up(3, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster up in %v", time.Since(start).Round(time.Millisecond))
	dir, ns := c.Dir, c.Hosts.NS(1)
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.Command(ctx, "srun", "-N3", "--ntasks-per-node=1", "-l", "sh", "-c", `echo "$SLURMD_NODENAME $(ip -4 -o addr show dev eth0 | awk '{print $4}')"`).CombinedOutput()
	if err != nil {
		t.Fatalf("srun: %v\n%s", err, out)
	}
	for i := 1; i <= 3; i++ {
		if want := c.Node(i) + " " + c.Hosts.Addr(i) + "/24"; !strings.Contains(string(out), want) {
			t.Fatalf("srun output lacks %q:\n%s", want, out)
		}
	}
	// A step left running on node 2 dies with it.
	step := c.Command(ctx, "srun", "-N1", "-w", c.Node(2), "sleep", "300")
	if err := step.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !hasProc(c, 2, "sleep") {
		if time.Now().After(deadline) {
			t.Fatal("the sleep step did not start on h2")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.CrashNode(2); err != nil {
		t.Fatal(err)
	}
	if len(c.Hosts.JobPids(2)) != 0 {
		t.Fatal("processes left on the crashed node")
	}
	_ = step.Process.Kill() // srun may wait for slurmctld to notice
	_ = step.Wait()
	if err := c.Reset(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	out, err = c.Command(ctx, "srun", "-N1", "-w", c.Node(2), "printenv", "SLURMD_NODENAME").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != c.Node(2) {
		t.Fatalf("srun on the restarted node: %v\n%s", err, out)
	}
	if left := c.WaitNoJob(10 * time.Second); left != nil {
		t.Fatalf("processes left: %v", left)
	}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s left: %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join("/run/netns", ns)); !os.IsNotExist(err) {
		t.Fatalf("namespace %s left: %v", ns, err)
	}
}

func hasProc(c *Cluster, host int, name string) bool {
	for _, pid := range c.JobPids(host) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(b)) == name {
			return true
		}
	}
	return false
}
