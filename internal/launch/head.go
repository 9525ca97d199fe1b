package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

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
	killedBy    string         // why the launcher SIGKILLed the rank (injection, suspicion); "" if it did not
	inReinit    bool           // the rank is inside MPI_Reinit (reinit mode)
	leftReinit  bool           // the rank returned from MPI_Reinit: a failure now cannot be recovered
	rejoined    int            // the last Reinit epoch the rank rejoined (0: the initial one)
	cancelled   bool           // a spawned process killed because its spawn failed: its death is no failure
	notified    bool           // the survivors were sent its failed Event (before its death was reaped, when a suspicion found it dead or stopped)
	evAddr      *eventSockaddr // the process's event socket (boot.HelloEventAddr), nil if none
	spawning    bool           // a spawned process whose spawn has not completed: its death fails the spawn, not the job
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
	evFD       int  // datagram socket for events to the ranks' event sockets (-1: unavailable)
	evOpened   bool // evFD was opened (or its opening failed)

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
			if !rs.notified { // else a suspicion already told everyone
				h.notifyFailedLocked(e.Rank)
			}
		}
	default:
		if h.verbose {
			h.out.logf("rank %d (pid %d) %s", e.Rank, e.Pid, e)
		}
		// A rank killed after calling Finalize is not a failure of the job,
		// but the survivors must still learn that it is gone: one of them
		// may be waiting on it (no call blocks forever).
		if e.Signal != 0 && !tearing && h.onFailure != OnFailureAbort && e.StartErr == nil && !rs.notified {
			h.notifyFailedLocked(e.Rank)
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

// failedEventLocked is the failed Event of rank r for the survivors: how
// it died, or, before its death was reaped (a suspicion found it dead or
// stopped, and it is being killed), why it was killed.
func (h *head) failedEventLocked(r int) boot.Msg {
	rs := &h.ranks[r]
	if !rs.gone {
		how := fmt.Sprintf("rank %d (pid %d) killed: %s", r, rs.pid, rs.killedBy)
		return boot.Msg{Op: boot.OpEvent, Kind: boot.EventFailed, Rank: r, Incarnation: rs.incarnation, Reason: how}
	}
	how := fmt.Sprintf("rank %d (pid %d) %s", r, rs.exit.Pid, rs.exit)
	if rs.exit.Signal == syscall.SIGKILL && rs.killedBy != "" {
		how += ", " + rs.killedBy
	}
	return boot.Msg{Op: boot.OpEvent, Kind: boot.EventFailed, Rank: r, Incarnation: rs.exit.Incarnation, Reason: how}
}

// notifyFailedLocked sends the failed Event of rank r to every other
// connected rank that is not gone. The Event is encoded once. The ranks
// with an event socket get it as datagrams sent by one system call, so
// that all of them are woken before any of them runs (one write per
// connection lets each woken rank preempt the launcher before the next
// write: at 16 ranks on 2 cores the last one learnt about 1.5 ms after
// the first); the others, and any datagram the kernel did not take, get it
// on the control connection, directly when its writer is idle.
func (h *head) notifyFailedLocked(r int) {
	h.ranks[r].notified = true
	line := encodeLine(h.failedEventLocked(r))
	var dgram []int
	for q := range h.ranks {
		if o := &h.ranks[q]; q != r && !o.gone && o.conn != nil && o.evAddr != nil {
			dgram = append(dgram, q)
		}
	}
	sent := h.sendEventsLocked(dgram, line)
	for q := range h.ranks {
		if o := &h.ranks[q]; q != r && !o.gone && o.conn != nil && !sent[q] {
			o.conn.sendLine(line)
		}
	}
}

// eventSockaddr is the address of a rank's event socket.
type eventSockaddr struct {
	sa  unix.RawSockaddrUnix
	len uint32 // address length for sendmsg
}

// eventAddr parses the address of a rank's event socket (the path of a
// unix datagram socket), nil if there is none or it is not one.
func eventAddr(name string) *eventSockaddr {
	a := &eventSockaddr{sa: unix.RawSockaddrUnix{Family: unix.AF_UNIX}}
	if len(name) < 2 || name[0] != '/' || len(name) >= len(a.sa.Path) || strings.IndexByte(name, 0) >= 0 {
		return nil
	}
	for i := 0; i < len(name); i++ {
		a.sa.Path[i] = int8(name[i])
	}
	a.len = uint32(unsafe.Offsetof(a.sa.Path)) + uint32(len(name)) + 1 // with the terminating NUL
	return a
}

// sendEventsLocked sends line as a datagram to the event socket of each
// rank in ranks, as many as possible in one sendmmsg, and returns which
// ones the kernel took. It never waits (a full socket is skipped).
func (h *head) sendEventsLocked(ranks []int, line []byte) map[int]bool {
	sent := make(map[int]bool, len(ranks))
	if len(ranks) == 0 || len(line) == 0 {
		return sent
	}
	if !h.evOpened {
		h.evOpened = true
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil || h.closed {
			if err == nil {
				unix.Close(fd)
			}
			fd = -1
		}
		h.evFD = fd
	}
	if h.evFD < 0 {
		return sent
	}
	iov := &unix.Iovec{Base: &line[0]}
	iov.SetLen(len(line))
	msgs := make([]unix.Mmsghdr, len(ranks))
	for i, q := range ranks {
		a := h.ranks[q].evAddr
		msgs[i].Hdr.Name = (*byte)(unsafe.Pointer(&a.sa))
		msgs[i].Hdr.Namelen = a.len
		msgs[i].Hdr.Iov = iov
		msgs[i].Hdr.SetIovlen(1)
	}
	for i := 0; i < len(msgs); {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(h.evFD), uintptr(unsafe.Pointer(&msgs[i])), uintptr(len(msgs)-i), unix.MSG_DONTWAIT, 0, 0)
		switch {
		case errno == unix.EINTR:
		case errno != 0 || n == 0:
			i++ // msgs[i] failed (the socket is gone or full): the control connection carries it
		default:
			for k := 0; k < int(n); k++ {
				sent[ranks[i+k]] = true
			}
			i += int(n) // a short count means msgs[i] failed: the next call reports it
		}
	}
	runtime.KeepAlive(line)
	runtime.KeepAlive(iov)
	for _, q := range ranks {
		runtime.KeepAlive(h.ranks[q].evAddr)
	}
	return sent
}

