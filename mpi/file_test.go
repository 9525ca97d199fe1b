package mpi_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// blockView sets a view of blocks of blk int64 per rank, interleaved in
// rank order (a vector filetype resized to the extent of one round).
func blockView(f *mpi.File, c *mpi.Comm, blk int) error {
	vec, err := mpi.TypeVector(1, blk, blk, mpi.Int64)
	if err != nil {
		return err
	}
	ft, err := mpi.TypeCreateResized(vec, 0, 8*blk*c.Size())
	if err != nil {
		return err
	}
	if err := ft.Commit(); err != nil {
		return err
	}
	return f.SetView(int64(8*blk*c.Rank()), mpi.Int64, ft)
}

func want(rank, i int) int64 { return int64(1000*rank + i + 1) }

// The expected file of rounds rounds of blocks of blk int64 per rank.
func wantFile(np, blk, rounds int) []byte {
	var out []int64
	for k := range rounds {
		for r := range np {
			for i := range blk {
				out = append(out, want(r, k*blk+i))
			}
		}
	}
	b := new(bytes.Buffer)
	for _, v := range out {
		var x [8]byte
		for j := range 8 {
			x[j] = byte(uint64(v) >> (8 * j))
		}
		b.Write(x[:])
	}
	return b.Bytes()
}

// MPI-4.1 14.4: a strided view of blocks per rank written collectively
// (two-phase, one and several aggregators, several rounds) and
// independently gives the same bytes; read back collectively and
// independently; GetSize, GetView, GetByteOffset.
func TestFileStridedViewWriteRead(t *testing.T) {
	for _, np := range []int{1, 3, 4} {
		for _, hint := range []string{"", "2", "3"} {
			t.Run(fmt.Sprintf("np%d_cb%s", np, hint), func(t *testing.T) {
				dir := t.TempDir()
				const blk, rounds = 3, 5
				run(t, np, func(w *mpi.World, c *mpi.Comm) error {
					info := mpi.NewInfo()
					if hint != "" {
						info.Set("cb_nodes", hint)
						info.Set("cb_buffer_size", "40") // several rounds per domain
					}
					path := filepath.Join(dir, "coll.dat")
					f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, info)
					if err != nil {
						return err
					}
					if err := blockView(f, c, blk); err != nil {
						return err
					}
					mine := make([]int64, blk*rounds)
					for i := range mine {
						mine[i] = want(c.Rank(), i)
					}
					if err := mpi.WriteAtAll(f, 0, mine); err != nil {
						return err
					}
					if err := f.Sync(); err != nil {
						return err
					}
					got := make([]int64, len(mine))
					n, err := mpi.ReadAtAll(f, 0, got)
					if err != nil {
						return err
					}
					if n != len(mine) || !slices.Equal(got, mine) {
						return fmt.Errorf("rank %d ReadAtAll: %d %v, want %v", c.Rank(), n, got, mine)
					}
					// Reading the second half independently.
					half := make([]int64, len(mine)/2)
					if _, err := mpi.ReadAt(f, int64(len(mine)-len(half)), half); err != nil {
						return err
					}
					if !slices.Equal(half, mine[len(mine)-len(half):]) {
						return fmt.Errorf("rank %d ReadAt: %v", c.Rank(), half)
					}
					if size, err := f.GetSize(); err != nil || size != int64(8*blk*rounds*np) {
						return fmt.Errorf("GetSize = %d, %v", size, err)
					}
					disp, et, _, err := f.GetView()
					if err != nil || disp != int64(8*blk*c.Rank()) || et != mpi.Int64 {
						return fmt.Errorf("GetView = %d %v %v", disp, et, err)
					}
					if b, err := f.GetByteOffset(int64(blk)); err != nil || b != int64(8*blk*(np+c.Rank())) {
						return fmt.Errorf("GetByteOffset(%d) = %d, %v", blk, b, err)
					}
					// Reading past the end stops there.
					tail := make([]int64, blk+2)
					n, err = mpi.ReadAtAll(f, int64(blk*rounds-1), tail)
					if err != nil || n != 1 {
						return fmt.Errorf("ReadAtAll at the end: %d, %v, want 1", n, err)
					}
					if err := f.Close(); err != nil {
						return err
					}
					// Independent writes of the same layout give the same file.
					g, err := mpi.FileOpen(c, filepath.Join(dir, "indep.dat"), mpi.ModeCreate|mpi.ModeWronly, nil)
					if err != nil {
						return err
					}
					if err := blockView(g, c, blk); err != nil {
						return err
					}
					if err := mpi.WriteAt(g, 0, mine); err != nil {
						return err
					}
					return g.Close()
				})
				exp := wantFile(np, blk, rounds)
				for _, name := range []string{"coll.dat", "indep.dat"} {
					b, err := os.ReadFile(filepath.Join(dir, name))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(b, exp) {
						t.Fatalf("%s: %d bytes differ from the expected %d", name, len(b), len(exp))
					}
				}
			})
		}
	}
}

