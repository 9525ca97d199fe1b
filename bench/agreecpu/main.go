// Command agreecpu times MPI_Comm_agree on CommWorld (no failure) in
// every rank and reports, from rank 0, the slowest rank's wall time a
// call and the processor time and context switches a call summed over
// the ranks (getrusage around the timed calls): the measures that other
// load on a shared machine moves least. With -trace, every rank also
// prints, for a few calls, when it entered and left each one (ns from a
// common Barrier), to see where a call's time goes. First it prints the
// slowest rank's time of CommWorld's and a Dup's first two agreements
// ("agreefirst": a communicator's second is the first on its segment).
// "allocs" is the heap allocations a call, a rank's (mean over the ranks:
// runtime.MemStats around the timed calls); -memprofile writes rank 0's
// allocation profile of them (go tool pprof -sample_index=alloc_objects).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func rusage() (cpu time.Duration, vol, invol int64) {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw, ru.Nivcsw
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "agreecpu:", err)
		os.Exit(1)
	}
}

func main() {
	calls := flag.Int("calls", 2000, "agreements timed")
	trace := flag.Int("trace", 0, "print per-rank enter/leave times of this many calls after the timed ones")
	memprof := flag.String("memprofile", "", "write rank 0's allocation profile of the timed calls (every allocation sampled) to this file")
	flag.Parse()
	w, err := mpi.Init()
	must(err)
	c := w.CommWorld()
	agree := func() { _, err := c.Agree(true); must(err) }
	// The first agreements, each after a Barrier: CommWorld's first two
	// (the first by messages, the second the first on its segment, mapped
	// at start), a Dup's first two (the second makes or is passed the
	// Dup's segment: the rendezvous); the slowest rank's, in µs.
	first := make([]float64, 4)
	timeOne := func(d *mpi.Comm, k int) {
		must(d.Barrier())
		t := time.Now()
		_, err := d.Agree(true)
		must(err)
		first[k] = float64(time.Since(t)) / 1e3
	}
	timeOne(c, 0)
	timeOne(c, 1)
	d, err := c.Dup()
	must(err)
	timeOne(d, 2)
	timeOne(d, 3)
	must(d.Free())
	slowFirst := make([]float64, 4)
	must(mpi.Allreduce(c, first, slowFirst, mpi.Max))
	if c.Rank() == 0 {
		fmt.Printf("agreefirst np %d world0_us %.1f world1_us %.1f dup0_us %.1f dup1_us %.1f\n", c.Size(), slowFirst[0], slowFirst[1], slowFirst[2], slowFirst[3])
	}
	for range 100 {
		agree()
	}
	if *memprof != "" && c.Rank() == 0 {
		runtime.MemProfileRate = 1
	}
	must(c.Barrier())
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, v0, i0 := rusage()
	t0 := time.Now()
	for range *calls {
		agree()
	}
	wall := time.Since(t0)
	cpu1, v1, i1 := rusage()
	runtime.ReadMemStats(&ms1)
	if *memprof != "" && c.Rank() == 0 {
		f, err := os.Create(*memprof)
		must(err)
		must(pprof.Lookup("allocs").WriteTo(f, 0))
		f.Close()
		runtime.MemProfileRate = 512 * 1024
	}
	sum := make([]float64, 4)
	must(mpi.Allreduce(c, []float64{float64(cpu1 - cpu0), float64(v1 - v0), float64(i1 - i0), float64(ms1.Mallocs - ms0.Mallocs)}, sum, mpi.Sum))
	slow := []float64{0}
	must(mpi.Allreduce(c, []float64{float64(wall)}, slow, mpi.Max))
	n := float64(*calls)
	if c.Rank() == 0 {
		fmt.Printf("agreecpu np %d wall_us %.2f cpu_us %.2f vcsw %.2f ivcsw %.2f allocs %.2f\n", c.Size(), slow[0]/1e3/n, sum[0]/1e3/n, sum[1]/n, sum[2]/n, sum[3]/n/float64(c.Size()))
	}
	if *trace > 0 {
		must(c.Barrier())
		base := time.Now()
		in := make([]int64, *trace)
		out := make([]int64, *trace)
		for i := range *trace {
			in[i] = int64(time.Since(base))
			agree()
			out[i] = int64(time.Since(base))
		}
		for i := range *trace {
			fmt.Printf("agreetrace rank %d call %d in %d out %d\n", c.Rank(), i, in[i], out[i])
		}
	}
	must(w.Finalize())
}
