// Package nshosts makes "hosts" for tests on one Linux machine: N network
// namespaces, each with one veth (eth0) plugged into a bridge that lives in
// a namespace of its own, so nothing is added to the root namespace and no
// test traffic can leave the machine. Every host runs its own sshd (Debian's
// openssh-server) with keys made for the run, and resolves the names h1..hN
// through a hosts file that `ip netns exec` binds over /etc/hosts. Links can
// be cut one way or both with nftables and healed; a host can be killed
// (every process in its namespace). Close removes everything: processes,
// namespaces, files (but /run/sshd, sshd's privilege separation directory,
// which Up makes if missing: other sets may be using it).
//
// It needs root, ip (iproute2), nft (nftables), sshd, ssh and ssh-keygen;
// Available says what is missing. The filesystem is shared by all hosts
// (the same binary path is valid on every host). It must not be used
// outside tests and the bench/nshosts.sh script: it changes the machine's
// network namespaces.
package nshosts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hosts is a set of namespace hosts, h1..hN.
type Hosts struct {
	Prefix    string // namespace names: Prefix-sw (the switch), Prefix-h1..hN
	Net4      string // IPv4 /24 prefix without the last byte ("10.213.7"): host i is Net4.i
	Net6      string // IPv6 /64 prefix ("fd42:1:2:3::"): host i is Net6 + i
	N         int
	Dir       string // keys, configs, logs, state
	SSHConfig string // ssh client configuration (ssh -F SSHConfig hI works from any host)

	sshd     []*exec.Cmd     // by host index - 1
	sshdDone []chan struct{} // closed once that sshd is reaped
}

// state is what Down needs to tear a set down from another process.
type state struct {
	Prefix string
	N      int
	Dir    string
	Sshd   []int
}

const stateFile = "state.json"

// Available reports why namespace hosts cannot be made here (nil: they can).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("namespace hosts need root")
	}
	var missing []string
	for _, tool := range []string{"ip", "nft", "ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if _, err := os.Stat(sshdPath); err != nil {
		missing = append(missing, sshdPath+" (openssh-server)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("namespace hosts need %s", strings.Join(missing, ", "))
	}
	return nil
}

const sshdPath = "/usr/sbin/sshd"

// Up makes n hosts with their sshd running and reachable from every host
// over ssh -F SSHConfig. dir is where its files go ("" makes a temporary
// directory, removed by Close). On error nothing is left behind.
func Up(n int, dir string) (_ *Hosts, err error) {
	if n < 1 || n > 200 {
		return nil, fmt.Errorf("nshosts: %d hosts: want 1..200", n)
	}
	if err := Available(); err != nil {
		return nil, err
	}
	var rnd [5]byte
	_, _ = rand.Read(rnd[:])
	h := &Hosts{
		Prefix:   "ftn" + hex.EncodeToString(rnd[:2]),
		Net4:     fmt.Sprintf("10.%d.%d", 200+int(rnd[2])%50, rnd[3]),
		Net6:     fmt.Sprintf("fd42:%x:%x::", rnd[2], rnd[3]),
		N:        n,
		sshd:     make([]*exec.Cmd, n),
		sshdDone: make([]chan struct{}, n),
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "nshosts-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	h.Dir = dir
	h.SSHConfig = filepath.Join(dir, "ssh_config")
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if err := h.saveState(); err != nil {
		return nil, err
	}
	if err := h.network(); err != nil {
		return nil, err
	}
	if err := h.keys(); err != nil {
		return nil, err
	}
	for i := 1; i <= n; i++ {
		if err := h.startSSHD(i); err != nil {
			return nil, err
		}
	}
	if err := h.saveState(); err != nil {
		return nil, err
	}
	// 20 s, and a second more per host: each check is an ssh login,
	// which takes most of a second on a loaded 2-core machine.
	// Each host also gets 10 s of its own once its turn comes (at load
	// 50, 28 of 32 hosts used up the shared deadline).
	deadline := time.Now().Add(20*time.Second + time.Duration(n)*time.Second)
	for i := 1; i <= n; i++ {
		if err := h.waitSSH(i, later(deadline, time.Now().Add(10*time.Second))); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// NS is the namespace of host i (1..N).
func (h *Hosts) NS(i int) string { return fmt.Sprintf("%s-h%d", h.Prefix, i) }

func (h *Hosts) sw() string { return h.Prefix + "-sw" }

// Name is host i's name as every host resolves it ("h1").
func (h *Hosts) Name(i int) string { return "h" + strconv.Itoa(i) }

// Addr is host i's IPv4 address.
func (h *Hosts) Addr(i int) string { return h.Net4 + "." + strconv.Itoa(i) }

// Addr6 is host i's IPv6 address.
func (h *Hosts) Addr6(i int) string { return h.Net6 + strconv.Itoa(i) }

// Subnet4 and Subnet6 are the hosts' networks in CIDR form.
func (h *Hosts) Subnet4() string { return h.Net4 + ".0/24" }

// Subnet6 is the hosts' IPv6 network in CIDR form.
func (h *Hosts) Subnet6() string { return h.Net6 + "/64" }

// SSH is the launch agent command of the hosts: "ssh -F SSHConfig".
func (h *Hosts) SSH() string { return "ssh -F " + h.SSHConfig }

// Command is a command run on host i (ip netns exec).
func (h *Hosts) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS(i), name}, args...)...)
}

