package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// A cut call's error: class ErrOther, wrapping the context's error.
func isCutBy(err, cause error) bool {
	return errors.Is(err, cause) && errors.Is(err, mpi.ErrOther) && mpi.ErrorClass(err) == mpi.ErrOther
}

// A receive cut by its deadline is withdrawn from matching: the message
// sent afterwards goes to the next receive, never into the buffer the cut
// call gave back; the communicator stays usable. The default handler of
// CommWorld (ErrorsAreFatal) is not called for a cut. Eager and
// rendezvous sizes.
func TestCtxRecvDeadlineWithdrawsReceive(t *testing.T) {
	for _, n := range []int{4, 100_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			cut := newGate()
			run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
				switch c.Rank() {
				case 0:
					cut.wait(t)
					msg := make([]int64, n)
					for i := range msg {
						msg[i] = int64(i + 7)
					}
					return mpi.Send(c, msg, 1, 3)
				case 1:
					c.SetErrhandler(mpi.ErrorsAreFatal) // a cut must not abort the job
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
					defer cancel()
					old := make([]int64, n)
					_, err := mpi.Recv(c.WithContext(ctx), old, 0, 3)
					cut.open()
					if !isCutBy(err, context.DeadlineExceeded) {
						return fmt.Errorf("cut receive: %v, want ErrOther wrapping DeadlineExceeded", err)
					}
					c.SetErrhandler(mpi.ErrorsReturn)
					got := make([]int64, n)
					st, err := mpi.Recv(c, got, 0, 3)
					if err != nil || st.Count != n || got[0] != 7 || got[n-1] != int64(n+6) {
						return fmt.Errorf("receive after the cut: %+v %v (first %d)", st, err, got[0])
					}
					if slices.ContainsFunc(old, func(v int64) bool { return v != 0 }) {
						return fmt.Errorf("the message was written into the buffer of the cut receive")
					}
				}
				return nil
			})
		})
	}
}

// A rendezvous send cut while waiting for its receiver is delivered from a
// copy: the caller may reuse its buffer at once.
func TestCtxSendCutDeliversCopy(t *testing.T) {
	const n = 100_000
	cut := newGate()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 0:
			buf := make([]int32, n)
			for i := range buf {
				buf[i] = int32(i)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := mpi.Send(c.WithContext(ctx), buf, 1, 1)
			if !isCutBy(err, context.Canceled) {
				cut.open()
				return fmt.Errorf("cut send: %v", err)
			}
			for i := range buf {
				buf[i] = -1
			}
			cut.open()
		case 1:
			cut.wait(t)
			got := make([]int32, n)
			if _, err := mpi.Recv(c, got, 0, 1); err != nil {
				return err
			}
			if got[0] != 0 || got[n-1] != n-1 {
				return fmt.Errorf("received %d..%d, want the buffer as it was at the send", got[0], got[n-1])
			}
		}
		return nil
	})
}

// Probe and Mprobe stop waiting; a nil context gives ErrArg; a call that
// can complete without waiting completes even with a done context.
func TestCtxProbeAndBadContext(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		v := c.WithContext(ctx)
		if c.Rank() == 1 {
			if _, err := v.Probe(0, 9); !isCutBy(err, context.Canceled) {
				return fmt.Errorf("cut probe: %v", err)
			}
			if _, _, err := v.Mprobe(mpi.AnySource, 9); !isCutBy(err, context.Canceled) {
				return fmt.Errorf("cut mprobe: %v", err)
			}
			//lint:ignore SA1012 a nil context is the bad input under test
			bad := c.WithContext(nil) //nolint:staticcheck
			if _, err := mpi.Recv(bad, []int{0}, 0, 9); !errors.Is(err, mpi.ErrArg) {
				return fmt.Errorf("nil context: %v, want ErrArg", err)
			}
			if v.Context() != ctx || c.Context() != context.Background() {
				return fmt.Errorf("Context() does not return the view's context")
			}
		}
		// Both ranks: a message already there is received on a done view.
		if err := mpi.Send(c, []int{c.Rank()}, 1-c.Rank(), 4); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil { // the eager messages are queued
			return err
		}
		if _, err := v.Probe(1-c.Rank(), 4); err != nil {
			return fmt.Errorf("probe of a queued message on a done view: %v", err)
		}
		got := []int{-1}
		if _, err := mpi.Recv(v, got, 1-c.Rank(), 4); err != nil || got[0] != 1-c.Rank() {
			return fmt.Errorf("queued message on a done view: %v %v", got, err)
		}
		return nil
	})
}

