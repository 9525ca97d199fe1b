package launch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
)

// readyWait bounds the start of a remote agent (ssh, then its Ready).
const readyWait = 60 * time.Second

// remoteAgent is the head's side of an agent on another host: it
// implements hostagent.Agent by relaying the calls over the agent's ssh session
// (package agentwire) and the agent's reports to the head. It watches the
// agent with a heartbeat; when the session ends (a crashed host, a killed
// agent or ssh) or the agent is silent for the heartbeat timeout (a silent
// host, a partition), the agent is lost: every rank it ran is reported
// through onLost (policy.HostLost) and nothing more is reported for them.
type remoteAgent struct {
	host    string
	rep     hostagent.Reporter
	onLost  func(reason string, pids map[int]int)
	period  time.Duration
	timeout time.Duration

	cmd    *exec.Cmd // the session's ssh (srun); nil for an agent attached over TCP (tree launch)
	conn   net.Conn  // the agent's TCP connection (tree launch); nil over ssh
	w      *frameWriter
	stderr *tailBuffer
	ready  agentwire.Msg

	mu      sync.Mutex
	running map[int]int // rank -> incarnation, started and not reported gone
	pids    map[int]int // rank -> process id of its running incarnation (Started)
	started map[uint64]chan struct{}
	starts  map[uint64][]agentwire.Spec // the ranks of each Start not yet Started
	checks  map[uint64]chan agentwire.Msg
	files   map[string]chan agentwire.Msg // --preload-binary: FileDone awaited, by name
	seq     uint64
	lost    bool
	closing bool // Bye sent: the end of the session is expected
	lostCh  chan struct{}
	ranks   sync.WaitGroup // one per running rank
	loops   sync.WaitGroup
	seen    chan struct{} // a frame arrived (heartbeat), capacity 1
	// delivering: the reader is handing a report to the head (an output
	// line the head's stdout may be slow to take). Frames then wait in the
	// pipe unread; the heartbeat does not count that time against the agent.
	delivering atomic.Bool

	stdinAck chan agentwire.Msg // the agent's StdinAck, awaited by forwardStdin

	relay atomic.Pointer[relayLink] // the head's side of the agent's relay (Hello.Relay), nil: none

	readDone   chan struct{}         // closed when the reader ends
	onAgentErr func(m agentwire.Msg) // a tree launch's AgentErr (nil: ignored)
}

// tailBuffer keeps the last bytes written (ssh's error messages).
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	t.mu.Unlock()
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// shellQuote quotes s for the remote shell that ssh runs the command in.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startRemote starts the agent on host by running argv (ssh HOST COMMAND,
// or srun inside a Slurm allocation: see agentArgv), sends it hello and
// waits for its Ready.
func startRemote(host string, argv []string, hello agentwire.Msg, rep hostagent.Reporter, onLost func(string, map[int]int)) (*remoteAgent, error) {
	a := newRemote(host, hello, rep, onLost)
	a.cmd = exec.Command(argv[0], argv[1:]...)
	// ssh (srun) dies with ftmpirun (its session's end kills the agent's ranks).
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	a.cmd.Stderr = a.stderr
	stdin, err := a.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch agent %q: %v", argv[0], err)
	}
	a.w = newFrameWriter(stdin)
	a.w.send(hello)
	r := bufio.NewReaderSize(stdout, 64<<10)
	type res struct {
		m   agentwire.Msg
		err error
	}
	first := make(chan res, 1)
	go func() { m, err := agentwire.Read(r); first <- res{m, err} }()
	var got res
	answered := false
	select {
	case got = <-first:
		answered = true
	case <-time.After(readyWait):
		got.err = fmt.Errorf("no answer within %v", readyWait)
	}
	if got.err == nil && got.m.Type != agentwire.TReady {
		got.err = fmt.Errorf("first message %v, not ready", got.m.Type)
	}
	if got.err == nil && got.m.Error != "" {
		got.err = errors.New(got.m.Error)
	}
	if got.err != nil {
		a.kill()
		stdin.Close()
		if !answered {
			<-first // the reader ends with the killed ssh
		}
		_ = a.cmd.Wait()
		a.w.stop()
		if e := a.stderr.String(); e != "" && got.err != nil {
			return nil, fmt.Errorf("%v (%s)", got.err, e)
		}
		return nil, got.err
	}
	a.ready = got.m
	a.loops.Add(2)
	go a.readLoop(r)
	go a.heartbeat()
	return a, nil
}

