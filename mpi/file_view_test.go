package mpi_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

func committed(d *mpi.Datatype, err error) (*mpi.Datatype, error) {
	if err != nil {
		return nil, err
	}
	return d, d.Commit()
}

// MPI-4.1 14.3: the typemaps of a view's etype and filetype have
// non-negative, nondecreasing displacements and, on a file opened for
// writing, no overlapping regions. A typemap breaking that is MPI_ERR_IO
// (MPICH's io/tst_fileview); a read-only file takes overlaps, and reads
// through such a view, independently and collectively, return the
// overlapping bytes twice.
func TestFileViewLayoutRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "layout.dat")
	data := make([]byte, 64)
	for i := range 16 {
		binary.LittleEndian.PutUint32(data[4*i:], uint32(100+i))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	indexed := func(blens, displs []int) (*mpi.Datatype, error) {
		return committed(mpi.TypeIndexed(blens, displs, mpi.Int32))
	}
	run(t, 1, func(w *mpi.World, c *mpi.Comm) error {
		type layout struct {
			name          string
			blens, displs []int
			readOnlyOK    bool
		}
		layouts := []layout{
			{"negative", []int{1, 1}, []int{-2, 2}, false},
			{"decreasing", []int{1, 1}, []int{3, 0}, false},
			{"overlapping", []int{3, 1}, []int{0, 1}, true},
		}
		for _, mode := range []int{mpi.ModeRdwr, mpi.ModeRdonly} {
			f, err := mpi.FileOpen(c, path, mode, nil)
			if err != nil {
				return err
			}
			for _, l := range layouts {
				d, err := indexed(l.blens, l.displs)
				if err != nil {
					return err
				}
				for _, etypeToo := range []bool{true, false} {
					et := mpi.Int32
					if etypeToo {
						et = d
					}
					err := f.SetView(0, et, d)
					ok := mode == mpi.ModeRdonly && l.readOnlyOK
					if ok && err != nil || !ok && mpi.ErrorClass(err) != mpi.ErrIO {
						return fmt.Errorf("mode %d, %s typemap (etype too: %v): %v", mode, l.name, etypeToo, err)
					}
				}
			}
			if mode == mpi.ModeRdonly {
				// The overlapping filetype: ints 0 1 2 then 1, tiled every 3.
				d, err := indexed([]int{3, 1}, []int{0, 1})
				if err != nil {
					return err
				}
				if err := f.SetView(4, mpi.Int32, d); err != nil {
					return err
				}
				want := []int32{101, 102, 103, 102, 104, 105, 106, 105}
				got := make([]int32, 8)
				if n, err := mpi.ReadAt(f, 0, got); err != nil || n != 8 || fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("ReadAt through the overlapping view: %d %v %v, want %v", n, got, err, want)
				}
				clear(got)
				if n, err := mpi.ReadAtAll(f, 0, got); err != nil || n != 8 || fmt.Sprint(got) != fmt.Sprint(want) {
					return fmt.Errorf("ReadAtAll through the overlapping view: %d %v %v, want %v", n, got, err, want)
				}
			}
			if err := f.Close(); err != nil {
				return err
			}
		}
		return nil
	})
}

