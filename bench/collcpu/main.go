// collcpu: the small collectives' cost on CommWorld as processor time and
// context switches, which the machine's other load moves much less than
// wall time (issue 28, session 16: Barrier and Allreduce 8 B with ranks
// outnumbering cores). Each rank times -calls calls of -op (barrier,
// allreduce or bcast, 8 B; -stagger delays rank 0) and reads its own
// getrusage around them; rank 0 prints
// the wall time a call (the slowest rank's), the processor time a call
// summed over the ranks (user + system), and the voluntary and
// involuntary context switches a call summed over the ranks. Results of
// session 16: docs/benchmarks.md, "Session 16: small collectives over
// shared memory".
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func usage() (cpu time.Duration, vol, invol int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw, ru.Nivcsw
}

func main() {
	calls := flag.Int("calls", 5000, "calls timed")
	op := flag.String("op", "barrier", "barrier, allreduce (8 B, sum) or bcast (8 B from rank 0)")
	stagger := flag.Duration("stagger", 0, "rank 0 sleeps this long before the timed calls (the others enter them first and go to sleep)")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	s, r := []float64{1}, []float64{0}
	call := func() error {
		switch *op {
		case "barrier":
			return c.Barrier()
		case "bcast":
			return mpi.Bcast(c, s, 0)
		}
		return mpi.Allreduce(c, s, r, mpi.Sum)
	}
	for range 200 {
		if err := call(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	c.Barrier()
	if c.Rank() == 0 {
		time.Sleep(*stagger)
	}
	cpu0, v0, i0 := usage()
	t0 := time.Now()
	for range *calls {
		if err := call(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	wall := time.Since(t0)
	cpu1, v1, i1 := usage()
	mine := []float64{float64(cpu1 - cpu0), float64(v1 - v0), float64(i1 - i0)}
	sums := make([]float64, 3)
	slow := []float64{0}
	if err := mpi.Allreduce(c, mine, sums, mpi.Sum); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := mpi.Allreduce(c, []float64{float64(wall)}, slow, mpi.Max); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if c.Rank() == 0 {
		n := float64(*calls)
		fmt.Printf("collcpu op %s np %d wall_us %.2f cpu_us %.2f vcsw %.2f ivcsw %.2f\n",
			*op, c.Size(), slow[0]/1e3/n, sums[0]/1e3/n, sums[1]/n, sums[2]/n)
	}
	w.Finalize()
}
