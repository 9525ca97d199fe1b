package mpi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// The checking mode (check.go): a mismatch between the members' calls of
// a collective is an error at every member, each member's error asserted.

// runCheck runs fn as n ranks under the checking mode, with a deadline.
func runCheck(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm) error) {
	t.Helper()
	if err := runCheckErr(t, n, fn); err != nil {
		t.Fatal(err)
	}
}

func runCheckErr(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm) error) error {
	t.Helper()
	cfg := mpi.DefaultConfig()
	cfg.Check = true
	return runConfigErr(t, n, cfg, fn)
}

// mustExactly checks that err is of class with exactly the detail want.
func mustExactly(err error, class *mpi.Class, want string) error {
	var e *mpi.Error
	if !errors.As(err, &e) || e.Class != class || e.Detail != want {
		return fmt.Errorf("got %v, want class %v with %q", err, class, want)
	}
	return nil
}

func TestCheckBcastRootAtEveryMember(t *testing.T) {
	// Without the checking mode the root of a broadcast whose root differs
	// at rank 3 returns success (coll_sig.go); with it every member fails,
	// the root included, and the communicator keeps working.
	for _, mode := range modes {
		t.Run(modeName(mode), func(t *testing.T) {
			runCheck(t, 4, func(w *mpi.World, c *mpi.Comm) error {
				mpi.SetCrowdedForTest(w, mode)
				r, root := c.Rank(), 0
				if r == 3 {
					root = 1
				}
				buf := []int64{int64(10 * r), 1, 2, 3}
				err := mpi.Bcast(c, buf, root)
				want := "rank 3 called MPI_Bcast (root 1, 4 x int64); this rank MPI_Bcast (root 0, 4 x int64)"
				if r == 3 {
					want = "rank 0 called MPI_Bcast (root 0, 4 x int64); this rank MPI_Bcast (root 1, 4 x int64)"
				}
				if e := mustExactly(err, mpi.ErrRoot, want); e != nil {
					return e
				}
				if buf[0] != int64(10*r) {
					return fmt.Errorf("the algorithm ran: buf %v", buf)
				}
				return sumAfter(c)
			})
		})
	}
}

func TestCheckOppositeWaitsAtEveryMember(t *testing.T) {
	// Rank 0 reduces to itself (it waits for rank 1's contribution), rank
	// 1 receives a broadcast from 0 (it waits for rank 0): without the
	// checking mode both wait until something else ends the wait.
	runCheck(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := []int64{1, 2, 3, 4}
		var err error
		want := "rank 1 called MPI_Bcast (root 0, 4 x int64); this rank MPI_Reduce (root 0, 4 x int64, MPI_SUM)"
		if c.Rank() == 0 {
			err = mpi.Reduce(c, buf, make([]int64, 4), mpi.Sum, 0)
		} else {
			err = mpi.Bcast(c, buf, 0)
			want = "rank 0 called MPI_Reduce (root 0, 4 x int64, MPI_SUM); this rank MPI_Bcast (root 0, 4 x int64)"
		}
		return errors.Join(mustExactly(err, mpi.ErrOther, want), sumAfter(c))
	})
}