// MPI-4.1 14.5.2: a view in "external32" stores each basic element of the
// etype big-endian, whatever the memory datatype (a struct of an int32 and
// a float64, an indexed pair of chars as MPICH's
// io/external32_derived_dtype); reading through the same view restores
// them; a native view of the same file sees the big-endian bytes; over a
// view of bytes the memory datatype's basic elements are converted;
// "internal" is native; other representations are
// ErrUnsupportedDatarep. The collective, independent, typed and generic
// calls all convert, and the caller's buffer is left as it was.
func TestFileExternal32(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ext32.dat")
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		st, err := committed(mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Int32, mpi.Float64}))
		if err != nil {
			return err
		}
		if err := f.SetViewDatarep(0, st, st, "bogus"); mpi.ErrorClass(err) != mpi.ErrUnsupportedDatarep {
			return fmt.Errorf("an unknown representation: %v", err)
		}
		if err := f.SetViewDatarep(0, st, st, mpi.External32); err != nil {
			return err
		}
		if r := f.Datarep(); r != mpi.External32 {
			return fmt.Errorf("Datarep = %q", r)
		}
		// One struct element per rank, at view offset rank: 12 bytes each.
		mem := make([]byte, 16)
		binary.LittleEndian.PutUint32(mem, uint32(0x01020304+me))
		binary.LittleEndian.PutUint64(mem[8:], 0x1112131415161718)
		orig := string(mem)
		if err := mpi.WriteAtAllTyped(f, int64(me), mem, 1, st); err != nil {
			return err
		}
		if string(mem) != orig {
			return fmt.Errorf("the write changed the caller's buffer")
		}
		// An independent typed write of element 2 + rank.
		if err := mpi.WriteAtTyped(f, int64(2+me), mem, 1, st); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		got := make([]byte, 16)
		for _, at := range []int64{0, 2} {
			clear(got)
			n, err := mpi.ReadAtAllTyped(f, at+int64(1-me), got, 1, st)
			if err != nil || n != 12 {
				return fmt.Errorf("read at %d: %d bytes, %v", at, n, err)
			}
			if a, b := binary.LittleEndian.Uint32(got), binary.LittleEndian.Uint64(got[8:]); a != uint32(0x01020304+1-me) || b != 0x1112131415161718 {
				return fmt.Errorf("read back at %d: %#x %#x", at, a, b)
			}
		}
		// The bytes in the file: big-endian, at the struct's displacements
		// (MPI-4.1 14.5: byte displacements are taken as the file's).
		if err := f.SetViewDatarep(0, mpi.Byte, mpi.Byte, mpi.Internal); err != nil {
			return err
		}
		raw := make([]byte, 16)
		if n, err := mpi.ReadAt(f, int64(16*me), raw); err != nil || n != 16 {
			return fmt.Errorf("raw read: %d %v", n, err)
		}
		if binary.BigEndian.Uint32(raw) != uint32(0x01020304+me) || binary.BigEndian.Uint64(raw[8:]) != 0x1112131415161718 {
			return fmt.Errorf("file bytes % x are not big-endian", raw)
		}
		// MPICH's external32_derived_dtype: indexed chars, collectively.
		ch, err := committed(mpi.TypeIndexed([]int{1, 1}, []int{0, 1}, mpi.Byte))
		if err != nil {
			return err
		}
		if err := f.SetViewDatarep(0, ch, ch, mpi.External32); err != nil {
			return err
		}
		if err := mpi.WriteAtAllTyped(f, int64(me), []byte{'a' + byte(me), 0}, 1, ch); err != nil {
			return err
		}
		cb := make([]byte, 2)
		if n, err := mpi.ReadAtAllTyped(f, int64(me), cb, 1, ch); err != nil || n != 2 || cb[0] != 'a'+byte(me) {
			return fmt.Errorf("chars: %d %q %v", n, cb, err)
		}
		// The generic calls over Go slices: int64 etype.
		if err := f.SetViewDatarep(64, mpi.Int64, mpi.Int64, mpi.External32); err != nil {
			return err
		}
		vals := []int64{int64(me) << 40, -2}
		if err := mpi.WriteAtAll(f, int64(2*me), vals); err != nil {
			return err
		}
		back := make([]int64, 2)
		if n, err := mpi.ReadAt(f, int64(2*me), back); err != nil || n != 2 || back[0] != vals[0] || back[1] != -2 {
			return fmt.Errorf("generic int64: %d %v %v", n, back, err)
		}
		if err := f.SetView(64+16*int64(me), mpi.Byte, nil); err != nil {
			return err
		}
		if n, err := mpi.ReadAt(f, 8, raw[:8]); err != nil || n != 8 || int64(binary.BigEndian.Uint64(raw)) != -2 {
			return fmt.Errorf("generic raw: % x %v", raw[:8], err)
		}
		// A view of bytes: the memory datatype's basic elements convert
		// (typed int32, generic []int32).
		if err := f.SetViewDatarep(128, mpi.Byte, mpi.Byte, mpi.External32); err != nil {
			return err
		}
		ints := make([]byte, 4)
		binary.LittleEndian.PutUint32(ints, uint32(0x0a0b0c00+me))
		if err := mpi.WriteAtTyped(f, int64(8*me), ints, 1, mpi.Int32); err != nil {
			return err
		}
		if err := mpi.WriteAt(f, int64(8*me+4), []int32{0x0d0e0f00 + int32(me)}); err != nil {
			return err
		}
		if err := f.SetView(128+8*int64(me), mpi.Byte, nil); err != nil {
			return err
		}
		if n, err := mpi.ReadAt(f, 0, raw[:8]); err != nil || n != 8 ||
			binary.BigEndian.Uint32(raw) != uint32(0x0a0b0c00+me) || binary.BigEndian.Uint32(raw[4:]) != uint32(0x0d0e0f00+me) {
			return fmt.Errorf("ints through a byte view: % x %v", raw[:8], err)
		}
		return f.Close()
	})
}
