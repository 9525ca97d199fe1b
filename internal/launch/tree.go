package launch

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// Tree launch (--fanout K). With more remote hosts than K, the head starts
// (over ssh) the agents of K hosts only; each agent starts up to K more,
// and so on: the remote hosts in order form a K-ary tree, breadth first
// (treeKids), of depth about log_K(hosts). Over ssh the launch command
// only carries the agent's Hello; every agent then dials the head over TCP
// (its attach address), proves the job's secret and keeps that one
// connection for everything (start, signals, output, exits, heartbeat).
// No traffic relays through a parent, so a parent that is lost (killed,
// its host crashed or cut off) loses its own host's ranks only: its
// children, already attached, keep running and are supervised by the head
// as before; the policy sees exactly one HostLost, as for a flat launch.
// What the parent's loss breaks is only its children's ssh sessions, which
// they no longer use (they ignore their standard input's end and a broken
// standard error). Under Slurm (agents by srun) the launch stays flat:
// srun fans out through slurmd itself.

// DefaultFanout is the default of --fanout: the head starts every agent
// itself (a flat launch, as before) up to this many remote hosts.
const DefaultFanout = 32

// EnvFanout is the environment default of --fanout.
const EnvFanout = "FTMPI_FANOUT"

// treeKids lays out m remote agents in a k-ary tree, breadth first: node 0
// is the head, node j+1 the j-th remote host, and node n's parent is
// (n-1)/k. It returns the nodes each node starts. m <= k: the head starts
// all (flat).
func treeKids(m, k int) [][]int {
	if k < 1 {
		k = 1
	}
	kids := make([][]int, m+1)
	for n := 1; n <= m; n++ {
		p := (n - 1) / k
		kids[p] = append(kids[p], n)
	}
	return kids
}

// maxTreeDepth bounds a tree launch's depth: each level nests the next in
// its parent's Hello (the JSON decoder stops at 10,000 levels), and every
// level costs a launch command's time in series.
const maxTreeDepth = 1000

// treeDepth is the depth of the tree of m remote agents and fan-out k (0:
// no remote agent).
func treeDepth(m, k int) int {
	if k < 1 {
		k = 1
	}
	d, reach, level := 0, 0, 1
	for reach < m {
		if k == 1 {
			return m
		}
		level *= k
		reach += level
		d++
	}
	return d
}

// useTree tells whether the remote agents of cfg (nremote of them) are
// started through a tree.
func useTree(cfg Config, nremote int) bool {
	if cfg.SlurmJob != "" && strings.TrimSpace(cfg.LaunchAgent) == "" {
		return false // srun's own fan-out
	}
	fan := cfg.Fanout
	if fan <= 0 {
		fan = DefaultFanout
	}
	return nremote > fan
}

// treeNodes is the subtree of node n for its Hello.
func treeNodes(kids [][]int, n int, remote []int, hosts []HostSlots) []agentwire.Node {
	var out []agentwire.Node
	for _, c := range kids[n] {
		i := remote[c-1]
		out = append(out, agentwire.Node{Host: hosts[i].Name, Index: i, Kids: treeNodes(kids, c, remote, hosts)})
	}
	return out
}

// launchWords is the launch agent command without the host (Hello.Launch):
// --launch-agent / $FTMPI_SSH, else ssh.
func launchWords(cfg Config) []string {
	if w := strings.Fields(cfg.LaunchAgent); len(w) > 0 {
		return w
	}
	return []string{"ssh"}
}

// bootProc is the launch command (ssh HOST 'ftmpirun' AGENT) of one agent
// of a tree launch: it carries the agent's Hello on its standard input,
// then nothing (its standard output is discarded; the tail of its
// standard error explains a failure).
type bootProc struct {
	host   string
	cmd    *exec.Cmd
	stderr *tailBuffer
	done   chan struct{} // closed once cmd is reaped
	err    error         // cmd.Wait's, once done
}

// startBoot runs argv with hello on its standard input.
func startBoot(argv []string, hello agentwire.Msg) (*bootProc, error) {
	frame, err := agentwire.Encode(nil, hello)
	if err != nil {
		return nil, err
	}
	b := &bootProc{host: hello.Host, stderr: &tailBuffer{}, done: make(chan struct{})}
	b.cmd = exec.Command(argv[0], argv[1:]...)
	// ssh dies with its starter; its own group, so that a terminal's
	// Ctrl-C reaches only ftmpirun.
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	b.cmd.Stdin = strings.NewReader(string(frame))
	b.cmd.Stderr = b.stderr
	// A launch command whose remote side lives on (a fake ssh that leaves
	// the agent running as its child) may keep the stderr pipe open.
	b.cmd.WaitDelay = 2 * time.Second
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch agent %q: %v", argv[0], err)
	}
	go func() { b.err = b.cmd.Wait(); close(b.done) }()
	return b, nil
}

