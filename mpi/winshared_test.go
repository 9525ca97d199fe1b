package mpi_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

func i64s(b []byte, i int) int64      { return int64(binary.LittleEndian.Uint64(b[8*i:])) }
func seti64(b []byte, i int, v int64) { binary.LittleEndian.PutUint64(b[8*i:], uint64(v)) }
func i64b(v int64) []byte             { b := make([]byte, 8); seti64(b, 0, v); return b }

// A shared window at np 4 (goroutine ranks, each with its own mapping):
// rank r allocates r+1 int64s; the parts are contiguous and SharedQuery
// gives every part; every rank stores through the next rank's part and
// reads its own after a barrier; then Put and Accumulate through the
// window are seen by direct loads of another rank, and a fetch-and-op
// counter at rank 0 under a lock is read back through the mapping. The
// segment's file is gone from the job's directory once the window exists.
func TestWinAllocateShared(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FTMPI_TMPDIR", dir)
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		p, me := c.Size(), c.Rank()
		win, mine, err := c.WinAllocateShared(8*(me+1), 8, nil)
		if err != nil {
			return err
		}
		defer win.Free()
		if len(mine) != 8*(me+1) {
			return fmt.Errorf("my part has %d bytes, want %d", len(mine), 8*(me+1))
		}
		// (A shared-memory collective's set-up may have its own file there
		// for a moment: coll_shm.go.)
		if ents, err := os.ReadDir(dir); err != nil || slices.ContainsFunc(ents, func(e os.DirEntry) bool { return !strings.HasPrefix(e.Name(), "ftmpi-collshm-") }) {
			return fmt.Errorf("the job directory holds %v (%v) after the creation: the segment was not unlinked", ents, err)
		}
		if v, ok, err := win.GetAttr(mpi.WinCreateFlavor); err != nil || !ok || v != mpi.WinFlavorShared {
			return fmt.Errorf("flavor %v %v %v, want %d", v, ok, err, mpi.WinFlavorShared)
		}
		parts := make([][]byte, p)
		for r := 0; r < p; r++ {
			size, unit, base, err := win.SharedQuery(r)
			if err != nil {
				return err
			}
			if size != 8*(r+1) || unit != 8 || len(base) != size {
				return fmt.Errorf("query %d: size %d unit %d len %d", r, size, unit, len(base))
			}
			parts[r] = base
		}
		if unsafe.SliceData(parts[me]) != unsafe.SliceData(mine) {
			return fmt.Errorf("SharedQuery(me) is not my part")
		}
		for r := 0; r+1 < p; r++ { // contiguous: part r+1 follows part r
			if uintptr(unsafe.Pointer(unsafe.SliceData(parts[r])))+uintptr(len(parts[r])) != uintptr(unsafe.Pointer(unsafe.SliceData(parts[r+1]))) {
				return fmt.Errorf("part %d does not follow part %d", r+1, r)
			}
		}
		if size, unit, base, err := win.SharedQuery(mpi.ProcNull); err != nil || size != 8 || unit != 8 || unsafe.SliceData(base) != unsafe.SliceData(parts[0]) {
			return fmt.Errorf("query ProcNull: %d %d %v", size, unit, err)
		}
		// Direct stores into the next rank's part.
		next, prev := (me+1)%p, (me+p-1)%p
		for i := 0; i <= next; i++ {
			seti64(parts[next], i, int64(100*me+i))
		}
		if err := win.Sync(); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := win.Sync(); err != nil {
			return err
		}
		for i := 0; i <= me; i++ {
			if got := i64s(mine, i); got != int64(100*prev+i) {
				return fmt.Errorf("my element %d: %d, want %d (stored by rank %d)", i, got, 100*prev+i, prev)
			}
		}
		// Put to the next rank's element 0, Accumulate into rank 3's last
		// element; read both back through the mapping.
		if err := win.Fence(); err != nil {
			return err
		}
		if err := mpi.PutTyped(win, i64b(int64(1000+me)), 1, mpi.Int64, next, 0, 1, mpi.Int64); err != nil {
			return err
		}
		if err := mpi.AccumulateTyped(win, i64b(int64(me+1)), 1, mpi.Int64, p-1, p-1, 1, mpi.Int64, mpi.Sum); err != nil {
			return err
		}
		if err := win.Fence(); err != nil {
			return err
		}
		if got := i64s(parts[next], 0); got != int64(1000+me) {
			return fmt.Errorf("rank %d's element 0 read directly: %d, want %d", next, got, 1000+me)
		}
		want := int64(100*(p-2)+p-1) + int64(p*(p+1)/2) // rank p-2 stored it, then the sums
		if got := i64s(parts[p-1], p-1); got != want {
			return fmt.Errorf("accumulated element read directly: %d, want %d", got, want)
		}
		if err := win.Fence(); err != nil {
			return err
		}
		// A ticket counter at rank 0's element 0 (set to 0 by rank 0 before a barrier).
		if me == 0 {
			seti64(mine, 0, 0)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := win.Lock(mpi.LockShared, 0); err != nil {
			return err
		}
		old := make([]byte, 8)
		if err := mpi.FetchAndOpTyped(win, i64b(1), old, mpi.Int64, 0, 0, mpi.Sum); err != nil {
			return err
		}
		if err := win.Unlock(0); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := win.Sync(); err != nil {
			return err
		}
		if got := i64s(parts[0], 0); got != int64(p) {
			return fmt.Errorf("counter read directly: %d, want %d", got, p)
		}
		return nil
	})
}

