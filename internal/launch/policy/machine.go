package policy

import (
	"fmt"
	"slices"
	"strconv"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// Mode is the failure policy (ftmpirun --on-failure).
type Mode int

const (
	ModeAbort    Mode = iota // a failure tears the job down (default)
	ModeContinue             // every survivor is told; the job goes on
	ModeReinit               // the failed rank is respawned; every rank rolls back to MPI_Reinit
)

// Config describes the job a Machine keeps.
type Config struct {
	Job     string // the job id every hello must carry
	Size    int    // number of ranks started (process ids 0..Size-1)
	Mode    Mode
	Verbose bool // also emit the -v log lines
	// Hosts and Place: the job's hosts and the host index of each of the
	// Size ranks (nil: one host holding every rank). New processes
	// (respawns, spawned children) are placed by the machine (Respawn's
	// and ChildrenStart's Host).
	Hosts []Host
	Place []int
	// Spares: the last Spares of the Size processes are spares
	// (boot.EnvSpares): they wait inside MPI_Init. The death of a waiting
	// spare is no failure of the job (the pool shrinks; the ranks are
	// told, so they drop it); reinit mode takes a waiting spare instead of
	// respawning a failed rank (Adopt), and respawns once none is left;
	// the waiting spares are released (ctlwire.EventRelease) once every other
	// process has finalized or is gone.
	Spares int
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.Size < 1:
		return fmt.Errorf("policy: size %d: must be at least 1", c.Size)
	case c.Mode < ModeAbort || c.Mode > ModeReinit:
		return fmt.Errorf("policy: unknown mode %d", c.Mode)
	case c.Spares < 0 || c.Spares >= c.Size:
		return fmt.Errorf("policy: %d spares among %d processes: want 0 to %d", c.Spares, c.Size, c.Size-1)
	case c.Place != nil && len(c.Place) != c.Size:
		return fmt.Errorf("policy: %d placements for %d ranks", len(c.Place), c.Size)
	}
	for r, h := range c.Place {
		if h < 0 || h >= max(1, len(c.Hosts)) {
			return fmt.Errorf("policy: rank %d placed on unknown host %d", r, h)
		}
	}
	return nil
}

// proc is what the machine knows of one process id (its current
// incarnation).
type proc struct {
	inc         int
	pid         int
	conn        Conn // its control connection, 0 if none
	connected   bool // said hello: the rank is initialized
	finalized   bool // called Finalize
	finReturned bool // the finalize fence completed for it (Finalize returned)
	gone        bool // its agent reported it gone
	failed      bool // died after connecting and before finalizing
	exit        Exit
	fences      int    // number of fences it entered
	killedBy    string // why the launcher SIGKILLed it; "" if it did not
	leftReinit  bool   // returned from MPI_Reinit: a failure now cannot be recovered
	inReinit    bool   // inside MPI_Reinit (entered, not left; a respawned process from its respawn)
	rejoined    int    // the last Reinit epoch it rejoined (0: the initial one)
	cancelled   bool   // a child killed because its spawn failed: its death is no failure
	notified    bool   // the survivors were sent its failed event
	dying       bool   // its exit bell rang (Dying) before it was reaped
	spawning    bool   // a child whose spawn has not completed: its death fails the spawn, not the job
	spawnFailed bool   // a child of a spawn that failed: its exit code is not the job's
	host        int    // index of the host it runs on (Config.Hosts)
	spare       bool   // a spare of the start set that nobody took yet (as far as the launcher knows)
	released    bool   // a spare sent EventRelease
	adopted     bool   // a spare taken as a rank's new incarnation: its process is that rank's now
	aborted     bool   // it sent Abort (its own exit is the abort's, not a failure's)

	// The launcher killed it, found stopped after its finalize fence
	// completed (see stall): it did not exit after returning from Finalize.
	hungAfterFence bool
}

type waiter struct {
	conn Conn
	id   uint64
}

// check is a suspicion waiting for the shell's Liveness answer.
type check struct {
	waiter
	by, rank, inc int
	pid           int
	reason        string  // the suspecting rank's reason
	more          []check // later suspicions of the same process, answered with this one
}

