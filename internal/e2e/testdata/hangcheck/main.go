// Command hangcheck hangs on purpose, in the way its argument names, for
// the hang report's end-to-end tests (issue 23):
//
//	mismatch  after a barrier, rank 0 calls MPI_Reduce (root 0) while the
//	          others call MPI_Bcast (root 0): each waits for the other
//	deadlock  ranks 0 and 1 each receive from the other (tag 5); the
//	          others wait in a barrier
//	failure   every other rank tells rank 2 it is past a barrier, then
//	          rank 2 prints "rank 2: ready" (a test kills it there); rank
//	          0 shrinks MPI_COMM_WORLD while the others receive from rank
//	          0 (tag 7) on it, which nobody revoked
//	failure-self  the same, rank 2 killing itself (SIGKILL) after the
//	          line: for launchers without ftmpirun's --inject on=LINE
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hangcheck mismatch|deadlock|failure|failure-self")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	buf := make([]int32, 2)
	switch os.Args[1] {
	case "mismatch":
		// A barrier first: on one host it sets up the shared-memory
		// collectives, whose set-up would see the mismatch below; then
		// rank 0's Reduce waits in the segment, the others' Bcast for rank 0.
		if err = c.Barrier(); err != nil {
			break
		}
		if c.Rank() == 0 {
			err = mpi.Reduce(c, buf, make([]int32, 2), mpi.Sum, 0)
		} else {
			err = mpi.Bcast(c, buf, 0)
		}
	case "deadlock":
		switch c.Rank() {
		case 0:
			_, err = mpi.Recv(c, buf, 1, 5)
		case 1:
			_, err = mpi.Recv(c, buf, 0, 5)
		default:
			err = c.Barrier()
		}
	case "failure", "failure-self":
		if err = c.Barrier(); err != nil {
			break
		}
		// Rank 2 dies only once every other rank left the barrier (its
		// failure must not fail their barrier).
		if c.Rank() == 2 {
			for i := 0; i < c.Size()-1 && err == nil; i++ {
				_, err = mpi.Recv(c, buf[:1], mpi.AnySource, 1)
			}
		} else {
			err = mpi.Send(c, buf[:1], 2, 1)
		}
		if err != nil {
			break
		}
		switch c.Rank() {
		case 2:
			fmt.Println("rank 2: ready")
			if os.Args[1] == "failure-self" {
				w.Kill() // SIGKILL to itself
			}
			time.Sleep(time.Hour) // killed here by the test
		case 0:
			_, err = c.Shrink()
		default:
			_, err = mpi.Recv(c, buf, 0, 7)
		}
	}
	// Only the job's end (the hang report's abort) ends the calls above.
	fmt.Printf("rank %d: returned: %v\n", c.Rank(), err)
	w.Finalize()
}
