package mpi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// World is one rank's MPI instance: what MPI_Init creates and
// MPI_Finalize ends. Its methods are safe for concurrent use
// (MPI_THREAD_MULTIPLE).
type World struct {
	rank, size int
	// rt is the runtime of the World's epoch (internal/rte): engine,
	// transport, launcher connection, control frames, failure drivers,
	// hosts. eng is rt.Eng, read on every call.
	rt   *rte.Rank
	eng  *p2p.Engine
	run  *rte.Job  // non-nil under Run
	rj   *runState // under Run: the job and its ranks. incarnations (run.go)
	rp   *process  // under Run: this incarnation's Reinit epochs (run.go); nil with spares
	mode string    // "inproc", "singleton", "unix", "tcp", "auto"
	cfg  Config    // validated

	world, self *Comm

	abort     chan struct{} // closed when this rank's job is torn down
	abortOnce *sync.Once
	finalized atomic.Bool
	killed    atomic.Bool // Kill was called (in-process fault injection)
	finOnce   sync.Once
	finErr    error
	stop      chan struct{} // closed by Finalize: stops the event watcher
	shm       *coll.ShmHost // the shared-memory collectives' side of this process, made at its first segment (coll_shm.go)
	shmOnce   sync.Once
	bg        sync.WaitGroup

	proc     *process    // the launched process this World belongs to; nil under Run and for a singleton
	net      *rte.Net    // the sockets of this epoch of a launched process; nil under Run and for a singleton
	epoch    int         // Reinit epoch of this World (0: the first)
	peerInc  []int       // incarnation of each rank's process in this epoch
	parent   *Comm       // intercommunicator to the parents of a spawned World
	ended    atomic.Bool // a Reinit rollback ended this World's epoch
	failSeen atomic.Bool // an operation under a Reinit handler reported a process failure
	relOnce  sync.Once   // release runs once
	stopOnce sync.Once   // stop is closed once (release, retire)
	hr       *hreinit    // headless Reinit (FTMPI_REINIT=1 under srun/mpiexec): the process's state across epochs; nil otherwise
	round    *Comm       // headless Reinit: the ranks' communicator of the failure round (hreinit.go)
	reinitMu sync.Mutex
	cancel   func() // cancels the resilient function's context of this epoch

	ft    ftWorld    // fault-tolerance state (ft.go)
	bsend bsendState // the attached buffer of buffered sends (bsend.go)
	chk   checkState // the checking mode's live requests and private communicators (check.go)
	dpm   dpmState   // ports and connections in progress (dpm.go)

	spares      spareState        // spare processes: this one as a spare, or the pool it may take (spare.go)
	fence       finalFence        // MPI_Finalize without a head: who has entered it (finalize.go)
	replacement *Comm             // the communicator a repair took this spare into (Replacement)
	runWorlds   []*World          // under Run: every process's World (tests reach a spare through it)
	replaceHook func(step string) // tests: called at a step of Replace
}

// Init initialises MPI for this process (MPI_Init) with DefaultConfig and
// the FTMPI_* environment variables applied over it: InitConfig(DefaultConfig()).
func Init() (*World, error) { return InitConfig(DefaultConfig()) }