func TestCheckMismatchClasses(t *testing.T) {
	// Rank 2 differs from the others in one respect; every member's error
	// names the first member whose call differs from its own.
	type call func(c *mpi.Comm, odd bool) error
	for _, tc := range []struct {
		name      string
		class     *mpi.Class
		call      call
		usual, me string // the calls as the others and as rank 2 made them
	}{
		{"count", mpi.ErrCount, func(c *mpi.Comm, odd bool) error {
			n := 4
			if odd {
				n = 5
			}
			return mpi.Allreduce(c, make([]int64, n), make([]int64, n), mpi.Sum)
		}, "MPI_Allreduce (4 x int64, MPI_SUM)", "MPI_Allreduce (5 x int64, MPI_SUM)"},
		{"type", mpi.ErrType, func(c *mpi.Comm, odd bool) error {
			if odd {
				return mpi.Allreduce(c, make([]float64, 4), make([]float64, 4), mpi.Sum)
			}
			return mpi.Allreduce(c, make([]int64, 4), make([]int64, 4), mpi.Sum)
		}, "MPI_Allreduce (4 x int64, MPI_SUM)", "MPI_Allreduce (4 x float64, MPI_SUM)"},
		{"op", mpi.ErrOp, func(c *mpi.Comm, odd bool) error {
			op := mpi.Sum
			if odd {
				op = mpi.Max
			}
			return mpi.Reduce(c, make([]int32, 3), make([]int32, 3), op, 0)
		}, "MPI_Reduce (root 0, 3 x int32, MPI_SUM)", "MPI_Reduce (root 0, 3 x int32, MPI_MAX)"},
		{"root", mpi.ErrRoot, func(c *mpi.Comm, odd bool) error {
			root := 1
			if odd {
				root = 2
			}
			return mpi.Gather(c, make([]int32, 2), make([]int32, 2*c.Size()), root)
		}, "MPI_Gather (root 1, 2 x int32)", "MPI_Gather (root 2, 2 x int32)"},
		{"kind", mpi.ErrOther, func(c *mpi.Comm, odd bool) error {
			if odd {
				return c.Barrier()
			}
			return mpi.Bcast(c, make([]int64, 4), 0)
		}, "MPI_Bcast (root 0, 4 x int64)", "MPI_Barrier"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runCheck(t, 4, func(w *mpi.World, c *mpi.Comm) error {
				r := c.Rank()
				err := tc.call(c, r == 2)
				want := "rank 2 called " + tc.me + "; this rank " + tc.usual
				if r == 2 {
					want = "rank 0 called " + tc.usual + "; this rank " + tc.me
				}
				return errors.Join(mustExactly(err, tc.class, want), sumAfter(c))
			})
		})
	}
}

func TestCheckNonblockingMismatch(t *testing.T) {
	// An Ibcast whose root differs: the error comes from Wait, at every
	// member.
	runCheck(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		root := 0
		if c.Rank() == 1 {
			root = 1
		}
		req, err := mpi.Ibcast(c, make([]int32, 2), root)
		if err != nil {
			return fmt.Errorf("Ibcast: %v", err)
		}
		_, err = req.Wait()
		if !errors.Is(err, mpi.ErrRoot) || !strings.Contains(err.Error(), "MPI_Bcast (root 1, 2 x int32)") {
			return fmt.Errorf("Wait: %v, want ErrRoot naming root 1", err)
		}
		return sumAfter(c)
	})
}

func TestCheckMatchingCallsPass(t *testing.T) {
	// Calls that agree pass, counts that differ by member included (the
	// v-variants, Reduce_scatter's per-rank counts), and give the right
	// results.
	runCheck(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		r, p := c.Rank(), c.Size()
		counts := []int{1, 2, 3, 4}
		all := make([]int32, 10)
		mine := make([]int32, counts[r])
		for i := range mine {
			mine[i] = int32(r)
		}
		if err := mpi.Gatherv(c, mine, all, counts, nil, 0); err != nil {
			return fmt.Errorf("Gatherv: %v", err)
		}
		if r == 0 && fmt.Sprint(all) != "[0 1 1 2 2 2 3 3 3 3]" {
			return fmt.Errorf("Gatherv: %v", all)
		}
		if err := mpi.Allgatherv(c, mine, all, counts, nil); err != nil {
			return fmt.Errorf("Allgatherv: %v", err)
		}
		if fmt.Sprint(all) != "[0 1 1 2 2 2 3 3 3 3]" {
			return fmt.Errorf("Allgatherv: %v", all)
		}
		got := make([]int32, counts[r])
		if err := mpi.Scatterv(c, all, got, counts, nil, 0); err != nil {
			return fmt.Errorf("Scatterv: %v", err)
		}
		if fmt.Sprint(got) != fmt.Sprint(mine) {
			return fmt.Errorf("Scatterv: %v", got)
		}
		ones := make([]int64, 10)
		for i := range ones {
			ones[i] = 1
		}
		red := make([]int64, counts[r])
		if err := mpi.ReduceScatter(c, ones, red, counts, mpi.Sum); err != nil {
			return fmt.Errorf("ReduceScatter: %v", err)
		}
		for _, v := range red {
			if v != int64(p) {
				return fmt.Errorf("ReduceScatter: %v", red)
			}
		}
		sc := []int{r, r, r, r} // rank r sends r elements to everyone
		rc := []int{0, 1, 2, 3}
		send := make([]int32, 4*r)
		recv := make([]int32, 6)
		if err := mpi.Alltoallv(c, send, sc, nil, recv, rc, nil); err != nil {
			return fmt.Errorf("Alltoallv: %v", err)
		}
		req, err := mpi.Ibcast(c, []int64{int64(r)}, 3)
		if err != nil {
			return err
		}
		if _, err := req.Wait(); err != nil {
			return fmt.Errorf("Ibcast: %v", err)
		}
		return errors.Join(c.Barrier(), sumAfter(c))
	})
}

