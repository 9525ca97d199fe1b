// Package txn is transactional fault tolerance over ULFM (seed 002,
// 6.1.3): a step of a parallel program either commits at every surviving
// process, or is rolled back at every one of them, the communicator
// repaired, what the lost processes held rebuilt (seed 002, 6.1.2), and the
// step retried. It is the agree, revoke, acknowledge, shrink loop that
// ULFM programs otherwise write by hand (README's repair loop), with the
// state saved at each commit and restored at each rollback.
//
// A step is a function of the communicator. Every process calls Step with
// its part of the same step. After the function returns, the processes
// agree (MPIX_Comm_agree, which is uniform even when processes fail) on
// three things: every part succeeded, no part saw a process failure, no
// part failed for a reason of its own (an application error). A process
// whose part returned an error first revokes the communicator, so that
// parts blocked waiting for it return too. Then:
//   - all parts succeeded and no process failed before contributing: the
//     step commits; Config.Save records the state it reached;
//   - a process failed (a part saw ErrProcFailed or ErrPending, or the
//     agreement found a failure nobody acknowledged): every survivor
//     restores the last committed state (Config.Restore), the communicator
//     is repaired (Config.Repair, Shrink by default), Config.Recover
//     rebuilds the lost processes' share, and the step runs again, up to
//     Config.MaxRetries times;
//   - a part returned an application error: the step is rolled back
//     everywhere and the communicator repaired (it was revoked), but not
//     retried: Step returns that error where it happened and ErrAborted at
//     the other processes.
//
// The package only uses package mpi's public API. It must not keep state
// outside a Tx, retry a step that failed for an application error, or
// hide a failure: each rollback and repair is counted in Stats.
package txn

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ftmpi/ftmpi/mpi"
)

// ErrAborted is what Step returns at a process whose own part succeeded
// when another process's part returned an application error: the step was
// rolled back everywhere. It has no MPI counterpart.
var ErrAborted = errors.New("txn: the step failed at another process and was rolled back")

// ErrRetries is what Step returns when processes failed in every attempt
// of a step, Config.MaxRetries retries included; the state is the last
// committed one and the communicator repaired. It wraps this process's
// last error, or the agreement's. It has no MPI counterpart.
var ErrRetries = errors.New("txn: the step failed at every attempt")

// Config says what a transaction saves, restores, repairs and rebuilds.
// Every field is optional. It has no MPI counterpart.
type Config struct {
	// Save returns this process's state as it is after a committed step
	// (New calls it for the state before the first step). The
	// transaction keeps the slice until the next commit and hands it to
	// Restore: it must not be changed afterwards. Nil: stateless steps.
	Save func() ([]byte, error)
	// Restore puts back a state Save returned. It is called at every
	// surviving process when a step is rolled back, before the repair's
	// Recover.
	Restore func(state []byte) error
	// Repair makes a working communicator out of the failed step's
	// (revoked, its failures acknowledged), collectively at every
	// survivor. Nil: Shrink (the survivors, in their old order);
	// (*mpi.Comm).Replace takes spare processes instead.
	Repair func(c *mpi.Comm) (*mpi.Comm, error)
	// Recover rebuilds, on the repaired communicator, what the lost
	// processes held (their share of the data: algorithm-based fault
	// tolerance, seed 002 6.1.2), at every process of the repaired
	// communicator after Restore. lost are the lost processes' ranks in the
	// communicator of the failed step (processes replaced by Repair
	// included); it may be empty (a rollback for an application error
	// that lost nobody). Nil: nothing to rebuild.
	Recover func(c *mpi.Comm, lost []int) error
	// MaxRetries bounds how many times one step is run again after
	// failures (0: 8).
	MaxRetries int
}

// Stats counts what a transaction did. It has no MPI counterpart.
type Stats struct {
	Commits   int   // steps committed
	Rollbacks int   // steps rolled back (for failures and application errors)
	Repairs   int   // communicators repaired
	Lost      []int // ranks lost, in the communicator of the step that lost them, in order
}

// Tx runs the steps of one group of processes as transactions. A Tx is
// used by one goroutine of each process. It has no MPI counterpart.
type Tx struct {
	c     *mpi.Comm
	owned bool // c was made by a repair (the Tx frees it when replaced)
	cfg   Config
	saved []byte
	st    Stats
}

// The agreed bits (AND over the processes).
const (
	bitOK      = 1 << iota // this part returned nil
	bitNoFault             // this part saw no process failure
	bitNoApp               // this part had no application error
	bitsAll    = bitOK | bitNoFault | bitNoApp
)