// failure says how the launch command ended, with the tail of its stderr.
func (b *bootProc) failure() string {
	msg := "its launch command ended before the agent attached"
	if b.err != nil {
		msg += ": " + b.err.Error()
	}
	if e := b.stderr.String(); e != "" {
		msg += " (" + e + ")"
	}
	return msg
}

// stop kills the launch command (the ssh client only: the agent on the
// other host is not its child there) and reaps it.
func (b *bootProc) stop() {
	_ = b.cmd.Process.Kill()
	<-b.done
}

func stopBoots(boots []*bootProc) {
	for _, b := range boots {
		_ = b.cmd.Process.Kill()
	}
	for _, b := range boots {
		<-b.done
	}
}

// agentArgvWords is the launch command of an agent on host for a tree
// launch's agent: words HOST 'self' AGENT.
func agentArgvWords(words []string, host, self string) []string {
	return append(append([]string(nil), words...), host, shellQuote(self)+" "+AgentCommand)
}

// treeStart is the head's state while the agents of a tree launch start.
type treeStart struct {
	mu     sync.Mutex
	agents map[int]*remoteAgent // by host index: attached
	errs   map[int]error        // by host index: could not be started
	want   map[int]bool         // the remote host indexes
	open   bool                 // the start is under way
	failed bool                 // the start failed: the attached agents are being closed
	wake   chan struct{}        // capacity 1: something was decided
}

// decide records the outcome for host index i once (ra or err), while the
// start is under way; it reports whether it was taken. An error after a
// success (the agent lost during the start) replaces it.
func (ts *treeStart) decide(i int, ra *remoteAgent, err error) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if !ts.open || !ts.want[i] || ts.errs[i] != nil || (ra != nil && ts.agents[i] != nil) {
		return false
	}
	if err == nil && ts.agents[i] != nil {
		return false
	}
	if err != nil {
		ts.errs[i] = err
	} else {
		ts.agents[i] = ra
	}
	select {
	case ts.wake <- struct{}{}:
	default:
	}
	return true
}

// pending tells whether host index i may still attach.
func (ts *treeStart) pending(i int) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.open && ts.want[i] && ts.agents[i] == nil && ts.errs[i] == nil
}

// attachTimeout bounds an agent's handshake and Ready on its connection.
const attachTimeout = 30 * time.Second

// startTree starts the agents of remote (host indexes of cfg.Hosts)
// through a tree of fan-out cfg.Fanout and returns the attached agents
// by host index, the launch commands it ran (to stop once the agents are
// closed), and, if any agent could not be started, the first failure in
// host order (the attached agents are then closed and the commands
// stopped). hello is the head's Hello without Host, Node and Tree. Its
// steps: listen for the agents' connections (acceptAgents), start the
// first level of the tree (startFirstLevel), wait until every agent
// attached or one failed (await), then stop listening.
func startTree(cfg Config, remote []int, hello agentwire.Msg, headIP netip.Addr, self string, h *head,
	key *wireauth.Key, logf func(string, ...any)) (map[int]*remoteAgent, []*bootProc, error) {
	fan := cfg.Fanout
	if fan <= 0 {
		fan = DefaultFanout
	}
	if d := treeDepth(len(remote), fan); d > maxTreeDepth {
		return nil, nil, fmt.Errorf("--fanout %d over %d remote hosts makes a tree of depth %d (at most %d): use a larger fan-out", fan, len(remote), d, maxTreeDepth)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(headIP.String(), "0"))
	if err != nil {
		return nil, nil, fmt.Errorf("cannot listen for the agents on %s: %v", headIP, err)
	}
	kids := treeKids(len(remote), fan)
	parent := treeParents(kids, remote, cfg.Hosts)
	ts := &treeStart{agents: map[int]*remoteAgent{}, errs: map[int]error{}, want: map[int]bool{}, open: true, wake: make(chan struct{}, 1)}
	for _, i := range remote {
		ts.want[i] = true
	}
	hello.Attach = ln.Addr().String()
	hello.Launch = launchWords(cfg)
	hello.Self = self
	stopAccept := ts.acceptAgents(ln, func(nc net.Conn) error { return attachAgent(nc, cfg, hello, h, key, ts, parent, logf) }, logf)
	boots := ts.startFirstLevel(cfg, kids, remote, hello, self)
	ts.await(remote, parent)
	stopAccept()
	if len(ts.errs) == 0 {
		return ts.agents, boots, nil
	}
	return nil, nil, ts.fail(cfg, boots)
}

