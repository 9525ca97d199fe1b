package main

import (
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/ftmpi/ftmpi/mpi"
)

// Fault tolerance by replacement (seed 002, chapter 5 and A.5): in-memory
// checkpoints with a neighbour copy, and the recipe revoke, shrink, spawn,
// merge, split back to the old ranks.

const (
	tagCkpt    = 7001 // checkpoint: a block to the left neighbour
	tagRestore = 7002 // recovery: a lost block to its replacement
)

// ckpt is one committed checkpoint: the iteration, this rank's block and a
// copy of its right neighbour's block.
type ckpt struct {
	iter        int
	own, right  []float64
	rightRank   int
	valid, have bool
}

type ftState struct {
	w         *mpi.World
	p         params
	s         *solver
	c         *mpi.Comm
	cur, prev ckpt
	lost      []int // old ranks replaced in the last repair
	repairs   int   // repairs this process took part in (for -progress)
	restoring bool  // a repair (or joining) set st.c: roll back first (run)
}

// isFailure tells whether err reports a failed process or a revoked
// communicator: the cases repaired here.
func isFailure(err error) bool {
	return errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked)
}

func runFT(w *mpi.World, p params) error {
	st := &ftState{w: w, p: p}
	var err error
	if nc := w.Replacement(); nc != nil {
		// A spare that Comm.Replace took: it holds no block yet.
		st.joinReplaced(nc)
	} else if parent := w.Parent(); parent != nil {
		if err := st.joinAsReplacement(parent); err != nil {
			return err
		}
	} else {
		st.c = w.CommWorld()
		if err := st.c.SetErrhandler(mpi.ErrorsReturn); err != nil {
			return err
		}
		if p.n < st.c.Size() {
			return fmt.Errorf("%d grid points cannot be split over %d ranks", p.n, st.c.Size())
		}
		st.s = newSolver(p, st.c.Rank(), st.c.Size())
		err = st.checkpoint() // version 0: the initial state
	}
	for {
		if err = st.run(err); err == nil {
			return nil
		}
		if !isFailure(err) {
			return err
		}
		if err = st.repair(); err != nil {
			return err
		}
	}
}

