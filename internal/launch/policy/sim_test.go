package policy

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// Flags for the simulator:
//
//	go test ./internal/launch/policy -run TestSimulate -seed=1234            replay one schedule
//	go test ./internal/launch/policy -run TestSimulate -seed=1234 -simtrace  ... with its trace
//	go test ./internal/launch/policy -run TestSimulate -sims=200000          explore more
var (
	flagSeed  = flag.Int64("seed", -1, "replay only this simulator seed")
	flagSims  = flag.Int("sims", 0, "number of simulated schedules (default 10000, 2500 with -short or -race)")
	flagTrace = flag.Bool("simtrace", false, "print the event trace of a replayed seed")
)

// Process states, as the shell's /proc reading would see them.
const (
	stRunning = iota
	stStopped // SIGSTOP: hung
	stDead    // exited or killed, not reaped yet
	stReaped  // the agent reported it (Exited fed)
)

// Script phases of a simulated process.
const (
	phHello     = iota // to say hello
	phWaitHello        // hello sent (the machine answers in the same step)
	phFence            // to enter the bootstrap fence
	phInFence
	phRejoin // reinit: to rejoin epoch want
	phInRejoin
	phWork    // initialised: may spawn, leave Reinit, finalize
	phInSpawn // waiting for the spawn reply
	phLeave   // reinit: to leave MPI_Reinit
	phInLeave
	phFinalize
	phInFinalize
	phExit // Finalize returned: exits with status 0
	phDone
	phSpare // a spare after the bootstrap fence: waits for EventActivate or EventRelease
)

// sproc is one simulated process (a rank's incarnation or a child).
type sproc struct {
	id       int // index in sim.procs
	rank     int // process id
	inc      int
	pid      int
	state    int
	phase    int
	conn     Conn // 0: none (not connected yet, or closed)
	connOpen bool
	child    bool
	epoch    int // reinit: the epoch it is in
	want     int // reinit: the epoch it must rejoin
	left     bool
	spawned  bool // took part in the spawn

	helloOK   bool // the machine accepted its hello
	bell      bool // it died armed (connected, before Finalize): its exit bell may ring before it is reaped
	finSent   bool // it called Finalize
	finRet    bool // Finalize returned
	exit      Exit
	killOrder bool // the launcher (or the plan) sent it SIGKILL
	// The teardown's SIGKILL (SignalAll) ended it: a consequence, never
	// the root cause of a fatal-error abort.
	teardownKilled bool
	abortSent      bool // it sent Abort (a user's or a fatal error's)
	closedAt       int  // step its connection closed (-1: open or never)
	reapedAt       int  // step its Exited was fed (-1: not yet)

	// The launcher killed it, found stopped after its finalize fence
	// completed: it never exited after Finalize, its code is not the job's.
	hungAfterFence bool

	host int  // host index
	lost bool // its host was lost (HostLost): gone without an Exited

	spare     bool // a spare of the start set, not taken (yet)
	spareDied bool // it died as a waiting spare (no failure of the job)
	released  bool // it was sent EventRelease
	wasSpare  int  // the spare's process id it started as (-1: not a spare)

	// The relayed protocol (relay_sim_test.go): what the process sent
	// its host's agent, and what the agent forwarded to the head.
	fencesSent int  // fences sent (held or forwarded)
	rejoinSent int  // the newest epoch it sent a rejoin for (-1: none)
	fwdHello   bool // its hello reached the head (the head knows its connection)

	failedSeen map[int]int // rank -> failed events received (continue: one incarnation per rank)
	reinitSeen map[int]int // epoch -> reinit events received
}

type pendingCheck struct {
	token     uint64
	rank, inc int
}

// stats counts what the schedules exercised (so that a weakened
// simulator shows).
type stats struct {
	suspectKills, refused, stale, told, respawns, spawnsOK, spawnsFailed, codes, timeouts, teardowns, hostsLost int
	adopted, released, sparesDied, fatalAborts                                                                  int
	// The relayed protocol (relay_sim_test.go): requests sent and frames
	// up, replies and notifications and frames down, timer flushes, held
	// requests dropped with their connection, the largest batch, batches
	// of two or more.
	relayReqs, relayUp, relayMsgs, relayDown, relayFlushes, relayDropped, relayMaxBatch, relayBatches2 int
}

type sim struct {
	st    *stats
	rng   *rand.Rand
	seed  int64
	n     int
	mode  Mode
	m     *Machine
	procs []*sproc
	cur   map[int]*sproc // process id -> current process
	conns map[Conn]*sproc
	next  Conn
	pid   int
	step  int
	trace []string

	checks    []pendingCheck
	suspected map[[2]int]bool // (rank, inc) suspected by someone
	cause     Cause
	causeStep int
	done      bool
	spawnKey  string
	spawnOK   int   // step the spawn succeeded (-1: not)
	evCause   Cause // the cause the event of the current step implies, if it tears down
	aborted   bool
	lastAbort int
	// The teardown's cause is an abort that was a fatal error under
	// MPI_ERRORS_ARE_FATAL (Abort.Fatal): its code is the root cause's.
	fatalCause bool
	timedOut   bool
	interrupt  int
	errs       []error

	nhosts   int
	lostHost []bool
	hostLoss int // hosts lost in this schedule

	nspares int          // the last nspares of the n+nspares processes are spares
	taken   map[int]bool // spares adopted (process ids)

	idleStalls int // Stalls fed in a row while nothing else could move

	relay relayState // the agents' aggregation (relay_sim_test.go); off: the star
}