// Machine is the launcher's policy: a pure state machine (see the package
// comment). It is not safe for concurrent use: the shell serialises Step.
type Machine struct {
	cfg   Config
	procs []proc
	conns map[Conn]int // connections that said hello -> process id

	kv        map[string]string
	fenceWait map[int][]waiter
	// fenceScan[seq]: every process below this index has entered fence
	// seq or is gone, so checkFences resumes there instead of looking at
	// every process at every arrival (n^2 at the head for a start-up of n
	// ranks entering in rank order). Only a Reinit reset makes a process
	// fall back below a fence (fences = 1, gone = false): reinit clears it.
	fenceScan map[int]int
	finWait   []waiter

	cause       Cause
	fatalAbort  bool // the cause is a fatal-error abort (Abort.Fatal)
	rootCode    int  // the code of the first abnormal end of a process of its own (see rootCause)
	rootSet     bool // rootCode is set
	lastAbort   int
	aborted     bool // lastAbort is set
	anyFailure  bool
	failures    []Exit // every failure, in the order reported (Checkpoint-on-Failure)
	done        bool
	interrupted bool

	checks    map[uint64]check
	nextToken uint64
	// checksOf indexes checks by rank (tokens ascending), so that finding
	// a rank's pending checks costs no scan of every check: after a
	// failure checkOthers looks at every process, and a scan per process
	// made the launcher's work per failure grow as n^2 (1.9 s for one
	// failure of 4,096 ranks, 40 s for 40).
	checksOf map[int][]uint64
	// everFailed holds every process id whose failed or notified flag was
	// ever set (a respawn clears them: hello checks them again), so that a
	// hello need not look at every process: n hellos looking at n
	// processes each made the start-up n^2 at the head (113 s of the
	// launcher for 65,536 ranks, 2.7 s for 16,384).
	everFailed map[int]bool

	// Fence stalls (Stall): progress counts fence arrivals and
	// completions; stallAt is its value at the last Stall that saw waiters
	// (-1: none).
	progress uint64
	stallAt  int64

	// Reinit mode.
	respawn     bool // a respawning agent is there
	maxRestarts int
	restarts    int
	epoch       int
	epochKV     map[string]string
	rejoinWait  []waiter

	// A lazy start (issue 24 item 2): the connections whose ranks read
	// endpoints on demand, and the facts of the layout (by process id) of
	// the start-up fence and of the current Reinit epoch.
	lazy       map[Conn]bool
	facts      map[int]Facts
	epochFacts map[int]Facts

	// Spawn.
	canSpawn bool
	spawns   map[string]*spawnOp
	spawnSeq []*spawnOp // in creation order (deterministic iteration)

	lost []bool // by host index: its agent is lost (HostLost)

	out []Action
}

// New returns the policy of a job with every rank started and none
// connected.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{
		cfg:        cfg,
		procs:      make([]proc, cfg.Size),
		conns:      make(map[Conn]int),
		kv:         make(map[string]string),
		fenceWait:  make(map[int][]waiter),
		fenceScan:  make(map[int]int),
		checks:     make(map[uint64]check),
		checksOf:   make(map[int][]uint64),
		everFailed: make(map[int]bool),
		stallAt:    -1,
		lost:       make([]bool, max(1, len(cfg.Hosts))),
		lazy:       make(map[Conn]bool),
		facts:      make(map[int]Facts),
		epochFacts: make(map[int]Facts),
	}
	for r, h := range cfg.Place {
		m.procs[r].host = h
	}
	for r := cfg.Size - cfg.Spares; r < cfg.Size; r++ {
		m.procs[r].spare = true
	}
	return m, nil
}

// EnableRespawn lets reinit mode respawn failed ranks, at most
// maxRestarts times over the job.
func (m *Machine) EnableRespawn(maxRestarts int) {
	m.respawn = true
	m.maxRestarts = maxRestarts
	m.epochKV = make(map[string]string)
}

// EnableSpawn lets ranks spawn processes (StartChildren actions).
func (m *Machine) EnableSpawn() { m.canSpawn = true }

// Step feeds one event and returns the actions to execute, in order. The
// slice is valid until the next Step.
func (m *Machine) Step(ev Event) []Action {
	m.out = m.out[:0]
	switch e := ev.(type) {
	case Hello:
		m.hello(e)
	case Fence:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			m.noteFacts(e.Conn, m.facts, r, e.Facts)
			m.fence(r, waiter{e.Conn, e.ID}, e.KV)
		}
	case Endpoints:
		if _, ok := m.rank(e.Conn, e.ID); ok {
			m.endpoints(e)
		}
	case Finalize:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			m.procs[r].finalized = true
			m.finWait = append(m.finWait, waiter{e.Conn, e.ID})
			m.progress++
			m.checkFinalize()
		}
	case Abort:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			m.abort(r, e)
		}
	case Suspect:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			m.suspect(r, e)
		}
	case Liveness:
		m.liveness(e)
	case Dying:
		m.dying(e)
	case ReinitActive:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			m.reinitActive(r, e)
		}
	case Rejoin:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			if e.Epoch == m.epoch && m.epochKV != nil {
				m.noteFacts(e.Conn, m.epochFacts, r, e.Facts)
			}
			m.rejoin(r, e)
		}
	case Spawn:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			m.spawn(r, e)
		}
	case SpareTaken:
		if r, ok := m.rank(e.Conn, e.ID); ok {
			if p := &m.procs[r]; p.spare {
				p.spare = false
				m.vlogf("spare process %d taken by a repair of the ranks; %d spares left", r, m.sparesLeft())
			}
			m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpSpare, ID: e.ID})
		}
	case Unknown:
		if _, ok := m.rank(e.Conn, e.ID); ok {
			m.replyErr(e.Conn, e.ID, "unknown op %s", strconv.Quote(e.Op))
		}
	case Closed:
		delete(m.lazy, e.Conn)
		if r, ok := m.conns[e.Conn]; ok {
			delete(m.conns, e.Conn)
			if m.procs[r].conn == e.Conn {
				m.procs[r].conn = 0
			}
		}
	case Exited:
		m.exited(e.Exit)
	case Inject:
		m.inject(e)
	case Timeout:
		if m.teardown(Cause{CauseTimeout, 124}) {
			m.logf("job timed out after %v; killing all ranks", e.After)
			m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
		}
	case Interrupt:
		if m.interrupted {
			m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
			break
		}
		m.interrupted = true
		m.teardown(Cause{CauseSignal, e.Code})
		m.logf("received %v; terminating the job", e.Signal)
		m.emit(Action{Kind: SignalAll, Sig: syscall.SIGTERM}, Action{Kind: ArmGrace})
	case Grace:
		m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
	case Stall:
		m.stall()
	case HostLost:
		m.hostLost(e)
	default:
		panic(fmt.Sprintf("policy: unknown event %T", ev)) // a programming error of the shell
	}
	return m.out
}

