package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/coll/shmcoll"
	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/mpi"
)

// Shared-memory collectives (coll_shm.go): every rank of Run shares one
// host, so the blocking Barrier, Bcast, Reduce, Allreduce, Allgather,
// Gather and Allgatherv of CommWorld go through its segment (as coll.ShmUse
// chooses); results against a sequential
// reference for every np, operation, type and root, the path counted, a
// member killed at every point ending the survivors' calls with
// ErrProcFailed, a revocation with ErrRevoked, no mapping left after Free.

func shmNPs() []int {
	if jobtest.RaceEnabled {
		return []int{2, 3, 8}
	}
	return []int{2, 3, 4, 5, 6, 7, 8}
}

// shmSizes are element counts: small, across the one-step switch (4 KiB),
// 32 KiB (Gather takes the segment at np >= 4) and across a 64 KiB slot.
func shmSizes(esize int) []int { return []int{0, 1, 7, 4096/esize + 1, 32768 / esize, 65536/esize + 3} }

func shmVal(r, i int) int { return (r*7+i*3)%11 + 1 }

func checkShmTyped[T int32 | int64 | float64](c *mpi.Comm, name string) error {
	r, p := c.Rank(), c.Size()
	var z T
	esize := map[any]int{int32(0): 4, int64(0): 8, float64(0): 8}[any(z)]
	for _, n := range shmSizes(esize) {
		in := func(rank int) []T {
			v := make([]T, n)
			for i := range v {
				v[i] = T(shmVal(rank, i))
			}
			return v
		}
		for _, op := range []*mpi.Op{mpi.Sum, mpi.Max, mpi.Prod} {
			want := in(0)
			for j := 1; j < p; j++ {
				for i, x := range in(j) {
					switch op {
					case mpi.Sum:
						want[i] += x
					case mpi.Max:
						want[i] = max(want[i], x)
					case mpi.Prod:
						want[i] *= x
					}
				}
			}
			for _, inPlace := range []bool{false, true} {
				send := in(r)
				recv := make([]T, n+2) // longer than needed: only the prefix is written
				if inPlace {
					recv = send
				}
				if err := mpi.Allreduce(c, send, recv, op); err != nil {
					return err
				}
				if !slices.Equal(recv[:n], want) {
					return fmt.Errorf("%s allreduce n=%d %v in place %v: %v, want %v", name, n, op, inPlace, head(recv[:n]), head(want))
				}
			}
			for _, root := range slices.Compact([]int{0, p / 2, p - 1}) {
				recv := make([]T, n)
				if err := mpi.Reduce(c, in(r), recv, op, root); err != nil {
					return err
				}
				if r == root && !slices.Equal(recv, want) {
					return fmt.Errorf("%s reduce n=%d %v root %d: %v, want %v", name, n, op, root, head(recv), head(want))
				}
			}
		}
		for _, root := range slices.Compact([]int{0, p / 2, p - 1}) {
			buf := make([]T, n)
			if r == root {
				buf = in(root)
			}
			if err := mpi.Bcast(c, buf, root); err != nil {
				return err
			}
			if !slices.Equal(buf, in(root)) {
				return fmt.Errorf("%s bcast n=%d root %d differs", name, n, root)
			}
		}
		all := make([]T, p*n)
		if err := mpi.Allgather(c, in(r), all); err != nil {
			return err
		}
		for j := range p {
			if !slices.Equal(all[j*n:(j+1)*n], in(j)) {
				return fmt.Errorf("%s allgather n=%d block %d differs", name, n, j)
			}
		}
		for _, root := range slices.Compact([]int{0, p / 2, p - 1}) {
			for _, inPlace := range []bool{false, true} {
				got := make([]T, p*n)
				send := in(r)
				if r == root && inPlace {
					copy(got[r*n:], send)
					send = got[r*n : (r+1)*n]
				}
				if err := mpi.Gather(c, send, got, root); err != nil {
					return err
				}
				for j := range p {
					if r == root && !slices.Equal(got[j*n:(j+1)*n], in(j)) {
						return fmt.Errorf("%s gather n=%d root %d in place %v: block %d differs", name, n, root, inPlace, j)
					}
				}
			}
		}
		// Uneven counts (0..n), blocks in reverse rank order with gaps.
		counts, displs := make([]int, p), make([]int, p)
		at := 1
		for j := p - 1; j >= 0; j-- {
			counts[j], displs[j] = (7*j+n)%(n+1), at
			at += counts[j] + 1
		}
		for _, inPlace := range []bool{false, true} {
			got := make([]T, at)
			send := in(r)[:counts[r]]
			if inPlace {
				copy(got[displs[r]:], send)
				send = got[displs[r] : displs[r]+counts[r]]
			}
			if err := mpi.Allgatherv(c, send, got, counts, displs); err != nil {
				return err
			}
			for j := range p {
				if !slices.Equal(got[displs[j]:displs[j]+counts[j]], in(j)[:counts[j]]) {
					return fmt.Errorf("%s allgatherv counts %v in place %v: block %d differs", name, counts, inPlace, j)
				}
			}
		}
	}
	return c.Barrier()
}