// InitConfig initialises MPI for this process (MPI_Init) with cfg, over
// which the FTMPI_* environment variables are applied (Config.ApplyEnv).
// Under ftmpirun the rank learns its rank, size and peers from the
// launcher; otherwise the program is a singleton of size 1. Errors, an
// invalid Config among them, are returned, never fatal (seed 003,
// 17.5.2).
//
// MPI_Init may be called once per process: a second call (also after
// Finalize) returns ErrOther, under ftmpirun and in a singleton alike. A
// failed call does not count. mpi.Run does not call Init: its ranks are
// not processes.
func InitConfig(cfg Config) (w *World, err error) {
	if !processInit.CompareAndSwap(false, true) {
		if processFinalized.Load() {
			return nil, newErr(ErrOther, "MPI_Init", nil, NoPeer, "called after MPI_Finalize: MPI cannot be initialised again in this process (MPI_Init may be called once per process)")
		}
		return nil, newErr(ErrOther, "MPI_Init", nil, NoPeer, "MPI is already initialised in this process (MPI_Init may be called once per process)")
	}
	defer func() {
		if err != nil {
			processInit.Store(false)
		}
	}()
	cfg, err = envConfig(cfg)
	if err != nil {
		return nil, newErr(ErrArg, "MPI_Init", nil, NoPeer, "%v", err)
	}
	p, err := rte.Launch(processHooks)
	if err != nil {
		return nil, newErr(ErrOther, "MPI_Init", nil, NoPeer, "%v", err)
	}
	if p == nil {
		return newSingleton(cfg), nil
	}
	cfg.Transport = p.Transport(cfg.Transport) // the job's choice (the runtime validated it)
	w, err = initProcess(p, cfg)
	if err != nil {
		return nil, newErr(ErrOther, "MPI_Init", nil, NoPeer, "%v", err)
	}
	return w, nil
}

// processInit records that MPI_Init succeeded in this process. It is the
// package's one piece of process-wide state, and deliberately so: MPI_Init
// is once per process (the launcher's connection, the rank's identity and
// the environment are the process's); the Worlds of mpi.Run never read it.
var processInit atomic.Bool

// processFinalized records that the World of this process (not one of
// Run's) was finalized: a later Init says so.
var processFinalized atomic.Bool

// engineConfig is the engine's part of cfg for process id self.
func engineConfig(self int, cfg Config) p2p.Config {
	return p2p.Config{Self: self, EagerLimit: cfg.EagerLimit, Spin: cfg.WaitSpin, Untyped: cfg.UntypedMatch}
}

func newSingleton(cfg Config) *World {
	fab := rte.NewJob(1).Fab // a job of one process, alone in its fabric
	eng := p2p.New(engineConfig(0, cfg))
	w := newWorld(0, 1, eng, fab.Attach(0, eng), "singleton")
	w.cfg = cfg
	w.rt.SetDiag(cfg.diag)
	w.abort = make(chan struct{})
	w.abortOnce = new(sync.Once)
	return w
}

func newWorld(rank, size int, eng *p2p.Engine, tr transport.Transport, mode string) *World {
	return newWorldIn(rank, size, nil, rank, eng, tr, mode, nil, nil, worldSpares{})
}

// worldSpares is a World's part in the spare processes of its start set:
// the pool a rank may take, or that the World is a spare.
type worldSpares struct {
	pool    []int // process ids of the spares
	isSpare bool
	hr      *hreinit // headless Reinit state (nil: none)
}

