package launch

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// Failure policies (Config.OnFailure).
const (
	OnFailureAbort    = "abort"
	OnFailureContinue = "continue"
	OnFailureReinit   = "reinit" // respawn the failed rank; every rank rolls back into MPI_Reinit (seed 000)
)

// EnvExitBell, set to 0 in ftmpirun's environment, gives the ranks no exit
// bells (package exitbell): a failure is then seen when the rank is reaped
// or a survivor suspects it (for measurements).
const EnvExitBell = "FTMPI_EXIT_BELL"

// head is the control server of a job: the I/O shell around the job's
// policy (package policy), which decides everything. The head turns
// control messages, the agents' exit reports, /proc readings, the
// fault-injection plan, the timeout and signals into policy events, and
// executes the actions the policy returns, in order: replies and
// notifications under h.mu (they never block), then, outside it, liveness
// checks, signals, starts and log lines. It does not know how ranks are
// started: agents report to it (it is their hostagent.Reporter) and it kills through
// them.
type head struct {
	trc      atomic.Pointer[trace.Recorder] // --trace: the launcher's timeline (trace.go)
	size     int                            // processes of the job at start, spares included
	out      *output
	verbose  bool
	quietLog bool          // the policy's messages only when verbose (Config.Hydra)
	key      *wireauth.Key // the job's secret (nil: connections are not authenticated; tests only)

	exitBells    bool         // the ranks get exit bells (ExitBells)
	noRT         bool         // broadcasts at normal priority (EnvNoRT)
	rtBroadcasts atomic.Int64 // broadcasts sent real-time (sendEvents; tests)

	agentsMu sync.Mutex
	agents   []hostagent.Agent

	mu    sync.Mutex
	m     *policy.Machine
	conns map[policy.Conn]*ctlConn
	// adopted: spares taken as a rank's incarnation (policy.Adopt); their
	// agent knows them as the spare's process id, incarnation 0.
	adopted   map[[2]int]int // {rank, incarnation} -> spare
	adoptedBy map[int][2]int // spare -> {rank, incarnation}
	nextConn  policy.Conn
	marks     map[string]time.Time // policy.Mark instants
	closed    bool
	allExited chan struct{}
	tearing   chan struct{} // closed when teardown starts
	wg        sync.WaitGroup
	listeners []net.Listener
	refused   acceptloop.RateLog // refused control connections (Logf set by newHeadHosts)
	evFD      int                // datagram socket for events to the ranks' event sockets (-1: unavailable)
	evOpened  bool               // evFD was opened (or its opening failed)

	killGrace  time.Duration // SIGTERM to SIGKILL after an interrupt
	graceTimer *time.Timer
	dump       bool    // SIGQUIT every rank a second before the timeout's SIGKILL (EnvTimeoutDump)
	hang       hangAsk // a hang report asked of the ranks (hang.go)

	// Reinit mode (--on-failure reinit): how to respawn.
	respawn hostagent.Agent
	specs   []hostagent.RankSpec

	// Dynamic processes: how to start children.
	spawnAgent hostagent.Agent
	spawnTmpl  hostagent.RankSpec
	cacheDir   string

	triggers *triggers // fault injection on a rank's output (on=TEXT); nil: none. Set before any rank starts.

	// names is the name service (MPI_Publish_name ...) of every process
	// of the launch; a table, not policy: its requests bypass the policy.
	names boot.NameTable

	// Multi-host jobs: the agent of each host (policy host index) and the
	// variables that differ from host to host (FTMPI_HOST, FTMPI_CONTROL,
	// ...), applied to a spec moved to that host (respawn, spawn). Set
	// before any rank starts; nil for a one-host job.
	hostAgents []hostagent.Agent
	hostVars   [][]string
	hostPath   []string // --preload-binary: the program's copy on each host ("": the shared path)
	program    string   // the job's program (the path a preloaded copy replaces)

	// The agents' relays (relay.go): every link, those with entries
	// queued, and how many CtlUp frames are being fed (their end flushes).
	relayMu    sync.Mutex
	relays     []*relayLink
	relayDirty []*relayLink
	relayHold  atomic.Int32
}

