// Command checkmode makes the mistakes the checking mode (ftmpirun
// --check, FTMPI_CHECK=1) reports, for its end-to-end test (issue 23):
// the last rank broadcasts from root 1 while the others broadcast from
// root 0, each rank prints its Bcast's error as "rank R: bcast: ERR" and,
// once an Allreduce over the same communicator summed the ranks, "rank R:
// allreduce N"; every rank keeps a duplicate of MPI_COMM_WORLD it does
// not free, which Finalize lists on stderr under the checking mode.
package main

import (
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	r, n := c.Rank(), c.Size()
	root := 0
	if r == n-1 {
		root = 1
	}
	err = mpi.Bcast(c, []int64{int64(r), 2, 3, 4}, root)
	fmt.Printf("rank %d: bcast: %v\n", r, err)
	sum := []int64{0}
	if err := mpi.Allreduce(c, []int64{int64(r)}, sum, mpi.Sum); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: allreduce: %v\n", r, err)
		os.Exit(1)
	}
	fmt.Printf("rank %d: allreduce %d\n", r, sum[0])
	if _, err := c.Dup(); err != nil { // kept: listed at Finalize
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
