// Command cof is Checkpoint-on-Failure (seed 002, chapter 4) with
// algorithm-based fault tolerance (ABFT): a checksum-protected distributed
// matrix-vector iteration whose survivors checkpoint only when a failure
// happens, and whose relaunched job rebuilds the lost process's data from
// the checksum.
//
// The computation counts walks: x_{k+1} = A x_k with x_0 = 1, A the 0/1
// adjacency matrix of a pseudo-random directed graph on N vertices, so
// that x_K[i] is the number of walks of length K ending at vertex i
// (mod 2^64: the counts wrap, the arithmetic is exact). The vector is split
// into blocks of -m entries over the first n-1 ranks; the last rank holds
// the checksum block C_k = sum of the data blocks. Each iteration every
// rank contributes its block to an Allgather, every data rank computes its
// block of A x_k, and the checksum rank computes C_{k+1} = S x_k with S the
// sum of the data ranks' block rows of A: the checksum is carried forward
// by the algorithm itself, never recomputed from the data, and every rank
// checks sum(blocks) == C each iteration. Integers mod 2^64 make the
// checksum exact, so a rebuilt block is bit for bit the lost one.
//
// Checkpoint-on-Failure (run under ftmpirun --restart-on-failure=N):
//
//  1. a rank fails; an MPI call returns an error at a survivor
//     (mpi.ErrorsReturn);
//
//  2. the survivor writes a checkpoint (package checkpoint) of its current
//     and previous blocks and their iteration numbers;
//
//  3. it exits without finalizing, so that every rank waiting on it fails
//     too and checkpoints in turn (the cascade of seed 002, 4.2);
//
//  4. ftmpirun relaunches the job once every rank has exited;
//
//  5. the ranks of the new job (World.Restarted() > 0) load the checkpoints
//     of the previous launch and agree on the newest iteration every
//     survivor has (ranks are at most one iteration apart: finishing the
//     Allgather of iteration k needs every rank's block k);
//
//  6. the rank without a checkpoint gets its block back from the checksum
//     (a Reduce of C minus the other blocks), or the checksum rank
//     recomputes C; with more than one block lost, the job starts over from
//     iteration 0;
//
//  7. the computation resumes and ends with the same result line as a
//     failure-free run.
//
// Run it with a failure and without:
//
//	go run ./cmd/ftmpirun -n 4 --restart-on-failure=1 --inject kill:rank=2,at=500ms ./examples/cof -dir /tmp/cof
//	go run ./cmd/ftmpirun -n 4 ./examples/cof -dir /tmp/cof
//
// A fresh launch (Restarted() == 0) discards old checkpoints in -dir; a
// successful run removes its own.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
)

// exitCheckpointed is a survivor's exit status after its checkpoint.
const exitCheckpointed = 3

type params struct {
	m      int           // entries per block
	iters  int           // K
	seed   uint64        // graph
	degree int           // expected out-degree of a vertex is N/degree
	delay  time.Duration // pause per iteration, so that an injected failure lands mid-run
	dir    string        // checkpoint directory
	launch int           // World.Restarted()
	// progress: rank 0 prints "cof: launch L: iteration I done" every 100
	// iterations (points of the run a test can tie a fault to).
	progress bool

	// afterIter, if set, is called by every rank after computing iteration
	// iter (tests inject failures there).
	afterIter func(w *mpi.World, iter int)
	// inRecovery, if set, is called by every rank of a relaunched job once
	// it has loaded its checkpoint, before the ranks agree (tests).
	inRecovery func(w *mpi.World)
	// exit ends a survivor after its checkpoint; nil: os.Exit(exitCheckpointed).
	exit func(w *mpi.World)
}

func main() {
	var p params
	flag.IntVar(&p.m, "m", 64, "vector entries per rank (the vector has m*(np-1) entries)")
	flag.IntVar(&p.iters, "iters", 1500, "iterations (walk length)")
	flag.Uint64Var(&p.seed, "seed", 1, "graph seed")
	flag.IntVar(&p.degree, "sparsity", 8, "an edge i->j exists with probability 1/sparsity")
	flag.DurationVar(&p.delay, "delay", time.Millisecond, "pause in every iteration (so that an injected failure lands mid-run)")
	flag.StringVar(&p.dir, "dir", filepath.Join(os.TempDir(), "ftmpi-cof"), "checkpoint directory (survives relaunches)")
	flag.BoolVar(&p.progress, "progress", false, "rank 0 prints a line every 100 iterations (for tests: ftmpirun --inject 'kill:rank=2,on=launch 0: iteration 300 done')")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cof:", err)
		os.Exit(1)
	}
	p.launch = w.Restarted()
	if _, err := run(w, &p, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "cof: rank %d: %v\n", w.Rank(), err)
		w.Abort(1)
	}
	w.Finalize()
}

