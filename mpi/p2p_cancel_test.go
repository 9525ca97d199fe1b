package mpi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// MPI-4.1 3.8.4: a send cancelled before its message matched is cancelled
// (Status.Cancelled, and no receive ever gets the message), whatever its
// mode and size (eager, rendezvous, synchronous, persistent, buffered); a
// send whose message matched completes normally; Cancel after the
// completion was returned does nothing.
func TestCancelSend(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		for _, n := range []int{4, 1 << 17} {
			if err := cancelSendRound(w, c, n); err != nil {
				return fmt.Errorf("%d bytes: %w", n, err)
			}
		}
		return nil
	})
}

func cancelSendRound(w *mpi.World, c *mpi.Comm, n int) error {
	msg := make([]byte, n)
	msg[0] = 'm'
	if c.Rank() == 1 {
		got := make([]byte, n)
		rr, err := mpi.Irecv(c, got, 0, 5) // posted before rank 0 sends tag 5
		if err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		other := make([]byte, n)
		if _, err := mpi.Recv(c, other, 0, 3); err != nil || other[0] != 'm' {
			return fmt.Errorf("receive of tag 3: %v", err)
		}
		if st, err := rr.Wait(); err != nil || st.Cancelled || got[0] != 'm' {
			return fmt.Errorf("receive of the matched send: %+v %v", st, err)
		}
		for _, tag := range []int{6, 9} {
			got[0] = 0
			if _, err := mpi.Recv(c, got, 0, tag); err != nil || got[0] != 'm' {
				return fmt.Errorf("receive of tag %d: %v", tag, err)
			}
		}
		// Tag 9 came after every cancelled send was answered: a message
		// left of them would be here.
		if st, ok, err := c.Iprobe(mpi.AnySource, mpi.AnyTag); ok || err != nil {
			return fmt.Errorf("a cancelled message was left: %+v %v", st, err)
		}
		return c.Barrier()
	}
	cancelled := func(what string, r *mpi.Request, want bool) error {
		if err := r.Cancel(); err != nil {
			return fmt.Errorf("%s: Cancel: %v", what, err)
		}
		st, err := r.Wait()
		if err != nil || st.Cancelled != want {
			return fmt.Errorf("%s: Wait after Cancel: %+v %v, want Cancelled %v", what, st, err, want)
		}
		return nil
	}
	r, err := mpi.Isend(c, msg, 1, 1)
	if err != nil {
		return err
	}
	if err := cancelled("Isend", r, true); err != nil {
		return err
	}
	if r, err = mpi.Issend(c, msg, 1, 2); err != nil {
		return err
	}
	if err := cancelled("Issend", r, true); err != nil {
		return err
	}
	p, err := mpi.SendInit(c, msg, 1, 3)
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	if err := cancelled("SendInit", p, true); err != nil {
		return err
	}
	if err := p.Start(); err != nil { // the next operation goes (waited below)
		return err
	}
	if err := w.BufferAttach(make([]byte, n)); err != nil {
		return err
	}
	if r, err = mpi.Ibsend(c, msg, 1, 4); err != nil {
		return err
	}
	if err := cancelled("Ibsend", r, true); err != nil {
		return err
	}
	w.BufferDetach() // the cancelled message left the buffer: no wait
	// Matched: rank 1's receive is posted.
	if err := c.Barrier(); err != nil {
		return err
	}
	if st, err := p.Wait(); err != nil || st.Cancelled {
		return fmt.Errorf("persistent send started again: %+v %v", st, err)
	}
	p.Free()
	if r, err = mpi.Isend(c, msg, 1, 5); err != nil {
		return err
	}
	if n <= 64<<10 { // eager: matched at arrival; a rendezvous send may or may not be
		if err := cancelled("matched Isend", r, false); err != nil {
			return err
		}
	} else if _, err := r.Wait(); err != nil {
		return err
	}
	// Cancel after Wait returned: no effect.
	if r, err = mpi.Isend(c, msg, 1, 6); err != nil {
		return err
	}
	if _, err := r.Wait(); err != nil {
		return err
	}
	if err := cancelled("completed Isend", r, false); err != nil {
		return err
	}
	if err := mpi.Send(c, msg, 1, 9); err != nil {
		return err
	}
	return c.Barrier()
}

// MPICH's scancel_unmatch: of two sends with one envelope, cancelling the
// second leaves the first for the receive.
func TestCancelSendKeepsOrder(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			r1, _ := mpi.Isend(c, []int{10}, 1, 0)
			r2, _ := mpi.Isend(c, []int{20}, 1, 0)
			if err := r2.Cancel(); err != nil {
				return err
			}
			sts, err := mpi.Waitall([]*mpi.Request{r1, r2})
			if err != nil || sts[0].Cancelled || !sts[1].Cancelled {
				return fmt.Errorf("Waitall: %+v %v, want the second cancelled", sts, err)
			}
			return c.Barrier()
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		buf := []int{0}
		if _, err := mpi.Recv(c, buf, 0, 0); err != nil || buf[0] != 10 {
			return fmt.Errorf("received %v %v, want 10", buf, err)
		}
		return nil
	})
}

// A cancelled send whose receiver dies meanwhile completes, cancelled or
// with ErrProcFailed, and never hangs. (The engine's
// TestCancelSendReceiverLost makes the receiver die before it answers.)
func TestCancelSendReceiverDies(t *testing.T) {
	sent := newGate()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			sent.wait(t)
			w.Kill()
		}
		var reqs []*mpi.Request
		for _, n := range []int{4, 1 << 17} {
			r, err := mpi.Isend(c, make([]byte, n), 1, 0)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		sent.open()
		for i, r := range reqs {
			if err := r.Cancel(); err != nil {
				return err
			}
			st, err := r.Wait()
			if !(err == nil && st.Cancelled || errors.Is(err, mpi.ErrProcFailed)) {
				return fmt.Errorf("send %d: %+v %v, want cancelled or ErrProcFailed", i, st, err)
			}
		}
		return nil
	})
}
