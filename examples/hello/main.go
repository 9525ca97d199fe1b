// Command hello initialises MPI, synchronises every rank with a barrier
// and finalizes: the smallest complete job, used to time job start.
package main

import (
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
	w.CommWorld().Barrier()
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Printf("hello from rank %d of %d\n", w.Rank(), w.Size())
	}
	if w.Rank() == 0 {
		fmt.Printf("result: ranks=%d\n", w.Size())
	}
	w.Finalize()
}
