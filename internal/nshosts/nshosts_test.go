package nshosts

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sshRun runs `ssh hTO cmd` from host from, with a deadline long enough
// for a loaded machine (sshd's banner exchange took over a second under
// a load of 20).
func sshRun(h *Hosts, from, to int, cmd string) (string, error) {
	return sshWithin(h, from, to, cmd, 10)
}

// sshCut is sshRun where the connection is expected to fail (a cut or
// isolated host): a short deadline, since it is waited out.
func sshCut(h *Hosts, from, to int, cmd string) (string, error) {
	return sshWithin(h, from, to, cmd, 1)
}

func sshWithin(h *Hosts, from, to int, cmd string, connect int) (string, error) {
	c := h.Command(from, "timeout", strconv.Itoa(4*connect+4), "ssh", "-F", h.SSHConfig, "-o", "ConnectTimeout="+strconv.Itoa(connect), h.Name(to), cmd)
	out, err := c.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func TestHostsUpCutHealKillDown(t *testing.T) {
	h := ForTest(t, 3)
	// Every host reaches every other over ssh, by name, and the command
	// runs in the target's namespace (its address is on its eth0).
	for from := 1; from <= 3; from++ {
		for to := 1; to <= 3; to++ {
			out, err := sshRun(h, from, to, "ip -brief addr show dev eth0")
			if err != nil || !strings.Contains(out, h.Addr(to)+"/24") {
				t.Fatalf("ssh h%d -> h%d: %v: %s", from, to, err, out)
			}
		}
	}
	// One way: h3 -> h1 dropped; TCP needs both ways, so both fail, but
	// h2 still reaches both.
	if err := h.Cut(3, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := sshCut(h, 3, 1, "true"); err == nil {
		t.Fatal("h3 -> h1 works through a cut")
	}
	if out, err := sshRun(h, 2, 1, "true"); err != nil {
		t.Fatalf("h2 -> h1 cut too: %v %s", err, out)
	}
	if err := h.Heal(1); err != nil {
		t.Fatal(err)
	}
	if out, err := sshRun(h, 3, 1, "true"); err != nil {
		t.Fatalf("h3 -> h1 after heal: %v %s", err, out)
	}
	// Isolation both ways, then heal.
	if err := h.Isolate(2); err != nil {
		t.Fatal(err)
	}
	if _, err := sshCut(h, 1, 2, "true"); err == nil {
		t.Fatal("h1 -> h2 works while h2 is isolated")
	}
	if _, err := sshCut(h, 2, 3, "true"); err == nil {
		t.Fatal("h2 -> h3 works while h2 is isolated")
	}
	if err := h.Heal(2); err != nil {
		t.Fatal(err)
	}
	if out, err := sshRun(h, 1, 2, "true"); err != nil {
		t.Fatalf("h1 -> h2 after heal: %v %s", err, out)
	}
	// A process started on h3, then the host killed: nothing left on it.
	sleeper := h.Command(3, "sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	if err := h.Kill(3); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sleeper.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a process of the killed host survived")
	}
	if p := h.Pids(3); len(p) != 0 {
		t.Fatalf("killed host still runs %v", p)
	}
	if left := h.WaitNoJob(5 * time.Second); left != nil {
		t.Fatalf("leftovers: %v", left)
	}
	// Close removes everything; a second Close is harmless.
	ns, dir := h.NS(1), h.Dir
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Fatalf("namespace %s left", ns)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("directory %s left", dir)
	}
	if _, err := os.Stat("/etc/netns/" + ns); err == nil {
		t.Fatalf("/etc/netns/%s left", ns)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), h.Prefix) {
		t.Fatalf("namespaces left: %s", out)
	}
}

// TestCloseKeepsOtherSetsUsable: two sets live at once (tests of two
// packages, or a test and bench/nshosts.sh); closing one must leave the
// other's sshd able to take logins. Closing the first used to remove
// /run/sshd, sshd's privilege separation directory, which every new
// connection of every sshd needs ("Missing privilege separation
// directory"): the other set's ssh connections were reset.
func TestCloseKeepsOtherSetsUsable(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	// As on a machine where no sshd ran yet, so that the first set makes
	// the directory; only when no sshd runs (another test's would need it).
	if !sshdRunning() {
		if err := os.RemoveAll("/run/sshd"); err != nil {
			t.Fatal(err)
		}
	}
	a := ForTest(t, 1)
	b := ForTest(t, 1)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/run/sshd"); err != nil {
		t.Fatalf("closing a set removed sshd's directory: %v", err)
	}
	if out, err := sshRun(b, 1, 1, "true"); err != nil {
		t.Fatalf("ssh on the other set after the first closed: %v %s", err, out)
	}
}

// sshdRunning tells whether any sshd process runs on the machine.
func sshdRunning() bool {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, c := range comms {
		if b, err := os.ReadFile(c); err == nil && strings.TrimSpace(string(b)) == "sshd" {
			return true
		}
	}
	return false
}

// TestKillExceptKeepsSSHD: the job's processes on a host are killed, its
// sshd stays and takes logins.
func TestKillExceptKeepsSSHD(t *testing.T) {
	h := ForTest(t, 2)
	// "ready" once both processes run inside h2 (before it, KillExcept
	// could find the host empty while ip netns exec is still entering it).
	job := h.Command(2, "sh", "-c", "sleep 60 & echo ready; exec sleep 60")
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	job.Stdout = w
	err = job.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		ready <- line
	}()
	select {
	case line := <-ready:
		if strings.TrimSpace(line) != "ready" {
			t.Fatalf("the job printed %q, want ready", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the job did not start within 20s")
	}
	done := make(chan error, 1)
	go func() { done <- job.Wait() }()
	if err := h.KillExcept(2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job's process survived KillExcept")
	}
	if left := h.JobPids(2); len(left) != 0 {
		t.Fatalf("left on h2: %v", left)
	}
	if out, err := sshRun(h, 1, 2, "true"); err != nil {
		t.Fatalf("ssh to h2 after KillExcept: %v %s", err, out)
	}
}
