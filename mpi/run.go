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
// error was fatal (MPI_ERRORS_ARE_FATAL).
type AbortError struct {
	Rank, Code int
}

func (e *AbortError) Error() string {
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
	rs := rte.NewJob(total)
	cores := runtime.NumCPU() // read once: every rank of the job sees this one value
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
		var w *World
		if i < n {
			w = newWorldIn(i, total, ranks, i, eng, rs.Fab.Attach(i, eng), "inproc", nil, nil, worldSpares{pool: pool})
		} else {
			w = newWorldIn(i, total, []int{i}, 0, eng, rs.Fab.Attach(i, eng), "inproc", nil, nil, worldSpares{pool: pool, isSpare: true})
		}
		w.cfg = cfg
		w.hosts.oneHost(cores)
		w.run = rs
		w.startTrace(0, i >= n)
		w.abort = rs.AbortCh()
		w.abortOnce = rs.AbortOnce()
		w.startHang()
		worlds[i] = w
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for _, w := range worlds {
		w.runWorlds = worlds
	}
	for i, w := range worlds {
		wg.Add(1)
		go func() {
			returned := false
			defer func() {
				if p := recover(); p != nil {
					errs[i] = &PanicError{Rank: i, Value: p, Stack: debug.Stack()}
					rs.Abort(i, 1)
				} else if !returned && errs[i] == nil {
					// runtime.Goexit from Abort: the abort error is reported by Run.
				}
				w.Finalize()
				wg.Done()
			}()
			if w.spares.isSpare {
				switch _, err := w.awaitActivation(); {
				case errors.Is(err, errSpareReleased):
					returned = true
					return
				case errors.Is(err, errSpareOrphaned):
					w.killInProc()
					returned = true
					return
				case err != nil:
					returned = true
					return // the job was aborted
				}
			}
			err := fn(w)
			returned = true
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", i, err)
				rs.Abort(i, 1)
			}
		}()
	}
	wg.Wait()
	var all []error
	for _, e := range errs {
		if e != nil {
			all = append(all, e)
		}
	}
	if rank, code, ok := rs.Aborted(); ok && len(all) == 0 {
		return &AbortError{Rank: rank, Code: code}
	}
	return errors.Join(all...)
}

// killInProc is Kill's effect under Run, without ending the calling
// goroutine: every other process learns of the failure, and a waiting
// spare leaves its wait.
func (w *World) killInProc() {
	if !w.killed.Swap(true) {
		w.run.Fab.Kill(w.rank, errors.New("killed by fault injection"))
		w.run.Dead()
		w.eng.Close()
		if w.spares.killed != nil {
			close(w.spares.killed)
		}
	}
}
