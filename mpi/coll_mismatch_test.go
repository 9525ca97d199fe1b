package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Mismatched collective calls (coll_sig.go): reported with both calls
// named, and no member left waiting for a member that failed its call.
// Every job runs under run's deadline: a hang fails the test.

// modes are the algorithm choices the tests force (spread, crowded).
var modes = []int32{-1, 1}

func modeName(m int32) string { return map[int32]string{-1: "spread", 1: "crowded"}[m] }

// mustMismatch checks that err is of class and names every one of calls
// (the job's error names the rank).
func mustMismatch(err error, class *mpi.Class, calls ...string) error {
	if !errors.Is(err, class) || mpi.ErrorClass(err) != class {
		return fmt.Errorf("got %v, want class %v", err, class)
	}
	for _, s := range calls {
		if !strings.Contains(err.Error(), s) {
			return fmt.Errorf("error %q does not name %q", err, s)
		}
	}
	return nil
}

// sumAfter checks that c still works: an Allreduce gives the right sum.
func sumAfter(c *mpi.Comm) error {
	s := []int64{0}
	if err := mpi.Allreduce(c, []int64{int64(c.Rank())}, s, mpi.Sum); err != nil {
		return fmt.Errorf("allreduce after the mismatch: %w", err)
	}
	if p := int64(c.Size()); s[0] != p*(p-1)/2 {
		return fmt.Errorf("allreduce after the mismatch: %d", s[0])
	}
	return nil
}

func TestMismatchAllreduceCount(t *testing.T) {
	for _, mode := range modes {
		for _, p := range []int{2, 3, 4, 5, 8} {
			for _, n := range []int{4, 9000} { // eager; rendezvous (and the ring when spread)
				for _, odd := range []int{0, p - 1} {
					t.Run(fmt.Sprintf("%s/p%d/n%d/odd%d", modeName(mode), p, n, odd), func(t *testing.T) {
						run(t, p, func(w *mpi.World, c *mpi.Comm) error {
							mpi.SetCrowdedForTest(w, mode)
							r, k := c.Rank(), n
							if r == odd {
								k = n + 1
							}
							out := make([]int64, k)
							err := mpi.Allreduce(c, make([]int64, k), out, mpi.Sum)
							return errors.Join(
								mustMismatch(err, mpi.ErrCount,
									fmt.Sprintf("MPI_Allreduce (%d x int64, MPI_SUM)", n),
									fmt.Sprintf("MPI_Allreduce (%d x int64, MPI_SUM)", n+1)),
								sumAfter(c))
						})
					})
				}
			}
		}
	}
}

func TestMismatchElementType(t *testing.T) {
	for _, mode := range modes {
		t.Run(modeName(mode), func(t *testing.T) {
			run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
				mpi.SetCrowdedForTest(w, mode)
				r := c.Rank()
				var err error
				if r == 2 {
					err = mpi.Allreduce(c, make([]float64, 4), make([]float64, 4), mpi.Sum)
				} else {
					err = mpi.Allreduce(c, make([]int64, 4), make([]int64, 4), mpi.Sum)
				}
				return errors.Join(
					mustMismatch(err, mpi.ErrType, "MPI_Allreduce (4 x int64, MPI_SUM)", "MPI_Allreduce (4 x float64, MPI_SUM)"),
					sumAfter(c))
			})
		})
	}
}

func TestMismatchReductionOp(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		mpi.SetCrowdedForTest(w, -1)
		op := mpi.Sum
		if c.Rank() == 1 {
			op = mpi.Max
		}
		err := mpi.Allreduce(c, make([]int32, 3), make([]int32, 3), op)
		return errors.Join(
			mustMismatch(err, mpi.ErrOp, "MPI_Allreduce (3 x int32, MPI_SUM)", "MPI_Allreduce (3 x int32, MPI_MAX)"),
			sumAfter(c))
	})
}