// triggers is the fault-injection watch (inject.Watch) of a run and the
// lock the head's output readers take to feed it.
type triggers struct {
	mu    sync.Mutex
	w     *inject.Watch
	armed bool           // every rank of this launch has been started
	early []inject.Event // fired before that: executed when armed
}

func newHead(job string, size int, onFailure string, out *output, verbose bool) *head {
	return newHeadHosts(job, size, onFailure, out, verbose, nil, nil, 0)
}

// newHeadHosts is newHead for a job over several hosts: hosts and the host
// index of each rank (policy.Config.Hosts and Place); the last spares of
// the size processes are spares (policy.Config.Spares).
func newHeadHosts(job string, size int, onFailure string, out *output, verbose bool, hosts []policy.Host, place []int, spares int) *head {
	mode := policy.ModeAbort
	switch onFailure {
	case OnFailureContinue:
		mode = policy.ModeContinue
	case OnFailureReinit:
		mode = policy.ModeReinit
	}
	m, err := policy.New(policy.Config{Job: job, Size: size, Mode: mode, Verbose: verbose, Hosts: hosts, Place: place, Spares: spares})
	if err != nil {
		panic(fmt.Sprintf("launch: %v", err)) // Config.validate admits no such job
	}
	h := &head{
		size:      size,
		out:       out,
		verbose:   verbose,
		m:         m,
		conns:     make(map[policy.Conn]*ctlConn),
		marks:     make(map[string]time.Time),
		allExited: make(chan struct{}),
		tearing:   make(chan struct{}),
		killGrace: DefaultKillGrace,
	}
	h.refused.Logf = func(msg string) { out.logf("%s", msg) }
	h.exitBells = mode == policy.ModeContinue && os.Getenv(EnvExitBell) != "0"
	h.noRT = os.Getenv(EnvNoRT) == "1"
	return h
}

func (h *head) addAgent(a hostagent.Agent) {
	h.agentsMu.Lock()
	h.agents = append(h.agents, a)
	h.agentsMu.Unlock()
}

func (h *head) agentList() []hostagent.Agent {
	h.agentsMu.Lock()
	defer h.agentsMu.Unlock()
	return append([]hostagent.Agent(nil), h.agents...)
}

func (h *head) signalAll(sig syscall.Signal) {
	for _, a := range h.agentList() {
		a.SignalAll(sig)
	}
}

// signalRank sends sig to rank through whichever agent runs it (agents
// ignore ranks they do not run). Not to be called under h.mu.
func (h *head) signalRank(rank int, sig syscall.Signal) {
	h.mu.Lock()
	var spares []int
	for ri, s := range h.adopted {
		if ri[0] == rank {
			spares = append(spares, s)
		}
	}
	h.mu.Unlock()
	for _, a := range h.agentList() {
		a.Signal(rank, sig)
		for _, s := range spares {
			a.SignalIncarnation(s, 0, sig)
		}
	}
}

// agentID is how the agents know incarnation inc of rank: a spare the
// policy adopted as it is known by its own process id, incarnation 0.
func (h *head) agentID(rank, inc int) (int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s, ok := h.adopted[[2]int{rank, inc}]; ok {
		return s, 0
	}
	return rank, inc
}

// signalIncarnation sends sig to incarnation inc of rank only (not under
// h.mu).
func (h *head) signalIncarnation(rank, inc int, sig syscall.Signal) {
	rank, inc = h.agentID(rank, inc)
	for _, a := range h.agentList() {
		a.SignalIncarnation(rank, inc, sig)
	}
}

// pidOf asks the agents for the pid of incarnation inc of rank (0 if none
// knows it).
func (h *head) pidOf(rank, inc int) int {
	rank, inc = h.agentID(rank, inc)
	for _, a := range h.agentList() {
		if pa, ok := a.(interface{ Pid(rank, inc int) int }); ok {
			if pid := pa.Pid(rank, inc); pid > 0 {
				return pid
			}
		}
	}
	return 0
}

