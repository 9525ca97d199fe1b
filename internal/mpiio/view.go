package mpiio

import (
	"iter"
	"slices"
	"sort"
)

// A view (MPI-4.1 14.3) is a displacement in bytes, an elementary type
// (etype: the unit of offsets and of the file pointers) and a filetype: a
// datatype built of etypes whose data positions, tiled from the
// displacement at every filetype extent, are the bytes of the file this
// process sees. View is the filetype flattened into segments, which is all
// the data path needs; the caller keeps the datatypes.

// Ext is a range of file bytes.
type Ext struct{ Off, N int64 }

type seg struct{ off, n int64 }

// View is a file view with its filetype flattened into segments. Disp and
// Esize are the displacement and the etype's size in bytes; Ext32 says the
// data representation is external32, Conv how its data are converted (see
// Swap). It has no MPI counterpart (the data path of MPI_File_set_view's
// view).
type View struct {
	Disp  int64
	Esize int64
	// Ext32: the data representation is "external32": data are converted
	// between memory and file (ToFile, FromFile) by Conv, the swap pattern
	// of the memory datatype (or of the etype if the memory holds bytes);
	// nil Conv: nothing to swap (bytes).
	Ext32 bool
	Conv  []SwapRun

	segs   []seg   // the data of one filetype tile: byte offsets from the tile's origin, ascending
	cum    []int64 // data bytes before each segment within a tile
	tsize  int64   // data bytes of a tile
	text   int64   // the tile's extent
	contig bool    // the view is the bytes from Disp on
}

// ByteView is the default view: displacement 0, etype and filetype bytes
// (the whole file, byte by byte). It has no MPI counterpart (the default
// view of MPI_File_open).
func ByteView() *View {
	return &View{Esize: 1, segs: []seg{{0, 1}}, cum: []int64{0}, tsize: 1, text: 1, contig: true}
}

// LayoutKind is what is wrong with a view's typemap. It has no MPI
// counterpart (the caller reports it as MPI_ERR_IO).
type LayoutKind int

// The layout errors.
const (
	Negative    LayoutKind = iota + 1 // a negative displacement (no MPI counterpart)
	Decreasing                        // displacements not monotonically nondecreasing (no MPI counterpart)
	Overlapping                       // overlapping regions in a writable file's view (no MPI counterpart)
	Beyond                            // data beyond the filetype's extent (no MPI counterpart)
	BadSizes                          // a non-positive etype size or tile extent, a negative displacement of the view (no MPI counterpart)
)

// LayoutError says where a typemap breaks the rules of a view: Off is the
// byte of the offending run, Prev the start (Decreasing) or end
// (Overlapping) of what came before it. It has no MPI counterpart.
type LayoutError struct {
	Kind      LayoutKind
	Off, Prev int64
}

func (e *LayoutError) Error() string {
	switch e.Kind {
	case Negative:
		return "negative displacement"
	case Decreasing:
		return "decreasing displacements"
	case Overlapping:
		return "overlapping regions"
	case Beyond:
		return "data beyond the extent"
	}
	return "bad sizes"
}

// CheckLayout checks the typemap of a view's etype or filetype, given as
// its runs (byte offset, byte length; consecutive basic elements of one
// type each): displacements non-negative and nondecreasing, and no
// overlaps if the file may be written. A run overlapping the end of the
// one before it, but not starting before its start, is an overlap, not a
// decrease. It has no MPI counterpart (MPI-4.1 14.3's rules).
func CheckLayout(runs iter.Seq2[int64, int64], writable bool) *LayoutError {
	start, end := int64(0), int64(0)
	i := 0
	for off, n := range runs {
		switch {
		case off < 0:
			return &LayoutError{Kind: Negative, Off: off}
		case i > 0 && off < start:
			return &LayoutError{Kind: Decreasing, Off: off, Prev: start}
		case i > 0 && off < end && writable:
			return &LayoutError{Kind: Overlapping, Off: off, Prev: end}
		}
		start, end = off, max(end, off+n)
		i++
	}
	return nil
}

// NewView flattens a filetype of extent ext and upper bound ub, given as
// its runs in typemap order (checked by CheckLayout), into the view at
// displacement disp with etypes of esize bytes. Adjacent runs merge. It
// has no MPI counterpart (MPI_File_set_view's flattening).
func NewView(disp, esize, ext, ub int64, runs iter.Seq2[int64, int64]) (*View, error) {
	if disp < 0 || esize <= 0 || ext <= 0 {
		return nil, &LayoutError{Kind: BadSizes}
	}
	v := &View{Disp: disp, Esize: esize, text: ext}
	end := int64(0)
	for off, n := range runs {
		if n <= 0 {
			continue
		}
		if k := len(v.segs); k > 0 && v.segs[k-1].off+v.segs[k-1].n == off {
			v.segs[k-1].n += n
		} else {
			v.segs = append(v.segs, seg{off, n})
			v.cum = append(v.cum, v.tsize)
		}
		v.tsize += n
		end = max(end, off+n)
	}
	if end > ub {
		return nil, &LayoutError{Kind: Beyond, Off: end, Prev: ub}
	}
	if v.tsize == 0 {
		return nil, &LayoutError{Kind: BadSizes}
	}
	v.contig = len(v.segs) == 1 && v.segs[0].off == 0 && v.segs[0].n == v.text
	return v, nil
}