// newWorldIn builds the World of process proc among process ids
// 0..universe-1 (the engine's address space); CommWorld is the processes
// members (nil: all of them, in order), proc being its rank wrank. Only
// spawned worlds have members: their process ids follow the parents'.
// net is the launched process's communication in this epoch (nil under
// Run and for a singleton), peerInc the incarnation of each process in
// this epoch (nil: all 0).
func newWorldIn(proc, universe int, members []int, wrank int, eng *p2p.Engine, tr transport.Transport, mode string, net *rte.Net, peerInc []int, sp worldSpares) *World {
	w := &World{rank: proc, size: universe, eng: eng, mode: mode, stop: make(chan struct{}), peerInc: peerInc, hr: sp.hr}
	w.rt = rte.NewRank(rte.RankConfig{Proc: proc, Universe: universe, Eng: eng, Tr: tr, Net: net, PeerInc: peerInc, Stop: w.stop, WG: &w.bg,
		Hang: w.hangDelegate(), Fence: w.fenceDelegate(),
		Spares: rte.SpareConfig{Pool: sp.pool, IsSpare: sp.isSpare, Pairs: ctxPairs, InEpoch: w.inEpoch},
		Reinit: sp.hr.driver(),
		Frames: rte.Frames{Revoke: w.onRevoke, Agree: w.onAgreeMsg, CollFail: w.onCollFail},
		Ports:  w.portDelegate(),
	})
	w.spares.isSpare = sp.isSpare
	w.rt.Start()
	// A loss reaches every part that cares by subscription, in this order
	// (the failure order first: the others read it; the runtime's own
	// subscribers, the spares' driver among them, ran before and read only
	// the engine's state).
	w.subscribeFT()                                                     // failure order, revocation overlays, agreements, models, a batch at a time (ft.go)
	w.rt.SubscribeLost(func(int, error) { w.rt.Fence().Wake() })        // a Finalize waiting for the peer need not any more (finalize.go)
	w.rt.SubscribeLost(func(peer int, _ error) { w.hreinitLost(peer) }) // without a head, a failure ends the Reinit epoch (hreinit.go)
	wsize := universe
	if members != nil {
		wsize = len(members)
	}
	w.world = newComm(&Comm{w: w, name: "MPI_COMM_WORLD", ctx: ctxWorld, rank: wrank, size: wsize, members: members})
	w.world.errh.Store(ErrorsAreFatal)
	w.self = newComm(&Comm{w: w, name: "MPI_COMM_SELF", ctx: ctxSelf, rank: 0, size: 1, members: []int{proc}})
	w.self.errh.Store(ErrorsAreFatal)
	w.registerComm(w.world)
	w.registerComm(w.self)
	if sp.hr != nil && !sp.isSpare {
		w.newRoundComm()
	}
	return w
}

// headlessExit is how a process without a head ends itself when the
// ranks' fail-stop rule says so (it was declared failed, or it lost
// contact with every other process): at once, with a non-zero status,
// removing its socket directory first (nothing else on its host may see
// it dead to remove it).
func headlessExit(d *rte.Diag, proc int, removeDir func()) func(reason string) {
	return func(reason string) {
		d.Logf("process %d: %s; exiting", proc, reason)
		removeDir()
		d.Exit(1)
	}
}

// netConfig is the communication part of cfg, for the runtime.
func (cfg Config) netConfig() rte.NetConfig {
	return rte.NetConfig{
		Transport: cfg.Transport, EagerLimit: cfg.EagerLimit, WaitSpin: cfg.WaitSpin,
		ReaderSpin: cfg.ReaderSpin, SpinYield: cfg.SpinYield, ConnectTimeout: cfg.ConnectTimeout,
		Untyped: cfg.UntypedMatch,
	}
}

// process is the runtime of a launched process, whose epochs' Worlds are
// Worlds.
type process = rte.Process[World]

// processHooks are what a launched process's runtime does to the World
// of its current epoch.
var processHooks = rte.Hooks[World]{
	FailPeer: func(w *World, rank int, cause error) { w.eng.FailPeer(rank, cause) },
	EndEpoch: (*World).endEpoch,
	Spare:    func(w *World) *rte.Rank { return w.rt },
	Hang:     (*World).onLauncherHang,
}

// initProcess starts the World of a launched process p: under ftmpirun,
// or under a PMI launcher (no ftmpirun head: one PMI exchange, then the
// ranks detect and enforce failures themselves; with FTMPI_REINIT=1
// Reinit without a head).
func initProcess(p *process, cfg Config) (*World, error) {
	var hr *hreinit
	if d := p.NewHeadlessReinit(); d != nil {
		hr = &hreinit{d: d}
	}
	w, err := openEpoch(p, p.Latest(), cfg, hr, nil)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Start(w, w.epoch)
	if err := p.Arm(cfg.FaultInjection); err != nil {
		w.Finalize()
		return nil, err
	}
	if w.spares.isSpare { // ftmpirun --spares, a process Replace spawned, or the last FTMPI_SPARES tasks of a PMI step
		return w.spareInit()
	}
	return w, nil
}