// CommandContext is Command bound to ctx.
func (h *Hosts) CommandContext(ctx context.Context, i int, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NS(i), name}, args...)...)
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func runIn(ns string, stdin string, name string, args ...string) error {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("on %s: %s %s: %v: %s", ns, name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// network creates the switch, the hosts, their links, addresses and hosts
// files.
func (h *Hosts) network() error {
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1 localhost\n::1 localhost ip6-localhost\n")
	for i := 1; i <= h.N; i++ {
		fmt.Fprintf(&hosts, "%s %s\n", h.Addr(i), h.Name(i))
	}
	for i := 1; i <= h.N; i++ {
		fmt.Fprintf(&hosts, "%s %s-6\n", h.Addr6(i), h.Name(i))
	}
	steps := [][]string{
		{"ip", "netns", "add", h.sw()},
		{"ip", "-n", h.sw(), "link", "set", "lo", "up"},
		{"ip", "-n", h.sw(), "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", h.sw(), "link", "set", "br0", "up"},
	}
	for _, s := range steps {
		if err := run(s[0], s[1:]...); err != nil {
			return err
		}
	}
	for i := 1; i <= h.N; i++ {
		ns := h.NS(i)
		etc := filepath.Join("/etc/netns", ns)
		if err := os.MkdirAll(etc, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(etc, "hosts"), []byte(hosts.String()), 0o644); err != nil {
			return err
		}
		port := "h" + strconv.Itoa(i)
		steps := [][]string{
			{"ip", "netns", "add", ns},
			// The pair is made inside the host and its peer moved straight
			// into the switch: neither end shows up in the root namespace.
			{"ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", h.sw()},
			{"ip", "-n", h.sw(), "link", "set", port, "master", "br0", "up"},
			{"ip", "-n", ns, "addr", "add", h.Addr(i) + "/24", "dev", "eth0"},
			{"ip", "-n", ns, "addr", "add", h.Addr6(i) + "/64", "dev", "eth0", "nodad"},
			{"ip", "-n", ns, "link", "set", "eth0", "up"},
			{"ip", "-n", ns, "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if err := run(s[0], s[1:]...); err != nil {
				return err
			}
		}
	}
	return nil
}

// keys makes the host key, the user key and the configurations.
func (h *Hosts) keys() error {
	for _, k := range []string{"hostkey", "id_ed25519"} {
		if err := run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "nshosts", "-f", filepath.Join(h.Dir, k)); err != nil {
			return err
		}
	}
	pub, err := os.ReadFile(filepath.Join(h.Dir, "id_ed25519.pub"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h.Dir, "authorized_keys"), pub, 0o600); err != nil {
		return err
	}
	client := fmt.Sprintf(`Host *
  User root
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile /dev/null
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking no
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 10
`, filepath.Join(h.Dir, "id_ed25519"))
	if err := os.WriteFile(h.SSHConfig, []byte(client), 0o600); err != nil {
		return err
	}
	// sshd's privilege separation directory. It is made if missing and
	// never removed: every sshd of every set on this machine (another
	// test's, a bench script's) needs it for each connection, so removing
	// it when one set closes would break the others' logins.
	return os.MkdirAll("/run/sshd", 0o755)
}

func (h *Hosts) startSSHD(i int) error {
	cfg := fmt.Sprintf(`ListenAddress %s
ListenAddress [%s]
Port 22
HostKey %s
AuthorizedKeysFile %s
PidFile %s
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxStartups 200:30:400
MaxSessions 100
ClientAliveInterval 1
ClientAliveCountMax 3
LogLevel ERROR
`, h.Addr(i), h.Addr6(i), filepath.Join(h.Dir, "hostkey"), filepath.Join(h.Dir, "authorized_keys"),
		filepath.Join(h.Dir, fmt.Sprintf("sshd-h%d.pid", i)))
	path := filepath.Join(h.Dir, fmt.Sprintf("sshd-h%d.conf", i))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(h.Dir, fmt.Sprintf("sshd-h%d.log", i)))
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := h.Command(i, sshdPath, "-D", "-e", "-f", path)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	h.sshd[i-1] = cmd
	done := make(chan struct{})
	h.sshdDone[i-1] = done
	go func() { _ = cmd.Wait(); close(done) }() // reaped whoever kills it
	return nil
}

