// Command hostileshm is the job of the hostile shared-memory set-up test
// (run it under ftmpirun --transport shm): right after Init, before any
// rank sends anything, rank 0 prints "ready dir=<job directory>
// pid=<its pid>"; every rank then waits until the file named by its
// argument exists (the test creates it once its impostors are done) and
// every pair of ranks exchanges a message both ways, then an allreduce.
// Rank 0 prints one "result:" line: the job's normal result, whatever the
// impostors tried.
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
		fmt.Fprintln(os.Stderr, "hostileshm:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	rank, size := c.Rank(), c.Size()
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "hostileshm: rank %d: %s: %v\n", rank, what, err)
		os.Exit(1)
	}
	if rank == 0 {
		fmt.Printf("ready dir=%s pid=%d\n", os.Getenv("FTMPI_TMPDIR"), os.Getpid())
	}
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
	// Every pair, both ways: each rank's pairs are set up now.
	sum := int64(0)
	for d := 1; d < size; d++ {
		to, from := (rank+d)%size, (rank-d+size)%size
		got := []int64{-1}
		r, err := mpi.Irecv(c, got, from, d)
		if err != nil {
			fail("irecv", err)
		}
		if err := mpi.Send(c, []int64{int64(rank)}, to, d); err != nil {
			fail("send", err)
		}
		if _, err := r.Wait(); err != nil {
			fail("wait", err)
		}
		sum += got[0]
	}
	total := []int64{0}
	if err := mpi.Allreduce(c, []int64{sum}, total, mpi.Sum); err != nil {
		fail("allreduce", err)
	}
	if rank == 0 {
		fmt.Printf("result: pairs and allreduce sum=%d size=%d\n", total[0], size)
	}
	if err := w.Finalize(); err != nil {
		fail("finalize", err)
	}
}
