package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
)

// The application: every rank holds a block of m words; one iteration
// updates each word from its old value and from the global sums of the
// previous iteration, then an Allreduce (MPI_SUM over 4 words) makes the
// new global sums. Integer arithmetic mod 2^64 makes the result exact and
// independent of the reduction order, so a recovered run must end with
// the bit-for-bit result of a failure-free one. Every -every iterations
// the state (iteration, block, sums) is checkpointed with
// checkpoint.SaveCollective.

const nsum = 4

// params are the application's and the failure's parameters.
type params struct {
	m      int    // words per rank
	iters  int    // iterations
	every  int    // checkpoint every this many iterations
	failAt int    // the victim kills itself before iteration failAt (0: never)
	victim int    // the rank that kills itself
	dir    string // checkpoint directory
	tdir   string // timing directory (kill and detection timestamps)
}

// state is one rank's part of the computation after iteration iter.
type state struct {
	iter int
	g    [nsum]uint64 // global sums of iteration iter
	x    []uint64
}

func initial(p *params, rank int) state {
	s := state{x: make([]uint64, p.m)}
	for j := range s.x {
		s.x[j] = uint64(rank)<<32 | uint64(j)
	}
	return s
}

func (s *state) encode() []byte {
	b := make([]byte, 8*(1+nsum+len(s.x)))
	binary.LittleEndian.PutUint64(b, uint64(s.iter))
	for i, v := range s.g {
		binary.LittleEndian.PutUint64(b[8*(1+i):], v)
	}
	for j, v := range s.x {
		binary.LittleEndian.PutUint64(b[8*(1+nsum+j):], v)
	}
	return b
}

func decode(p *params, b []byte) (state, error) {
	if len(b) != 8*(1+nsum+p.m) {
		return state{}, fmt.Errorf("checkpoint of %d bytes, want %d (another -m?)", len(b), 8*(1+nsum+p.m))
	}
	s := state{iter: int(binary.LittleEndian.Uint64(b)), x: make([]uint64, p.m)}
	for i := range s.g {
		s.g[i] = binary.LittleEndian.Uint64(b[8*(1+i):])
	}
	for j := range s.x {
		s.x[j] = binary.LittleEndian.Uint64(b[8*(1+nsum+j):])
	}
	return s, nil
}

// step computes one iteration on c.
func step(c *mpi.Comm, s *state) error {
	var local [nsum]uint64
	g := s.g
	for j, v := range s.x {
		v = v*6364136223846793005 + 1442695040888963407 + g[j%nsum]
		s.x[j] = v
		local[j%nsum] += v >> 7
	}
	var out [nsum]uint64
	if err := mpi.Allreduce(c, local[:], out[:], mpi.Sum); err != nil {
		return err
	}
	s.g = out
	s.iter++
	return nil
}

// restore loads the newest checkpoint every rank of c has, or the initial
// state if there is none.
func restore(p *params, st *checkpoint.Store, c *mpi.Comm) (state, error) {
	v, data, err := st.RestoreLatest(c)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return initial(p, c.Rank()), nil
	}
	if err != nil {
		return state{}, err
	}
	s, err := decode(p, data)
	if err != nil {
		return state{}, err
	}
	if s.iter != v {
		return state{}, fmt.Errorf("checkpoint version %d holds iteration %d", v, s.iter)
	}
	return s, nil
}

// hooks customise a run of the iteration loop.
type hooks struct {
	// stop, if set, is polled before every iteration (Reinit's context).
	stop func() bool
	// mayKill: this process is the original one (not a replacement): the
	// victim kills itself before iteration failAt.
	mayKill bool
	// kill is how the victim dies (World.Kill).
	kill func()
	// resumed, if set, is called once after the first iteration (the
	// recovery measurement).
	resumed func() error
}

// errStopped: hooks.stop said to stop (a Reinit rollback is under way).
var errStopped = errors.New("stopped")

// iterate runs iterations on c until p.iters.
func iterate(p *params, c *mpi.Comm, st *checkpoint.Store, s *state, h hooks) error {
	first := true
	for s.iter < p.iters {
		if h.stop != nil && h.stop() {
			return errStopped
		}
		if h.mayKill && p.failAt > 0 && s.iter+1 == p.failAt && c.Rank() == p.victim {
			die(p, h.kill)
		}
		if err := step(c, s); err != nil {
			return err
		}
		if first && h.resumed != nil {
			if err := h.resumed(); err != nil {
				return err
			}
		}
		first = false
		if s.iter%p.every == 0 {
			if err := st.SaveCollective(c, s.iter, s.encode()); err != nil {
				return err
			}
		}
	}
	return nil
}

// result is the final answer: the global sums of the last iteration and
// the sum of the ranks' block hashes (an Allreduce on c). Every rank gets
// it.
func result(p *params, c *mpi.Comm, s *state) (string, error) {
	h := fnv.New64a()
	_ = binary.Write(h, binary.LittleEndian, s.x)
	mine := []uint64{h.Sum64()}
	all := []uint64{0}
	if err := mpi.Allreduce(c, mine, all, mpi.Sum); err != nil {
		return "", err
	}
	return fmt.Sprintf("result: recovery np=%d m=%d iters=%d g=%016x,%016x,%016x,%016x blocks=%016x",
		c.Size(), p.m, s.iter, s.g[0], s.g[1], s.g[2], s.g[3], all[0]), nil
}

// Timestamps, in the timing directory.

func killFile(p *params) string { return filepath.Join(p.tdir, "kill.ns") }

func detectFile(p *params, rank int) string {
	return filepath.Join(p.tdir, "detect-r"+strconv.Itoa(rank)+".ns")
}

// die records the wall-clock time and SIGKILLs this process.
func die(p *params, kill func()) {
	now := time.Now().UnixNano()
	if err := os.WriteFile(killFile(p), []byte(strconv.FormatInt(now, 10)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "recovery: writing the kill time:", err)
	}
	kill()
	select {}
}

func readNanos(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// cleanTimes removes the timestamps of an earlier run (rank 0 of a fresh
// start, before its first collective: the victim writes much later).
func cleanTimes(p *params) error {
	if err := os.MkdirAll(p.tdir, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(p.tdir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".ns") {
			os.Remove(filepath.Join(p.tdir, e.Name()))
		}
	}
	return nil
}