// errCheckpointed ends a survivor in process (tests): it checkpointed and
// left.
var errCheckpointed = errors.New("checkpointed after a failure")

// state is a rank's part of the computation: its block at iteration iter
// and, if it has one, at iteration iter-1.
type state struct {
	iter int
	cur  []uint64
	prev []uint64 // nil if unknown
}

// ckpt is what a survivor saves: its state, which launch wrote it, and when
// it saw the failure (for the relaunch timing).
type ckpt struct {
	launch     int
	detectedAt int64 // unix nanoseconds
	st         state
}

// run computes on w's CommWorld and returns the result line at rank 0.
func run(w *mpi.World, p *params, out io.Writer) (string, error) {
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	n, r := c.Size(), c.Rank()
	if n < 2 {
		return "", errors.New("need at least 2 ranks (data ranks and one checksum rank)")
	}
	if p.m < 1 || p.iters < 0 || p.degree < 1 {
		return "", fmt.Errorf("invalid -m %d, -iters %d or -sparsity %d", p.m, p.iters, p.degree)
	}
	g := newGraph(p, n)
	store, err := checkpoint.Open(p.dir, r)
	if err != nil {
		return "", err
	}
	var st state
	if p.launch == 0 {
		if err := store.Remove(); err != nil { // a fresh run never restarts from old files
			return "", err
		}
		st = state{iter: 0, cur: g.initial(r)}
		if r == 0 {
			fmt.Fprintf(out, "cof: %d-step walks on %d vertices, %d data ranks + 1 checksum rank, blocks of %d\n", p.iters, g.N, n-1, p.m)
		}
	} else {
		var rec string
		st, rec, err = recoverState(c, store, g, p, out)
		if err != nil {
			if errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked) {
				// A failure during recovery (seed 002, 4.2): the local
				// state is not updated; what this rank loaded is saved
				// again, for the next launch to start the recovery over.
				return "", failed(w, store, p, st, err, out)
			}
			return "", err
		}
		if r == 0 {
			fmt.Fprintln(out, rec)
		}
	}

	all := make([]uint64, n*p.m)
	for {
		if err := mpi.Allgather(c, st.cur, all); err != nil {
			return "", failed(w, store, p, st, err, out)
		}
		if err := g.checkSum(all); err != nil {
			return "", fmt.Errorf("iteration %d: %w", st.iter, err)
		}
		if st.iter == p.iters {
			break
		}
		next := g.step(r, all)
		st = state{iter: st.iter + 1, cur: next, prev: st.cur}
		if p.delay > 0 {
			time.Sleep(p.delay)
		}
		if p.progress && r == 0 && st.iter%100 == 0 {
			fmt.Fprintf(out, "cof: launch %d: iteration %d done\n", p.launch, st.iter)
		}
		if p.afterIter != nil {
			p.afterIter(w, st.iter)
		}
	}
	_ = store.Remove()
	if r != 0 {
		return "", nil
	}
	h := fnv.New64a()
	var total uint64
	for _, v := range all[:g.N] {
		total += v
		_ = binary.Write(h, binary.LittleEndian, v)
	}
	line := fmt.Sprintf("result: cof N=%d K=%d seed=%d walks=%d hash=%016x checksum=ok", g.N, p.iters, p.seed, total, h.Sum64())
	fmt.Fprintln(out, line)
	return line, nil
}

// failed is steps 1-3 of the protocol at a survivor: checkpoint, report,
// leave without finalizing.
func failed(w *mpi.World, store *checkpoint.Store, p *params, st state, cause error, out io.Writer) error {
	now := time.Now()
	if st.cur == nil {
		fmt.Fprintf(out, "cof: rank %d: failure (%v) before it had any data; nothing to checkpoint\n", w.Rank(), short(cause))
	} else {
		ck := ckpt{launch: p.launch, detectedAt: now.UnixNano(), st: st}
		if err := store.Save(st.iter, ck.encode()); err != nil {
			fmt.Fprintf(os.Stderr, "cof: rank %d: checkpoint failed: %v\n", w.Rank(), err)
		} else {
			fmt.Fprintf(out, "cof: rank %d: failure at iteration %d (%v); checkpointed iteration %d in %v; exiting\n",
				w.Rank(), st.iter, short(cause), st.iter, time.Since(now).Round(time.Microsecond))
		}
	}
	if p.exit != nil {
		p.exit(w)
		return errCheckpointed
	}
	os.Exit(exitCheckpointed)
	return nil
}

