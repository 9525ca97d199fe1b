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
