package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/inject"
)

// Failure policies (Config.OnFailure).
const (
	OnFailureAbort    = "abort"
	OnFailureContinue = "continue"
	OnFailureReinit   = "reinit" // respawn the failed rank; every rank rolls back into MPI_Reinit (seed 000)
)

// Kinds of job teardown.
type causeKind int

const (
	causeNone    causeKind = iota
	causeAbort             // a rank called Abort
	causeFailure           // a rank failed in abort mode
	causeStart             // a rank could not be started
	causeTimeout           // --timeout expired
	causeSignal            // ftmpirun got SIGINT/SIGTERM
)

type cause struct {
	kind causeKind
	code int
}

type rankState struct {
	incarnation int
	pid         int
	connected   bool // a Client said hello: the rank is initialized
	finalized   bool // the rank called Finalize
	finReturned bool // the finalize fence completed for the rank (Finalize returned)
	gone        bool // the agent reported the process gone
	failed      bool // died after connecting and before finalizing
	exit        ExitReport
	fences      int // number of fences the rank has entered
	conn        *ctlConn
	killedBy    string // why the launcher SIGKILLed the rank (injection, suspicion); "" if it did not
	inReinit    bool   // the rank is inside MPI_Reinit (reinit mode)
	leftReinit  bool   // the rank returned from MPI_Reinit: a failure now cannot be recovered
	rejoined    int    // the last Reinit epoch the rank rejoined (0: the initial one)
	cancelled   bool   // a spawned process killed because its spawn failed: its death is no failure
	spawning    bool   // a spawned process whose spawn has not completed: its death fails the spawn, not the job
}

type waiter struct {
	c  *ctlConn
	id uint64
}

// head is the control server and the job's bookkeeping: key-value store and
// fences, finalize fence, abort, failure policy, exit code and output. It
// does not know how ranks are started: agents report to it (it is their
// Reporter) and it kills through them. Every rank talks to it with the
// boot protocol, directly or (later) relayed by its host's agent.
type head struct {
	job       string
	size      int
	onFailure string
	out       *output
	verbose   bool

	agentsMu sync.Mutex
	agents   []Agent

	mu         sync.Mutex
	ranks      []rankState
	kv         map[string]string
	fenceWait  map[int][]waiter
	finWait    []waiter
	conns      map[*ctlConn]struct{}
	closed     bool
	cause      cause
	lastAbort  *int
	anyFailure bool
	exited     int
	allExited  chan struct{}
	tearing    chan struct{} // closed when teardown starts
	wg         sync.WaitGroup
	listener   net.Listener

	// Reinit mode (--on-failure reinit): see reinit.go.
	respawn     Agent      // agent that restarts failed ranks
	specs       []RankSpec // how each rank was started
	maxRestarts int
	restarts    int
	epoch       int               // current Reinit epoch (0 until the first failure)
	epochKV     map[string]string // endpoints published for the current epoch
	rejoinWait  []waiter
	epochStart  time.Time // when the current epoch began (the failure)

	// Dynamic processes: see spawn.go.
	spawnAgent Agent
	spawnTmpl  RankSpec
	cacheDir   string
	spawns     map[string]*spawnOp
}

func newHead(job string, size int, onFailure string, out *output, verbose bool) *head {
	return &head{
		job:       job,
		size:      size,
		onFailure: onFailure,
		out:       out,
		verbose:   verbose,
		ranks:     make([]rankState, size),
		kv:        make(map[string]string),
		fenceWait: make(map[int][]waiter),
		conns:     make(map[*ctlConn]struct{}),
		allExited: make(chan struct{}),
		tearing:   make(chan struct{}),
	}
}

func (h *head) addAgent(a Agent) {
	h.agentsMu.Lock()
	h.agents = append(h.agents, a)
	h.agentsMu.Unlock()
}

func (h *head) signalAll(sig syscall.Signal) {
	h.agentsMu.Lock()
	agents := append([]Agent(nil), h.agents...)
	h.agentsMu.Unlock()
	for _, a := range agents {
		a.SignalAll(sig)
	}
}