// spareInit is the wait of a spare process inside Init (ftmpirun
// --spares, or a process Replace spawned): it returns once a repair took
// it (CommWorld is then the repaired communicator). A spare released at
// the end of the job finalizes and exits with status 0 without returning
// to the program; an orphaned one (its repair's survivors all failed)
// exits with status 1, a failure the others learn of.
func (w *World) spareInit() (*World, error) {
	take, err := w.awaitActivation()
	for err == nil && take != nil && take.next != nil {
		// Without a head: the ranks decided a new Reinit epoch (hreinit.go);
		// this process joins it as a rank's new incarnation or still a spare.
		nw, jerr := w.hr.join(w.proc, w, *take.next)
		if jerr != nil {
			return nil, jerr
		}
		if !nw.spares.isSpare {
			return nw, nil
		}
		w = nw
		take, err = w.awaitActivation()
	}
	switch {
	case take != nil:
		// The launcher took it instead of respawning the rank: it is that
		// rank's new incarnation and joins the rank's Reinit epoch, as a
		// respawned process would.
		p := w.proc
		p.Become(take.rank, take.inc, take.epoch)
		w.release()
		nw, err := openEpoch(p, take.epoch, w.cfg, nil, nil)
		if err != nil {
			return nil, err
		}
		p.Install(nw, nw.epoch) // a newer epoch meanwhile: Reinit rolls forward
		return nw, nil
	case err == nil:
		// A repair of the ranks took it: for the launcher it is a rank now
		// (its death a failure, no longer the pool's loss).
		if p := w.proc; p != nil { // nothing to tell without a head (srun)
			if err := p.SpareTaken(); err != nil {
				return nil, err
			}
		}
		return w, nil
	case errors.Is(err, errSpareReleased):
		w.Finalize()
		w.diag().Exit(0)
	case errors.Is(err, errSpareOrphaned), errors.Is(err, errSpareEnded):
		w.logf("spare process %d: %v; exiting", w.rank, err)
		if w.proc != nil {
			w.proc.RemoveDir()
		}
		w.diag().Exit(1)
	}
	return nil, err
}

// openEpoch builds this process's World for a Reinit epoch (0: the first
// start) around the communication the runtime opened for it
// (rte.Process.OpenEpoch: nothing of an older epoch survives into it). If
// a newer epoch starts meanwhile (another failure), it joins that one.
// hr is the headless Reinit state (nil: none); lay, when not nil, says
// who is who (a headless Reinit epoch after the first), else the start
// information does.
func openEpoch(p *process, epoch int, cfg Config, hr *hreinit, lay *rte.Layout) (*World, error) {
	net, err := p.OpenEpoch(epoch, cfg.netConfig())
	if err != nil {
		return nil, err
	}
	proc, universe := p.Proc()
	l := p.StartLayout()
	if lay != nil {
		l = *lay
		l.Starters = l.Members
		if l.IsSpare {
			l.Members, l.WRank = []int{proc}, 0
		}
	}
	sp := worldSpares{hr: hr, pool: l.Pool, isSpare: l.IsSpare}
	starters := l.Starters // the epoch's ranks (process ids), also at a spare
	eng := net.Eng
	w := newWorldIn(proc, universe, l.Members, l.WRank, eng, net.Tr, net.Mode, net, net.PeerInc, sp)
	if p.Headless() {
		w.rt.Fails.Headless(headlessExit(cfg.diag, proc, p.RemoveDir), p.Confirm(net))
		if gone := p.PeerGone(net); gone != nil {
			w.rt.SetPeerGone(gone) // after the other subscribers
		}
	}
	w.cfg = cfg
	w.rt.SetDiag(cfg.diag)
	w.proc = p
	w.net = net
	w.epoch = net.Epoch
	inc := p.Incarnation()
	w.startTrace(inc, sp.isSpare)
	w.abort = make(chan struct{})
	w.abortOnce = new(sync.Once)
	// A broken connection is a suspicion: the launcher confirms it (the
	// process is dead, or it kills it) before this rank declares it failed.
	eng.SetSuspectHook(func(peer int, cause error) {
		if !eng.IsLost(peer) && !w.finalized.Load() && (!w.ended.Load() || w.roundNeeds(peer)) {
			w.rt.Fails.Declare(peer, 0, fmt.Sprintf("connection broken: %v", cause))
		}
	})
	for _, r := range net.Dead {
		eng.FailPeer(r, fmt.Errorf("rank %d died during start-up", r))
	}
	w.startHang()
	if pairs, parents := p.Parents(); parents != nil && !sp.isSpare {
		if err := w.joinParent(pairs, parents); err != nil {
			w.release()
			return nil, err
		}
	}
	if ring := w.heartbeatRing(starters); len(ring) > 1 && cfg.Detector {
		hb := rte.Heartbeats{Period: cfg.HeartbeatPeriod, Timeout: cfg.HeartbeatTimeout, Incarnation: inc}
		var world []int // CommWorld's agreement overlay (sorted process ids): a spare is no member
		if !sp.isSpare {
			world = slices.Sorted(slices.Values(w.world.memberWorldRanks()))
		}
		if err := w.rt.StartDetector(hb, ring, w.failedOrder(), w.epoch == 0, world); err != nil {
			w.release()
			return nil, err
		}
		w.rt.Fails.Joined(net.PeerInc)
	}
	w.openWorldAgreeSeg()
	return w, nil
}