// Wait on a receive started on a view: cut withdraws it (Status.Cancelled)
// and the request is complete; Waitany does the same.
func TestCtxRequestWaitCut(t *testing.T) {
	cut := newGate()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 0:
			cut.wait(t)
			return mpi.Send(c, []int{5}, 1, 2)
		case 1:
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			v := c.WithContext(ctx)
			r1, err := mpi.Irecv(v, []int{0}, 0, 2)
			if err != nil {
				return err
			}
			r2, err := mpi.Irecv(v, []int{0}, mpi.AnySource, 2)
			if err != nil {
				return err
			}
			cancel()
			st, err := r1.Wait()
			if !isCutBy(err, context.Canceled) || !st.Cancelled {
				return fmt.Errorf("cut wait: %+v %v", st, err)
			}
			if st2, err2 := r1.Wait(); st2 != st || err2 != err {
				return fmt.Errorf("second wait of a cut request: %+v %v", st2, err2)
			}
			reqs := []*mpi.Request{r2}
			i, _, err := mpi.Waitany(reqs)
			if i != 0 || !isCutBy(err, context.Canceled) || reqs[0] != nil {
				return fmt.Errorf("cut waitany: %d %v %v", i, err, reqs)
			}
			cut.open()
			got := []int{0}
			if _, err := mpi.Recv(c, got, 0, 2); err != nil || got[0] != 5 {
				return fmt.Errorf("receive after the cut requests: %v %v", got, err)
			}
		}
		return nil
	})
}

// A collective cut by its context fails at the others that still need
// this member (as a mismatched call does), naming the cut rank; members
// that finished their part succeed; the communicator stays usable. Rank 0
// is cut at its first wait (the others enter the barrier after its call
// returned), so at least one other member needs a message it never sends,
// whichever barrier algorithm runs.
func TestCtxCollectiveCutReleasesOthers(t *testing.T) {
	cut := newGate()
	var failedOthers atomic.Int32
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := c.WithContext(ctx).Barrier()
			cut.open()
			if !isCutBy(err, context.Canceled) {
				return fmt.Errorf("rank 0: cut barrier: %v", err)
			}
		} else {
			cut.wait(t)
			err := c.Barrier()
			if err != nil {
				failedOthers.Add(1)
				if !errors.Is(err, mpi.ErrOther) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "rank 0") {
					return fmt.Errorf("rank %d: barrier with a cut member: %v, want ErrOther naming rank 0", c.Rank(), err)
				}
			}
		}
		// The next collective is matched as usual.
		x := []int{1}
		if err := mpi.Allreduce(c, x, x, mpi.Sum); err != nil || x[0] != 4 {
			return fmt.Errorf("rank %d: allreduce after the cut: %v %v", c.Rank(), x, err)
		}
		return nil
	})
	if failedOthers.Load() == 0 {
		t.Fatal("no other member's barrier failed: the cut member was not waited for")
	}
}

