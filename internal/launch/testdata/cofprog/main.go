// Command cofprog is the launcher's Checkpoint-on-Failure test program
// (ftmpirun --restart-on-failure). Usage: cofprog FAILLAUNCHES R [hold]
//
// Every rank prints "rank r launch k job J tmp T" (k = World.Restarted(),
// which must equal $FTMPI_RESTART) and enters a barrier. In launches
// k < FAILLAUNCHES rank R then SIGKILLs itself; the others wait for a
// message from R (or are still in the barrier), get ErrProcFailed, print "rank r launch k: failure
// seen" and exit 3 without finalizing, as a Checkpoint-on-Failure
// survivor does after writing its checkpoint. From launch FAILLAUNCHES on,
// every rank prints "rank r launch k: ok", finalizes and exits 0.
//
// With "hold", rank R does not kill itself: in launches k < FAILLAUNCHES
// every rank waits (rank R for rank R+1) until a failure, which only an
// injected fault provides.
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	hold := len(os.Args) == 4 && os.Args[3] == "hold"
	if len(os.Args) != 3 && !hold {
		fmt.Fprintln(os.Stderr, "usage: cofprog FAILLAUNCHES R [hold]")
		os.Exit(99)
	}
	failLaunches, err1 := strconv.Atoi(os.Args[1])
	victim, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "cofprog: bad arguments")
		os.Exit(99)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cofprog:", err)
		os.Exit(99)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	r, k := c.Rank(), w.Restarted()
	if env := os.Getenv("FTMPI_RESTART"); env != strconv.Itoa(k) {
		fmt.Fprintf(os.Stderr, "cofprog: Restarted() = %d but FTMPI_RESTART=%q\n", k, env)
		os.Exit(98)
	}
	fmt.Printf("rank %d launch %d job %s tmp %s\n", r, k, os.Getenv("FTMPI_JOB"), os.Getenv("FTMPI_TMPDIR"))
	err = c.Barrier() // may fail at a rank still in it when the victim dies
	if k < failLaunches {
		from := victim
		if r == victim {
			if !hold {
				w.Kill()
			}
			from = (r + 1) % c.Size()
		}
		if err == nil {
			_, err = mpi.Recv(c, make([]byte, 1), from, 0)
		}
		if !errors.Is(err, mpi.ErrProcFailed) {
			fmt.Fprintf(os.Stderr, "cofprog: rank %d: receive from the victim: %v\n", r, err)
			os.Exit(96)
		}
		fmt.Printf("rank %d launch %d: failure seen\n", r, k)
		os.Exit(3)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cofprog: barrier:", err)
		os.Exit(97)
	}
	fmt.Printf("rank %d launch %d: ok\n", r, k)
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "cofprog: finalize:", err)
		os.Exit(95)
	}
}
