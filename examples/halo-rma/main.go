// Command halo-rma solves the 2-D heat equation (Jacobi iteration of
// Laplace's equation) on an nx x ny grid split into blocks of rows over a
// 1-D Cartesian grid of ranks (DimsCreate, CartCreate, CartShift). The
// ghost rows are written with one-sided Puts into the neighbours' windows
// between fences (MPI_Put, MPI_Win_fence): each rank's window holds only
// its four ghost rows (above and below, two parities, so that a fast
// neighbour's Puts of the next iteration never land in the rows being read
// in this one). The top boundary is held at 1, the others at 0.
//
// Every grid point is computed with the same arithmetic whatever the
// number of ranks, and rank 0 computes the checksum over the gathered grid
// in grid order, so the result line is the same for any number of ranks:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/halo-rma
//	go run ./examples/halo-rma
//
// It survives process failures (ULFM, seed 002): every -ckpt iterations
// each rank keeps a copy of its rows and of its right neighbour's (in
// memory). A failure is reported by the next fence (MPI_Win_fence raises
// MPI_ERR_PROC_FAILED at the survivors that see it, or MPI_ERR_REVOKED at
// those released by a revocation); the survivors revoke the window and the
// communicator, shrink, re-create the Cartesian grid and the window over
// the survivors, agree on the newest checkpoint every survivor holds,
// rebuild the grid of that iteration from their copies (the lost rows
// from the left neighbour's copy), split it over the survivors and go on;
// the result line is that of a failure-free run. With -kill R@I world rank
// R kills itself (SIGKILL) in iteration I, after its Puts and before the
// fence (in the middle of an epoch; iteration ITERS+1 is the result's
// gather, before R contributes); several kills are separated by commas. A kill injected by the launcher works too:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure continue ./examples/halo-rma -kill 2@150
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject 'kill:rank=2,on=iteration 200 committed' ./examples/halo-rma -progress
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/ftmpi/ftmpi/mpi"
)

// params are the command-line parameters (the same at every rank).
type params struct {
	nx, ny, iters, ckpt int
	progress            bool
	kills               map[int]int // world rank -> iteration in which it kills itself
	out                 io.Writer   // rank 0's lines
}

// parseKills parses "R@I,R@I".
func parseKills(s string) (map[int]int, error) {
	out := map[int]int{}
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		r, i, ok := strings.Cut(part, "@")
		rank, err1 := strconv.Atoi(r)
		iter, err2 := strconv.Atoi(i)
		if !ok || err1 != nil || err2 != nil || rank < 0 || iter < 1 {
			return nil, fmt.Errorf("-kill %q: want RANK@ITERATION (iteration >= 1), comma-separated", part)
		}
		out[rank] = iter
	}
	return out, nil
}

func main() {
	p := params{out: os.Stdout}
	flag.IntVar(&p.nx, "nx", 64, "grid columns")
	flag.IntVar(&p.ny, "ny", 48, "grid rows (at least the number of ranks)")
	flag.IntVar(&p.iters, "iters", 600, "Jacobi iterations")
	flag.IntVar(&p.ckpt, "ckpt", 50, "checkpoint every this many iterations")
	flag.BoolVar(&p.progress, "progress", false, "rank 0 prints a line at every committed checkpoint")
	kill := flag.String("kill", "", "RANK@ITERATION[,...]: world rank RANK kills itself (SIGKILL) in that iteration")
	flag.Parse()
	var err error
	if p.kills, err = parseKills(*kill); err != nil {
		fmt.Fprintln(os.Stderr, "halo-rma:", err)
		os.Exit(2)
	}
	if p.nx < 1 || p.ny < 1 || p.iters < 0 || p.ckpt < 1 {
		fmt.Fprintln(os.Stderr, "halo-rma: -nx, -ny and -ckpt must be positive, -iters not negative")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "halo-rma:", err)
		os.Exit(1)
	}
	if _, err := run(w, p); err != nil {
		fmt.Fprintf(os.Stderr, "halo-rma: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	w.Finalize()
}