// New starts transactions on c, whose error handler it sets to
// MPI_ERRORS_RETURN (the steps' failures must come back as errors). It
// saves the initial state (Config.Save). It is local. It has no MPI
// counterpart.
func New(c *mpi.Comm, cfg Config) (*Tx, error) {
	if c == nil {
		return nil, errors.New("txn: New: nil communicator")
	}
	if cfg.MaxRetries < 0 {
		return nil, fmt.Errorf("txn: New: MaxRetries %d is negative", cfg.MaxRetries)
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = 8
	}
	if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return nil, fmt.Errorf("txn: New: %w", err)
	}
	t := &Tx{c: c, cfg: cfg}
	if err := t.save(); err != nil {
		return nil, err
	}
	return t, nil
}

// Comm is the communicator the next step runs on: the one given to New
// until a repair replaces it. It has no MPI counterpart.
func (t *Tx) Comm() *mpi.Comm { return t.c }

// Stats returns what the transaction did so far. It has no MPI
// counterpart.
func (t *Tx) Stats() Stats {
	s := t.st
	s.Lost = slices.Clone(t.st.Lost)
	return s
}

// Step runs body on the transaction's communicator as one transaction
// (see the package comment): nil once it committed at every surviving
// process; the part's own error, or ErrAborted, once it was rolled back
// for an application error; ErrRetries when it could not commit in
// Config.MaxRetries retries; or the error of a save,
// restore, repair or recovery, after which the Tx must not be used. It has
// no MPI counterpart.
func (t *Tx) Step(body func(c *mpi.Comm) error) error {
	for attempt := 0; ; attempt++ {
		err := body(t.c)
		var bits uint64
		fault := isFault(err)
		app := err != nil && !fault && !errors.Is(err, mpi.ErrRevoked)
		if err == nil {
			bits |= bitOK
		}
		if !fault {
			bits |= bitNoFault
		}
		if !app {
			bits |= bitNoApp
		}
		if err != nil {
			// Release the parts that wait for this one.
			t.c.Revoke()
		}
		out, aerr := t.c.AgreeBits(bits)
		if aerr != nil && !errors.Is(aerr, mpi.ErrProcFailed) {
			return fmt.Errorf("txn: agreement on the step's outcome: %w", aerr)
		}
		if aerr == nil && out == bitsAll {
			t.st.Commits++
			return t.save()
		}
		// Rolled back at every survivor: the outcome and the agreement's
		// error are the same everywhere.
		t.st.Rollbacks++
		lost, rerr := t.repair()
		if rerr != nil {
			return rerr
		}
		if t.cfg.Restore != nil {
			if rerr := t.cfg.Restore(t.saved); rerr != nil {
				return fmt.Errorf("txn: Restore: %w", rerr)
			}
		}
		if t.cfg.Recover != nil {
			if rerr := t.cfg.Recover(t.c, lost); rerr != nil {
				return fmt.Errorf("txn: Recover: %w", rerr)
			}
		}
		if out&bitNoApp == 0 {
			if app {
				return err
			}
			return ErrAborted
		}
		if attempt >= t.cfg.MaxRetries {
			cause := aerr // the failure the agreement found, else this part's error
			if cause == nil {
				cause = err
			}
			if cause == nil {
				return fmt.Errorf("%w (%d attempts; the last lost %v)", ErrRetries, attempt+1, lost)
			}
			return fmt.Errorf("%w (%d attempts; the last lost %v): %w", ErrRetries, attempt+1, lost, cause)
		}
	}
}

// save records the state after a commit.
func (t *Tx) save() error {
	if t.cfg.Save == nil {
		return nil
	}
	b, err := t.cfg.Save()
	if err != nil {
		return fmt.Errorf("txn: Save: %w", err)
	}
	t.saved = b
	return nil
}

// repair revokes the step's communicator (if no part did), acknowledges
// its failures and makes the next one; it returns the lost ranks.
func (t *Tx) repair() ([]int, error) {
	old := t.c
	old.Revoke()
	old.FailureAck()
	repair := t.cfg.Repair
	if repair == nil {
		repair = (*mpi.Comm).Shrink
	}
	nc, err := repair(old)
	if err != nil {
		return nil, fmt.Errorf("txn: repairing the communicator: %w", err)
	}
	if err := nc.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return nil, fmt.Errorf("txn: repairing the communicator: %w", err)
	}
	all := make([]int, old.Size())
	for i := range all {
		all[i] = i
	}
	in, err := mpi.TranslateRanks(old.Group(), all, nc.Group())
	if err != nil {
		return nil, fmt.Errorf("txn: repairing the communicator: %w", err)
	}
	var lost []int
	for r, x := range in {
		if x == mpi.Undefined {
			lost = append(lost, r)
		}
	}
	t.st.Repairs++
	t.st.Lost = append(t.st.Lost, lost...)
	if t.owned {
		old.Free() // revoked: only its local resources go
	}
	t.c, t.owned = nc, true
	return lost, nil
}

// isFault reports whether err says a process failed.
func isFault(err error) bool {
	return errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrPending)
}
