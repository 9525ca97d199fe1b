package mpi_test

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// The datatype-taking file accesses at np 2: a strided memory datatype
// (every other int32) written collectively through an int32 view at each
// rank's block, read back into another strided buffer by a nonblocking
// read of the other block; MPI_BYTE against an int32 etype; a read past
// the end counts bytes; a memory datatype of another basic type is
// ErrType.
func TestFileTyped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "typed.dat")
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		vec, err := mpi.TypeVector(3, 1, 2, mpi.Int32)
		if err != nil {
			return err
		}
		if err := vec.Commit(); err != nil {
			return err
		}
		mem := make([]byte, 4*5)
		for k := 0; k < 3; k++ {
			binary.LittleEndian.PutUint32(mem[8*k:], uint32(10*me+k))
			if k < 2 {
				binary.LittleEndian.PutUint32(mem[8*k+4:], 999) // gaps: not written
			}
		}
		if err := f.SetView(int64(12*me), mpi.Int32, mpi.Int32); err != nil {
			return err
		}
		if err := mpi.WriteAllTyped(f, mem, 1, vec); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		other := 1 - me
		if err := f.SetView(int64(12*other), mpi.Int32, mpi.Int32); err != nil {
			return err
		}
		got := make([]byte, 4*5)
		r, err := mpi.IreadAtTyped(f, 0, got, 1, vec)
		if err != nil {
			return err
		}
		n, err := r.Wait()
		if err != nil {
			return err
		}
		at := func(i int) int { return int(binary.LittleEndian.Uint32(got[4*i:])) }
		if n != 12 || at(0) != 10*other || at(2) != 10*other+1 || at(4) != 10*other+2 || at(1) != 0 {
			return fmt.Errorf("read %d bytes: %v", n, got)
		}
		raw := make([]byte, 8)
		if n, err = mpi.ReadAtTyped(f, 1, raw, 8, mpi.Byte); err != nil || n != 8 {
			return fmt.Errorf("bytes against int32 etype: %d, %v", n, err)
		}
		// Byte 20 of the 24-byte file: etype 2 of the view at 12, 5 of the view at 0.
		if n, err = mpi.ReadAtTyped(f, int64(2+3*me), raw, 8, mpi.Byte); err != nil || n != 4 {
			return fmt.Errorf("past the end: %d, %v", n, err)
		}
		if _, err := mpi.ReadAtTyped(f, 0, raw, 1, mpi.Float64); mpi.ErrorClass(err) != mpi.ErrType {
			return fmt.Errorf("float64 against int32 etype: %v", err)
		}
		return f.Close()
	})
}

// SetViewCurrent (MPI_DISPLACEMENT_CURRENT) at np 2: on a ModeSequential
// file the view starts at the shared file pointer; elsewhere it is ErrArg.
func TestFileSetViewCurrent(t *testing.T) {
	dir := t.TempDir()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		f, err := mpi.FileOpen(c, filepath.Join(dir, "seq.dat"), mpi.ModeCreate|mpi.ModeWronly|mpi.ModeSequential, nil)
		if err != nil {
			return err
		}
		one := make([]byte, 4)
		binary.LittleEndian.PutUint32(one, uint32(me))
		if err := mpi.WriteOrderedTyped(f, one, 4, mpi.Byte); err != nil {
			return err
		}
		if err := f.SetViewCurrent(mpi.Int32, mpi.Int32); err != nil {
			return err
		}
		if disp, _, _, err := f.GetView(); err != nil || disp != 8 {
			return fmt.Errorf("view at %d (%v), want 8", disp, err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		g, err := mpi.FileOpen(c, filepath.Join(dir, "plain.dat"), mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		if err := g.SetViewCurrent(mpi.Int32, mpi.Int32); mpi.ErrorClass(err) != mpi.ErrArg {
			return fmt.Errorf("without ModeSequential: %v", err)
		}
		return g.Close()
	})
}
