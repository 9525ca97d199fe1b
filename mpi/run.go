package mpi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// AbortError is returned by Run when a rank called Abort (MPI_Abort) or an
// error was fatal (MPI_ERRORS_ARE_FATAL), or when the job ended on a
// failure Reinit cannot recover (Reason says which: seed 000, 1.4.2).
type AbortError struct {
	Rank, Code int
	// Reason is why the runtime ended the job ("" when a rank aborted
	// it); Rank is then the failed rank, or the one that found out.
	Reason string
}

func (e *AbortError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("mpi: the job ended with code %d: %s", e.Code, e.Reason)
	}
	return fmt.Sprintf("mpi: rank %d aborted the job with code %d", e.Rank, e.Code)
}

// PanicError is returned by Run (joined with the other ranks' errors) for a
// rank whose function panicked: the value and the goroutine's stack at the
// panic, so the cause is not lost with the goroutine. It has no MPI
// counterpart: Go-specific.
type PanicError struct {
	Rank  int
	Value any    // what was passed to panic
	Stack []byte // the panicking goroutine's stack (runtime/debug.Stack)
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("mpi: rank %d panicked: %v\n\n%s", e.Rank, e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Run runs fn as n ranks, each a goroutine with its own World, connected by
// an in-memory transport with the same semantics as the socket transports:
// RunConfig(n, DefaultConfig(), fn). It has no MPI counterpart (see
// RunConfig).
func Run(n int, fn func(w *World) error) error { return RunConfig(n, DefaultConfig(), fn) }

// RunConfig runs fn as n ranks, each a goroutine with its own World
// configured by cfg (taken as given: the environment is not read, but
// for FTMPI_CHECK=1, which turns Config.Check on),
// connected by an in-memory transport with the same semantics as the
// socket transports. A rank whose fn returns nil is finalized
// automatically. If any rank returns an error, panics, or aborts, the job
// is torn down: every other rank's pending and later MPI calls fail, and
// RunConfig returns the errors (an *AbortError for an abort, a *PanicError
// with the stack for a panic). It has no MPI counterpart: it is what
// mpiexec -n n does, in one process, with MPI_Init and MPI_Finalize
// around each fn.
func RunConfig(n int, cfg Config, fn func(w *World) error) error { return runJob(n, 0, cfg, fn) }

// RunSpares is RunConfig with spares extra processes (process ids n ..
// n+spares-1) that wait, as goroutines, until Comm.Replace takes them as
// replacements of failed ranks: fn runs for a spare only once it was taken,
// with the repaired communicator as CommWorld (World.Replacement); a spare
// the job did not need ends without calling fn. It has no MPI counterpart:
// it is ftmpirun --spares in one process (Fenix's spare processes).
func RunSpares(n, spares int, cfg Config, fn func(w *World) error) error {
	return runJob(n, spares, cfg, fn)
}

func runJob(n, spares int, cfg Config, fn func(w *World) error) error {
	if n < 1 {
		return newErr(ErrArg, "mpi.Run", nil, NoPeer, "need at least 1 rank, got %d", n)
	}
	if spares < 0 {
		return newErr(ErrArg, "mpi.Run", nil, NoPeer, "spares %d: must not be negative", spares)
	}
	if err := cfg.Validate(); err != nil {
		return newErr(ErrArg, "mpi.Run", nil, NoPeer, "%v", err)
	}
	if v, _ := os.LookupEnv(EnvCheck); strings.TrimSpace(v) == "1" {
		cfg.Check = true // the checking mode under any launcher, Run included (check.go)
	}
	if v, _ := os.LookupEnv(EnvTrace); cfg.Trace == "" && strings.TrimSpace(v) != "" {
		cfg.Trace = strings.TrimSpace(v) // the timeline under Run too (trace.go)
	}
	total := n + spares
	j := &runState{
		rs: rte.NewJob(total), n: n, total: total, cfg: cfg, fn: fn,
		cores: runtime.NumCPU(), // read once: every rank of the job sees this one value
		errs:  make([]error, n), live: make([]*World, total),
	}
	j.rs.SetOnAbort(j.aborted)
	worlds := make([]*World, total)
	var pool, ranks []int
	for i := range total {
		if i < n {
			if spares > 0 {
				ranks = append(ranks, i)
			}
		} else {
			pool = append(pool, i)
		}
	}
	for i := range worlds {
		eng := p2p.New(engineConfig(i, cfg))
		tr := j.rs.Fab.Attach(i, eng)
		if i < n {
			worlds[i] = j.newWorld(newWorldIn(i, total, ranks, i, eng, tr, "inproc", nil, nil, worldSpares{pool: pool}), 0)
		} else {
			worlds[i] = j.newWorld(newWorldIn(i, total, []int{i}, 0, eng, tr, "inproc", nil, nil, worldSpares{pool: pool, isSpare: true}), 0)
		}
		if spares == 0 {
			// Reinit's state of the rank's first incarnation (no
			// rollback with spares: the launcher's Reinit takes spares,
			// which Run does not do).
			p := j.newProcess(i, 0, 0)
			p.Start(worlds[i], 0)
			worlds[i].rp = p
			j.rs.SetProc(i, p)
		}
	}
	j.worlds = worlds
	for _, w := range worlds {
		w.runWorlds = worlds
	}
	for _, w := range worlds {
		j.wg.Add(1)
		go j.rank(w)
	}
	j.wg.Wait()
	if reason := j.rs.AbortReason(); reason != "" {
		// The runtime ended the job (a failure Reinit cannot recover):
		// the ranks' errors are its consequences.
		rank, code, _ := j.rs.Aborted()
		return &AbortError{Rank: rank, Code: code, Reason: reason}
	}
	var all []error
	for _, e := range j.errs {
		if e != nil {
			all = append(all, e)
		}
	}
	if rank, code, ok := j.rs.Aborted(); ok && len(all) == 0 {
		return &AbortError{Rank: rank, Code: code}
	}
	return errors.Join(all...)
}

// runState is an in-process job (Run): its runtime (rte.Job, which plays
// the launcher's part), the ranks' function, and every rank's newest
// World. Under Reinit a killed rank's goroutine is started again as the
// rank's next incarnation (respawn), as ftmpirun --on-failure reinit
// starts the process again.
type runState struct {
	rs        *rte.Job
	n, total  int // ranks; ranks and spares
	cfg       Config
	fn        func(*World) error
	cores     int
	worlds    []*World // the first incarnations, and the spares
	errs      []error  // by rank: the newest incarnation's error
	wg        sync.WaitGroup
	mu        sync.Mutex
	live      []*World // every process's newest World (under mu): the job's abort ends them
	abortDone bool     // the job's abort ended every live World (under mu)
}

// newWorld completes w, a World of the job in incarnation inc: its
// configuration, its own abort channel (an epoch's end closes it, the
// job's abort closes every live one), the hang watch.
func (j *runState) newWorld(w *World, inc int) *World {
	w.cfg = j.cfg
	w.rt.SetDiag(j.cfg.diag)
	w.rt.Hosts.OneHost(j.cores)
	w.run = j.rs
	w.rj = j
	w.startTrace(inc, w.spares.isSpare)
	w.batchLosses() // a kill of many ranks reaches each rank in a few batches (ft.go)
	w.abort = make(chan struct{})
	w.abortOnce = new(sync.Once)
	j.mu.Lock()
	j.live[w.rank] = w
	gone := j.abortDone
	j.mu.Unlock()
	if gone {
		w.abortOnce.Do(func() { close(w.abort) })
	}
	w.startHang()
	return w
}

// aborted ends every live World: the job was torn down (rte.Job's abort
// hook).
func (j *runState) aborted() {
	j.mu.Lock()
	j.abortDone = true
	live := append([]*World(nil), j.live...)
	j.mu.Unlock()
	for _, w := range live {
		if w != nil {
			w.abortOnce.Do(func() { close(w.abort) })
		}
	}
}

// newProcess is the Reinit state of incarnation inc of rank, joining
// epoch: what a launched process keeps across epochs (rte.Process),
// without a launcher connection.
func (j *runState) newProcess(rank, inc, epoch int) *process {
	return rte.NewRunProcess(rank, j.n, inc, epoch, rte.Hooks[World]{EndEpoch: (*World).endEpoch})
}

// openEpoch builds rank's World of a Reinit epoch (of the newest, if a
// newer one began meanwhile): a fresh engine attached to the epoch's own
// fabric once every rank has (the job's rejoin fence). Nothing of an
// older epoch is in it.
func (j *runState) openEpoch(p *process, epoch, rank int) (*World, error) {
	for {
		eng := p2p.New(engineConfig(rank, j.cfg))
		ep, got, err := j.rs.Rejoin(epoch, rank, eng)
		if err != nil {
			eng.Close()
			return nil, err
		}
		if ep == nil {
			eng.Close()
			if got == epoch {
				return nil, fmt.Errorf("no rejoin fence for epoch %d", epoch)
			}
			epoch = got
			continue
		}
		w := j.newWorld(newWorldIn(rank, j.n, nil, rank, eng, ep, "inproc", nil, nil, worldSpares{}), p.Incarnation())
		w.epoch = epoch
		w.rp = p
		w.runWorlds = j.worlds
		return w, nil
	}
}

// respawn starts the goroutine of rank's next incarnation p: like a
// respawned process's MPI_Init it joins the epoch (the rejoin fence), then
// runs the job's function, whose Reinit resumes in ReinitRestarted.
func (j *runState) respawn(rank int, p *process, epoch int) {
	j.wg.Add(1)
	go func() {
		w, err := j.openEpoch(p, epoch, rank)
		if err != nil { // the job was aborted during the fence
			j.wg.Done()
			return
		}
		p.Start(w, w.epoch)
		j.rank(w)
	}()
}

// rank runs the job's function as w's rank (a spare first waits to be
// taken), then finalizes it.
func (j *runState) rank(w *World) {
	i := w.rank
	defer func() {
		if p := recover(); p != nil {
			j.errs[i] = &PanicError{Rank: i, Value: p, Stack: debug.Stack()}
			j.rs.Abort(i, 1)
		}
		// After runtime.Goexit from Abort the abort error is reported by
		// Run; after Kill nothing is (a killed rank is no error).
		w.Finalize()
		j.wg.Done()
	}()
	if w.spares.isSpare {
		switch _, err := w.awaitActivation(); {
		case errors.Is(err, errSpareReleased):
			return
		case errors.Is(err, errSpareOrphaned):
			w.killInProc()
			return
		case err != nil:
			return // the job was aborted
		}
	}
	if err := j.fn(w); err != nil {
		j.errs[i] = fmt.Errorf("rank %d: %w", i, err)
		j.rs.Abort(i, 1)
	}
}

// killInProc is Kill's effect under Run, without ending the calling
// goroutine: every other process learns of the failure, and a waiting
// spare leaves its wait.
func (w *World) killInProc() {
	if w.killed.Swap(true) {
		return
	}
	cause := fmt.Sprintf("rank %d killed by fault injection", w.rank)
	fab := w.run.Fab
	var f rte.Failure // FailPlain: no Reinit (spares), or the job is not in Reinit mode
	var next *process
	if p := w.rp; p != nil {
		fab = w.run.Fabric(w.epoch)
		f = w.run.Fail(w.rank, p.Incarnation(), cause, func(inc, epoch int) rte.Advancer {
			next = w.rj.newProcess(w.rank, inc, epoch)
			return next
		})
	}
	if fab != nil { // nil: an epoch long over (every World of it ended)
		// Every other rank queues the loss; then this goroutine takes
		// them, with what other killers queued meanwhile, and waits for
		// those another caller takes (lossQueue, ft.go).
		kill := new(injectedKill)
		fab.Kill(w.rank, kill)
		kill.deliver()
	}
	if f.Kind == rte.FailRespawn {
		// Reinit: the rank's next incarnation takes its place, also at
		// the Finalize fence.
		w.release()
		w.rj.respawn(w.rank, next, f.Epoch)
		return
	}
	w.run.Dead()
	w.eng.Close()
	w.stopBG()       // its goroutines end (the shared segments' watcher, coll.ShmHost)
	w.rt.KillSpare() // a waiting spare leaves its wait (rte.Rank.AwaitSpare)
}

// runHead is the in-process job as Reinit's launcher (reinitHead): rank
// enters and leaves MPI_Reinit at the job (rte.Job.ReinitEnter,
// ReinitLeave), which answers with the newest epoch.
type runHead struct {
	job  *rte.Job
	rank int
}

func (h runHead) ReinitActive(active bool) (int, error) {
	if active {
		return h.job.ReinitEnter(h.rank)
	}
	return h.job.ReinitLeave(h.rank), nil
}
