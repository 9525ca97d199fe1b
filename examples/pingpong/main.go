// Command pingpong bounces a message between ranks 0 and 1 and reports the
// half round-trip time per message size.
//
//	go run ./cmd/ftmpirun -n 2 ./examples/pingpong
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	iters := flag.Int("iters", 1000, "round trips per size")
	maxSize := flag.Int("max", 1<<20, "largest message in bytes")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pingpong:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	if c.Size() < 2 {
		if c.Rank() == 0 {
			fmt.Println("pingpong needs 2 ranks: go run ./cmd/ftmpirun -n 2 ./examples/pingpong")
			fmt.Println("result: skipped (size 1)")
		}
		w.Finalize()
		return
	}
	buf := make([]byte, *maxSize)
	var checksum int
	for size := 1; size <= *maxSize; size *= 4 {
		n := *iters
		if size >= 64<<10 {
			n = max(10, n/10)
		}
		c.Barrier()
		start := time.Now()
		for i := 0; i < n; i++ {
			switch c.Rank() {
			case 0:
				buf[0] = byte(i)
				mpi.Send(c, buf[:size], 1, 1)
				mpi.Recv(c, buf[:size], 1, 1)
				checksum += int(buf[0])
			case 1:
				mpi.Recv(c, buf[:size], 0, 1)
				buf[0]++
				mpi.Send(c, buf[:size], 0, 1)
			}
		}
		if c.Rank() == 0 {
			half := time.Since(start) / time.Duration(2*n)
			fmt.Printf("%9d bytes  %10.2f us\n", size, float64(half.Nanoseconds())/1e3)
		}
	}
	if c.Rank() == 0 {
		fmt.Printf("result: pingpong ranks=%d checksum=%d\n", c.Size(), checksum)
	}
	w.Finalize()
}
