package mpi_test

// Tests for rows of docs/semantics.md that had no test checking exactly
// what the row states.

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// Seed 002 5.1.1 ("MPI_ERR_PROC_FAILED and MPI_ERR_REVOKED are permanent
// errors": the communicator is never usable again with that peer, and
// ErrProcFailed turns into ErrRevoked once the communicator is revoked)
// against A.1/A.2 (an operation that does not involve the failed process
// completes normally): both at once on one job. Rank 3 is killed; on the
// world communicator every later operation with rank 3 fails, point to
// point between live ranks still works until the revocation, and a
// communicator without rank 3 keeps working after the parent's failure and
// revocation. A.3.1: a communicator becomes revoked at a process as soon as
// an operation raised ErrRevoked there.
func TestSemanticsErrorsPermanentInsulationHolds(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		color := 0
		if c.Rank() == 3 {
			color = mpi.Undefined
		}
		sub, err := c.Split(color, c.Rank())
		if err != nil {
			return fmt.Errorf("split: %v", err)
		}
		if sub != nil {
			sub.SetErrhandler(mpi.ErrorsReturn)
		}
		buf := []int{0}
		// Rank 3 dies once every other rank has left the Split (their
		// messages), not while one still needs its part of it: CI-like
		// -race runs failed 28 of 500 with rank 1's Split raising
		// ErrProcFailed (creation is not fault tolerant).
		if c.Rank() != 3 {
			if err := mpi.Send(c, []int{1}, 3, 9); err != nil {
				return err
			}
		}
		switch c.Rank() {
		case 3:
			for _, r := range []int{0, 1, 2} {
				if _, err := mpi.Recv(c, buf, r, 9); err != nil {
					return err
				}
			}
			w.Kill()
		case 0:
			for i := 0; i < 3; i++ {
				if _, err := mpi.Recv(c, buf, 3, 0); !errors.Is(err, mpi.ErrProcFailed) {
					return fmt.Errorf("receive %d from the failed rank: %v", i, err)
				}
				if err := mpi.Send(c, buf, 3, 0); !errors.Is(err, mpi.ErrProcFailed) {
					return fmt.Errorf("send %d to the failed rank: %v", i, err)
				}
			}
			// Insulation on the same communicator: a live peer.
			if err := mpi.Send(c, []int{42}, 1, 1); err != nil {
				return fmt.Errorf("send to a live rank after the failure: %v", err)
			}
			if err := sub.Barrier(); err != nil {
				return fmt.Errorf("barrier on a communicator without the failed rank: %v", err)
			}
			if err := c.Revoke(); err != nil {
				return err
			}
			// Permanent, with the transition to ErrRevoked.
			if _, err := mpi.Recv(c, buf, 3, 0); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("receive from the failed rank after Revoke: %v", err)
			}
			if err := mpi.Send(c, buf, 1, 0); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("send to a live rank after Revoke: %v", err)
			}
		case 1:
			if _, err := mpi.Recv(c, buf, 0, 1); err != nil || buf[0] != 42 {
				return fmt.Errorf("receive from a live rank after the failure: %v %v", buf, err)
			}
			if err := sub.Barrier(); err != nil {
				return fmt.Errorf("barrier on a communicator without the failed rank: %v", err)
			}
			// Never sent: released by rank 0's revocation.
			if _, err := mpi.Recv(c, buf, 0, 2); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("receive blocked across the revocation: %v", err)
			}
			// Revoked here from now on: even a send to a live rank.
			for i := 0; i < 2; i++ {
				if err := mpi.Send(c, buf, 2, 3); !errors.Is(err, mpi.ErrRevoked) {
					return fmt.Errorf("send %d after ErrRevoked: %v", i, err)
				}
			}
		case 2:
			if err := sub.Barrier(); err != nil {
				return fmt.Errorf("barrier on a communicator without the failed rank: %v", err)
			}
			if _, err := mpi.Recv(c, buf, 1, 3); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("receive blocked across the revocation: %v", err)
			}
		}
		if sub == nil {
			return nil
		}
		// The revocation of the parent does not touch the child.
		sum := []int{0}
		if err := mpi.Allreduce(sub, []int{1}, sum, mpi.Sum); err != nil || sum[0] != 3 {
			return fmt.Errorf("allreduce on the child after the parent's revocation: %v %v", sum, err)
		}
		return sub.Free()
	})
}