// run rolls back if a repair asked for it (restore), iterates until
// convergence, checkpointing every -ckpt iterations, and prints the result
// once every rank agrees that it was computed. Every rank leaves it through
// that one agreement, whether it got that far or failed (failed: also when
// prior, the failure of the step before, is not nil), having revoked the
// communicator to release the ranks still computing. Agreements match by
// their order on a communicator: a rank that went from a failed gather
// or rollback straight to repair's Shrink while the others agreed on the
// result would meet their Agree with its Shrink (MPI_ERR_OTHER,
// "mismatched agreement", at every rank; before ftmpi named it, a hang).
func (st *ftState) run(prior error) error {
	err := prior
	if err == nil && st.restoring {
		if err = st.restore(); err == nil {
			st.restoring = false
		}
	}
	var line string
	if err == nil {
		line, err = st.compute()
	}
	if err != nil && !isFailure(err) {
		return err
	}
	if err != nil {
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
	if line != "" {
		fmt.Print(line)
	}
	return nil
}

// compute iterates until convergence, checkpointing every -ckpt
// iterations, and gathers the result line at rank 0 (no agreement: run's).
func (st *ftState) compute() (string, error) {
	for {
		done, err := st.s.step(st.c)
		if err != nil {
			return "", err
		}
		if done {
			break
		}
		if st.s.iters%st.p.ckpt == 0 {
			if err := st.checkpoint(); err != nil {
				return "", err
			}
			if st.p.progress && st.s.rank == 0 {
				fmt.Printf("jacobi: checkpoint at iteration %d committed after %d repairs\n", st.s.iters, st.repairs)
			}
		}
	}
	if st.p.killAtGather == st.w.Rank() && st.w.Parent() == nil && st.w.Replacement() == nil {
		st.w.Kill() // -kill-at-gather: SIGKILL before contributing to the result's gather
	}
	return st.resultLine()
}

func (st *ftState) resultLine() (string, error) {
	s := st.s
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
	if err := mpi.Gatherv(st.c, s.u[1:s.m+1], all, counts, displs, 0); err != nil {
		return "", err
	}
	if s.rank != 0 {
		return "", nil
	}
	sum := 0.0
	for i, v := range all {
		sum += v * float64(i+1)
	}
	return fmt.Sprintf("jacobi: %d points on %d ranks, %d iterations\nresult: jacobi n=%d iters=%d residual=%.6e checksum=%.15e\n",
		s.p.n, s.size, s.iters, s.p.n, s.iters, s.diff, sum), nil
}

// checkpoint gives a copy of this rank's block to its left neighbour and
// keeps its own, then commits once every rank got that far (a barrier).
func (st *ftState) checkpoint() error {
	s := st.s
	n := s.size
	left, right := (s.rank-1+n)%n, (s.rank+1)%n
	own := append([]float64(nil), s.u[1:s.m+1]...)
	mRight := (right+1)*s.p.n/n - right*s.p.n/n
	rb := make([]float64, mRight)
	if _, err := mpi.Sendrecv(st.c, own, left, tagCkpt, rb, right, tagCkpt); err != nil {
		return err
	}
	if err := st.c.Barrier(); err != nil {
		return err
	}
	st.prev = st.cur
	st.cur = ckpt{iter: s.iters, own: own, right: rb, rightRank: right, valid: true, have: true}
	return nil
}

// errRetry reports a recovery attempt that the processes agreed to abandon
// (a failure during it): the survivors try again.
var errRetry = fmt.Errorf("recovery attempt abandoned: %w", mpi.ErrProcFailed)

// repair replaces the failed processes of st.c and rolls every rank back;
// a failure during the recovery starts it again (a few times).
func (st *ftState) repair() error {
	once := st.repairOnce
	if st.p.replace {
		once = st.repairReplace
	}
	var err error
	for attempt := 0; attempt < 8; attempt++ {
		if err = once(); err == nil || !isFailure(err) {
			return err
		}
	}
	return fmt.Errorf("too many failures during recovery: %w", err)
}

// agreeAll decides, the same at every process of both groups of the
// intercommunicator ic, whether ok holds everywhere: an intercommunicator
// agreement gives each group the AND of the other's flags, so a second
// round with ok AND that result gives both groups the global AND.
func agreeAll(ic *mpi.Comm, ok bool) bool {
	remote, err := ic.Agree(ok)
	if err != nil {
		remote = false
	}
	all, err := ic.Agree(ok && remote)
	return err == nil && all
}

// repairOnce is one recovery attempt: revoke, shrink, spawn the
// replacements, merge, split back to the old ranks (the rollback is run's
// restore, made by every rank after the same agreements). The steps
// whose outcome may differ between processes are followed by agreements,
// so every process abandons or completes the attempt alike.
func (st *ftState) repairOnce() error {
	old := st.c
	old.Revoke()
	shrunk, err := old.Shrink() // uniform
	if err != nil {
		return fmt.Errorf("shrink: %w", err)
	}
	og, sg := old.Group(), shrunk.Group()
	all := make([]int, old.Size())
	for i := range all {
		all[i] = i
	}
	in, err := mpi.TranslateRanks(og, all, sg)
	if err != nil {
		return err
	}
	st.lost = st.lost[:0]
	for r, x := range in {
		if x == mpi.Undefined {
			st.lost = append(st.lost, r)
		}
	}
	if shrunk.Rank() == 0 {
		fmt.Fprintf(os.Stderr, "jacobi: ranks %v failed at iteration ~%d; spawning replacements\n", st.lost, st.s.iters)
	}
	ic, err := shrunk.Spawn("", os.Args[1:], len(st.lost), 0) // uniform
	if err != nil {
		return fmt.Errorf("spawn: %w", err)
	}
	ic.SetErrhandler(mpi.ErrorsReturn)
	merged, err := ic.Merge(false)
	if !agreeAll(ic, err == nil) {
		return errRetry
	}
	merged.SetErrhandler(mpi.ErrorsReturn)
	lost := make([]int64, len(st.lost))
	for i, r := range st.lost {
		lost[i] = int64(r)
	}
	err = mpi.Bcast(merged, lost, 0)
	var nc *mpi.Comm
	if err == nil {
		nc, err = merged.Split(0, old.Rank())
	}
	if ok, aerr := merged.Agree(err == nil); aerr != nil || !ok {
		return errRetry
	}
	nc.SetErrhandler(mpi.ErrorsReturn)
	st.c = nc // established at every process: later failures repair nc
	st.restoring = true
	return nil
}

// repairReplace is repairOnce in one call: Comm.Replace (MPIX_Comm_replace)
// revokes, shrinks, takes spares (or spawns when none are left) and gives
// every survivor its old rank, uniformly; then the rollback.
func (st *ftState) repairReplace() error {
	old := st.c
	nc, err := old.Replace()
	if err != nil {
		return fmt.Errorf("replace: %w", err)
	}
	nc.SetErrhandler(mpi.ErrorsReturn)
	st.lost = st.lost[:0]
	og, ng := old.Group(), nc.Group()
	for r := 0; r < old.Size(); r++ {
		if x, err := mpi.TranslateRanks(og, []int{r}, ng); err == nil && x[0] == mpi.Undefined {
			st.lost = append(st.lost, r)
		}
	}
	st.c = nc
	st.restoring = true
	return nil
}

// joinReplaced is a taken spare's half of repairReplace (its rollback:
// run's restore, as the survivors').
func (st *ftState) joinReplaced(nc *mpi.Comm) {
	nc.SetErrhandler(mpi.ErrorsReturn)
	fmt.Printf("jacobi: spare process taken as rank %d\n", nc.Rank())
	st.c = nc
	st.s = newSolver(st.p, nc.Rank(), nc.Size())
	st.restoring = true
}

// joinAsReplacement is a spawned process's half of repairOnce. If the
// attempt is abandoned it exits: the survivors start another one.
func (st *ftState) joinAsReplacement(parent *mpi.Comm) error {
	parent.SetErrhandler(mpi.ErrorsReturn)
	merged, err := parent.Merge(true)
	if !agreeAll(parent, err == nil) {
		os.Exit(3) // abandoned attempt: not part of the job
	}
	merged.SetErrhandler(mpi.ErrorsReturn)
	lost := make([]int64, st.w.Size())
	err = mpi.Bcast(merged, lost, 0)
	var nc *mpi.Comm
	if err == nil {
		nc, err = merged.Split(0, int(lost[st.w.Rank()]))
	}
	if ok, aerr := merged.Agree(err == nil); aerr != nil || !ok {
		os.Exit(3)
	}
	for _, r := range lost {
		st.lost = append(st.lost, int(r))
	}
	nc.SetErrhandler(mpi.ErrorsReturn)
	fmt.Printf("jacobi: spawned process joined as rank %d\n", nc.Rank())
	st.c = nc
	st.s = newSolver(st.p, nc.Rank(), nc.Size())
	st.restoring = true // run's restore, as the survivors'
	return nil
}

// restore agrees on the checkpoint to roll back to (the newest every rank
// holding one committed) and gives each rank without it (replacements, or
// a rank whose own recovery was cut short) its block from its left
// neighbour's copy. Iteration 0 needs no copy: it is the initial state.
// It ends with a new checkpoint, so every rank holds a neighbour copy again.
func (st *ftState) restore() error {
	mine := int64(math.MaxInt64) // nothing to offer
	if st.cur.valid {
		mine = int64(st.cur.iter)
	}
	v := []int64{0}
	if err := mpi.Allreduce(st.c, []int64{mine}, v, mpi.Min); err != nil {
		return err
	}
	s := st.s
	n := s.size
	version := int(v[0])
	var ck ckpt
	switch {
	case v[0] == math.MaxInt64 || version == 0:
		// No checkpoint anywhere, or the initial one: start over.
		version = 0
		*s = *newSolver(st.p, s.rank, s.size)
		ck = ckpt{iter: 0, own: append([]float64(nil), s.u[1:s.m+1]...), rightRank: -1, valid: true}
	case st.cur.valid && st.cur.iter == version:
		ck = st.cur
	case st.prev.valid && st.prev.iter == version:
		ck = st.prev
	}
	// Who needs a block: every rank without the version.
	need := make([]int32, n)
	flag := int32(0)
	if !ck.valid {
		flag = 1
	}
	if err := mpi.Allgather(st.c, []int32{flag}, need); err != nil {
		return err
	}
	// Two neighbours both without the version: the copy of one block is
	// lost. Every rank sees the same need list, so all start over from
	// the initial state together (same answer, more work).
	for r := range need {
		if need[r] != 0 && need[(r-1+n)%n] != 0 && n > 1 {
			if s.rank == 0 {
				fmt.Printf("jacobi: the copies of neighbouring ranks %d and %d are both lost: starting over\n", (r-1+n)%n, r)
			}
			*s = *newSolver(st.p, s.rank, s.size)
			st.cur, st.prev = ckpt{}, ckpt{}
			return st.checkpoint()
		}
	}
	for r := range need {
		if need[r] == 0 {
			continue
		}
		holder := (r - 1 + n) % n
		switch s.rank {
		case holder:
			if ck.rightRank != r || ck.right == nil {
				return fmt.Errorf("no copy of rank %d's block at iteration %d", r, version)
			}
			if err := mpi.Send(st.c, ck.right, r, tagRestore); err != nil {
				return err
			}
		case r:
			buf := make([]float64, s.m)
			if _, err := mpi.Recv(st.c, buf, holder, tagRestore); err != nil {
				return err
			}
			ck = ckpt{iter: version, own: buf, rightRank: -1, valid: true}
		}
	}
	copy(s.u[1:s.m+1], ck.own)
	s.iters = version
	s.diff = math.Inf(1)
	if s.rank == 0 {
		fmt.Printf("jacobi: recovered: ranks %v replaced, resuming from iteration %d\n", st.lost, version)
	}
	st.repairs++
	st.cur, st.prev = ck, ckpt{}
	return st.checkpoint()
}
