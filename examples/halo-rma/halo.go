package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/ftmpi/ftmpi/mpi"
)

// block is one rank's rows [r0, r0+m) of the grid, row-major.
type block struct {
	r0, m int
	u, nu []float64
}

// rows returns the first global row and the number of rows of rank r of n.
func rows(ny, r, n int) (r0, m int) {
	r0 = r * ny / n
	return r0, (r+1)*ny/n - r0
}

// ckpt is a committed checkpoint: the iteration, this rank's rows and a
// copy of its right neighbour's (in the ring of ranks), as global row
// ranges, so a checkpoint outlives the layout it was taken in.
type ckpt struct {
	iter           int
	own, right     []float64
	ownR0, rightR0 int
	valid          bool
}

// state is one rank's run: the communicator with its Cartesian topology,
// the window of ghost rows, the block, the checkpoints.
type state struct {
	w         *mpi.World
	p         params
	c         *mpi.Comm // the communicator of the live ranks: revoked, shrunk, agreed on
	cart      *mpi.Comm // c with its Cartesian topology (same ranks): the window's
	win       *mpi.Win
	ghost     []float64 // the window memory: top[0], top[1], bottom[0], bottom[1]
	up, down  int       // Cartesian neighbours (mpi.ProcNull at the boundary)
	b         block
	iter      int
	cur, prev ckpt
	repairs   int
	line      string
}

func isFailure(err error) bool {
	return errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked)
}

// run computes the grid and returns rank 0's result line ("" elsewhere).
func run(w *mpi.World, p params) (string, error) {
	c := w.CommWorld()
	if err := c.SetErrhandler(mpi.ErrorsReturn); err != nil {
		return "", err
	}
	if p.ny < c.Size() {
		return "", fmt.Errorf("%d grid rows cannot be split over %d ranks", p.ny, c.Size())
	}
	st := &state{w: w, p: p, c: c}
	// The initial grid (zeros) is checkpoint 0, held by every rank
	// without communication.
	err := st.layout(0, make([]float64, p.nx*p.ny), nil)
	for {
		if err == nil {
			if err = st.iterate(); err == nil {
				// Free completes despite failures (seed 003 17.11).
				st.win.Free()
				st.cart.Free()
				return st.line, nil
			}
		}
		if !isFailure(err) {
			return "", err
		}
		err = st.repair()
	}
}

// layout makes the Cartesian grid and the window over st.c and takes this
// rank's rows of grid (the whole grid at iteration iter), which also
// becomes the committed checkpoint. It is collective over st.c, and every
// live rank takes the new layout or none does (an agreement): ok is false
// if some rank could not make it (stepErr, or an error here), and then
// nothing changed.
func (st *state) layout(iter int, grid []float64, stepErr error) error {
	var cart *mpi.Comm
	var win *mpi.Win
	var up, down int
	ghost := make([]float64, 4*st.p.nx)
	err := stepErr
	if err == nil {
		cart, win, up, down, err = st.grid(ghost)
	}
	if err != nil {
		// Release the ranks still in a collective of the layout.
		st.c.Revoke()
	}
	ok, aerr := st.c.Agree(err == nil) // also on a revoked communicator
	if err == nil && (aerr != nil || !ok) {
		err = fmt.Errorf("new layout abandoned: %w", mpi.ErrProcFailed)
	}
	if err != nil {
		if win != nil {
			win.Revoke()
			win.Free()
		}
		if cart != nil {
			cart.Free()
		}
		return err
	}
	if st.cart != nil {
		st.cart.Free()
	}
	st.cart, st.win, st.ghost, st.up, st.down = cart, win, ghost, up, down
	n, nx, me := st.c.Size(), st.p.nx, st.c.Rank()
	r0, m := rows(st.p.ny, me, n)
	st.b = block{r0: r0, m: m, u: append([]float64(nil), grid[r0*nx:(r0+m)*nx]...), nu: make([]float64, m*nx)}
	st.iter = iter
	rr0, rm := rows(st.p.ny, (me+1)%n, n)
	st.cur = ckpt{iter: iter, valid: true, ownR0: r0, own: append([]float64(nil), st.b.u...),
		rightR0: rr0, right: append([]float64(nil), grid[rr0*nx:(rr0+rm)*nx]...)}
	st.prev = ckpt{}
	return nil
}

// grid makes the 1-D Cartesian grid of st.c's ranks (same order) and the
// window over ghost on it, with its first fence.
func (st *state) grid(ghost []float64) (cart *mpi.Comm, win *mpi.Win, up, down int, err error) {
	dims, err := mpi.DimsCreate(st.c.Size(), []int{0})
	if err != nil {
		return nil, nil, 0, 0, err
	}
	if cart, err = st.c.CartCreate(dims, []bool{false}, false); err != nil {
		return nil, nil, 0, 0, err
	}
	cart.SetErrhandler(mpi.ErrorsReturn)
	if up, down, err = cart.CartShift(0, 1); err != nil {
		return cart, nil, 0, 0, err
	}
	if win, err = mpi.WinCreate(cart, ghost); err != nil {
		return cart, nil, 0, 0, err
	}
	// MPI_Win_fence opens the first access and exposure epoch.
	return cart, win, up, down, win.Fence()
}

