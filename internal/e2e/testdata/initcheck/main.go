// Command initcheck calls mpi.Init twice: the second call must return an
// error (MPI_Init may be called once per process) and leave the first
// World working. Rank 0 prints one "result:" line; the job then finalizes
// normally, and a third Init after Finalize must fail saying why. It runs
// under ftmpirun and as a singleton alike.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "initcheck:", err)
		os.Exit(1)
	}
	w2, err2 := mpi.Init()
	// The first World still works: a barrier and an allreduce over it.
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	sum := []int64{0}
	err3 := c.Barrier()
	if err3 == nil {
		err3 = mpi.Allreduce(c, []int64{1}, sum, mpi.Sum)
	}
	if w.Rank() == 0 {
		fmt.Printf("result: second-init world=%v other=%v rule=%v; first world size=%d sum=%d err=%v\n",
			w2 != nil, errors.Is(err2, mpi.ErrOther), strings.Contains(errText(err2), "MPI_Init may be called once per process"), w.Size(), sum[0], err3)
		if err2 != nil {
			fmt.Fprintln(os.Stderr, "initcheck: second Init:", err2)
		}
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "initcheck: finalize:", err)
		os.Exit(1)
	}
	// After Finalize MPI cannot be initialised again: the error says so
	// (it said "already initialised", issue 26).
	w4, err4 := mpi.Init()
	if w.Rank() == 0 {
		fmt.Printf("after-finalize: world=%v other=%v says=%v\n", w4 != nil, errors.Is(err4, mpi.ErrOther),
			strings.Contains(errText(err4), "after MPI_Finalize"))
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
