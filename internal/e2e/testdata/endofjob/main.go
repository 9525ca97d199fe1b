// Command endofjob is the plain job of the end-of-job tests
// (internal/e2e/endofjob_test.go): every rank takes part in a last
// collective (an Allreduce of the ranks' numbers), rank 0 prints the
// result, and every rank calls Finalize and then says so. The tests stop
// or kill one rank at each phase of the end of the job with ftmpirun
// --inject stop:rank=R,at=PHASE (internal/inject's phases; at=finalize
// is right after the last collective, since nothing else comes between).
package main

import (
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "endofjob:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	sum := []int64{int64(w.Rank() + 1)}
	if err := mpi.Allreduce(c, sum, sum, mpi.Sum); err != nil {
		fmt.Fprintf(os.Stderr, "endofjob: rank %d: allreduce: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("result: endofjob np=%d sum=%d\n", w.Size(), sum[0])
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "endofjob: rank %d: finalize: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	fmt.Printf("rank %d: finalized\n", w.Rank())
}
