package rte

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// Reinit in an in-process job (mpi.Run): the Job plays the launcher's
// part of ftmpirun --on-failure reinit (internal/launch/policy/reinit.go).
// A rank killed while every other rank is inside Reinit starts a new
// epoch: the rank gets a new incarnation (its goroutine started again by
// the caller), every other rank's Process is advanced to the epoch (its
// World ended: the resilient function rolls back), and the epoch's ranks
// meet in the epoch's rejoin fence (Rejoin), each attaching a fresh
// engine to the epoch's own fabric: nothing of an older epoch, no
// connection or queued frame, reaches a newer one. A failure during the
// fence starts a newer epoch and supersedes it. A failure while a rank is
// outside Reinit (not called yet, or returned) ends the job, as does one
// past RunMaxRestarts. The job is in Reinit mode from the first rank's
// ReinitEnter; a failure before that is a plain failure (ULFM programs
// kill ranks without Reinit), after which Reinit ends the job.

// RunMaxRestarts is how many failures an in-process job recovers from by
// Reinit: the default of ftmpirun --max-restarts.
const RunMaxRestarts = 16

// Advancer is the part of a rank's Process the job drives: Advance ends
// its current World when a newer epoch begins.
type Advancer interface {
	Advance(epoch int, reason string)
}

// FailKind is what a rank's failure does to an in-process job.
type FailKind int

const (
	// FailPlain: the job is not in Reinit mode; the failure is an ordinary
	// one (the other ranks learn of it, nothing is respawned).
	FailPlain FailKind = iota
	// FailRespawn: a new epoch began; the rank's next incarnation must be
	// started (Failure.Inc, joining Failure.Epoch).
	FailRespawn
	// FailFatal: the failure cannot be recovered; the job was aborted
	// (Failure.Reason, AbortReason).
	FailFatal
	// FailStale: the failure of an incarnation that was replaced already.
	FailStale
)

// Failure is the job's decision about a rank's failure.
type Failure struct {
	Kind   FailKind
	Epoch  int    // FailRespawn: the new epoch
	Inc    int    // FailRespawn: the new incarnation
	Reason string // FailFatal: why the job ends
}

type reinitState struct {
	mu       sync.Mutex
	on       bool   // a rank called Reinit: failures respawn
	failed   string // a plain failure before Reinit mode: its cause ("": none)
	epoch    int    // the newest epoch
	restarts int
	note     string // why the newest epoch began
	fabs     map[int]*inproc.Fabric
	ranks    []rankReinit
	procs    []Advancer  // every rank's current incarnation
	fence    *epochFence // the newest epoch's rejoin fence (nil in epoch 0)
}

type rankReinit struct {
	inc      int  // current incarnation
	rejoined int  // the newest epoch the rank joined
	in, left bool // inside Reinit; returned from it
}

type epochFence struct {
	arrived    int
	done       chan struct{} // every rank attached
	superseded chan struct{} // a newer epoch began first
}

func (re *reinitState) alloc(n int) {
	if re.ranks == nil {
		re.ranks = make([]rankReinit, n)
		re.procs = make([]Advancer, n)
	}
}

// SetProc registers the Process of rank's first incarnation.
func (j *Job) SetProc(rank int, p Advancer) {
	re := &j.re
	re.mu.Lock()
	re.alloc(j.n)
	re.procs[rank] = p
	re.mu.Unlock()
}

// Epoch is the job's newest Reinit epoch and why it began.
func (j *Job) Epoch() (int, string) {
	re := &j.re
	re.mu.Lock()
	defer re.mu.Unlock()
	return re.epoch, re.note
}

// Fabric is the in-memory fabric of epoch (nil: no such epoch, or one
// older than the previous: every World of it has ended).
func (j *Job) Fabric(epoch int) *inproc.Fabric {
	re := &j.re
	re.mu.Lock()
	defer re.mu.Unlock()
	return re.fabs[epoch]
}

// ReinitEnter records that rank entered Reinit (the job is in Reinit mode
// from now on) and returns the newest epoch. After a plain failure it
// aborts the job: that failure had no rollback location (seed 000,
// 1.4.2), and the error says so.
func (j *Job) ReinitEnter(rank int) (int, error) {
	re := &j.re
	re.mu.Lock()
	if re.failed != "" {
		reason := fmt.Sprintf("%s before rank %d called MPI_Reinit: no rollback location, the job ends (seed 000 1.4.2: as MPI_ERRORS_ARE_FATAL)", re.failed, rank)
		re.mu.Unlock()
		j.AbortWith(rank, 1, reason)
		return 0, errors.New(reason)
	}
	re.on = true
	re.alloc(j.n)
	re.ranks[rank].in = true
	e := re.epoch
	re.mu.Unlock()
	return e, nil
}

// ReinitLeave records that rank returns from Reinit, unless a newer epoch
// than the one it joined began: the epoch returned then tells it to roll
// back instead (as the launcher's reply does).
func (j *Job) ReinitLeave(rank int) int {
	re := &j.re
	re.mu.Lock()
	defer re.mu.Unlock()
	re.alloc(j.n)
	if st := &re.ranks[rank]; st.rejoined == re.epoch {
		st.in, st.left = false, true
	}
	return re.epoch
}