func (h *head) tearingDown() bool {
	select {
	case <-h.tearing:
		return true
	default:
		return false
	}
}

// step feeds ev to the policy and executes the actions. Replies and
// notifications are sent under h.mu, in order (they never block, and a
// rank must get its hello reply before any event); the rest is done after
// h.mu is released, in order: liveness checks (whose answers are fed back
// as events), signals, starts and log lines.
func (h *head) step(ev policy.Event) {
	h.traceEvent(ev)
	h.mu.Lock()
	acts := h.m.Step(ev)
	h.traceActions(acts)
	var later []policy.Action
	var shared sharedReply // a fence's replies: one encoding for every rank
	for _, a := range acts {
		switch a.Kind {
		case policy.Reply:
			if c := h.conns[a.Conn]; c != nil {
				c.sendParts(shared.parts(a.Msg)...)
			}
		case policy.Drop:
			if c := h.conns[a.Conn]; c != nil {
				c.close() // its reader ends and reports policy.Closed
			}
		case policy.Notify:
			h.notify(a.To, a.Msg)
		case policy.Adopt:
			if h.adopted == nil {
				h.adopted, h.adoptedBy = make(map[[2]int]int), make(map[int][2]int)
			}
			h.adopted[[2]int{a.Rank, a.Incarnation}] = a.Spare
			h.adoptedBy[a.Spare] = [2]int{a.Rank, a.Incarnation}
		case policy.TearDown:
			close(h.tearing)
			later = append(later, a)
		case policy.Mark:
			h.marks[a.Text] = time.Now()
		case policy.Log:
			if a.Since != "" {
				a.Text = fmt.Sprintf(a.Text, time.Since(h.marks[a.Since]).Round(time.Microsecond))
			}
			later = append(later, a)
		case policy.Done:
			close(h.allExited)
		default:
			later = append(later, a)
		}
	}
	h.mu.Unlock()
	h.flushRelays()
	for _, a := range later {
		h.execute(a)
	}
}

// execute does one action of the policy that is not done under h.mu.
func (h *head) execute(a policy.Action) {
	switch a.Kind {
	case policy.Log:
		if !h.quietLog || h.verbose {
			h.out.logf("%s", a.Text)
		}
	case policy.Check:
		if ra := h.remoteOf(a.Rank, a.Incarnation); ra != nil {
			// Its agent reads its state; the answer comes back as an event
			// (never wait here: this may be the agent's own reader).
			h.wg.Add(1)
			go func() {
				defer h.wg.Done()
				pid, state, alive := ra.check(h.agentID(a.Rank, a.Incarnation))
				h.step(policy.Liveness{Token: a.Token, Pid: pid, State: state, Alive: alive, Stopped: state == hostagent.StateStopped})
			}()
			return
		}
		pid := a.Pid
		if pid == 0 {
			pid = h.pidOf(a.Rank, a.Incarnation)
		}
		state, alive := "gone", false
		if pid > 0 {
			state, alive = hostagent.ProcState(pid)
		}
		h.step(policy.Liveness{Token: a.Token, Pid: pid, State: state, Alive: alive, Stopped: state == hostagent.StateStopped})
	case policy.Signal:
		if a.AnyIncarnation {
			h.signalRank(a.Rank, a.Sig)
		} else {
			h.signalIncarnation(a.Rank, a.Incarnation, a.Sig)
		}
	case policy.SignalAll:
		if a.Sig == syscall.SIGKILL && h.dumpNow() {
			// Debugging hangs: Go ranks print every goroutine's stack on
			// SIGQUIT; their output is forwarded before the kill.
			h.signalAll(syscall.SIGQUIT)
			time.Sleep(time.Second)
		}
		h.signalAll(a.Sig)
	case policy.TearDown:
		if a.Cause.Kind == policy.CauseTimeout && os.Getenv(EnvTimeoutDump) == "1" {
			h.mu.Lock()
			h.dump = true
			h.mu.Unlock()
		}
	case policy.ArmGrace:
		h.mu.Lock()
		if !h.closed && h.graceTimer == nil {
			h.graceTimer = time.AfterFunc(h.killGrace, func() {
				h.mu.Lock()
				closed := h.closed
				h.mu.Unlock()
				if !closed {
					h.step(policy.Grace{})
				}
			})
		}
		h.mu.Unlock()
	case policy.Respawn:
		h.startRespawn(a.Rank, a.Incarnation, a.Epoch, a.Host)
	case policy.StartChildren:
		h.startChildren(a.Start)
	}
}