func TestMismatchBcastRoots(t *testing.T) {
	// Ranks 0-2 broadcast from 0, rank 3 from 1: rank 3 waits for rank 1,
	// which never sends to it, and gets rank 2's message of the other
	// call (it used to wait forever). Ranks whose part ended first return.
	for _, mode := range modes {
		t.Run(modeName(mode), func(t *testing.T) {
			run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
				mpi.SetCrowdedForTest(w, mode)
				r, root := c.Rank(), 0
				if r == 3 {
					root = 1
				}
				buf := []int64{int64(10 * r), 1, 2, 3}
				err := mpi.Bcast(c, buf, root)
				if r == 3 || err != nil {
					if e := mustMismatch(err, mpi.ErrRoot, "MPI_Bcast (root 0, 4 x int64)", "MPI_Bcast (root 1, 4 x int64)"); e != nil {
						return e
					}
				} else if buf[0] != 0 {
					return fmt.Errorf("nil error and %v", buf)
				}
				return sumAfter(c)
			})
		})
	}
}

func TestMismatchBcastReduce(t *testing.T) {
	// Ranks 0 and 1 broadcast from 0; ranks 2 and 3 reduce to 2. Rank 2
	// gets rank 0's broadcast where it waits for rank 0's contribution:
	// it used to wait forever (or, had the tags matched, to reduce the
	// broadcast data as if it were a contribution).
	for _, mode := range modes {
		t.Run(modeName(mode), func(t *testing.T) {
			run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
				mpi.SetCrowdedForTest(w, mode)
				r := c.Rank()
				buf := []int64{1, 2, 3, 4}
				var err error
				if r < 2 {
					err = mpi.Bcast(c, buf, 0)
				} else {
					err = mpi.Reduce(c, buf, make([]int64, 4), mpi.Sum, 2)
				}
				if r == 2 || err != nil {
					if e := mustMismatch(err, mpi.ErrOther, "MPI_Bcast (root 0, 4 x int64)", "MPI_Reduce (root 2, 4 x int64, MPI_SUM)"); e != nil {
						return e
					}
				}
				return sumAfter(c)
			})
		})
	}
}

func TestMismatchBarrierBcast(t *testing.T) {
	// Ranks 0-2 enter a barrier, rank 3 a broadcast: every rank fails
	// (rank 3 sees rank 2's barrier message; the others wait for rank 3,
	// or for a rank that waits for it, and are released). With the
	// dissemination barrier; the crowded barrier sends nothing to rank 3
	// (see coll_sig.go for what cannot be detected).
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		mpi.SetCrowdedForTest(w, -1)
		r := c.Rank()
		var err error
		if r == 3 {
			err = mpi.Bcast(c, make([]int64, 4), 0)
		} else {
			err = c.Barrier()
		}
		return errors.Join(
			mustMismatch(err, mpi.ErrOther, "MPI_Barrier", "MPI_Bcast (root 0, 4 x int64)"),
			sumAfter(c))
	})
}

func TestMismatchScatterShortSendReleases(t *testing.T) {
	// The root's send buffer is too short: its call fails before sending
	// anything, and the other ranks, which wait for their block, fail with
	// the root's reason instead of waiting forever.
	for _, mode := range modes {
		for _, p := range []int{2, 3, 4, 8} {
			for _, n := range []int{2, 6000} { // tree; linear
				t.Run(fmt.Sprintf("%s/p%d/n%d", modeName(mode), p, n), func(t *testing.T) {
					run(t, p, func(w *mpi.World, c *mpi.Comm) error {
						mpi.SetCrowdedForTest(w, mode)
						r := c.Rank()
						send := make([]int32, p*n-1)
						err := mpi.Scatter(c, send, make([]int32, n), 0)
						want := "send buffer of"
						if r != 0 {
							want = "the call failed at rank 0: send buffer of"
						}
						return errors.Join(mustMismatch(err, mpi.ErrCount, want), sumAfter(c))
					})
				})
			}
		}
	}
}