// alloc_shared_noncontig: every part begins on a page; zero-size parts
// are allowed, and ProcNull answers the first non-empty part.
func TestWinAllocateSharedNoncontig(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		info := mpi.NewInfo()
		if err := info.Set(mpi.InfoAllocSharedNoncontig, "true"); err != nil {
			return err
		}
		size := 0
		if me%2 == 1 {
			size = 24
		}
		win, mine, err := c.WinAllocateShared(size, 4, info)
		if err != nil {
			return err
		}
		defer win.Free()
		if (size == 0) != (mine == nil) {
			return fmt.Errorf("my part of %d bytes is %v", size, mine)
		}
		for r := 0; r < c.Size(); r++ {
			n, unit, base, err := win.SharedQuery(r)
			if err != nil {
				return err
			}
			if n != 24*(r%2) || unit != 4 || len(base) != n || (n == 0) != (base == nil) {
				return fmt.Errorf("query %d: %d %d %d", r, n, unit, len(base))
			}
			if n > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(base)))%uintptr(os.Getpagesize()) != 0 {
				return fmt.Errorf("part %d does not begin on a page", r)
			}
		}
		n, _, base, err := win.SharedQuery(mpi.ProcNull)
		if err != nil || n != 24 {
			return fmt.Errorf("query ProcNull: %d %v", n, err)
		}
		if me == 1 {
			copy(mine, "written by rank one.....")
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if err := win.Sync(); err != nil {
			return err
		}
		if string(base) != "written by rank one....." {
			return fmt.Errorf("rank 1's part read through the ProcNull query: %q", base)
		}
		return nil
	})
}

// Bad input: a negative size at one rank fails the creation at every rank
// (ErrArg), SharedQuery on a window of another flavor is ErrRMAFlavor and
// of a rank outside the window ErrRank; windows of size 0 everywhere work
// (ProcNull answers size 0).
func TestWinAllocateSharedBadInput(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		size := 8
		if c.Rank() == 1 {
			size = -1
		}
		if _, _, err := c.WinAllocateShared(size, 8, nil); mpi.ErrorClass(err) != mpi.ErrArg {
			return fmt.Errorf("a negative size at rank 1: %v, want MPI_ERR_ARG", err)
		}
		if _, _, err := c.WinAllocateShared(8, 0, nil); mpi.ErrorClass(err) != mpi.ErrArg {
			return fmt.Errorf("displacement unit 0: %v, want MPI_ERR_ARG", err)
		}
		win, err := mpi.WinCreateBytes(c, make([]byte, 8), 1, false)
		if err != nil {
			return err
		}
		if _, _, _, err := win.SharedQuery(0); mpi.ErrorClass(err) != mpi.ErrRMAFlavor {
			win.Free()
			return fmt.Errorf("SharedQuery on MPI_Win_create's window: %v, want MPI_ERR_RMA_FLAVOR", err)
		}
		if err := win.Free(); err != nil {
			return err
		}
		sw, mine, err := c.WinAllocateShared(0, 1, nil)
		if err != nil {
			return err
		}
		if len(mine) != 0 {
			return fmt.Errorf("a part of %d bytes for size 0", len(mine))
		}
		if _, _, _, err := sw.SharedQuery(3); mpi.ErrorClass(err) != mpi.ErrRank {
			sw.Free()
			return fmt.Errorf("SharedQuery(3) of 3 ranks: %v, want MPI_ERR_RANK", err)
		}
		if n, _, base, err := sw.SharedQuery(mpi.ProcNull); err != nil || n != 0 || base != nil {
			sw.Free()
			return fmt.Errorf("ProcNull on an empty window: %d %v %v", n, base, err)
		}
		if err := sw.Free(); err != nil {
			return err
		}
		if _, _, _, err := sw.SharedQuery(0); mpi.ErrorClass(err) != mpi.ErrWin {
			return fmt.Errorf("SharedQuery after Free: %v, want MPI_ERR_WIN", err)
		}
		return nil
	})
}