// Sendrecv whose receive is cut is withdrawn; Waitall of requests started
// on a view returns the cut error, the unmatched receive withdrawn and the
// matched one completed with its message.
func TestCtxSendrecvAndWaitall(t *testing.T) {
	cut := newGate()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 0:
			if err := mpi.Send(c, []int{1}, 1, 1); err != nil { // matches r1 below
				return err
			}
			cut.wait(t)
			// Rank 1's cut Sendrecv sent 9 on tag 5, and its receives were
			// withdrawn: these go to its next receives.
			got := []int{0}
			if _, err := mpi.Recv(c, got, 1, 5); err != nil || got[0] != 9 {
				return fmt.Errorf("message of the cut sendrecv: %v %v", got, err)
			}
			return mpi.Send(c, []int{2}, 1, 2)
		case 1:
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			v := c.WithContext(ctx)
			if _, err := mpi.Sendrecv(v, []int{9}, 0, 5, []int{0}, 0, 2); !isCutBy(err, context.Canceled) {
				return fmt.Errorf("cut sendrecv: %v", err)
			}
			// Wait until rank 0's first message is queued, so r1 matches it.
			if _, err := c.Probe(0, 1); err != nil {
				return err
			}
			b1, b2 := []int{0}, []int{-1}
			r1, err := mpi.Irecv(v, b1, 0, 1)
			if err != nil {
				return err
			}
			r2, err := mpi.Irecv(v, b2, 0, 2)
			if err != nil {
				return err
			}
			sts, err := mpi.Waitall([]*mpi.Request{r1, r2})
			if !isCutBy(err, context.Canceled) {
				return fmt.Errorf("cut waitall: %v", err)
			}
			if sts[0].Err != nil || b1[0] != 1 || !sts[1].Cancelled {
				return fmt.Errorf("cut waitall statuses %+v, buffers %v %v", sts, b1, b2)
			}
			cut.open()
			got := []int{0}
			if _, err := mpi.Recv(c, got, 0, 2); err != nil || got[0] != 2 || b2[0] != -1 {
				return fmt.Errorf("receive after the cut: %v %v (cut buffer %v)", got, err, b2)
			}
		}
		return nil
	})
}

// Run-through: a validated communicator runs its collectives on the view
// of its alive members; a call on a context view is cut there too, and
// released at the others.
func TestCtxRunThroughCollectiveCut(t *testing.T) {
	cut := newGate()
	var failedOthers atomic.Int32
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 2 {
			w.Kill()
		}
		if err := awaitFailure(c, 2); err != nil {
			return err
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := c.WithContext(ctx).Barrier()
			cut.open()
			if !isCutBy(err, context.Canceled) {
				return fmt.Errorf("rank 0: cut barrier on the alive view: %v", err)
			}
		} else {
			cut.wait(t)
			if err := c.Barrier(); err != nil {
				failedOthers.Add(1)
				if !errors.Is(err, mpi.ErrOther) {
					return fmt.Errorf("rank %d: barrier with a cut member: %v", c.Rank(), err)
				}
			}
		}
		x := []int{1}
		if err := mpi.Allreduce(c, x, x, mpi.Sum); err != nil || x[0] != 3 {
			return fmt.Errorf("rank %d: allreduce after the cut: %v %v", c.Rank(), x, err)
		}
		return nil
	})
	if failedOthers.Load() == 0 {
		t.Fatal("no other member's barrier failed")
	}
}

// A nonblocking collective started on a view runs on the view: its call is
// cut by the context and its request completes with the cut error; the
// others are released as for the blocking form.
func TestCtxNonblockingCollectiveCut(t *testing.T) {
	cut := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			req, err := c.WithContext(ctx).Ibarrier()
			if err != nil {
				cut.open()
				return err
			}
			_, _, err = mpi.Waitany([]*mpi.Request{req})
			cut.open()
			if !isCutBy(err, context.Canceled) {
				return fmt.Errorf("rank 0: cut ibarrier: %v", err)
			}
		} else {
			cut.wait(t)
			if err := c.Barrier(); err != nil && !errors.Is(err, mpi.ErrOther) {
				return fmt.Errorf("rank %d: barrier with a cut member: %v", c.Rank(), err)
			}
		}
		x := []int{1}
		if err := mpi.Allreduce(c, x, x, mpi.Sum); err != nil || x[0] != 3 {
			return fmt.Errorf("rank %d: allreduce after the cut: %v %v", c.Rank(), x, err)
		}
		return nil
	})
}