func (s *sim) tracef(format string, args ...any) {
	if *flagTrace {
		s.trace = append(s.trace, fmt.Sprintf("%5d ", s.step)+fmt.Sprintf(format, args...))
	}
}

func (s *sim) fail(format string, args ...any) {
	s.errs = append(s.errs, fmt.Errorf("step %d: "+format, append([]any{s.step}, args...)...))
}

func (s *sim) newProc(rank, inc int, child bool, epoch int) *sproc {
	s.pid++
	p := &sproc{id: len(s.procs), rank: rank, inc: inc, pid: 1000 + s.pid, child: child, epoch: epoch,
		closedAt: -1, reapedAt: -1, rejoinSent: -1, failedSeen: map[int]int{}, reinitSeen: map[int]int{}, wasSpare: -1}
	s.procs = append(s.procs, p)
	s.cur[rank] = p
	return p
}

// feed steps the machine and applies the actions, checking the properties
// that concern single actions.
func (s *sim) feed(ev Event) {
	s.step++
	s.tracef("%T %+v", ev, ev)
	switch e := ev.(type) {
	case Exited:
		switch {
		case e.StartErr != nil:
			s.evCause = Cause{CauseStart, 1}
		default:
			s.evCause = Cause{CauseFailure, failureCode(e.Exit)}
		}
	case Timeout:
		s.evCause = Cause{CauseTimeout, 124}
	case Interrupt:
		s.evCause = Cause{CauseSignal, e.Code}
	case Abort:
	case HostLost:
		s.evCause = Cause{CauseFailure, 128 + int(syscall.SIGKILL)}
	default:
		s.evCause = Cause{}
	}
	acts := s.m.Step(ev)
	if err := s.m.checkIndex(); err != nil {
		s.fail("after %T: %v", ev, err)
	}
	logged := false
	for _, a := range acts {
		s.tracef("    -> %v", a)
		switch a.Kind {
		case Log:
			logged = true
		case Notify:
			if logged && a.Msg.Kind != ctlwire.EventRelease { // a release tells of no failure
				s.fail("notification %+v after a log line in the same step", a.Msg)
			}
			for _, c := range a.To {
				s.relay.target(s.conns[c])
				s.deliver(c, a.Msg)
			}
		case Reply:
			s.relay.target(s.conns[a.Conn])
			s.deliver(a.Conn, a.Msg)
		case Drop:
			if p := s.conns[a.Conn]; p != nil && !p.lost {
				s.fail("connection of rank %d dropped: %+v", p.rank, acts)
			}
		case Check:
			// A check the launcher started after a failure (checkOthers)
			// stands for a suspicion: its confirmation may kill.
			s.suspected[[2]int{a.Rank, a.Incarnation}] = true
			s.checks = append(s.checks, pendingCheck{a.Token, a.Rank, a.Incarnation})
		case Signal:
			s.signal(a)
		case SignalAll:
			for _, p := range s.procs {
				if p.state == stRunning || p.state == stStopped {
					s.kill(p, a.Sig)
					p.teardownKilled = p.state == stDead && a.Sig == syscall.SIGKILL
				}
			}
		case TearDown:
			if s.cause.Kind != CauseNone {
				s.fail("second teardown %+v after %+v", a.Cause, s.cause)
			}
			s.cause, s.causeStep = a.Cause, s.step
			if a.Cause != s.evCause {
				s.fail("teardown %+v; the event implies %+v", a.Cause, s.evCause)
			}
		case Respawn:
			s.st.respawns++
			if s.mode != ModeReinit {
				s.fail("respawn in mode %d", s.mode)
			}
			if old := s.cur[a.Rank]; old.state != stReaped {
				s.fail("rank %d respawned while incarnation %d is not reaped", a.Rank, old.inc)
			}
			// Every connected survivor was told of the new epoch, once.
			for _, q := range s.procs {
				if q.rank != a.Rank && q.helloOK && q.connOpen && !q.spare && q.reinitSeen[a.Epoch] != 1 {
					s.fail("rank %d.%d told %d times of epoch %d", q.rank, q.inc, q.reinitSeen[a.Epoch], a.Epoch)
				}
			}
			if a.Host < 0 || a.Host >= s.nhosts || s.lostHost[a.Host] {
				s.fail("rank %d respawned on host %d (lost: %v)", a.Rank, a.Host, s.lostHost)
			}
			// A spare is taken instead when one waits, connected, on a live host.
			for _, q := range s.procs {
				if q.spare && q.connOpen && q.helloOK && !q.released && !q.finSent && !s.lostHost[q.host] {
					s.fail("rank %d respawned while spare %d waits", a.Rank, q.rank)
				}
			}
			p := s.newProc(a.Rank, a.Incarnation, false, a.Epoch)
			p.want = a.Epoch
			p.host = a.Host
		case Adopt:
			s.st.adopted++
			if s.mode != ModeReinit {
				s.fail("spare %d adopted in mode %d", a.Spare, s.mode)
			}
			if a.Spare < s.n || a.Spare >= s.n+s.nspares || s.taken[a.Spare] {
				s.fail("adopt of process %d: not a spare, or taken before (%v)", a.Spare, s.taken)
			}
			s.taken[a.Spare] = true
			if old := s.cur[a.Rank]; old.state != stReaped {
				s.fail("spare %d adopted as rank %d while incarnation %d is not reaped", a.Spare, a.Rank, old.inc)
			}
			for _, q := range s.procs {
				if q.rank != a.Rank && q.helloOK && q.connOpen && !q.spare && q.wasSpare != a.Spare && q.reinitSeen[m0(s, a)] != 1 {
					s.fail("rank %d.%d told %d times of the epoch of the adoption", q.rank, q.inc, q.reinitSeen[m0(s, a)])
				}
			}
		case StartChildren:
			if len(a.Start.Hosts) != a.Start.K {
				s.fail("spawn of %d children placed on %v", a.Start.K, a.Start.Hosts)
				break
			}
			for i := 0; i < a.Start.K; i++ {
				if h := a.Start.Hosts[i]; h < 0 || h >= s.nhosts || s.lostHost[h] {
					s.fail("child %d placed on host %d (lost: %v)", i, h, s.lostHost)
				}
				p := s.newProc(a.Start.Base+i, 0, true, 0)
				p.host = a.Start.Hosts[i]
				if s.rng.IntN(20) == 0 {
					p.state = stDead
					p.exit = Exit{Rank: p.rank, StartErr: errors.New("no such program")}
				}
			}
		case Done:
			if s.done {
				s.fail("Done twice")
			}
			s.done = true
		}
	}
}

