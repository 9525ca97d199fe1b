// Package rte is the rank runtime: what lives beside the MPI API and
// under it. A Rank is one epoch of one process (engine, transport,
// launcher connection, control frames, failure drivers, hosts; losses
// reach its parts by subscription); package mpi's World holds one. A
// Process holds what a launched process keeps across Reinit epochs: the
// launcher connection (a failure event goes from its reader straight to
// the engine; the watcher handles the others) and the epochs; OpenEpoch
// builds the communication of one epoch (a p2p engine and a socket
// transport listening on a fresh address, exchanged with every process
// through the launcher); Arm starts the self-injection of faults; Diag is
// where diagnostics go and how the process ends. The drivers of the
// fault-tolerance state machines are in internal/rte/ftdrive, the table of
// control frames in internal/rte/ctl. NewRank builds and registers the
// drivers the API does not run itself (hang reports, the headless Finalize
// fence, spares, headless Reinit's frames) and registers the API's
// handlers of the other control frames (Frames); each Rank owns the
// table of the calls its epoch waits in (CallTable, Rank.Calls), which
// the API fills and the hang reports and the trace timeline read. A
// communicator's fault-tolerance state is the runtime's too (CommFT, from
// Rank.NewCommFT: its overlay, revocation and agreements, and the
// agreements of the API's fault-tolerance calls in flags, process ids and
// bitmap words, with a Replace attempt's spare side); the API keeps the
// communicators, their context ids and the order failures became known.
//
// The package must not import mpi: the World of an epoch is a type
// parameter, what the runtime does to it goes through Hooks, and what a
// driver needs of the API comes as a delegate (HangDelegate,
// FenceDelegate, SpareConfig) that must not block. It holds
// no process-global state (a Process belongs to one launched process; a
// test may run many).
package rte

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/inject"
)

// Hooks are what a Process does to the World of its current epoch.
type Hooks[W any] struct {
	// FailPeer makes the failure of process rank known to w (a launcher
	// failure event).
	FailPeer func(w *W, rank int, cause error)
	// EndEpoch ends w's epoch: a newer one was announced.
	EndEpoch func(w *W, reason string)
	// Spare is the runtime of w's epoch, whose spare driver takes the
	// launcher's events for a spare (Rank.LauncherSpare: boot.EventActivate,
	// the launcher took it as a rank's new incarnation; boot.EventRelease,
	// the job ends without it); a refused take is reported on its Diag.
	// nil (or a nil Rank): they are dropped.
	Spare func(w *W) *Rank
	// LauncherLost is called when the launcher connection breaks before
	// Finalize (nil: print a message and exit with status 1, so that no
	// rank outlives its job).
	LauncherLost func()
	// Hang asks w for a hang report (boot.EventHang; reason: why). It
	// runs on a goroutine of its own. nil: the request is dropped.
	Hang func(w *W, reason string)
}

// Process is what a launched process keeps across Reinit epochs: the
// launcher connection, the current epoch's World (of type W), and the
// state of Reinit (the newest epoch announced, whether Reinit is active).
type Process[W any] struct {
	info   boot.Info
	client *boot.Client // the launcher connection (nil when started by a PMI launcher)
	pmi    *boot.PMIJob // the PMI connection of a process started without ftmpirun (nil under ftmpirun)
	hooks  Hooks[W]

	curA atomic.Pointer[W] // the current epoch's World

	mu       sync.Mutex
	cur      *W     // = curA, under mu
	curEpoch int    // the epoch cur belongs to
	epoch    int    // newest epoch announced by the launcher
	active   bool   // inside Reinit
	running  int    // the epoch whose World the resilient function runs with
	called   bool   // Reinit was called
	lastNote string // why the newest epoch began

	// rejoin is the endpoint exchange of a Reinit epoch after the first
	// without a head (SetRejoin); nil: none is possible.
	rejoin func(epoch int, self boot.Endpoint) ([]boot.Endpoint, []int, error)
	// injector is this process's own fault injection (Arm; nil: none),
	// under mu.
	injector *inject.Injector

	finalized atomic.Bool
	stopCh    chan struct{}
	stopOnce  sync.Once
	wg        sync.WaitGroup
}