// Seed 003 17.8.1, 17.8.2: sizes count failed processes (MPI_GROUP_SIZE,
// MPI_COMM_SIZE), group constructors keep them, and MPI_COMM_FREE of a
// communicator with a failed process completes; seed 002 A.3.1:
// MPI_COMM_FAILURE_GET_ACKED is the empty group before any acknowledgement.
func TestSemanticsSizesCountFailedAndFreeCompletes(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		// Rank 2 dies once every other rank has left the Dup (their
		// arrival messages), not while one still needs its part of it.
		if c.Rank() == 2 {
			for _, r := range []int{0, 1, 3} {
				if _, err := mpi.Recv(c, []int{0}, r, 1); err != nil {
					return err
				}
			}
			w.Kill()
		} else if err := mpi.Send(c, []int{1}, 2, 1); err != nil {
			return err
		}
		if _, err := mpi.Recv(c, []int{0}, 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("receive from the failed rank: %v", err)
		}
		if g, err := c.FailureGetAcked(); err != nil || g.Size() != 0 {
			return fmt.Errorf("acknowledged group before any FailureAck: %v %v", g, err)
		}
		if c.Size() != 4 || c.Group().Size() != 4 {
			return fmt.Errorf("sizes after the failure: comm %d, group %d, want 4", c.Size(), c.Group().Size())
		}
		failed, err := c.GroupFailed()
		if err != nil || failed.Size() != 1 {
			return fmt.Errorf("GroupFailed: %v %v", failed, err)
		}
		// Constructors keep the failed process.
		u, err := mpi.GroupUnion(failed, c.Group())
		if err != nil || u.Size() != 4 {
			return fmt.Errorf("union with the failed group: %v %v", u, err)
		}
		in, err := c.Group().Incl([]int{2, 0})
		if err != nil || in.Size() != 2 {
			return fmt.Errorf("Incl of the failed rank: %v %v", in, err)
		}
		if r, _ := mpi.TranslateRanks(in, []int{0}, c.Group()); r[0] != 2 {
			return fmt.Errorf("Incl lost the failed rank: %v", r)
		}
		if d.Size() != 4 {
			return fmt.Errorf("duplicate's size %d after the failure, want 4", d.Size())
		}
		if err := d.Free(); err != nil {
			return fmt.Errorf("Free of a communicator with a failed process: %v", err)
		}
		return nil
	})
}

// Seed 002 5.1.2: MPI_COMM_SHRINK gives a new communicator with a new
// handle and does not replace the revoked one, which can still be asked for
// its previous size, rank and group; A.3.1: the new communicator is the
// survivors in their old order (a split with key = old rank).
func TestSemanticsShrinkLeavesOldCommQueryable(t *testing.T) {
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			w.Kill()
		}
		// Another survivor's revocation may come first.
		if _, err := mpi.Recv(c, []int{0}, 1, 0); !errors.Is(err, mpi.ErrProcFailed) && !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("receive from the failed rank: %v", err)
		}
		if err := c.Revoke(); err != nil {
			return err
		}
		nc, err := c.Shrink()
		if err != nil {
			return fmt.Errorf("shrink: %v", err)
		}
		nc.SetErrhandler(mpi.ErrorsReturn)
		if nc == c {
			return fmt.Errorf("shrink returned the revoked communicator")
		}
		if c.Size() != 5 || c.Group().Size() != 5 {
			return fmt.Errorf("old communicator: size %d, group %d, want 5", c.Size(), c.Group().Size())
		}
		want := c.Rank()
		if want > 1 {
			want--
		}
		if nc.Size() != 4 || nc.Rank() != want {
			return fmt.Errorf("new communicator: rank %d of %d, want %d of 4", nc.Rank(), nc.Size(), want)
		}
		if err := mpi.Send(c, []int{0}, 0, 0); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("old communicator still revoked after the shrink: %v", err)
		}
		if err := nc.Barrier(); err != nil {
			return fmt.Errorf("barrier on the shrunk communicator: %v", err)
		}
		return nc.Free()
	})
}

// Seed 003 17.3 (eventually every alive process knows of a failure) and
// seed 002 A.1 (asynchronous propagation is not required; ftmpi does it):
// ranks that never communicate with the killed rank learn of its failure
// through the local query alone. Then seed 002 A.2.1 and seed 003 17.5.2:
// MPI_FINALIZE completes despite the failure.
func TestSemanticsFailureKnownEverywhereAndFinalizeCompletes(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			w.Kill()
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			g, err := c.GetFailed()
			if err != nil {
				return fmt.Errorf("GetFailed: %v", err)
			}
			if g.Size() == 1 {
				if r, _ := mpi.TranslateRanks(g, []int{0}, c.Group()); r[0] != 1 {
					return fmt.Errorf("failed group holds rank %v, want 1", r)
				}
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the failure of rank 1 not known after 30s without communication")
			}
			runtime.Gosched()
		}
		if err := w.Finalize(); err != nil {
			return fmt.Errorf("Finalize after a failure: %v", err)
		}
		return nil
	})
}