// notify sends the event msg to the connections to, under h.mu. The event
// is encoded once. The ranks with an event socket get it as datagrams sent
// by one system call, so that all of them are woken before any of them
// runs (one write per connection lets each woken rank preempt the launcher
// before the next write: at 16 ranks on 2 cores the last one learnt about
// 1.5 ms after the first); the others, and any datagram the kernel did not
// take, get it on the control connection, directly when its writer is
// idle.
func (h *head) notify(to []policy.Conn, msg ctlwire.Msg) {
	line := encodeLine(msg)
	var dgram []*ctlConn
	for _, id := range to {
		if c := h.conns[id]; c != nil && c.evAddr != nil {
			dgram = append(dgram, c)
		}
	}
	dline := line
	if h.key != nil && len(dgram) > 0 {
		// A datagram stands alone: it carries its own MAC (a connection
		// proved itself once, at its start).
		dline = h.key.Seal(line)
	}
	sent := h.sendEvents(dgram, dline)
	for _, id := range to {
		if c := h.conns[id]; c != nil && !sent[c] {
			c.sendLine(line)
		}
	}
}

// Output implements hostagent.Reporter.
func (h *head) Output(rank int, stderr bool, line []byte) {
	h.out.rankLine(rank, stderr, line)
	if tr := h.triggers; tr != nil {
		tr.mu.Lock()
		fired := tr.w.Line(line)
		if !tr.armed { // a rank printed before the last one was started
			tr.early, fired = append(tr.early, fired...), nil
		}
		tr.mu.Unlock()
		for _, ev := range fired { // after the line, so that the log reads in order
			h.inject(ev)
		}
	}
}

// armTriggers is called once every rank of the launch has been started
// (the timed plan's time 0): a trigger fires only then, since its rank may
// not have existed before. It executes the triggers that fired earlier.
func (h *head) armTriggers() {
	tr := h.triggers
	if tr == nil {
		return
	}
	tr.mu.Lock()
	tr.armed = true
	early := tr.early
	tr.early = nil
	tr.mu.Unlock()
	for _, ev := range early {
		h.inject(ev)
	}
}

// Exited implements hostagent.Reporter.
// The exit of an adopted spare is its rank's.
func (h *head) Exited(e hostagent.ExitReport) {
	h.mu.Lock()
	if ri, ok := h.adoptedBy[e.Rank]; ok && e.Incarnation == 0 {
		e.Rank, e.Incarnation = ri[0], ri[1]
	}
	h.mu.Unlock()
	h.step(policy.Exited{Exit: policy.Exit(e)})
}

// ExitBells implements hostagent.DyingReporter: the ranks get exit bells
// (package exitbell) under --on-failure continue, where a failure is told
// to the survivors, unless FTMPI_EXIT_BELL=0 in ftmpirun's environment.
func (h *head) ExitBells() bool { return h.exitBells }

// Dying implements hostagent.DyingReporter: a rank's exit bell rang (its
// process began to exit). The Dying of an adopted spare is its rank's.
func (h *head) Dying(rank, inc, pid int) {
	h.mu.Lock()
	if ri, ok := h.adoptedBy[rank]; ok && inc == 0 {
		rank, inc = ri[0], ri[1]
	}
	h.mu.Unlock()
	h.step(policy.Dying{Rank: rank, Incarnation: inc, Pid: pid})
}

