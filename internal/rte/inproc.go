package rte

import (
	"errors"
	"sync"

	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// Job is the runtime of an in-process job (mpi.Run): n ranks as
// goroutines over one in-memory fabric, the job's abort, and the Finalize
// fence. It plays for them the launcher's part.
type Job struct {
	n   int
	Fab *inproc.Fabric

	abortCh   chan struct{} // closed by Abort
	abortOnce sync.Once
	abortRank int
	abortCode int

	// Names is the job's name service (MPI_Publish_name ...), the
	// launcher's part under mpi.Run: a table its ranks share.
	Names Names

	mu      sync.Mutex
	arrived int
	allIn   chan struct{}

	onAbort     func()      // called once by the first Abort, after abortCh closed (SetOnAbort)
	abortReason string      // why the job was torn down, when the runtime decided it (AbortWith)
	re          reinitState // Reinit epochs (runreinit.go)
}

// NewJob returns the runtime of an in-process job of n ranks.
func NewJob(n int) *Job {
	j := &Job{n: n, Fab: inproc.NewFabric(n), abortCh: make(chan struct{}), allIn: make(chan struct{})}
	j.re.fabs = map[int]*inproc.Fabric{0: j.Fab}
	return j
}

// Abort tears the job down on behalf of rank with exit code code (the
// first call wins).
func (j *Job) Abort(rank, code int) { j.AbortWith(rank, code, "") }

// AbortWith is Abort with the reason the runtime tore the job down for
// (AbortReason), "" when a rank did (MPI_Abort, an error, a panic).
func (j *Job) AbortWith(rank, code int, reason string) {
	j.abortOnce.Do(func() {
		j.abortRank, j.abortCode, j.abortReason = rank, code, reason
		close(j.abortCh)
		j.mu.Lock()
		f := j.onAbort
		j.mu.Unlock()
		if f != nil {
			f()
		}
	})
}

// SetOnAbort installs f, which the first Abort calls once abortCh is
// closed (the ranks' Worlds each have an abort channel of their own:
// a Reinit epoch ends one without ending the job).
func (j *Job) SetOnAbort(f func()) {
	j.mu.Lock()
	j.onAbort = f
	j.mu.Unlock()
}

// AbortReason is why the runtime tore the job down ("" when a rank did
// or it was not).
func (j *Job) AbortReason() string {
	select {
	case <-j.abortCh:
		return j.abortReason
	default:
		return ""
	}
}

// AbortCh is closed when the job is torn down; AbortOnce guards closing
// it (a World ends through it).
func (j *Job) AbortCh() chan struct{} { return j.abortCh }
func (j *Job) AbortOnce() *sync.Once  { return &j.abortOnce }

// Aborted reports who aborted the job and with which code, once it was.
// Call it after every rank ended.
func (j *Job) Aborted() (rank, code int, ok bool) {
	select {
	case <-j.abortCh:
		return j.abortRank, j.abortCode, true
	default:
		return 0, 0, false
	}
}

// arrive counts one rank at the Finalize fence.
func (j *Job) arrive() {
	j.mu.Lock()
	j.arrived++
	if j.arrived == j.n {
		close(j.allIn)
	}
	j.mu.Unlock()
}

// Dead counts a killed rank as arrived at the Finalize fence.
func (j *Job) Dead() { j.arrive() }

// Fence is the Finalize barrier: it returns once every rank arrived or
// died, or with an error when the job was aborted.
func (j *Job) Fence() error {
	j.arrive()
	select {
	case <-j.allIn:
		return nil
	case <-j.abortCh:
		return errors.New("job aborted")
	}
}