// short is the MPI error class of err, or err.
func short(err error) string {
	if cl := mpi.ErrorClass(err); cl != nil {
		return cl.Error()
	}
	return err.Error()
}

// recoverState is steps 5-6: load, agree, rebuild. It returns the state to
// resume from and a line describing the recovery (for rank 0).
func recoverState(c *mpi.Comm, store *checkpoint.Store, g *graph, p *params, out io.Writer) (state, string, error) {
	n, r := c.Size(), c.Rank()
	var mine *ckpt
	why := "no checkpoint"
	if v, err := store.Latest(); err == nil {
		b, err := store.Load(v)
		if err == nil {
			ck, err := decodeCkpt(b, p.m)
			switch {
			case err != nil:
				why = err.Error()
			case ck.launch != p.launch-1:
				why = fmt.Sprintf("checkpoint of launch %d, not %d", ck.launch, p.launch-1)
			default:
				mine = ck
			}
		} else {
			why = err.Error()
		}
	} else {
		why = err.Error()
	}
	// [have, iter, has prev, detectedAt] from every rank.
	meta := []int64{0, -1, 0, 0}
	if mine != nil {
		meta = []int64{1, int64(mine.st.iter), 0, mine.detectedAt}
		if mine.st.prev != nil {
			meta[2] = 1
		}
	}
	var loaded state // returned with an error: what a failure during recovery must keep
	if mine == nil {
		fmt.Fprintf(out, "cof: relaunch %d: rank %d has no usable checkpoint: %s\n", p.launch, r, why)
	} else {
		loaded = mine.st
	}
	if p.inRecovery != nil {
		p.inRecovery(c.World())
	}
	allMeta := make([]int64, 4*n)
	if err := mpi.Allgather(c, meta, allMeta); err != nil {
		return loaded, "", err
	}
	var lost []int
	target := -1
	var detected int64
	for i := range n {
		m := allMeta[4*i:]
		if m[0] == 0 {
			lost = append(lost, i)
			continue
		}
		if target < 0 || int(m[1]) < target {
			target = int(m[1])
		}
		if detected == 0 || m[3] < detected {
			detected = m[3]
		}
	}
	usable := len(lost) <= 1 && target >= 0
	for i := range n {
		if m := allMeta[4*i:]; usable && m[0] == 1 && !(int(m[1]) == target || int(m[1]) == target+1 && m[2] == 1) {
			usable = false // cannot happen (ranks are at most one iteration apart)
		}
	}
	since := ""
	if detected > 0 {
		since = fmt.Sprintf(", %v after the failure was detected", time.Since(time.Unix(0, detected)).Round(time.Microsecond))
	}
	if !usable {
		// More blocks lost than one checksum protects: start over.
		line := fmt.Sprintf("cof: relaunch %d: ranks %v have no usable checkpoint; one checksum block cannot rebuild them: starting over from iteration 0%s",
			p.launch, lost, since)
		return state{iter: 0, cur: g.initial(r)}, line, nil
	}
	var st state
	if mine != nil {
		st = state{iter: target, cur: mine.st.cur}
		if mine.st.iter == target+1 {
			st.cur = mine.st.prev
		}
	}
	desc := "no block lost"
	if len(lost) == 1 {
		// Rebuild the lost block at its owner: a sum of the checksum and
		// the negated data blocks, or of the data blocks if the checksum
		// rank was lost.
		L := lost[0]
		contrib := make([]uint64, p.m)
		switch {
		case r == L:
		case r == n-1 || L == n-1:
			copy(contrib, st.cur)
		default:
			for i, v := range st.cur {
				contrib[i] = -v
			}
		}
		var recv []uint64
		if r == L {
			recv = make([]uint64, p.m)
		}
		if err := mpi.Reduce(c, contrib, recv, mpi.Sum, L); err != nil {
			return loaded, "", err
		}
		if r == L {
			st = state{iter: target, cur: recv}
		}
		if L == n-1 {
			desc = fmt.Sprintf("checksum rank %d's block recomputed from the data blocks", L)
		} else {
			desc = fmt.Sprintf("rank %d's block rebuilt from the checksum (ABFT)", L)
		}
	}
	return st, fmt.Sprintf("cof: relaunch %d: resumed at iteration %d, %s%s", p.launch, target, desc, since), nil
}