// m0 is the epoch an Adopt action belongs to: the machine's current one.
func m0(s *sim, _ Action) int { return s.m.epoch }

// kill applies sig to p.
func (s *sim) kill(p *sproc, sig syscall.Signal) {
	switch sig {
	case syscall.SIGSTOP:
		if p.state == stRunning {
			p.state = stStopped
		}
	default:
		if p.state == stRunning || p.state == stStopped {
			if sig == syscall.SIGKILL {
				p.killOrder = true
			}
			s.die(p, Exit{Signal: sig})
		}
	}
}

func (s *sim) die(p *sproc, e Exit) {
	if p.spare && !p.finSent {
		p.spareDied = true
		s.st.sparesDied++
	}
	e.Rank, e.Incarnation, e.Pid = p.rank, p.inc, p.pid
	p.state, p.exit = stDead, e
	p.bell = p.helloOK && !p.finSent // armed at hello, disarmed at Finalize (package exitbell)
}

func (s *sim) signal(a Action) {
	p := s.cur[a.Rank]
	if p == nil {
		s.fail("signal to unknown process %d", a.Rank)
		return
	}
	switch a.Why {
	case WhySuspect:
		s.st.suspectKills++
		// No live process is killed without a confirmed suspicion, and a
		// respawned incarnation is never killed for its predecessor.
		if !s.suspected[[2]int{a.Rank, a.Incarnation}] {
			s.fail("rank %d incarnation %d killed, but nobody suspected that incarnation", a.Rank, a.Incarnation)
		}
		if p.inc == a.Incarnation && p.state == stRunning {
			s.fail("running rank %d incarnation %d killed on a suspicion", a.Rank, a.Incarnation)
		}
		if p.inc == a.Incarnation && p.state == stStopped && p.finRet {
			p.hungAfterFence = true
		}
	case WhyCancel:
		if !p.child {
			s.fail("rank %d cancelled: not a spawned process", a.Rank)
		}
	case WhyInject:
	default:
		s.fail("signal without a reason: %+v", a)
	}
	if a.AnyIncarnation || p.inc == a.Incarnation {
		s.kill(p, a.Sig)
	}
}