// teardown records the first cause of a teardown. It reports whether this
// call started it. The caller kills the ranks.
func (h *head) teardownLocked(c cause) bool {
	if h.cause.kind != causeNone {
		return false
	}
	h.cause = c
	close(h.tearing)
	return true
}

// teardown starts killing the job with SIGKILL unless a teardown is already under way.
func (h *head) teardown(c cause) {
	h.mu.Lock()
	started := h.teardownLocked(c)
	h.mu.Unlock()
	if started {
		h.signalAll(syscall.SIGKILL)
	}
}

func (h *head) tearingDown() bool {
	select {
	case <-h.tearing:
		return true
	default:
		return false
	}
}

// Output implements Reporter.
func (h *head) Output(rank int, stderr bool, line []byte) {
	h.out.rankLine(rank, stderr, line)
}

// Exited implements Reporter.
func (h *head) Exited(e ExitReport) {
	killAll, respawned := false, false
	h.mu.Lock()
	rs := &h.ranks[e.Rank]
	rs.gone = true
	rs.exit = e
	if e.Pid != 0 {
		rs.pid = e.Pid
	}
	tearing := h.cause.kind != causeNone
	switch {
	case rs.cancelled || rs.spawning:
		if h.verbose {
			h.out.logf("process %d of a failed spawn %s", e.Rank, e)
		}
	case e.StartErr != nil && !tearing:
		h.out.logf("rank %d could not be started: %v", e.Rank, e.StartErr)
		killAll = h.teardownLocked(cause{kind: causeStart, code: 1})
	case h.isFailureLocked(rs, e) && !tearing:
		rs.failed = true
		h.anyFailure = true
		how := fmt.Sprintf("rank %d (pid %d) %s", e.Rank, e.Pid, e)
		if e.Signal == 0 {
			how += " before MPI finalize"
		} else if e.Signal == syscall.SIGKILL && rs.killedBy != "" {
			how += ", " + rs.killedBy
		}
		if h.onFailure == OnFailureReinit {
			var ok bool
			if respawned, ok = h.reinitLocked(e, how); !ok {
				killAll = h.teardownLocked(cause{kind: causeFailure, code: failureCode(e)})
			}
		} else if h.onFailure == OnFailureAbort {
			h.out.logf("%s", how)
			killAll = h.teardownLocked(cause{kind: causeFailure, code: failureCode(e)})
		} else {
			h.out.logf("%s; continuing (--on-failure continue)", how)
			ev := h.failedEventLocked(e.Rank)
			for r := range h.ranks {
				if o := &h.ranks[r]; r != e.Rank && !o.gone && o.conn != nil {
					o.conn.send(ev)
				}
			}
		}
	default:
		if h.verbose {
			h.out.logf("rank %d (pid %d) %s", e.Rank, e.Pid, e)
		}
		// A rank killed after calling Finalize is not a failure of the job,
		// but the survivors must still learn that it is gone: one of them
		// may be waiting on it (no call blocks forever).
		if e.Signal != 0 && !tearing && h.onFailure != OnFailureAbort && e.StartErr == nil {
			ev := h.failedEventLocked(e.Rank)
			for r := range h.ranks {
				if o := &h.ranks[r]; r != e.Rank && !o.gone && o.conn != nil {
					o.conn.send(ev)
				}
			}
		}
	}
	h.checkFencesLocked()
	h.checkFinalizeLocked()
	h.checkRejoinLocked()
	h.checkSpawnsLocked()
	if !respawned {
		h.exited++
	}
	if h.exited == h.size {
		close(h.allExited)
	}
	h.mu.Unlock()
	if killAll {
		h.signalAll(syscall.SIGKILL)
	}
}

// failureCode is the exit code of a job ended by the failure e: the
// process's code, and 1 for a clean exit before finalizing.
func failureCode(e ExitReport) int {
	if code := e.Code(); code != 0 || e.Signal != 0 {
		return code
	}
	return 1
}

