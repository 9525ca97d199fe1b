package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// Collective benchmarks, with the definitions of bench/c/coll.c:
//
//	barrier    size 0 (no data)
//	bcast      root 0 broadcasts size bytes
//	reduce     size/8 float64s summed to root 0 (at least 1)
//	allreduce  size/8 float64s summed (at least 1)
//	allgather  every rank contributes size bytes; each receives np*size
//	alltoall   every rank sends size bytes to every rank
//	gather     every rank sends size bytes to root 0 (-bench coll only)
//	allgatherv rank i contributes (i+1)*size/np bytes (-bench coll only)
//
// Sizes 8 B, 64 KiB, 1 MiB restricted to [-min, -max]. 2 warm-up calls,
// then timed loops of 1, 2, 4, ... calls until one takes budget/8 at the
// slowest rank, whose mean a call fixes the iteration count (about
// -budget ms per repetition, 1..10000 calls: calibrate); each repetition
// times the loop on every rank and the sample is the maximum of the
// per-rank means; the median of -runs samples is reported.

var collOps = []string{"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"}

type collBufs struct {
	sbuf, rbuf []byte
	sf, rf     []float64
}

func newCollBufs(np, maxSize int) *collBufs {
	n := np*maxSize + 8
	b := &collBufs{sbuf: make([]byte, n), rbuf: make([]byte, n), sf: make([]float64, n/8+1), rf: make([]float64, n/8+1)}
	for i := range b.sf {
		b.sf[i] = 1
	}
	return b
}

func runCollOp(c *mpi.Comm, b *collBufs, op string, size int) error {
	d := max(1, size/8)
	switch op {
	case "barrier":
		return c.Barrier()
	case "bcast":
		return mpi.Bcast(c, b.sbuf[:size], 0)
	case "reduce":
		return mpi.Reduce(c, b.sf[:d], b.rf[:d], mpi.Sum, 0)
	case "allreduce":
		return mpi.Allreduce(c, b.sf[:d], b.rf[:d], mpi.Sum)
	case "allgather":
		return mpi.Allgather(c, b.sbuf[:size], b.rbuf[:c.Size()*size])
	case "alltoall":
		return mpi.Alltoall(c, b.sbuf[:c.Size()*size], b.rbuf[:c.Size()*size])
	case "gather":
		return mpi.Gather(c, b.sbuf[:size], b.rbuf[:c.Size()*size], 0)
	case "allgatherv":
		// Uneven: rank i contributes (i+1)*size/np bytes (the last size).
		np := c.Size()
		counts, displs := make([]int, np), make([]int, np)
		at := 0
		for i := range np {
			counts[i], displs[i] = (i+1)*size/np, at
			at += counts[i]
		}
		me := c.Rank()
		return mpi.Allgatherv(c, b.sbuf[:counts[me]], b.rbuf[:at], counts, displs)
	}
	return fmt.Errorf("unknown collective %q", op)
}

// timeColl returns the median over runs of the slowest rank's mean time
// per call in microseconds (valid at rank 0). With afterBarrier each
// iteration is a Barrier and then the call, and the time is the call's
// alone (from the Barrier's return to the call's, summed over the loop):
// what a call costs an application that calls it right after a Barrier.
func timeColl(c *mpi.Comm, b *collBufs, op string, size, runs int, budget time.Duration, afterBarrier bool) ([]float64, error) {
	f := func() error { return runCollOp(c, b, op, size) }
	if err := c.Barrier(); err != nil {
		return nil, err
	}
	if afterBarrier {
		g := f
		f = func() error {
			if err := c.Barrier(); err != nil {
				return err
			}
			return g()
		}
	}
	iters, err := calibrate(c, f, budget)
	if err != nil {
		return nil, err
	}
	var samples []float64
	for range runs {
		if err := c.Barrier(); err != nil {
			return nil, err
		}
		var d time.Duration
		if afterBarrier {
			for range iters {
				if err := c.Barrier(); err != nil {
					return nil, err
				}
				t0 := time.Now()
				if err := runCollOp(c, b, op, size); err != nil {
					return nil, err
				}
				d += time.Since(t0)
			}
		} else {
			t0 := time.Now()
			for range iters {
				if err := f(); err != nil {
					return nil, err
				}
			}
			d = time.Since(t0)
		}
		mean := []float64{float64(d.Nanoseconds()) / 1e3 / float64(iters)}
		maxMean := []float64{0}
		if err := mpi.Reduce(c, mean, maxMean, mpi.Max, 0); err != nil {
			return nil, err
		}
		samples = append(samples, maxMean[0])
	}
	return samples, nil
}