// deliver hands msg to the process on connection c.
func (s *sim) deliver(c Conn, msg ctlwire.Msg) {
	p := s.conns[c]
	if p == nil {
		return // closed: the shell drops it
	}
	if msg.Op == ctlwire.OpEvent {
		switch msg.Kind {
		case ctlwire.EventActivate:
			if !p.spare {
				s.fail("activation of process %d (rank %d.%d), not a waiting spare", p.wasSpare, p.rank, p.inc)
				return
			}
			// The spare becomes the rank's new incarnation (the shell reports
			// its signals and exit as the rank's: Adopt).
			delete(s.cur, p.rank)
			p.spare, p.wasSpare = false, p.rank
			p.rank, p.inc, p.want, p.epoch = msg.Rank, msg.Incarnation, msg.Epoch, 0
			s.cur[p.rank] = p
			if p.phase == phSpare {
				p.phase = phRejoin
			}
		case ctlwire.EventRelease:
			s.st.released++
			p.released = true
			if !p.spare || p.phase != phSpare && p.phase > phInFence {
				s.fail("release of process %d (spare %v, phase %d)", p.rank, p.spare, p.phase)
			}
			p.phase = phFinalize
		case ctlwire.EventFailed:
			s.st.told++
			p.failedSeen[msg.Rank]++
			if p.failedSeen[msg.Rank] > 1 && s.mode != ModeReinit {
				s.fail("rank %d (incarnation %d) told %d times of the failure of rank %d", p.rank, p.inc, p.failedSeen[msg.Rank], msg.Rank)
			}
			if msg.Rank == p.rank {
				s.fail("rank %d told of its own failure", p.rank)
			}
		case ctlwire.EventReinit:
			if p.spare {
				s.fail("waiting spare %d told of epoch %d", p.rank, msg.Epoch)
			}
			p.reinitSeen[msg.Epoch]++
			if p.reinitSeen[msg.Epoch] > 1 {
				s.fail("rank %d told twice of epoch %d", p.rank, msg.Epoch)
			}
			if msg.Epoch > p.want {
				p.want = msg.Epoch
			}
		}
		return
	}
	switch msg.Op {
	case ctlwire.OpHello:
		p.helloOK = true
		p.phase = phFence
		if s.mode == ModeReinit && p.inc > 0 {
			p.phase = phRejoin // a respawned process joins its epoch
		}
	case ctlwire.OpFence:
		if p.phase == phInFence {
			p.phase = phWork
			if p.spare {
				p.phase = phSpare
			}
		}
	case ctlwire.OpRejoin:
		if p.phase != phInRejoin {
			break
		}
		if msg.Epoch == p.want && msg.KV != nil {
			p.epoch, p.phase = msg.Epoch, phWork
		} else {
			if msg.Epoch > p.want {
				p.want = msg.Epoch
			}
			p.phase = phRejoin
		}
	case ctlwire.OpReinit:
		if p.phase != phInLeave {
			break
		}
		if msg.Epoch > p.epoch {
			p.want = max(p.want, msg.Epoch)
			p.phase = phRejoin
		} else {
			p.left, p.phase = true, phFinalize
		}
	case ctlwire.OpSpawn:
		if msg.Error == "" {
			s.st.spawnsOK++
		} else {
			s.st.spawnsFailed++
		}
		if p.phase == phInSpawn {
			p.phase = phFinalize
		}
		if msg.Error == "" && s.spawnOK < 0 {
			s.spawnOK = s.step
		}
	case ctlwire.OpFinalize:
		p.finRet = true
		p.phase = phExit
	case ctlwire.OpError:
		if strings.Contains(msg.Error, "is alive") {
			s.st.refused++
		}
	case ctlwire.OpSuspect, ctlwire.OpAbort:
	}
}

// choice is one thing the simulated world can do next.
type choice struct {
	weight int
	do     func()
}

// moves lists what can happen now. chaos adds failures, suspicions and
// the like; without it only progress is made (the drain phase).
func (s *sim) moves(chaos bool) []choice {
	var cs []choice
	add := func(w int, f func()) { cs = append(cs, choice{w, f}) }
	for _, p := range s.procs {
		p := p
		switch p.state {
		case stDead:
			if p.connOpen {
				add(4, func() { s.closeConn(p) })
			}
			if p.bell {
				add(4, func() { s.ring(p) })
			}
			add(3, func() { s.reap(p) })
		case stRunning:
			if f := s.progress(p); f != nil {
				add(6, f)
			}
			if !chaos {
				break
			}
			add(1, func() { // crash
				if s.rng.IntN(2) == 0 {
					s.die(p, Exit{Signal: syscall.SIGSEGV})
				} else {
					s.die(p, Exit{Status: s.rng.IntN(3)})
				}
			})
			if p.helloOK && p.connOpen {
				if q := s.randomTarget(p); q != nil {
					add(2, func() { s.suspect(p, q) })
				}
				if s.rng.IntN(400) == 0 {
					add(1, func() { s.abort(p, s.rng.IntN(300), false) })
				}
				// A call failed after a failure and MPI_ERRORS_ARE_FATAL
				// aborts the job: the consequence of another process's end.
				if s.someoneDied() && s.rng.IntN(8) == 0 {
					add(1, func() { s.abort(p, 1, true) })
				}
			}
		case stStopped:
			// The heartbeat detector of a live, connected process suspects it.
			for _, q := range s.procs {
				if q.state == stRunning && q.helloOK && q.connOpen {
					q := q
					add(2, func() { s.suspect(q, p) })
					break
				}
			}
		}
	}
	for i := range s.checks {
		i := i
		add(3, func() { s.answer(i) })
	}
	// The shell's periodic look at fences with waiters and at processes
	// that finalized but do not exit. It ticks forever; when nothing else
	// can move, a few ticks are let through (the policy may need two to
	// look) before the schedule counts as stuck.
	if len(s.m.fenceWait) > 0 || len(s.m.finWait) > 0 || len(s.m.rejoinWait) > 0 || s.m.lingering() {
		if len(cs) > 0 {
			s.idleStalls = 0
			add(1, func() { s.feed(Stall{}) })
		} else if s.idleStalls < 3 {
			add(1, func() { s.idleStalls++; s.feed(Stall{}) })
		}
	}
	s.flushMoves(add)
	if chaos {
		add(1, func() { // the fault-injection plan
			r := s.rng.IntN(s.m.Size())
			sig := syscall.SIGKILL
			if s.rng.IntN(2) == 0 {
				sig = syscall.SIGSTOP
			}
			s.feed(Inject{Rank: r, Signal: sig})
		})
		if s.rng.IntN(300) == 0 {
			add(1, func() { s.feed(Interrupt{Signal: syscall.SIGTERM, Code: 143}); s.interrupt++ })
		}
		for h := 1; h < s.nhosts; h++ { // the head's host (0) is never lost: its loss ends the job
			if !s.lostHost[h] {
				add(1, func() { s.loseHost(h) })
			}
		}
	}
	return cs
}

