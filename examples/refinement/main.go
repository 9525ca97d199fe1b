// Command refinement is seed 002 appendix A.5.2 (iterative refinement) made
// concrete: a Jacobi solver for the 1-D Poisson problem -u” = f on (0,1),
// u(0)=0, u(1)=1, the grid split into one block per rank, that survives
// process failures with ULFM (revoke, agree, shrink) and still prints the
// same answer.
//
// Every iteration exchanges halo values with the neighbours (Sendrecv) and
// ends with an Allreduce (Max) of the update's max-norm, the residual. Every
// -ckpt iterations, and at convergence, the ranks gather the whole solution
// (Allgatherv) and agree (Agree) that every one of them has it: that
// checkpoint is then committed at every rank.
//
// When an operation raises ErrProcFailed or ErrRevoked, the rank revokes the
// communicator (so every other rank leaves its pending operation with
// ErrRevoked), all survivors agree that the epoch failed, shrink the
// communicator, split the grid again over the survivors, roll back to the
// last committed checkpoint and iterate again (at least once) to
// convergence. The arithmetic of each grid point does not depend on the
// number of ranks and the max-norm is exact, so the result line is
// bit-for-bit the same with or without failures, whoever dies and whenever:
//
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject kill:rank=2,at=500ms ./examples/refinement
//	go run ./cmd/ftmpirun -n 4 ./examples/refinement
//
// The lowest surviving rank reports every recovery and prints the result.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// checkpoint is a state every rank holds in full: the solution after iter
// iterations and the residual of that iteration.
type checkpoint struct {
	iter      int
	u         []float64 // the n interior points
	residual  float64
	converged bool
}

type params struct {
	n        int
	tol      float64
	maxIter  int
	ckpt     int
	delay    time.Duration
	progress bool      // print a line at every committed checkpoint
	f        []float64 // right-hand side, h*h*f at each interior point; every rank regenerates it

	// afterIter, if set, is called by every rank after computing iteration
	// iter, before its Allreduce (tests inject failures there).
	afterIter func(w *mpi.World, iter int)
}

func main() {
	var p params
	flag.IntVar(&p.n, "n", 32, "interior grid points")
	flag.Float64Var(&p.tol, "tol", 1e-8, "stop when the max-norm of an update is below tol")
	flag.IntVar(&p.maxIter, "maxiter", 100000, "iteration limit")
	flag.IntVar(&p.ckpt, "ckpt", 200, "iterations between committed checkpoints")
	flag.DurationVar(&p.delay, "delay", 500*time.Microsecond, "pause in every iteration (so that an injected failure lands mid-run)")
	flag.BoolVar(&p.progress, "progress", false, "the lowest rank prints a line at every committed checkpoint (for tests: ftmpirun --inject 'kill:rank=1,on=iteration 200 committed')")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "refinement:", err)
		os.Exit(1)
	}
	if _, err := refine(w, &p, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "refinement: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	w.Finalize()
}

