// Command roguecheck is the job of the rogue-client tests: after a
// barrier, rank 0 prints "ready" with where the job listens (the launcher's
// control endpoint, the job directory, its pid), then waits until the file
// named by its argument exists (the test creates it once its rogue clients
// are done) and every rank goes on: a ring exchange and an allreduce. Rank
// 0 prints one "result:" line: the job's normal result, whatever the
// rogues tried.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "roguecheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	rank, size := c.Rank(), c.Size()
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "roguecheck: rank %d: %s: %v\n", rank, what, err)
		os.Exit(1)
	}
	if err := c.Barrier(); err != nil {
		fail("barrier", err)
	}
	if rank == 0 {
		fmt.Printf("ready control=%s dir=%s pid=%d\n", os.Getenv("FTMPI_CONTROL"), os.Getenv("FTMPI_TMPDIR"), os.Getpid())
		deadline := time.Now().Add(60 * time.Second)
		for {
			if _, err := os.Stat(os.Args[1]); err == nil {
				break
			}
			if time.Now().After(deadline) {
				fail("wait for the go file", os.ErrDeadlineExceeded)
			}
			time.Sleep(10 * time.Millisecond) // polling for the test's file, not synchronising ranks
		}
	}
	if err := c.Barrier(); err != nil {
		fail("barrier", err)
	}
	// A ring: each rank sends its rank to the next, receives from the previous.
	got := []int64{-1}
	next, prev := (rank+1)%size, (rank+size-1)%size
	if rank%2 == 0 {
		err = mpi.Send(c, []int64{int64(rank)}, next, 7)
		if err == nil {
			_, err = mpi.Recv(c, got, prev, 7)
		}
	} else {
		_, err = mpi.Recv(c, got, prev, 7)
		if err == nil {
			err = mpi.Send(c, []int64{int64(rank)}, next, 7)
		}
	}
	if err != nil {
		fail("ring", err)
	}
	sum := []int64{0}
	if err := mpi.Allreduce(c, []int64{got[0]}, sum, mpi.Sum); err != nil {
		fail("allreduce", err)
	}
	if rank == 0 {
		fmt.Printf("result: ring and allreduce sum=%d size=%d\n", sum[0], size)
	}
	if err := w.Finalize(); err != nil {
		fail("finalize", err)
	}
}