// Rank is this process's rank in CommWorld (MPI_Comm_rank of
// MPI_COMM_WORLD).
func (w *World) Rank() int { return w.world.rank }

// Size is the number of processes in CommWorld (MPI_Comm_size of
// MPI_COMM_WORLD).
func (w *World) Size() int { return w.world.size }

// CommWorld returns MPI_COMM_WORLD. After a Reinit rollback it is the
// new epoch's, whichever World of the process it is asked of.
func (w *World) CommWorld() *Comm {
	if p := w.epochs(); p != nil {
		if cur := p.Current(); cur != w && cur != nil {
			return cur.world
		}
	}
	return w.world
}

// CommSelf returns MPI_COMM_SELF (the current epoch's after a Reinit
// rollback).
func (w *World) CommSelf() *Comm {
	if p := w.epochs(); p != nil {
		if cur := p.Current(); cur != w && cur != nil {
			return cur.self
		}
	}
	return w.self
}

// Transport names the transport in use: "inproc", "singleton", "auto",
// "unix" or "tcp". It has no MPI counterpart (Config.Transport).
func (w *World) Transport() string { return w.mode }

// MessagesSent is the number of messages this process has sent so far,
// user and collective traffic alike (protocol frames not counted); a
// performance-variable in the spirit of MPI_T.
func (w *World) MessagesSent() uint64 { return w.eng.Sent() }

// Finalized reports whether Finalize was called (MPI_Finalized).
func (w *World) Finalized() bool { return w.finalized.Load() }

// Finalize ends MPI for this rank (MPI_Finalize). It waits until every rank
// has called Finalize, then closes connections. Calling it again is a
// no-op.
//
// Deferred (defer w.Finalize()) in a goroutine that panics, it does not
// wait for the other ranks, which may be waiting for this one: the panic
// goes on, is printed with its stack, and the process dies of it as of
// any crash (the other ranks see a failed process).
func (w *World) Finalize() error {
	if r := recover(); r != nil {
		// recover returns the panic only when Finalize itself is the
		// deferred call; a Finalize called otherwise gets nil and goes on.
		panic(r)
	}
	if p := w.epochs(); p != nil {
		if p.Active() {
			return newErr(ErrOther, "MPI_Finalize", nil, NoPeer, "called inside MPI_Reinit: call it after Reinit returns (seed 000, 1.3)")
		}
		if cur := p.Current(); cur != w {
			// A World of an ended Reinit epoch: finalize the current one.
			w.finalized.Store(true)
			return cur.Finalize()
		}
	}
	w.finOnce.Do(func() {
		if !w.killed.Load() {
			w.chkFinalize() // the checking mode: what this process still holds (check.go)
		}
		w.phase(rte.PhaseFinalize)
		if !w.killed.Load() {
			w.releaseSpares() // the job ends: waiting spares leave Init
		}
		w.phase(rte.PhaseFinalizeFence)
		var err error
		switch {
		case w.killed.Load():
			// A killed rank takes no part in the fence.
		case w.run != nil:
			err = w.run.Fence()
		case w.proc != nil && !w.proc.Headless():
			err = w.proc.Finalize() // ftmpirun's fence
		case w.proc != nil:
			// Under a PMI launcher: the ranks' own fence, then PMI's
			// finalize (which is not a fence).
			w.finalizeFence()
			err = w.proc.Finalize()
		}
		w.phase(rte.PhaseFinalizeFenced)
		w.finalized.Store(true)
		if w.run == nil {
			processFinalized.Store(true)
		}
		if w.proc != nil {
			w.proc.Finalizing()
		}
		w.release()
		if w.hr != nil {
			w.hr.releasePrev()
		}
		if w.proc != nil {
			w.proc.Close()
		}
		if err != nil {
			w.finErr = newErr(ErrOther, "MPI_Finalize", nil, NoPeer, "%v", err)
		}
		w.phase(rte.PhaseFinalized)
	})
	return w.finErr
}