// loseHost: host h crashes or is cut off. Its processes are gone at once
// as far as the launcher can tell: no Exited will ever come for them (the
// agent is gone), their connections are dropped by the policy.
func (s *sim) loseHost(h int) {
	s.lostHost[h] = true
	s.hostLoss++
	var held []*sproc
	for _, p := range s.procs {
		if p.host == h && p.state != stReaped {
			if p.spare && !p.finSent && p.state != stDead {
				p.spareDied = true
			}
			p.lost, p.killOrder = true, true
			p.state, p.reapedAt = stReaped, s.step+1
			p.exit = Exit{Rank: p.rank, Incarnation: p.inc, Pid: p.pid, Signal: syscall.SIGKILL}
			held = append(held, p)
		}
	}
	s.feed(HostLost{Host: h, Reason: "sim"})
	for _, p := range held {
		if p.connOpen {
			s.closeConn(p)
		}
	}
}

func (s *sim) abort(p *sproc, code int, fatal bool) {
	s.evCause = Cause{CauseAbort, AbortCode(code)}
	s.aborted, s.lastAbort = true, AbortCode(code)
	p.abortSent = true
	if fatal {
		s.st.fatalAborts++
	}
	s.feed(Abort{Conn: p.conn, ID: 7, Code: code, Reason: "sim", Fatal: fatal})
	if s.cause.Kind == CauseAbort && s.causeStep == s.step {
		s.fatalCause = fatal
	}
}

// someoneDied: a process has ended (a fatal error is a consequence).
func (s *sim) someoneDied() bool {
	for _, p := range s.procs {
		if p.state == stDead || p.state == stReaped {
			return true
		}
	}
	return false
}

// rootCause is the simulation's own account of the first process that
// ended abnormally of its own (the root cause a fatal-error abort is the
// consequence of): in the order the launcher reaped them, the first with a
// non-zero status or a signal that was neither the teardown's SIGKILL nor
// the end of a process that aborted, of a spare that died waiting, of a
// child of a spawn that had not succeeded, or a start error. A lost
// host's processes count: the launcher cannot tell how they ended.
func (s *sim) rootCause() *sproc {
	var root *sproc
	for _, p := range s.procs {
		if p.state != stReaped || p.abortSent || p.spareDied || p.exit.StartErr != nil ||
			p.child && (s.spawnOK < 0 || s.spawnOK >= p.reapedAt) || p.teardownKilled && !p.lost ||
			p.exit.Signal == 0 && p.exit.Status == 0 {
			continue
		}
		if root == nil || p.reapedAt < root.reapedAt {
			root = p
		}
	}
	return root
}

