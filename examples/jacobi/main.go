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
//
// With -ft it survives process failures by replacement (seed 002): every
// -ckpt iterations each rank keeps its block and a copy of its right
// neighbour's; when a rank dies the survivors revoke, shrink, spawn a
// replacement, merge, split back to the old ranks, the replacement gets the
// lost block from its left neighbour's copy, everybody rolls back to that
// checkpoint, and the run ends with the same result line as without
// failures (ft.go):
//
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject kill:rank=2,at=500ms ./examples/jacobi -ft
package main

import (
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

// params are the command-line parameters (the same at every rank and at a
// replacement, which gets the job's arguments).
type params struct {
	n, maxIter, check, ckpt int
	tol                     float64
	ft, progress            bool
	replace                 bool // with ft: repair by Comm.Replace (spares, else spawn) instead of the spawn recipe
	killAtGather            int  // with ft: this world rank kills itself before the result's gather (tests; -1 none)
}

// solver is one rank's part of the computation.
type solver struct {
	p          params
	rank, size int
	lo, m      int
	h          float64
	u, next, f []float64 // u[0] and u[m+1] are halo cells
	iters      int
	diff       float64
}

func newSolver(p params, rank, size int) *solver {
	s := &solver{p: p, rank: rank, size: size, h: 1.0 / float64(p.n+1), diff: math.Inf(1)}
	s.lo = rank * p.n / size
	s.m = (rank+1)*p.n/size - s.lo
	s.u = make([]float64, s.m+2)
	s.next = make([]float64, s.m+2)
	s.f = make([]float64, s.m+2)
	for i := 1; i <= s.m; i++ {
		x := float64(s.lo+i) * s.h
		s.f[i] = math.Sin(math.Pi * x)
	}
	if rank == size-1 {
		s.u[s.m+1], s.next[s.m+1] = 1, 1 // boundary u(1) = 1
	}
	return s
}

// step does one iteration (and, every check iterations, the convergence
// test); done reports convergence.
func (s *solver) step(c *mpi.Comm) (done bool, err error) {
	left, right := s.rank-1, s.rank+1
	if left < 0 {
		left = mpi.ProcNull
	}
	if right >= s.size {
		right = mpi.ProcNull
	}
	m := s.m
	// Halo exchange: send my first point left, receive the right halo; and back.
	if _, err := mpi.Sendrecv(c, s.u[1:2], left, 0, s.u[m+1:m+2], right, 0); err != nil {
		return false, err
	}
	if _, err := mpi.Sendrecv(c, s.u[m:m+1], right, 1, s.u[0:1], left, 1); err != nil {
		return false, err
	}
	local := 0.0
	for i := 1; i <= m; i++ {
		s.next[i] = 0.5 * (s.u[i-1] + s.u[i+1] + s.h*s.h*s.f[i])
		local = math.Max(local, math.Abs(s.next[i]-s.u[i]))
	}
	s.u, s.next = s.next, s.u
	s.iters++
	if s.iters%s.p.check == 0 {
		diff := []float64{0}
		if err := mpi.Allreduce(c, []float64{local}, diff, mpi.Max); err != nil {
			return false, err
		}
		s.diff = diff[0]
		if s.diff < s.p.tol {
			return true, nil
		}
	}
	return s.iters >= s.p.maxIter, nil
}

// result gathers the solution at rank 0 in grid order and prints the
// result line there.
func (s *solver) result(c *mpi.Comm) error {
	counts := make([]int, s.size)
	displs := make([]int, s.size)
	for r := 0; r < s.size; r++ {
		counts[r] = (r+1)*s.p.n/s.size - r*s.p.n/s.size
		displs[r] = r * s.p.n / s.size
	}
	var all []float64
	if s.rank == 0 {
		all = make([]float64, s.p.n)
	}
	if err := mpi.Gatherv(c, s.u[1:s.m+1], all, counts, displs, 0); err != nil {
		return err
	}
	if s.rank == 0 {
		sum := 0.0
		for i, v := range all {
			sum += v * float64(i+1)
		}
		fmt.Printf("jacobi: %d points on %d ranks, %d iterations\n", s.p.n, s.size, s.iters)
		fmt.Printf("result: jacobi n=%d iters=%d residual=%.6e checksum=%.15e\n", s.p.n, s.iters, s.diff, sum)
	}
	return nil
}

func main() {
	var p params
	flag.IntVar(&p.n, "n", 128, "interior grid points")
	flag.Float64Var(&p.tol, "tol", 1e-8, "stop when the max-norm of an update is below tol")
	flag.IntVar(&p.maxIter, "maxiter", 200000, "iteration limit")
	flag.IntVar(&p.check, "check", 100, "iterations between convergence checks")
	flag.BoolVar(&p.ft, "ft", false, "survive process failures by replacement (run with ftmpirun --on-failure continue)")
	flag.IntVar(&p.ckpt, "ckpt", 1000, "with -ft: iterations between in-memory checkpoints (a multiple of -check)")
	flag.BoolVar(&p.replace, "replace", false, "with -ft: repair with one call, Comm.Replace (MPIX_Comm_replace): spare processes (ftmpirun --spares K), spawned ones when none are left")
	flag.IntVar(&p.killAtGather, "kill-at-gather", -1, "with -ft: this rank of the first processes kills itself (SIGKILL) before it contributes to the result's gather (a point of the run for tests)")
	flag.BoolVar(&p.progress, "progress", false, "with -ft: rank 0 prints a line at every checkpoint (points of the run a test can inject a fault at: ftmpirun --inject 'kill:rank=1,on=iteration 2000 committed')")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jacobi:", err)
		os.Exit(1)
	}
	if p.ft {
		if p.ckpt <= 0 || p.ckpt%p.check != 0 {
			fmt.Fprintf(os.Stderr, "jacobi: -ckpt %d must be a positive multiple of -check %d\n", p.ckpt, p.check)
			os.Exit(2)
		}
		if err := runFT(w, p); err != nil {
			fmt.Fprintf(os.Stderr, "jacobi: rank %d: %v\n", w.Rank(), err)
			w.Abort(1)
		}
		w.Finalize()
		return
	}
	c := w.CommWorld()
	if p.n < c.Size() {
		if c.Rank() == 0 {
			fmt.Fprintf(os.Stderr, "jacobi: %d grid points cannot be split over %d ranks\n", p.n, c.Size())
		}
		w.Abort(2)
	}
	s := newSolver(p, c.Rank(), c.Size())
	for {
		done, err := s.step(c)
		if err != nil {
			fail(w, err)
		}
		if done {
			break
		}
	}
	if err := s.result(c); err != nil {
		fail(w, err)
	}
	w.Finalize()
}

func fail(w *mpi.World, err error) {
	fmt.Fprintf(os.Stderr, "jacobi: rank %d: %v\n", w.Rank(), err)
	w.Abort(1)
}