// exitCode computes ftmpirun's exit code once every rank is gone.
func (h *head) exitCode() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m.ExitCode()
}

// outcome is what the launch tells the relaunch loop.
func (h *head) outcome() policy.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m.Outcome()
}

// mark is the instant the policy marked with name (zero if none).
func (h *head) mark(name string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.marks[name]
}

// remoteOf is the remote agent of incarnation inc of rank: the agent of
// the host the policy placed it on (even if that agent was just lost: its
// answer is then "gone", never a reading of a local pid), nil for a rank
// of the head's own host. Not under h.mu.
func (h *head) remoteOf(rank, inc int) *remoteAgent {
	if h.hostAgents != nil {
		h.mu.Lock()
		idx := h.m.HostOf(rank)
		h.mu.Unlock()
		if idx >= 0 && idx < len(h.hostAgents) {
			ra, _ := h.hostAgents[idx].(*remoteAgent)
			return ra
		}
	}
	rank, inc = h.agentID(rank, inc)
	for _, a := range h.agentList() {
		if ra, ok := a.(*remoteAgent); ok && ra.runs(rank, inc) {
			return ra
		}
	}
	return nil
}

// hostLost is the loss of the agent of host index host (a remote agent's
// onLost), with the process ids its ranks had there.
func (h *head) hostLost(host int, reason string, pids map[int]int) {
	h.step(policy.HostLost{Host: host, Reason: reason, Pids: pids})
}

// onHost moves spec to host index host: its agent, and the spec with the
// host's variables (a one-host job: the given agent, spec unchanged).
func (h *head) onHost(host int, agent hostagent.Agent, spec hostagent.RankSpec) (hostagent.Agent, hostagent.RankSpec) {
	if h.hostAgents == nil || host < 0 || host >= len(h.hostAgents) {
		return agent, spec
	}
	for _, kv := range h.hostVars[host] {
		name, val, _ := hostagent.CutEnv(kv)
		spec.Env = hostagent.SetEnv(spec.Env, name, val)
	}
	if h.hostPath != nil {
		orig := spec.Path
		for _, p := range h.hostPath {
			if p != "" && p == spec.Path {
				orig = h.program // a preloaded copy on another host
			}
		}
		spec.Path = orig
		if p := h.hostPath[host]; p != "" && orig == h.program {
			spec.Path = p
		}
	}
	return h.hostAgents[host], spec
}

// controlTimeout bounds a control connection's handshake at this head:
// scaled with the job's processes per core of this host (all of them, as
// if every one ran here: a longer bound only keeps a stuck handshake's
// slot a little longer).
func (h *head) controlTimeout() time.Duration { return controlTimeoutFor(h.size, runtime.NumCPU()) }

// serve accepts control connections until the listener is closed (it may
// be called for several listeners). The accept loop is package
// acceptloop's: out of descriptors it retries, a connection that has not
// proved the job's secret within controlTimeout is closed, and so is the
// oldest of too many such connections; a flood of them costs a few log
// lines (h.refused), not one each.
func (h *head) serve(ln net.Listener) {
	h.mu.Lock()
	h.listeners = append(h.listeners, ln)
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		// Every process of the job connects at start, at once: the cap
		// on connections still in their handshake is above the job's
		// size (a 200-rank job on 2 cores lost ranks to a cap of 64).
		pending := acceptloop.CapFor(h.size)
		acceptloop.Serve(ln, acceptloop.Config{Name: "control listener", HandshakeTimeout: h.controlTimeout(), MaxPending: pending, Logf: h.out.logf}, h.accept)
	}()
}