// rank is the process id of the rank on conn; for a connection that has
// not said hello, it answers with an error and drops it.
func (m *Machine) rank(c Conn, id uint64) (int, bool) {
	r, ok := m.conns[c]
	if !ok {
		m.replyErr(c, id, "first message must be hello")
		m.emit(Action{Kind: Drop, Conn: c})
	}
	return r, ok
}

func (m *Machine) emit(a ...Action) { m.out = append(m.out, a...) }

// reply answers a request; a check the launcher started itself (conn 0,
// see checkOthers) has nobody to answer.
func (m *Machine) reply(c Conn, msg ctlwire.Msg) {
	if c != 0 {
		m.emit(Action{Kind: Reply, Conn: c, Msg: msg})
	}
}

func (m *Machine) replyErr(c Conn, id uint64, format string, args ...any) {
	m.reply(c, ctlwire.Msg{Op: ctlwire.OpError, ID: id, Error: fmt.Sprintf(format, args...)})
}

func (m *Machine) logf(format string, args ...any) {
	m.emit(Action{Kind: Log, Text: fmt.Sprintf(format, args...)})
}

func (m *Machine) vlogf(format string, args ...any) {
	if m.cfg.Verbose {
		m.logf(format, args...)
	}
}

// teardown records the first cause of a teardown and reports whether this
// call started it; the caller kills the ranks.
func (m *Machine) teardown(c Cause) bool {
	if m.cause.Kind != CauseNone {
		return false
	}
	m.cause = c
	m.emit(Action{Kind: TearDown, Cause: c})
	return true
}

func (m *Machine) tearing() bool { return m.cause.Kind != CauseNone }

// Size is the number of process ids in use (ranks and spawned children).
func (m *Machine) Size() int { return len(m.procs) }

func (m *Machine) hello(e Hello) {
	fail := func(format string, args ...any) {
		m.replyErr(e.Conn, e.ID, format, args...)
		m.emit(Action{Kind: Drop, Conn: e.Conn})
	}
	if _, ok := m.conns[e.Conn]; ok {
		fail("duplicate hello")
		return
	}
	if e.Job != m.cfg.Job {
		fail("job %q is not this launcher's job", e.Job)
		return
	}
	if e.Rank < 0 || e.Rank >= len(m.procs) {
		fail("rank %d out of range", e.Rank)
		return
	}
	p := &m.procs[e.Rank]
	if p.connected {
		fail("rank %d is already connected", e.Rank)
		return
	}
	if p.gone {
		fail("rank %d is gone", e.Rank)
		return
	}
	p.connected = true
	p.inc = e.Incarnation
	if e.Pid != 0 {
		p.pid = e.Pid
	}
	p.conn = e.Conn
	m.conns[e.Conn] = e.Rank
	m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpHello, ID: e.ID, Rank: e.Rank})
	// Failures that happened before this rank connected (an early injected
	// kill, say): every survivor learns of every failure.
	told := make([]int, 0, len(m.everFailed))
	for r := range m.everFailed {
		told = append(told, r)
	}
	slices.Sort(told) // in rank order, as a look at every process would
	for _, r := range told {
		if q := &m.procs[r]; r != e.Rank && (q.failed || q.notified) {
			m.emit(Action{Kind: Notify, To: []Conn{e.Conn}, Msg: m.failedEvent(r)})
		}
	}
	// A spare that connects after the release is released at once.
	if p.spare && m.sparesReleased() {
		p.released = true
		m.emit(Action{Kind: Notify, To: []Conn{e.Conn}, Msg: ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventRelease, Rank: e.Rank}})
		return
	}
	// Likewise a Reinit epoch that began before this rank connected.
	if m.epoch > 0 && p.rejoined < m.epoch && !p.spare {
		m.emit(Action{Kind: Notify, To: []Conn{e.Conn}, Msg: ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventReinit, Rank: -1, Epoch: m.epoch, Reason: "a rank failed before this one connected"}})
	}
}

// failedEvent is the failed event of process r for the survivors: how it
// died, or, before its death was reaped (a suspicion found it dead or
// stopped, and it is being killed), why it was killed.
func (m *Machine) failedEvent(r int) ctlwire.Msg {
	p := &m.procs[r]
	if !p.gone {
		how := fmt.Sprintf("rank %d (pid %d) killed: %s", r, p.pid, p.killedBy)
		if p.killedBy == "" && p.dying {
			how = fmt.Sprintf("rank %d (pid %d) exiting (its exit bell rang; not reaped yet)", r, p.pid)
		}
		return ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: r, Incarnation: p.inc, Reason: how}
	}
	return ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: r, Incarnation: p.exit.Incarnation, Reason: m.how(r, p.exit)}
}

// how describes the death e of process r for messages.
func (m *Machine) how(r int, e Exit) string {
	how := fmt.Sprintf("rank %d (pid %d) %s", r, e.Pid, e)
	if e.Signal == syscall.SIGKILL && m.procs[r].killedBy != "" {
		how += ", " + m.procs[r].killedBy
	}
	return how
}

// sparesLeft counts the waiting spares that are not gone.
func (m *Machine) sparesLeft() int {
	n := 0
	for r := range m.procs {
		if p := &m.procs[r]; p.spare && !p.gone {
			n++
		}
	}
	return n
}

