// Command hostilejob is the job of the hostile-local-user tests: each
// rank prints "ready rank=R pid=P control=ENDPOINT" once initialised
// (with the failure detector off, FTMPI_HB_TIMEOUT=off, no rank has
// connected to another yet), then waits until the file named by its
// argument exists (the test creates it once its flood is under way), and
// every pair of ranks exchanges a message (so every rank connects to
// every other after the flood began), then an allreduce. Rank 0 prints
// one "result:" line, the same whatever the flood did.
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
		fmt.Fprintln(os.Stderr, "hostilejob:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	rank, size := c.Rank(), c.Size()
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "hostilejob: rank %d: %s: %v\n", rank, what, err)
		os.Exit(1)
	}
	if len(os.Args) != 2 {
		fail("usage", fmt.Errorf("hostilejob GOFILE"))
	}
	fmt.Printf("ready rank=%d pid=%d control=%s\n", rank, os.Getpid(), os.Getenv("FTMPI_CONTROL"))
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(os.Args[1]); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fail("wait for the go file", os.ErrDeadlineExceeded)
		}
		time.Sleep(10 * time.Millisecond) // polling for the test's file, not synchronising ranks
	}
	// Every pair: rank r sends r*size+peer to each peer and checks what
	// it gets back.
	bad := 0
	for peer := range size {
		if peer == rank {
			continue
		}
		got := []int64{-1}
		if _, err := mpi.Sendrecv(c, []int64{int64(rank*size + peer)}, peer, 5, got, peer, 5); err != nil {
			fail(fmt.Sprintf("exchange with rank %d", peer), err)
		}
		if got[0] != int64(peer*size+rank) {
			bad++
		}
	}
	in := []int64{int64(rank), int64(bad)}
	sum := []int64{0, 0}
	if err := mpi.Allreduce(c, in, sum, mpi.Sum); err != nil {
		fail("allreduce", err)
	}
	if rank == 0 {
		fmt.Printf("result: pairs exchanged wrong=%d ranksum=%d size=%d\n", sum[1], sum[0], size)
	}
	if err := w.Finalize(); err != nil {
		fail("finalize", err)
	}
}
