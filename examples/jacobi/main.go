// Command jacobi solves the 1-D Poisson problem -u” = f on (0,1) with
// u(0)=0, u(1)=1 by Jacobi iteration, the grid split into one block of rows
// per rank. Each iteration exchanges one halo value with each neighbour
// (Sendrecv); every -check iterations the ranks agree on the max-norm of the
// update (Allreduce with Max) to decide convergence.
//
// The arithmetic of every grid point is the same whatever the number of
// ranks, the max-norm is exact, and the checksum is computed by rank 0 over
// the gathered solution in grid order, so the result line is identical for
// any number of processes:
//
//	go run ./cmd/ftmpirun -n 8 ./examples/jacobi
//	go run ./examples/jacobi
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	n := flag.Int("n", 128, "interior grid points")
	tol := flag.Float64("tol", 1e-8, "stop when the max-norm of an update is below tol")
	maxIter := flag.Int("maxiter", 200000, "iteration limit")
	check := flag.Int("check", 100, "iterations between convergence checks")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jacobi:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	rank, size := c.Rank(), c.Size()
	if *n < size {
		if rank == 0 {
			fmt.Fprintf(os.Stderr, "jacobi: %d grid points cannot be split over %d ranks\n", *n, size)
		}
		w.Abort(2)
	}
	// Block of interior points [lo, hi) owned by this rank.
	lo, hi := rank**n/size, (rank+1)**n/size
	m := hi - lo
	h := 1.0 / float64(*n+1)
	// u has one halo cell on each side: u[0] is point lo-1, u[m+1] is point hi.
	u := make([]float64, m+2)
	next := make([]float64, m+2)
	f := make([]float64, m+2)
	for i := 1; i <= m; i++ {
		x := float64(lo+i) * h
		f[i] = math.Sin(math.Pi * x)
	}
	if rank == size-1 {
		u[m+1], next[m+1] = 1, 1 // boundary u(1) = 1
	}
	left, right := rank-1, rank+1
	if left < 0 {
		left = mpi.ProcNull
	}
	if right >= size {
		right = mpi.ProcNull
	}
	iters := 0
	diff := []float64{math.Inf(1)}
	for iters < *maxIter {
		// Halo exchange: send my first point left, receive the right halo; and back.
		if _, err := mpi.Sendrecv(c, u[1:2], left, 0, u[m+1:m+2], right, 0); err != nil {
			fail(w, err)
		}
		if _, err := mpi.Sendrecv(c, u[m:m+1], right, 1, u[0:1], left, 1); err != nil {
			fail(w, err)
		}
		local := 0.0
		for i := 1; i <= m; i++ {
			next[i] = 0.5 * (u[i-1] + u[i+1] + h*h*f[i])
			local = math.Max(local, math.Abs(next[i]-u[i]))
		}
		u, next = next, u
		iters++
		if iters%*check == 0 {
			if err := mpi.Allreduce(c, []float64{local}, diff, mpi.Max); err != nil {
				fail(w, err)
			}
			if diff[0] < *tol {
				break
			}
		}
	}
	// Gather the solution at rank 0 in grid order for an exact checksum.
	counts := make([]int, size)
	displs := make([]int, size)
	for r := 0; r < size; r++ {
		counts[r] = (r+1)**n/size - r**n/size
		displs[r] = r * *n / size
	}
	var all []float64
	if rank == 0 {
		all = make([]float64, *n)
	}
	if err := mpi.Gatherv(c, u[1:m+1], all, counts, displs, 0); err != nil {
		fail(w, err)
	}
	if rank == 0 {
		sum := 0.0
		for i, v := range all {
			sum += v * float64(i+1)
		}
		fmt.Printf("jacobi: %d points on %d ranks, %d iterations\n", *n, size, iters)
		fmt.Printf("result: jacobi n=%d iters=%d residual=%.6e checksum=%.15e\n", *n, iters, diff[0], sum)
	}
	w.Finalize()
}

func fail(w *mpi.World, err error) {
	fmt.Fprintf(os.Stderr, "jacobi: rank %d: %v\n", w.Rank(), err)
	w.Abort(1)
}