// Connect dials the launcher for the process described by info.
func Connect[W any](info boot.Info, hooks Hooks[W]) (*Process[W], error) {
	client, err := boot.Connect(info)
	if err != nil {
		return nil, err
	}
	return &Process[W]{info: info, client: client, hooks: hooks, epoch: info.Epoch, stopCh: make(chan struct{})}, nil
}

// ConnectPMI is the Process of a process started by a foreign launcher
// (srun, mpiexec: no ftmpirun head), bootstrapped through job (PMI).
func ConnectPMI[W any](info boot.Info, job *boot.PMIJob, hooks Hooks[W]) *Process[W] {
	return &Process[W]{info: info, pmi: job, hooks: hooks, stopCh: make(chan struct{})}
}

// Headless reports whether the process has no ftmpirun head (started by
// a PMI launcher): failures are detected and enforced by the ranks.
func (p *Process[W]) Headless() bool { return p.pmi != nil }

// Head returns the launcher connection for op, which only ftmpirun's head
// can serve, or the error that says op is not available under the
// process's launcher.
func (p *Process[W]) Head(op string) (*boot.Client, error) {
	if p.pmi != nil {
		return nil, boot.NoHeadError(op, p.pmi.Launcher())
	}
	return p.client, nil
}

// Finalize ends the process's part of the job: the launcher's finalize
// fence under ftmpirun; under a PMI launcher PMI's finalize, which waits
// for nobody.
func (p *Process[W]) Finalize() error {
	if p.pmi != nil {
		return p.pmi.Finalize()
	}
	return p.client.Finalize()
}

// RemoveDir removes the process's socket directory under a PMI launcher
// (nothing under ftmpirun, whose launcher removes the job's directory):
// before the process ends itself.
func (p *Process[W]) RemoveDir() {
	if p.pmi != nil {
		p.pmi.RemoveDir()
	}
}

// Abort asks the launcher to end the whole job with code.
func (p *Process[W]) Abort(code int, reason string) error {
	if p.pmi != nil {
		return p.pmi.Abort(code, reason)
	}
	return p.client.Abort(code, reason)
}

// AbortFatal is Abort for a fatal error under MPI_ERRORS_ARE_FATAL (see
// boot.Client.AbortFatal; a PMI launcher is told a plain abort).
func (p *Process[W]) AbortFatal(code int, reason string) error {
	if p.pmi != nil {
		return p.pmi.Abort(code, reason)
	}
	return p.client.AbortFatal(code, reason)
}

// Info is what the process learnt from its environment at start.
func (p *Process[W]) Info() boot.Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// Client is the launcher connection (nil when Headless: use Head).
func (p *Process[W]) Client() *boot.Client { return p.client }

// Start makes w, the World of epoch, the current one and starts the
// launcher watcher.
func (p *Process[W]) Start(w *W, epoch int) {
	p.mu.Lock()
	p.setCurrentLocked(w, epoch)
	p.mu.Unlock()
	if p.client == nil {
		return // no launcher to watch: the ranks detect failures themselves
	}
	p.wg.Add(1)
	go p.watchLauncher()
	// A failure event goes from the socket's reader straight to the
	// engine, which wakes the blocked callers: one hand-off. The other
	// events, which may take time or ask the launcher, go through
	// watchLauncher.
	p.client.Deliver(func(ev boot.Event) bool {
		if ev.Kind != boot.EventFailed {
			return false
		}
		if w := p.Current(); w != nil {
			p.hooks.FailPeer(w, ev.Rank, failedCause(ev))
		}
		return true
	})
}