// refine solves the problem on w's CommWorld, surviving failures, and
// returns the result line at the lowest surviving rank ("" elsewhere).
// Progress and recoveries are reported to out by that rank.
func refine(w *mpi.World, p *params, out io.Writer) (string, error) {
	if p.ckpt < 1 {
		p.ckpt = 1
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	if p.n < c.Size() {
		return "", fmt.Errorf("%d grid points cannot be split over %d ranks", p.n, c.Size())
	}
	h := 1.0 / float64(p.n+1)
	p.f = make([]float64, p.n)
	for i := range p.f {
		x := float64(i+1) * h
		p.f[i] = h * h * math.Sin(math.Pi*x)
	}
	if c.Rank() == 0 {
		fmt.Fprintf(out, "refinement: Jacobi on %d points, %d ranks, checkpoint every %d iterations\n", p.n, c.Size(), p.ckpt)
	}

	ck := checkpoint{u: make([]float64, p.n), residual: math.Inf(1)}
	recoveries := 0
	for !ck.converged {
		ok, cand, at, err := epoch(c, ck, p)
		// About to commit (or to leave): be sure everybody got the same
		// information. The flag is the AND over the live ranks, the same at
		// every survivor, and so is an ErrProcFailed from Agree.
		all, aerr := c.Agree(ok)
		if all {
			ck = cand // every live rank holds the whole gathered solution
		}
		if all && aerr == nil {
			if p.progress && c.Rank() == 0 && !ck.converged {
				fmt.Fprintf(out, "refinement: checkpoint at iteration %d committed on %d ranks\n", ck.iter, c.Size())
			}
			continue
		}
		// Join the shrink with the communicator revoked (seed A.5.2).
		c.Revoke()
		nc, serr := c.Shrink()
		if serr != nil {
			return "", fmt.Errorf("shrink: %w", serr)
		}
		recoveries++
		if nc.Rank() == 0 {
			report(out, c, nc, err, aerr, at, ck, recoveries)
		}
		if c != w.CommWorld() {
			c.Free()
		}
		c = nc
	}
	if c.Rank() != 0 {
		return "", nil
	}
	sum := 0.0
	for i, v := range ck.u {
		sum += v * float64(i+1)
	}
	fmt.Fprintf(out, "refinement: converged on %d ranks, %d recovery(ies)\n", c.Size(), recoveries)
	line := fmt.Sprintf("result: refinement n=%d iters=%d residual=%.6e checksum=%.15e", p.n, ck.iter, ck.residual, sum)
	fmt.Fprintln(out, line)
	return line, nil
}

// epoch runs Jacobi iterations on c from checkpoint ck, with the grid split
// evenly over c's ranks, up to the next checkpoint iteration or
// convergence, and gathers the whole solution there. ok reports whether
// every operation succeeded here; at is the iteration reached. After a
// failure it revokes c so that no other rank waits on this one.
func epoch(c *mpi.Comm, ck checkpoint, p *params) (ok bool, cand checkpoint, at int, err error) {
	rank, size := c.Rank(), c.Size()
	lo, hi := rank*p.n/size, (rank+1)*p.n/size
	m := hi - lo
	// u[0] and u[m+1] are halo cells: points lo-1 and hi (boundaries outside).
	u := make([]float64, m+2)
	next := make([]float64, m+2)
	if lo > 0 {
		u[0] = ck.u[lo-1]
	}
	copy(u[1:m+1], ck.u[lo:hi])
	if hi < p.n {
		u[m+1] = ck.u[hi]
	} else {
		u[m+1] = 1 // boundary u(1) = 1
	}
	next[0], next[m+1] = u[0], u[m+1]
	left, right := rank-1, rank+1
	if left < 0 {
		left = mpi.ProcNull
	}
	if right >= size {
		right = mpi.ProcNull
	}

	iter := ck.iter
	fail := func(e error) (bool, checkpoint, int, error) {
		c.Revoke()
		return false, checkpoint{}, iter, e
	}
	res := []float64{math.Inf(1)}
	for {
		if iter > ck.iter {
			// Halo exchange (the first iteration's halos come from ck).
			if _, err := mpi.Sendrecv(c, u[1:2], left, 0, u[m+1:m+2], right, 0); err != nil {
				return fail(err)
			}
			if _, err := mpi.Sendrecv(c, u[m:m+1], right, 1, u[0:1], left, 1); err != nil {
				return fail(err)
			}
		}
		local := 0.0
		for i := 1; i <= m; i++ {
			next[i] = 0.5 * (u[i-1] + u[i+1] + p.f[lo+i-1])
			local = math.Max(local, math.Abs(next[i]-u[i]))
		}
		u, next = next, u
		iter++
		if p.delay > 0 {
			time.Sleep(p.delay)
		}
		if p.afterIter != nil {
			p.afterIter(c.World(), iter)
		}
		if err := mpi.Allreduce(c, []float64{local}, res, mpi.Max); err != nil {
			return fail(err)
		}
		if res[0] < p.tol || iter >= p.maxIter || iter%p.ckpt == 0 {
			break
		}
	}
	counts := make([]int, size)
	displs := make([]int, size)
	for r := range size {
		displs[r] = r * p.n / size
		counts[r] = (r+1)*p.n/size - displs[r]
	}
	full := make([]float64, p.n)
	if err := mpi.Allgatherv(c, u[1:m+1], full, counts, displs); err != nil {
		return fail(err)
	}
	return true, checkpoint{iter: iter, u: full, residual: res[0], converged: res[0] < p.tol || iter >= p.maxIter}, iter, nil
}

// report tells what failed and how the job recovered (lowest survivor only).
func report(out io.Writer, old, nc *mpi.Comm, err, aerr error, at int, ck checkpoint, k int) {
	was, now := old.Group().WorldRanks(), nc.Group().WorldRanks()
	var lost []int
	for _, r := range was {
		if !slices.Contains(now, r) {
			lost = append(lost, r)
		}
	}
	seen := "its own operations succeeded, another rank's did not"
	switch {
	case errors.Is(err, mpi.ErrProcFailed):
		seen = "saw MPI_ERR_PROC_FAILED"
	case errors.Is(err, mpi.ErrRevoked):
		seen = "saw MPI_ERR_REVOKED"
	case err != nil:
		seen = "saw " + err.Error()
	case aerr != nil:
		seen = "learned of the failure in the agreement"
	}
	fmt.Fprintf(out, "refinement: recovery %d: world rank(s) %v failed; at iteration %d world rank %d %s; revoke, agree, shrink: %d -> %d ranks; back to the checkpoint of iteration %d\n",
		k, lost, at, was[old.Rank()], seen, len(was), len(now), ck.iter)
}