// MPI-4.1 14.2.1: invalid access modes are ErrAmode errors naming the
// modes; the mode must be the same at every process (ErrNotSame).
func TestFileOpenModes(t *testing.T) {
	dir := t.TempDir()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		path := filepath.Join(dir, "m.dat")
		for _, tc := range []struct {
			amode int
			names string
		}{
			{0, "none of MPI_MODE_RDONLY"},
			{mpi.ModeRdonly | mpi.ModeRdwr, "more than one"},
			{mpi.ModeRdonly | mpi.ModeCreate, "MPI_MODE_CREATE with MPI_MODE_RDONLY"},
			{mpi.ModeRdonly | mpi.ModeExcl, "MPI_MODE_EXCL with MPI_MODE_RDONLY"},
			{mpi.ModeRdwr | mpi.ModeSequential, "MPI_MODE_SEQUENTIAL with MPI_MODE_RDWR"},
			{mpi.ModeRdwr | 1024, "unknown mode bits 0x400"},
		} {
			_, err := mpi.FileOpen(c, path, tc.amode, nil)
			if !errors.Is(err, mpi.ErrAmode) || !strings.Contains(err.Error(), tc.names) {
				return fmt.Errorf("amode %#x: %v, want ErrAmode naming %q", tc.amode, err, tc.names)
			}
		}
		// Bad at one process only: every process fails.
		amode := mpi.ModeCreate | mpi.ModeRdwr
		if c.Rank() == 1 {
			amode = mpi.ModeRdonly | mpi.ModeCreate
		}
		if _, err := mpi.FileOpen(c, path, amode, nil); !errors.Is(err, mpi.ErrAmode) {
			return fmt.Errorf("amode bad at rank 1: %v", err)
		}
		amode = mpi.ModeCreate | mpi.ModeRdwr
		if c.Rank() == 1 {
			amode = mpi.ModeCreate | mpi.ModeWronly
		}
		if _, err := mpi.FileOpen(c, path, amode, nil); !errors.Is(err, mpi.ErrNotSame) {
			return fmt.Errorf("different amodes: %v", err)
		}
		info := mpi.NewInfo()
		info.Set("cb_nodes", "zero")
		if _, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, info); !errors.Is(err, mpi.ErrInfoValue) {
			return fmt.Errorf("cb_nodes=zero: %v", err)
		}
		return nil
	})
}

// File errors: MPI classes wrapping the operating system's error with the
// path; MPI_MODE_EXCL, DELETE_ON_CLOSE, APPEND, SEQUENTIAL, RDONLY,
// WRONLY; FileDelete; closing twice.
func TestFileErrorsAndModes(t *testing.T) {
	dir := t.TempDir()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		missing := filepath.Join(dir, "missing.dat")
		_, err := mpi.FileOpen(c, missing, mpi.ModeRdonly, nil)
		if !errors.Is(err, mpi.ErrNoSuchFile) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
			return fmt.Errorf("opening a missing file: %v", err)
		}
		path := filepath.Join(dir, "x.dat")
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeExcl|mpi.ModeWronly, nil)
		if err != nil {
			return fmt.Errorf("create excl: %v", err)
		}
		if err := mpi.WriteAt(f, int64(c.Rank()), []byte{byte('a' + c.Rank())}); err != nil {
			return err
		}
		if _, err := mpi.ReadAt(f, 0, make([]byte, 1)); !errors.Is(err, mpi.ErrAccess) {
			return fmt.Errorf("ReadAt on a write-only file: %v", err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := f.Close(); !errors.Is(err, mpi.ErrFile) {
			return fmt.Errorf("second Close: %v", err)
		}
		if _, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeExcl|mpi.ModeRdwr, nil); !errors.Is(err, mpi.ErrFileExists) || !strings.Contains(err.Error(), "MPI_MODE_EXCL") {
			return fmt.Errorf("create excl of an existing file: %v", err)
		}
		// Read only.
		f, err = mpi.FileOpen(c, path, mpi.ModeRdonly, nil)
		if err != nil {
			return err
		}
		b := make([]byte, 4)
		if n, err := mpi.ReadAt(f, 0, b); err != nil || n != 3 || string(b[:3]) != "abc" {
			return fmt.Errorf("ReadAt = %d %q %v", n, b, err)
		}
		if err := mpi.WriteAt(f, 0, b); !errors.Is(err, mpi.ErrReadOnly) {
			return fmt.Errorf("WriteAt on a read-only file: %v", err)
		}
		if err := f.SetSize(0); !errors.Is(err, mpi.ErrReadOnly) {
			return fmt.Errorf("SetSize on a read-only file: %v", err)
		}
		if am, _ := f.GetAmode(); am != mpi.ModeRdonly {
			return fmt.Errorf("GetAmode = %#x", am)
		}
		if g, _ := f.GetGroup(); g.Size() != 3 || g.Rank() != c.Rank() {
			return fmt.Errorf("GetGroup: size %d rank %d", g.Size(), g.Rank())
		}
		if err := f.Close(); err != nil {
			return err
		}
		// Append: the pointers start at the end.
		f, err = mpi.FileOpen(c, path, mpi.ModeAppend|mpi.ModeWronly, nil)
		if err != nil {
			return err
		}
		if p, _ := f.GetPosition(); p != 3 {
			return fmt.Errorf("GetPosition after MPI_MODE_APPEND = %d, want 3", p)
		}
		if err := f.Close(); err != nil {
			return err
		}
		// Sequential: only the shared pointer.
		f, err = mpi.FileOpen(c, path, mpi.ModeSequential|mpi.ModeWronly|mpi.ModeDeleteOnClose, nil)
		if err != nil {
			return err
		}
		if err := mpi.WriteAt(f, 0, b); !errors.Is(err, mpi.ErrUnsupportedOperation) {
			return fmt.Errorf("WriteAt on a sequential file: %v", err)
		}
		if _, err := f.Seek(0, mpi.SeekSet); !errors.Is(err, mpi.ErrUnsupportedOperation) {
			return fmt.Errorf("Seek on a sequential file: %v", err)
		}
		if err := mpi.WriteShared(f, []byte{'z'}); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("MPI_MODE_DELETE_ON_CLOSE left the file: %v", err)
		}
		if err := mpi.FileDelete(path, nil); !errors.Is(err, mpi.ErrNoSuchFile) {
			return fmt.Errorf("FileDelete of a deleted file: %v", err)
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), "shfp") {
				return fmt.Errorf("Close left the shared pointer file %s", e.Name())
			}
		}
		return nil
	})
}

