package rte

import (
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Launch starts the runtime of this process as its launcher described it
// in the environment (MPI_Init): under ftmpirun the launcher connection
// is dialled (Connect); under a foreign launcher (srun, mpiexec) the
// process bootstraps through PMI (ConnectPMI: no head, the ranks detect
// and enforce failures themselves). A process started by neither is alone
// (a singleton): Launch returns nil and no error.
func Launch[W any](hooks Hooks[W]) (*Process[W], error) {
	info, ok, err := boot.FromEnv()
	if err != nil {
		return nil, err
	}
	if ok {
		return Connect(info, hooks)
	}
	info, job, ok, err := boot.FromPMIEnv()
	if err != nil || !ok {
		return nil, err
	}
	return ConnectPMI(info, job, hooks), nil
}

// Transport is the transport the process's communication uses: the
// job's choice (FTMPI_TRANSPORT under ftmpirun, validated at start; a PMI
// start's, always), else configured.
func (p *Process[W]) Transport(configured string) string {
	if p.pmi != nil || p.info.Transport != "" {
		return p.info.Transport
	}
	return configured
}

// Rank is the process's rank in its epoch's CommWorld (a spare's: the
// place it holds among the job's processes until a repair takes it).
func (p *Process[W]) Rank() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.Rank
}

// Incarnation is which incarnation of its rank the process is: 0 for
// the first, k after the k-th respawn (MPI_Reinit's restarted state).
func (p *Process[W]) Incarnation() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.Incarnation
}

// Job names the process's launch (the launcher's job id): connect/accept
// refuses a port of another launch.
func (p *Process[W]) Job() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.Job
}

// ReinitJob reports whether the job recovers by Reinit (ftmpirun
// --on-failure reinit, FTMPI_REINIT=1 under a PMI launcher, Run's
// Reinit): a failure ends the epoch, failed ranks come back.
func (p *Process[W]) ReinitJob() bool { return p.info.Reinit }

// Restarts is how many times the launcher relaunched the job before this
// launch (ftmpirun --restart-on-failure; 0: the first launch).
func (p *Process[W]) Restarts() int { return p.info.Restart }

// Parents are, for a spawned process, the context pairs of the
// intercommunicator to its parents and the parents' process ids in their
// rank order; nil procs: the process was not spawned.
func (p *Process[W]) Parents() (pairs, procs []int) {
	return p.info.ParentPairs, p.info.ParentProcs
}

// Layout is who is who in a Reinit epoch: CommWorld's processes in rank
// order (nil: every process id of the universe, in order), this
// process's rank there, the epoch's ranks (process ids, also at a
// spare), the spares waiting in a pool, and whether this process is one
// of them (then CommWorld is itself alone until a repair takes it).
type Layout struct {
	Members  []int
	WRank    int
	Starters []int
	Pool     []int
	IsSpare  bool
}

// StartLayout is the Layout of the process's start (or of the epoch a
// launcher's respawn or take made it join), from what the launcher told
// it.
func (p *Process[W]) StartLayout() Layout {
	info := p.Info()
	base := info.Proc - info.Rank
	l := Layout{WRank: info.Rank}
	if info.Proc != info.Rank || info.Universe != info.Size || info.Spares > 0 {
		for i := range info.WorldSize() {
			l.Members = append(l.Members, base+i)
		}
	}
	for i := range info.WorldSize() {
		l.Starters = append(l.Starters, base+i)
	}
	for i := info.WorldSize(); i < info.Size; i++ {
		l.Pool = append(l.Pool, base+i)
	}
	if l.IsSpare = info.IsSpare(); l.IsSpare {
		l.Members, l.WRank = []int{info.Proc}, 0 // in no CommWorld until a repair takes it
	}
	return l
}

// Proc is the process's id (in the engine's address space) and Universe
// the number of process ids of its epoch's engine.
func (p *Process[W]) Proc() (proc, universe int) {
	info := p.Info()
	return info.Proc, info.Universe
}

// NewHeadlessReinit is the process's driver of Reinit without a head, for
// a process of a PMI start asked for Reinit (FTMPI_REINIT=1); nil
// otherwise.
func (p *Process[W]) NewHeadlessReinit() *HeadlessReinit {
	if p.pmi == nil || !p.info.Reinit {
		return nil
	}
	return NewHeadlessReinit(p.Info())
}

// RejoinThrough makes the endpoint exchange of the Reinit epochs after
// the first without a head go through d's exchange over the old epoch's
// engine eng (of n process ids), for the epoch next decided, each member
// waiting at most timeout (SetRejoin).
func (p *Process[W]) RejoinThrough(d *HeadlessReinit, eng *p2p.Engine, n int, next ReinitState, timeout time.Duration) {
	p.SetRejoin(func(epoch int, ep boot.Endpoint) ([]boot.Endpoint, []int, error) {
		return d.Exchange(eng, n, next, epoch, ep, timeout)
	})
}

// SpareTaken tells the launcher that a repair of the ranks took this
// spare (its death is a rank's failure from now on, no longer the pool's
// loss); nothing without a head.
func (p *Process[W]) SpareTaken() error {
	if p.client == nil {
		return nil
	}
	return p.client.SpareTaken()
}

// ReinitActive tells ftmpirun's head that the process entered (or left)
// MPI_Reinit and returns the launcher's newest epoch.
func (p *Process[W]) ReinitActive(active bool) (epoch int, err error) {
	return p.client.ReinitActive(active)
}