// isFailureLocked tells whether the death e of a rank is a failure: the
// rank connected (initialized) and had not finalized, or the launcher
// itself killed it (an injected kill or a declared failure) before it
// finalized, even if it had not connected yet.
func (h *head) isFailureLocked(rs *rankState, e ExitReport) bool {
	if rs.finalized || e.StartErr != nil {
		return false
	}
	if h.onFailure == OnFailureReinit && h.respawn != nil {
		// Every process is expected to rejoin its epoch: a death before it
		// connected (a respawned one killed early, say) is a failure too.
		return true
	}
	return rs.connected || (rs.killedBy != "" && e.Signal == syscall.SIGKILL)
}

// failedEventLocked is the failed Event of rank r for the survivors.
func (h *head) failedEventLocked(r int) boot.Msg {
	rs := &h.ranks[r]
	how := fmt.Sprintf("rank %d (pid %d) %s", r, rs.exit.Pid, rs.exit)
	if rs.exit.Signal == syscall.SIGKILL && rs.killedBy != "" {
		how += ", " + rs.killedBy
	}
	return boot.Msg{Op: boot.OpEvent, Kind: boot.EventFailed, Rank: r, Incarnation: rs.exit.Incarnation, Reason: how}
}

// checkFencesLocked completes every fence all ranks have entered or left.
func (h *head) checkFencesLocked() {
	if h.cause.kind != causeNone {
		return // the job is being killed; nobody returns from a fence any more
	}
	for seq, ws := range h.fenceWait {
		var failed []int
		done := true
		for r := range h.ranks {
			rs := &h.ranks[r]
			if rs.fences >= seq {
				continue
			}
			if !rs.gone {
				done = false
				break
			}
			failed = append(failed, r)
		}
		if !done {
			continue
		}
		kv := make(map[string]string, len(h.kv))
		for k, v := range h.kv {
			kv[k] = v
		}
		for _, w := range ws {
			w.c.send(boot.Msg{Op: boot.OpFence, ID: w.id, KV: kv, Failed: failed})
		}
		delete(h.fenceWait, seq)
	}
}

// checkFinalizeLocked completes the finalize fence once every rank has
// finalized or is gone.
func (h *head) checkFinalizeLocked() {
	if len(h.finWait) == 0 || h.cause.kind != causeNone {
		return
	}
	for r := range h.ranks {
		if rs := &h.ranks[r]; !rs.finalized && !rs.gone {
			return
		}
	}
	for _, w := range h.finWait {
		if w.c.rank >= 0 {
			h.ranks[w.c.rank].finReturned = true
		}
		w.c.send(boot.Msg{Op: boot.OpFinalize, ID: w.id})
	}
	h.finWait = nil
}

// exitCode computes ftmpirun's exit code once every rank is gone.
func (h *head) exitCode() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch h.cause.kind {
	case causeFailure, causeStart, causeTimeout, causeSignal:
		return h.cause.code
	case causeAbort:
		if !(h.onFailure == OnFailureContinue && h.anyFailure) {
			return h.cause.code
		}
	}
	if h.onFailure == OnFailureContinue && h.anyFailure {
		// MPI 17.5.2, advice to implementors: the lowest rank that exits
		// after returning from Finalize, else the last abort, else rank 0.
		for r := range h.ranks {
			if rs := &h.ranks[r]; rs.finReturned && rs.gone {
				return rs.exit.Code()
			}
		}
		if h.lastAbort != nil {
			return *h.lastAbort
		}
	}
	return h.ranks[0].exit.Code()
}

// abortCode maps an MPI_Abort error code to an exit code: the low 8 bits,
// except that 0 becomes 1 so that an aborted job never looks successful.
func abortCode(code int) int {
	c := code & 0xff
	if c == 0 {
		c = 1
	}
	return c
}

// serve accepts control connections until the listener is closed.
func (h *head) serve(ln net.Listener) {
	h.mu.Lock()
	h.listener = ln
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			c := newCtlConn(nc)
			h.mu.Lock()
			if h.closed {
				h.mu.Unlock()
				nc.Close()
				continue
			}
			h.conns[c] = struct{}{}
			h.mu.Unlock()
			h.wg.Add(2)
			go func() { defer h.wg.Done(); c.writeLoop() }()
			go func() { defer h.wg.Done(); h.readLoop(c) }()
		}
	}()
}