// Seed 003 17.12.2: FileOpen is all or nothing: a process that cannot open
// the file makes every process fail.
func TestFileOpenAllOrNothing(t *testing.T) {
	dir := t.TempDir()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		path := filepath.Join(dir, "a.dat")
		if c.Rank() == 0 {
			if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
				return err
			}
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		p := path
		if c.Rank() == 2 {
			p = filepath.Join(dir, "nope", "a.dat") // no such directory here
		}
		f, err := mpi.FileOpen(c, p, mpi.ModeRdonly, nil)
		if f != nil || err == nil {
			return fmt.Errorf("rank %d: FileOpen succeeded although rank 2 could not open the file", c.Rank())
		}
		if c.Rank() == 2 && !errors.Is(err, mpi.ErrNoSuchFile) {
			return fmt.Errorf("rank 2: %v", err)
		}
		if c.Rank() != 2 && (!errors.Is(err, mpi.ErrIO) || !strings.Contains(err.Error(), "another process")) {
			return fmt.Errorf("rank %d: %v", c.Rank(), err)
		}
		return nil
	})
}

// MPI-4.1 14.4.3, 14.4.5: the individual file pointer (Read, Write, Seek,
// GetPosition) and the nonblocking forms.
func TestFilePointerAndNonblocking(t *testing.T) {
	dir := t.TempDir()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		f, err := mpi.FileOpen(c, filepath.Join(dir, "p.dat"), mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		if err := f.SetView(int64(64*c.Rank()), mpi.Float64, nil); err != nil {
			return err
		}
		if err := mpi.Write(f, []float64{1, 2, 3}); err != nil {
			return err
		}
		if p, _ := f.GetPosition(); p != 3 {
			return fmt.Errorf("position after writing 3 = %d", p)
		}
		r, err := mpi.Iwrite(f, []float64{4, 5})
		if err != nil {
			return err
		}
		if _, err := r.Wait(); err != nil {
			return err
		}
		if p, err := f.Seek(-2, mpi.SeekCur); err != nil || p != 3 {
			return fmt.Errorf("Seek(-2, cur) = %d, %v", p, err)
		}
		if _, err := f.Seek(-1, mpi.SeekSet); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("Seek to -1: %v", err)
		}
		if _, err := f.Seek(0, 7); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("Seek with whence 7: %v", err)
		}
		got := make([]float64, 2)
		if n, err := mpi.Read(f, got); err != nil || n != 2 || got[0] != 4 || got[1] != 5 {
			return fmt.Errorf("Read = %d %v %v", n, got, err)
		}
		if _, err := f.Seek(0, mpi.SeekSet); err != nil {
			return err
		}
		rr, err := mpi.Iread(f, got)
		if err != nil {
			return err
		}
		if n, err := rr.Wait(); err != nil || n != 2 || got[0] != 1 {
			return fmt.Errorf("Iread = %d %v %v", n, got, err)
		}
		wr, err := mpi.IwriteAt(f, 6, []float64{7})
		if err != nil {
			return err
		}
		if _, err := wr.Wait(); err != nil {
			return err
		}
		one := make([]float64, 1)
		ir, err := mpi.IreadAt(f, 6, one)
		if err != nil {
			return err
		}
		if n, err := ir.Wait(); err != nil || n != 1 || one[0] != 7 {
			return fmt.Errorf("IreadAt = %d %v %v", n, one, err)
		}
		// Collective nonblocking, then a blocking collective after it.
		cr, err := mpi.IwriteAtAll(f, 0, []float64{float64(10 + c.Rank())})
		if err != nil {
			return err
		}
		all := make([]float64, 1)
		if _, err := mpi.ReadAtAll(f, 0, all); err != nil || all[0] != float64(10+c.Rank()) {
			return fmt.Errorf("ReadAtAll after IwriteAtAll = %v %v", all, err)
		}
		if _, err := cr.Wait(); err != nil {
			return err
		}
		cr2, err := mpi.IreadAtAll(f, 6, one)
		if err != nil {
			return err
		}
		if n, err := cr2.Wait(); err != nil || n != 1 || one[0] != 7 {
			return fmt.Errorf("IreadAtAll = %d %v %v", n, one, err)
		}
		// Split collectives; the individual-pointer nonblocking forms.
		if err := mpi.WriteAtAllBegin(f, 1, []float64{20}); err != nil {
			return err
		}
		if err := mpi.ReadAtAllBegin(f, 1, one); !errors.Is(err, mpi.ErrOther) {
			return fmt.Errorf("a second split collective: %v", err)
		}
		if _, err := f.ReadAtAllEnd(); !errors.Is(err, mpi.ErrOther) {
			return fmt.Errorf("ReadAtAllEnd without its begin: %v", err)
		}
		if err := f.WriteAtAllEnd(); err != nil {
			return err
		}
		if err := mpi.ReadAtAllBegin(f, 1, one); err != nil {
			return err
		}
		if n, err := f.ReadAtAllEnd(); err != nil || n != 1 || one[0] != 20 {
			return fmt.Errorf("ReadAtAllEnd = %d %v %v", n, one, err)
		}
		if _, err := f.Seek(2, mpi.SeekSet); err != nil {
			return err
		}
		if err := mpi.WriteAllBegin(f, []float64{30, 31}); err != nil {
			return err
		}
		if err := f.WriteAllEnd(); err != nil {
			return err
		}
		iw, err := mpi.IwriteAll(f, []float64{32})
		if err != nil {
			return err
		}
		if _, err := iw.Wait(); err != nil {
			return err
		}
		if _, err := f.Seek(2, mpi.SeekSet); err != nil {
			return err
		}
		three := make([]float64, 3)
		if err := mpi.ReadAllBegin(f, three[:2]); err != nil {
			return err
		}
		if n, err := f.ReadAllEnd(); err != nil || n != 2 {
			return fmt.Errorf("ReadAllEnd = %d, %v", n, err)
		}
		ir2, err := mpi.IreadAll(f, three[2:])
		if err != nil {
			return err
		}
		if n, err := ir2.Wait(); err != nil || n != 1 || !slices.Equal(three, []float64{30, 31, 32}) {
			return fmt.Errorf("IreadAll = %d %v %v", n, three, err)
		}
		if p, err := f.Seek(0, mpi.SeekEnd); err != nil || p != 7+int64(8*(1-c.Rank())) {
			return fmt.Errorf("Seek to the end = %d, %v", p, err)
		}
		// A buffer that is not whole etypes; a mismatching element type.
		if err := mpi.WriteAt(f, 0, []byte{1, 2, 3}); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("3 bytes into float64 etypes: %v", err)
		}
		if err := mpi.WriteAt(f, 0, []int64{1}); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("int64 into float64 etypes: %v", err)
		}
		if err := mpi.WriteAt(f, -1, []float64{1}); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("negative offset: %v", err)
		}
		return f.Close()
	})
}