// accept runs the handshake of a control connection (the wireauth
// handshake that proves the job's secret and the process id) and, once
// it succeeded, makes it one of the head's connections. Without a secret
// (tests), the connection is the head's at once and proves itself with
// its first request (readLoop).
func (h *head) accept(p *acceptloop.Pending) {
	nc := p.Conn
	proc := -1 // the process id the connection proved, -1: not authenticated
	if h.key != nil {
		hello, err := acceptControl(nc, h.key, h.controlTimeout())
		if err != nil {
			if !errors.Is(err, net.ErrClosed) { // else the accept loop closed it (deadline, flood)
				h.refused.Printf("refused a control connection%s: %v", remoteAddr(nc), err)
			}
			nc.Close()
			return
		}
		if !p.Authenticated() {
			nc.Close()
			return
		}
		proc = int(hello.From)
		p = nil
	}
	c := newCtlConn(nc)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		nc.Close()
		return
	}
	h.nextConn++
	c.id = h.nextConn
	h.conns[c.id] = c
	h.wg.Add(2)
	h.mu.Unlock()
	go func() { defer h.wg.Done(); c.writeLoop() }()
	defer h.wg.Done()
	h.readLoop(c, proc, p) // in the accept loop's goroutine: p may still be pending
}

// close stops the control server: closes the listener and every
// connection (blocked clients get an error), and waits for its goroutines.
func (h *head) close() {
	h.mu.Lock()
	h.closed = true
	lns := h.listeners
	conns := make([]*ctlConn, 0, len(h.conns))
	for _, c := range h.conns {
		conns = append(conns, c)
	}
	h.closeEvents()
	if h.graceTimer != nil {
		h.graceTimer.Stop()
	}
	h.mu.Unlock()
	for _, ln := range lns {
		ln.Close()
	}
	for _, c := range conns {
		c.close()
	}
	h.flushRelays()
	h.wg.Wait()
	h.refused.Stop()
}

// readLoop reads the requests of control connection c, which proved
// process id proc (-1: not authenticated; then p, still pending in its
// accept loop, is authenticated by its first valid request).
func (h *head) readLoop(c *ctlConn, proc int, p *acceptloop.Pending) {
	defer func() {
		c.close()
		h.mu.Lock()
		delete(h.conns, c.id)
		h.mu.Unlock()
		h.step(policy.Closed{Conn: c.id})
	}()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		line, err := readLine(r)
		if errors.Is(err, errLongLine) {
			h.out.logf("closed the control connection of process %d: %v", proc, err)
			return
		}
		if err != nil {
			return // the rank is gone (or the launcher closes)
		}
		m, err := decodeRequest(line, proc)
		if err != nil {
			h.out.logf("closed the control connection of process %d: %v", proc, err)
			c.send(ctlwire.Msg{Op: ctlwire.OpError, Error: err.Error()})
			return
		}
		if p != nil {
			if !p.Authenticated() {
				return // closed by the accept loop
			}
			p = nil
		}
		h.request(c, m)
	}
}

// request handles a decoded request of control connection c (a socket, or
// a connection an agent relays): the name service and hang reports here,
// everything else through the policy.
func (h *head) request(c *ctlConn, m ctlwire.Msg) {
	switch m.Op {
	case ctlwire.OpName:
		c.send(h.names.Serve(m))
		return
	case ctlwire.OpHangDone:
		h.hangDone(m.Kind)
		c.send(ctlwire.Msg{Op: ctlwire.OpHangDone, ID: m.ID})
		return
	case ctlwire.OpHello:
		if c.link == nil { // a relayed rank's event socket is on its host, not here
			a := eventAddr(m.KV[boot.HelloEventAddr]) // before the hello is answered: events may follow at once
			h.mu.Lock()
			c.evAddr = a
			h.mu.Unlock()
		}
	}
	h.step(requestEvent(c.id, m))
}