// waitSSH waits until `ssh hI true` works from host i itself.
func (h *Hosts) waitSSH(i int, deadline time.Time) error {
	var last error
	for time.Now().Before(deadline) {
		cmd := h.Command(i, "ssh", "-F", h.SSHConfig, h.Name(i), "true")
		out, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		last = fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
		time.Sleep(50 * time.Millisecond)
	}
	logb, _ := os.ReadFile(filepath.Join(h.Dir, fmt.Sprintf("sshd-h%d.log", i)))
	return fmt.Errorf("nshosts: sshd on %s not reachable: %v (sshd log: %s)", h.Name(i), last, bytes.TrimSpace(logb))
}

func (h *Hosts) saveState() error {
	st := state{Prefix: h.Prefix, N: h.N, Dir: h.Dir}
	for _, c := range h.sshd {
		if c != nil && c.Process != nil {
			st.Sshd = append(st.Sshd, c.Process.Pid)
		}
	}
	b, _ := json.Marshal(st)
	return os.WriteFile(filepath.Join(h.Dir, stateFile), b, 0o600)
}

// Pids lists the processes running on host i.
func (h *Hosts) Pids(i int) []int { return nsPids(h.NS(i)) }

func nsPids(ns string) []int {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killNS SIGKILLs every process of namespace ns until none is left (a
// process may fork while it is being killed), for at most 5 s.
func killNS(ns string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := nsPids(ns)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nshosts: processes left in %s: %v", ns, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill crashes host i: every process in its namespace, its sshd included,
// is SIGKILLed (the kernel still answers for it: peers see resets).
func (h *Hosts) Kill(i int) error { return killNS(h.NS(i)) }

// KillExcept crashes the job on host i: every process in its namespace
// but its sshd listener is SIGKILLed, again until none is left (a process
// forked while the others were being killed must not outlive the crash),
// for at most 5 s. The host stays usable.
func (h *Hosts) KillExcept(i int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := h.JobPids(i)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nshosts: processes left on %s: %v", h.Name(i), pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// isSSHDListener tells whether pid is an sshd started by this set (the
// `ip netns exec` process execs sshd, so the pid is the same).
func (h *Hosts) isSSHDListener(pid int) bool {
	for _, c := range h.sshd {
		if c != nil && c.Process != nil && c.Process.Pid == pid {
			return true
		}
	}
	return false
}

// JobPids lists the processes of host i other than its sshd listener: what
// a finished job must not leave behind.
func (h *Hosts) JobPids(i int) []int {
	var out []int
	for _, pid := range h.Pids(i) {
		if !h.isSSHDListener(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// WaitNoJob waits until no process but the sshd listener is left on any
// host, at most d; it returns the leftovers (host -> pids with their
// command lines) if some remain.
func (h *Hosts) WaitNoJob(d time.Duration) map[int][]string {
	deadline := time.Now().Add(d)
	for {
		left := map[int][]string{}
		for i := 1; i <= h.N; i++ {
			for _, pid := range h.JobPids(i) {
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				left[i] = append(left[i], fmt.Sprintf("%d %s", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			if len(left) == 0 {
				return nil
			}
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const cutTable = "ftmpicut"

// Isolate cuts every link of host i, both ways (its eth0 drops everything
// in and out): the host is alive but silent; peers only time out.
func (h *Hosts) Isolate(i int) error {
	rules := fmt.Sprintf(`table inet %s {
  chain in { type filter hook input priority 0; policy accept; iifname "eth0" drop; }
  chain out { type filter hook output priority 0; policy accept; oifname "eth0" drop; }
}
`, cutTable)
	return runIn(h.NS(i), rules, "nft", "-f", "-")
}

// Cut drops what host from sends to host to (one way: to's input).
func (h *Hosts) Cut(from, to int) error {
	rules := fmt.Sprintf(`table inet %s-%d {
  chain in { type filter hook input priority 0; policy accept; ip saddr %s drop; ip6 saddr %s drop; }
}
`, cutTable, from, h.Addr(from), h.Addr6(from))
	return runIn(h.NS(to), rules, "nft", "-f", "-")
}

// Heal removes every cut made on host i (Isolate, and Cut(x, i)).
func (h *Hosts) Heal(i int) error { return runIn(h.NS(i), "", "nft", "flush", "ruleset") }

// Close kills every process on the hosts and removes the namespaces, the
// hosts files and the directory. It is safe to call more than once.
func (h *Hosts) Close() error {
	err := down(state{Prefix: h.Prefix, N: h.N, Dir: h.Dir})
	// The sshds are dead (their namespaces are empty): wait until they are
	// reaped, so that no goroutine of this set outlives Close.
	for i, done := range h.sshdDone {
		if done == nil {
			continue
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			err = errors.Join(err, fmt.Errorf("nshosts: sshd of %s not reaped", h.Name(i+1)))
		}
	}
	return err
}

// Down tears down the set whose directory is dir (made by Up in another
// process: bench/nshosts.sh down).
func Down(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("nshosts: %s: %v", filepath.Join(dir, stateFile), err)
	}
	if st.Prefix == "" || !strings.HasPrefix(st.Prefix, "ftn") {
		return fmt.Errorf("nshosts: %s names no namespace set", filepath.Join(dir, stateFile))
	}
	return down(st)
}

func down(st state) error {
	var errs []error
	for i := 1; i <= st.N; i++ {
		ns := fmt.Sprintf("%s-h%d", st.Prefix, i)
		if exists(ns) {
			if err := killNS(ns); err != nil {
				errs = append(errs, err)
			}
			if err := run("ip", "netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
		_ = os.RemoveAll(filepath.Join("/etc/netns", ns))
	}
	if sw := st.Prefix + "-sw"; exists(sw) {
		if err := killNS(sw); err != nil {
			errs = append(errs, err)
		}
		if err := run("ip", "netns", "del", sw); err != nil {
			errs = append(errs, err)
		}
	}
	if st.Dir != "" {
		if err := os.RemoveAll(st.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func exists(ns string) bool {
	_, err := os.Stat(filepath.Join("/run/netns", ns))
	return err == nil
}