// iterate runs the iterations left, checkpointing, and ends with the
// result line once every rank agrees that it was computed. Every rank
// leaves it through that one agreement, whether it finished or failed
// (after revoking the window and the communicator, which releases the
// ranks still iterating): agreements match by their order on a
// communicator, so a rank that went from a failed gather straight to
// repair's Shrink while the others agreed on the result would meet their
// Agree with its Shrink (MPI_ERR_OTHER, "mismatched agreement", at all of
// them: TestHaloRMAKillInResultGather).
func (st *state) iterate() error {
	line, err := st.compute()
	if err != nil {
		if st.win != nil {
			st.win.Revoke()
		}
		st.c.Revoke()
	}
	// A failure during the gather must not leave rank 0 printing while
	// the others repair: agree first (uniformly).
	ok, aerr := st.c.Agree(err == nil)
	if err == nil && (aerr != nil || !ok) {
		err = fmt.Errorf("result not agreed: %w", mpi.ErrProcFailed)
		if aerr != nil && !isFailure(aerr) {
			err = aerr
		}
	}
	if err != nil {
		return err
	}
	st.line = line
	if line != "" {
		fmt.Fprint(st.p.out, line)
	}
	return nil
}

// compute runs the iterations left, checkpointing, and gathers the result
// line at rank 0 (no agreement: iterate's).
func (st *state) compute() (string, error) {
	nx := st.p.nx
	for st.iter < st.p.iters {
		st.iter++
		par := st.iter % 2
		b := &st.b
		// My first row is the bottom ghost of the rank above, my last
		// row the top ghost of the rank below.
		if st.up != mpi.ProcNull {
			if err := mpi.Put(st.win, b.u[:nx], st.up, (2+par)*nx); err != nil {
				return "", err
			}
		}
		if st.down != mpi.ProcNull {
			if err := mpi.Put(st.win, b.u[(b.m-1)*nx:], st.down, par*nx); err != nil {
				return "", err
			}
		}
		if at, ok := st.p.kills[st.w.Rank()]; ok && at == st.iter {
			st.w.Kill() // SIGKILL in the middle of the epoch
		}
		if err := st.win.Fence(); err != nil {
			return "", err
		}
		st.step(par)
		if st.iter%st.p.ckpt == 0 {
			if err := st.checkpoint(); err != nil {
				return "", err
			}
			if st.p.progress && st.c.Rank() == 0 {
				fmt.Fprintf(st.p.out, "halo-rma: checkpoint at iteration %d committed after %d repairs\n", st.iter, st.repairs)
			}
		}
	}
	if at, ok := st.p.kills[st.w.Rank()]; ok && at == st.p.iters+1 {
		st.w.Kill() // iteration iters+1: in the result's gather, before contributing
	}
	return st.result()
}

// step is one Jacobi iteration of the block, with the ghost rows of
// parity par (or the boundary values).
func (st *state) step(par int) {
	nx := st.p.nx
	b := &st.b
	hot, cold := 1.0, 0.0
	for i := 0; i < b.m; i++ {
		var above, below []float64
		switch {
		case i > 0:
			above = b.u[(i-1)*nx : i*nx]
		case st.up != mpi.ProcNull:
			above = st.ghost[par*nx : (par+1)*nx]
		}
		switch {
		case i < b.m-1:
			below = b.u[(i+1)*nx : (i+2)*nx]
		case st.down != mpi.ProcNull:
			below = st.ghost[(2+par)*nx : (3+par)*nx]
		}
		row := b.u[i*nx : (i+1)*nx]
		for j := 0; j < nx; j++ {
			a, d := hot, cold
			if above != nil {
				a = above[j]
			}
			if below != nil {
				d = below[j]
			}
			l, r := cold, cold
			if j > 0 {
				l = row[j-1]
			}
			if j < nx-1 {
				r = row[j+1]
			}
			b.nu[i*nx+j] = 0.25 * ((a + d) + (l + r))
		}
	}
	b.u, b.nu = b.nu, b.u
}

// checkpoint gives a copy of this rank's rows to its left neighbour (in
// the ring of ranks) and keeps its own, then commits once every rank got
// that far (a barrier).
func (st *state) checkpoint() error {
	n, me := st.c.Size(), st.c.Rank()
	left, right := (me-1+n)%n, (me+1)%n
	own := append([]float64(nil), st.b.u...)
	rr0, rm := rows(st.p.ny, right, n)
	rb := make([]float64, rm*st.p.nx)
	if _, err := mpi.Sendrecv(st.c, own, left, 1, rb, right, 1); err != nil {
		return err
	}
	if err := st.c.Barrier(); err != nil {
		return err
	}
	st.prev = st.cur
	st.cur = ckpt{iter: st.iter, valid: true, own: own, ownR0: st.b.r0, right: rb, rightR0: rr0}
	return nil
}