// newRemote is a remote agent's state before its session is set up.
func newRemote(host string, hello agentwire.Msg, rep hostagent.Reporter, onLost func(string, map[int]int)) *remoteAgent {
	return &remoteAgent{host: host, rep: rep, onLost: onLost,
		period: time.Duration(hello.HBPeriod), timeout: time.Duration(hello.HBTimeout),
		stderr: &tailBuffer{}, running: map[int]int{}, pids: map[int]int{}, started: map[uint64]chan struct{}{}, starts: map[uint64][]agentwire.Spec{},
		checks: map[uint64]chan agentwire.Msg{}, files: map[string]chan agentwire.Msg{}, lostCh: make(chan struct{}), seen: make(chan struct{}, 1),
		stdinAck: make(chan agentwire.Msg, 1), readDone: make(chan struct{})}
}

// attachRemote is the head's side of an agent of a tree launch that
// attached over TCP (nc, read through r) and said ready: the same
// relaying, heartbeat and loss as over ssh, on the connection. Its
// loss is the connection's end or its silence; kill closes it (the agent,
// losing the head, kills its ranks).
func attachRemote(host string, nc net.Conn, r *bufio.Reader, ready, hello agentwire.Msg, rep hostagent.Reporter,
	onLost func(string, map[int]int), onAgentErr func(agentwire.Msg)) *remoteAgent {
	a := newRemote(host, hello, rep, onLost)
	a.conn, a.ready, a.onAgentErr = nc, ready, onAgentErr
	a.w = newFrameWriter(nc)
	a.loops.Add(2)
	go a.readLoop(r)
	go a.heartbeat()
	return a
}

func (a *remoteAgent) kill() {
	if a.cmd != nil && a.cmd.Process != nil {
		_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	}
	if a.conn != nil {
		a.conn.Close()
	}
}

func (a *remoteAgent) readLoop(r *bufio.Reader) {
	defer a.loops.Done()
	defer close(a.readDone)
	for {
		m, err := agentwire.Read(r)
		if err != nil {
			reason := "connection to the agent lost"
			if errors.Is(err, agentwire.ErrFrame) {
				reason = fmt.Sprintf("bad message from the agent: %v", err)
			} else if err != io.EOF {
				reason += ": " + err.Error()
			}
			if e := a.stderr.String(); e != "" {
				reason += " (" + e + ")"
			}
			a.lose(reason)
			return
		}
		a.delivering.Store(true)
		select {
		case a.seen <- struct{}{}:
		default:
		}
		a.deliver(m)
		a.delivering.Store(false)
	}
}

// deliver hands one message of the agent to the head.
func (a *remoteAgent) deliver(m agentwire.Msg) {
	switch m.Type {
	case agentwire.TOutput:
		a.rep.Output(m.Rank, m.Stderr, m.Line)
	case agentwire.TExited:
		a.mu.Lock()
		inc, ok := a.running[m.Rank]
		if ok && inc == m.Inc {
			delete(a.running, m.Rank)
			delete(a.pids, m.Rank)
		} else {
			ok = false
		}
		a.mu.Unlock()
		if !ok {
			return // lost meanwhile, or not ours
		}
		e := hostagent.ExitReport{Host: a.host, Rank: m.Rank, Incarnation: m.Inc, Pid: m.Pid, Status: m.Status, Signal: syscall.Signal(m.Sig)}
		if m.StartErr != "" {
			e.StartErr = errors.New(m.StartErr)
		}
		a.rep.Exited(e)
		a.ranks.Done()
	case agentwire.TStarted:
		a.mu.Lock()
		for i, s := range a.starts[m.Seq] {
			if cur, ok := a.running[s.Rank]; ok && cur == s.Inc && i < len(m.Pids) && m.Pids[i] > 0 {
				a.pids[s.Rank] = m.Pids[i]
			}
		}
		delete(a.starts, m.Seq)
		if ch := a.started[m.Seq]; ch != nil {
			close(ch)
			delete(a.started, m.Seq)
		}
		a.mu.Unlock()
	case agentwire.TFileDone:
		a.mu.Lock()
		ch := a.files[m.File]
		delete(a.files, m.File)
		a.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case agentwire.TStdinAck:
		select {
		case a.stdinAck <- m:
		default: // not awaited: dropped
		}
	case agentwire.TCtlUp:
		if l := a.relay.Load(); l != nil {
			l.upFrame(m.Ctl)
		}
	case agentwire.TAgentErr:
		if a.onAgentErr != nil {
			a.onAgentErr(m)
		}
	case agentwire.TState:
		a.mu.Lock()
		ch := a.checks[m.Token]
		delete(a.checks, m.Token)
		a.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

func (a *remoteAgent) heartbeat() {
	defer a.loops.Done()
	t := time.NewTicker(a.period)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-a.lostCh:
			return
		case <-a.seen:
			last = time.Now()
		case <-t.C:
			if a.delivering.Load() {
				last = time.Now() // our own output is slow, not the agent
			}
			if d := time.Since(last); d > a.timeout {
				a.lose(fmt.Sprintf("no heartbeat from its agent for %v", d.Round(time.Millisecond)))
				return
			}
			a.w.send(agentwire.Msg{Type: agentwire.TPing})
		}
	}
}