func head[T any](v []T) []T { return v[:min(len(v), 4)] }

func TestShmCollectivesResults(t *testing.T) {
	for _, np := range shmNPs() {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				if err := errors.Join(checkShmTyped[int32](c, "int32"), checkShmTyped[int64](c, "int64"),
					checkShmTyped[float64](c, "float64")); err != nil {
					return err
				}
				// Every call above went through the segment.
				if got := mpi.ShmCallsForTest(c); got < 50 {
					return fmt.Errorf("%d calls through the shared segment", got)
				}
				return nil
			})
		})
	}
}

// Gather, Allgatherv, Bcast, Reduce and Allreduce take the segment where
// coll.ShmUse measured it faster: Gather at np >= 4 from 16 to 64 KiB,
// Allgatherv at np >= 4, Bcast and Reduce at np >= 4 up to 8 KiB (the
// ring), Allreduce at every size and np.
func TestShmGatherAllgathervChoice(t *testing.T) {
	for _, np := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				if err := c.Barrier(); err != nil { // sets the segment up
					return err
				}
				for _, k := range []struct {
					name string
					call func() error
					seg  bool
				}{
					{"gather 8 B", func() error { return mpi.Gather(c, []int64{1}, make([]int64, np), 0) }, false},
					{"gather 32 KiB", func() error { return mpi.Gather(c, make([]int64, 4096), make([]int64, np*4096), 0) }, np >= 4},
					{"gather 128 KiB", func() error { return mpi.Gather(c, make([]int64, 16384), make([]int64, np*16384), 0) }, false},
					{"allgatherv", func() error {
						return mpi.Allgatherv(c, make([]int64, c.Rank()), make([]int64, np*(np-1)/2), seqCounts(np), nil)
					}, np >= 4},
					{"bcast 8 B", func() error { return mpi.Bcast(c, []int64{1}, 1) }, np >= 4},
					{"bcast 8 KiB", func() error { return mpi.Bcast(c, make([]int64, 1024), 0) }, np >= 4},
					{"bcast 8 KiB + 8", func() error { return mpi.Bcast(c, make([]int64, 1025), 0) }, false},
					{"reduce 8 B", func() error { return mpi.Reduce(c, []int64{1}, make([]int64, 1), mpi.Sum, 1) }, np >= 4},
					{"reduce 16 KiB", func() error { return mpi.Reduce(c, make([]int64, 2048), make([]int64, 2048), mpi.Sum, 0) }, false},
					{"allreduce 128 KiB", func() error { return mpi.Allreduce(c, make([]float64, 16384), make([]float64, 16384), mpi.Sum) }, true},
				} {
					before := mpi.ShmCallsForTest(c)
					if err := k.call(); err != nil {
						return fmt.Errorf("%s: %v", k.name, err)
					}
					if got := mpi.ShmCallsForTest(c) - before; got != map[bool]uint64{false: 0, true: 1}[k.seg] {
						return fmt.Errorf("np %d %s: %d calls through the segment, want it %v", np, k.name, got, k.seg)
					}
				}
				return nil
			})
		})
	}
}

