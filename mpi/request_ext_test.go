package mpi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// TestIsendrecv: a ring shift with MPI_Isendrecv and with
// MPI_Isendrecv_replace; the request's status is the receive's.
func TestIsendrecv(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		me, n := c.Rank(), c.Size()
		right, left := (me+1)%n, (me+n-1)%n
		send := []int32{int32(me), int32(10 * me)}
		recv := make([]int32, 2)
		r, err := mpi.IsendrecvTyped(c, send, 2, mpi.Int32, right, 7, recv, 2, mpi.Int32, mpi.AnySource, mpi.AnyTag)
		if err != nil {
			return err
		}
		st, err := r.Wait()
		if err != nil || st.Source != left || st.Tag != 7 || st.Count != 2 || recv[0] != int32(left) || recv[1] != int32(10*left) {
			return fmt.Errorf("Isendrecv: %+v %v %v", st, recv, err)
		}
		buf := []int32{int32(me), -1}
		r, err = mpi.IsendrecvReplaceTyped(c, buf, 2, mpi.Int32, right, 8, left, 8)
		if err != nil {
			return err
		}
		st, err = r.Wait()
		if err != nil || st.Source != left || buf[0] != int32(left) || buf[1] != -1 {
			return fmt.Errorf("Isendrecv_replace: %+v %v %v", st, buf, err)
		}
		// To and from MPI_PROC_NULL: complete at once, the status of a
		// receive from MPI_PROC_NULL.
		r, err = mpi.IsendrecvTyped(c, send, 2, mpi.Int32, mpi.ProcNull, 0, recv, 2, mpi.Int32, mpi.ProcNull, 0)
		if err != nil {
			return err
		}
		if st, err = r.Wait(); err != nil || st.Source != mpi.ProcNull {
			return fmt.Errorf("Isendrecv with MPI_PROC_NULL: %+v %v", st, err)
		}
		return nil
	})
}

// TestGrequest: a generalized request completes when the program says so;
// Wait then calls query (the status it fills is returned) and free, once;
// Cancel is told whether it completed; a second Complete is an error.
func TestGrequest(t *testing.T) {
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
		queries, frees, cancels := 0, 0, []bool{}
		r, g := w.GrequestStart(func(st *mpi.Status) error {
			queries++
			st.Count, st.Bytes = 3, 12
			return nil
		}, func() error { frees++; return nil }, func(complete bool) error { cancels = append(cancels, complete); return nil })
		if _, done, err := r.Test(); done || err != nil {
			return fmt.Errorf("an incomplete generalized request tested complete (%v)", err)
		}
		if err := r.Cancel(); err != nil {
			return err
		}
		if err := g.Complete(); err != nil {
			return err
		}
		if err := r.Cancel(); err != nil {
			return err
		}
		st, err := r.Wait()
		if err != nil || st.Count != 3 || queries != 1 || frees != 1 || len(cancels) != 2 || cancels[0] || !cancels[1] {
			return fmt.Errorf("Wait: %+v %v queries %d frees %d cancels %v", st, err, queries, frees, cancels)
		}
		if err := g.Complete(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("second Complete: %v, want ErrRequest", err)
		}
		// Freed before completion: free runs at Complete, query never.
		queries, frees = 0, 0
		r, g = w.GrequestStart(func(*mpi.Status) error { queries++; return nil }, func() error { frees++; return nil }, nil)
		if err := r.Free(); err != nil {
			return err
		}
		if frees != 0 {
			return fmt.Errorf("free ran before completion")
		}
		if err := g.Complete(); err != nil || frees != 1 || queries != 0 {
			return fmt.Errorf("Complete after Free: %v frees %d queries %d", err, frees, queries)
		}
		// The query function's error is the request's.
		r, g = w.GrequestStart(func(*mpi.Status) error { return errors.New("query failed") }, nil, nil)
		g.Complete()
		if _, err := r.Wait(); err == nil {
			return fmt.Errorf("a failing query function gave no error")
		}
		return nil
	})
}
