package mpi

import (
	"slices"
	"sort"

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

// fileView is a view with its filetype flattened into segments.
type fileView struct {
	disp   int64
	etype  *Datatype
	ftype  *Datatype
	esize  int64
	segs   []fseg  // the data of one filetype tile: byte offsets from the tile's origin, ascending
	cum    []int64 // data bytes before each segment within a tile
	tsize  int64   // data bytes of a tile
	text   int64   // the tile's extent
	contig bool    // the view is the bytes from disp on
	// ext32: the data representation is "external32": data are converted
	// between memory and file (toFile, fromFile) by the basic elements of
	// the memory datatype (conv: the access's copy of the view), or of the
	// etype if the memory holds bytes (every access moves whole etypes).
	ext32 bool
	conv  *Datatype
}

// converting returns v for an access of data laid out as elements of mem
// (nil: unknown): a copy converting by mem if v is external32 and mem is
// not bytes, else v.
func (v *fileView) converting(mem *Datatype) *fileView {
	if !v.ext32 || mem == nil || mem.size == 0 || mem.sig == &numFacts[p2p.DTByte] {
		return v
	}
	c := *v
	c.conv = mem
	return &c
}

// convType is the datatype v converts by.
func (v *fileView) convType() *Datatype {
	if v.conv != nil {
		return v.conv
	}
	return v.etype
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

// swapBasic reverses the bytes of every basic element of the packed data
// b of elements of d, whole elements then a partial one (little-endian <->
// big-endian; a complex number's parts each); bytes of a basic element
// cut by the end of b stay as they are.
func swapBasic(d *Datatype, b []byte) {
	if d.sig == &numFacts[p2p.DTByte] {
		return
	}
	for pos := 0; pos < len(b); {
		for _, r := range d.runs {
			unit := numFacts[r.code].size
			switch r.code.Code() {
			case p2p.DTComplex64, p2p.DTComplex128:
				unit /= 2
			}
			end := min(pos+r.count*numFacts[r.code].size, len(b))
			if unit > 1 {
				for k := pos; k+unit <= end; k += unit {
					slices.Reverse(b[k : k+unit])
				}
			}
			if pos = end; pos == len(b) {
				return
			}
		}
	}
}

// rep is the name of v's data representation.
func (v *fileView) rep() string {
	if v.ext32 {
		return External32
	}
	return Native
}

// toFile returns b in the file's representation: b itself if native,
// else a converted copy (b, the caller's data, stays as it is).
func (v *fileView) toFile(b []byte) []byte {
	if !v.ext32 || len(b) == 0 {
		return b
	}
	c := make([]byte, len(b))
	copy(c, b)
	swapBasic(v.convType(), c)
	return c
}

// fromFile converts b, read from the file, to memory's representation in
// place.
func (v *fileView) fromFile(b []byte) {
	if v.ext32 {
		swapBasic(v.convType(), b)
	}
}

type fseg struct{ off, n int64 }

// fext is a range of file bytes.
type fext struct{ off, n int64 }

func defaultView() *fileView {
	return &fileView{etype: Byte, ftype: Byte, esize: 1, segs: []fseg{{0, 1}}, cum: []int64{0}, tsize: 1, text: 1, contig: true}
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
	v := &fileView{disp: disp, etype: etype, ftype: ftype, esize: int64(etype.size), text: int64(ftype.ext())}
	end := int64(0)
	for _, r := range ftype.runs {
		off, n := int64(r.off), int64(r.count*numFacts[r.code].size)
		if k := len(v.segs); k > 0 && v.segs[k-1].off+v.segs[k-1].n == off {
			v.segs[k-1].n += n
		} else {
			v.segs = append(v.segs, fseg{off, n})
			v.cum = append(v.cum, v.tsize)
		}
		v.tsize += n
		end = max(end, off+n)
	}
	if end > int64(ftype.ub) {
		return nil, newErr(ErrIO, op, nil, NoPeer, "filetype %s has data beyond its extent", ftype.name)
	}
	v.contig = len(v.segs) == 1 && v.segs[0].off == 0 && v.segs[0].n == v.text
	return v, nil
}

// viewLayout checks the typemap of a view's etype or filetype (what:
// which): displacements non-negative and nondecreasing, no overlaps if
// writable.
func viewLayout(op, what string, d *Datatype, writable bool) error {
	start, end := int64(0), int64(0)
	for i, r := range d.runs {
		off, n := int64(r.off), int64(r.count*numFacts[r.code].size)
		switch {
		case off < 0:
			return newErr(ErrIO, op, nil, NoPeer, "%s %s has a negative displacement (byte %d)", what, d.name, off)
		case i > 0 && off < start:
			return newErr(ErrIO, op, nil, NoPeer, "%s %s has decreasing displacements (byte %d after %d)", what, d.name, off, start)
		case i > 0 && off < end && writable:
			return newErr(ErrIO, op, nil, NoPeer, "%s %s has overlapping regions (byte %d before the end %d of the one before), not allowed on a file opened for writing", what, d.name, off, end)
		}
		start, end = off, max(end, off+n)
	}
	return nil
}

// extents appends to out the file ranges of n bytes of the view from view
// byte l on, in view order (ascending in the file), merged where adjacent.
func (v *fileView) extents(out []fext, l, n int64) []fext {
	add := func(off, k int64) {
		if j := len(out); j > 0 && out[j-1].off+out[j-1].n == off {
			out[j-1].n += k
			return
		}
		out = append(out, fext{off, k})
	}
	if n <= 0 {
		return out
	}
	if v.contig {
		add(v.disp+l, n)
		return out
	}
	tile, in := l/v.tsize, l%v.tsize
	i := sort.Search(len(v.segs), func(i int) bool { return v.cum[i]+v.segs[i].n > in })
	for n > 0 {
		s := v.segs[i]
		skip := in - v.cum[i]
		k := min(s.n-skip, n)
		add(v.disp+tile*v.text+s.off+skip, k)
		n -= k
		in += k
		if i++; i == len(v.segs) {
			i, in = 0, 0
			tile++
		}
	}
	return out
}

// viewBytesBefore returns how many bytes of the view lie in the file
// before byte b (the inverse of extents: the view offset of the end of
// the file, for SeekEnd).
func (v *fileView) viewBytesBefore(b int64) int64 {
	if b <= v.disp {
		return 0
	}
	rel := b - v.disp
	if v.contig {
		return rel
	}
	tile, in := rel/v.text, rel%v.text
	out := tile * v.tsize
	for i, s := range v.segs {
		if in <= s.off {
			break
		}
		out = v.cum[i] + min(in-s.off, s.n) + tile*v.tsize
	}
	return out
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
		v.ext32 = ext32
		err = rerr
	}
	esize := int64(-1) // a bad view still takes part, so every process fails
	if err == nil {
		esize = v.esize
	} else {
		err.(*Error).Comm = f.name
	}
	return f.handle(f.inOrder(op, func() error {
		rows, live, cerr := f.together(op, esize, int64(f.shk))
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
		k := agreedK(rows, live, 1)
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
	return f.view.disp, f.view.etype, f.view.ftype, nil
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
	e := v.extents(nil, offset*v.esize, 1)
	return e[0].off, nil
}