// sparesReleased reports whether the job no longer needs its spares:
// every process that is not a waiting spare has finalized or is gone.
func (m *Machine) sparesReleased() bool {
	if m.cfg.Spares == 0 {
		return false
	}
	for r := range m.procs {
		if p := &m.procs[r]; !p.spare && !p.finalized && !p.gone {
			return false
		}
	}
	return true
}

// releaseSpares sends EventRelease to the waiting spares once the job no
// longer needs them (they then finalize, which completes the fence).
func (m *Machine) releaseSpares() {
	if !m.sparesReleased() {
		return
	}
	for r := range m.procs {
		if p := &m.procs[r]; p.spare && !p.gone && !p.released && p.conn != 0 {
			p.released = true
			m.emit(Action{Kind: Notify, To: []Conn{p.conn}, Msg: ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventRelease, Rank: r}})
		}
	}
}

// dying handles an exit bell's ring (Dying): under --on-failure continue
// a rank that connected and did not finalize is told failed to the
// survivors now, as a confirmed suspicion is (notifyEarly); its Exited
// finishes the rest (the log line, the exit code). In the other modes, or
// for a process whose end is no failure to tell (finalized, a spare
// nobody took, a child of a spawn not complete), it waits for the Exited.
func (m *Machine) dying(e Dying) {
	if e.Rank < 0 || e.Rank >= len(m.procs) {
		m.logf("exit bell of unknown process %d ignored", e.Rank)
		return
	}
	p := &m.procs[e.Rank]
	if e.Incarnation != p.inc || (p.pid != 0 && e.Pid != 0 && e.Pid != p.pid) {
		return // an older incarnation's, reported late
	}
	if m.cfg.Mode != ModeContinue || m.tearing() || p.gone || p.notified || !p.connected ||
		p.finalized || p.cancelled || p.spawning || p.spare || p.aborted {
		return
	}
	p.dying = true
	if !m.anyFailure {
		m.anyFailure = true
		m.emit(Action{Kind: Mark, Text: MarkFailure})
	}
	m.notifyFailed(e.Rank)
}

// notifyFailed sends the failed event of process r to every other
// connected process that is not gone, in one Notify.
func (m *Machine) notifyFailed(r int) {
	m.procs[r].notified = true
	m.everFailed[r] = true
	var to []Conn
	for q := range m.procs {
		if o := &m.procs[q]; q != r && !o.gone && o.conn != 0 {
			to = append(to, o.conn)
		}
	}
	if len(to) > 0 {
		m.emit(Action{Kind: Notify, To: to, Msg: m.failedEvent(r)})
	}
}

// isFailure tells whether the death e of process p is a failure: it
// connected (initialized) and had not finalized, or the launcher itself
// killed it (an injected kill or a declared failure) before it finalized,
// even if it had not connected yet.
func (m *Machine) isFailure(p *proc, e Exit) bool {
	if p.finalized || e.StartErr != nil {
		return false
	}
	if m.cfg.Mode == ModeReinit && m.respawn {
		// Every process is expected to rejoin its epoch: a death before it
		// connected (a respawned one killed early, say) is a failure too.
		return true
	}
	return p.connected || (p.killedBy != "" && e.Signal == syscall.SIGKILL)
}

func (m *Machine) exited(e Exit) {
	if e.Rank < 0 || e.Rank >= len(m.procs) {
		m.logf("exit report of unknown process %d (%s) ignored", e.Rank, e)
		return
	}
	p := &m.procs[e.Rank]
	if e.Incarnation < p.inc {
		m.vlogf("exit report of rank %d incarnation %d ignored: incarnation %d runs now", e.Rank, e.Incarnation, p.inc)
		return
	}
	if p.gone {
		m.logf("second exit report of rank %d (%s) ignored", e.Rank, e)
		return
	}
	p.gone = true
	p.exit = e
	m.progress++
	if e.Pid != 0 {
		p.pid = e.Pid
	}
	tearing := m.tearing()
	m.rootCause(p, e, tearing)
	switch {
	case p.cancelled || p.spawning:
		m.vlogf("process %d of a failed spawn %s", e.Rank, e)
	case p.spare && !tearing && !p.finalized:
		// A spare that dies waiting is no failure of the job: the pool
		// shrinks. The ranks are told, so they drop it from their pool.
		if !p.notified {
			m.notifyFailed(e.Rank)
		}
		m.logf("spare process %d (pid %d) %s; %d spares left", e.Rank, e.Pid, e, m.sparesLeft())
	case e.StartErr != nil && !tearing:
		m.logf("rank %d could not be started: %v", e.Rank, e.StartErr)
		m.teardown(Cause{CauseStart, 1})
		m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
	case m.isFailure(p, e) && !tearing:
		p.failed = true
		m.everFailed[e.Rank] = true
		if !m.anyFailure {
			m.anyFailure = true
			m.emit(Action{Kind: Mark, Text: MarkFailure})
		}
		how := m.how(e.Rank, e)
		if e.Signal == 0 {
			how = fmt.Sprintf("rank %d (pid %d) %s before MPI finalize", e.Rank, e.Pid, e)
		}
		switch m.cfg.Mode {
		case ModeReinit:
			if !m.reinit(e, how) { // else respawned: the process id lives on
				m.failures = append(m.failures, e)
				m.teardown(Cause{CauseFailure, failureCode(e)})
				m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
			}
		case ModeAbort:
			m.failures = append(m.failures, e)
			m.logf("%s", how)
			m.teardown(Cause{CauseFailure, failureCode(e)})
			m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
		default:
			m.failures = append(m.failures, e)
			if !p.notified { // else a suspicion already told everyone
				m.notifyFailed(e.Rank)
			}
			m.logf("%s; continuing (--on-failure continue)", how)
		}
		m.checkOthers(e.Rank)
	default:
		// A rank killed after calling Finalize is not a failure of the job,
		// but the survivors must still learn that it is gone: one of them
		// may be waiting on it (no call blocks forever).
		if e.Signal != 0 && !tearing && m.cfg.Mode != ModeAbort && e.StartErr == nil && !p.notified {
			m.notifyFailed(e.Rank)
		}
		m.vlogf("rank %d (pid %d) %s", e.Rank, e.Pid, e)
	}
	// Suspicions of it waiting for their check are answered: it is gone.
	for _, tok := range m.pendingChecks(e.Rank) {
		c := m.checks[tok]
		m.dropCheck(tok)
		for _, s := range append([]check{c}, c.more...) {
			m.reply(s.conn, ctlwire.Msg{Op: ctlwire.OpSuspect, ID: s.id})
		}
		m.vlogf("not killing rank %d (%s): it is gone", c.rank, m.suspectReason(c))
	}
	m.checkFences()
	m.checkFinalize()
	m.releaseSpares() // also when nobody finalizes (every rank died)
	m.checkRejoin()
	m.checkSpawns()
	m.checkDone()
}

