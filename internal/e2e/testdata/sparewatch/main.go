// Command sparewatch is the job of the spare-watching tests: it is started
// with one spare or more (ftmpirun --spares K, FTMPI_SPARES=K under a PMI
// launcher). Once every rank is up, rank 0 prints "sparewatch: armed" (the
// test then kills or stops a spare); every rank then waits, with a
// deadline, until its pool (World.Spares) has lost one spare, i.e. until
// the failure of a waiting spare is known to it, and rank 0 prints one
// "result:" line. The job then finalizes: the Finalize of a job whose
// spare is gone must end.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	wait := flag.Duration("wait", 30*time.Second, "how long a rank waits for the spare's failure to be known")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sparewatch:", err)
		os.Exit(1)
	}
	if w.Replacement() != nil {
		fmt.Fprintln(os.Stderr, "sparewatch: a spare was taken, which nothing here does")
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	before := len(w.Spares())
	if err := c.Barrier(); err != nil {
		fmt.Fprintln(os.Stderr, "sparewatch: barrier:", err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Println("sparewatch: armed")
	}
	start := time.Now()
	deadline := start.Add(*wait)
	for len(w.Spares()) >= before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a pool: no event to wait on in the API
	}
	known := time.Since(start)
	after := len(w.Spares())
	// Every rank's verdict, gathered at rank 0.
	ok := int64(0)
	if after == before-1 {
		ok = 1
	}
	all := []int64{0}
	if err := mpi.Allreduce(c, []int64{ok}, all, mpi.Sum); err != nil {
		fmt.Fprintln(os.Stderr, "sparewatch: allreduce:", err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("result: ranks=%d spares %d -> %d, known at %d of %d ranks\n", w.Size(), before, after, all[0], w.Size())
		fmt.Fprintf(os.Stderr, "sparewatch: rank 0 knew after %v\n", known.Round(time.Millisecond))
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "sparewatch: finalize:", err)
		os.Exit(1)
	}
}