// MPI-4.1 14.4.4: the shared file pointer: WriteShared of every rank
// lands whole and without overlap; WriteOrdered in rank order;
// ReadOrdered; SeekShared; GetPositionShared; SetView resets it.
func TestFileSharedPointer(t *testing.T) {
	dir := t.TempDir()
	const np, blk = 4, 5
	path := filepath.Join(dir, "s.dat")
	run(t, np, func(w *mpi.World, c *mpi.Comm) error {
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		if err := f.SetView(0, mpi.Int32, nil); err != nil {
			return err
		}
		mine := make([]int32, blk)
		for i := range mine {
			mine[i] = int32(100*c.Rank() + i)
		}
		if err := mpi.WriteShared(f, mine); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if p, err := f.GetPositionShared(); err != nil || p != np*blk {
			return fmt.Errorf("GetPositionShared = %d, %v", p, err)
		}
		// Ordered, after the independent ones.
		if err := mpi.WriteOrdered(f, mine[:c.Rank()+1]); err != nil {
			return err
		}
		if p, _ := f.GetPositionShared(); p != np*blk+np*(np+1)/2 {
			return fmt.Errorf("after WriteOrdered: %d", p)
		}
		if err := f.SeekShared(np*blk, mpi.SeekSet); err != nil {
			return err
		}
		got := make([]int32, c.Rank()+1)
		if n, err := mpi.ReadOrdered(f, got); err != nil || n != len(got) || !slices.Equal(got, mine[:c.Rank()+1]) {
			return fmt.Errorf("ReadOrdered = %d %v %v", n, got, err)
		}
		if err := f.SeekShared(0, mpi.SeekSet); err != nil {
			return err
		}
		if err := f.SeekShared(int64(c.Rank()), mpi.SeekSet); !errors.Is(err, mpi.ErrNotSame) && c.Size() > 1 {
			return fmt.Errorf("SeekShared with different offsets: %v", err)
		}
		one := make([]int32, blk)
		if _, err := mpi.ReadShared(f, one); err != nil {
			return err
		}
		if one[0]%100 != 0 || one[blk-1] != one[0]+blk-1 {
			return fmt.Errorf("ReadShared got a torn block %v", one)
		}
		if err := f.SetView(0, mpi.Int32, nil); err != nil {
			return err
		}
		if p, _ := f.GetPositionShared(); p != 0 {
			return fmt.Errorf("shared pointer after SetView = %d", p)
		}
		if err := c.Barrier(); err != nil { // every rank checked before anyone moves it
			return err
		}
		// Nonblocking and split forms: read the first np*blk elements back.
		ir, err := mpi.IreadShared(f, one)
		if err != nil {
			return err
		}
		if n, err := ir.Wait(); err != nil || n != blk || one[0]%100 != 0 {
			return fmt.Errorf("IreadShared = %d %v %v", n, one, err)
		}
		if err := f.Sync(); err != nil { // every IreadShared reserved its block
			return err
		}
		if p, _ := f.GetPositionShared(); p != np*blk {
			return fmt.Errorf("shared pointer after IreadShared = %d", p)
		}
		if err := mpi.ReadOrderedBegin(f, got); err != nil {
			return err
		}
		if n, err := f.ReadOrderedEnd(); err != nil || n != len(got) || !slices.Equal(got, mine[:c.Rank()+1]) {
			return fmt.Errorf("ReadOrderedBegin/End = %d %v %v", n, got, err)
		}
		if err := f.SeekShared(0, mpi.SeekEnd); err != nil {
			return err
		}
		if err := mpi.WriteOrderedBegin(f, []int32{int32(7 + c.Rank())}); err != nil {
			return err
		}
		if err := f.WriteOrderedEnd(); err != nil {
			return err
		}
		wr, err := mpi.IwriteShared(f, []int32{-1})
		if err != nil {
			return err
		}
		if _, err := wr.Wait(); err != nil {
			return err
		}
		return f.Close()
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]int32, len(b)/4)
	for i := range vals {
		vals[i] = int32(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	seen := map[int32]bool{}
	for k := 0; k < np; k++ {
		blkv := vals[k*blk : (k+1)*blk]
		r := blkv[0] / 100
		for i := range blkv {
			if blkv[i] != 100*r+int32(i) {
				t.Fatalf("shared block %d torn: %v", k, blkv)
			}
		}
		seen[r] = true
	}
	if len(seen) != np {
		t.Fatalf("shared writes overlap: %v", vals[:np*blk])
	}
	var ord []int32
	for r := range np {
		for i := 0; i <= r; i++ {
			ord = append(ord, int32(100*r+i))
		}
	}
	tail := np*blk + len(ord)
	if !slices.Equal(vals[np*blk:tail], ord) {
		t.Fatalf("ordered part %v, want %v", vals[np*blk:tail], ord)
	}
	for r := range np {
		if vals[tail+r] != int32(7+r) {
			t.Fatalf("WriteOrderedBegin/End part %v", vals[tail:])
		}
	}
	if len(vals) != tail+2*np || slices.Index(vals[tail+np:], -1) != 0 || slices.Max(vals[tail+np:]) != -1 {
		t.Fatalf("IwriteShared part %v", vals[tail:])
	}
}

// MPI-4.1 14.2.3-14.2.4, 14.6: SetSize truncates and extends, Preallocate
// only extends, both need the same size everywhere; atomicity.
func TestFileSizeAtomicityInfo(t *testing.T) {
	dir := t.TempDir()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		f, err := mpi.FileOpen(c, filepath.Join(dir, "z.dat"), mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		if err := f.SetSize(100); err != nil {
			return err
		}
		if s, _ := f.GetSize(); s != 100 {
			return fmt.Errorf("size after SetSize(100) = %d", s)
		}
		if err := f.Preallocate(50); err != nil {
			return err
		}
		if s, _ := f.GetSize(); s != 100 {
			return fmt.Errorf("Preallocate(50) changed the size to %d", s)
		}
		if err := f.Preallocate(200); err != nil {
			return err
		}
		if err := f.SetSize(10); err != nil {
			return err
		}
		if s, _ := f.GetSize(); s != 10 {
			return fmt.Errorf("size after SetSize(10) = %d", s)
		}
		if err := f.SetSize(int64(c.Rank())); !errors.Is(err, mpi.ErrNotSame) {
			return fmt.Errorf("SetSize with different sizes: %v", err)
		}
		if err := f.SetSize(-1); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("SetSize(-1): %v", err)
		}
		if err := f.SetAtomicity(true); err != nil {
			return err
		}
		if a, _ := f.GetAtomicity(); !a {
			return errors.New("GetAtomicity after SetAtomicity(true) = false")
		}
		// Atomic mode: every rank writes a whole block over the same range
		// many times; a read sees one block whole.
		buf := bytes.Repeat([]byte{byte('a' + c.Rank())}, 4096)
		for range 20 {
			if err := mpi.WriteAt(f, 0, buf); err != nil {
				return err
			}
			got := make([]byte, 4096)
			if _, err := mpi.ReadAt(f, 0, got); err != nil {
				return err
			}
			if bytes.Count(got, got[:1]) != len(got) {
				return errors.New("atomic mode: a read saw a mix of two writes")
			}
		}
		if err := f.SetAtomicity(c.Rank() == 0); !errors.Is(err, mpi.ErrNotSame) {
			return fmt.Errorf("SetAtomicity with different flags: %v", err)
		}
		info := mpi.NewInfo()
		info.Set("cb_nodes", "2")
		info.Set("my_hint", "x")
		if err := f.SetInfo(info); err != nil {
			return err
		}
		got, _ := f.GetInfo()
		if v, _ := got.Get("cb_nodes"); v != "2" {
			return fmt.Errorf("GetInfo cb_nodes = %q", v)
		}
		if v, _ := got.Get("my_hint"); v != "x" {
			return fmt.Errorf("GetInfo my_hint = %q", v)
		}
		return f.Close()
	})
}

