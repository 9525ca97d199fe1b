package mpi_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

var (
	extOnce sync.Once
	extBE16 *mpi.Datatype
)

// be16 is a registered accumulate type (as the C binding registers long
// double): 2 bytes holding a big-endian uint16, which bytes would add
// wrongly; only MPI_SUM is defined on it.
func be16(t *testing.T) *mpi.Datatype {
	extOnce.Do(func() {
		d, err := mpi.TypeContiguous(2, mpi.Byte)
		if err == nil {
			err = d.Commit()
		}
		if err != nil {
			t.Fatal(err)
		}
		mpi.RegisterAccType(d, 15, "big-endian uint16", func(o *mpi.Op) bool { return o == mpi.Sum }, func(o *mpi.Op, in, inout []byte) {
			for i := 0; i+2 <= len(inout); i += 2 {
				binary.BigEndian.PutUint16(inout[i:], binary.BigEndian.Uint16(in[i:])+binary.BigEndian.Uint16(inout[i:]))
			}
		})
		extBE16 = d
	})
	return extBE16
}

// Accumulate, GetAccumulate and FetchAndOp on a registered type combine
// with its function at the target (np 4: carries across the byte
// boundary, which a byte-wise sum would lose); an operation it does not
// define is ErrOp; Replace and NoOp move bytes.
func TestWinRegisteredAccType(t *testing.T) {
	d := be16(t)
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		p, me := c.Size(), c.Rank()
		mem := make([]byte, 2*4)
		win, err := mpi.WinCreateBytes(c, mem, 2, false)
		if err != nil {
			return err
		}
		defer win.Free()
		be := func(v uint16) []byte { b := make([]byte, 2); binary.BigEndian.PutUint16(b, v); return b }
		if err := win.Fence(); err != nil {
			return err
		}
		// Element 0 of every rank: the sum of 200 from each (800: carries).
		for tgt := 0; tgt < p; tgt++ {
			if err := mpi.AccumulateTyped(win, be(200), 1, d, tgt, 0, 1, d, mpi.Sum); err != nil {
				return err
			}
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if got := binary.BigEndian.Uint16(mem); got != uint16(200*p) {
			return fmt.Errorf("accumulated %d, want %d", got, 200*p)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		// Tickets of 300 at rank 0's element 1.
		if err := win.Lock(mpi.LockShared, 0); err != nil {
			return err
		}
		old := make([]byte, 2)
		if err := mpi.FetchAndOpTyped(win, be(300), old, d, 0, 1, mpi.Sum); err != nil {
			return err
		}
		if v := binary.BigEndian.Uint16(old); v%300 != 0 || v >= uint16(300*p) {
			return fmt.Errorf("ticket %d", v)
		}
		err = mpi.FetchAndOpTyped(win, be(1), old, d, 0, 1, mpi.Prod)
		if mpi.ErrorClass(err) != mpi.ErrOp {
			win.Unlock(0)
			return fmt.Errorf("MPI_PROD on the type: %v, want MPI_ERR_OP", err)
		}
		if err := win.Unlock(0); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := win.Lock(mpi.LockShared, 0); err != nil {
			return err
		}
		two := make([]byte, 4)
		if err := mpi.GetAccumulateTyped(win, nil, 0, d, two, 2, d, 0, 0, 2, d, mpi.NoOp); err != nil {
			return err
		}
		if err := win.Unlock(0); err != nil {
			return err
		}
		if a, b := binary.BigEndian.Uint16(two), binary.BigEndian.Uint16(two[2:]); a != uint16(200*p) || b != uint16(300*p) {
			return fmt.Errorf("rank 0's elements %d %d, want %d %d", a, b, 200*p, 300*p)
		}
		_ = me
		return nil
	})
}

// tagged is a registered pair type (as MPI_LONG_DOUBLE_INT is): a
// big-endian uint16 value then an int32 location; MaxLoc is defined on it.
type tagged struct {
	V [2]byte
	L int32
}

var (
	tagOnce sync.Once
	tagType *mpi.Datatype
)

func taggedType(t *testing.T) *mpi.Datatype {
	tagOnce.Do(func() {
		d, err := mpi.TypeOf[tagged]()
		if err != nil {
			t.Fatal(err)
		}
		mpi.RegisterAccType(d, 14, "tagged uint16", func(o *mpi.Op) bool { return o == mpi.MaxLoc }, func(o *mpi.Op, in, inout []byte) {
			for i := 0; i+6 <= len(inout); i += 6 { // packed: 2 value bytes, 4 location bytes
				a, b := binary.BigEndian.Uint16(in[i:]), binary.BigEndian.Uint16(inout[i:])
				la, lb := int32(binary.LittleEndian.Uint32(in[i+2:])), int32(binary.LittleEndian.Uint32(inout[i+2:]))
				if a > b || (a == b && la < lb) {
					copy(inout[i:i+6], in[i:i+6])
				}
			}
		})
		tagType = d
	})
	return tagType
}

// MaxLoc through a vector of a registered pair type (the layout path
// recognises the pairs by their typemap): rank r offers (100*r+256, r) at
// every other pair of rank 0's window; the winner is the last rank (a
// value a byte-wise comparison would rank wrongly: its low byte is not
// the largest). Sum on the pairs is ErrOp.
func TestWinRegisteredPairMaxLoc(t *testing.T) {
	d := taggedType(t)
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		p, me := c.Size(), c.Rank()
		mem := make([]byte, 8*4)
		win, err := mpi.WinCreateBytes(c, mem, 8, false)
		if err != nil {
			return err
		}
		defer win.Free()
		vec, err := mpi.TypeVector(2, 1, 2, d)
		if err == nil {
			err = vec.Commit()
		}
		if err != nil {
			return err
		}
		src := make([]byte, 16)
		for i := range 2 {
			binary.BigEndian.PutUint16(src[8*i:], uint16(100*me+256))
			binary.LittleEndian.PutUint32(src[8*i+4:], uint32(me))
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if err := mpi.AccumulateTyped(win, src, 2, d, 0, 0, 1, vec, mpi.MaxLoc); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if me == 0 {
			for _, i := range []int{0, 2} {
				v, l := binary.BigEndian.Uint16(mem[8*i:]), int32(binary.LittleEndian.Uint32(mem[8*i+4:]))
				if v != uint16(100*(p-1)+256) || l != int32(p-1) {
					return fmt.Errorf("pair %d: (%d, %d), want (%d, %d)", i, v, l, 100*(p-1)+256, p-1)
				}
			}
			if v := binary.BigEndian.Uint16(mem[8:]); v != 0 {
				return fmt.Errorf("pair 1 (between the vector's): %d", v)
			}
		}
		if err := mpi.AccumulateTyped(win, src, 2, d, 0, 0, 1, vec, mpi.Sum); mpi.ErrorClass(err) != mpi.ErrOp {
			return fmt.Errorf("MPI_SUM on the pairs: %v, want MPI_ERR_OP", err)
		}
		return win.Fence()
	})
}