func (s *sim) randomTarget(by *sproc) *sproc {
	var qs []*sproc
	for _, q := range s.procs {
		if q.rank != by.rank {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return nil
	}
	return qs[s.rng.IntN(len(qs))]
}

// suspect: by suspects q (q may be an old incarnation: a stale suspicion,
// or a running process: a false one).
func (s *sim) suspect(by, q *sproc) {
	if s.cur[q.rank] != q {
		s.st.stale++
	}
	s.suspected[[2]int{q.rank, q.inc}] = true
	s.feed(Suspect{Conn: by.conn, ID: 5, Rank: q.rank, Incarnation: q.inc, Reason: "sim"})
}

func (s *sim) answer(i int) {
	c := s.checks[i]
	s.checks = append(s.checks[:i], s.checks[i+1:]...)
	var p *sproc
	for _, q := range s.procs {
		if q.rank == c.rank && q.inc == c.inc {
			p = q
		}
	}
	state, alive, pid := "gone", false, 0
	if p != nil && p.state != stReaped {
		pid = p.pid
		switch p.state {
		case stRunning:
			state, alive = "running", true
		case stStopped:
			state = "stopped"
		case stDead:
			state = "dead"
		}
	}
	s.feed(Liveness{Token: c.token, Pid: pid, State: state, Alive: alive, Stopped: state == "stopped"})
	// A confirmed suspicion kills (fail-stop), unless the job is ending.
	if p != nil && p.state == stStopped && s.cause.Kind == CauseNone {
		s.fail("rank %d incarnation %d found stopped on a suspicion but not killed", p.rank, p.inc)
	}
}

func (s *sim) closeConn(p *sproc) {
	p.connOpen, p.closedAt = false, s.step
	delete(s.conns, p.conn)
	if s.relay.on && !s.relay.closed(p) {
		return // the head never knew the connection: its hello was held at the agent
	}
	s.feed(Closed{Conn: p.conn})
}

// ring is the shell's Dying: p's exit bell rang (before it is reaped;
// after, the agent has stopped watching it).
func (s *sim) ring(p *sproc) {
	p.bell = false
	s.feed(Dying{Rank: p.rank, Incarnation: p.inc, Pid: p.pid}) // an adopted spare's is its rank's, as its Exited
}

func (s *sim) reap(p *sproc) {
	p.bell = false
	if p.connOpen {
		s.closeConn(p)
	}
	p.state = stReaped
	if p.wasSpare >= 0 && !p.spare && p.exit.StartErr == nil {
		// An adopted spare: the shell reports its exit as its rank's (Adopt).
		p.exit.Rank, p.exit.Incarnation = p.rank, p.inc
	}
	s.feed(Exited{Exit: p.exit})
	p.reapedAt = s.step
}

// progress is p's next step of its script, nil if it waits.
func (s *sim) progress(p *sproc) func() {
	req := func(f func()) func() { return f }
	switch p.phase {
	case phHello:
		return req(func() {
			s.next++
			p.conn, p.connOpen = s.next, true
			s.conns[p.conn] = p
			p.phase = phWaitHello
			s.request(p, Hello{Conn: p.conn, ID: 1, Job: "job", Rank: p.rank, Incarnation: p.inc, Pid: p.pid})
		})
	case phFence:
		return func() {
			p.phase = phInFence
			p.fencesSent++
			s.request(p, Fence{Conn: p.conn, ID: 2, KV: map[string]string{ctlwire.EndpointKey(p.rank): fmt.Sprint("ep", p.rank)}})
		}
	case phRejoin:
		return func() {
			p.phase = phInRejoin
			p.rejoinSent = max(p.rejoinSent, p.want)
			s.request(p, Rejoin{Conn: p.conn, ID: 3, Epoch: p.want, KV: map[string]string{ctlwire.EpochEndpointKey(p.want, p.rank): "x"}})
		}
	case phWork:
		if s.mode == ModeReinit && p.want > p.epoch {
			return func() { p.phase = phRejoin }
		}
		if s.spawnKey != "" && !p.child && !p.spawned {
			return func() {
				p.phase, p.spawned = phInSpawn, true
				req := ctlwire.SpawnRequest{Key: s.spawnKey, Root: p.rank == 0, MaxProcs: 2, Pairs: []int{8, 9}}
				if req.Root || s.rng.IntN(4) == 0 { // the root lists the parents; another may (an older ftmpi's)
					req.Procs = s.parents()
				}
				b, _ := json.Marshal(req)
				s.feed(Spawn{Conn: p.conn, ID: 4, Request: string(b)})
			}
		}
		if s.mode == ModeReinit && !p.left {
			return func() {
				p.phase = phInLeave
				s.feed(ReinitActive{Conn: p.conn, ID: 6, Kind: ctlwire.ReinitLeave})
			}
		}
		return func() { p.phase = phFinalize }
	case phFinalize:
		return func() {
			p.phase, p.finSent = phInFinalize, true
			s.feed(Finalize{Conn: p.conn, ID: 8})
		}
	case phInFence, phInRejoin, phInLeave, phInFinalize, phInSpawn:
		if s.mode == ModeReinit && p.want > p.epoch && p.phase != phInRejoin && p.phase != phInFinalize {
			// The reinit event ends the World: a blocked call returns.
			return func() { p.phase = phRejoin }
		}
	case phExit:
		return func() { p.phase = phDone; s.die(p, Exit{Status: 0}) }
	}
	return nil
}

func (s *sim) parents() []int {
	ps := make([]int, s.n)
	for i := range ps {
		ps[i] = i
	}
	return ps
}

// run plays one schedule: a chaotic phase, then a drain in which every
// process makes progress until the job ends.
func runSim(seed int64, st *stats, relay bool) (s *sim, err error) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	n := 1 + rng.IntN(6)
	mode := Mode(rng.IntN(3))
	nh := 1 + rng.IntN(3)
	nspares := 0
	if rng.IntN(3) == 0 {
		nspares = 1 + rng.IntN(2)
	}
	hosts := make([]Host, nh)
	for h := range hosts {
		hosts[h] = Host{Name: fmt.Sprint("h", h), Slots: (n + nspares + nh - 1) / nh}
	}
	place := make([]int, n+nspares)
	for r := range place {
		place[r] = r % nh
	}
	m, err := New(Config{Job: "job", Size: n + nspares, Mode: mode, Verbose: rng.IntN(2) == 0, Hosts: hosts, Place: place, Spares: nspares})
	if err != nil {
		return nil, err
	}
	s = &sim{st: st, rng: rng, seed: seed, n: n, mode: mode, m: m, cur: map[int]*sproc{}, conns: map[Conn]*sproc{},
		suspected: map[[2]int]bool{}, spawnOK: -1, nhosts: nh, lostHost: make([]bool, nh), nspares: nspares, taken: map[int]bool{}}
	s.relay.on = relay
	if mode == ModeReinit {
		m.EnableRespawn(rng.IntN(4))
	}
	if mode != ModeReinit && rng.IntN(3) == 0 {
		m.EnableSpawn()
		s.spawnKey = "spawn-1"
	}
	for r := 0; r < n+nspares; r++ {
		p := s.newProc(r, 0, false, 0)
		p.host = place[r]
		if r >= n {
			p.spare, p.wasSpare = true, r
		}
	}
	if rng.IntN(10) == 0 {
		p := s.procs[rng.IntN(n)]
		p.state, p.exit = stDead, Exit{Rank: p.rank, StartErr: errors.New("exec format error")}
	}
	chaos := 20 + rng.IntN(200)
	for i := 0; i < chaos && !s.done && len(s.errs) == 0; i++ {
		s.pick(s.moves(true))
	}
	for i := 0; !s.done && len(s.errs) == 0; i++ {
		cs := s.moves(false)
		if len(cs) == 0 || i > 100000 {
			stuck := s.stuck()
			if stuck == "" || s.timedOut {
				var waiting []string
				for _, p := range s.procs {
					if p.state != stReaped {
						waiting = append(waiting, fmt.Sprintf("rank %d.%d state %d phase %d", p.rank, p.inc, p.state, p.phase))
					}
				}
				return s, fmt.Errorf("the job does not end (%d moves): %v %s", i, waiting, stuck)
			}
			// Nothing can move, for a reason the policy cannot see (a stopped
			// process nobody can suspect): --timeout ends it.
			s.timedOut = true
			s.st.timeouts++
			s.feed(Timeout{})
			continue
		}
		s.pick(cs)
	}
	st.hostsLost += s.hostLoss
	if relay {
		s.relay.account(st)
	}
	if len(s.errs) > 0 {
		return s, errors.Join(s.errs...)
	}
	return s, s.checkEnd()
}

