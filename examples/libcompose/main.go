// Command libcompose is seed 002 chapter 6.2 and appendix B (library
// composition) made concrete: an application that uses two fault-tolerant
// libraries, each on its own duplicate of the application's communicator,
// and survives process failures with the "three R's".
//
//   - liba: dot product, sum and gather of a block-distributed vector
//     (collectives);
//   - libb: a three-point smoother that exchanges halo values with the
//     neighbouring ranks (point-to-point).
//
// Every step smooths the vector with libB, then updates it with libA's dot
// product and sum; every -ckpt steps the application gathers the whole
// vector with libA and agrees that every rank has it (a checkpoint). All
// arithmetic is exact modulo a prime, and the initial vector is a formula
// every rank can evaluate, so the answer does not depend on the number of
// ranks.
//
// When a library sees ErrProcFailed or ErrRevoked it revokes its own
// communicator (revoke), records what happened in the application's status
// object and returns a *ftlib.Failure naming the library, the operation,
// the step and the failed ranks it knew of (return); it does not repair
// itself. The application revokes the other library and its own
// communicator so that no rank stays blocked, agrees on the failure,
// shrinks its communicator, creates both libraries again on fresh
// duplicates of the shrunk communicator (repair), and resumes from the last
// agreed checkpoint. The result line is the same with and without failures:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/libcompose
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject kill:rank=2,at=400ms ./examples/libcompose
//
// The lowest surviving rank prints the result line on stdout; failures and
// recoveries are reported on stderr.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/examples/libcompose/ftlib"
	"github.com/ftmpi/ftmpi/examples/libcompose/liba"
	"github.com/ftmpi/ftmpi/examples/libcompose/libb"
	"github.com/ftmpi/ftmpi/mpi"
)

type params struct {
	n     int           // vector length
	steps int           // steps to run
	ckpt  int           // steps between checkpoints
	delay time.Duration // pause in every step

	progress bool // print a line at every agreed checkpoint

	// hook, if set, is called by every rank before each library call of
	// each step, phase being "smooth", "dot", "sum" or "gather" (tests
	// inject failures there).
	hook func(w *mpi.World, step int, phase string)
}

func main() {
	var p params
	flag.IntVar(&p.n, "n", 64, "vector length")
	flag.IntVar(&p.steps, "steps", 60, "steps")
	flag.IntVar(&p.ckpt, "ckpt", 10, "steps between agreed checkpoints")
	flag.DurationVar(&p.delay, "delay", 10*time.Millisecond, "pause in every step (so that an injected failure lands mid-run)")
	flag.BoolVar(&p.progress, "progress", false, "the lowest rank prints a line at every agreed checkpoint (for tests: ftmpirun --inject 'kill:rank=2,on=step 20 agreed')")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "libcompose:", err)
		os.Exit(1)
	}
	if _, err := run(w, &p, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "libcompose: world rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	w.Finalize()
}

// checkpoint is the last consistent state: the whole vector after step,
// held by every rank.
type checkpoint struct {
	step int
	x    []int64
}

// libraries are the application's two library instances and their status
// objects (kept by the application, seed 002 6.2.2).
type libraries struct {
	a      *liba.Lib
	b      *libb.Lib
	stA    *ftlib.Status
	stB    *ftlib.Status
	broken bool // revoked: never freed (messages may still be in flight on them)
}

// newLibraries initialises both libraries on duplicates of app.
func newLibraries(app *mpi.Comm, n int) (*libraries, error) {
	a, err := liba.New(app, n)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", liba.Name, err)
	}
	b, err := libb.New(app)
	if err != nil {
		a.Revoke()
		return nil, fmt.Errorf("creating %s: %w", libb.Name, err)
	}
	return &libraries{a: a, b: b, stA: liba.NewStatus(), stB: libb.NewStatus()}, nil
}

// revoke revokes both libraries' communicators.
func (l *libraries) revoke() {
	l.a.Revoke()
	l.b.Revoke()
	l.broken = true
}

// initial is element i of the initial vector (every rank can compute it).
func initial(i int) int64 { return int64((i*i*31 + 7*i + 5) % 1000) }