// Seed 002 A.3.3: after File.Revoke at one process, ongoing and later
// non-local operations raise ErrRevoked at every process; Close still
// closes it (and says it was revoked).
func TestFileRevoke(t *testing.T) {
	dir := t.TempDir()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		f, err := mpi.FileOpen(c, filepath.Join(dir, "r.dat"), mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := f.Revoke(); err != nil {
				return err
			}
		} else {
			// Ongoing: blocked in a collective that rank 0 never joins.
			if err := mpi.WriteAtAll(f, 0, []byte{1}); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("rank %d: WriteAtAll during the revocation: %v", c.Rank(), err)
			}
		}
		if !f.IsRevoked() {
			return errors.New("IsRevoked = false")
		}
		if err := mpi.WriteAt(f, 0, []byte{1}); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("WriteAt after the revocation: %v", err)
		}
		if err := f.SetSize(0); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("SetSize after the revocation: %v", err)
		}
		if _, err := f.GetSize(); err != nil {
			return fmt.Errorf("GetSize (local) after the revocation: %v", err)
		}
		if err := f.Close(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("Close of a revoked file: %v", err)
		}
		if err := f.Close(); !errors.Is(err, mpi.ErrFile) {
			return fmt.Errorf("Close after closing a revoked file: %v", err)
		}
		return nil
	})
}