// A float sum through the segment is the sum in rank order, x0 + (x1 +
// (... + x(p-1))), bit for bit at every rank, on values whose sum depends on
// the order of the additions: small (one step) and large (the reduce-scatter
// of four ranks at a time and the allgather), float64 and float32, in place
// and not.
func TestShmAllreduceFloatSumInRankOrder(t *testing.T) {
	val := func(r, i int) float64 {
		v := float64(r+1) * math.Pow(10, float64((7*i+3*r)%31-15))
		if (i+r)%3 == 0 {
			v = -v / 3
		}
		return v
	}
	for _, np := range []int{3, 8, 13} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				for _, n := range []int{300, 20001} {
					in64 := func(r int) []float64 {
						v := make([]float64, n)
						for i := range v {
							v[i] = val(r, i)
						}
						return v
					}
					in32 := func(r int) []float32 {
						v := make([]float32, n)
						for i := range v {
							v[i] = float32(val(r, i))
						}
						return v
					}
					want64, want32 := in64(np-1), in32(np-1)
					for j := np - 2; j >= 0; j-- {
						for i, x := range in64(j) {
							want64[i] = x + want64[i]
						}
						for i, x := range in32(j) {
							want32[i] = x + want32[i]
						}
					}
					for _, inPlace := range []bool{false, true} {
						before := mpi.ShmCallsForTest(c)
						send64, send32 := in64(c.Rank()), in32(c.Rank())
						recv64, recv32 := make([]float64, n), make([]float32, n)
						if inPlace {
							recv64, recv32 = send64, send32
						}
						if err := mpi.Allreduce(c, send64, recv64, mpi.Sum); err != nil {
							return err
						}
						if err := mpi.Allreduce(c, send32, recv32, mpi.Sum); err != nil {
							return err
						}
						for i := range n {
							if math.Float64bits(recv64[i]) != math.Float64bits(want64[i]) || math.Float32bits(recv32[i]) != math.Float32bits(want32[i]) {
								return fmt.Errorf("rank %d, %d elements (in place %v), element %d: %v and %v, want %v and %v",
									c.Rank(), n, inPlace, i, recv64[i], recv32[i], want64[i], want32[i])
							}
						}
						if got := mpi.ShmCallsForTest(c) - before; got != 2 {
							return fmt.Errorf("%d of 2 calls through the segment", got)
						}
					}
				}
				return nil
			})
		})
	}
}

// seqCounts is 0, 1, ..., n-1.
func seqCounts(n int) []int {
	c := make([]int, n)
	for i := range c {
		c[i] = i
	}
	return c
}

// The nonblocking forms and a communicator of one rank keep the
// point-to-point algorithms.
func TestShmNotForNonblockingOrSelf(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		rq, err := mpi.Iallreduce(c, []int64{1}, make([]int64, 1), mpi.Sum)
		if err != nil {
			return err
		}
		if _, err := rq.Wait(); err != nil {
			return err
		}
		if err := w.CommSelf().Barrier(); err != nil {
			return err
		}
		if got := mpi.ShmCallsForTest(c) + mpi.ShmCallsForTest(w.CommSelf()); got != 0 {
			return fmt.Errorf("%d calls through a shared segment", got)
		}
		return nil
	})
}