// Arm executes the fault-injection specs (internal/inject) that target
// this process, if it is a first incarnation of the first processes (a
// respawned or spawned process does not replay the plan): the timed ones
// from now on, the ones tied to a phase when the runtime reports it
// (Phase). Close stops the timed ones.
func (p *Process[W]) Arm(specs string) error {
	if specs == "" || p.info.Incarnation != 0 || p.info.ParentProcs != nil {
		return nil
	}
	in, err := inject.NewSelf(p.info.Rank, p.info.Size, specs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.injector = in
	p.mu.Unlock()
	return nil
}

// Phase reports that the process reached phase (inject.Phases): a kill or
// stop the specs tie to it is executed now, in the calling goroutine.
// Also after Close (the phases of the end of Finalize come after it).
func (p *Process[W]) Phase(phase string) {
	p.mu.Lock()
	in := p.injector
	p.mu.Unlock()
	in.Phase(phase)
}

// Current is the current epoch's World.
func (p *Process[W]) Current() *W { return p.curA.Load() }

func (p *Process[W]) setCurrentLocked(w *W, epoch int) {
	p.cur = w
	p.curEpoch = epoch
	p.curA.Store(w)
}

// Active reports whether Reinit is running.
func (p *Process[W]) Active() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active
}

// SetActive records whether Reinit is running.
func (p *Process[W]) SetActive(on bool) {
	p.mu.Lock()
	p.active = on
	p.mu.Unlock()
}

// Latest is the newest epoch the launcher announced.
func (p *Process[W]) Latest() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch
}

// LastNote says why the newest epoch began ("" before any).
func (p *Process[W]) LastNote() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastNote
}

// Running is the epoch whose World the resilient function runs with.
func (p *Process[W]) Running() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// SetRunning records the epoch the resilient function runs with.
func (p *Process[W]) SetRunning(epoch int) {
	p.mu.Lock()
	p.running = epoch
	p.mu.Unlock()
}

// Errors of BeginReinit.
var (
	ErrReinitAgain = errors.New("called more than once (seed 000, 1.3: at most one call)")
	ErrEndedEpoch  = errors.New("called with a World of an ended epoch")
)

// BeginReinit marks Reinit called and active, once per process, with the
// current World w.
func (p *Process[W]) BeginReinit(w *W) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.called {
		return ErrReinitAgain
	}
	if p.cur != w {
		return ErrEndedEpoch
	}
	p.called = true
	p.active = true
	return nil
}

// Advance records that the launcher is at epoch (learnt from an event or a
// reply) and ends the current World if it belongs to an older one. The
// current World may already be of that epoch, though this process never
// heard it announced: a respawned process whose own epoch was superseded
// while it started joined the newer one directly. Ending that World would
// leave its peers waiting for it in the epoch forever.
func (p *Process[W]) Advance(epoch int, reason string) {
	p.mu.Lock()
	if epoch <= p.epoch {
		p.mu.Unlock()
		return
	}
	p.epoch = epoch
	p.lastNote = reason
	cur := p.cur
	if cur == nil || p.curEpoch >= epoch {
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.hooks.EndEpoch(cur, reason)
}

// Install makes w, the World of epoch, the current one and reports
// whether a newer epoch was announced meanwhile (then w must be ended and
// the newest joined).
func (p *Process[W]) Install(w *W, epoch int) (newer bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setCurrentLocked(w, epoch)
	return p.epoch > epoch
}

// Become makes a spare process incarnation inc of rank, joining Reinit
// epoch epoch (the launcher took it instead of respawning the rank): its
// identity (and its launcher client's) is the rank's from now on, so the
// next OpenEpoch publishes its endpoint as that rank's. The caller ends
// the spare's World and opens the epoch.
func (p *Process[W]) Become(rank, inc, epoch int) {
	p.mu.Lock()
	p.info.Rank, p.info.Proc, p.info.Incarnation, p.info.Epoch = rank, rank, inc, epoch
	p.epoch = max(p.epoch, epoch)
	p.mu.Unlock()
	if p.client != nil {
		p.client.Become(rank, inc)
	}
}

// Adopt makes a spare process of a start without a head incarnation inc
// of rank, from Reinit epoch epoch on (the survivors agreed to take it;
// no launcher is told). Unlike Become its process id stays: without a
// head, process ids are the PMI ranks in every epoch.
func (p *Process[W]) Adopt(rank, inc, epoch int) {
	p.mu.Lock()
	p.info.Rank, p.info.Incarnation, p.info.Epoch = rank, inc, epoch
	p.epoch = max(p.epoch, epoch)
	p.mu.Unlock()
}

// Inside reports whether a failure now has a rollback location here:
// Reinit is running, or the process is a new incarnation that has not
// called Reinit yet (it resumes there).
func (p *Process[W]) Inside() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.active || (!p.called && p.info.Incarnation > 0)
}

