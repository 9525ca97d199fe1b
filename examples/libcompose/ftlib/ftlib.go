// Package ftlib holds what the two libraries of examples/libcompose share:
// the status object of seed 002 section 6.2.2, the failure they return
// after revoking their communicator (section 6.2.3, "revoke" and
// "return"), the block distribution of a vector and the modulus of the
// exact integer arithmetic.
package ftlib

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ftmpi/ftmpi/mpi"
)

// Modulus is the prime of every computation: values stay below 2^30, so a
// product fits in an int64 and results never depend on the order of
// additions (no rounding), hence not on the number of ranks.
const Modulus = 1_000_000_007

// Status is a library's status object, stored by the application (seed
// 002, 6.2.2): the library records in it which operation of which step it
// is running, whether it completed, and after a failure what happened.
type Status struct {
	Lib  string // library name
	Op   string // current or last operation
	Step int    // application step the operation belongs to
	Done bool   // the operation completed here

	// After a failure:
	Err    error // the MPI error the library saw
	Failed []int // world ranks known failed on the library's communicator when it saw Err
}

// Begin records the start of operation op of step step.
func (s *Status) Begin(op string, step int) {
	s.Op, s.Step, s.Done, s.Err, s.Failed = op, step, false, nil, nil
}

// Fail is what a library does when an operation on its communicator c
// fails: revoke c, so that no other member stays blocked in the library,
// record what happened, and return the failure to the caller. The library
// does not try to repair itself: the application does (6.2.3).
func (s *Status) Fail(c *mpi.Comm, err error) error {
	c.Revoke()
	s.Err = err
	if g, gerr := c.GetFailed(); gerr == nil {
		s.Failed = g.WorldRanks()
	}
	return &Failure{Lib: s.Lib, Op: s.Op, Step: s.Step, Failed: slices.Clone(s.Failed), Err: err}
}

// Failure is the error a library returns after a process failure: which
// library, which operation of which step, which (world) ranks it knew
// failed, and the MPI error (ErrProcFailed, ErrRevoked, ...: errors.Is works).
type Failure struct {
	Lib    string
	Op     string
	Step   int
	Failed []int
	Err    error
}

func (f *Failure) Error() string {
	return fmt.Sprintf("%s.%s (step %d): %s; failed world ranks known here %v; %s's communicator revoked",
		f.Lib, f.Op, f.Step, Class(f.Err), f.Failed, f.Lib)
}

func (f *Failure) Unwrap() error { return f.Err }

// Class names the ULFM error class of err.
func Class(err error) string {
	switch {
	case errors.Is(err, mpi.ErrProcFailed):
		return "MPI_ERR_PROC_FAILED"
	case errors.Is(err, mpi.ErrRevoked):
		return "MPI_ERR_REVOKED"
	case err == nil:
		return "no error"
	}
	return err.Error()
}

// Block returns the half-open range [lo, hi) of the n elements of a vector
// that rank of size ranks holds.
func Block(n, size, rank int) (lo, hi int) {
	return rank * n / size, (rank + 1) * n / size
}
