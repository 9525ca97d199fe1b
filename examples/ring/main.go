// Command ring passes a token around all ranks: rank 0 starts it, every
// rank adds its rank number and forwards it, and rank 0 checks the sum.
//
//	go run ./cmd/ftmpirun -n 4 ./examples/ring
package main

import (
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	rank, size := c.Rank(), c.Size()
	next, prev := (rank+1)%size, (rank-1+size)%size
	tok := []int64{0}
	if rank == 0 {
		mpi.Send(c, tok, next, 0)
		st, _ := mpi.Recv(c, tok, prev, 0)
		fmt.Printf("rank 0 of %d: token came back from rank %d\n", size, st.Source)
		want := int64(size * (size - 1) / 2)
		ok := "ok"
		if tok[0] != want {
			ok = fmt.Sprintf("WRONG (want %d)", want)
		}
		fmt.Printf("result: ranks=%d token=%d %s\n", size, tok[0], ok)
	} else {
		st, _ := mpi.Recv(c, tok, prev, 0)
		fmt.Printf("rank %d of %d: got token %d from rank %d\n", rank, size, tok[0], st.Source)
		tok[0] += int64(rank)
		mpi.Send(c, tok, next, 0)
	}
	w.Finalize()
}