// treeParents names, by host index, who starts each remote host's agent:
// "the head" for the first level, else the parent's host name.
func treeParents(kids [][]int, remote []int, hosts []HostSlots) map[int]string {
	parent := map[int]string{}
	for n, cs := range kids {
		for _, c := range cs {
			if n == 0 {
				parent[remote[c-1]] = "the head"
			} else {
				parent[remote[c-1]] = hosts[remote[n-1]].Name
			}
		}
	}
	return parent
}

// acceptAgents accepts the agents' connections on ln, each attached by
// attach in a goroutine of its own (refused ones closed and logged). stop
// closes ln and waits for the accept loop and every attach under way.
func (ts *treeStart) acceptAgents(ln net.Listener, attach func(net.Conn) error, logf func(string, ...any)) (stop func()) {
	var conns sync.WaitGroup // connections being attached
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				if err := attach(nc); err != nil {
					nc.Close()
					logf("refused an agent connection%s: %v", remoteAddr(nc), err)
				}
			}()
		}
	}()
	return func() {
		ln.Close()
		<-acceptDone
		conns.Wait()
	}
}

// startFirstLevel runs the launch commands of the tree's first level (the
// head's children), each with the hello of its subtree; a command that
// cannot start, or ends, decides its host's failure.
func (ts *treeStart) startFirstLevel(cfg Config, kids [][]int, remote []int, hello agentwire.Msg, self string) []*bootProc {
	var boots []*bootProc
	for _, c := range kids[0] {
		i := remote[c-1]
		hm := hello
		hm.Host, hm.Node, hm.Tree = cfg.Hosts[i].Name, i, treeNodes(kids, c, remote, cfg.Hosts)
		b, err := startBoot(agentArgvWords(hello.Launch, hm.Host, self), hm)
		if err != nil {
			ts.decide(i, nil, err)
			continue
		}
		boots = append(boots, b)
		go func() {
			<-b.done
			ts.decide(i, nil, errors.New(b.failure()))
		}()
	}
	return boots
}

