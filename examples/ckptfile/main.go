// Command ckptfile is a computation that checkpoints collectively through
// a file view (checkpoint.SaveFile: one file per checkpoint, every rank's
// block written by one mpi.WriteAtAll) and survives a process failure with
// ULFM: the survivors shrink the communicator, read the last checkpoint
// back collectively (checkpoint.LoadFile), one of them taking over the
// dead rank's block, and finish with the result line of a failure-free
// run.
//
// The state is B logical blocks of m float64 (B: the number of processes
// at the start); block b belongs to rank b mod size, so after a shrink a
// survivor owns the dead rank's blocks too. A step updates every value
// from its block's previous sum and the sum of all blocks (an Allreduce of
// per-block sums: each sum travels alone, so the result does not depend
// on how many processes share the work). Every k steps the processes save
// their blocks; after a failure they roll back to the newest checkpoint
// file and compute again from there.
//
//	go run ./cmd/ftmpirun -n 4 ./examples/ckptfile
//	go run ./cmd/ftmpirun -n 4 --on-failure continue \
//	    --inject 'kill:rank=2,on=ckptfile: step 25 done' ./examples/ckptfile -progress
//
// With -progress rank 0 prints "ckptfile: step S done" after every step
// (an event an injected kill can be tied to) and "ckptfile: recovered at
// step S from checkpoint V on N processes" after a repair.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
)

// state is the logical blocks a process owns.
type state map[int][]float64

func owned(b, rank, size int) bool { return b%size == rank }

// initial is block b's value at step 0.
func initial(b, m int) []float64 {
	x := make([]float64, m)
	for i := range x {
		x[i] = math.Sin(float64(b*m+i) * 0.01)
	}
	return x
}

// sums is the Allreduce of the per-block sums: each block's sum at its
// index, zero elsewhere (adding zeros is exact: the same at any size).
func sums(c *mpi.Comm, st state, nb int) ([]float64, error) {
	local := make([]float64, nb)
	for b, x := range st {
		s := 0.0
		for _, v := range x {
			s += v
		}
		local[b] = s
	}
	all := make([]float64, nb)
	return all, mpi.Allreduce(c, local, all, mpi.Sum)
}

// step advances every owned block by one step.
func step(c *mpi.Comm, st state, nb, s int) error {
	bs, err := sums(c, st, nb)
	if err != nil {
		return err
	}
	total := 0.0
	for _, v := range bs {
		total += v
	}
	for b, x := range st {
		m := float64(len(x))
		for i := range x {
			x[i] = 0.5*x[i] + 0.25*bs[b]/m + 0.125*total/(m*float64(nb)) + 1e-3*math.Cos(float64(s+i))
		}
	}
	return nil
}

// encode puts the owned blocks in one checkpoint block: (id, values)...
func encode(st state, nb, m int) []byte {
	var out []byte
	for b := range nb {
		x, ok := st[b]
		if !ok {
			continue
		}
		out = binary.LittleEndian.AppendUint64(out, uint64(b))
		for _, v := range x {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	}
	return out
}

// decode takes the blocks wanted out of checkpoint blocks.
func decode(into state, data []byte, m int, want func(b int) bool) error {
	rec := 8 * (m + 1)
	if len(data)%rec != 0 {
		return fmt.Errorf("checkpoint block of %d bytes is not whole records of %d", len(data), rec)
	}
	for ; len(data) > 0; data = data[rec:] {
		b := int(binary.LittleEndian.Uint64(data))
		if !want(b) {
			continue
		}
		x := make([]float64, m)
		for i := range x {
			x[i] = math.Float64frombits(binary.LittleEndian.Uint64(data[8+8*i:]))
		}
		into[b] = x
	}
	return nil
}

func main() {
	steps := flag.Int("steps", 60, "steps")
	every := flag.Int("every", 10, "checkpoint every this many steps")
	m := flag.Int("m", 2000, "values per block")
	progress := flag.Bool("progress", false, "rank 0 prints every step and every repair")
	flag.Parse()
	if err := run(*steps, *every, *m, *progress); err != nil {
		fmt.Fprintln(os.Stderr, "ckptfile:", err)
		os.Exit(1)
	}
}

func run(steps, every, m int, progress bool) error {
	w, err := mpi.Init()
	if err != nil {
		return err
	}
	defer w.Finalize()
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	nb := c.Size()
	// One directory for the job: rank 0 makes it, every rank gets its name.
	name := make([]byte, 256)
	if c.Rank() == 0 {
		dir, err := os.MkdirTemp("", "ckptfile-")
		if err != nil {
			return err
		}
		copy(name, dir)
	}
	if err := mpi.Bcast(c, name, 0); err != nil {
		return err
	}
	dir := string(name[:indexZero(name)])
	st := state{}
	for b := range nb {
		if owned(b, c.Rank(), c.Size()) {
			st[b] = initial(b, m)
		}
	}
	saved := map[int]int{} // checkpoint version -> size of the communicator that saved it
	for s := 1; s <= steps; s++ {
		err := step(c, st, nb, s)
		if err == nil && s%every == 0 {
			saved[s] = c.Size()
			err = checkpoint.SaveFile(c, dir, s, encode(st, nb, m))
		}
		ok, aerr := c.Agree(err == nil)
		if aerr == nil && ok {
			if progress && c.Rank() == 0 {
				fmt.Printf("ckptfile: step %d done\n", s)
			}
			continue
		}
		if aerr != nil && !errors.Is(aerr, mpi.ErrProcFailed) {
			return aerr
		}
		// Repair: revoke, shrink, roll back to the newest checkpoint.
		c.Revoke()
		nc, err := c.Shrink()
		if err != nil {
			return err
		}
		c = nc
		c.SetErrhandler(mpi.ErrorsReturn)
		v, err := checkpoint.LatestFile(dir)
		st = state{}
		if errors.Is(err, checkpoint.ErrNotFound) {
			v = 0
			for b := range nb {
				if owned(b, c.Rank(), c.Size()) {
					st[b] = initial(b, m)
				}
			}
		} else if err != nil {
			return err
		} else {
			// The checkpoint blocks (ranks of the communicator that saved
			// it) holding the logical blocks this process owns now.
			var ranks []int
			for b := range nb {
				if owned(b, c.Rank(), c.Size()) {
					r := b % saved[v]
					if !contains(ranks, r) {
						ranks = append(ranks, r)
					}
				}
			}
			blocks, err := checkpoint.LoadFile(c, dir, v, ranks...)
			if err != nil {
				return err
			}
			for _, data := range blocks {
				if err := decode(st, data, m, func(b int) bool { return owned(b, c.Rank(), c.Size()) }); err != nil {
					return err
				}
			}
		}
		if progress && c.Rank() == 0 {
			fmt.Printf("ckptfile: recovered at step %d from checkpoint %d on %d processes\n", s, v, c.Size())
		}
		s = v
	}
	bs, err := sums(c, st, nb)
	if err != nil {
		return err
	}
	total := 0.0
	for _, v := range bs {
		total += v
	}
	if c.Rank() == 0 {
		fmt.Printf("result: ckptfile blocks=%d steps=%d m=%d sum=%.15e\n", nb, steps, m, total)
		os.RemoveAll(dir)
	}
	return nil
}

func indexZero(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return len(b)
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
