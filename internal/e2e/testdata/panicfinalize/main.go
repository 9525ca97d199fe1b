// Command panicfinalize is the job of TestPanicUnderDeferredFinalize
// (internal/e2e/panic_test.go): the README's idiom, defer w.Finalize(),
// in a program whose rank 1 panics while the others wait for it in a
// Barrier. The deferred Finalize must not wait for the others (who wait
// for the panicking rank): the panic is printed, the rank dies of it, and
// the job ends as with any failed process. With -nodefer it has no
// deferred Finalize (TestPanicExitCodeIsAlwaysTheSame): the job's exit
// code must be the panic's, 2, in every run.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	nodefer := flag.Bool("nodefer", false, "finalize at the end, not in a deferred call")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "panicfinalize:", err)
		os.Exit(1)
	}
	if !*nodefer {
		defer w.Finalize()
	}
	c := w.CommWorld()
	if w.Rank() == 1 {
		var m map[string]int
		m["boom"]++ // assignment to entry in nil map
	}
	if err := c.Barrier(); err != nil {
		fmt.Fprintf(os.Stderr, "panicfinalize: rank %d: barrier: %v\n", w.Rank(), err)
		return
	}
	fmt.Printf("rank %d: passed the barrier\n", w.Rank())
	if *nodefer {
		w.Finalize()
	}
}