func (ck *ckpt) encode() []byte {
	hasPrev := uint64(0)
	if ck.st.prev != nil {
		hasPrev = 1
	}
	words := []uint64{uint64(ck.launch), uint64(ck.detectedAt), uint64(ck.st.iter), uint64(len(ck.st.cur)), hasPrev}
	words = append(words, ck.st.cur...)
	words = append(words, ck.st.prev...)
	b := make([]byte, 8*len(words))
	for i, v := range words {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

func decodeCkpt(b []byte, m int) (*ckpt, error) {
	if len(b)%8 != 0 || len(b) < 5*8 {
		return nil, fmt.Errorf("checkpoint of %d bytes is not a cof checkpoint", len(b))
	}
	w := make([]uint64, len(b)/8)
	for i := range w {
		w[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	ck := &ckpt{launch: int(w[0]), detectedAt: int64(w[1]), st: state{iter: int(w[2])}}
	if int(w[3]) != m {
		return nil, fmt.Errorf("checkpoint has blocks of %d entries, this run %d (same -m needed)", w[3], m)
	}
	want := 5 + m
	if w[4] == 1 {
		want += m
	}
	if len(w) != want {
		return nil, fmt.Errorf("checkpoint has %d words, want %d", len(w), want)
	}
	ck.st.cur = w[5 : 5+m]
	if w[4] == 1 {
		ck.st.prev = w[5+m:]
	}
	return ck, nil
}

// graph is the problem every rank regenerates from the parameters: its
// rank's rows of A (data ranks) or the checksum rows S (checksum rank).
type graph struct {
	N, m, n int
	seed    uint64
	degree  int
	rank    int       // whose rows are built (-1: none)
	rows    [][]int32 // data rank: for each local row i, the columns j with A[i][j] = 1
	sum     [][]int32 // checksum rank: for each local row i, (j, S[i][j]) pairs with S[i][j] > 0
}

func newGraph(p *params, n int) *graph {
	return &graph{N: p.m * (n - 1), m: p.m, n: n, seed: p.seed, degree: p.degree, rank: -1}
}

// edge reports whether A[i][j] = 1.
func (g *graph) edge(i, j int) bool {
	x := g.seed*0x9e3779b97f4a7c15 ^ uint64(i)*0xbf58476d1ce4e5b9 ^ uint64(j)*0x94d049bb133111eb
	x ^= x >> 31
	x *= 0xd6e8feb86659fd93
	x ^= x >> 32
	return x%uint64(g.degree) == 0
}

// initial is rank r's block of x_0 = 1 (the checksum rank: n-1 per entry).
func (g *graph) initial(r int) []uint64 {
	b := make([]uint64, g.m)
	for i := range b {
		b[i] = 1
		if r == g.n-1 {
			b[i] = uint64(g.n - 1)
		}
	}
	return b
}

// build prepares rank r's rows.
func (g *graph) build(r int) {
	if g.rank == r {
		return
	}
	g.rank = r
	g.rows, g.sum = make([][]int32, g.m), nil
	if r < g.n-1 {
		for i := range g.m {
			for j := range g.N {
				if g.edge(r*g.m+i, j) {
					g.rows[i] = append(g.rows[i], int32(j))
				}
			}
		}
		return
	}
	g.sum = make([][]int32, g.m)
	for i := range g.m {
		for j := range g.N {
			s := int32(0)
			for d := range g.n - 1 {
				if g.edge(d*g.m+i, j) {
					s++
				}
			}
			if s > 0 {
				g.sum[i] = append(g.sum[i], int32(j), s)
			}
		}
	}
}

// step is rank r's block of the next iterate, from all = [x blocks..., C].
func (g *graph) step(r int, all []uint64) []uint64 {
	g.build(r)
	x := all[:g.N]
	next := make([]uint64, g.m)
	if r < g.n-1 {
		for i, cols := range g.rows {
			var s uint64
			for _, j := range cols {
				s += x[j]
			}
			next[i] = s
		}
		return next
	}
	for i, pairs := range g.sum {
		var s uint64
		for k := 0; k < len(pairs); k += 2 {
			s += uint64(pairs[k+1]) * x[pairs[k]]
		}
		next[i] = s
	}
	return next
}

// checkSum verifies the ABFT invariant: the data blocks sum to C.
func (g *graph) checkSum(all []uint64) error {
	c := all[g.N:]
	for i := range g.m {
		var s uint64
		for d := range g.n - 1 {
			s += all[d*g.m+i]
		}
		if s != c[i] {
			return fmt.Errorf("checksum mismatch at entry %d: blocks sum to %d, checksum block holds %d", i, s, c[i])
		}
	}
	return nil
}