// notifyEarlyLocked tells the survivors at once that rank r, which a
// suspicion found dead or stopped and the launcher is killing, failed:
// fail-stop is assured (the SIGKILL is on its way, or it was killed
// already), so there is no need to wait until its death is reaped, which
// can take milliseconds on a busy host, while the suspecting rank's own
// broadcast would reach the others only hop by hop. Only with --on-failure
// continue (abort tears the job down; reinit announces an epoch instead),
// and only for a rank whose death will count as a failure.
func (h *head) notifyEarlyLocked(r int) {
	rs := &h.ranks[r]
	if h.onFailure != OnFailureContinue || h.cause.kind != causeNone || rs.gone || rs.notified ||
		!rs.connected || rs.finalized || rs.cancelled || rs.spawning || rs.killedBy == "" {
		return
	}
	h.notifyFailedLocked(r)
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
	if h.evOpened && h.evFD >= 0 {
		unix.Close(h.evFD)
		h.evFD = -1
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
		rs.evAddr = eventAddr(m.KV[boot.HelloEventAddr])
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
			if h.ranks[r].failed || h.ranks[r].notified && r != m.Rank {
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
		if kill {
			// Before the reply: each write wakes a rank that may take the
			// processor from the launcher.
			h.notifyEarlyLocked(m.Rank)
		}
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

// ctlConn is one control connection. Sends never block: a message is
// written at once if the connection is idle and the socket takes it
// without waiting, else queued and written by the connection's writer
// goroutine (a rank that does not read its control connection never
// stalls the launcher).
type ctlConn struct {
	nc   net.Conn
	raw  syscall.RawConn // nil: no direct writes
	rank int             // -1 until hello

	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte // encoded messages (JSON lines) not yet written
	busy   bool     // the writer goroutine is writing
	closed bool
}

func newCtlConn(nc net.Conn) *ctlConn {
	c := &ctlConn{nc: nc, rank: -1}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
		}
	}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// encodeLine is the wire form of m: one JSON line.
func encodeLine(m boot.Msg) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("launch: encode %+v: %v", m, err)) // plain data: cannot happen
	}
	return append(b, '\n')
}

func (c *ctlConn) send(m boot.Msg) { c.sendLine(encodeLine(m)) }

// sendLine sends an encoded message; line may be shared by several
// connections and is never modified.
func (c *ctlConn) sendLine(line []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if !c.busy && len(c.queue) == 0 {
		n, err := c.tryWriteLocked(line)
		if err != nil {
			c.closeLocked()
			return
		}
		if n == len(line) {
			return
		}
		line = line[n:]
	}
	c.queue = append(c.queue, line)
	c.cond.Signal()
}

// tryWriteLocked writes what the socket takes without waiting; c.mu held,
// the writer goroutine idle.
func (c *ctlConn) tryWriteLocked(b []byte) (int, error) {
	if c.raw == nil {
		return 0, nil
	}
	var n int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			k, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.EAGAIN {
				break
			}
			if err != nil {
				werr = err
				break
			}
			n += k
		}
		return true // never wait: the writer goroutine does that
	})
	if werr == nil {
		werr = err
	}
	return n, werr
}

func (c *ctlConn) writeLoop() {
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		q := net.Buffers(c.queue)
		c.queue = nil
		c.busy = true
		c.mu.Unlock()
		_, err := q.WriteTo(c.nc)
		c.mu.Lock()
		c.busy = false
		if err != nil {
			c.closeLocked()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// close closes the connection; queued messages not yet written are dropped.
func (c *ctlConn) close() {
	c.mu.Lock()
	c.closeLocked()
	c.mu.Unlock()
}

func (c *ctlConn) closeLocked() {
	if !c.closed {
		c.closed = true
		c.nc.Close()
		c.cond.Broadcast()
	}
}

// procState reads the scheduler state of a local process: alive is true
// for a running, sleeping or disk-waiting process, false for a stopped,
// traced, zombie or vanished one, and for one that is exiting (a SIGKILLed
// process is still "running" while the kernel tears it down, after it
// closed its sockets: a peer that saw its connection break may ask before
// the process is a zombie).
func procState(pid int) (state string, alive bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "gone", false
	}
	return parseProcStat(b)
}

// parseProcStat is procState on the contents of /proc/PID/stat.
func parseProcStat(b []byte) (state string, alive bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "unknown", false
	}
	switch b[i+2] {
	case 'R', 'S', 'I', 'D':
		// After the command: state ppid pgrp session tty_nr tpgid flags ...
		const pfExiting = 0x4 // PF_EXITING: the task is in do_exit
		if f := bytes.Fields(b[i+1:]); len(f) > 6 {
			if flags, err := strconv.ParseUint(string(f[6]), 10, 64); err == nil && flags&pfExiting != 0 {
				return "exiting", false
			}
		}
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