// lose declares the agent lost, once: its ssh is killed and every rank it
// ran is gone for the head (onLost), unless the head said Bye.
func (a *remoteAgent) lose(reason string) {
	a.mu.Lock()
	if a.lost {
		a.mu.Unlock()
		return
	}
	a.lost = true
	close(a.lostCh)
	closing := a.closing
	n := len(a.running)
	pids := make(map[int]int, len(a.pids))
	for r, p := range a.pids {
		pids[r] = p
	}
	clear(a.running)
	clear(a.pids)
	clear(a.starts)
	for seq, ch := range a.started {
		close(ch)
		delete(a.started, seq)
	}
	for name, ch := range a.files {
		ch <- agentwire.Msg{Type: agentwire.TFileDone, File: name, Error: "host " + a.host + " lost"}
		delete(a.files, name)
	}
	for tok, ch := range a.checks {
		ch <- agentwire.Msg{Type: agentwire.TState, Token: tok, State: "gone (its host is lost)"}
		delete(a.checks, tok)
	}
	a.mu.Unlock()
	a.kill()
	if !closing {
		a.onLost(reason, pids)
		if l := a.relay.Load(); l != nil {
			l.lost() // its ranks' connections close, after the host's loss
		}
	}
	for i := 0; i < n; i++ {
		a.ranks.Done()
	}
}

// Host implements hostagent.Agent.
func (a *remoteAgent) Host() string { return a.host }

// Start implements hostagent.Agent. Processes started on a lost agent are not
// reported: the host's loss (policy.HostLost) accounts for them.
func (a *remoteAgent) Start(specs []hostagent.RankSpec) {
	a.mu.Lock()
	if a.lost {
		// Nothing to report: the policy placed these processes on this
		// host, so its HostLost fails them (a start error instead would
		// tear the job down).
		a.mu.Unlock()
		return
	}
	a.seq++
	seq := a.seq
	ch := make(chan struct{})
	a.started[seq] = ch
	m := agentwire.Msg{Type: agentwire.TStart, Seq: seq}
	for _, s := range specs {
		a.running[s.Rank] = s.Incarnation
		delete(a.pids, s.Rank) // an older incarnation's
		a.ranks.Add(1)
		m.Specs = append(m.Specs, agentwire.Spec{Rank: s.Rank, Inc: s.Incarnation, Path: s.Path, Args: s.Args, Env: s.Env, Dir: s.Dir,
			Bind: s.Bind, Slot: s.Slot, Report: s.ReportBinding, Stdin: s.Stdin != nil})
	}
	a.starts[seq] = m.Specs
	a.mu.Unlock()
	a.w.send(m)
	<-ch // closed by Started or by the loss
}

func (a *remoteAgent) signal(rank, inc int, sig syscall.Signal) {
	a.mu.Lock()
	cur, ok := a.running[rank]
	lost := a.lost
	a.mu.Unlock()
	if ok && !lost && (inc < 0 || inc == cur) {
		a.w.send(agentwire.Msg{Type: agentwire.TSignal, Rank: rank, Inc: inc, Sig: int(sig)})
	}
}

// Signal implements hostagent.Agent.
func (a *remoteAgent) Signal(rank int, sig syscall.Signal) { a.signal(rank, -1, sig) }

// SignalIncarnation implements hostagent.Agent.
func (a *remoteAgent) SignalIncarnation(rank, inc int, sig syscall.Signal) { a.signal(rank, inc, sig) }

// SignalAll implements hostagent.Agent.
func (a *remoteAgent) SignalAll(sig syscall.Signal) {
	a.mu.Lock()
	lost := a.lost
	a.mu.Unlock()
	if !lost {
		a.w.send(agentwire.Msg{Type: agentwire.TSignalAll, Sig: int(sig)})
	}
}

