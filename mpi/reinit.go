package mpi

import (
	"context"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// Global restart (seed 000, "Reinit"): when a process fails, ftmpirun
// --on-failure reinit respawns it, every survivor rolls back to the
// function given to Reinit, and the program resumes from its checkpoint,
// all inside the running job.
//
// Each rollback starts a new epoch. A process's World of one epoch owns an
// engine and a transport of its own, listening on a fresh address that is
// exchanged through the launcher (the rejoin fence): nothing of an older
// epoch, no connection, queued message or communicator, survives into the
// next, so old messages can never be delivered in the new epoch. The
// launcher connection (the runtime's rte.Process) is what lives across
// epochs.
//
// Go cannot longjmp out of arbitrary code. The rollback happens (a) at once
// for a blocked MPI call, which returns into the error handler; (b) at the
// next MPI call that reports an error; (c) when the resilient function
// returns; the context given to it is cancelled the moment the failure is
// known, so compute loops can stop. Under ErrorsReinitAsync the handler
// unwinds the goroutine to Reinit by panicking with a *Rollback, which
// Reinit recovers; under ErrorsReinitSync errors are returned and
// TestFailure unwinds.

// ReinitState tells the resilient function why it runs. It is ftmpi's,
// not seed 000's: the seed's resilient function takes only its data, and
// its section 1.4.3 "State" is an empty heading. The C binding names the
// values MPI_REINIT_NEW, MPI_REINIT_REINITED and MPI_REINIT_RESTARTED and
// reads them with MPI_Reinit_state (libmpi, ftmpi's extension); no MPI
// counterpart.
type ReinitState int

const (
	// ReinitNew: the first run in a process of the first start
	// (ftmpi's MPI_REINIT_NEW in C; no MPI counterpart).
	ReinitNew ReinitState = iota
	// ReinitReinited: a survivor rolled back after a failure (ftmpi's
	// MPI_REINIT_REINITED in C; no MPI counterpart).
	ReinitReinited
	// ReinitRestarted: a respawned process replacing a failed one
	// (ftmpi's MPI_REINIT_RESTARTED in C; no MPI counterpart).
	ReinitRestarted
)

func (s ReinitState) String() string {
	switch s {
	case ReinitNew:
		return "new"
	case ReinitReinited:
		return "reinited"
	case ReinitRestarted:
		return "restarted"
	}
	return fmt.Sprintf("ReinitState(%d)", int(s))
}

var (
	// ErrorsReinitAsync rolls every process back into Reinit's resilient
	// function as soon as a failure is known (MPI_ERRORS_REINIT_ASYNC). Set
	// it on CommWorld before Reinit.
	ErrorsReinitAsync = &Errhandler{name: "MPI_ERRORS_REINIT_ASYNC"}
	// ErrorsReinitSync returns errors to the caller after a failure; the
	// next TestFailure rolls back (MPI_ERRORS_REINIT_SYNC). Set it on
	// CommWorld before Reinit.
	ErrorsReinitSync = &Errhandler{name: "MPI_ERRORS_REINIT_SYNC"}
)

func isReinitHandler(h *Errhandler) bool { return h == ErrorsReinitAsync || h == ErrorsReinitSync }

// Rollback is the panic value with which ftmpi unwinds a goroutine to
// Reinit (Go's stand-in for the longjmp of seed 000). Reinit recovers it
// in the goroutine that runs the resilient function; a program that calls
// MPI from other goroutines under ErrorsReinitAsync must recover it there
// (or stop those goroutines when the context is cancelled). It has no MPI
// counterpart: the longjmp back to MPI_Reinit is Go's panic here.
type Rollback struct {
	Epoch  int    // the epoch that ended
	Reason string // the failure that ended it
}

func (r *Rollback) Error() string {
	return fmt.Sprintf("mpi: rollback to MPI_Reinit (epoch %d ended: %s)", r.Epoch, r.Reason)
}

// endReason describes why this World's epoch ended.
func (w *World) endReason() string {
	reason := "a process failed"
	if p := w.epochs(); p != nil {
		if note := p.LastNote(); note != "" {
			reason = note
		}
	}
	return fmt.Sprintf("rolled back by MPI_Reinit: %s; epoch %d is over", reason, w.epoch)
}

// endEpoch ends this World's epoch: every pending and later operation on
// it fails with ErrProcFailed (and, under ErrorsReinitAsync, unwinds to
// Reinit), the resilient function's context is cancelled, and the
// engine, transport and detector are released.
func (w *World) endEpoch(reason string) {
	if w.ended.Swap(true) {
		return
	}
	w.rt.TraceRollback(reason)
	w.reinitMu.Lock()
	cancel := w.cancel
	w.reinitMu.Unlock()
	if cancel != nil {
		cancel()
	}
	w.abortOnce.Do(func() { close(w.abort) })
	if w.hr == nil {
		w.release()
	}
	// Without a head the old epoch's connections carry the failure round
	// and the exchange of the next epoch's endpoints (hreinit.go).
}

// reinitHandle is the error handling of ErrorsReinitAsync and
// ErrorsReinitSync.
func (c *Comm) reinitHandle(h *Errhandler, err error) error {
	w := c.w
	p := w.epochs()
	if p == nil || !p.Active() {
		// Seed 000, 1.4.2: without an active rollback location, as
		// MPI_ERRORS_ARE_FATAL.
		w.fatal(err)
		return err
	}
	if reportsFailure(err) {
		// For TestFailure: the operation may have failed on a broken
		// connection before the launcher confirmed the death (the engine
		// counts no lost peer yet), and the launcher will end the epoch.
		w.failSeen.Store(true)
	}
	if h == ErrorsReinitSync || w.epoch != p.Running() {
		// Sync: seed 000, 1.4.2, as MPI_ERRORS_RETURN until TestFailure.
		// A communicator of an older epoch used in a newer one: its
		// error (the epoch is over) is returned, not a second rollback.
		return err
	}
	if w.ended.Load() || (reportsFailure(err) && w.awaitEpochEnd()) {
		panic(&Rollback{Epoch: w.epoch, Reason: w.endReason()})
	}
	return err
}

// isFailure reports whether err reports a process failure.
func isFailure(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Class == ErrProcFailed
}

// reportsFailure reports whether err reports a process failure, itself
// or in the first failed request of a Wait or Test of several
// (ErrInStatus): a Waitall with a receive from the failed process fails
// that way, and under ErrorsReinitAsync it must roll back as a failed
// Recv does, not return while the launcher ends the epoch (a C program's
// loop went on stepping and overwrote the checkpoint the others resumed
// from: libmpi/ctest TestFTReinit/async).
func reportsFailure(err error) bool {
	if isFailure(err) {
		return true
	}
	e, ok := err.(*Error)
	return ok && e.Class == ErrInStatus && isFailure(e.first)
}

// awaitEpochEnd waits until the launcher ends this World's epoch after a
// failure this process saw first (the launcher respawns the rank and
// announces the new epoch, or tears the job down). It reports true once
// the epoch ended.
func (w *World) awaitEpochEnd() bool {
	if p := w.epochs(); p == nil || !p.ReinitJob() {
		return false
	}
	<-w.abort
	return w.ended.Load()
}

// TestFailure rolls back to Reinit's resilient function if a failure was
// detected and ErrorsReinitSync is CommWorld's handler (MPI_Test_failure);
// then it does not return. Otherwise it returns nil at once.
func TestFailure(w *World) error {
	p := w.epochs()
	if p == nil || w.world.errh.Load() != ErrorsReinitSync || !p.Active() {
		return nil
	}
	if w.epoch != p.Running() {
		return nil
	}
	if w.ended.Load() || p.Latest() > w.epoch || ((w.eng.LostCount() > 0 || w.failSeen.Load()) && w.awaitEpochEnd()) {
		panic(&Rollback{Epoch: w.epoch, Reason: w.endReason()})
	}
	return nil
}

// Reinit sets fn as the rollback location and calls it (MPI_Reinit). When
// a process fails, ftmpirun --on-failure reinit respawns it and every
// process runs fn again with a World of the new epoch: survivors with
// ReinitReinited, the respawned process with ReinitRestarted. Only that
// World's CommWorld and CommSelf are valid in the new epoch; the
// communicators of older epochs fail with ErrProcFailed. ctx is cancelled
// the moment a failure is known. Reinit returns fn's result once fn
// returns in an epoch no failure ended.
//
// CommWorld's error handler must be ErrorsReinitAsync or ErrorsReinitSync
// (seed 000, 1.4.1), Reinit may be called once, and Finalize only after it
// returns. A failure while some live process is outside Reinit (before
// its call, or after it returned) has no rollback location there and
// ends the job as ErrorsAreFatal would (seed 000, 1.4.2), whether or not
// that process makes an MPI call first. Under mpi.Run (and RunConfig) the
// job is the launcher: a rank killed by World.Kill while every other rank
// is inside Reinit is started again as the rank's next incarnation (its
// function runs again from the start, on a World of the new epoch, and
// its Reinit calls fn with ReinitRestarted), the others roll back, and
// every epoch has a fresh in-process fabric; a panic is no failure there
// but a bug (Run returns its *PanicError and nothing is respawned); a
// failure Reinit cannot recover (a rank outside Reinit, or past 16
// restarts as ftmpirun's --max-restarts) ends the job and Run returns an
// *AbortError with the reason. The job is in Reinit mode from the first
// Reinit call: a Kill before it is a plain failure, after which Reinit
// ends the job (that failure had no rollback location). Not under
// RunSpares (ErrOther). Without a launcher that respawns
// (a singleton, or ftmpirun without --on-failure reinit), fn runs once
// and a failure is handled as the launcher's policy says. Under srun or
// mpiexec (no head) with FTMPI_REINIT=1, the new incarnation of a failed
// rank is a waiting spare process (FTMPI_SPARES) the survivors agree on
// (hreinit.go); with no spare left every survivor's Reinit returns the
// error that says so. Without FTMPI_REINIT=1 there it returns ErrOther
// naming the launcher.
func Reinit(w *World, fn func(ctx context.Context, w *World, state ReinitState) error) error {
	const op = "MPI_Reinit"
	if w == nil || fn == nil {
		return newErr(ErrArg, op, nil, NoPeer, "nil World or function")
	}
	if w.run != nil && w.rp == nil {
		return newErr(ErrOther, op, nil, NoPeer, "in-process jobs with spare processes (mpi.RunSpares) cannot roll back; use mpi.Run or mpi.RunConfig, or ftmpirun --on-failure reinit --spares")
	}
	if h := w.world.errh.Load(); !isReinitHandler(h) {
		return newErr(ErrOther, op, w.world, NoPeer, "set ErrorsReinitAsync or ErrorsReinitSync on CommWorld before MPI_Reinit (seed 000, 1.4.1); its handler is %v", h)
	}
	p := w.epochs()
	if p == nil { // a singleton: nothing can fail but itself
		return fn(context.Background(), w, ReinitNew)
	}
	if w.hr != nil {
		return reinitHeadless(w, fn)
	}
	var head reinitHead
	if w.run != nil {
		head = runHead{w.run, w.rank} // the in-process job plays the launcher (run.go)
	} else {
		if err := p.CheckHead("MPI_Reinit without FTMPI_REINIT=1"); err != nil {
			return newErr(ErrOther, op, nil, NoPeer, "%v", err)
		}
		head = p
	}
	if err := p.BeginReinit(w); err != nil {
		return newErr(ErrOther, op, nil, NoPeer, "%v", err)
	}
	epoch, err := head.ReinitActive(true)
	if err != nil {
		if w.run != nil {
			p.SetActive(false)
			return newErr(ErrProcFailed, op, nil, NoPeer, "%v", err)
		}
		return newErr(ErrOther, op, nil, NoPeer, "%v", err)
	}
	p.Advance(epoch, "a rank failed before this respawned process entered MPI_Reinit")
	state := ReinitNew
	if p.Incarnation() > 0 {
		state = ReinitRestarted
	}
	cur := w
	for {
		if cur.ended.Load() || p.Latest() > cur.epoch {
			// A failure happened before this process ran fn (or while it
			// rolled back): join the newest epoch first.
			next, err := rollForward(p, cur)
			if err != nil {
				p.SetActive(false)
				return newErr(ErrOther, op, nil, NoPeer, "rolling back: %v", err)
			}
			cur = next
		}
		p.SetRunning(cur.epoch)
		rolled, err := runResilient(fn, cur, state)
		if !rolled && !cur.ended.Load() {
			cur.phase(rte.PhaseReinitReturn)
			epoch, lerr := head.ReinitActive(false)
			if lerr != nil {
				p.SetActive(false)
				return newErr(ErrOther, op, nil, NoPeer, "%v", lerr)
			}
			if epoch == cur.epoch {
				p.SetActive(false)
				cur.phase(rte.PhaseReinitLeft)
				return err
			}
			// A newer epoch began as fn returned: roll back with the others.
			p.Advance(epoch, "a rank failed as MPI_Reinit was returning")
		}
		state = ReinitReinited
		next, rerr := rollForward(p, cur)
		if rerr != nil {
			p.SetActive(false)
			return newErr(ErrOther, op, nil, NoPeer, "rolling back: %v", rerr)
		}
		cur = next
	}
}

// rollForward ends old's epoch (if the announcement has not done so yet)
// and builds the World of the newest epoch, with CommWorld's and
// CommSelf's error handlers and codecs carried over.
func rollForward(p *process, old *World) (*World, error) {
	if !old.ended.Load() {
		// Reached when the launcher's announcement is still on its way:
		// it ends old.
		<-old.abort
	}
	for {
		target := p.Latest()
		var w *World
		var err error
		if old.run != nil {
			w, err = old.rj.openEpoch(p, target, old.rank)
		} else {
			w, err = openEpoch(p, target, old.cfg, nil, nil)
		}
		if err != nil {
			return nil, err
		}
		w.world.errh.Store(old.world.errh.Load())
		w.self.errh.Store(old.self.errh.Load())
		w.world.codec.Store(old.world.codec.Load())
		w.self.codec.Store(old.self.codec.Load())
		if newer := p.Install(w, w.epoch); !newer {
			return w, nil
		}
		w.endEpoch("a newer epoch began during the rollback")
		old = w
	}
}

// runResilient runs fn for one epoch; rolled reports that it was unwound
// by a Rollback.
func runResilient(fn func(context.Context, *World, ReinitState) error, w *World, state ReinitState) (rolled bool, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.reinitMu.Lock()
	w.cancel = cancel
	w.reinitMu.Unlock()
	if w.ended.Load() {
		cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*Rollback); !ok {
				panic(r)
			}
			rolled = true
		}
	}()
	return false, fn(ctx, w, state)
}

