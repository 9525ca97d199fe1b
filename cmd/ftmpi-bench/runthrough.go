package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// rtColl measures collectives on a communicator with recognised failures
// (seed 003 run-through stabilization) against the same collectives on a
// communicator of the alive processes only (-bench rtcoll; run under
// ftmpirun --on-failure continue). The last -kill odd ranks kill
// themselves (SIGKILL); the survivors Validate CommWorld and Shrink a ULFM
// copy of it (the alive-only communicator, same rank order). Each
// repetition times the validated and the alive-only form back to back, so
// both see the same machine load, in alternating order. Per operation and size it prints
// rt_validated_OP, rt_alive_OP (us, the method of -bench coll) and
// rt_ratio_OP (the ratio of the medians); np is the number of alive ranks.
func (b *bench) rtColl(budget time.Duration, kill int) {
	c := b.c
	c.SetErrhandler(mpi.ErrorsReturn)
	n := c.Size()
	var victims []int
	for r := n - 1; r > 0 && len(victims) < kill; r-- {
		if r%2 == 1 {
			victims = append(victims, r)
		}
	}
	if len(victims) == 0 {
		fmt.Fprintln(os.Stderr, "ftmpi-bench: rtcoll needs at least 2 ranks and -kill >= 1")
		os.Exit(2)
	}
	alive, err := c.Dup() // ULFM copy, shrunk below
	check(err)
	if slices.Contains(victims, c.Rank()) {
		c.World().Kill()
	}
	for _, v := range victims {
		if _, err := mpi.Recv(c, []int{0}, v, 9999); !errors.Is(err, mpi.ErrRankFailStop) {
			check(fmt.Errorf("waiting for the failure of rank %d: %v", v, err))
		}
	}
	g, err := c.Validate()
	check(err)
	if g.Size() != len(victims) {
		check(fmt.Errorf("validated %v, killed %v", g.WorldRanks(), victims))
	}
	check(alive.FailureAck())
	base, err := alive.Shrink()
	check(err)
	sizes := []int{8, 65536}
	bufs := newCollBufs(n, 65536)
	ops := append(slices.Clone(collOps), "scan")
	for _, op := range ops {
		for i, size := range sizes {
			if op == "barrier" {
				if i > 0 {
					break
				}
				size = 0
			}
			var rt, al []float64
			for run := range b.runs {
				// Alternate which goes first: the first measurement after
				// switching communicators is measurably slower (about 1 us
				// for an 8-byte Bcast).
				first, second := c, base
				if run%2 == 1 {
					first, second = base, c
				}
				s1, err := timeRT(first, bufs, op, size, budget)
				check(err)
				s2, err := timeRT(second, bufs, op, size, budget)
				check(err)
				if run%2 == 1 {
					s1, s2 = s2, s1
				}
				rt, al = append(rt, s1), append(al, s2)
			}
			if c.Rank() == 0 {
				slices.Sort(rt)
				slices.Sort(al)
				mr, ma := rt[len(rt)/2], al[len(al)/2]
				np := base.Size()
				b.out.Encode(result{Name: "rt_validated_" + op, Impl: "ftmpi", Transport: b.trans, NP: np, Size: size, Median: mr, Unit: "us", Runs: len(rt)})
				b.out.Encode(result{Name: "rt_alive_" + op, Impl: "ftmpi", Transport: b.trans, NP: np, Size: size, Median: ma, Unit: "us", Runs: len(al)})
				b.out.Encode(result{Name: "rt_ratio_" + op, Impl: "ftmpi", Transport: b.trans, NP: np, Size: size, Median: mr / ma, Unit: "x", Runs: len(rt)})
			}
		}
	}
}

// timeRT is one repetition of timeColl (the scan operation added).
func timeRT(c *mpi.Comm, b *collBufs, op string, size int, budget time.Duration) (float64, error) {
	if op == "scan" {
		d := max(1, size/8)
		f := func() error { return mpi.Scan(c, b.sf[:d], b.rf[:d], mpi.Sum) }
		return timeFn(c, f, budget)
	}
	s, err := timeColl(c, b, op, size, 1, budget, false)
	if err != nil {
		return 0, err
	}
	return s[0], nil
}

// timeFn times f like timeColl times a collective (one repetition).
func timeFn(c *mpi.Comm, f func() error, budget time.Duration) (float64, error) {
	iters, err := calibrate(c, f, budget)
	if err != nil {
		return 0, err
	}
	check(c.Barrier())
	t0 := time.Now()
	for range iters {
		if err := f(); err != nil {
			return 0, err
		}
	}
	mean, maxMean := []float64{float64(time.Since(t0).Nanoseconds()) / 1e3 / float64(iters)}, []float64{0}
	if err := mpi.Reduce(c, mean, maxMean, mpi.Max, 0); err != nil {
		return 0, err
	}
	return maxMean[0], nil
}