// Contig reports whether the view is the bytes from Disp on. It has no
// MPI counterpart.
func (v *View) Contig() bool { return v.contig }

// Segments is the number of data segments of a tile after merging. It
// has no MPI counterpart.
func (v *View) Segments() int { return len(v.segs) }

// TileBytes is the number of data bytes of a tile (the filetype's size).
// It has no MPI counterpart.
func (v *View) TileBytes() int64 { return v.tsize }

// TileExtent is the extent of a tile (the filetype's extent). It has no
// MPI counterpart.
func (v *View) TileExtent() int64 { return v.text }

// Extents appends to out the file ranges of n bytes of the view from view
// byte l on, in view order (ascending in the file), merged where adjacent.
// It has no MPI counterpart.
func (v *View) Extents(out []Ext, l, n int64) []Ext {
	add := func(off, k int64) {
		if j := len(out); j > 0 && out[j-1].Off+out[j-1].N == off {
			out[j-1].N += k
			return
		}
		out = append(out, Ext{off, k})
	}
	if n <= 0 {
		return out
	}
	if v.contig {
		add(v.Disp+l, n)
		return out
	}
	tile, in := l/v.tsize, l%v.tsize
	i := sort.Search(len(v.segs), func(i int) bool { return v.cum[i]+v.segs[i].n > in })
	for n > 0 {
		s := v.segs[i]
		skip := in - v.cum[i]
		k := min(s.n-skip, n)
		add(v.Disp+tile*v.text+s.off+skip, k)
		n -= k
		in += k
		if i++; i == len(v.segs) {
			i, in = 0, 0
			tile++
		}
	}
	return out
}

// BytesBefore returns how many bytes of the view lie in the file before
// byte b (the inverse of Extents: the view offset of the end of the file,
// for MPI_SEEK_END).
func (v *View) BytesBefore(b int64) int64 {
	if b <= v.Disp {
		return 0
	}
	rel := b - v.Disp
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

// Span is the lowest and the end of the highest byte of exts (0, 0 if
// none): ascending but for a read-only view's overlaps. It has no MPI
// counterpart.
func Span(exts []Ext) (lo, hi int64) {
	for i, e := range exts {
		if i == 0 || e.Off < lo {
			lo = e.Off
		}
		hi = max(hi, e.Off+e.N)
	}
	return lo, hi
}

// ValidBytes is how many bytes of the extents (in order) lie before the
// end of a file of size bytes. It has no MPI counterpart.
func ValidBytes(exts []Ext, size int64) int {
	n := int64(0)
	for _, e := range exts {
		if e.Off+e.N > size {
			return int(n + max(0, size-e.Off))
		}
		n += e.N
	}
	return int(n)
}

// SwapRun is one run of a datatype's basic elements as external32
// conversion sees it: Bytes bytes of elements whose every Unit bytes are
// reversed (a complex number's parts each; Unit 1: nothing to swap). It
// has no MPI counterpart.
type SwapRun struct{ Bytes, Unit int }

// Swap reverses the bytes of every basic element of the packed data b of
// elements laid out as runs (one element of the datatype; repeated),
// little-endian <-> big-endian; bytes of an element cut by the end of b
// stay as they are. It has no MPI counterpart (MPI-4.1 14.5.2's
// external32 of fixed-size types).
func Swap(runs []SwapRun, b []byte) {
	total := 0
	for _, r := range runs {
		total += max(r.Bytes, 0)
	}
	if total == 0 {
		return
	}
	for pos := 0; pos < len(b); {
		for _, r := range runs {
			end := min(pos+max(r.Bytes, 0), len(b))
			if r.Unit > 1 {
				for k := pos; k+r.Unit <= end; k += r.Unit {
					slices.Reverse(b[k : k+r.Unit])
				}
			}
			if pos = end; pos == len(b) {
				return
			}
		}
	}
}

// ToFile returns b in the file's representation: b itself if native,
// else a converted copy (b, the caller's data, stays as it is). It has no
// MPI counterpart.
func (v *View) ToFile(b []byte) []byte {
	if !v.Ext32 || len(b) == 0 {
		return b
	}
	c := make([]byte, len(b))
	copy(c, b)
	Swap(v.Conv, c)
	return c
}

// FromFile converts b, read from the file, to memory's representation in
// place. It has no MPI counterpart.
func (v *View) FromFile(b []byte) {
	if v.Ext32 {
		Swap(v.Conv, b)
	}
}
