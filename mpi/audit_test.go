package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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

// Seed 000 1.3, "Reinit needs the launcher's cooperation, or spares":
// Reinit under mpi.Run rolls back (reinit_run_test.go), but not in a job
// with spare processes (RunSpares): there it returns ErrOther without
// running the resilient function.
func TestReinitUnderRunSparesIsAnError(t *testing.T) {
	err := mpi.RunSpares(2, 1, mpi.DefaultConfig(), func(w *mpi.World) error {
		w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync)
		ran := false
		err := mpi.Reinit(w, func(context.Context, *mpi.World, mpi.ReinitState) error {
			ran = true
			return nil
		})
		if ran || !errors.Is(err, mpi.ErrOther) || !strings.Contains(err.Error(), "spare processes") {
			return fmt.Errorf("Reinit under mpi.RunSpares: ran=%v, %v; want ErrOther and no run", ran, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Seed 002 A.3.1: Shrink's failed group includes at least every failure
// that raised ErrProcFailed or ErrPending somewhere, also at one process
// only: rank 0 alone got ErrProcFailed for rank 3 (a receive), rank 1
// alone ErrPending (a wildcard receive); the others never touched rank 3.
// Every survivor's shrunk communicator leaves rank 3 out.
func TestULFMShrinkExcludesLocallyRaisedFailures(t *testing.T) {
	const n, victim = 5, 3
	var mu sync.Mutex
	views := map[int]string{}
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		c.SetErrhandler(mpi.ErrorsReturn)
		var req *mpi.Request
		if c.Rank() == 1 {
			var err error
			if req, err = mpi.Irecv(c, make([]int, 1), mpi.AnySource, 9); err != nil {
				return err
			}
		}
		if _, err := c.Agree(true); err != nil { // everyone is here
			return err
		}
		switch c.Rank() {
		case victim:
			w.Kill()
		case 0:
			if _, err := mpi.Recv(c, make([]int, 1), victim, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("recv from the killed rank: %v", err)
			}
		case 1:
			if _, err := req.Wait(); !errors.Is(err, mpi.ErrPending) {
				return fmt.Errorf("wildcard receive after the failure: %v, want ErrPending", err)
			}
		}
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		g := s.Group()
		if r, err := mpi.TranslateRanks(c.Group(), []int{victim}, g); err != nil || r[0] != mpi.Undefined {
			return fmt.Errorf("the shrunk group holds the failed rank %d: %v %v", victim, r, err)
		}
		if s.Size() != n-1 {
			return fmt.Errorf("shrunk size %d, want %d", s.Size(), n-1)
		}
		mu.Lock()
		views[c.Rank()] = fmt.Sprint(worldRanks(g))
		mu.Unlock()
		if c.Rank() == 1 {
			// The pending wildcard receive is still posted; cancel it.
			if err := req.Cancel(); err != nil {
				return err
			}
			c.FailureAck()
			if _, err := req.Wait(); err != nil {
				return fmt.Errorf("wait of the cancelled receive: %v", err)
			}
		}
		return nil
	})
	for r, v := range views {
		if v != views[0] {
			t.Fatalf("rank %d shrank to %s, rank 0 to %s", r, v, views[0])
		}
	}
}

// creationUnderFailure runs create at the processes of a run-through
// communicator while one of them (victim) is killed: as the others start
// (before), or as soon as its own create returned, while the others may
// still be deciding (after). It checks that the outcome is all-or-nothing:
// every survivor gets the object, or every survivor ErrRankFailStop.
func creationUnderFailure(t *testing.T, n, victim int, create func(c *mpi.Comm) error) {
	t.Helper()
	for _, after := range []bool{false, true} {
		creationUnderFailureOnce(t, n, victim, after, create)
	}
}

func creationUnderFailureOnce(t *testing.T, n, victim int, after bool, create func(c *mpi.Comm) error) {
	t.Helper()
	var got, failed atomic.Int32
	ready := newArrivals(n)
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		if err := c.EnableRunThrough(); err != nil {
			return err
		}
		ready.arrive()
		if c.Rank() == victim {
			if after {
				create(c)
			} else {
				ready.g.wait(t)
			}
			w.Kill()
		}
		err := create(c)
		switch {
		case err == nil:
			got.Add(1)
			return nil
		case errors.Is(err, mpi.ErrRankFailStop):
			failed.Add(1)
			return nil
		}
		return fmt.Errorf("rank %d: creation during a failure: %v", c.Rank(), err)
	})
	if got.Load() != 0 && failed.Load() != 0 {
		t.Fatalf("victim killed after its create=%v: not all-or-nothing: %d got the object, %d an error", after, got.Load(), failed.Load())
	}
	t.Logf("victim %d killed after its create=%v: %d got the object, %d ErrRankFailStop", victim, after, got.Load(), failed.Load())
	if got.Load()+failed.Load() != int32(n-1) {
		t.Fatalf("%d outcomes, want %d", got.Load()+failed.Load(), n-1)
	}
}

