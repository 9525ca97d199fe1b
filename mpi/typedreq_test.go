package mpi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// The typed requests of Iagree, Ishrink and IrecvValue complete through
// the multiple-completion calls (their embedded Request), after which
// their Wait returns the value at once; Test returns it too.
func TestRequestOfMultipleCompletion(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		ag, err := c.Iagree(c.Rank() != 2)
		if err != nil {
			return err
		}
		sh, err := c.Ishrink()
		if err != nil {
			return err
		}
		rv, err := mpi.IrecvValue[string](c, (c.Rank()+2)%3, 0)
		if err != nil {
			return err
		}
		if err := mpi.SendValue(c, fmt.Sprint("from ", c.Rank()), (c.Rank()+1)%3, 0); err != nil {
			return err
		}
		reqs := []*mpi.Request{ag.Request, sh.Request, rv.Request}
		for done := false; !done; {
			if _, done, err = mpi.Testall(reqs); err != nil {
				return err
			}
		}
		if flag, err := ag.Wait(); err != nil || flag {
			return fmt.Errorf("Iagree after Testall: %v %v (want false: rank 2 passed false)", flag, err)
		}
		s, err := sh.Wait()
		if err != nil || s == nil || s.Size() != 3 {
			return fmt.Errorf("Ishrink after Testall: %v %v", s, err)
		}
		defer s.Free()
		if v, err := rv.Wait(); err != nil || v != fmt.Sprint("from ", (c.Rank()+2)%3) {
			return fmt.Errorf("IrecvValue after Testall: %q %v", v, err)
		}
		// Waitany and Waitall.
		a2, _ := s.Iagree(true)
		b2, _ := s.Ibarrier()
		i, _, err := mpi.Waitany([]*mpi.Request{a2.Request})
		if err != nil || i != 0 {
			return fmt.Errorf("Waitany: %d %v", i, err)
		}
		if flag, _, err := a2.Test(); err != nil || !flag {
			return fmt.Errorf("Iagree after Waitany: %v %v", flag, err)
		}
		if _, err := mpi.Waitall([]*mpi.Request{b2}); err != nil {
			return err
		}
		// A nil typed request is an ErrRequest error.
		var nr *mpi.RequestOf[bool]
		if _, _, err := nr.Test(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("Test of a nil RequestOf: %v", err)
		}
		return nil
	})
}