// waitFailed waits until the failure of rank victim of c is known here.
func waitFailed(c *mpi.Comm, victim int) error {
	if _, err := mpi.Recv(c, make([]byte, 1), victim, 77); !errors.Is(err, mpi.ErrProcFailed) {
		return fmt.Errorf("Recv from the killed rank: %v", err)
	}
	return nil
}

// Seed 002 A.2.5, A.3.3 (and 17.12.2's close rule as ftmpi applies it
// under ULFM): a collective write with a killed process raises
// ErrProcFailed and does not hang; Close raises ErrProcFailed and leaves
// the file open until every survivor acknowledged the failure
// (GetFailed); the survivors shrink, reopen and rewrite, and the file is
// right byte by byte.
func TestFileULFMKillDuringCollectiveWrite(t *testing.T) {
	dir := t.TempDir()
	const np, victim, blk = 4, 2, 64
	path := filepath.Join(dir, "u.dat")
	opened := newCountGate(np)
	run(t, np, func(w *mpi.World, c *mpi.Comm) error {
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		opened.done()
		if c.Rank() == victim {
			opened.wait(t)
			w.Kill()
		}
		if err := blockView(f, c, blk); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("SetView with a killed process: %v", err)
		}
		mine := make([]int64, blk)
		for i := range mine {
			mine[i] = want(c.Rank(), i)
		}
		if err := mpi.WriteAtAll(f, 0, mine); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("WriteAtAll with a killed process: %v", err)
		}
		if err := f.Close(); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("Close with an unacknowledged failure: %v", err)
		}
		if _, err := f.GetSize(); err != nil {
			return fmt.Errorf("the file is not open after the failed Close: %v", err)
		}
		g, err := f.GetFailed()
		if err != nil {
			return err
		}
		fg, _ := f.GetGroup()
		if r, _ := mpi.TranslateRanks(g, []int{0}, fg); g.Size() != 1 || r[0] != victim {
			return fmt.Errorf("GetFailed = %v (size %d), want rank %d", r, g.Size(), victim)
		}
		// Every survivor acknowledged before anyone closes again.
		for {
			err := f.Close()
			if err == nil {
				break
			}
			if !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Close after GetFailed: %v", err)
			}
			f.GetFailed()
		}
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		f, err = mpi.FileOpen(s, path, mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		if err := blockView(f, s, blk); err != nil {
			return err
		}
		mine = mine[:0]
		for i := range blk {
			mine = append(mine, want(s.Rank(), i))
		}
		if err := mpi.WriteAtAll(f, 0, mine); err != nil {
			return err
		}
		if err := f.SetSize(int64(8 * blk * s.Size())); err != nil {
			return err
		}
		return f.Close()
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if exp := wantFile(np-1, blk, 1); !bytes.Equal(b, exp) {
		t.Fatalf("the rewritten file differs: %d bytes, want %d", len(b), len(exp))
	}
}

