// collcpu: the small collectives' cost on CommWorld as processor time and
// context switches, which the machine's other load moves much less than
// wall time (issue 28, sessions 16-17: Barrier and Allreduce 8 B with
// ranks outnumbering cores, and the calls made right after a Barrier).
// Each rank times -calls calls of -op (barrier; allreduce, bcast, reduce
// or gather of -size bytes (default 8), root 0; -stagger delays rank 0) and reads its own
// getrusage around them; rank 0 prints the wall time a call (the slowest
// rank's), the processor time a call summed over the ranks (user +
// system), and the voluntary and involuntary context switches a call
// summed over the ranks.
//
// -pair also times -calls pairs "Barrier, then op" (as an application
// that calls a Barrier and then a Bcast): pair_us is the wall time of a
// pair (the slowest rank's mean), x_us the mean time of the op inside it
// (from the Barrier's return to the op's, the slowest rank's mean), and
// the processor time and switches are a pair's. bench/c/collpair.c is the
// same program for the C MPIs (the same output lines). Results:
// docs/benchmarks.md, "Session 16: small collectives over shared memory"
// and "Session 17: collectives after a Barrier".
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/metrics"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func usage() (cpu time.Duration, vol, invol int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw, ru.Nivcsw
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func main() {
	calls := flag.Int("calls", 5000, "calls timed")
	op := flag.String("op", "barrier", "barrier, allreduce, bcast, reduce or gather (-size bytes, sum, root 0)")
	size := flag.Int("size", 8, "bytes of each rank's contribution (a multiple of 8; bcast: the message)")
	stagger := flag.Duration("stagger", 0, "rank 0 sleeps this long before the timed calls (the others enter them first and go to sleep)")
	pair := flag.Bool("pair", false, "also time pairs of Barrier then op")
	alloc := flag.Int("alloc", 0, "bytes each call allocates (garbage, so that collections run during the loop); with it rank 0 also prints the collections' stop-the-world pauses")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fail(err)
	}
	c := w.CommWorld()
	if *size < 8 || *size%8 != 0 {
		fail(fmt.Errorf("-size %d: want a positive multiple of 8", *size))
	}
	s, r := make([]float64, *size/8), make([]float64, *size/8)
	g := make([]float64, c.Size()**size/8)
	var call func() error
	switch *op {
	case "barrier":
		call = c.Barrier
	case "bcast":
		call = func() error { return mpi.Bcast(c, s, 0) }
	case "reduce":
		call = func() error { return mpi.Reduce(c, s, r, mpi.Sum, 0) }
	case "allreduce":
		call = func() error { return mpi.Allreduce(c, s, r, mpi.Sum) }
	case "gather":
		call = func() error { return mpi.Gather(c, s, g, 0) }
	default:
		fail(fmt.Errorf("unknown -op %q", *op))
	}
	if *alloc > 0 { // each call also allocates
		x := call
		call = func() error {
			sink = make([]byte, *alloc)
			return x()
		}
	}
	for range 200 {
		if err := call(); err != nil {
			fail(err)
		}
	}
	// report sums the ranks' processor time and switches and takes the
	// slowest rank's wall and op times; rank 0 prints.
	report := func(mode string, wall, inOp time.Duration, cpu time.Duration, v, i int64) {
		sums := make([]float64, 3)
		slow := make([]float64, 2)
		if err := mpi.Allreduce(c, []float64{float64(cpu), float64(v), float64(i)}, sums, mpi.Sum); err != nil {
			fail(err)
		}
		if err := mpi.Allreduce(c, []float64{float64(wall), float64(inOp)}, slow, mpi.Max); err != nil {
			fail(err)
		}
		if c.Rank() != 0 {
			return
		}
		n := float64(*calls)
		if mode == "" {
			fmt.Printf("collcpu op %s np %d wall_us %.2f cpu_us %.2f vcsw %.2f ivcsw %.2f\n",
				*op, c.Size(), slow[0]/1e3/n, sums[0]/1e3/n, sums[1]/n, sums[2]/n)
			return
		}
		fmt.Printf("collcpu op %s np %d mode %s pair_us %.2f x_us %.2f cpu_us %.2f vcsw %.2f ivcsw %.2f\n",
			*op, c.Size(), mode, slow[0]/1e3/n, slow[1]/1e3/n, sums[0]/1e3/n, sums[1]/n, sums[2]/n)
	}
	c.Barrier()
	if c.Rank() == 0 {
		time.Sleep(*stagger)
	}
	cpu0, v0, i0 := usage()
	t0 := time.Now()
	for range *calls {
		if err := call(); err != nil {
			fail(err)
		}
	}
	wall := time.Since(t0)
	cpu1, v1, i1 := usage()
	report("", wall, 0, cpu1-cpu0, v1-v0, i1-i0)
	if *pair {
		c.Barrier()
		var inOp time.Duration
		cpu0, v0, i0 := usage()
		t0 := time.Now()
		for range *calls {
			if err := c.Barrier(); err != nil {
				fail(err)
			}
			t := time.Now()
			if err := call(); err != nil {
				fail(err)
			}
			inOp += time.Since(t)
		}
		wall := time.Since(t0)
		cpu1, v1, i1 := usage()
		report("pair", wall, inOp, cpu1-cpu0, v1-v0, i1-i0)
	}
	if *alloc > 0 {
		gcPauses(c)
	}
	w.Finalize()
}

var sink []byte

// gcPauses prints (rank 0) the collections' stop-the-world pauses of the
// run over all ranks: how many, and the largest p50, p99 and maximum of a
// rank, for the time to stop the world (the wait for every running
// goroutine to stop) and for the whole pause (runtime/metrics histograms:
// each figure is its bucket's upper bound).
func gcPauses(c *mpi.Comm) {
	s := []metrics.Sample{{Name: "/sched/pauses/stopping/gc:seconds"}, {Name: "/sched/pauses/total/gc:seconds"}}
	metrics.Read(s)
	mine := make([]float64, 0, 6)
	var count float64
	for _, x := range s {
		h := x.Value.Float64Histogram()
		var tot uint64
		for _, n := range h.Counts {
			tot += n
		}
		q := func(p float64) float64 {
			var acc uint64
			for i, n := range h.Counts {
				acc += n
				if tot > 0 && float64(acc) >= p*float64(tot) {
					return min(h.Buckets[i+1], 1e3)
				}
			}
			return 0
		}
		mine = append(mine, q(0.5)*1e6, q(0.99)*1e6, q(1)*1e6)
		count = float64(tot)
	}
	most := make([]float64, len(mine))
	counts := []float64{0}
	if err := mpi.Allreduce(c, mine, most, mpi.Max); err != nil {
		fail(err)
	}
	if err := mpi.Allreduce(c, []float64{count}, counts, mpi.Sum); err != nil {
		fail(err)
	}
	if c.Rank() == 0 {
		fmt.Printf("collcpu gc np %d pauses %.0f stopping_us p50 %.1f p99 %.1f max %.1f total_us p50 %.1f p99 %.1f max %.1f\n",
			c.Size(), counts[0], most[0], most[1], most[2], most[3], most[4], most[5])
	}
}
