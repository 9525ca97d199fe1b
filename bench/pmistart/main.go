// Command pmistart times MPI_Init under a launcher (issue 24 item 2: the
// start-up exchange under PMI): every rank measures from PMISTART_T0, the
// launch time the script sets (nanoseconds since the epoch), to the return
// of mpi.Init, and to the end of a barrier after it; rank 0 prints the
// largest of each over the ranks as one JSON line. It must not be used
// but as a benchmark.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	t0, err := strconv.ParseInt(os.Getenv("PMISTART_T0"), 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pmistart: PMISTART_T0 must be the launch time in nanoseconds since the epoch")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pmistart:", err)
		os.Exit(1)
	}
	since := func() float64 { return float64(time.Now().UnixNano()-t0) / 1e6 }
	initMs := since()
	c := w.CommWorld()
	if err := c.Barrier(); err != nil {
		fmt.Fprintln(os.Stderr, "pmistart: barrier:", err)
		os.Exit(1)
	}
	barrierMs := since()
	all := make([]float64, 2)
	if err := mpi.Allreduce(c, []float64{initMs, barrierMs}, all, mpi.Max); err != nil {
		fmt.Fprintln(os.Stderr, "pmistart: allreduce:", err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("{\"name\":\"pmi_start\",\"np\":%d,\"init_max_ms\":%.1f,\"barrier_max_ms\":%.1f}\n", w.Size(), all[0], all[1])
	}
	w.Finalize()
}