func TestMismatchLocalFailureNonblockingReleases(t *testing.T) {
	// The same with a nonblocking call and a bad root at one rank only
	// (with either algorithm choice, Bcast of 32 bytes is a binomial tree).
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		r, root := c.Rank(), 1
		if r == 3 {
			root = 7
		}
		req, err := mpi.Ibcast(c, make([]int64, 4), root)
		if r == 3 {
			return errors.Join(mustMismatch(err, mpi.ErrRoot, "root 7 out of range"), sumAfter(c))
		}
		if err != nil {
			return err
		}
		_, err = req.Wait()
		// Rank 0 gets the data through rank 3 (binomial tree from 1): it
		// must fail; the root and rank 2 (its direct child) may finish first.
		if r == 0 || err != nil {
			if e := mustMismatch(err, mpi.ErrRoot, "the call failed at rank 3: root 7 out of range"); e != nil {
				return e
			}
		}
		return sumAfter(c)
	})
}

func TestMismatchNonblockingInFlight(t *testing.T) {
	// Collectives of several kinds in flight together, waited for in
	// another order at every rank: each matches its own call (the
	// sequence number keeps them apart, the signatures agree), and the one
	// mismatched call among them fails alone, at every rank.
	for _, mode := range modes {
		t.Run(modeName(mode), func(t *testing.T) {
			const p = 4
			run(t, p, func(w *mpi.World, c *mpi.Comm) error {
				mpi.SetCrowdedForTest(w, mode)
				r := c.Rank()
				bc := []int64{0, 0, 0}
				if r == 2 {
					bc = []int64{7, 8, 9}
				}
				bc2 := []float64{float64(r)}
				ar := make([]int64, 6)
				arCount := 5
				if r == 1 {
					arCount = 6
				}
				ga := make([]int32, p)
				at := make([]int64, p)
				sum := make([]int64, 2)
				var reqs []*mpi.Request
				add := func(q *mpi.Request, err error) error {
					reqs = append(reqs, q)
					return err
				}
				if err := errors.Join(
					add(mpi.Ibcast(c, bc, 2)),
					add(mpi.Iallreduce(c, make([]int64, arCount), ar, mpi.Sum)), // mismatched
					add(mpi.Igather(c, []int32{int32(r)}, ga, 3)),
					add(c.Ibarrier()),
					add(mpi.Ibcast(c, bc2, 0)),
					add(mpi.Ialltoall(c, []int64{int64(r), int64(r), int64(r), int64(r)}, at)),
					add(mpi.Iallreduce(c, []int64{int64(r), 1}, sum, mpi.Sum)),
				); err != nil {
					return err
				}
				order := []int{0, 1, 2, 3, 4, 5, 6}
				for i := range r + 1 { // a different order at every rank
					slices.Reverse(order[i:])
				}
				errs := make([]error, len(reqs))
				for _, i := range order {
					_, errs[i] = reqs[i].Wait()
				}
				for i, err := range errs {
					if i == 1 {
						if e := mustMismatch(err, mpi.ErrCount, "MPI_Allreduce (5 x int64, MPI_SUM)", "MPI_Allreduce (6 x int64, MPI_SUM)"); e != nil {
							return e
						}
					} else if err != nil {
						return fmt.Errorf("request %d: %w", i, err)
					}
				}
				var check []error
				check = append(check, eqSlice("ibcast", bc, []int64{7, 8, 9}), eqSlice("ibcast float", bc2, []float64{0}),
					eqSlice("ialltoall", at, []int64{0, 1, 2, 3}), eqSlice("iallreduce", sum, []int64{p * (p - 1) / 2, p}))
				if r == 3 {
					check = append(check, eqSlice("igather", ga, []int32{0, 1, 2, 3}))
				}
				check = append(check, sumAfter(c))
				return errors.Join(check...)
			})
		})
	}
}