// stuck says why nothing can move although the job has not ended, for a
// reason the policy cannot see (a stopped process nobody can suspect); ""
// if there is none: then the policy is at fault (someone waits on the
// launcher forever).
func (s *sim) stuck() string {
	for _, held := range s.relay.held {
		if len(held) > 0 {
			return "" // an agent holds a request: it must forward it (its timer), not wait for --timeout
		}
	}
	for _, p := range s.procs {
		// Not one whose finalize fence completed: the launcher looks at
		// those itself (Stall) and must end them.
		if p.state == stStopped && !p.finRet {
			return fmt.Sprintf("rank %d is stopped and no connected process can suspect it", p.rank)
		}
	}
	return ""
}

func (s *sim) pick(cs []choice) {
	total := 0
	for _, c := range cs {
		total += c.weight
	}
	k := s.rng.IntN(total)
	for _, c := range cs {
		if k -= c.weight; k < 0 {
			s.relay.begin()
			c.do()
			s.relay.end()
			s.release()
			return
		}
	}
}

// checkEnd checks the properties of a finished job.
func (s *sim) checkEnd() error {
	// Every process is gone.
	for _, p := range s.procs {
		if p.state != stReaped {
			return fmt.Errorf("Done with rank %d incarnation %d not reaped", p.rank, p.inc)
		}
	}
	// Nothing is left held at an agent (relayed).
	for h, held := range s.relay.held {
		if len(held) > 0 {
			return fmt.Errorf("Done with %d requests held at host %d's agent (rank %d.%d's %s)", len(held), h, held[0].p.rank, held[0].p.inc, held[0].key.op)
		}
	}
	// Every survivor is told of every failure exactly once (continue mode).
	if s.mode == ModeContinue {
		for _, d := range s.procs {
			if !s.mustTell(d) {
				continue
			}
			for _, p := range s.procs {
				if p == d || p.rank == d.rank || !p.helloOK || p.lost {
					continue
				}
				// p must know if its connection was open when d's death was
				// reaped or later.
				if (p.closedAt < 0 || p.closedAt >= d.reapedAt) && p.failedSeen[d.rank] != 1 {
					return fmt.Errorf("rank %d.%d (closed at %d) was told %d times of the failure of rank %d (%s, reaped at %d)",
						p.rank, p.inc, p.closedAt, p.failedSeen[d.rank], d.rank, d.exit, d.reapedAt)
				}
			}
		}
	}
	// Reinit: a survivor connected when an epoch began learns it.
	// (Duplicates are checked at delivery.)

	// The exit code of the mode.
	want, what := s.wantCode()
	if got := s.m.ExitCode(); want >= 0 && got != want {
		return fmt.Errorf("exit code %d, want %d (%s; cause %+v)", got, want, what, s.cause)
	} else if want >= 0 {
		s.st.codes++
	}
	if s.cause.Kind != CauseNone {
		s.st.teardowns++
	}
	return nil
}

