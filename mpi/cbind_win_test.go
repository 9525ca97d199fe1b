package mpi_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// A byte window with displacement unit 4 over int32s: a strided Put
// (vector target type), an accumulate of int32 sums from every rank, a
// fetch-and-op ticket, a compare-and-swap and a strided Get, at np 3.
func TestWinBytesTyped(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		p, me := c.Size(), c.Rank()
		mem := make([]byte, 4*16)
		win, err := mpi.WinCreateBytes(c, mem, 4, false)
		if err != nil {
			return err
		}
		if win.DispUnit() != 4 {
			return fmt.Errorf("disp unit %d", win.DispUnit())
		}
		i32 := func(v ...int32) []byte {
			b := make([]byte, 4*len(v))
			for i, x := range v {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
			}
			return b
		}
		at := func(b []byte, i int) int32 { return int32(binary.LittleEndian.Uint32(b[4*i:])) }
		vec, err := mpi.TypeVector(3, 1, 2, mpi.Int32)
		if err != nil {
			return err
		}
		if err := vec.Commit(); err != nil {
			return err
		}
		next := (me + 1) % p
		if err := win.Fence(); err != nil {
			return err
		}
		// Slots 0, 2, 4 of next: 10*me+1..3 (a vector target type).
		if err := mpi.PutTyped(win, i32(int32(10*me+1), int32(10*me+2), int32(10*me+3)), 3, mpi.Int32, next, 0, 1, vec); err != nil {
			return err
		}
		// Slot 8 of every rank: sum of me+1.
		for tgt := 0; tgt < p; tgt++ {
			if err := mpi.AccumulateTyped(win, i32(int32(me+1)), 1, mpi.Int32, tgt, 8, 1, mpi.Int32, mpi.Sum); err != nil {
				return err
			}
			// Slots 11, 13, 15: a strided accumulate (one request with the typemap).
			if err := mpi.AccumulateTyped(win, i32(1, 2, 3), 3, mpi.Int32, tgt, 11, 1, vec, mpi.Sum); err != nil {
				return err
			}
		}
		if err := win.Fence(); err != nil {
			return err
		}
		prev := (me - 1 + p) % p
		for k, slot := range []int{0, 2, 4} {
			if got, want := at(mem, slot), int32(10*prev+k+1); got != want {
				return fmt.Errorf("slot %d: %d, want %d", slot, got, want)
			}
		}
		if got, want := at(mem, 8), int32(p*(p+1)/2); got != want {
			return fmt.Errorf("sum slot: %d, want %d", got, want)
		}
		if at(mem, 11) != int32(p) || at(mem, 13) != int32(2*p) || at(mem, 15) != int32(3*p) || at(mem, 12) != 0 {
			return fmt.Errorf("strided sums %d %d %d (gap %d)", at(mem, 11), at(mem, 13), at(mem, 15), at(mem, 12))
		}
		// Passive target: a ticket counter at rank 0, slot 10.
		if err := win.Lock(mpi.LockShared, 0); err != nil {
			return err
		}
		old := make([]byte, 4)
		if err := mpi.FetchAndOpTyped(win, i32(1), old, mpi.Int32, 0, 10, mpi.Sum); err != nil {
			return err
		}
		if err := win.Unlock(0); err != nil {
			return err
		}
		if v := at(old, 0); v < 0 || int(v) >= p {
			return fmt.Errorf("ticket %d", v)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		// Read back next's strided slots into the same slots here (vector
		// origin and target types).
		if err := win.Lock(mpi.LockShared, next); err != nil {
			return err
		}
		got := make([]byte, 4*5)
		if err := mpi.GetTyped(win, got, 1, vec, next, 0, 1, vec); err != nil {
			return err
		}
		cas := make([]byte, 4)
		if err := mpi.CompareAndSwapTyped(win, i32(-5), i32(int32(10*me+1)), cas, mpi.Int32, next, 0); err != nil {
			return err
		}
		if err := win.Unlock(next); err != nil {
			return err
		}
		if at(got, 0) != int32(10*me+1) || at(got, 2) != int32(10*me+2) || at(got, 4) != int32(10*me+3) || at(cas, 0) != int32(10*me+1) {
			return fmt.Errorf("get %v cas %d", got, at(cas, 0))
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if me == 0 {
			if v := at(mem, 10); v != int32(p) {
				return fmt.Errorf("tickets %d, want %d", v, p)
			}
		}
		if v := at(mem, 0); v != -5 {
			return fmt.Errorf("CAS left %d", v)
		}
		// Out of range: MPI_ERR_RMA_RANGE, returned.
		if err := win.SetErrhandler(mpi.ErrorsReturn); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		err = mpi.PutTyped(win, i32(1, 2), 2, mpi.Int32, next, 15, 2, mpi.Int32)
		if mpi.ErrorClass(err) != mpi.ErrRMARange {
			return fmt.Errorf("put past the end: %v", err)
		}
		// MPI_PROC_NULL targets: no-ops, a completed request.
		if err := mpi.PutTyped(win, i32(1), 1, mpi.Int32, mpi.ProcNull, 0, 1, mpi.Int32); err != nil {
			return fmt.Errorf("put to ProcNull: %v", err)
		}
		r, err := mpi.RgetTyped(win, make([]byte, 4), 1, mpi.Int32, mpi.ProcNull, 0, 1, mpi.Int32)
		if err != nil {
			return fmt.Errorf("rget from ProcNull: %v", err)
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		return win.Free()
	})
}

// MaxLoc and MinLoc accumulates on (value, location) pairs of a byte
// window, at np 3: a padded (float64, int32) pair datatype gathers the
// largest value and its rank at rank 0 under a fence; a fetching MinLoc on
// (int32, int32) pairs returns the previous pair.
func TestWinBytesLocAccumulate(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		me, p := c.Rank(), c.Size()
		st, err := mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Float64, mpi.Int32})
		if err != nil {
			return err
		}
		pair, err := mpi.TypeCreateResized(st, 0, 16)
		if err != nil {
			return err
		}
		if err := pair.Commit(); err != nil {
			return err
		}
		two, err := mpi.TypeContiguous(2, mpi.Int32)
		if err != nil {
			return err
		}
		if err := two.Commit(); err != nil {
			return err
		}
		mem := make([]byte, 48)
		win, err := mpi.WinCreateBytes(c, mem, 1, false)
		if err != nil {
			return err
		}
		// Slots 0 and 1 (16 bytes each) of rank 0: pairs; slot at 32: (int32, int32).
		put := func(b []byte, v float64, loc int32) {
			binary.LittleEndian.PutUint64(b, math.Float64bits(v))
			binary.LittleEndian.PutUint32(b[8:], uint32(loc))
		}
		if me == 0 {
			put(mem[0:], -1, -1)
			put(mem[16:], 100, -1)
			binary.LittleEndian.PutUint32(mem[32:], 50)
			binary.LittleEndian.PutUint32(mem[36:], 9)
		}
		if err := win.Fence(); err != nil {
			return err
		}
		origin := make([]byte, 32)
		put(origin[0:], float64(10*(me%2)+me), int32(me)) // max: rank 1 (11)
		put(origin[16:], float64(me), int32(me))          // max stays 100
		if err := mpi.AccumulateTyped(win, origin, 2, pair, 0, 0, 2, pair, mpi.MaxLoc); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if me == 0 {
			v0, l0 := math.Float64frombits(binary.LittleEndian.Uint64(mem)), int32(binary.LittleEndian.Uint32(mem[8:]))
			v1, l1 := math.Float64frombits(binary.LittleEndian.Uint64(mem[16:])), int32(binary.LittleEndian.Uint32(mem[24:]))
			if v0 != 11 || l0 != 1 || v1 != 100 || l1 != -1 {
				return fmt.Errorf("maxloc: (%v, %d) (%v, %d)", v0, l0, v1, l1)
			}
		}
		// Fetching MinLoc on (int32, int32), one rank at a time.
		for r := 0; r < p; r++ {
			if r == me {
				if err := win.Lock(mpi.LockExclusive, 0); err != nil {
					return err
				}
				in, prev := make([]byte, 8), make([]byte, 8)
				binary.LittleEndian.PutUint32(in, uint32(40-me))
				binary.LittleEndian.PutUint32(in[4:], uint32(me))
				if err := mpi.GetAccumulateTyped(win, in, 1, two, prev, 1, two, 0, 32, 1, two, mpi.MinLoc); err != nil {
					return err
				}
				if err := win.Unlock(0); err != nil {
					return err
				}
				want := [2]int32{50, 9}
				if me > 0 {
					want = [2]int32{int32(40 - me + 1), int32(me - 1)}
				}
				if got := [2]int32{int32(binary.LittleEndian.Uint32(prev)), int32(binary.LittleEndian.Uint32(prev[4:]))}; got != want {
					return fmt.Errorf("minloc fetched %v, want %v", got, want)
				}
			}
			if err := c.Barrier(); err != nil {
				return err
			}
		}
		return win.Free()
	})
}

