// Command pi estimates π by Monte Carlo: sample i of a fixed global
// sequence is a point drawn from a counter-based generator seeded by i, and
// rank r takes the samples i ≡ r (mod size). The hit counts are summed with
// Reduce, so the estimate is identical for any number of processes:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/pi
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

// splitmix64 is a counter-based generator: the i-th value needs no state.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func main() {
	samples := flag.Int64("samples", 10_000_000, "total number of samples")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pi:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	var hits int64
	for i := int64(c.Rank()); i < *samples; i += int64(c.Size()) {
		x := float64(splitmix64(uint64(2*i))>>11) / (1 << 53)
		y := float64(splitmix64(uint64(2*i+1))>>11) / (1 << 53)
		if x*x+y*y <= 1 {
			hits++
		}
	}
	total := []int64{0}
	if err := mpi.Reduce(c, []int64{hits}, total, mpi.Sum, 0); err != nil {
		fmt.Fprintln(os.Stderr, "pi:", err)
		w.Abort(1)
	}
	if c.Rank() == 0 {
		fmt.Printf("result: pi samples=%d hits=%d estimate=%.10f\n", *samples, total[0], 4*float64(total[0])/float64(*samples))
	}
	w.Finalize()
}