// mustTell: d's death must reach every survivor (continue mode): it died
// by a signal, or connected and died before finalizing, not during a
// teardown, and is not a child of a spawn that had not succeeded.
func (s *sim) mustTell(d *sproc) bool {
	if d.exit.StartErr != nil {
		return false
	}
	if s.cause.Kind != CauseNone && s.causeStep <= d.reapedAt {
		return false
	}
	if d.child && (s.spawnOK < 0 || s.spawnOK >= d.reapedAt) {
		return false
	}
	return d.exit.Signal != 0 || d.helloOK && !d.finSent
}

// wantCode is the exit code the mode implies, from what the simulation
// saw (the teardown's cause is checked against the event that caused it
// when it happens).
func (s *sim) wantCode() (int, string) {
	rank0 := s.cur[0].exit.Code()
	var first *sproc
	for _, p := range s.procs {
		if s.isFailure(p) && (first == nil || p.reapedAt < first.reapedAt) {
			first = p
		}
	}
	failed := first != nil
	switch s.cause.Kind {
	case CauseTimeout:
		return 124, "timeout"
	case CauseSignal:
		return 143, "interrupted"
	case CauseStart:
		return 1, "a start error"
	case CauseFailure:
		if s.mode == ModeAbort {
			if first == nil {
				return -1, "abort mode: a failure the simulation does not count"
			}
			return failureCode(first.exit), fmt.Sprintf("abort mode: the first failure, rank %d %s", first.rank, first.exit)
		}
		return s.cause.Code, "reinit: the failure that could not be recovered"
	case CauseAbort:
		if r := s.rootCause(); s.fatalCause && r != nil {
			return r.exit.Code(), fmt.Sprintf("fatal-error abort: the root cause, rank %d %s", r.rank, r.exit)
		}
		if !(s.mode == ModeContinue && failed) {
			return s.cause.Code, "abort"
		}
	}
	if s.mode == ModeContinue && failed {
		lowest, code := -1, 0
		for _, p := range s.procs {
			if p.finRet && p.state == stReaped && !p.hungAfterFence && (lowest < 0 || p.rank < lowest) {
				lowest, code = p.rank, p.exit.Code()
			}
		}
		if lowest >= 0 {
			return code, "continue mode: the lowest rank that returned from Finalize"
		}
		if s.aborted {
			return s.lastAbort, "continue mode: the last abort"
		}
	}
	respawned := false // a Reinit respawn means a failure, even one the simulation does not count
	for _, p := range s.procs {
		respawned = respawned || p.inc > 0
	}
	if !failed && !respawned && s.cause.Kind == CauseNone {
		// No failure: like mpirun, the lowest process id that exited
		// non-zero (not counting kills by the launcher, start errors, nor
		// children whose spawn failed).
		ids := make([]int, 0, len(s.cur))
		for id := range s.cur {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			p := s.cur[id]
			if p.killOrder && p.exit.Signal == syscall.SIGKILL || p.exit.StartErr != nil || p.child && (s.spawnOK < 0 || s.spawnOK >= p.reapedAt) || p.spareDied {
				continue
			}
			if c := p.exit.Code(); c != 0 {
				return c, fmt.Sprintf("no failure: process %d exited non-zero", id)
			}
		}
		return 0, "no failure: every process exited 0"
	}
	return rank0, "rank 0's exit"
}

// isFailure: the death of p is a failure of the job (before any teardown).
func (s *sim) isFailure(p *sproc) bool {
	if p.spareDied {
		return false // the pool shrank
	}
	if p.exit.StartErr != nil || p.finSent || p.child && (s.spawnOK < 0 || s.spawnOK >= p.reapedAt) || s.cause.Kind != CauseNone && s.causeStep <= p.reapedAt {
		return false
	}
	return p.helloOK || p.killOrder && p.exit.Signal == syscall.SIGKILL
}

func TestSimulate(t *testing.T) { simulate(t, false) }

func simulate(t *testing.T, relay bool) stats {
	sims := *flagSims
	if sims == 0 {
		sims = 10000
		if testing.Short() || raceEnabled {
			sims = 2500
		}
	}
	first := int64(1)
	if *flagSeed >= 0 {
		first, sims = *flagSeed, 1
	}
	modes := map[Mode]int{}
	var st stats
	for seed := first; seed < first+int64(sims); seed++ {
		s, err := runSim(seed, &st, relay)
		if s != nil && *flagTrace {
			t.Log("\n" + strings.Join(s.trace, "\n"))
		}
		if err != nil {
			name := "TestSimulate$"
			if relay {
				name = "TestSimulateRelayed"
			}
			t.Fatalf("seed %d: %v\nreplay: go test ./internal/launch/policy -run '%s' -seed=%d -simtrace -v", seed, err, name, seed)
		}
		modes[s.mode]++
	}
	t.Logf("%d schedules (abort %d, continue %d, reinit %d): %+v", sims, modes[ModeAbort], modes[ModeContinue], modes[ModeReinit], st)
	return st
}