// A rank killed at each point of the shared-memory Barrier, Allreduce
// (one step, and the reduce-scatter and allgather of a large one), Allgather, Bcast and Reduce (three ring
// slots, root and not), Gather and Allgatherv (several slots); FTMPI_SHM_CRASH_RUNS repeats each case: every survivor's call, or if the victim had
// already published its part, the survivor's next Barrier, fails with
// ErrProcFailed (run's deadline: never a hang).
func TestShmMemberKilledAtEveryPoint(t *testing.T) {
	defer func() { shmcoll.Hook = nil }()
	const np = 4
	big := 20000 // int64s: several slots, the large Allreduce
	calls := map[string]func(c *mpi.Comm) error{
		"barrier": func(c *mpi.Comm) error { return c.Barrier() },
		"allreduce": func(c *mpi.Comm) error {
			return mpi.Allreduce(c, []int64{1}, make([]int64, 1), mpi.Sum)
		},
		"allreduce-big": func(c *mpi.Comm) error {
			return mpi.Allreduce(c, make([]int64, big), make([]int64, big), mpi.Sum)
		},
		"allgather": func(c *mpi.Comm) error {
			return mpi.Allgather(c, make([]int64, 10000), make([]int64, np*10000)) // two slots
		},
		"bcast": func(c *mpi.Comm) error { // 5.6 KB: three ring slots; root 2: a victim at both sides
			return mpi.Bcast(c, make([]int64, 700), 2)
		},
		"reduce": func(c *mpi.Comm) error {
			return mpi.Reduce(c, make([]int64, 700), make([]int64, 700), mpi.Sum, 2)
		},
		"gather": func(c *mpi.Comm) error { // root 2: a victim at every point of both sides; 32 KB: the segment (coll.ShmUse)
			return mpi.Gather(c, make([]int64, 4096), make([]int64, np*4096), 2)
		},
		"allgatherv": func(c *mpi.Comm) error {
			counts := []int{big, 1, 0, big / 2}
			return mpi.Allgatherv(c, make([]int64, counts[c.Rank()]), make([]int64, big+1+big/2), counts, nil)
		},
	}
	runs, start := jobtest.Repeats(t, "FTMPI_SHM_CRASH_RUNS"), time.Now()
	var total, failed int
	for _, name := range []string{"barrier", "allreduce", "allreduce-big", "allgather", "bcast", "reduce", "gather", "allgatherv"} {
		kind := strings.TrimSuffix(name, "-big")
		points := []string{"enter", "published", "read"}
		if name == "allreduce-big" {
			points = append(points, "reduced")
		}
		if name == "barrier" || name == "allreduce" { // gated too (shmcoll.GateMin): counted, and the last arrival before its release
			points = append(points, "gated-enter", "gated-published", "arrived", "last")
			if name == "allreduce" {
				points = append(points, "gated-read")
			}
		}
		for _, point := range points {
			gated := strings.HasPrefix(point, "gated-") || point == "arrived" || point == "last"
			point := strings.TrimPrefix(point, "gated-")
			for _, victim := range []int{0, 2} {
				t.Run(fmt.Sprintf("%s/%s/gated=%v/victim%d", name, point, gated, victim), func(t *testing.T) {
					if gated { // np 4 takes the member-by-member steps by default (GateMin)
						old := shmcoll.GateMin
						shmcoll.GateMin = 3
						defer func() { shmcoll.GateMin = old }()
					}
					var kill [np]func()
					var armed [np]bool // the victim's own goroutine sets and reads its flag
					shmcoll.Hook = func(me int, k, p string) error {
						if me == victim && armed[me] && k == kind && p == point {
							kill[me]() // does not return
						}
						return nil
					}
					for i := range runs {
						err := runErr(t, np, func(w *mpi.World, c *mpi.Comm) error {
							kill[c.Rank()] = w.Kill
							armed[c.Rank()] = false
							if err := mpi.Allgather(c, []int32{1}, make([]int32, np)); err != nil { // sets the segment up
								return err
							}
							armed[c.Rank()] = true // not in the set-up's Allgather
							err := calls[name](c)
							if point == "arrived" || point == "last" {
								// A member reaches these only when it is not (is) the
								// last to count itself: repeated until the victim does.
								for i := 0; i < 100000 && err == nil; i++ {
									err = calls[name](c)
								}
							}
							if err == nil {
								err = c.Barrier()
							}
							if err == nil && mpi.ShmCallsForTest(c) >= 3 {
								return nil // the victim's call has no such point
							}
							if !errors.Is(err, mpi.ErrProcFailed) {
								return fmt.Errorf("rank %d: %v, want ErrProcFailed", c.Rank(), err)
							}
							return nil
						})
						if err != nil {
							failed++
							t.Errorf("run %d: %v", i, err)
						}
						total++
					}
					shmcoll.Hook = nil
				})
			}
		}
	}
	if runs > 1 {
		t.Logf("shm crash runs (in process, World.Kill): %d runs, %d failed, %v", total, failed, time.Since(start).Round(time.Second))
	}
}

// A revoked communicator: every rank's shared-memory Barrier fails with
// ErrRevoked, also a rank that entered it before the notice arrived.
func TestShmRevoked(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		if err := d.Barrier(); err != nil {
			return err
		}
		if d.Rank() == 3 {
			if err := d.Revoke(); err != nil {
				return err
			}
		}
		if err := d.Barrier(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("rank %d: %v, want ErrRevoked", d.Rank(), err)
		}
		if mpi.ShmCallsForTest(d) == 0 {
			return errors.New("the barrier did not use the shared segment")
		}
		return d.Free()
	})
}