// requestEvent is the policy event of request m on connection id.
func requestEvent(id policy.Conn, m ctlwire.Msg) policy.Event {
	switch m.Op {
	case ctlwire.OpHello:
		return policy.Hello{Conn: id, ID: m.ID, Job: m.Job, Rank: m.Rank, Incarnation: m.Incarnation, Pid: m.Pid}
	case ctlwire.OpFence:
		return policy.Fence{Conn: id, ID: m.ID, KV: m.KV, Facts: factsOf(m)}
	case ctlwire.OpEndpoints:
		return policy.Endpoints{Conn: id, ID: m.ID, Epoch: m.Epoch, Procs: m.Procs}
	case ctlwire.OpFinalize:
		return policy.Finalize{Conn: id, ID: m.ID}
	case ctlwire.OpAbort:
		return policy.Abort{Conn: id, ID: m.ID, Code: m.Code, Reason: m.Reason, Fatal: m.Fatal}
	case ctlwire.OpReinit:
		return policy.ReinitActive{Conn: id, ID: m.ID, Kind: m.Kind}
	case ctlwire.OpRejoin:
		return policy.Rejoin{Conn: id, ID: m.ID, Epoch: m.Epoch, KV: m.KV, Facts: factsOf(m)}
	case ctlwire.OpSpawn:
		return policy.Spawn{Conn: id, ID: m.ID, Request: m.Reason}
	case ctlwire.OpSuspect:
		return policy.Suspect{Conn: id, ID: m.ID, Rank: m.Rank, Incarnation: m.Incarnation, Reason: m.Reason}
	case ctlwire.OpSpare:
		return policy.SpareTaken{Conn: id, ID: m.ID}
	default:
		return policy.Unknown{Conn: id, ID: m.ID, Op: m.Op}
	}
}

// factsOf is what a fence or rejoin request tells of a rank that reads
// endpoints on demand (ctlwire.FenceLayout).
func factsOf(m ctlwire.Msg) policy.Facts {
	if m.Kind != ctlwire.FenceLayout {
		return policy.Facts{}
	}
	return policy.Facts{Lazy: true, Host: m.Host, Cores: m.Cores, Inc: m.Incarnation}
}

// inject executes one injection event of the plan.
func (h *head) inject(ev inject.Event) {
	h.step(policy.Inject{Rank: ev.Rank, Signal: ev.Signal, At: ev.At.Round(time.Microsecond), On: ev.On})
}

// startInjector executes plan in the background, times measured from now,
// until the job tears down or every rank has exited. The returned stop
// cancels what is left and waits for the goroutine.
func (h *head) startInjector(plan []inject.Event) (stop func()) {
	return inject.Play(plan, func(ev inject.Event) bool {
		select {
		case <-h.tearing:
			return false
		case <-h.allExited:
			return false
		default:
		}
		h.inject(ev)
		return true
	})
}

// enableRespawn turns on reinit mode's respawning through agent, with the
// specs the ranks were first started with.
func (h *head) enableRespawn(agent hostagent.Agent, specs []hostagent.RankSpec, maxRestarts int) {
	h.mu.Lock()
	h.respawn = agent
	h.specs = specs
	h.m.EnableRespawn(maxRestarts)
	h.mu.Unlock()
}

// startRespawn starts incarnation inc of rank r for Reinit epoch epoch on
// host index host.
func (h *head) startRespawn(r, inc, epoch, host int) {
	h.mu.Lock()
	agent := h.respawn
	spec := h.specs[r]
	h.mu.Unlock()
	agent, spec = h.onHost(host, agent, spec)
	spec.Incarnation = inc
	spec.Env = hostagent.SetEnv(spec.Env, boot.EnvIncarnation, strconv.Itoa(inc))
	spec.Env = hostagent.SetEnv(spec.Env, boot.EnvEpoch, strconv.Itoa(epoch))
	h.wg.Add(1)
	go func() { // the agent reports start failures through Exited
		defer h.wg.Done()
		agent.Start([]hostagent.RankSpec{spec})
		if h.tearingDown() {
			h.signalRank(r, syscall.SIGKILL) // the teardown may have missed it
		}
	}()
}