func (m *Machine) checkDone() {
	if m.done {
		return
	}
	for r := range m.procs {
		if !m.procs[r].gone {
			return
		}
	}
	m.done = true
	m.emit(Action{Kind: Done})
}

// Done reports whether every process is gone.
func (m *Machine) Done() bool { return m.done }

func (m *Machine) fence(r int, w waiter, kv map[string]string) {
	for k, v := range kv {
		m.kv[k] = v
	}
	p := &m.procs[r]
	p.fences++
	m.progress++
	m.fenceWait[p.fences] = append(m.fenceWait[p.fences], w)
	m.checkFences()
	m.checkSpawns() // a spawned process initialised
}

// checkFences completes every fence all processes have entered or left.
func (m *Machine) checkFences() {
	if m.tearing() || len(m.fenceWait) == 0 {
		return // the job is being killed: nobody returns from a fence any more
	}
	seqs := make([]int, 0, len(m.fenceWait))
	for seq := range m.fenceWait {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		r := m.fenceScan[seq]
		for r < len(m.procs) && (m.procs[r].fences >= seq || m.procs[r].gone) {
			r++
		}
		m.fenceScan[seq] = r
		if r < len(m.procs) {
			continue // process r has neither entered nor gone
		}
		var failed []int // those that are gone without entering it
		for r := range m.procs {
			if m.procs[r].fences < seq {
				failed = append(failed, r)
			}
		}
		kv := make(map[string]string, len(m.kv))
		for k, v := range m.kv {
			kv[k] = v
		}
		var lazy map[string]string // the layout, for the ranks that read endpoints on demand
		for _, w := range m.fenceWait[seq] {
			if m.lazy[w.conn] {
				if lazy == nil {
					lazy = m.layoutKV(m.facts)
				}
				m.reply(w.conn, ctlwire.Msg{Op: ctlwire.OpFence, ID: w.id, KV: m.nearKV(lazy, w.conn, m.kv, ctlwire.EndpointKey), Failed: failed})
				continue
			}
			m.reply(w.conn, ctlwire.Msg{Op: ctlwire.OpFence, ID: w.id, KV: kv, Failed: failed})
		}
		delete(m.fenceWait, seq)
		delete(m.fenceScan, seq)
	}
}

// checkFinalize completes the finalize fence once every process has
// finalized or is gone.
func (m *Machine) checkFinalize() {
	if len(m.finWait) == 0 || m.tearing() {
		return
	}
	m.releaseSpares()
	for r := range m.procs {
		if p := &m.procs[r]; !p.finalized && !p.gone {
			return
		}
	}
	for _, w := range m.finWait {
		if r, ok := m.conns[w.conn]; ok {
			m.procs[r].finReturned = true
		}
		m.reply(w.conn, ctlwire.Msg{Op: ctlwire.OpFinalize, ID: w.id})
	}
	m.finWait = nil
}

func (m *Machine) abort(r int, e Abort) {
	code := AbortCode(e.Code)
	m.procs[r].aborted = true
	m.lastAbort, m.aborted = code, true
	m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpAbort, ID: e.ID})
	if m.teardown(Cause{CauseAbort, code}) {
		m.fatalAbort = e.Fatal
		m.logf("rank %d aborted the job with code %d: %s", r, e.Code, e.Reason)
		m.emit(Action{Kind: SignalAll, Sig: syscall.SIGKILL})
	}
}

func (m *Machine) inject(e Inject) {
	if e.Rank < 0 || e.Rank >= len(m.procs) {
		m.logf("injection into unknown rank %d skipped", e.Rank)
		return
	}
	verb := "kill"
	if e.Signal == syscall.SIGSTOP {
		verb = "stop"
	}
	p := &m.procs[e.Rank]
	if m.tearing() || p.gone {
		m.vlogf("injection %s:rank=%d,%s skipped: rank %d is gone or the job is ending", verb, e.Rank, e.spec(), e.Rank)
		return
	}
	if e.Signal == syscall.SIGKILL && p.killedBy == "" {
		p.killedBy = "injected kill " + e.when()
	}
	m.logf("injected %s of rank %d %s", verb, e.Rank, e.when())
	m.emit(Action{Kind: Signal, Rank: e.Rank, Incarnation: p.inc, Sig: e.Signal, Why: WhyInject})
}

