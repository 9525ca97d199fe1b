package mpi

import (
	"iter"

	"github.com/ftmpi/ftmpi/internal/mpiio"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// File views (MPI-4.1 14.3): a view is a displacement in bytes, an
// elementary type (etype: the unit of offsets and of the file pointers)
// and a filetype: a datatype built of etypes whose data positions, tiled
// from the displacement at every filetype extent, are the bytes of the file
// this process sees. The default view is displacement 0, etype and
// filetype Byte: the whole file, byte by byte. A strided filetype (a
// TypeVector of blocks per rank, a TypeCreateSubarray-like TypeIndexed)
// gives each process its blocks of a shared layout.

// fileView is a view: the datatypes it was made of (package mpi's) and
// their flattening (internal/mpiio's View: the offset mapping and the
// data representation's conversion).
type fileView struct {
	mpiio.View
	etype *Datatype
	ftype *Datatype
}

// converting returns v for an access of data laid out as elements of mem
// (nil: unknown): a copy converting by mem if v is external32 and mem is
// not bytes, else v.
func (v *fileView) converting(mem *Datatype) *fileView {
	if !v.Ext32 || mem == nil || mem.size == 0 || mem.sig == &numFacts[p2p.DTByte] {
		return v
	}
	c := *v
	c.Conv = swapRuns(mem)
	return &c
}

// Data representations of a view (MPI-4.1 14.5.2; the datarep strings of
// MPI_File_set_view); External32 is the third.
const (
	Native   = "native"   // "native" of MPI_File_set_view: the bytes as in memory (MPI's default)
	Internal = "internal" // "internal" of MPI_File_set_view: the implementation's choice, here native
)

// datarep checks a view's data representation and returns whether it is
// external32.
func parseDatarep(op, rep string) (bool, error) {
	switch rep {
	case Native, Internal, "":
		return false, nil
	case External32:
		return true, nil
	}
	return false, newErr(ErrUnsupportedDatarep, op, nil, NoPeer, "data representation %q (ftmpi has %q, %q and %q)", rep, Native, Internal, External32)
}

// swapRuns is how external32 converts the basic elements of d (see
// mpiio.Swap): each run's bytes, reversed by element (a complex number's
// parts each); nil for bytes.
func swapRuns(d *Datatype) []mpiio.SwapRun {
	if d.sig == &numFacts[p2p.DTByte] {
		return nil
	}
	out := make([]mpiio.SwapRun, len(d.runs))
	for i, r := range d.runs {
		unit := numFacts[r.code].size
		switch r.code.Code() {
		case p2p.DTComplex64, p2p.DTComplex128:
			unit /= 2
		}
		out[i] = mpiio.SwapRun{Bytes: r.count * numFacts[r.code].size, Unit: unit}
	}
	return out
}

// rep is the name of v's data representation.
func (v *fileView) rep() string {
	if v.Ext32 {
		return External32
	}
	return Native
}

func defaultView() *fileView {
	return &fileView{View: *mpiio.ByteView(), etype: Byte, ftype: Byte}
}

// typeRuns is d's typemap as its runs: byte offset and byte length of
// each run of consecutive basic elements of one type.
func typeRuns(d *Datatype) iter.Seq2[int64, int64] {
	return func(yield func(int64, int64) bool) {
		for _, r := range d.runs {
			if !yield(int64(r.off), int64(r.count*numFacts[r.code].size)) {
				return
			}
		}
	}
}

// newFileView checks and flattens a view (MPI-4.1 14.3: the etype has
// data; the filetype is made of whole etypes; the displacements of both
// typemaps are non-negative and monotonically nondecreasing, and, if the
// file may be written (writable), neither has overlapping regions).
//
// A typemap breaking those rules is ErrIO, the class MPI-4.1 14.7 leaves
// for I/O errors no other class names (as ROMIO answers): the datatype
// itself is valid (not ErrType), only not as a view. The rules are checked
// on the typemap's runs (a run: consecutive basic elements of one type),
// so a run overlapping the end of the one before it, but not starting
// before its start, is an overlap (allowed on a read-only file), not a
// decrease.
func newFileView(op string, disp int64, etype, ftype *Datatype, writable bool) (*fileView, error) {
	if etype == nil {
		etype = Byte
	}
	if ftype == nil {
		ftype = etype
	}
	if disp < 0 {
		return nil, newErr(ErrArg, op, nil, NoPeer, "negative displacement %d", disp)
	}
	for _, d := range []*Datatype{etype, ftype} {
		if !d.committed.Load() {
			return nil, newErr(ErrType, op, nil, NoPeer, "datatype %s is not committed", d.name)
		}
	}
	if etype.size == 0 {
		return nil, newErr(ErrType, op, nil, NoPeer, "etype %s has no data", etype.name)
	}
	if ftype.size == 0 || ftype.size%etype.size != 0 {
		return nil, newErr(ErrType, op, nil, NoPeer, "filetype %s (%d bytes of data) is not made of whole etypes %s (%d bytes)", ftype.name, ftype.size, etype.name, etype.size)
	}
	if err := viewLayout(op, "etype", etype, writable); err != nil {
		return nil, err
	}
	if err := viewLayout(op, "filetype", ftype, writable); err != nil {
		return nil, err
	}
	if ftype.lb < 0 || ftype.ext() <= 0 {
		return nil, newErr(ErrIO, op, nil, NoPeer, "filetype %s has a negative lower bound or no extent (lb %d, extent %d)", ftype.name, ftype.lb, ftype.ext())
	}
	mv, err := mpiio.NewView(disp, int64(etype.size), int64(ftype.ext()), int64(ftype.ub), typeRuns(ftype))
	if err != nil {
		return nil, newErr(ErrIO, op, nil, NoPeer, "filetype %s has data beyond its extent", ftype.name)
	}
	return &fileView{View: *mv, etype: etype, ftype: ftype}, nil
}

// viewLayout checks the typemap of a view's etype or filetype (what:
// which): displacements non-negative and nondecreasing, no overlaps if
// writable.
func viewLayout(op, what string, d *Datatype, writable bool) error {
	e := mpiio.CheckLayout(typeRuns(d), writable)
	if e == nil {
		return nil
	}
	switch e.Kind {
	case mpiio.Negative:
		return newErr(ErrIO, op, nil, NoPeer, "%s %s has a negative displacement (byte %d)", what, d.name, e.Off)
	case mpiio.Decreasing:
		return newErr(ErrIO, op, nil, NoPeer, "%s %s has decreasing displacements (byte %d after %d)", what, d.name, e.Off, e.Prev)
	default:
		return newErr(ErrIO, op, nil, NoPeer, "%s %s has overlapping regions (byte %d before the end %d of the one before), not allowed on a file opened for writing", what, d.name, e.Off, e.Prev)
	}
}

// SetView sets this process's view of the file (MPI_File_set_view): the
// data start at byte disp, offsets and file pointers count etypes, and the
// process sees the data positions of filetype tiled from disp on (nil
// etype: Byte; nil filetype: the etype, all bytes from disp on). Both
// datatypes must be committed; the filetype's displacements must be
// non-negative and nondecreasing and it must be made of whole etypes.
// The individual and shared file pointers are reset to zero. It is
// collective: disp and filetype may differ between processes, the etype's
// size may not (else ErrNotSame). Under run-through the handle must be
// collectively active (seed 003 17.12.3): recognised failed processes
// take no part. The data representation is "native" (MPI's default).
func (f *File) SetView(disp int64, etype, filetype *Datatype) error {
	return f.SetViewDatarep(disp, etype, filetype, Native)
}

// SetViewDatarep is SetView in the data representation datarep
// (MPI_File_set_view's datarep argument, MPI-4.1 14.5): Native, Internal
// (native here) or External32 (ErrUnsupportedDatarep otherwise). Under
// External32 the data in the file are big-endian, converted by the view's
// etype: each basic element's bytes reversed on the way to the file and
// back (a complex number's two parts each). Sizes and extents in the
// file are those of memory, as PackExternal's: external32's except C's
// long (8 bytes here, 4 there).
func (f *File) SetViewDatarep(disp int64, etype, filetype *Datatype, datarep string) error {
	const op = "MPI_File_set_view"
	if err := f.check(op); err != nil {
		return err
	}
	ext32, rerr := parseDatarep(op, datarep)
	v, err := newFileView(op, disp, etype, filetype, f.amode&ModeRdonly == 0)
	if err == nil {
		v.Ext32 = ext32
		if ext32 {
			v.Conv = swapRuns(v.etype)
		}
		err = rerr
	}
	esize := int64(-1) // a bad view still takes part, so every process fails
	if err == nil {
		esize = v.Esize
	} else {
		err.(*Error).Comm = f.name
	}
	return f.handle(f.inOrder(op, func() error {
		rows, live, cerr := f.together(op, esize, int64(f.sh.Key()))
		if cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		for r, row := range rows {
			if live[r] && row[0] < 0 {
				return f.err(ErrArg, op, "the view is invalid at rank %d", r)
			}
		}
		if err := f.sameEverywhere(op, "etype size", rows, live, 0, esize); err != nil {
			return err
		}
		k := mpiio.AgreedKey(rows, live, 1)
		f.resetShared(op, k)
		f.mu.Lock()
		f.view, f.pos = v, 0
		f.mu.Unlock()
		return nil
	}))
}

// Datarep returns the data representation of this process's view (the
// datarep of MPI_File_get_view).
func (f *File) Datarep() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view.rep()
}

// GetView returns this process's view: displacement, etype and filetype
// (MPI_File_get_view; its data representation: Datarep).
func (f *File) GetView() (disp int64, etype, filetype *Datatype, err error) {
	if err := f.checkOpen("MPI_File_get_view"); err != nil {
		return 0, nil, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view.Disp, f.view.etype, f.view.ftype, nil
}

// GetByteOffset returns the absolute byte position in the file of the
// view offset offset (in etypes) (MPI_File_get_byte_offset).
func (f *File) GetByteOffset(offset int64) (int64, error) {
	const op = "MPI_File_get_byte_offset"
	if err := f.checkOpen(op); err != nil {
		return 0, err
	}
	if offset < 0 {
		return 0, f.handle(f.err(ErrArg, op, "negative offset %d", offset))
	}
	f.mu.Lock()
	v := f.view
	f.mu.Unlock()
	e := v.Extents(nil, offset*v.Esize, 1)
	return e[0].Off, nil
}