func TestCheckRejectedArgumentsReleaseTheCheck(t *testing.T) {
	// Rank 1 passes a root out of range: it fails at once, and the others,
	// waiting in the signature exchange, fail with its reason instead of
	// hanging.
	runCheck(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		root := 0
		if c.Rank() == 1 {
			root = 7
		}
		err := mpi.Bcast(c, make([]int64, 2), root)
		if !errors.Is(err, mpi.ErrRoot) || !strings.Contains(err.Error(), "root 7 out of range") {
			return fmt.Errorf("got %v, want ErrRoot naming root 7", err)
		}
		return sumAfter(c)
	})
}

func TestCheckFailureIsProcFailedULFM(t *testing.T) {
	// A process that dies before the signature exchange of an Allreduce:
	// the survivors' calls fail with ErrProcFailed (the exchange is part of
	// the call), not with a mismatch or a hang.
	killed := newGate()
	runCheck(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 2 {
			killed.open()
			w.Kill()
		}
		killed.wait(t)
		err := mpi.Allreduce(c, []int64{1}, make([]int64, 1), mpi.Sum)
		if !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("Allreduce with rank 2 dead: %v, want ErrProcFailed", err)
		}
		return nil
	})
}

func TestCheckRequestUsedAfterCompletion(t *testing.T) {
	// A request whose completion Wait returned, or that was freed, is an
	// ErrRequest error in every call that takes it; without the checking
	// mode a second Wait returns the same status (request.go).
	const used = "ftmpi check: request of MPI_Irecv used after its completion was returned by a completion call (in C its handle is MPI_REQUEST_NULL now)"
	runCheck(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			for tag := range 3 {
				if err := mpi.Send(c, []int32{int32(tag)}, 1, tag); err != nil {
					return err
				}
			}
			return nil
		}
		buf := make([]int32, 1)
		r, err := mpi.Irecv(c, buf, 0, 0)
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		_, err = r.Wait()
		e1 := mustExactly(err, mpi.ErrRequest, used)
		_, _, err = r.Test()
		e2 := mustExactly(err, mpi.ErrRequest, strings.Replace(used, "MPI_Irecv used", "MPI_Irecv used", 1))
		e3 := mustExactly(r.Free(), mpi.ErrRequest, used)
		// Waitall of a request Wait already completed.
		r2, err := mpi.Irecv(c, buf, 0, 1)
		if err != nil {
			return err
		}
		if _, err := r2.Wait(); err != nil {
			return err
		}
		_, err = mpi.Waitall([]*mpi.Request{r2})
		e4 := mustExactly(err, mpi.ErrRequest, "ftmpi check: request of MPI_Irecv used after it was completed (its completion was returned)")
		// A freed request.
		r3, err := mpi.Irecv(c, buf, 0, 2)
		if err != nil {
			return err
		}
		if err := r3.Free(); err != nil {
			return err
		}
		_, err = r3.Wait()
		e5 := mustExactly(err, mpi.ErrRequest, "request was freed")
		_, err = mpi.Waitall([]*mpi.Request{r3})
		e6 := mustExactly(err, mpi.ErrRequest, "ftmpi check: request of MPI_Irecv used after it was freed")
		return errors.Join(e1, e2, e3, e4, e5, e6)
	})
	// Without the checking mode: the same status again.
	t.Setenv("FTMPI_CHECK", "0")
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			return mpi.Send(c, []int32{1}, 1, 0)
		}
		r, err := mpi.Irecv(c, make([]int32, 1), 0, 0)
		if err != nil {
			return err
		}
		st1, err1 := r.Wait()
		st2, err2 := r.Wait()
		if err1 != nil || err2 != nil || st1.Source != st2.Source {
			return fmt.Errorf("second Wait without the checking mode: %v %v, %v %v", st1, err1, st2, err2)
		}
		return nil
	})
}