// suspect handles rank by's suspicion of process e.Rank. A suspicion is a
// kill order (fail-stop), but the launcher can see what a heartbeat
// cannot: a process that is running or sleeping is alive and merely
// starved of CPU (an oversubscribed host), while a stopped one is hung.
// So the shell checks first (a Check action), and only a process it finds
// not alive is killed (liveness).
func (m *Machine) suspect(by int, e Suspect) {
	if e.Rank < 0 || e.Rank >= len(m.procs) {
		m.replyErr(e.Conn, e.ID, "suspect: rank %d out of range [0, %d)", e.Rank, len(m.procs))
		return
	}
	if e.Rank == by {
		m.replyErr(e.Conn, e.ID, "suspect: rank %d suspects itself", e.Rank)
		return
	}
	p := &m.procs[e.Rank]
	if e.Incarnation < p.inc {
		m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpSuspect, ID: e.ID})
		m.vlogf("ignoring rank %d's suspicion of rank %d incarnation %d: it was respawned (incarnation %d)", by, e.Rank, e.Incarnation, p.inc)
		return
	}
	c := check{waiter: waiter{e.Conn, e.ID}, by: by, rank: e.Rank, inc: p.inc, pid: p.pid, reason: e.Reason}
	if m.tearing() || p.gone || p.killedBy != "" {
		m.declareFailed(c) // no need to look: it is gone or dying
		return
	}
	// Several ranks often suspect a dead process at once (their
	// connections to it broke together): one look answers all of them.
	for _, tok := range m.pendingChecks(e.Rank) {
		first := m.checks[tok]
		first.more = append(first.more, c)
		m.checks[tok] = first
		return
	}
	m.addCheck(c)
	m.emit(Action{Kind: Check, Token: m.nextToken, Rank: c.rank, Incarnation: c.inc, Pid: c.pid})
}

// checkOthers looks, after the failure of rank failed, at every other
// live process that nobody is checking yet: a failure can end the watch
// kept on a stopped process (a Reinit rollback closes the epoch whose
// heartbeats would have found it; Checkpoint-on-Failure survivors exit;
// the last watchers may be the ones that died), after which nothing but
// --timeout would end the job. A process the shell finds stopped is
// declared failed (liveness), one running or sleeping is left alone.
func (m *Machine) checkOthers(failed int) {
	if m.tearing() || m.cfg.Mode == ModeAbort {
		return
	}
	for r := range m.procs {
		if r != failed {
			m.lookAt(r, fmt.Sprintf("stopped after the failure of rank %d", failed))
		}
	}
}

// lookAt has the launcher look at process r itself (a check nobody asked
// for, answered by Liveness like a suspicion's): if it is stopped, it is
// killed as failed, for reason.
func (m *Machine) lookAt(r int, reason string) {
	p := &m.procs[r]
	if p.gone || p.killedBy != "" || p.cancelled || p.spawning || len(m.checksOf[r]) > 0 {
		return
	}
	m.addCheck(check{by: -1, rank: r, inc: p.inc, pid: p.pid, reason: reason})
	m.emit(Action{Kind: Check, Token: m.nextToken, Rank: r, Incarnation: p.inc, Pid: p.pid})
}

// stall is the periodic look at the fences (see Stall): when processes
// have waited in a fence since the previous Stall without any fence
// progress, those the fence still waits for are looked at. So are the
// processes whose finalize fence completed and that have not exited
// (lingering): the launcher waits for them, and a process stopped there
// (after it sent its Finalize, or after Finalize returned) is watched by
// nobody else: every detector ended with the fence, the others may all
// have exited. A running or sleeping one is left alone (a program may
// work long after MPI_Finalize); a stopped one is killed, which is no
// failure of the job (it finalized).
func (m *Machine) stall() {
	waiting := len(m.fenceWait) > 0 || len(m.finWait) > 0 || len(m.rejoinWait) > 0 || m.lingering()
	if !waiting || m.tearing() {
		m.stallAt = -1
		return
	}
	if m.stallAt != int64(m.progress) {
		m.stallAt = int64(m.progress) // waiters seen: look next time if nothing moved
		return
	}
	missing := make(map[int]bool)
	for seq := range m.fenceWait {
		for r := range m.procs {
			if m.procs[r].fences < seq {
				missing[r] = true
			}
		}
	}
	if len(m.finWait) > 0 {
		for r := range m.procs {
			if !m.procs[r].finalized {
				missing[r] = true
			}
		}
	}
	if len(m.rejoinWait) > 0 {
		for r := range m.procs {
			if _, ok := m.epochKV[ctlwire.EpochEndpointKey(m.epoch, r)]; !ok {
				missing[r] = true
			}
		}
	}
	rs := make([]int, 0, len(missing))
	for r := range missing {
		rs = append(rs, r)
	}
	slices.Sort(rs)
	for _, r := range rs {
		m.lookAt(r, fmt.Sprintf("stopped while the others waited for it at a launcher fence for over %v", StallEvery))
	}
	for r := range m.procs {
		if p := &m.procs[r]; p.finReturned && !p.gone && !missing[r] {
			m.lookAt(r, fmt.Sprintf("stopped after its finalize fence completed, with no process exit for over %v", StallEvery))
		}
	}
}