// phase reports that this process reached phase (internal/inject's
// phases of the end of a job): a kill or stop tied to it is executed now.
// Nothing under Run (a signal would hit every rank of the test process).
func (w *World) phase(phase string) {
	if w.proc != nil {
		w.proc.Phase(phase)
	}
}

// release stops this World's goroutines and closes its engine and
// transport (not the launcher connection, which the process keeps across
// Reinit epochs).
func (w *World) release() {
	w.relOnce.Do(func() {
		w.stopBG()
		// The transport first: it writes the control frames still queued
		// (briefly) and gives back the buffers of in-flight requests.
		w.rt.Tr.Close()
		w.eng.Close()
		w.bg.Wait()
		w.rt.WriteTrace()
	})
}

// stopBG closes stop: the World's goroutines (detector) end.
func (w *World) stopBG() { w.stopOnce.Do(func() { close(w.stop) }) }

// Abort terminates every process of the job with exit code code
// (MPI_Abort). Under ftmpirun the launcher kills the job and exits with
// code; under Run the calling goroutine exits (runtime.Goexit), every
// other rank's pending and later calls fail, and Run returns an
// *AbortError. It does not return.
func (w *World) Abort(code int) { w.abortJob(code, "MPI_Abort called", false) }

// abortJob is Abort with the reason the launcher prints; fatal marks a
// fatal error under MPI_ERRORS_ARE_FATAL (the launcher then takes the
// job's exit code from the failure that caused it, if any).
func (w *World) abortJob(code int, reason string, fatal bool) {
	w.rt.WriteTrace() // the timeline up to the abort
	if w.run != nil {
		w.run.Abort(w.rank, code)
		runtime.Goexit()
	}
	switch {
	case w.proc != nil && fatal:
		w.proc.AbortFatal(code, reason)
	case w.proc != nil:
		w.proc.Abort(code, reason)
	}
	w.diag().Exit(code)
}

// Kill simulates the crash of this process (fault injection). Under Run,
// every other rank learns of the failure as if the process had died, this
// rank's pending calls fail, and the calling goroutine ends
// (runtime.Goexit); Run does not count it as an error. Under Run with
// Reinit the rank is started again in a new epoch (see Reinit). In a real process it
// sends SIGKILL to itself. It does not return. It has no MPI
// counterpart: fault injection (the in-process kill -9).
func (w *World) Kill() {
	if w.run == nil {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	w.killInProc()
	runtime.Goexit()
}

// aborted returns the error for calls interrupted by a job teardown.
func (w *World) abortedErr(op string, c *Comm) error {
	if w.ended.Load() {
		return newErr(ErrProcFailed, op, c, NoPeer, "%s", w.endReason())
	}
	if w.finalized.Load() {
		return newErr(ErrOther, op, c, NoPeer, "called after MPI_Finalize")
	}
	return newErr(ErrOther, op, c, NoPeer, "job aborted")
}