// A dynamic window at np 3: each process attaches memory and publishes
// its address; Put, Get, a fetching accumulate and a compare-and-swap
// address the next process's memory; a detached region is refused.
func TestWinDynamic(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		me, p := c.Rank(), c.Size()
		win, err := mpi.WinCreateDynamic(c)
		if err != nil {
			return err
		}
		mem := make([]byte, 32)
		if err := win.Attach(mem); err != nil {
			return err
		}
		addrs := make([]uint64, p)
		if err := mpi.Allgather(c, []uint64{uint64(uintptr(unsafe.Pointer(&mem[0])))}, addrs); err != nil {
			return err
		}
		next, prev := (me+1)%p, (me+p-1)%p
		i32 := func(v int32) []byte { b := make([]byte, 4); binary.LittleEndian.PutUint32(b, uint32(v)); return b }
		if err := win.Fence(); err != nil {
			return err
		}
		if err := mpi.PutTyped(win, i32(int32(100+me)), 1, mpi.Int32, next, int(addrs[next])+4, 1, mpi.Int32); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if v := int32(binary.LittleEndian.Uint32(mem[4:])); v != int32(100+prev) {
			return fmt.Errorf("put: %d, want %d", v, 100+prev)
		}
		got, old, cas := make([]byte, 4), make([]byte, 4), make([]byte, 4)
		if err := mpi.GetTyped(win, got, 1, mpi.Int32, next, int(addrs[next])+4, 1, mpi.Int32); err != nil {
			return err
		}
		if err := mpi.FetchAndOpTyped(win, i32(5), old, mpi.Int32, next, int(addrs[next])+8, mpi.Sum); err != nil {
			return err
		}
		if err := mpi.CompareAndSwapTyped(win, i32(7), i32(0), cas, mpi.Int32, next, int(addrs[next])+12); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		le := binary.LittleEndian
		if int32(le.Uint32(got)) != int32(100+me) || le.Uint32(old) != 0 || le.Uint32(cas) != 0 ||
			le.Uint32(mem[8:]) != 5 || le.Uint32(mem[12:]) != 7 {
			return fmt.Errorf("get %d fop %d cas %d, memory %v", int32(le.Uint32(got)), le.Uint32(old), le.Uint32(cas), mem)
		}
		if err := win.Detach(uintptr(addrs[me])); err != nil {
			return err
		}
		return win.Free()
	})
}