// await waits until every agent of remote attached, or for the first
// failure, or readyWait (every host still pending then fails, naming who
// was to start it); then it closes the start (ts.open, ts.failed).
func (ts *treeStart) await(remote []int, parent map[int]string) {
	deadline := time.NewTimer(readyWait)
	defer deadline.Stop()
	timedOut := false
wait:
	for {
		ts.mu.Lock()
		done := len(ts.errs) > 0 || len(ts.agents) == len(remote)
		ts.mu.Unlock()
		if done {
			break
		}
		select {
		case <-ts.wake:
		case <-deadline.C:
			timedOut = true
			break wait
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.open = false
	if timedOut {
		for _, i := range remote {
			if ts.agents[i] == nil && ts.errs[i] == nil {
				ts.errs[i] = fmt.Errorf("no answer within %v (started by %s)", readyWait, parent[i])
			}
		}
	}
	ts.failed = len(ts.errs) > 0
}

// fail closes the attached agents of a failed start and stops the launch
// commands; it returns the first failure in host order.
func (ts *treeStart) fail(cfg Config, boots []*bootProc) error {
	idx := make([]int, 0, len(ts.errs))
	for i := range ts.errs {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	i := idx[0]
	first := fmt.Errorf("cannot start the agent on host %s: %v", cfg.Hosts[i].Name, ts.errs[i])
	var wg sync.WaitGroup
	for _, ra := range ts.agents {
		wg.Add(1)
		go func() { defer wg.Done(); ra.close(5 * time.Second) }()
	}
	wg.Wait()
	stopBoots(boots)
	return first
}

// attachAgent runs the head's side of one agent's attach connection: the
// wireauth handshake (ProtoAgent, the agent's host index as identity),
// then its Ready.
func attachAgent(nc net.Conn, cfg Config, hello agentwire.Msg, h *head, key *wireauth.Key, ts *treeStart,
	parent map[int]string, logf func(string, ...any)) error {
	nc.SetDeadline(time.Now().Add(attachTimeout))
	node := -1
	if key != nil {
		hh, err := wireauth.Accept(nc, nc, key, func(hh wireauth.Hello) error {
			switch {
			case hh.Proto != wireauth.ProtoAgent:
				return fmt.Errorf("protocol %d is not the agent protocol", hh.Proto)
			case hh.To != wireauth.Launcher:
				return fmt.Errorf("addressed to %d, not to the head", hh.To)
			case hh.From >= uint64(len(cfg.Hosts)) || !ts.pending(int(hh.From)):
				return fmt.Errorf("host index %d is not an agent awaited", hh.From)
			}
			return nil
		})
		if err != nil {
			return err
		}
		node = int(hh.From)
	}
	r := bufio.NewReaderSize(nc, 64<<10)
	m, err := agentwire.Read(r)
	if err != nil {
		return fmt.Errorf("no ready: %v", err)
	}
	if m.Type != agentwire.TReady {
		return fmt.Errorf("first message %v, not ready", m.Type)
	}
	if node < 0 {
		node = m.Node
	}
	if m.Node != node || node >= len(cfg.Hosts) || m.Host != cfg.Hosts[node].Name || m.Job != hello.Job || !ts.pending(node) {
		return fmt.Errorf("ready of host %q (index %d, job %q): not an agent awaited", m.Host, m.Node, m.Job)
	}
	if m.Error != "" {
		ts.decide(node, nil, errors.New(m.Error))
		return nil // the agent ends; its connection with it
	}
	nc.SetDeadline(time.Time{})
	name := cfg.Hosts[node].Name
	ra := attachRemote(name, nc, r, m, hello, h,
		func(reason string, pids map[int]int) {
			// Lost while the job starts: the start fails (as a host that
			// cannot be started); later, the host is lost for the policy.
			if ts.decide(node, nil, fmt.Errorf("agent lost while the job started: %s", reason)) {
				return
			}
			ts.mu.Lock()
			failed := ts.failed
			ts.mu.Unlock()
			if !failed { // a start that failed is being torn down: no host to lose
				h.hostLost(node, reason, pids)
			}
		},
		func(e agentwire.Msg) {
			if e.Node >= 0 && e.Node < len(cfg.Hosts) && e.Host == cfg.Hosts[e.Node].Name {
				ts.decide(e.Node, nil, fmt.Errorf("%s (started by %s)", e.Error, name))
			}
		})
	if !ts.decide(node, ra, nil) {
		ra.close(time.Second)
		return nil
	}
	if cfg.Verbose {
		logf("agent on %s attached (started by %s)", name, parent[node])
	}
	return nil
}

// Agent side.

// attachHead dials the head's attach address of a tree launch and proves
// the job's secret (nil key: none), as host index node.
func attachHead(hello agentwire.Msg, key *wireauth.Key) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", hello.Attach, attachTimeout)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the head at %s: %v", hello.Attach, err)
	}
	if key != nil {
		nc.SetDeadline(time.Now().Add(attachTimeout))
		if err := wireauth.Dial(nc, key, wireauth.Hello{Proto: wireauth.ProtoAgent, From: uint64(hello.Node), To: wireauth.Launcher}); err != nil {
			nc.Close()
			return nil, fmt.Errorf("the head at %s refused this agent: %v", hello.Attach, err)
		}
		nc.SetDeadline(time.Time{})
	}
	return nc, nil
}

// startKids starts the agents of hello's subtree (each with its own
// Hello) and reports through w each one whose launch command failed or
// ended (the head ignores that for an agent that already attached). It
// returns the launch commands, to stop when the agent ends.
func startKids(hello agentwire.Msg, w *frameWriter) []*bootProc {
	var boots []*bootProc
	for _, k := range hello.Tree {
		hm := hello
		hm.Host, hm.Node, hm.Tree = k.Host, k.Index, k.Kids
		b, err := startBoot(agentArgvWords(hello.Launch, k.Host, hello.Self), hm)
		if err != nil {
			w.send(agentwire.Msg{Type: agentwire.TAgentErr, Host: k.Host, Node: k.Index, Error: err.Error()})
			continue
		}
		boots = append(boots, b)
		go func() {
			<-b.done
			w.send(agentwire.Msg{Type: agentwire.TAgentErr, Host: k.Host, Node: k.Index, Error: b.failure()})
		}()
	}
	return boots
}

// ignoreSIGPIPE keeps an attached agent alive when its launch command's
// session is gone (its parent lost): a write to its standard error then
// fails instead of killing it. Handled (not ignored), so the ranks it
// starts get the default disposition back at exec.
func ignoreSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
