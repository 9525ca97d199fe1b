package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// checkMismatch asserts that err is the mismatched-agreement error of a
// rank that called mine where another member called other.
func checkMismatch(rank int, err error, mine, other string) error {
	if !errors.Is(err, mpi.ErrOther) || mpi.ErrorClass(err) != mpi.ErrOther {
		return fmt.Errorf("rank %d: %v, want MPI_ERR_OTHER", rank, err)
	}
	want := "mismatched agreement #1: this rank called " + mine + " where another member called " + other
	if !strings.Contains(err.Error(), want) {
		return fmt.Errorf("rank %d: %q does not say %q", rank, err, want)
	}
	return nil
}

// One rank calls MPI_Comm_agree where the others call MPI_Comm_shrink (the
// halo.c mistake of session 14, one agreement apart): every rank gets
// MPI_ERR_OTHER naming both calls, none hangs or goes on with a value
// combined from different calls. Without the kinds, rank 1's Agree
// returned the AND of the others' failed-set flags and the shrinking ranks
// went on to the claim agreement, which nobody else joined: a hang.
func TestAgreeMismatchAgreeWhereOthersShrink(t *testing.T) {
	const n = 4
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		c.SetErrhandler(mpi.ErrorsReturn)
		if _, err := c.Agree(true); err != nil { // #0: every rank agrees
			return err
		}
		if c.Rank() == 1 {
			_, err := c.Agree(true) // #1: one agreement more than the others
			return checkMismatch(1, err, "MPI_Comm_agree", "MPI_Comm_shrink (its failed-set agreement)")
		}
		s, err := c.Shrink() // #1
		if err == nil {
			s.Free()
			return fmt.Errorf("rank %d: Shrink succeeded beside rank 1's Agree", c.Rank())
		}
		return checkMismatch(c.Rank(), err, "MPI_Comm_shrink (its failed-set agreement)", "MPI_Comm_agree")
	})
}

// A rank that agrees one time fewer than the others before MPIX_Comm_shrink
// meets their second Agree with its Shrink: all of them get the error in
// that call (the Iagree and Ishrink forms count as Agree and Shrink).
func TestAgreeMismatchOneAgreementFewer(t *testing.T) {
	const n = 5
	var mu sync.Mutex
	seen := map[int]string{}
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		c.SetErrhandler(mpi.ErrorsReturn)
		if _, err := c.Agree(true); err != nil {
			return err
		}
		var err error
		var mine, other = "MPI_Comm_agree", "MPI_Comm_shrink (its failed-set agreement)"
		if c.Rank() == 3 {
			mine, other = other, mine
			var r *mpi.RequestOf[*mpi.Comm]
			if r, err = c.Ishrink(); err == nil {
				_, err = r.Wait()
			}
		} else {
			var r *mpi.RequestOf[bool]
			if r, err = c.Iagree(true); err == nil {
				_, err = r.Wait()
			}
		}
		mu.Lock()
		seen[c.Rank()] = fmt.Sprint(err)
		mu.Unlock()
		return checkMismatch(c.Rank(), err, mine, other)
	})
	if len(seen) != n {
		t.Fatalf("errors of %d ranks, want %d: %v", len(seen), n, seen)
	}
}

// A rank that makes one agreement call more than the others, whose extra
// agreement meets no agreement call at all (they went on to a barrier),
// cannot get an error: nobody else takes part in that instance. The hang
// report names it: the instance it waits in and the others' count.
func TestHangReportAgreementsOutOfStep(t *testing.T) {
	r := runHung(t, 3, func(w *mpi.World, c *mpi.Comm) {
		c.Agree(true)
		if c.Rank() == 0 {
			c.Agree(true) // one more than the others
		}
		c.Barrier()
	})
	wantLines(t, r, "agreements out of step on MPI_COMM_WORLD (agreements match by their order: a rank made more agreement calls than the others): "+
		"rank 0 in agreement #1 (MPI_Comm_agree); ranks 1,2 made agreement #0 on it, in MPI_Barrier on MPI_COMM_WORLD #1")
}