// Seed 003 17.11: MPI_WIN_CREATE is all-or-nothing under a process
// failure (WinCreate and WinAllocate, a process killed as the others
// create).
func TestWinCreateAllOrNothingUnderFailure(t *testing.T) {
	for _, victim := range []int{1, 3} {
		t.Run(fmt.Sprint("create", victim), func(t *testing.T) {
			creationUnderFailure(t, 4, victim, func(c *mpi.Comm) error {
				_, err := mpi.WinCreate(c, make([]int, 1))
				return err
			})
		})
		t.Run(fmt.Sprint("allocate", victim), func(t *testing.T) {
			creationUnderFailure(t, 4, victim, func(c *mpi.Comm) error {
				_, _, err := mpi.WinAllocate[int](c, 1)
				return err
			})
		})
	}
}

// Seed 003 17.12.2: MPI_FILE_OPEN is all-or-nothing under a process
// failure (a process killed as the others open).
func TestFileOpenAllOrNothingUnderFailure(t *testing.T) {
	for _, victim := range []int{1, 3} {
		t.Run(fmt.Sprint(victim), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.dat")
			creationUnderFailure(t, 4, victim, func(c *mpi.Comm) error {
				_, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
				return err
			})
		})
	}
}

// Seed 000 1.4 and 1.6 (5): a Reinit handler may be set on MPI_COMM_WORLD
// only, and each object takes only the handlers it can call. A file
// refuses the Reinit handlers and a window handler (which used to turn the
// file's next error into a nil-pointer panic); a communicator and a window
// refuse a file handler (the same panic). The refused call leaves the
// object's handler as it was, and the next error goes to it.
func TestErrhandlerRefusedWhereItDoesNotBelong(t *testing.T) {
	dir := t.TempDir()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		c.SetErrhandler(mpi.ErrorsReturn)
		f, err := mpi.FileOpen(c, filepath.Join(dir, "h.dat"), mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		winH := mpi.WinCreateErrhandler(func(*mpi.Win, error) {})
		var fileCalls atomic.Int32
		fileH := mpi.FileCreateErrhandler(func(*mpi.File, error) { fileCalls.Add(1) })
		for _, h := range []*mpi.Errhandler{mpi.ErrorsReinitAsync, mpi.ErrorsReinitSync, winH} {
			if err := f.SetErrhandler(h); !errors.Is(err, mpi.ErrArg) {
				return fmt.Errorf("File.SetErrhandler(%v): %v, want ErrArg", h, err)
			}
			if f.Errhandler() != mpi.ErrorsReturn {
				return fmt.Errorf("after the refused %v the file's handler is %v", h, f.Errhandler())
			}
		}
		// The file's next error goes to ErrorsReturn (no panic).
		if _, err := mpi.ReadAt(f, -1, make([]byte, 1)); err == nil {
			return errors.New("ReadAt at offset -1 succeeded")
		}
		// Its own kind of handler is accepted and called.
		if err := f.SetErrhandler(fileH); err != nil {
			return err
		}
		if _, err := mpi.ReadAt(f, -1, make([]byte, 1)); err == nil || fileCalls.Load() != 1 {
			return fmt.Errorf("file handler: %v, %d calls", err, fileCalls.Load())
		}
		if err := c.SetErrhandler(fileH); !errors.Is(err, mpi.ErrArg) || c.Errhandler() != mpi.ErrorsReturn {
			return fmt.Errorf("Comm.SetErrhandler(a file handler): %v, handler %v", err, c.Errhandler())
		}
		win, err := mpi.WinCreate(c, make([]int, 1))
		if err != nil {
			return err
		}
		win.SetErrhandler(mpi.ErrorsReturn)
		if err := win.SetErrhandler(fileH); !errors.Is(err, mpi.ErrArg) || win.Errhandler() != mpi.ErrorsReturn {
			return fmt.Errorf("Win.SetErrhandler(a file handler): %v, handler %v", err, win.Errhandler())
		}
		if err := win.Free(); err != nil {
			return err
		}
		f.SetErrhandler(mpi.ErrorsReturn)
		return f.Close()
	})
}