// Seed 003 17.12.1-17.12.5: with a failure not recognised, the collective
// file operations raise ErrRankFailStop (and FileOpen on an inactive
// communicator); Close too, leaving the file open; GroupFailed,
// CollectivesEnabled; after Validate the collectives run over the alive
// processes: the failed process writes nothing, keeps its place in the
// ordered access, and Close succeeds.
func TestFileRunThroughRules(t *testing.T) {
	dir := t.TempDir()
	const np, victim, blk = 4, 3, 4
	path := filepath.Join(dir, "rt.dat")
	opened := newCountGate(np)
	run(t, np, func(w *mpi.World, c *mpi.Comm) error {
		c.EnableRunThrough()
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeRdwr, nil)
		if err != nil {
			return err
		}
		opened.done()
		if c.Rank() == victim {
			opened.wait(t)
			w.Kill()
		}
		if err := waitFailed(c, victim); err != nil {
			return err
		}
		if on, err := f.CollectivesEnabled(); err != nil || on {
			return fmt.Errorf("CollectivesEnabled with an unrecognised failure = %v, %v", on, err)
		}
		gf, _ := f.GroupFailed()
		if gf.Size() != 1 {
			return fmt.Errorf("GroupFailed size %d", gf.Size())
		}
		// In one order at every process (the calls are collective).
		for _, tc := range []struct {
			name string
			call func() error
		}{
			{"SetSize", func() error { return f.SetSize(0) }},
			{"Preallocate", func() error { return f.Preallocate(10) }},
			{"SetInfo", func() error { return f.SetInfo(mpi.NewInfo()) }},
			{"SetView", func() error { return blockView(f, c, blk) }},
			{"SetAtomicity", func() error { return f.SetAtomicity(false) }},
			{"Sync", func() error { return f.Sync() }},
			{"WriteAtAll", func() error { return mpi.WriteAtAll(f, 0, []int64{1}) }},
			{"ReadAll", func() error { _, err := mpi.ReadAll(f, make([]int64, 1)); return err }},
			{"WriteOrdered", func() error { return mpi.WriteOrdered(f, []int64{1}) }},
			{"SeekShared", func() error { return f.SeekShared(0, mpi.SeekSet) }},
			{"Close", func() error { return f.Close() }},
			{"WriteAtAllBegin/End", func() error {
				if err := mpi.WriteAtAllBegin(f, 0, []int64{1}); err != nil {
					return fmt.Errorf("the begin call failed: %v", err)
				}
				return f.WriteAtAllEnd()
			}},
			{"IwriteAtAll", func() error {
				r, err := mpi.IwriteAtAll(f, 0, []int64{1})
				if err != nil {
					return fmt.Errorf("the start call failed: %v", err)
				}
				_, err = r.Wait()
				return err
			}},
		} {
			if err := tc.call(); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("%s on a collectively inactive file: %v", tc.name, err)
			}
		}
		if _, err := f.GetSize(); err != nil {
			return fmt.Errorf("the file is not open after the failed Close: %v", err)
		}
		if _, err := mpi.FileOpen(c, path, mpi.ModeRdwr, nil); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("FileOpen on a collectively inactive communicator: %v", err)
		}
		g, err := f.Validate()
		if err != nil {
			return err
		}
		if g.Size() != 1 {
			return fmt.Errorf("Validate: %d failed", g.Size())
		}
		if on, _ := f.CollectivesEnabled(); !on {
			return errors.New("CollectivesEnabled after Validate = false")
		}
		if err := blockView(f, c, blk); err != nil {
			return err
		}
		mine := make([]int64, blk)
		for i := range mine {
			mine[i] = want(c.Rank(), i)
		}
		if err := mpi.WriteAtAll(f, 0, mine); err != nil {
			return err
		}
		got := make([]int64, blk)
		if _, err := mpi.ReadAtAll(f, 0, got); err != nil || !slices.Equal(got, mine) {
			return fmt.Errorf("ReadAtAll after Validate: %v %v", got, err)
		}
		// Ordered access after the blocks: the failed rank 3 writes
		// nothing, ranks 0..2 write rank+1 elements in order.
		if err := f.SetView(0, mpi.Int64, nil); err != nil {
			return err
		}
		if err := f.SeekShared(int64(blk*np), mpi.SeekSet); err != nil {
			return err
		}
		if err := mpi.WriteOrdered(f, mine[:c.Rank()+1]); err != nil {
			return err
		}
		if p, _ := f.GetPositionShared(); p != int64(blk*np+1+2+3) {
			return fmt.Errorf("shared pointer after WriteOrdered = %d", p)
		}
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("Close after Validate: %v", err)
		}
		// A communicator with a recognised failure opens files; the failure
		// is recognised in the file's group.
		if _, err := c.Validate(); err != nil {
			return err
		}
		f, err = mpi.FileOpen(c, path, mpi.ModeRdonly, nil)
		if err != nil {
			return fmt.Errorf("FileOpen on a validated communicator: %v", err)
		}
		if on, _ := f.CollectivesEnabled(); !on {
			return errors.New("a file opened on a validated communicator is inactive")
		}
		r, err := f.Ivalidate()
		if err != nil {
			return err
		}
		if g, err := r.Wait(); err != nil || g.Size() != 1 {
			return fmt.Errorf("Ivalidate: %v", err)
		}
		return f.Close()
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var exp []byte
	zero := make([]byte, 8*blk)
	for r := range np {
		if r == victim {
			exp = append(exp, zero...)
		} else {
			exp = append(exp, wantFileRank(r, blk)...)
		}
	}
	for r := 0; r < np; r++ {
		if r != victim {
			exp = append(exp, wantFileRank(r, r+1)...)
		}
	}
	if !bytes.Equal(b, exp) {
		t.Fatalf("file after run-through writes:\n got %v\nwant %v", b, exp)
	}
}