// SetRejoin installs the endpoint exchange of the Reinit epochs after the
// first for a process without a head: given this process's new endpoint,
// it returns every process's (by process id) and the processes that are
// not in the epoch. OpenEpoch calls it for an epoch > 0.
func (p *Process[W]) SetRejoin(f func(epoch int, self boot.Endpoint) ([]boot.Endpoint, []int, error)) {
	p.mu.Lock()
	p.rejoin = f
	p.mu.Unlock()
}

// Finalizing records that the process finalizes: a launcher connection
// closing from now on is the end of the job, not a loss.
func (p *Process[W]) Finalizing() { p.finalized.Store(true) }

// Close stops the fault injection and the launcher watcher and closes the
// launcher connection.
func (p *Process[W]) Close() {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		in := p.injector
		p.mu.Unlock()
		in.Stop()
		close(p.stopCh)
		if p.client != nil {
			p.client.Deliver(nil)
			p.client.Close()
		} else {
			p.pmi.Close()
		}
		p.wg.Wait()
	})
}

// watchLauncher turns launcher notifications into state: a failed rank's
// pending operations complete with ErrProcFailed; a Reinit epoch ends the
// current World; a lost launcher ends the process (no orphans).
func (p *Process[W]) watchLauncher() {
	defer p.wg.Done()
	for {
		select {
		case ev, ok := <-p.client.Events():
			if !ok {
				return
			}
			switch ev.Kind {
			case boot.EventFailed:
				p.hooks.FailPeer(p.Current(), ev.Rank, failedCause(ev))
			case boot.EventActivate, boot.EventRelease:
				p.spareEvent(ev)
			case boot.EventHang:
				if h, w := p.hooks.Hang, p.Current(); h != nil && w != nil {
					p.wg.Add(1)
					go func() {
						defer p.wg.Done()
						h(w, ev.Reason)
					}()
				}
			case boot.EventReinit:
				reason := failedCause(ev).Error()
				if ev.Rank < 0 {
					reason = ev.Reason
				}
				p.Advance(ev.Epoch, reason)
			}
		case <-p.client.Lost():
			if p.finalized.Load() {
				return
			}
			if p.hooks.LauncherLost != nil {
				p.hooks.LauncherLost()
				return
			}
			fmt.Fprintf(os.Stderr, "ftmpi: rank %d: lost contact with ftmpirun; exiting\n", p.Info().Rank)
			os.Exit(1)
		case <-p.stopCh:
			return
		}
	}
}

// spareEvent hands the launcher's event for a spare to the spare driver of
// the current epoch (Hooks.Spare).
func (p *Process[W]) spareEvent(ev boot.Event) {
	w := p.Current()
	if p.hooks.Spare == nil || w == nil {
		return
	}
	if r := p.hooks.Spare(w); r != nil {
		if err := r.LauncherSpare(ev); err != nil {
			r.Diag().Logf("%v", err)
		}
	}
}

// failedCause is the cause of the failure event ev: the launcher's reason,
// which names the rank and says how it ended ("rank 2 (pid 123) killed by
// signal 9"), said once (issue 26: it read "rank 2 failed: rank 2 ...").
// A reason that does not name the rank is put in parentheses after it.
func failedCause(ev boot.Event) error {
	name := fmt.Sprintf("rank %d", ev.Rank)
	switch rest, ok := strings.CutPrefix(ev.Reason, name); {
	case ev.Reason == "":
		return errors.New(name + " failed")
	case ok && (rest == "" || rest[0] == ' ' || rest[0] == ':' || rest[0] == ','):
		return errors.New(ev.Reason)
	}
	return fmt.Errorf("%s failed (%s)", name, ev.Reason)
}