// enableSpawn lets ranks spawn processes through agent, started like tmpl
// (the program, its environment) with their own identity.
func (h *head) enableSpawn(agent hostagent.Agent, tmpl hostagent.RankSpec, cacheDir string) {
	h.mu.Lock()
	h.spawnAgent = agent
	h.spawnTmpl = tmpl
	h.cacheDir = cacheDir
	h.m.EnableSpawn()
	h.mu.Unlock()
}

// startChildren resolves the program of a spawn and starts its processes
// in the background.
func (h *head) startChildren(st *policy.ChildrenStart) {
	h.mu.Lock()
	tmpl, agent, cacheDir := h.spawnTmpl, h.spawnAgent, h.cacheDir
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		base, k := st.Base, st.K
		apps := st.Apps // MPI_Comm_spawn_multiple's commands; else the one command
		if len(apps) == 0 {
			apps = []ctlwire.SpawnApp{{Command: st.Command, Args: st.Args, MaxProcs: k, Dir: st.Dir}}
		}
		paths := make([]string, len(apps))
		var err error
		for a, app := range apps {
			paths[a] = tmpl.Path
			if app.Command != "" && err == nil {
				paths[a], err = resolveProgram(app.Command, cacheDir)
			}
		}
		specs := make([]hostagent.RankSpec, k)
		a, left := 0, apps[0].MaxProcs // the command of child i, and its children still to number
		for i := range specs {
			for left == 0 && a+1 < len(apps) {
				a++
				left = apps[a].MaxProcs
			}
			left--
			dir := apps[a].Dir // MPI_Comm_spawn's "wdir"; else the job's
			if dir == "" {
				dir = tmpl.Dir
			}
			env := tmpl.Env
			for _, kv := range [][2]string{
				{boot.EnvRank, strconv.Itoa(i)}, {boot.EnvSize, strconv.Itoa(k)},
				{boot.EnvProc, strconv.Itoa(base + i)}, {boot.EnvUniverse, strconv.Itoa(base + k)},
				{boot.EnvParent, st.Parent}, {boot.EnvIncarnation, "0"}, {boot.EnvEpoch, "0"},
				{boot.EnvAppNum, strconv.Itoa(a)},
			} {
				env = hostagent.SetEnv(env, kv[0], kv[1])
			}
			spares := 0
			if st.Spares {
				spares = k // a repair's spawned spares: every one waits to be taken
			}
			env = hostagent.SetEnv(env, boot.EnvSpares, strconv.Itoa(spares))
			specs[i] = hostagent.RankSpec{Rank: base + i, Path: paths[a], Args: apps[a].Args, Env: env, Auth: tmpl.Auth, Dir: dir}
		}
		if err != nil {
			for _, s := range specs {
				h.Exited(hostagent.ExitReport{Rank: s.Rank, StartErr: err})
			}
			return
		}
		if h.hostAgents != nil && len(st.Hosts) == len(specs) {
			// Each child on its host (one with a free slot), one start per host.
			byHost := map[hostagent.Agent][]hostagent.RankSpec{}
			var order []hostagent.Agent
			for i, s := range specs {
				a, s := h.onHost(st.Hosts[i], agent, s)
				if byHost[a] == nil {
					order = append(order, a)
				}
				byHost[a] = append(byHost[a], s)
			}
			var starts sync.WaitGroup
			for _, a := range order {
				starts.Add(1)
				go func(a hostagent.Agent, ss []hostagent.RankSpec) { defer starts.Done(); a.Start(ss) }(a, byHost[a])
			}
			starts.Wait()
		} else {
			agent.Start(specs)
		}
		if h.tearingDown() {
			for _, s := range specs {
				h.signalRank(s.Rank, syscall.SIGKILL)
			}
		}
	}()
}

// timeout tears the job down for --timeout (after: the limit to report).
func (h *head) timeout(after time.Duration) { h.step(policy.Timeout{After: after}) }

// dumpNow reports, once, that the timeout's stack dump is due.
func (h *head) dumpNow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.dump
	h.dump = false
	return d
}
