package mpi_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// The fault-tolerance model of a communicator is chosen when it is created:
// Dup, Split, Create and Merge of a run-through communicator are run-through
// from the start (before any chapter-17 call on them), those of a ULFM one
// are ULFM, and Shrink and CreateGroup give ULFM communicators. The models
// then behave differently on the same failure.
func TestModelChosenAtCreation(t *testing.T) {
	dups := newArrivals(4)
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		want := func(what string, x *mpi.Comm, model string) error {
			if got := mpi.ModelName(x); got != model {
				return fmt.Errorf("%s: model %q, want %q", what, got, model)
			}
			if x.RunThrough() != (model == "run-through") {
				return fmt.Errorf("%s: RunThrough() = %v with model %q", what, x.RunThrough(), model)
			}
			return nil
		}
		if err := want("CommWorld", c, "ULFM"); err != nil {
			return err
		}
		ulfm, err := c.Dup()
		if err != nil {
			return err
		}
		rt, err := c.Dup()
		if err != nil {
			return err
		}
		if err := rt.EnableRunThrough(); err != nil {
			return err
		}
		if err := want("ULFM Dup", ulfm, "ULFM"); err != nil {
			return err
		}
		if err := want("switched Dup", rt, "run-through"); err != nil {
			return err
		}
		derived := map[string]*mpi.Comm{}
		for _, parent := range []struct {
			name string
			c    *mpi.Comm
		}{{"ULFM", ulfm}, {"run-through", rt}} {
			d, err := parent.c.Dup()
			if err != nil {
				return err
			}
			s, err := parent.c.Split(c.Rank()%2, c.Rank())
			if err != nil {
				return err
			}
			cr, err := parent.c.Create(parent.c.Group())
			if err != nil {
				return err
			}
			for kind, x := range map[string]*mpi.Comm{"Dup": d, "Split": s, "Create": cr} {
				if err := want(kind+" of a "+parent.name+" communicator", x, parent.name); err != nil {
					return err
				}
			}
			derived[parent.name] = d
		}
		cg, err := rt.CreateGroup(rt.Group(), 7)
		if err != nil {
			return err
		}
		if err := want("CreateGroup of a run-through communicator", cg, "ULFM"); err != nil {
			return err
		}

		dups.arrive()
		if c.Rank() == 3 {
			dups.g.wait(t)
			w.Kill()
		}
		if err := awaitFailure(c, 3); err != nil {
			return err
		}
		// The same failure, as each derived communicator's model sees it
		// (no chapter-17 call was made on either).
		pend, err := mpi.Irecv(derived["ULFM"], []int{0}, mpi.AnySource, 5)
		if err != nil {
			return err
		}
		if _, err := pend.Wait(); !errors.Is(err, mpi.ErrPending) {
			return fmt.Errorf("wildcard receive on the ULFM-derived communicator: want ErrPending, got %v", err)
		}
		if err := pend.Cancel(); err != nil {
			return err
		}
		if st, err := pend.Wait(); err != nil || !st.Cancelled {
			return fmt.Errorf("cancelled wildcard receive: %+v %v", st, err)
		}
		req, err := mpi.Irecv(derived["run-through"], []int{0}, mpi.AnySource, 5)
		if err != nil {
			return err
		}
		if _, err := req.Wait(); !errors.Is(err, mpi.ErrRankFailStop) || errors.Is(err, mpi.ErrPending) {
			return fmt.Errorf("wildcard receive on the run-through-derived communicator: want ErrRankFailStop, got %v", err)
		}
		if err := derived["run-through"].Barrier(); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("Barrier on the inactive run-through-derived communicator: want ErrRankFailStop, got %v", err)
		}
		sh, err := derived["run-through"].Shrink()
		if err != nil {
			return err
		}
		if err := want("Shrink of a run-through communicator", sh, "ULFM"); err != nil {
			return err
		}
		return nil
	})
}

// The switch to run-through is one atomic swap: concurrent chapter-17
// calls on a ULFM communicator all end with the same model.
func TestModelSwitchIsAtomic(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		const n = 16
		got := make([]any, n)
		var wg sync.WaitGroup
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = mpi.SwitchToRunThrough(d)
			}()
		}
		wg.Wait()
		for i, m := range got {
			if m != got[0] {
				return fmt.Errorf("goroutine %d got model %p, goroutine 0 %p", i, m, got[0])
			}
		}
		if mpi.SwitchToRunThrough(d) != got[0] || mpi.ModelName(d) != "run-through" {
			return errors.New("a later switch replaced the model")
		}
		if mpi.ModelName(c) != "ULFM" {
			return errors.New("the parent's model changed")
		}
		return nil
	})
}