// Free removes the mapping (its address is no longer mapped once every
// rank freed: a nonblocking barrier, which maps nothing, orders the look).
func TestShmFreeUnmaps(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		var addrs []uintptr
		for range 3 {
			d, err := c.Dup()
			if err != nil {
				return err
			}
			if err := mpi.Allreduce(d, []int64{1}, make([]int64, 1), mpi.Sum); err != nil {
				return err
			}
			if mpi.ShmCallsForTest(d) != 1 || mpi.ShmAddrForTest(d) == 0 {
				return errors.New("the allreduce did not use the shared segment")
			}
			addrs = append(addrs, mpi.ShmAddrForTest(d))
			if err := d.Free(); err != nil {
				return err
			}
		}
		rq, err := c.Ibarrier()
		if err != nil {
			return err
		}
		if _, err := rq.Wait(); err != nil {
			return err
		}
		b, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if strings.Contains(string(b), fmt.Sprintf("\n%x-", a)) || strings.HasPrefix(string(b), fmt.Sprintf("%x-", a)) {
				return fmt.Errorf("rank %d: the segment at %#x is still mapped after Free", c.Rank(), a)
			}
		}
		return nil
	})
}

// A rank that rejects its own arguments of a call the others make through
// the segment: they fail with its reason instead of waiting for it, and a
// rejected call that would not have taken the segment (Gatherv) leaves the
// segment in use for the next Allreduce.
func TestShmRejectedCall(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		sum := func() error {
			out := make([]int64, 1)
			if err := mpi.Allreduce(c, []int64{int64(c.Rank())}, out, mpi.Sum); err != nil || out[0] != 3 {
				return fmt.Errorf("allreduce: %v %v", out, err)
			}
			return nil
		}
		if err := sum(); err != nil { // sets the segment up
			return err
		}
		var g []int32
		counts := []int{1, 1, 1}
		if c.Rank() == 0 {
			g = make([]int32, 2) // too short: the root rejects its Gatherv
		}
		// (The others' sends may complete before the release arrives.)
		if err := mpi.Gatherv(c, []int32{1}, g, counts, nil, 0); !errors.Is(err, mpi.ErrTruncate) && (c.Rank() == 0 || err != nil) {
			return fmt.Errorf("rank %d gatherv: %v, want ErrTruncate", c.Rank(), err)
		}
		before := mpi.ShmCallsForTest(c)
		if err := sum(); err != nil {
			return err
		}
		if mpi.ShmCallsForTest(c) != before+1 {
			return errors.New("the allreduce after a rejected gather left the segment")
		}
		recv := make([]int64, 2)
		if c.Rank() == 1 {
			recv = recv[:1] // too short: rank 1 rejects its Allreduce
		}
		if err := mpi.Allreduce(c, []int64{1, 2}, recv, mpi.Sum); !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("rank %d allreduce: %v, want ErrTruncate (rank 1's reason)", c.Rank(), err)
		}
		return sum() // point-to-point from now on
	})
}