// wantFileRank is the bytes of want(rank, 0..n-1).
func wantFileRank(rank, n int) []byte {
	var b []byte
	for i := range n {
		v := uint64(want(rank, i))
		for j := range 8 {
			b = append(b, byte(v>>(8*j)))
		}
	}
	return b
}

// MPI-4.1 14.7: a file's error handler (MPI_ERRORS_RETURN by default; a
// user handler gets the communicator the file was opened on); FileDelete
// of an existing file; String names the file.
func TestFileErrhandlerAndDelete(t *testing.T) {
	dir := t.TempDir()
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		path := filepath.Join(dir, fmt.Sprintf("e%d.dat", 0))
		f, err := mpi.FileOpen(c, path, mpi.ModeCreate|mpi.ModeWronly, nil)
		if err != nil {
			return err
		}
		if f.Errhandler() != mpi.ErrorsReturn {
			return fmt.Errorf("default file handler %v, want MPI_ERRORS_RETURN", f.Errhandler())
		}
		if !strings.Contains(f.String(), path) {
			return fmt.Errorf("String() = %q", f.String())
		}
		var got *mpi.Comm
		var gotErr error
		if err := f.SetErrhandler(mpi.NewErrhandler(func(hc *mpi.Comm, e error) { got, gotErr = hc, e })); err != nil {
			return err
		}
		_, err = mpi.ReadAt(f, 0, make([]byte, 1))
		if got != c || !errors.Is(gotErr, mpi.ErrAccess) || gotErr != err {
			return fmt.Errorf("user handler got (%v, %v) for %v", got, gotErr, err)
		}
		if err := f.SetErrhandler(nil); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("SetErrhandler(nil): %v", err)
		}
		if err := f.Close(); err != nil {
			return err
		}
		if c.Rank() == 0 {
			if err := mpi.FileDelete(path, nil); err != nil {
				return err
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("FileDelete left the file: %v", err)
			}
		}
		if err := mpi.FileDelete("", nil); !errors.Is(err, mpi.ErrBadFile) {
			return fmt.Errorf("FileDelete of an empty name: %v", err)
		}
		var nilFile *mpi.File
		if err := nilFile.Close(); !errors.Is(err, mpi.ErrFile) {
			return fmt.Errorf("Close of a nil file: %v", err)
		}
		return nil
	})
}