// close stops the control server: closes the listener and every
// connection (blocked clients get an error), and waits for its goroutines.
func (h *head) close() {
	h.mu.Lock()
	h.closed = true
	ln := h.listener
	conns := make([]*ctlConn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.close()
	}
	h.wg.Wait()
}

func (h *head) readLoop(c *ctlConn) {
	defer func() {
		c.close()
		h.mu.Lock()
		delete(h.conns, c)
		if c.rank >= 0 && h.ranks[c.rank].conn == c {
			h.ranks[c.rank].conn = nil
		}
		h.mu.Unlock()
	}()
	r := bufio.NewReader(c.nc)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m boot.Msg
		if err := json.Unmarshal(line, &m); err != nil {
			c.send(boot.Msg{Op: boot.OpError, Error: "malformed message"})
			return
		}
		if !h.handle(c, m) {
			return
		}
	}
}

// handle processes one request. It returns false to drop the connection.
func (h *head) handle(c *ctlConn, m boot.Msg) bool {
	fail := func(format string, args ...any) bool {
		c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: fmt.Sprintf(format, args...)})
		return false
	}
	if m.ID == 0 {
		return fail("request without id")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c.rank < 0 && m.Op != boot.OpHello {
		return fail("first message must be hello")
	}
	switch m.Op {
	case boot.OpHello:
		if c.rank >= 0 {
			return fail("duplicate hello")
		}
		if m.Job != h.job {
			return fail("job %q is not this launcher's job", m.Job)
		}
		if m.Rank < 0 || m.Rank >= h.size {
			return fail("rank %d out of range", m.Rank)
		}
		rs := &h.ranks[m.Rank]
		if rs.connected {
			return fail("rank %d is already connected", m.Rank)
		}
		if rs.gone {
			return fail("rank %d is gone", m.Rank)
		}
		rs.connected = true
		rs.incarnation = m.Incarnation
		if m.Pid != 0 {
			rs.pid = m.Pid
		}
		rs.conn = c
		c.rank = m.Rank
		c.send(boot.Msg{Op: boot.OpHello, ID: m.ID, Rank: m.Rank})
		// Failures that happened before this rank connected (an early
		// injected kill, say): every survivor learns of every failure.
		for r := range h.ranks {
			if h.ranks[r].failed {
				c.send(h.failedEventLocked(r))
			}
		}
		// Likewise a Reinit epoch that began before this rank connected.
		if h.epoch > 0 && rs.rejoined < h.epoch {
			c.send(boot.Msg{Op: boot.OpEvent, Kind: boot.EventReinit, Rank: -1, Epoch: h.epoch, Reason: "a rank failed before this one connected"})
		}
		return true
	case boot.OpFence:
		rs := &h.ranks[c.rank]
		for k, v := range m.KV {
			h.kv[k] = v
		}
		rs.fences++
		h.fenceWait[rs.fences] = append(h.fenceWait[rs.fences], waiter{c, m.ID})
		h.checkFencesLocked()
		h.checkSpawnsLocked() // a spawned process initialised
		return true
	case boot.OpFinalize:
		h.ranks[c.rank].finalized = true
		h.finWait = append(h.finWait, waiter{c, m.ID})
		h.checkFinalizeLocked()
		return true
	case boot.OpAbort:
		code := abortCode(m.Code)
		h.lastAbort = &code
		c.send(boot.Msg{Op: boot.OpAbort, ID: m.ID})
		if h.teardownLocked(cause{kind: causeAbort, code: code}) {
			h.out.logf("rank %d called abort with code %d: %s", c.rank, m.Code, m.Reason)
			h.wg.Add(1)
			go func() { defer h.wg.Done(); h.signalAll(syscall.SIGKILL) }() // not under h.mu: agents call Exited
		}
		return true
	case boot.OpReinit:
		h.reinitActiveLocked(c, m)
		return true
	case boot.OpRejoin:
		h.rejoinLocked(c, m)
		return true
	case boot.OpSpawn:
		h.spawnLocked(c, m)
		return true
	case boot.OpSuspect:
		if m.Rank < 0 || m.Rank >= h.size {
			c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: fmt.Sprintf("suspect: rank %d out of range [0, %d)", m.Rank, h.size)})
			return true
		}
		if m.Rank == c.rank {
			c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: fmt.Sprintf("suspect: rank %d suspects itself", m.Rank)})
			return true
		}
		if m.Incarnation < h.ranks[m.Rank].incarnation {
			if h.verbose {
				h.out.logf("ignoring rank %d's suspicion of rank %d incarnation %d: it was respawned (incarnation %d)", c.rank, m.Rank, m.Incarnation, h.ranks[m.Rank].incarnation)
			}
			c.send(boot.Msg{Op: boot.OpSuspect, ID: m.ID})
			return true
		}
		reason := fmt.Sprintf("declared failed by rank %d", c.rank)
		if m.Reason != "" {
			reason += ": " + m.Reason
		}
		// A suspicion is a kill order (fail-stop), but the launcher can see
		// what a heartbeat cannot: a process that is running or sleeping is
		// alive and merely starved of CPU (an oversubscribed host), while a
		// stopped one is hung. Only the latter is killed.
		// A rank the launcher already SIGKILLed (an injection) is dying, even
		// if /proc still shows it running for a moment.
		if pid := h.ranks[m.Rank].pid; pid > 0 && !h.ranks[m.Rank].gone && h.ranks[m.Rank].killedBy == "" {
			if state, alive := procState(pid); alive {
				h.out.logf("rank %d suspected by rank %d (%s) but its process %d is %s: not killed", m.Rank, c.rank, m.Reason, pid, state)
				c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: fmt.Sprintf("suspect: rank %d is alive (process %d %s); not killed", m.Rank, pid, state)})
				return true
			}
		}
		kill := h.declareFailedLocked(m.Rank, reason)
		c.send(boot.Msg{Op: boot.OpSuspect, ID: m.ID})
		if kill {
			h.wg.Add(1)
			inc := h.ranks[m.Rank].incarnation
			go func() { defer h.wg.Done(); h.signalIncarnation(m.Rank, inc, syscall.SIGKILL) }() // not under h.mu
		}
		return true
	default:
		c.send(boot.Msg{Op: boot.OpError, ID: m.ID, Error: "unknown op " + strconv.Quote(m.Op)})
		return true
	}
}

