package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Items of issue 25's audit of the seeds against the code, each a rule of
// docs/semantics.md.

// Seed 002 A.3.1: Shrink raises no ErrProcFailed. An intercommunicator
// whose whole remote group failed has no shrunk form (an intercommunicator
// needs a remote group): every survivor gets the same ErrComm, not
// ErrProcFailed, and knows the failures the agreement established; the
// local group goes on.
func TestULFMIntercommShrinkRemoteGroupGone(t *testing.T) {
	for _, revoke := range []bool{true, false} {
		t.Run(fmt.Sprintf("revoked=%v", revoke), func(t *testing.T) {
			run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
				local, inter, inA, err := halves(c, 3, 0, 12) // A = {0,1,2}, B = {3,4}
				if err != nil {
					return err
				}
				inter.SetErrhandler(mpi.ErrorsReturn)
				local.SetErrhandler(mpi.ErrorsReturn)
				if _, err := c.Agree(true); err != nil {
					return err
				}
				if !inA {
					w.Kill() // the whole remote group of A
				}
				if revoke {
					inter.Revoke()
				}
				s, err := inter.Shrink()
				if s != nil || !errors.Is(err, mpi.ErrComm) || errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked) {
					return fmt.Errorf("shrink of an intercommunicator without a remote group: %v, %v; want no communicator and ErrComm", s, err)
				}
				if !strings.Contains(err.Error(), "remote group failed") {
					return fmt.Errorf("shrink's error does not say why: %v", err)
				}
				// The failures the shrink's agreement established are known
				// here now, as after Shrink of an intracommunicator.
				g, err := c.GetFailed()
				if err != nil {
					return err
				}
				if g.Size() != 2 {
					return fmt.Errorf("GetFailed after the shrink: %d processes, want 2 (3 and 4)", g.Size())
				}
				// The local group is untouched.
				sum := []int{0}
				if err := mpi.Allreduce(local, []int{1}, sum, mpi.Sum); err != nil || sum[0] != 3 {
					return fmt.Errorf("allreduce on the local group: %d, %v", sum[0], err)
				}
				return nil
			})
		})
	}
}

// One rule for releasing a revoked object: the release always happens; a
// non-local release (Disconnect, like Win.Free and File.Close) is an
// operation revocation makes raise ErrRevoked (seed 002 A.3.1-A.3.3), the
// local Comm.Free returns nil.
func TestRevokedCommReleaseRule(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		c.SetErrhandler(mpi.ErrorsReturn)
		d, err := c.Dup()
		if err != nil {
			return err
		}
		e, err := c.Dup()
		if err != nil {
			return err
		}
		for _, x := range []*mpi.Comm{d, e} {
			x.SetErrhandler(mpi.ErrorsReturn)
			if c.Rank() == 0 {
				x.Revoke()
			} else if _, err := mpi.Recv(x, []int{0}, 0, 0); !errors.Is(err, mpi.ErrRevoked) {
				// The revocation is known here before the release.
				return fmt.Errorf("recv on the revoked communicator: %v", err)
			}
		}
		if err := d.Disconnect(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("Disconnect of a revoked communicator: %v, want ErrRevoked", err)
		}
		if err := d.Barrier(); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("the disconnected communicator: %v, want ErrComm (freed)", err)
		}
		if err := e.Free(); err != nil {
			return fmt.Errorf("Free (local) of a revoked communicator: %v, want nil", err)
		}
		if err := e.Barrier(); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("the freed communicator: %v, want ErrComm (freed)", err)
		}
		// Not revoked: Disconnect returns nil.
		f, err := c.Dup()
		if err != nil {
			return err
		}
		return f.Disconnect()
	})
}

// Seed 000 1.3, "Reinit needs the launcher's cooperation": goroutine ranks
// cannot be respawned, so Reinit under mpi.Run returns ErrOther without
// running the resilient function.
func TestReinitUnderRunIsAnError(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		ran := false
		err := mpi.Reinit(w, func(context.Context, *mpi.World, mpi.ReinitState) error {
			ran = true
			return nil
		})
		if ran || !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "cannot respawn") {
			return fmt.Errorf("Reinit under mpi.Run: ran=%v, %v; want ErrOther and no run", ran, err)
		}
		return nil
	})
}
