package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Rsend is a standard send; SendrecvReplace exchanges in place around a
// ring (the receive overwrites the buffer the send was taken from), eager
// and rendezvous; GetStatus reports without completing the request.
func TestRsendSendrecvReplaceGetStatus(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		me, n := c.Rank(), c.Size()
		right, left := (me+1)%n, (me+n-1)%n
		for _, size := range []int{3, 50_000} {
			buf := make([]int64, size)
			for i := range buf {
				buf[i] = int64(me*10 + i%7)
			}
			st, err := mpi.SendrecvReplace(c, buf, right, 1, left, 1)
			if err != nil || st.Source != left || st.Count != size || buf[0] != int64(left*10) || buf[size-1] != int64(left*10+(size-1)%7) {
				return fmt.Errorf("sendrecv_replace of %d: %+v %v (first %d)", size, st, err, buf[0])
			}
		}
		if st, err := mpi.SendrecvReplace(c, []int{me}, mpi.ProcNull, 0, mpi.ProcNull, 0); err != nil || st.Source != mpi.ProcNull {
			return fmt.Errorf("sendrecv_replace with ProcNull: %+v %v", st, err)
		}
		if err := mpi.Rsend(c, []int{me}, 9, 0); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("rsend to rank 9: %v, want ErrRank", err)
		}
		if me == 0 {
			req, err := mpi.Irecv(c, []int{0}, 1, 2)
			if err != nil {
				return err
			}
			if _, done, err := req.GetStatus(); done || err != nil {
				return fmt.Errorf("get_status of a pending receive: %v %v", done, err)
			}
			if err := mpi.Send(c, []int{0}, 1, 3); err != nil { // tell rank 1 to send
				return err
			}
			if _, err := mpi.Recv(c, []int{0}, 1, 4); err != nil { // sent: the receive is complete
				return err
			}
			st, done, err := req.GetStatus()
			if !done || err != nil || st.Source != 1 {
				return fmt.Errorf("get_status of a complete receive: %+v %v %v", st, done, err)
			}
			if st2, err := req.Wait(); err != nil || st2 != st {
				return fmt.Errorf("wait after get_status: %+v %v, want %+v", st2, err, st)
			}
			var nilReq *mpi.Request
			if _, _, err := nilReq.GetStatus(); !errors.Is(err, mpi.ErrRequest) {
				return fmt.Errorf("get_status of nil: %v", err)
			}
		}
		if me == 1 {
			if _, err := mpi.Recv(c, []int{0}, 0, 3); err != nil {
				return err
			}
			if err := mpi.Rsend(c, []int{5}, 0, 2); err != nil {
				return err
			}
			req, err := mpi.Irsend(c, []int{6}, 0, 4)
			if err != nil {
				return err
			}
			if _, err := req.Wait(); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestWtime(t *testing.T) {
	a := mpi.Wtime()
	b := mpi.Wtime()
	if a < 0 || b < a {
		t.Fatalf("Wtime not monotonic: %v then %v", a, b)
	}
	if tick := mpi.Wtick(); tick <= 0 || tick > 1e-6 {
		t.Fatalf("Wtick = %v", tick)
	}
	if mpi.WtimeIsGlobal {
		t.Fatal("WtimeIsGlobal is true")
	}
}

// Agree and Shrink on a view cut by its context return at once; the
// protocol still completes at the others with this process's part, and a
// cut Shrink's communicator is revoked, so the others see ErrRevoked on it
// instead of waiting for this process.
func TestCtxAgreeAndShrinkCut(t *testing.T) {
	cutAgree, cutShrink := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if c.Rank() == 0 {
			_, err := c.WithContext(ctx).Agree(false)
			cutAgree.open()
			if !isCutBy(err, context.Canceled) {
				return fmt.Errorf("cut agree: %v", err)
			}
		} else {
			cutAgree.wait(t)
			flag, err := c.Agree(true)
			if err != nil || flag {
				return fmt.Errorf("rank %d: agree with a cut member: %v %v, want false (rank 0's part)", c.Rank(), flag, err)
			}
		}
		if c.Rank() == 0 {
			_, err := c.WithContext(ctx).Shrink()
			cutShrink.open()
			if !isCutBy(err, context.Canceled) {
				return fmt.Errorf("cut shrink: %v", err)
			}
			return nil
		}
		cutShrink.wait(t)
		s, err := c.Shrink()
		if err != nil {
			return fmt.Errorf("rank %d: shrink with a cut member: %v", c.Rank(), err)
		}
		s.SetErrhandler(mpi.ErrorsReturn)
		if s.Size() != 3 {
			return fmt.Errorf("shrunk size %d, want 3", s.Size())
		}
		if err := s.Barrier(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("rank %d: barrier on the communicator of a cut shrink: %v, want ErrRevoked", c.Rank(), err)
		}
		return nil
	})
}