// signalRank sends sig to rank through whichever agent runs it (agents
// ignore ranks they do not run). Not to be called under h.mu.
func (h *head) signalRank(rank int, sig syscall.Signal) {
	h.agentsMu.Lock()
	agents := append([]Agent(nil), h.agents...)
	h.agentsMu.Unlock()
	for _, a := range agents {
		a.Signal(rank, sig)
	}
}

// signalIncarnation sends sig to incarnation inc of rank only (not under
// h.mu).
func (h *head) signalIncarnation(rank, inc int, sig syscall.Signal) {
	h.agentsMu.Lock()
	agents := append([]Agent(nil), h.agents...)
	h.agentsMu.Unlock()
	for _, a := range agents {
		a.SignalIncarnation(rank, inc, sig)
	}
}

// declareFailed enforces fail-stop: it SIGKILLs rank and makes its death a
// failure (reason is added to the failure message and Event), even if the
// rank had not connected yet. It does nothing if the rank is gone, has
// finalized, or the job is being torn down. It reports whether it killed.
func (h *head) declareFailed(rank int, reason string) bool {
	h.mu.Lock()
	kill := h.declareFailedLocked(rank, reason)
	inc := h.ranks[rank].incarnation
	h.mu.Unlock()
	if kill {
		h.signalIncarnation(rank, inc, syscall.SIGKILL)
	}
	return kill
}