// reinitHead is the launcher's part of Reinit: told when a rank enters
// and leaves MPI_Reinit, it answers with the newest epoch (ftmpirun's
// head: the runtime, rte.Process; in process: the job, runHead).
type reinitHead interface {
	ReinitActive(active bool) (epoch int, err error)
}

// epochs is the Reinit state this World's process keeps across epochs:
// the launched process's, or under Run this rank incarnation's (nil for a
// singleton and under RunSpares).
func (w *World) epochs() *process {
	if w.proc != nil {
		return w.proc
	}
	return w.rp
}

// Epoch is the number of Reinit rollbacks this World's epoch follows: 0
// for the first, increased by each failure the job recovered from. It has
// no MPI counterpart (MPI_Reinit tells the resilient function only its
// state: new, reinited or restarted).
func (w *World) Epoch() int { return w.epoch }

// checkSetErrhandler enforces seed 000, 1.4: the Reinit handlers belong on
// CommWorld only, and once one is set no other Reinit handler may be.
func (c *Comm) checkSetErrhandler(h *Errhandler) error {
	const op = "MPI_Comm_set_errhandler"
	cur := c.errh.Load()
	switch {
	case isReinitHandler(h) && c.base != c.w.world:
		return newErr(ErrArg, op, c, NoPeer, "%v may only be set on MPI_COMM_WORLD (seed 000, 1.4)", h)
	case isReinitHandler(cur) && c.base == c.w.world && h != cur:
		return newErr(ErrArg, op, c, NoPeer, "MPI_COMM_WORLD has %v; another handler may not replace it (seed 000, 1.4.1)", cur)
	}
	return nil
}