// result gathers the grid at rank 0 and returns its result line there.
func (st *state) result() (string, error) {
	nx, ny, n := st.p.nx, st.p.ny, st.c.Size()
	counts, displs := make([]int, n), make([]int, n)
	for r := range counts {
		r0, m := rows(ny, r, n)
		counts[r], displs[r] = m*nx, r0*nx
	}
	var all []float64
	if st.c.Rank() == 0 {
		all = make([]float64, nx*ny)
	}
	if err := mpi.Gatherv(st.c, st.b.u, all, counts, displs, 0); err != nil {
		return "", err
	}
	if st.c.Rank() != 0 {
		return "", nil
	}
	sum, mx := 0.0, 0.0
	for i, v := range all {
		sum += v * float64(i+1)
		mx = math.Max(mx, v)
	}
	return fmt.Sprintf("halo-rma: %dx%d grid on %d ranks, %d iterations, %d repairs\nresult: halo-rma nx=%d ny=%d iters=%d checksum=%.15e max=%.15e\n",
		nx, ny, n, st.p.iters, st.repairs, nx, ny, st.p.iters, sum, mx), nil
}

// repair leaves the failed communicator and window together, goes on
// over the survivors and rolls every rank back to the newest checkpoint
// they all hold; a failure during the repair starts it again.
func (st *state) repair() error {
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		if err = st.repairOnce(); err == nil || !isFailure(err) {
			return err
		}
	}
	return fmt.Errorf("too many failures during recovery: %w", err)
}

func (st *state) repairOnce() error {
	if st.win != nil {
		// Releases the survivors blocked in a fence; Free is local on a
		// revoked window.
		st.win.Revoke()
		st.win.Free()
		st.win = nil
	}
	old := st.c
	old.Revoke()
	shrunk, err := old.Shrink() // uniform
	if err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	shrunk.SetErrhandler(mpi.ErrorsReturn)
	st.c = shrunk
	iter, grid, err := st.rebuild()
	// Every survivor takes the rebuilt state, or none does.
	if err := st.layout(iter, grid, err); err != nil {
		return err
	}
	st.repairs++
	if st.c.Rank() == 0 {
		fmt.Fprintf(st.p.out, "halo-rma: recovered: %d ranks left, resuming from iteration %d\n", st.c.Size(), iter)
	}
	return nil
}

// rebuild agrees on the newest checkpoint every survivor holds and
// rebuilds the whole grid of that iteration from the survivors' copies: a
// row comes from the lowest rank holding it. If some rows are held by
// nobody (two neighbours lost), every rank starts over from the initial
// grid together (same answer, more work).
func (st *state) rebuild() (int, []float64, error) {
	nx, ny := st.p.nx, st.p.ny
	mine := int64(math.MaxInt64)
	if st.cur.valid {
		mine = int64(st.cur.iter)
	}
	v := []int64{0}
	if err := mpi.Allreduce(st.c, []int64{mine}, v, mpi.Min); err != nil {
		return 0, nil, err
	}
	grid := make([]float64, nx*ny)
	if v[0] == math.MaxInt64 || v[0] == 0 {
		return 0, grid, nil
	}
	version := int(v[0])
	var ck ckpt
	switch {
	case st.cur.valid && st.cur.iter == version:
		ck = st.cur
	case st.prev.valid && st.prev.iter == version:
		ck = st.prev
	}
	have := make([]int32, ny)
	put := func(r0 int, data []float64) {
		for i := 0; i < len(data)/nx; i++ {
			have[r0+i] = 1
		}
	}
	if ck.valid {
		put(ck.ownR0, ck.own)
		put(ck.rightR0, ck.right)
	}
	n := st.c.Size()
	all := make([]int32, n*ny)
	if err := mpi.Allgather(st.c, have, all); err != nil {
		return 0, nil, err
	}
	me := st.c.Rank()
	provider := make([]int, ny)
	for row := range provider {
		provider[row] = -1
		for r := 0; r < n; r++ {
			if all[r*ny+row] != 0 {
				provider[row] = r
				break
			}
		}
		if provider[row] < 0 {
			if me == 0 {
				fmt.Fprintf(st.p.out, "halo-rma: no copy of row %d at iteration %d: starting over\n", row, version)
			}
			return 0, grid, nil
		}
	}
	contrib := make([]float64, nx*ny)
	give := func(r0 int, data []float64) {
		for i := 0; i < len(data)/nx; i++ {
			if provider[r0+i] == me {
				copy(contrib[(r0+i)*nx:(r0+i+1)*nx], data[i*nx:(i+1)*nx])
			}
		}
	}
	if ck.valid {
		give(ck.ownR0, ck.own)
		give(ck.rightR0, ck.right)
	}
	// One provider per row and zeros elsewhere: the sum is exact.
	if err := mpi.Allreduce(st.c, contrib, grid, mpi.Sum); err != nil {
		return 0, nil, err
	}
	return version, grid, nil
}