// declareFailedLocked does declareFailed's bookkeeping; the caller sends
// the SIGKILL (outside h.mu) if it returns true.
func (h *head) declareFailedLocked(rank int, reason string) bool {
	rs := &h.ranks[rank]
	// A rank that called Finalize is still killed when it is suspected (it
	// may be stuck in the finalize fence, stopped): its death then counts
	// as a normal end, not a failure.
	if h.cause.kind != causeNone || rs.gone {
		if h.verbose {
			h.out.logf("not killing rank %d (%s): it is gone or the job is ending", rank, reason)
		}
		return false
	}
	if rs.killedBy != "" {
		// Already killed (an injection, an earlier suspicion): it is dying.
		if h.verbose {
			h.out.logf("rank %d %s; already killed (%s)", rank, reason, rs.killedBy)
		}
		return true
	}
	rs.killedBy = reason
	h.out.logf("killing rank %d: %s", rank, reason)
	return true
}

// inject executes one injection event (time 0 is t0). Events for ranks
// that are gone, and events during teardown, are skipped silently (a line
// with -v).
func (h *head) inject(ev inject.Event) {
	h.mu.Lock()
	rs := &h.ranks[ev.Rank]
	if h.cause.kind != causeNone || rs.gone {
		if h.verbose {
			h.out.logf("injection %v skipped: rank %d is gone or the job is ending", ev, ev.Rank)
		}
		h.mu.Unlock()
		return
	}
	at := ev.At.Round(time.Microsecond)
	if ev.Signal == syscall.SIGKILL && rs.killedBy == "" {
		rs.killedBy = fmt.Sprintf("injected kill at %v", at)
	}
	h.out.logf("injected %s of rank %d at %v", ev.Verb(), ev.Rank, at)
	inc := rs.incarnation
	h.mu.Unlock()
	h.signalIncarnation(ev.Rank, inc, ev.Signal)
}

// startInjector executes plan in the background, times measured from now.
// The returned stop cancels what is left and waits for the goroutine.
func (h *head) startInjector(plan []inject.Event) (stop func()) {
	if len(plan) == 0 {
		return func() {}
	}
	t0 := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for _, ev := range plan {
			timer.Reset(time.Until(t0.Add(ev.At)))
			select {
			case <-timer.C:
				h.inject(ev)
			case <-done:
				return
			case <-h.tearing:
				return
			case <-h.allExited:
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// ctlConn is one control connection. Sends never block: messages are
// queued and written by the connection's writer goroutine.
type ctlConn struct {
	nc   net.Conn
	rank int // -1 until hello

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []boot.Msg
	closed bool
}

func newCtlConn(nc net.Conn) *ctlConn {
	c := &ctlConn{nc: nc, rank: -1}
	c.cond = sync.NewCond(&c.mu)
	return c
}

func (c *ctlConn) send(m boot.Msg) {
	c.mu.Lock()
	if !c.closed {
		c.queue = append(c.queue, m)
		c.cond.Signal()
	}
	c.mu.Unlock()
}

func (c *ctlConn) writeLoop() {
	w := bufio.NewWriter(c.nc)
	enc := json.NewEncoder(w)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		q := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, m := range q {
			if enc.Encode(m) != nil {
				c.close()
				return
			}
		}
		if w.Flush() != nil {
			c.close()
			return
		}
	}
}

// close closes the connection; queued messages not yet written are dropped.
func (c *ctlConn) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.nc.Close()
		c.cond.Broadcast()
	}
	c.mu.Unlock()
}

// procState reads the scheduler state of a local process: alive is true
// for a running, sleeping or disk-waiting process, false for a stopped,
// traced, zombie or vanished one.
func procState(pid int) (state string, alive bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone", false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "unknown", false
	}
	switch b[i+2] {
	case 'R':
		return "running", true
	case 'S', 'I':
		return "sleeping", true
	case 'D':
		return "waiting on disk", true
	case 'T', 't':
		return "stopped", false
	case 'Z', 'X':
		return "dead", false
	}
	return "state " + string(b[i+2]), false
}