func TestCheckOverlappingBuffers(t *testing.T) {
	// Two pending receives into overlapping buffers, or a send from the
	// buffer of a pending receive: ErrBuffer, before anything is posted.
	// Two pending sends from one buffer, and disjoint receives, are fine.
	runCheck(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			out := []int32{1, 2, 3, 4}
			a, err := mpi.Isend(c, out, 1, 1)
			if err != nil {
				return err
			}
			b, err := mpi.Isend(c, out, 1, 2) // sends may share a buffer
			if err != nil {
				return fmt.Errorf("second send from one buffer: %v", err)
			}
			_, err = mpi.Waitall([]*mpi.Request{a, b})
			return err
		}
		buf := make([]int32, 8)
		r1, err := mpi.Irecv(c, buf[:4], 0, 1)
		if err != nil {
			return err
		}
		_, err = mpi.Irecv(c, buf[2:6], 0, 2)
		e1 := mustExactly(err, mpi.ErrBuffer, "ftmpi check: the receive buffer (16 bytes) overlaps the buffer of a pending MPI_Irecv from 0 tag 1, which owns it until its completion is returned (Wait, Test)")
		_, err = mpi.Isend(c, buf[3:5], 0, 9)
		e2 := mustExactly(err, mpi.ErrBuffer, "ftmpi check: the send buffer (8 bytes) overlaps the buffer of a pending MPI_Irecv from 0 tag 1, which owns it until its completion is returned (Wait, Test)")
		// The typed form (the C library's path) is checked too.
		_, err = mpi.IrecvTyped(c, buf, 2, mpi.Int32, 0, 2)
		e3 := mustExactly(err, mpi.ErrBuffer, "ftmpi check: the receive buffer (8 bytes) overlaps the buffer of a pending MPI_Irecv from 0 tag 1, which owns it until its completion is returned (Wait, Test)")
		r2, err := mpi.Irecv(c, buf[4:], 0, 2) // disjoint
		if err != nil {
			return fmt.Errorf("disjoint receive: %v", err)
		}
		if _, err := mpi.Waitall([]*mpi.Request{r1, r2}); err != nil {
			return err
		}
		if fmt.Sprint(buf) != "[1 2 3 4 1 2 3 4]" {
			return fmt.Errorf("received %v", buf)
		}
		// Once the completion was returned the buffer is free again.
		r3, err := mpi.Irecv(c, buf[2:6], 0, 3)
		if err != nil {
			return fmt.Errorf("receive after the completion: %v", err)
		}
		return errors.Join(e1, e2, e3, r3.Cancel(), func() error { _, err := r3.Wait(); return err }())
	})
}

func TestCheckArgumentErrors(t *testing.T) {
	// Already errors without the checking mode; still errors with it: an
	// uncommitted datatype, a tag or a rank out of range.
	runCheck(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		d, err := mpi.TypeContiguous(2, mpi.Int32)
		if err != nil {
			return err
		}
		err = mpi.SendTyped(c, make([]int32, 2), 1, d, 1-c.Rank(), 0)
		e1 := mustExactly(err, mpi.ErrType, "datatype "+d.String()+" is not committed (Commit)")
		e2 := mpi.Send(c, []int32{1}, 1-c.Rank(), -3)
		if !errors.Is(e2, mpi.ErrTag) {
			e2 = fmt.Errorf("negative tag: %v, want ErrTag", e2)
		} else {
			e2 = nil
		}
		e3 := mpi.Send(c, []int32{1}, 7, 0)
		if !errors.Is(e3, mpi.ErrRank) {
			e3 = fmt.Errorf("rank 7 of 2: %v, want ErrRank", e3)
		} else {
			e3 = nil
		}
		return errors.Join(e1, e2, e3)
	})
}