// lingering reports whether a process whose finalize fence completed has
// not exited yet (see stall).
func (m *Machine) lingering() bool {
	for r := range m.procs {
		if p := &m.procs[r]; p.finReturned && !p.gone {
			return true
		}
	}
	return false
}

func (m *Machine) suspectReason(c check) string {
	if c.by < 0 { // the launcher's own look (checkOthers)
		return "found " + c.reason
	}
	reason := fmt.Sprintf("declared failed by rank %d", c.by)
	if c.reason != "" {
		reason += ": " + c.reason
	}
	return reason
}

// pendingChecks returns the tokens of rank's pending checks, ascending (a
// copy: the caller may drop them).
func (m *Machine) pendingChecks(rank int) []uint64 { return slices.Clone(m.checksOf[rank]) }

// addCheck records c under the next token (m.nextToken).
func (m *Machine) addCheck(c check) {
	m.nextToken++
	m.checks[m.nextToken] = c
	m.checksOf[c.rank] = append(m.checksOf[c.rank], m.nextToken)
}

// dropCheck forgets the check of token tok, if pending.
func (m *Machine) dropCheck(tok uint64) {
	c, ok := m.checks[tok]
	if !ok {
		return
	}
	delete(m.checks, tok)
	toks := slices.DeleteFunc(m.checksOf[c.rank], func(t uint64) bool { return t == tok })
	if len(toks) == 0 {
		delete(m.checksOf, c.rank)
	} else {
		m.checksOf[c.rank] = toks
	}
}

func (m *Machine) liveness(e Liveness) {
	c, ok := m.checks[e.Token]
	if !ok {
		return // answered already (the process was reaped meanwhile)
	}
	m.dropCheck(e.Token)
	// Still the same incarnation: its Exited would have answered the check
	// (and a respawn comes only after it).
	p := &m.procs[c.rank]
	if c.pid == 0 && e.Pid > 0 {
		c.pid = e.Pid
		p.pid = e.Pid
	}
	if c.by < 0 && !e.Stopped {
		// The launcher's own look (checkOthers) kills only a stopped
		// process: a running one is alive, an exiting or dead one will be
		// reported by its agent. Suspicions that joined it follow the rules.
		if len(c.more) == 0 {
			return
		}
		c, c.more = c.more[0], c.more[1:]
		c.pid = max(c.pid, e.Pid)
	}
	if e.Alive && p.killedBy == "" {
		// Alive, merely starved of CPU: starvation is not a failure, and
		// is only logged under -v (hundreds of ranks per core can raise
		// thousands of such suspicions).
		for _, s := range append([]check{c}, c.more...) {
			m.replyErr(s.conn, s.id, "suspect: rank %d is alive (process %d %s); not killed", c.rank, c.pid, e.State)
		}
		for _, s := range append([]check{c}, c.more...) {
			if s.by >= 0 {
				m.vlogf("rank %d suspected by rank %d (%s) but its process %d is %s: not killed", c.rank, s.by, s.reason, c.pid, e.State)
			}
		}
		return
	}
	if p.finalized && !e.Stopped && p.killedBy == "" && !m.tearing() {
		// It called Finalize and is exiting (or exited): the normal end of
		// a rank, which its slower peers' detectors may notice before its
		// death is reaped. No kill, no failure. (A finalized process that
		// is stopped is hung in the fence: killed below.)
		for _, s := range append([]check{c}, c.more...) {
			m.replyErr(s.conn, s.id, "suspect: rank %d finalized (process %d %s); not killed", c.rank, c.pid, e.State)
			if s.by >= 0 {
				m.vlogf("rank %d suspected by rank %d (%s) after it finalized (process %d %s): not killed", c.rank, s.by, s.reason, c.pid, e.State)
			}
		}
		return
	}
	m.declareFailed(c)
	for _, s := range c.more { // killed already by the first
		m.reply(s.conn, ctlwire.Msg{Op: ctlwire.OpSuspect, ID: s.id})
	}
}

// declareFailed enforces fail-stop for a confirmed suspicion: it SIGKILLs
// the suspect and makes its death a failure, even if it had not connected
// yet. It does nothing if the process is gone or the job is being torn
// down. A process that called Finalize is still killed (it may be stuck in
// the finalize fence, stopped): its death then counts as a normal end.
func (m *Machine) declareFailed(c check) {
	p := &m.procs[c.rank]
	reason := m.suspectReason(c)
	if m.tearing() || p.gone {
		m.reply(c.conn, ctlwire.Msg{Op: ctlwire.OpSuspect, ID: c.id})
		m.vlogf("not killing rank %d (%s): it is gone or the job is ending", c.rank, reason)
		return
	}
	if p.killedBy != "" {
		// Already killed (an injection, an earlier suspicion): it is dying.
		m.notifyEarly(c.rank)
		m.emit(Action{Kind: Signal, Rank: c.rank, Incarnation: p.inc, Sig: syscall.SIGKILL, Why: WhySuspect})
		m.reply(c.conn, ctlwire.Msg{Op: ctlwire.OpSuspect, ID: c.id})
		m.vlogf("rank %d %s; already killed (%s)", c.rank, reason, p.killedBy)
		return
	}
	p.killedBy = reason
	p.hungAfterFence = p.finReturned // (a finalized process is killed only if stopped)
	// Notifications first: each write wakes a rank that may take the
	// processor from the launcher.
	m.notifyEarly(c.rank)
	m.emit(Action{Kind: Signal, Rank: c.rank, Incarnation: p.inc, Sig: syscall.SIGKILL, Why: WhySuspect})
	m.reply(c.conn, ctlwire.Msg{Op: ctlwire.OpSuspect, ID: c.id})
	m.logf("killing rank %d: %s", c.rank, reason)
}