// Wait implements hostagent.Agent.
func (a *remoteAgent) Wait() { a.ranks.Wait() }

// Pid is the process id of incarnation inc of rank on this agent's host,
// as the agent reported it when it started the rank (0 if unknown, or
// not running here).
func (a *remoteAgent) Pid(rank, inc int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur, ok := a.running[rank]; ok && cur == inc {
		return a.pids[rank]
	}
	return 0
}

// runs tells whether incarnation inc of rank runs on this agent.
func (a *remoteAgent) runs(rank, inc int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur, ok := a.running[rank]
	return ok && cur == inc
}

// check asks the agent for the scheduler state of incarnation inc of rank
// (as hostagent.ProcState on its host). It returns when the agent answers or is
// lost (the heartbeat bounds the wait).
func (a *remoteAgent) check(rank, inc int) (pid int, state string, alive bool) {
	ch := make(chan agentwire.Msg, 1)
	a.mu.Lock()
	if a.lost {
		a.mu.Unlock()
		return 0, "gone (its host is lost)", false
	}
	a.seq++
	tok := a.seq
	a.checks[tok] = ch
	a.mu.Unlock()
	a.w.send(agentwire.Msg{Type: agentwire.TCheck, Token: tok, Rank: rank, Inc: inc})
	m := <-ch
	return m.Pid, m.State, m.Alive
}

// preloadChunk is the size of the pieces of a preloaded file.
const preloadChunk = 1 << 20

// preload sends the file at path to the agent (--preload-binary) and
// returns where the agent keeps it (an executable in its job directory).
func (a *remoteAgent) preload(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	name := filepath.Base(path)
	ch := make(chan agentwire.Msg, 1)
	a.mu.Lock()
	if a.lost {
		a.mu.Unlock()
		return "", fmt.Errorf("host %s lost", a.host)
	}
	a.files[name] = ch
	a.mu.Unlock()
	buf := make([]byte, preloadChunk)
	for {
		n, err := io.ReadFull(f, buf)
		final := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !final {
			a.w.send(agentwire.Msg{Type: agentwire.TFile, File: name, Final: true}) // the agent closes its copy
			<-ch
			return "", err
		}
		// The writer queues: wait for the queue to drain a little so that
		// a large binary is not held in memory whole.
		a.w.send(agentwire.Msg{Type: agentwire.TFile, File: name, Data: append([]byte(nil), buf[:n]...), Final: final})
		a.w.flush(time.Minute)
		if final {
			break
		}
	}
	m := <-ch
	if m.Error != "" {
		return "", errors.New(m.Error)
	}
	return m.Path, nil
}

// close ends the session: Bye, then the agent exits once its ranks are
// gone; ssh is killed if it has not ended within d.
func (a *remoteAgent) close(d time.Duration) {
	a.mu.Lock()
	a.closing = true
	lost := a.lost
	a.mu.Unlock()
	if !lost {
		a.w.send(agentwire.Msg{Type: agentwire.TBye})
	}
	done := a.readDone // over TCP: the agent closes its connection when it exits
	if a.cmd != nil {
		done = make(chan struct{})
		go func() { _ = a.cmd.Wait(); close(done) }()
	}
	select {
	case <-done:
	case <-time.After(d):
		a.kill()
		<-done
	}
	a.lose("closed")
	a.loops.Wait()
	a.w.stop()
}

// stdinChunk is the largest piece of forwarded stdin.
const stdinChunk = 64 << 10

// forwardStdin sends what r holds to rank's stdin on the agent's host
// (the rank was started with hostagent.RankSpec.Stdin), one piece at a time: the
// next is read only once the agent has written the last one into the
// rank's pipe. It returns at the end of r (after telling the agent), when
// the agent says the rank's stdin is closed (the rank exited), or when the
// agent is lost or closed.
func (a *remoteAgent) forwardStdin(rank int, r io.Reader) {
	buf := make([]byte, stdinChunk)
	for {
		n, err := r.Read(buf)
		final := err != nil
		if n == 0 && !final {
			continue
		}
		a.w.send(agentwire.Msg{Type: agentwire.TStdin, Rank: rank, Data: append([]byte(nil), buf[:n]...), Final: final})
		select {
		case m := <-a.stdinAck:
			if m.Final || final {
				return
			}
		case <-a.lostCh:
			return
		}
	}
}