func TestCheckFinalizeListsWhatIsHeld(t *testing.T) {
	// At Finalize each rank prints what it still holds: a communicator it
	// did not free (not the one it freed), a window, and at rank 0 a
	// receive it never completed.
	var outs [2]strings.Builder
	runCheck(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		mpi.SetCheckOutputForTest(w, &outs[c.Rank()])
		d1, err := c.Dup()
		if err != nil {
			return err
		}
		d2, err := c.Dup()
		if err != nil {
			return err
		}
		if err := d2.Free(); err != nil {
			return err
		}
		if _, err := mpi.WinCreate(d1, make([]int64, 4)); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if _, err := mpi.Irecv(c, make([]int32, 1), 1, 5); err != nil {
				return err
			}
		}
		return w.Finalize()
	})
	want := [2]string{
		"ftmpi check: at MPI_Finalize, rank 0 still holds: 1 communicator (dup(MPI_COMM_WORLD)), 1 window (window on dup(MPI_COMM_WORLD)), 1 request (MPI_Irecv from 1 tag 5)\n",
		"ftmpi check: at MPI_Finalize, rank 1 still holds: 1 communicator (dup(MPI_COMM_WORLD)), 1 window (window on dup(MPI_COMM_WORLD))\n",
	}
	for r := range outs {
		if got := outs[r].String(); got != want[r] {
			t.Errorf("rank %d printed %q, want %q", r, got, want[r])
		}
	}
	// Nothing held, nothing printed.
	var out strings.Builder
	runCheck(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			mpi.SetCheckOutputForTest(w, &out)
		}
		d, err := c.Dup()
		if err != nil {
			return err
		}
		return errors.Join(d.Free(), w.Finalize())
	})
	if out.Len() != 0 {
		t.Errorf("nothing held, printed %q", out.String())
	}
}

func TestCheckRunThroughView(t *testing.T) {
	// Run-through: after rank 3 failed and the survivors recognised it,
	// collectives run on the view of the alive processes; the check runs
	// there too: a root that differs is an error at every survivor, and
	// matching calls still work.
	runCheck(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		r := c.Rank()
		c.EnableRunThrough()
		if r == 3 {
			w.Kill()
		}
		if err := awaitFailure(c, 3); err != nil {
			return err
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		root := 0
		if r == 2 {
			root = 1
		}
		err := mpi.Bcast(c, make([]int32, 2), root)
		if !errors.Is(err, mpi.ErrRoot) || !strings.Contains(err.Error(), "MPI_Bcast (root 1, 2 x int32)") {
			return fmt.Errorf("rank %d: mismatched Bcast on the view: %v, want ErrRoot naming root 1", r, err)
		}
		sum := []int64{0}
		if err := mpi.Allreduce(c, []int64{int64(r)}, sum, mpi.Sum); err != nil || sum[0] != 3 {
			return fmt.Errorf("rank %d: Allreduce on the view after the mismatch: %v %v", r, sum, err)
		}
		return nil
	})
}

func TestCheckIntercommKinds(t *testing.T) {
	// On an intercommunicator one group enters a barrier while the other
	// receives a broadcast: each kind has its own tags, so without the
	// checking mode every member waits forever; with it every member of
	// both groups fails, naming the other call, and the intercommunicator
	// keeps working.
	runCheck(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		local, ic, inA, err := halves(c, 2, 0, 7)
		if err != nil {
			return err
		}
		ic.SetErrhandler(mpi.ErrorsReturn)
		want := "rank 0 of the remote group called MPI_Bcast; this rank MPI_Barrier"
		if inA {
			err = ic.Barrier()
		} else {
			err = mpi.Bcast(ic, make([]int32, 2), 0)
			want = "rank 0 of the remote group called MPI_Barrier; this rank MPI_Bcast"
		}
		if e := mustExactly(err, mpi.ErrOther, want); e != nil {
			return fmt.Errorf("rank %d: %w", c.Rank(), e)
		}
		if err := ic.Barrier(); err != nil {
			return fmt.Errorf("rank %d: barrier after the mismatch: %v", c.Rank(), err)
		}
		return errors.Join(ic.Free(), local.Free())
	})
}