// notifyEarly tells the survivors at once that process r, which a
// suspicion found dead or stopped and the launcher is killing, failed:
// fail-stop is assured (the SIGKILL is on its way, or it was killed
// already), so there is no need to wait until its death is reaped, which
// can take milliseconds on a busy host. Only with --on-failure continue
// (abort tears the job down; reinit announces an epoch instead), and only
// for a process whose death will count as a failure.
func (m *Machine) notifyEarly(r int) {
	p := &m.procs[r]
	if m.cfg.Mode != ModeContinue || m.tearing() || p.gone || p.notified ||
		!p.connected || p.finalized || p.cancelled || p.spawning || p.killedBy == "" {
		return
	}
	m.notifyFailed(r)
}

// ExitCode is ftmpirun's exit code once every process is gone (see
// package launch).
func (m *Machine) ExitCode() int {
	if m.cause.Kind == CauseAbort && m.fatalAbort && m.rootSet {
		// A fatal error under MPI_ERRORS_ARE_FATAL is a consequence (a
		// survivor's call failed): like mpirun, the first process that
		// ended abnormally of its own decides (a Go panic: 2).
		return m.rootCode
	}
	switch m.cause.Kind {
	case CauseFailure, CauseStart, CauseTimeout, CauseSignal:
		return m.cause.Code
	case CauseAbort:
		if !(m.cfg.Mode == ModeContinue && m.anyFailure) {
			return m.cause.Code
		}
	}
	if m.cfg.Mode == ModeContinue && m.anyFailure {
		// MPI 17.5.2, advice to implementors: the lowest rank that exits
		// after returning from Finalize, else the last abort, else rank 0.
		for r := range m.procs {
			// (Not one the launcher killed, stopped after its fence: it did
			// not exit, see stall.)
			if p := &m.procs[r]; p.finReturned && p.gone && !p.hungAfterFence {
				return p.exit.Code()
			}
		}
		if m.aborted {
			return m.lastAbort
		}
	}
	if !m.anyFailure {
		return m.normalCode()
	}
	return m.procs[0].exit.Code()
}

// rootCause records the first abnormal end of a process of its own (the
// root cause a fatal-error abort is the consequence of): a non-zero exit
// status or a death by a signal, before the job was torn down or during
// the teardown, but neither the end of a process that sent Abort (it
// exits with the abort's code) nor the teardown's SIGKILL (the
// consequence again). A process a suspicion had killed counts (it was
// hung, or already exiting: the kernel keeps the status of a process that
// is exiting, so its report is then its own end, a panic's 2). Children of a failed spawn, spares that died waiting and
// processes that could not start do not count.
func (m *Machine) rootCause(p *proc, e Exit, tearing bool) {
	if m.rootSet || p.aborted || p.cancelled || p.spawning || p.spawnFailed || e.StartErr != nil ||
		p.spare && !p.finalized {
		return
	}
	if e.Signal == 0 && e.Status == 0 {
		return
	}
	if e.Signal == syscall.SIGKILL && tearing && p.killedBy == "" {
		return
	}
	m.rootSet, m.rootCode = true, e.Code()
	if tearing && m.fatalAbort {
		m.logf("rank %d (pid %d) %s: the job's exit code is %d, this first abnormal end's", e.Rank, e.Pid, e, m.rootCode)
	}
}

// normalCode is the exit code of a job that ended without failure and
// without teardown: like mpirun, non-zero when any process exited non-zero
// (the lowest process id's code wins). Processes the launcher killed
// (after they finalized: a SIGKILL death) and children whose spawn failed (their spawner
// was told) do not count.
func (m *Machine) normalCode() int {
	for r := range m.procs {
		p := &m.procs[r]
		if p.killedBy != "" && p.exit.Signal == syscall.SIGKILL || p.exit.StartErr != nil || p.spawnFailed || p.spare && !p.finalized {
			continue // (a spare that died waiting: the pool shrank)
		}
		if c := p.exit.Code(); c != 0 {
			return c
		}
	}
	return 0
}

// MarkFailure is the Mark of the first failure of the job.
const MarkFailure = "failure"

// Outcome is what a finished launch tells the Checkpoint-on-Failure
// relaunch loop.
type Outcome struct {
	Failed   bool  // a rank failed
	Failure  *Exit // the failure to report: the first death by a signal, else the first failure
	Code     int   // the exit code the failure implies (its code, 1 if that is 0)
	Relaunch bool  // a failure ended the launch and nothing forbids a relaunch
}

// Outcome summarises the launch once every process is gone.
func (m *Machine) Outcome() Outcome {
	var o Outcome
	if !m.anyFailure {
		return o
	}
	o.Failed = true
	for i := range m.failures {
		if m.failures[i].Signal != 0 {
			f := m.failures[i]
			o.Failure = &f
			break
		}
	}
	if o.Failure == nil && len(m.failures) > 0 {
		f := m.failures[0]
		o.Failure = &f
	}
	o.Code = 1
	if o.Failure != nil && o.Failure.Code() != 0 {
		o.Code = o.Failure.Code()
	}
	switch m.cause.Kind {
	case CauseNone, CauseFailure, CauseAbort:
		o.Relaunch = true
	}
	return o
}
