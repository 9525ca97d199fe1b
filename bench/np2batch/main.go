// np2batch: batches of Barriers, Allreduce 8 B or 1-byte ping-pongs (op
// latency: a call is half a round trip, as ftmpi-bench's latency) on
// CommWorld; rank 0 prints
// the fastest batch's mean and the 10th and 50th percentiles (the fastest
// batches are those where both ranks had a core: the code path's cost,
// little touched by the load). Used to settle the np 2 figures of issue 28 (docs/benchmarks.md, session 13): bench/results/np2batch-*.txt.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	batch := flag.Int("batch", 200, "calls a batch")
	batches := flag.Int("batches", 300, "batches")
	op := flag.String("op", "barrier", "barrier, allreduce or latency (1-byte Send and Recv between ranks 0 and 1; a call is half a round trip)")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	s, r := []float64{1}, []float64{0}
	b := []byte{1}
	for range 100 {
		c.Barrier()
	}
	means := make([]float64, 0, *batches)
	for range *batches {
		t0 := time.Now()
		switch *op {
		case "barrier":
			for range *batch {
				c.Barrier()
			}
		case "latency":
			for range *batch / 2 {
				pingPong(c, b)
			}
		default:
			for range *batch {
				mpi.Allreduce(c, s, r, mpi.Sum)
			}
		}
		means = append(means, float64(time.Since(t0).Nanoseconds())/float64(*batch))
	}
	if c.Rank() == 0 {
		slices.Sort(means)
		fmt.Printf("%s min %.1f p10 %.1f p50 %.1f ns\n", *op, means[0], means[len(means)/10], means[len(means)/2])
	}
	w.Finalize()
}

// pingPong is one round trip of 1 byte between ranks 0 and 1 (others idle).
func pingPong(c *mpi.Comm, b []byte) {
	switch c.Rank() {
	case 0:
		check(mpi.Send(c, b, 1, 1))
		_, err := mpi.Recv(c, b, 1, 1)
		check(err)
	case 1:
		_, err := mpi.Recv(c, b, 0, 1)
		check(err)
		check(mpi.Send(c, b, 0, 1))
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