// calibrate returns how many calls of f (a collective every rank makes)
// take about budget: after 2 warm-up calls, loops of 1, 2, 4, ... calls
// are timed until one of at least 2 calls takes budget/8 at the slowest
// rank (or has 10000 calls), and that loop's mean a call sizes the count
// (1..10000); the first loop (one call, right after the warm-up) only
// warms. Sizing from one call timed right after a Barrier made the
// count follow that call's cost, which is not a warmed call's: after
// the gated Barrier at np 16 it met members asleep, and the short loop
// carried that wake-up in its mean (issue 28, session 17).
func calibrate(c *mpi.Comm, f func() error, budget time.Duration) (int, error) {
	for range 2 {
		if err := f(); err != nil {
			return 0, err
		}
	}
	for k := 1; ; k *= 2 {
		t0 := time.Now()
		for range k {
			if err := f(); err != nil {
				return 0, err
			}
		}
		took, slowest := []float64{time.Since(t0).Seconds()}, []float64{0}
		if err := mpi.Allreduce(c, took, slowest, mpi.Max); err != nil {
			return 0, err
		}
		if k > 1 && (slowest[0] >= budget.Seconds()/8 || k >= 10000) {
			one := slowest[0] / float64(k)
			return int(min(10000, max(1, budget.Seconds()/max(one, 1e-9)))), nil
		}
	}
}

// coll runs the collective benchmarks on CommWorld (-bench coll).
//
// With afterBarrier, every operation but barrier is also timed right
// after a Barrier (a Barrier, then the call, in a loop; the call's time
// alone), reported as NAME_after_barrier in the same format.
func (b *bench) coll(budget time.Duration, only string, afterBarrier bool) {
	c := b.c
	sizes := []int{8, 65536, 1 << 20}
	maxSize := 8
	for _, s := range sizes {
		if s >= b.min && s <= b.max {
			maxSize = max(maxSize, s)
		}
	}
	bufs := newCollBufs(c.Size(), maxSize)
	for _, op := range append(slices.Clone(collOps), "gather", "allgatherv") {
		if only != "" && !slices.Contains(strings.Split(only, ","), op) {
			continue
		}
		for i, size := range sizes {
			if op == "barrier" {
				if i > 0 {
					break
				}
				size = 0
			} else if size < b.min || size > b.max {
				continue
			}
			var samples []float64
			var err error
			phase(fmt.Sprintf("%s-%d", op, size), func() { samples, err = timeColl(c, bufs, op, size, b.runs, budget, false) })
			check(err)
			b.emit(op, size, samples, "us")
			if afterBarrier && op != "barrier" {
				phase(fmt.Sprintf("%s-%d-after-barrier", op, size), func() { samples, err = timeColl(c, bufs, op, size, b.runs, budget, true) })
				check(err)
				b.emit(op+"_after_barrier", size, samples, "us")
			}
		}
	}
}

// collGrowth measures barrier, 8-byte allreduce and 8-byte bcast in
// process (mpi.Run) at p = 2, 4, ..., maxP (-bench collgrowth -inproc).
func collGrowth(runs, maxP int, budget time.Duration) error {
	out := json.NewEncoder(os.Stdout)
	ops := []string{"barrier", "allreduce", "bcast"}
	for p := 2; p <= maxP; p *= 2 {
		res := map[string][]float64{}
		msgs := map[string][]uint64{}
		for _, op := range ops {
			msgs[op] = make([]uint64, p)
		}
		err := mpi.Run(p, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			bufs := newCollBufs(1, 8)
			for _, op := range ops {
				size := 8
				if op == "barrier" {
					size = 0
				}
				s, err := timeColl(c, bufs, op, size, runs, budget, false)
				if err != nil {
					return err
				}
				if c.Rank() == 0 {
					res[op] = s
				}
				// Messages one call costs each rank: the critical path's
				// O(log p) shape, which wall time on 2 cores cannot show
				// (there the total work of all p ranks sets the time).
				if err := c.Barrier(); err != nil {
					return err
				}
				before := w.MessagesSent()
				if err := runCollOp(c, bufs, op, size); err != nil {
					return err
				}
				msgs[op][c.Rank()] = w.MessagesSent() - before
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, op := range ops {
			s := res[op]
			slices.Sort(s)
			size := 8
			if op == "barrier" {
				size = 0
			}
			out.Encode(result{Name: op, Impl: "ftmpi-inproc", Transport: "inproc", NP: p, Size: size,
				Median: s[len(s)/2], Unit: "us", Runs: len(s)})
			out.Encode(result{Name: op + "_msgs_per_rank_max", Impl: "ftmpi-inproc", Transport: "inproc", NP: p, Size: size,
				Median: float64(slices.Max(msgs[op])), Unit: "msgs", Runs: 1})
		}
	}
	return nil
}
