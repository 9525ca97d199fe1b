package mpi_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

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
	done := make(chan error, 1)
	go func() {
		done <- mpi.RunConfig(n, cfg, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			return fn(w, c)
		})
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		buf := make([]byte, 8<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("job of %d ranks did not finish within 60s (hang); goroutines:\n%s", n, buf)
		return nil
	}
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
