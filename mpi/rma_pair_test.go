package mpi_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// rmaDblInt is MPI_DOUBLE_INT's layout: a float64 at 0, an int32 at 8, 16
// bytes of extent.
type rmaDblInt struct {
	V float64
	L int32
}

func putPair(b []byte, i int, v float64, l int32) {
	binary.LittleEndian.PutUint64(b[16*i:], math.Float64bits(v))
	binary.LittleEndian.PutUint32(b[16*i+8:], uint32(l))
}

func pairAt(b []byte, i int) (float64, int32) {
	return math.Float64frombits(binary.LittleEndian.Uint64(b[16*i:])), int32(binary.LittleEndian.Uint32(b[16*i+8:]))
}

// MPI_REPLACE and MPI_NO_OP on a pair type (a datatype of two basic
// types, predefined in MPI): Accumulate, GetAccumulate and FetchAndOp
// move whole pairs, atomically, also through a vector of pairs at the
// target; an origin datatype holding other basic types is an ErrType
// error. np 4, each rank targeting the next.
func TestWinPairReplaceNoOp(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		p, me := c.Size(), c.Rank()
		next, prev := (me+1)%p, (me+p-1)%p
		pt, err := mpi.TypeOf[rmaDblInt]()
		if err != nil {
			return err
		}
		mem := make([]byte, 16*8)
		win, err := mpi.WinCreateBytes(c, mem, 16, false)
		if err != nil {
			return err
		}
		defer win.Free()
		if err := win.Fence(); err != nil {
			return err
		}
		// Pairs 0..2 of next: (me+0.5+i, 10*me+i) by Replace.
		src := make([]byte, 16*3)
		for i := range 3 {
			putPair(src, i, float64(me)+0.5+float64(i), int32(10*me+i))
		}
		if err := mpi.AccumulateTyped(win, src, 3, pt, next, 0, 3, pt, mpi.Replace); err != nil {
			return err
		}
		// Pairs 4 and 6 of next through a vector of pairs.
		vec, err := mpi.TypeVector(2, 1, 2, pt)
		if err != nil {
			return err
		}
		if err := vec.Commit(); err != nil {
			return err
		}
		two := make([]byte, 32)
		putPair(two, 0, -1, int32(me))
		putPair(two, 1, -2, int32(me))
		if err := mpi.AccumulateTyped(win, two, 2, pt, next, 4, 1, vec, mpi.Replace); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		for i := range 3 {
			if v, l := pairAt(mem, i); v != float64(prev)+0.5+float64(i) || l != int32(10*prev+i) {
				return fmt.Errorf("pair %d: (%v, %d), want (%v, %d)", i, v, l, float64(prev)+0.5+float64(i), 10*prev+i)
			}
		}
		if v4, l4 := pairAt(mem, 4); v4 != -1 || l4 != int32(prev) {
			return fmt.Errorf("pair 4: (%v, %d)", v4, l4)
		}
		if v6, l6 := pairAt(mem, 6); v6 != -2 || l6 != int32(prev) {
			return fmt.Errorf("pair 6: (%v, %d)", v6, l6)
		}
		if v5, l5 := pairAt(mem, 5); v5 != 0 || l5 != 0 {
			return fmt.Errorf("pair 5 (between the vector's): (%v, %d)", v5, l5)
		}
		if err := c.Barrier(); err != nil { // every rank checked before the swaps
			return err
		}
		// Passive target: fetch pair 1 of next with NoOp, swap pair 2 with
		// Replace, fetch pairs 0..2 with GetAccumulate NoOp.
		if err := win.Lock(mpi.LockExclusive, next); err != nil {
			return err
		}
		got := make([]byte, 16)
		if err := mpi.FetchAndOpTyped(win, nil, got, pt, next, 1, mpi.NoOp); err != nil {
			return err
		}
		if v, l := pairAt(got, 0); v != float64(me)+1.5 || l != int32(10*me+1) {
			return fmt.Errorf("NoOp fetched (%v, %d)", v, l)
		}
		mine := make([]byte, 16)
		putPair(mine, 0, 99.25, 7)
		if err := mpi.FetchAndOpTyped(win, mine, got, pt, next, 2, mpi.Replace); err != nil {
			return err
		}
		if v, l := pairAt(got, 0); v != float64(me)+2.5 || l != int32(10*me+2) {
			return fmt.Errorf("Replace fetched (%v, %d)", v, l)
		}
		three := make([]byte, 48)
		if err := mpi.GetAccumulateTyped(win, nil, 0, pt, three, 3, pt, next, 0, 3, pt, mpi.NoOp); err != nil {
			return err
		}
		if v, l := pairAt(three, 2); v != 99.25 || l != 7 {
			return fmt.Errorf("pair 2 after the swap: (%v, %d)", v, l)
		}
		// An origin of (int32, float64) pairs: other basic types.
		type intDbl struct {
			L int32
			V float64
		}
		bad, err := mpi.TypeOf[intDbl]()
		if err != nil {
			return err
		}
		err = mpi.AccumulateTyped(win, make([]byte, 16), 1, bad, next, 0, 1, pt, mpi.Replace)
		if mpi.ErrorClass(err) != mpi.ErrType {
			win.Unlock(next)
			return fmt.Errorf("Replace of (int32, float64) onto (float64, int32): %v, want MPI_ERR_TYPE", err)
		}
		return win.Unlock(next)
	})
}