// run computes the answer on w's CommWorld, surviving failures, and returns
// the result line at the lowest surviving rank ("" elsewhere). out gets
// the result, log the failures and recoveries.
func run(w *mpi.World, p *params, out, log io.Writer) (string, error) {
	if p.ckpt < 1 {
		p.ckpt = 1
	}
	world := w.CommWorld()
	world.SetErrhandler(mpi.ErrorsReturn)
	if p.n < world.Size() {
		return "", fmt.Errorf("a vector of %d elements cannot be split over %d ranks", p.n, world.Size())
	}
	// The application's communicator: a duplicate, never CommWorld itself
	// (seed 002 6.2.1).
	app, err := world.Dup()
	for {
		// Uniform: a failure during the Dup may leave it done at some
		// ranks only. Then shrink the world and duplicate again.
		ok, aerr := world.Agree(err == nil)
		if ok && aerr == nil {
			break
		}
		if err == nil {
			app.Free()
		}
		world.Revoke()
		nw, serr := world.Shrink()
		if serr != nil {
			return "", fmt.Errorf("shrinking the world after a failure during start-up: %w", serr)
		}
		if nw.Rank() == 0 {
			fmt.Fprintf(log, "libcompose: a failure during start-up; continuing on %d ranks\n", nw.Size())
		}
		world = nw
		app, err = world.Dup()
	}
	if app.Rank() == 0 {
		fmt.Fprintf(out, "libcompose: %d steps on a vector of %d, %d ranks, checkpoint every %d steps\n", p.steps, p.n, app.Size(), p.ckpt)
	}
	ck := checkpoint{x: make([]int64, p.n)}
	for i := range ck.x {
		ck.x[i] = initial(i)
	}
	var libs *libraries
	recoveries := 0
	for ck.step < p.steps || libs == nil {
		var cand checkpoint
		var err error
		creating := libs == nil
		if creating {
			libs, err = newLibraries(app, p.n)
		} else {
			cand, err = epoch(w, app, libs, ck, p)
			if err != nil {
				fmt.Fprintf(log, "libcompose: world rank %d: %v; back in the application\n", w.Rank(), err)
			}
		}
		// Uniform decision: did every live rank succeed? (After creating
		// the libraries too: nobody may use them unless every rank has them.)
		all, aerr := app.Agree(err == nil)
		if all && !creating {
			ck = cand // every live rank holds the whole gathered vector
		}
		if all && aerr == nil {
			if p.progress && !creating && app.Rank() == 0 && ck.step < p.steps {
				fmt.Fprintf(out, "libcompose: checkpoint at step %d agreed\n", ck.step)
			}
			continue
		}
		// Reconfigure: revoke everything, agree (above), shrink.
		if libs != nil {
			libs.revoke()
		}
		libs = nil
		app.Revoke()
		nc, serr := app.Shrink()
		if serr != nil {
			return "", fmt.Errorf("shrink: %w", serr)
		}
		recoveries++
		if nc.Rank() == 0 {
			report(log, app, nc, err, aerr, ck, recoveries)
		}
		// Recover on the next turn: new libraries on duplicates of nc,
		// from checkpoint ck; then resume.
		app = nc
	}
	libs.a.Free()
	libs.b.Free()
	if app.Rank() != 0 {
		return "", nil
	}
	var sum, weighted int64
	for i, v := range ck.x {
		sum = (sum + v) % ftlib.Modulus
		weighted = (weighted + v*int64(i+1)) % ftlib.Modulus
	}
	fmt.Fprintf(log, "libcompose: finished on %d ranks after %d recovery(ies)\n", app.Size(), recoveries)
	line := fmt.Sprintf("result: libcompose n=%d steps=%d sum=%d weighted=%d x0=%d xlast=%d",
		p.n, ck.step, sum, weighted, ck.x[0], ck.x[p.n-1])
	fmt.Fprintln(out, line)
	return line, nil
}

// epoch runs steps from checkpoint ck, the vector split in blocks over
// app's ranks, up to the next checkpoint step, and gathers the vector
// there. A library failure comes back as a *ftlib.Failure; the application
// then revokes the other library, so that no rank stays blocked in it.
func epoch(w *mpi.World, app *mpi.Comm, libs *libraries, ck checkpoint, p *params) (checkpoint, error) {
	lo, hi := ftlib.Block(p.n, app.Size(), app.Rank())
	x := slices.Clone(ck.x[lo:hi])
	wts := make([]int64, hi-lo)
	coef := make([]int64, hi-lo)
	for i := range wts {
		wts[i] = int64((lo+i)%5 + 1)
		coef[i] = int64((lo+i)%7 + 1)
	}
	hook := func(step int, phase string) {
		if p.hook != nil {
			p.hook(w, step, phase)
		}
	}
	fail := func(err error) (checkpoint, error) {
		libs.revoke()
		return checkpoint{}, err
	}
	step := ck.step
	for {
		step++
		hook(step, "smooth")
		y, err := libs.b.Smooth(libs.stB, step, x)
		if err != nil {
			return fail(err)
		}
		hook(step, "dot")
		d, err := libs.a.Dot(libs.stA, step, y, wts)
		if err != nil {
			return fail(err)
		}
		hook(step, "sum")
		s, err := libs.a.Sum(libs.stA, step, x)
		if err != nil {
			return fail(err)
		}
		for i := range x {
			x[i] = (y[i] + d*coef[i] + s) % ftlib.Modulus
		}
		if p.delay > 0 {
			time.Sleep(p.delay)
		}
		if step%p.ckpt == 0 || step >= p.steps {
			break
		}
	}
	hook(step, "gather")
	full, err := libs.a.Gather(libs.stA, step, x)
	if err != nil {
		return fail(err)
	}
	return checkpoint{step: step, x: full}, nil
}

// report tells what failed and how the job recovered (lowest survivor
// only).
func report(log io.Writer, old, nc *mpi.Comm, err, aerr error, ck checkpoint, k int) {
	was, now := old.Group().WorldRanks(), nc.Group().WorldRanks()
	var lost []int
	for _, r := range was {
		if !slices.Contains(now, r) {
			lost = append(lost, r)
		}
	}
	seen := "its own operations succeeded; the agreement reported the failure"
	var f *ftlib.Failure
	switch {
	case errors.As(err, &f):
		seen = fmt.Sprintf("%s.%s of step %d returned %s", f.Lib, f.Op, f.Step, ftlib.Class(f.Err))
	case err != nil:
		seen = "saw " + err.Error()
	case aerr != nil:
		seen = "learned of the failure in the agreement (" + ftlib.Class(aerr) + ")"
	}
	fmt.Fprintf(log, "libcompose: recovery %d: world rank(s) %v failed; here (world rank %d) %s; "+
		"reconfigure: revoke, agree, shrink %d -> %d ranks; recover: %s and %s re-created on duplicates of the shrunk communicator, "+
		"vector of step %d (last agreed checkpoint) redistributed; resume at step %d\n",
		k, lost, was[old.Rank()], seen, len(was), len(now), liba.Name, libb.Name, ck.step, ck.step+1)
}
