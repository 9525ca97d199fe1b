// Command particles moves particles on a periodic line [0, 1) split into
// one slab per process, exchanging Go structs: after every step the
// particles that left a slab migrate to the owner of their new position
// (Alltoall of the counts, Alltoallv of the particle structs), and at the
// end a MINLOC Allreduce finds the particle nearest to the middle. Every
// particle's motion depends only on its own state, and the summaries are
// integer sums and a MINLOC, so the result line is identical for any
// number of processes:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/particles
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/ftmpi/ftmpi/mpi"
)

// Particle is a message element: a struct of fixed-size fields, sent as
// its bytes (no encoding).
type Particle struct {
	X, V float64 // position in [0, 1), velocity
	ID   int32
	Kind uint8 // 0..3
}

// splitmix64 is a counter-based generator: the i-th value needs no state.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func unit(i uint64) float64 { return float64(splitmix64(i)>>11) / (1 << 53) }

// owner is the rank whose slab holds x.
func owner(x float64, p int) int { return min(int(x*float64(p)), p-1) }

func die(w *mpi.World, err error) {
	fmt.Fprintln(os.Stderr, "particles:", err)
	w.Abort(1)
}

func main() {
	n := flag.Int("n", 20000, "number of particles")
	steps := flag.Int("steps", 50, "time steps")
	flag.Parse()
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "particles:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	r, p := c.Rank(), c.Size()

	// Every rank creates the particles of its slab.
	var mine []Particle
	for i := range *n {
		x := unit(uint64(3 * i))
		if owner(x, p) == r {
			mine = append(mine, Particle{X: x, V: (unit(uint64(3*i+1)) - 0.5) / 10, ID: int32(i), Kind: uint8(splitmix64(uint64(3*i+2)) % 4)})
		}
	}
	sendCounts, recvCounts := make([]int, p), make([]int, p)
	for range *steps {
		for i := range mine {
			x := mine[i].X + mine[i].V
			mine[i].X = x - math.Floor(x) // periodic
		}
		// Sort by destination: the send blocks of Alltoallv.
		slices.SortStableFunc(mine, func(a, b Particle) int { return owner(a.X, p) - owner(b.X, p) })
		clear(sendCounts)
		for _, q := range mine {
			sendCounts[owner(q.X, p)]++
		}
		if err := mpi.Alltoall(c, sendCounts, recvCounts); err != nil {
			die(w, err)
		}
		total := 0
		for _, k := range recvCounts {
			total += k
		}
		next := make([]Particle, total)
		if err := mpi.Alltoallv(c, mine, sendCounts, nil, next, recvCounts, nil); err != nil {
			die(w, err)
		}
		mine = next
	}

	// Summaries: integer sums per kind, and the particle nearest to the
	// middle (MINLOC; ties: the least ID).
	var sums [7]int64 // count, ID sum, the counts of kinds 0..2, the count and ID sum of x < 1/4
	near := []mpi.ValLoc[float64]{{Val: math.Inf(1), Loc: math.MaxInt}}
	for _, q := range mine {
		if owner(q.X, p) != r {
			die(w, fmt.Errorf("particle %d at %v is not in slab %d", q.ID, q.X, r))
		}
		sums[0]++
		sums[1] += int64(q.ID)
		if q.Kind < 3 {
			sums[2+q.Kind]++
		}
		if q.X < 0.25 {
			sums[5]++
			sums[6] += int64(q.ID)
		}
		if d := math.Abs(q.X - 0.5); d < near[0].Val || d == near[0].Val && int(q.ID) < near[0].Loc {
			near[0] = mpi.ValLoc[float64]{Val: d, Loc: int(q.ID)}
		}
	}
	tot := make([]int64, len(sums))
	if err := mpi.Allreduce(c, sums[:], tot, mpi.Sum); err != nil {
		die(w, err)
	}
	best := make([]mpi.ValLoc[float64], 1)
	if err := mpi.Allreduce(c, near, best, mpi.MinLoc); err != nil {
		die(w, err)
	}
	if r == 0 {
		fmt.Printf("result: particles n=%d steps=%d count=%d idsum=%d kinds=%d/%d/%d quarter=%d/%d nearest=%d at %.12f\n",
			*n, *steps, tot[0], tot[1], tot[2], tot[3], tot[4], tot[5], tot[6], best[0].Loc, best[0].Val)
	}
	w.Finalize()
}