// Fail decides what the failure of incarnation inc of rank (cause says
// how it failed) does to the job. In Reinit mode with every other rank
// inside Reinit it begins a new epoch: next builds the Process of the
// rank's next incarnation (registered before any later failure can be
// decided), and every other rank's Process is advanced, all before Fail
// returns FailRespawn. A failure that cannot be recovered aborts the job
// (FailFatal).
func (j *Job) Fail(rank, inc int, cause string, next func(inc, epoch int) Advancer) Failure {
	re := &j.re
	re.mu.Lock()
	if !re.on {
		if re.failed == "" {
			re.failed = cause
		}
		re.mu.Unlock()
		return Failure{Kind: FailPlain}
	}
	st := &re.ranks[rank]
	if inc != st.inc {
		re.mu.Unlock()
		return Failure{Kind: FailStale}
	}
	reason := ""
	for q := range re.ranks {
		o := &re.ranks[q]
		switch {
		case q == rank || reason != "":
		case o.left:
			reason = fmt.Sprintf("%s after rank %d returned from MPI_Reinit: no rollback location, the job ends (seed 000 1.4.2: as MPI_ERRORS_ARE_FATAL)", cause, q)
		case !o.in:
			reason = fmt.Sprintf("%s before rank %d called MPI_Reinit: no rollback location, the job ends (seed 000 1.4.2: as MPI_ERRORS_ARE_FATAL)", cause, q)
		}
	}
	if reason == "" && re.restarts >= RunMaxRestarts {
		reason = fmt.Sprintf("%s; restart limit reached (%d, as ftmpirun --max-restarts): the job ends", cause, RunMaxRestarts)
	}
	if reason == "" {
		select {
		case <-j.abortCh:
			reason = cause + "; the job was aborted"
		default:
		}
	}
	if reason != "" {
		re.mu.Unlock()
		j.AbortWith(rank, 1, reason)
		return Failure{Kind: FailFatal, Reason: reason}
	}
	re.restarts++
	re.epoch++
	re.note = cause
	re.fabs[re.epoch] = inproc.NewFabric(j.n)
	delete(re.fabs, re.epoch-2) // its Worlds ended with the previous epoch's start (epoch 0's stays: Job.Fab)
	if re.fence != nil {
		close(re.fence.superseded)
	}
	re.fence = &epochFence{done: make(chan struct{}), superseded: make(chan struct{})}
	*st = rankReinit{inc: inc + 1, rejoined: re.epoch, in: true} // a new incarnation resumes in Reinit
	re.procs[rank] = next(inc+1, re.epoch)
	epoch, procs := re.epoch, append([]Advancer(nil), re.procs...)
	re.mu.Unlock()
	advanceAll(procs, rank, epoch, cause)
	return Failure{Kind: FailRespawn, Epoch: epoch, Inc: inc + 1}
}

// Rejoin is the rejoin fence of epoch for rank: it attaches h to the
// epoch's fabric and returns its endpoint once every rank did. If a newer
// epoch began (before or during the fence) it returns no endpoint and the
// newest epoch (got != epoch): the caller joins that one with a fresh
// engine. An aborted job is an error.
func (j *Job) Rejoin(epoch, rank int, h transport.Handler) (ep *inproc.Endpoint, got int, err error) {
	re := &j.re
	re.mu.Lock()
	if epoch != re.epoch || re.fence == nil {
		got = re.epoch
		re.mu.Unlock()
		return nil, got, nil
	}
	f := re.fence
	ep = re.fabs[epoch].Attach(rank, h)
	re.ranks[rank].rejoined = epoch
	f.arrived++
	if f.arrived == j.n {
		close(f.done)
	}
	re.mu.Unlock()
	select {
	case <-f.done:
		return ep, epoch, nil
	case <-f.superseded:
		re.mu.Lock()
		got = re.epoch
		re.mu.Unlock()
		return nil, got, nil
	case <-j.abortCh:
		return nil, epoch, errors.New("job aborted")
	}
}

// NewRunProcess is the Process of incarnation inc of rank among the n
// ranks of an in-process job (Reinit on), joining epoch: no launcher
// connection (the Job plays its part), only the Reinit epochs (Start,
// Advance, Install, BeginReinit ...). Close, Head and Finalize are not
// for it.
func NewRunProcess[W any](rank, n, inc, epoch int, hooks Hooks[W]) *Process[W] {
	info := boot.Info{Rank: rank, Proc: rank, Size: n, Universe: n, Incarnation: inc, Epoch: epoch, Reinit: true, Host: "inproc"}
	return &Process[W]{info: info, hooks: hooks, epoch: epoch, stopCh: make(chan struct{})}
}

// advanceAll advances every Process of procs but skip's to epoch. Ending
// a World waits for its goroutines to stop, so the ends run on a few
// goroutines at once (one after the other, 10,000 of them took 1.5 s at
// load 23 on 2 cores: mostly waiting to be scheduled); all are done when
// it returns.
func advanceAll(procs []Advancer, skip, epoch int, reason string) {
	const workers = 32
	chunk := (len(procs) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(procs); lo += chunk {
		wg.Add(1)
		go func(part []Advancer, base int) {
			defer wg.Done()
			for i, p := range part {
				if base+i != skip && p != nil {
					p.Advance(epoch, reason)
				}
			}
		}(procs[lo:min(lo+chunk, len(procs))], lo)
	}
	wg.Wait()
}