// waitShmSleepers waits, within the deadline, until n members of c sleep
// on its segment's doorbell.
func waitShmSleepers(c *mpi.Comm, n int) error {
	deadline := time.Now().Add(50 * time.Second)
	for mpi.ShmSleepersForTest(c) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d ranks asleep in the segment, want %d", mpi.ShmSleepersForTest(c), n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Ranks asleep in a shared-memory Barrier are woken by the events that
// end it (coll_shm.go: the doorbell rung on a peer's loss, a revocation, a
// cut context), not by their sleep's bound: that is set to an hour here,
// so a wait that were not rung would run into the job's deadline.
func TestShmSleeperWokenByEvents(t *testing.T) {
	defer func(d time.Duration) { shmcoll.SleepBound = d }(shmcoll.SleepBound)
	shmcoll.SleepBound = time.Hour
	const np = 4
	setUp := func(c *mpi.Comm) (*mpi.Comm, error) {
		d, err := c.Dup()
		if err != nil {
			return nil, err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		if err := d.Barrier(); err != nil { // sets the segment up
			return nil, err
		}
		if mpi.ShmCallsForTest(d) != 1 {
			return nil, errors.New("the barrier did not use the shared segment")
		}
		return d, nil
	}
	t.Run("kill", func(t *testing.T) {
		run(t, np, func(w *mpi.World, c *mpi.Comm) error {
			d, err := setUp(c)
			if err != nil {
				return err
			}
			if d.Rank() == np-1 {
				if err := waitShmSleepers(d, np-1); err != nil {
					return err
				}
				w.Kill()
			}
			if err := d.Barrier(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("rank %d: %v, want ErrProcFailed", d.Rank(), err)
			}
			return nil
		})
	})
	t.Run("revoke", func(t *testing.T) {
		run(t, np, func(w *mpi.World, c *mpi.Comm) error {
			d, err := setUp(c)
			if err != nil {
				return err
			}
			if d.Rank() == np-1 {
				if err := waitShmSleepers(d, np-1); err != nil {
					return err
				}
				if err := d.Revoke(); err != nil {
					return err
				}
			}
			if err := d.Barrier(); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("rank %d: %v, want ErrRevoked", d.Rank(), err)
			}
			return nil
		})
	})
	t.Run("cut", func(t *testing.T) {
		// Every rank but the last enters the Barrier through a context
		// view and cuts it once all of them were seen asleep (the ranks
		// are goroutines of this process); the last never calls.
		var seen sync.WaitGroup
		seen.Add(np - 1)
		allSeen := make(chan struct{})
		go func() { seen.Wait(); close(allSeen) }()
		run(t, np, func(w *mpi.World, c *mpi.Comm) error {
			d, err := setUp(c)
			if err != nil {
				return err
			}
			if d.Rank() == np-1 {
				return nil
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { errc <- d.WithContext(ctx).Barrier() }()
			if err := waitShmSleepers(d, np-1); err != nil {
				return err
			}
			seen.Done()
			select {
			case <-allSeen:
			case <-time.After(50 * time.Second):
				return errors.New("not every rank saw the others asleep")
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				return fmt.Errorf("rank %d: %v, want context.Canceled", d.Rank(), err)
			}
			return nil
		})
	})
}

// shmMapped reports whether an address range starts at a in this
// process (/proc/self/maps).
func shmMapped(a uintptr) (bool, error) {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return false, err
	}
	s := string(b)
	return strings.HasPrefix(s, fmt.Sprintf("%x-", a)) || strings.Contains(s, fmt.Sprintf("\n%x-", a)), nil
}

// Free removes the mapping also once the communicator's calls left the
// segment (here a revocation: the point-to-point path reports it). Before,
// Free unmapped only a segment still in use, so every communicator freed
// after a failure, a revocation or a rejected call kept its mapping (and
// its place in the process's doorbell watcher) as long as the process
// lived.
func TestShmFreeUnmapsAfterTheSegmentWasLeft(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		if err := mpi.Allreduce(d, []int64{1}, make([]int64, 1), mpi.Sum); err != nil {
			return err
		}
		a := mpi.ShmAddrForTest(d)
		if mpi.ShmCallsForTest(d) != 1 || a == 0 {
			return errors.New("the allreduce did not use the shared segment")
		}
		if d.Rank() == 1 {
			if err := d.Revoke(); err != nil {
				return err
			}
		}
		if err := d.Barrier(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("rank %d: %v, want ErrRevoked", d.Rank(), err)
		}
		if err := d.Free(); err != nil {
			return err
		}
		if on, err := shmMapped(a); err != nil || on {
			return fmt.Errorf("rank %d: the segment at %#x is still mapped after Free (%v)", c.Rank(), a, err)
		}
		return nil
	})
}

// A communicator's segment is unmapped once the communicator is garbage:
// here every communicator of a World that ended (CommWorld, and a Dup
// never freed). Before, the cleanup that unmaps it could never run: the
// process's doorbell watcher and the cleanup's own argument held the
// segment's group, which holds the path, which holds the cleanup's object,
// so every World's segments stayed mapped as long as the process lived.
func TestShmSegmentsOfAnEndedWorldAreUnmapped(t *testing.T) {
	var addrs [2][2]uintptr
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		for i, x := range []*mpi.Comm{c, d} {
			if err := mpi.Allreduce(x, []int64{1}, make([]int64, 1), mpi.Sum); err != nil {
				return err
			}
			if addrs[c.Rank()][i] = mpi.ShmAddrForTest(x); addrs[c.Rank()][i] == 0 {
				return errors.New("the allreduce did not use the shared segment")
			}
		}
		return nil
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		runtime.GC() // the cleanups of the garbage run after a collection
		var left []uintptr
		for _, r := range addrs {
			for _, a := range r {
				on, err := shmMapped(a)
				if err != nil {
					t.Fatal(err)
				}
				if on {
					left = append(left, a)
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("segments still mapped 20 s after their World ended: %#x", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
