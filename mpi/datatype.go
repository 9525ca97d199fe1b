package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Derived datatypes (MPI-4.1 chapter 5): layouts of basic elements over a
// buffer, for the data a flat slice does not describe (a column of a
// matrix, scattered blocks, selected fields).
//
// A Datatype is built from the predefined ones (Float64, Int32, ...,
// TypeOf[T] for any Elem type T) by TypeContiguous, TypeVector,
// TypeCreateHvector, TypeIndexed, TypeCreateIndexedBlock,
// TypeCreateStruct and TypeCreateResized, and committed (Commit) before
// use. It is immutable once built (Commit only marks it) and may be used by
// many goroutines and Worlds at once.
//
// How operations take one. The buffer-taking functions have *Typed
// variants that take MPI's (buffer, count, datatype) triple instead of a
// slice: SendTyped, SsendTyped, IsendTyped, RecvTyped, IrecvTyped,
// BcastTyped, GatherTyped, ScatterTyped, AllgatherTyped, AlltoallTyped,
// ReduceTyped, AllreduceTyped. We chose variants over changing every
// function to accept a "buffer" interface (which
// would box every slice and cost the numeric fast path) or over a typed
// view type (which would still need a variant per function, Go having no
// overloading): the plain slice functions stay as they are, and the
// variants follow MPI's argument lists one to one. ReduceTyped and
// AllreduceTyped take the predefined operations on a datatype of one
// basic type. typed_coll.go and typed_neighbor.go have the other typed
// collectives (the v-variants, Alltoallw, the scans, the reduce-scatters,
// the neighbourhood collectives, every nonblocking form), whose
// reductions take any operation typed_op.go describes (ReduceTypedOp and
// AllreduceTypedOp for Reduce and Allreduce): predefined ones on struct
// datatypes, MinLoc/MaxLoc on pairs, NewDatatypeOp user operations.
//
// What travels. A message is the packed data: the basic elements in
// typemap order, without the gaps. Its type signature is what the
// receiver checks (MPI: the sequences of basic types must match, the
// layouts may differ): a datatype of one basic type (a vector of float64)
// travels as that type and matches a plain slice of it, or any other
// datatype of that type, at the other side (counts in basic elements); a
// datatype of several basic types travels as a struct layout of its packed
// element (p2p.DTStruct with the hash of the packed runs): it matches the
// same packed element (any datatype of that signature per element, or a
// Go struct of those fields without padding). Stricter than MPI: the
// signature is compared per element, so a struct datatype sent with count
// 3 does not match a receive by a datatype made of three of them.
//
// Copies. The send side gathers the data straight into a pooled buffer
// (one copy, the pack itself) that the transport sends from; the receive
// side receives into a pooled buffer and scatters from it (one copy, the
// unpack). A datatype whose data is contiguous (TypeContiguous of a basic
// type, say) is sent from and received into the user's buffer directly,
// with no copy. The transports' own copies are those of plain slices.

// Datatype is a derived (or predefined) datatype (MPI_Datatype).
type Datatype struct {
	name   string
	runs   []run // the typemap of one element: byte offsets from the element's origin
	lb, ub int   // extent = ub - lb
	size   int   // bytes of data of one element (MPI_Type_size)
	lo, hi int   // bytes the data spans: [lo, hi) from the origin
	nbasic int   // basic elements of one element
	sig    *elemFacts
	contig bool // the data of count elements is the bytes [0, count*size)
	// Regular typemaps (a vector of a basic type, say): nreg runs of blen
	// bytes each, step bytes apart from the first run's offset; 0: not
	// regular. pack and unpack copy them with word moves.
	nreg, blen, step int
	committed        atomic.Bool
	// align is the alignment of one element in memory, for the struct
	// rule (derive); 0: its basic types' (basicAlign). A binding's basic
	// type carried as bytes (C's long double) sets its own (SetAlignment).
	align int
	// lbMark, ubMark: the typemap holds a lower (upper) bound marker
	// (MPI-4.1 5.1.7: LBMarker or UBMarker in a struct, or the bounds
	// TypeCreateResized sets), which then is the bound. Markers are
	// sticky: a datatype built from one with a marker has one too, so its
	// bound is the extreme of its markers, not of its data.
	lbMark, ubMark bool
	// noLo, noHi: the lower (upper) bound is not that of any data: a
	// marker type itself (LBMarker has no upper bound of its own), or a
	// typemap of markers only. An enclosing datatype leaves it out.
	noLo, noHi bool
}

// basicAlign is the alignment of a basic type in C and in Go: its size up
// to 8, a complex number's part's.
func basicAlign(code p2p.DType) int {
	switch code {
	case p2p.DTComplex64:
		return 4
	case p2p.DTComplex128:
		return 8
	}
	return min(numFacts[code].size, 8)
}

// alignment is the alignment of one element of d (the struct rule's).
func (d *Datatype) alignment() int {
	if d.align > 0 {
		return d.align
	}
	a := 1
	for _, r := range d.runs {
		a = max(a, basicAlign(r.code))
	}
	return a
}

// SetAlignment sets the alignment of d's elements in memory, which the
// struct rule of TypeCreateStruct rounds extents up to; no MPI
// counterpart: a binding's basic type that Go carries as bytes (C's long
// double: 16) sets it once, before d is used.
func (d *Datatype) SetAlignment(a int) {
	if d != nil && a > 0 {
		d.align = a
	}
}

// maxRuns bounds the typemap of one element: its runs after merging (a
// run is consecutive basic elements of one type: contiguous data is one
// run however large). maxElems bounds the basic elements of a run.
const (
	maxRuns  = 1 << 24
	maxElems = 1 << 62
)

// dense returns the one run of d if it fills d's extent, so that
// consecutive elements of d are one run.
func (d *Datatype) dense() (run, bool) {
	if len(d.runs) != 1 {
		return run{}, false
	}
	r := d.runs[0]
	return r, r.count*numFacts[r.code].size == d.ub-d.lb
}

// errType is an ErrType error of op with no communicator.
func errType(class *Class, op, format string, args ...any) error {
	return newErr(class, op, nil, NoPeer, format, args...)
}

// TypeOf returns the datatype of elements of type T: a basic type for the
// numeric types and bool (named ones included), the layout of a struct or
// array type (its fields in memory order; its extent is the Go size, so
// consecutive elements of a []T follow each other). It is committed.
// It has no MPI counterpart as a call: it returns the predefined datatype
// (MPI_DOUBLE ...) or the layout a C program builds by hand with
// MPI_Type_create_struct and MPI_Type_commit.
func TypeOf[T Elem]() (*Datatype, error) {
	f := elemOf[T]()
	if f.err != "" {
		return nil, errType(ErrType, "mpi.TypeOf", "%s", f.err)
	}
	runs := f.runs
	if runs == nil {
		runs = []run{{f.dt, 0, 1}}
	}
	d, err := newDatatype(f.name, runs, 0, f.size)
	if err != nil {
		return nil, err
	}
	d.committed.Store(true)
	return d, nil
}

func mustType[T Elem]() *Datatype {
	d, err := TypeOf[T]()
	if err != nil {
		panic(err) // only for the basic types below
	}
	return d
}

// The predefined datatypes of the basic types (MPI_BYTE, MPI_INT8_T, ...,
// MPI_DOUBLE, MPI_C_BOOL), committed.
var (
	Byte       = mustType[byte]()
	Int8       = mustType[int8]()
	Int16      = mustType[int16]()
	Int32      = mustType[int32]()
	Int64      = mustType[int64]()
	Uint16     = mustType[uint16]()
	Uint32     = mustType[uint32]()
	Uint64     = mustType[uint64]()
	Int        = mustType[int]()
	Uint       = mustType[uint]()
	Float32    = mustType[float32]()
	Float64    = mustType[float64]()
	Complex64  = mustType[complex64]()
	Complex128 = mustType[complex128]()
	Bool       = mustType[bool]()
)

// newDatatype computes the facts of a typemap.
func newDatatype(name string, runs []run, lb, ub int) (*Datatype, error) {
	d := &Datatype{name: name, runs: runs, lb: lb, ub: ub}
	var packed []run
	code := p2p.DType(0)
	for i, r := range runs {
		n := r.count * numFacts[r.code].size
		if i == 0 || r.off < d.lo {
			d.lo = r.off
		}
		if i == 0 || r.off+n > d.hi {
			d.hi = r.off + n
		}
		packed = addRun(packed, r.code, d.size, r.count)
		d.size += n
		d.nbasic += r.count
		if i == 0 {
			code = r.code
		} else if r.code != code {
			code = 0
		}
	}
	switch {
	case len(runs) == 0:
		d.sig = &numFacts[p2p.DTByte]
	case code != 0:
		d.sig = &numFacts[code]
	default:
		f := &elemFacts{name: "datatype" + describeLayout(packed, d.size), size: d.size, runs: packed}
		f.dt = layoutDType(packed, d.size)
		p2p.RegisterLayout(f.dt, "struct"+describeLayout(packed, d.size), d.size)
		d.sig = f
	}
	d.contig = len(runs) == 1 && runs[0].off == 0 && d.size == d.ub-d.lb && d.lb == 0
	if len(runs) >= 2 && ub > lb {
		bl := runs[0].count * numFacts[runs[0].code].size
		st := runs[1].off - runs[0].off
		ok := st >= bl
		for i := 1; i < len(runs) && ok; i++ {
			ok = runs[i].count*numFacts[runs[i].code].size == bl && runs[i].off-runs[i-1].off == st
		}
		if ok {
			d.nreg, d.blen, d.step = len(runs), bl, st
		}
	}
	return d, nil
}

// block is count elements of t at byte displacement disp.
type block struct {
	disp, count int
	t           *Datatype
}

// derive makes the datatype of blocks; align rounds the upper bound up to
// the largest basic alignment (MPI's struct rule), so that a struct
// datatype describing a Go struct has its extent.
func derive(op, name string, blocks []block, align bool) (*Datatype, error) {
	var runs []run
	var lo, hi, mlo, mhi extreme // the data's bounds and the markers'
	maxAlign := 1
	for _, b := range blocks {
		if b.t == nil {
			return nil, errType(ErrType, op, "nil datatype")
		}
		if b.count < 0 {
			return nil, errType(ErrCount, op, "negative count %d", b.count)
		}
		if b.count == 0 {
			continue
		}
		ext := b.t.ub - b.t.lb
		if r, ok := b.t.dense(); ok {
			// Copies of one run filling its extent: one run, whatever
			// the count (2^31 bytes as contiguous(2^31, MPI_BYTE)).
			if r.count > maxElems/b.count {
				return nil, errType(ErrCount, op, "%d copies of %s: more than 2^62 basic elements", b.count, b.t.name)
			}
			runs = addRun(runs, r.code, b.disp+r.off, b.count*r.count)
		} else {
			// The copies' runs merge at most once per boundary between
			// copies: at least count*(len-1) runs, count-1 of one run
			// that does not fill its extent (no merges but with the last
			// run so far). Over the cap: refused before building.
			least := b.count - 1
			if k := len(b.t.runs); k > 1 {
				least = b.count * (k - 1)
			}
			if len(runs)+least > maxRuns {
				return nil, errType(ErrCount, op, "more than %d basic blocks in one element", maxRuns)
			}
			for i := range b.count {
				for _, r := range b.t.runs {
					runs = addRun(runs, r.code, b.disp+i*ext+r.off, r.count)
				}
				if len(runs) > maxRuns {
					return nil, errType(ErrCount, op, "more than %d basic blocks in one element", maxRuns)
				}
			}
		}
		maxAlign = max(maxAlign, b.t.alignment())
		l, u := b.disp+b.t.lb, b.disp+(b.count-1)*ext+b.t.ub
		if ext < 0 {
			l, u = b.disp+(b.count-1)*ext+b.t.lb, b.disp+b.t.ub
		}
		switch {
		case b.t.lbMark:
			mlo.add(l, false)
		case !b.t.noLo:
			lo.add(l, false)
		}
		switch {
		case b.t.ubMark:
			mhi.add(u, true)
		case !b.t.noHi:
			hi.add(u, true)
		}
	}
	// MPI-4.1 5.1.7: a bound is the extreme of the markers if the typemap
	// has one, else of the data; the struct rule's padding (epsilon)
	// rounds an upper bound of the data only.
	lb, ub := lo.v, hi.v
	if mlo.set {
		lb = mlo.v
	}
	if mhi.set {
		ub = mhi.v
	} else if align && (ub-lb)%maxAlign != 0 {
		ub += maxAlign - (ub-lb)%maxAlign
	}
	d, err := newDatatype(name, runs, lb, ub)
	if err == nil {
		d.align = maxAlign // a struct of it aligns as its strictest member
		d.lbMark, d.ubMark = mlo.set, mhi.set
		d.noLo = !mlo.set && !lo.set && mhi.set // only upper bound markers
		d.noHi = !mhi.set && !hi.set && mlo.set // only lower bound markers
	}
	return d, err
}

// extreme is the running minimum (or maximum) of candidate bounds.
type extreme struct {
	v   int
	set bool
}

func (b *extreme) add(v int, isMax bool) {
	if !b.set || (isMax && v > b.v) || (!isMax && v < b.v) {
		b.v, b.set = v, true
	}
}

// newMarker is the lower (lower true) or upper bound marker type.
func newMarker(name string, lower bool) *Datatype {
	d, err := newDatatype(name, nil, 0, 0)
	if err != nil {
		panic(err)
	}
	d.lbMark, d.noHi = lower, lower
	d.ubMark, d.noLo = !lower, !lower
	d.committed.Store(true)
	return d
}

// LBMarker and UBMarker are the bound marker types of MPI-4.1 5.1.7
// (MPI_LB and MPI_UB: removed in MPI-3.0, kept by the C binding as an
// extension for MPI-1 programs). They hold no data: a block of LBMarker
// in TypeCreateStruct puts a lower bound marker at its displacement,
// UBMarker an upper one, and a datatype's bound is its markers' extreme
// if it has any (TypeCreateResized sets both). Committed.
var (
	LBMarker = newMarker("MPI_LB", true)
	UBMarker = newMarker("MPI_UB", false)
)

func (d *Datatype) ext() int { return d.ub - d.lb }

// TypeContiguous is count copies of old, one after the other
// (MPI_Type_contiguous).
func TypeContiguous(count int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_contiguous"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	return derive(op, fmt.Sprintf("contiguous(%d, %s)", count, old.name), []block{{0, count, old}}, false)
}

// TypeVector is count blocks of blocklen copies of old, the starts of
// consecutive blocks stride extents of old apart (MPI_Type_vector).
func TypeVector(count, blocklen, stride int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_vector"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	return hvector(op, fmt.Sprintf("vector(%d, %d, %d, %s)", count, blocklen, stride, old.name), count, blocklen, stride*old.ext(), old)
}

// TypeCreateHvector is TypeVector with the stride in bytes
// (MPI_Type_create_hvector).
func TypeCreateHvector(count, blocklen, strideBytes int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_hvector"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	return hvector(op, fmt.Sprintf("hvector(%d, %d, %d, %s)", count, blocklen, strideBytes, old.name), count, blocklen, strideBytes, old)
}

func hvector(op, name string, count, blocklen, stride int, old *Datatype) (*Datatype, error) {
	if count < 0 || blocklen < 0 {
		return nil, errType(ErrCount, op, "negative count %d or block length %d", count, blocklen)
	}
	if _, ok := old.dense(); ok && count > 1 && stride == blocklen*old.ext() {
		// Abutting blocks of a dense type: one block (no list of count).
		if blocklen > 0 && count > maxElems/blocklen {
			return nil, errType(ErrCount, op, "%d blocks of %d: more than 2^62 elements", count, blocklen)
		}
		return derive(op, name, []block{{0, count * blocklen, old}}, false)
	}
	blocks := make([]block, count)
	for i := range blocks {
		blocks[i] = block{i * stride, blocklen, old}
	}
	return derive(op, name, blocks, false)
}

// TypeIndexed is blocks of blocklens[i] copies of old at displacements
// displs[i], in extents of old (MPI_Type_indexed).
func TypeIndexed(blocklens, displs []int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_indexed"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	if len(blocklens) != len(displs) {
		return nil, errType(ErrArg, op, "%d block lengths, %d displacements", len(blocklens), len(displs))
	}
	blocks := make([]block, len(displs))
	for i := range blocks {
		blocks[i] = block{displs[i] * old.ext(), blocklens[i], old}
	}
	return derive(op, fmt.Sprintf("indexed(%v, %v, %s)", blocklens, displs, old.name), blocks, false)
}

// TypeCreateIndexedBlock is TypeIndexed with every block of blocklen
// copies (MPI_Type_create_indexed_block).
func TypeCreateIndexedBlock(blocklen int, displs []int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_indexed_block"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	blocks := make([]block, len(displs))
	for i := range blocks {
		blocks[i] = block{displs[i] * old.ext(), blocklen, old}
	}
	return derive(op, fmt.Sprintf("indexed_block(%d, %v, %s)", blocklen, displs, old.name), blocks, false)
}

// TypeCreateStruct is blocks of blocklens[i] copies of types[i] at byte
// displacements displs[i] (MPI_Type_create_struct); the extent is rounded
// up to the largest alignment of its basic types, as MPI does, so that a
// datatype describing the fields of a Go struct (displacements from
// unsafe.Offsetof) has the struct's size as extent.
func TypeCreateStruct(blocklens, displs []int, types []*Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_struct"
	if len(blocklens) != len(displs) || len(displs) != len(types) {
		return nil, errType(ErrArg, op, "%d block lengths, %d displacements, %d types", len(blocklens), len(displs), len(types))
	}
	blocks := make([]block, len(displs))
	names := make([]string, len(types))
	for i := range blocks {
		blocks[i] = block{displs[i], blocklens[i], types[i]}
		if types[i] != nil {
			names[i] = types[i].name
		}
	}
	return derive(op, fmt.Sprintf("struct(%v, %v, %v)", blocklens, displs, names), blocks, true)
}

// TypeCreateResized is old with lower bound lb and extent extent, in bytes
// (MPI_Type_create_resized): consecutive elements start extent bytes
// apart.
func TypeCreateResized(old *Datatype, lb, extent int) (*Datatype, error) {
	const op = "MPI_Type_create_resized"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	d, err := newDatatype(fmt.Sprintf("resized(%s, %d, %d)", old.name, lb, extent), old.runs, lb, lb+extent)
	if err == nil {
		d.align = old.alignment()
		d.lbMark, d.ubMark = true, true // MPI-4.1 5.1.7: old's markers erased, new ones at lb and lb+extent
	}
	return d, err
}

// Commit makes d usable in communication (MPI_Type_commit).
func (d *Datatype) Commit() error {
	if d == nil {
		return errType(ErrType, "MPI_Type_commit", "nil datatype")
	}
	d.committed.Store(true)
	return nil
}

// Free releases d (MPI_Type_free): a no-op, datatypes are garbage
// collected; messages in flight are unaffected.
func (d *Datatype) Free() error { return nil }

// Size is the number of bytes of data in one element (MPI_Type_size).
func (d *Datatype) Size() int { return d.size }

// Extent returns the lower bound and the extent of d in bytes
// (MPI_Type_get_extent).
func (d *Datatype) Extent() (lb, extent int) { return d.lb, d.ub - d.lb }

// TrueExtent returns the bounds of the data itself, ignoring resizing
// (MPI_Type_get_true_extent).
func (d *Datatype) TrueExtent() (lb, extent int) { return d.lo, d.hi - d.lo }

// String names the datatype as it was built.
func (d *Datatype) String() string { return d.name }

// Elements returns how many basic elements (the numbers, bools and bytes
// its typemap is made of) the first n bytes of data of d hold, counting
// whole elements of d and then the basic elements of a partial one
// (MPI_Get_elements of a status of n bytes).
func (d *Datatype) Elements(n int) int {
	if d.size == 0 || n <= 0 {
		return 0
	}
	out := n / d.size * d.nbasic
	rest := n % d.size
	for _, r := range d.runs {
		if rest <= 0 {
			break
		}
		sz := dtypeSize(r.code)
		k := min(r.count, rest/sz)
		out += k
		rest -= k * sz
		if k < r.count {
			break
		}
	}
	return out
}

// check validates count elements of d over a buffer of n bytes of element
// type T.
func checkTyped[T Elem](op string, c *Comm, buf []T, count int, d *Datatype) ([]byte, error) {
	if d == nil {
		return nil, newErr(ErrType, op, c, NoPeer, "nil datatype")
	}
	if !d.committed.Load() {
		return nil, newErr(ErrType, op, c, NoPeer, "datatype %s is not committed (Commit)", d.name)
	}
	if count < 0 {
		return nil, newErr(ErrCount, op, c, NoPeer, "negative count %d", count)
	}
	f := elemOf[T]()
	if f.err != "" {
		return nil, newErr(ErrType, op, c, NoPeer, "%s", f.err)
	}
	if f.runs == nil && f.dt != p2p.DTByte && d.size > 0 && d.sig.dt != f.dt {
		// A buffer of a basic type takes datatypes of that type only
		// (bytes and structs take any).
		return nil, newErr(ErrType, op, c, NoPeer, "datatype %s has %s elements, the buffer is a []%s", d.name, p2p.DTypeName(d.sig.dt), f.name)
	}
	b := asBytes(buf)
	if count == 0 || d.size == 0 {
		return b, nil
	}
	span := (count - 1) * d.ext()
	first, last := d.lo+min(0, span), d.hi+max(0, span)
	if first < 0 || last > len(b) {
		return nil, newErr(ErrCount, op, c, NoPeer, "%d elements of %s span bytes [%d, %d) of a buffer of %d bytes", count, d.name, first, last, len(b))
	}
	return b, nil
}

// pack gathers count elements of d over src into dst (count*d.size bytes).
func (d *Datatype) pack(dst, src []byte, count int) {
	if d.contig {
		copy(dst, src[:count*d.size])
		return
	}
	pos, ext := 0, d.ext()
	if d.nreg > 0 {
		for i := range count {
			pos += d.gather(dst[pos:pos+d.size], src[i*ext+d.runs[0].off:])
		}
		return
	}
	for i := range count {
		base := i * ext
		for _, r := range d.runs {
			pos += move(dst[pos:], src[base+r.off:], r.count*numFacts[r.code].size)
		}
	}
}

// move copies n bytes from src to dst: a word move for the 8- and 4-byte
// blocks of struct typemaps (copy's call costs more than the move).
func move(dst, src []byte, n int) int {
	switch n {
	case 8:
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
	case 4:
		binary.LittleEndian.PutUint32(dst, binary.LittleEndian.Uint32(src))
	default:
		copy(dst[:n], src[:n])
	}
	return n
}

// unpack scatters the packed bytes src (whole elements, then a partial
// one) into dst.
func (d *Datatype) unpack(dst, src []byte) {
	if d.contig {
		copy(dst, src)
		return
	}
	pos, ext := 0, d.ext()
	if d.nreg > 0 {
		for i := 0; len(src)-pos >= d.size; i++ {
			pos += d.scatter(dst[i*ext+d.runs[0].off:], src[pos:pos+d.size])
		}
		if pos == len(src) {
			return
		}
		// A partial element: the general loop below from it on.
		dst, src = dst[(pos/d.size)*ext:], src[pos:]
		pos = 0
	}
	for i := 0; pos < len(src); i++ {
		base := i * ext
		for _, r := range d.runs {
			if pos >= len(src) {
				return
			}
			n := min(r.count*numFacts[r.code].size, len(src)-pos)
			pos += move(dst[base+r.off:], src[pos:], n)
		}
	}
}

// gather packs one element of a regular typemap from src (at its first
// run) into dst (d.size bytes): word moves for 8- and 4-byte blocks.
func (d *Datatype) gather(dst, src []byte) int {
	st := d.step
	switch d.blen {
	case 8:
		for j := range d.nreg {
			binary.LittleEndian.PutUint64(dst[8*j:], binary.LittleEndian.Uint64(src[j*st:]))
		}
	case 4:
		for j := range d.nreg {
			binary.LittleEndian.PutUint32(dst[4*j:], binary.LittleEndian.Uint32(src[j*st:]))
		}
	default:
		bl := d.blen
		for j := range d.nreg {
			copy(dst[bl*j:bl*j+bl], src[j*st:])
		}
	}
	return d.size
}

// scatter is gather's inverse: one packed element of src into dst (at its
// first run).
func (d *Datatype) scatter(dst, src []byte) int {
	st := d.step
	switch d.blen {
	case 8:
		for j := range d.nreg {
			binary.LittleEndian.PutUint64(dst[j*st:], binary.LittleEndian.Uint64(src[8*j:]))
		}
	case 4:
		for j := range d.nreg {
			binary.LittleEndian.PutUint32(dst[j*st:], binary.LittleEndian.Uint32(src[4*j:]))
		}
	default:
		bl := d.blen
		for j := range d.nreg {
			copy(dst[j*st:j*st+bl], src[bl*j:bl*j+bl])
		}
	}
	return d.size
}

// packed returns the packed data of count elements of d over b: b itself
// when contiguous, else a pooled buffer (handle p for p2p.PutBuf).
func (d *Datatype) packed(b []byte, count int) (data []byte, p *[]byte) {
	n := count * d.size
	if d.contig {
		return b[:n], nil
	}
	data, p = p2p.GetBuf(n)
	d.pack(data, b, count)
	return data, p
}

// room returns where count packed elements of d are received: b itself
// when contiguous, else a pooled buffer.
func (d *Datatype) room(b []byte, count int) (data []byte, p *[]byte) {
	n := count * d.size
	if d.contig {
		return b[:n], nil
	}
	return p2p.GetBuf(n)
}

// PackSize is the number of bytes Pack writes for count elements of d
// (MPI_Pack_size).
func PackSize(count int, d *Datatype) (int, error) {
	if d == nil {
		return 0, errType(ErrType, "MPI_Pack_size", "nil datatype")
	}
	if count < 0 {
		return 0, errType(ErrCount, "MPI_Pack_size", "negative count %d", count)
	}
	return count * d.size, nil
}

// Pack packs count elements of d laid over in into out (MPI_Pack) and
// returns the number of bytes written (PackSize); pack several calls'
// data into one buffer by passing out[position:].
func Pack[T Elem](in []T, count int, d *Datatype, out []byte) (int, error) {
	const op = "MPI_Pack"
	b, err := checkTyped(op, nil, in, count, d)
	if err != nil {
		return 0, err
	}
	n := count * d.size
	if len(out) < n {
		return 0, errType(ErrTruncate, op, "%d bytes to pack, the output holds %d", n, len(out))
	}
	d.pack(out, b, count)
	return n, nil
}

// Unpack unpacks count elements of d from in into out, laid over by d
// (MPI_Unpack), and returns the number of bytes read.
func Unpack[T Elem](in []byte, out []T, count int, d *Datatype) (int, error) {
	const op = "MPI_Unpack"
	b, err := checkTyped(op, nil, out, count, d)
	if err != nil {
		return 0, err
	}
	n := count * d.size
	if len(in) < n {
		return 0, errType(ErrTruncate, op, "%d bytes to unpack, the input holds %d", n, len(in))
	}
	d.unpack(b, in[:n])
	return n, nil
}

// typedStatus is the status of a typed receive of d: Count in elements of
// d (whole elements received).
func typedStatus(st Status, bytes int, d *Datatype) Status {
	st.Bytes = bytes
	if d.size > 0 {
		st.Count = bytes / d.size
	}
	return st
}

// SendTyped sends count elements of d laid over buf (MPI_Send with a
// datatype). It returns once buf may be reused.
func SendTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) error {
	return sendTyped(c, "MPI_Send", buf, count, d, dest, tag, false)
}

// SsendTyped is SendTyped in synchronous mode (MPI_Ssend with a datatype).
func SsendTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) error {
	return sendTyped(c, "MPI_Ssend", buf, count, d, dest, tag, true)
}

func sendTyped[T Elem](c *Comm, op string, buf []T, count int, d *Datatype, dest, tag int, sync bool) error {
	if err := c.checkSendArgs(op, dest, tag); err != nil {
		return err
	}
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return c.handle(err)
	}
	if dest == ProcNull {
		return nil
	}
	data, pooled := d.packed(b, count)
	defer p2p.PutBuf(pooled)
	r, err := c.w.eng.Isend(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(tag), d.sig.dt, data, sync)
	if err != nil {
		return c.handle(c.engineErr(op, dest, err))
	}
	if r == nil {
		return nil
	}
	if !r.Wait(c.w.abort) {
		return c.handle(c.w.abortedErr(op, c))
	}
	st := r.Status()
	c.w.eng.Release(r)
	if st.Err != nil {
		return c.handle(c.engineErr(op, dest, st.Err))
	}
	return nil
}

// RecvTyped receives up to count elements of d laid over buf (MPI_Recv
// with a datatype); Status.Count is in elements of d.
func RecvTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, source, tag int) (Status, error) {
	const op = "MPI_Recv"
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return emptyStatus(), err
	}
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return emptyStatus(), c.handle(err)
	}
	if source == ProcNull {
		return procNullStatus(), nil
	}
	room, pooled := d.room(b, count)
	defer p2p.PutBuf(pooled)
	r, err := c.postRecv(source, tag, d.sig.dt, room)
	if err != nil {
		return emptyStatus(), c.handle(c.engineErr(op, source, err))
	}
	if err := c.waitRecv(op, r, source); err != nil {
		return emptyStatus(), c.handle(err)
	}
	ps := r.Status()
	st, err := c.recvStatus(op, ps, source)
	c.w.eng.Release(r)
	if err == nil && !d.contig {
		d.unpack(b, room[:ps.Bytes])
	}
	return typedStatus(st, ps.Bytes, d), c.handle(err)
}

// typedReq is the completion work of a typed nonblocking request: unpack
// a receive, return the pooled buffer.
type typedReq struct {
	d      *Datatype
	dst    []byte // the user's buffer (receives)
	room   []byte
	pooled *[]byte
}

// done finishes a typed request with engine status ps (Request.collect).
func (t *typedReq) done(st *Status, ps p2p.Status, err error) {
	if t.dst != nil {
		if err == nil && !t.d.contig {
			t.d.unpack(t.dst, t.room[:ps.Bytes])
		}
		*st = typedStatus(*st, ps.Bytes, t.d)
	}
	p2p.PutBuf(t.pooled)
	t.pooled = nil
}

// IsendTyped starts a send of count elements of d laid over buf (MPI_Isend
// with a datatype). The data is packed at the call (buf may be reused at
// once when d is not contiguous; MPI does not promise it).
func IsendTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) (*Request, error) {
	if c != nil && c.w.cfg.Check { // check.go
		return chkTypedStart(c, "MPI_Isend", buf, count, d, dest, tag, false, func() (*Request, error) {
			return isendTyped(c, "MPI_Isend", buf, count, d, dest, tag, false)
		})
	}
	return isendTyped(c, "MPI_Isend", buf, count, d, dest, tag, false)
}

// IssendTyped is IsendTyped in synchronous mode (MPI_Issend with a
// datatype): the request completes once the receiver matched the message.
func IssendTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, tag int) (*Request, error) {
	if c != nil && c.w.cfg.Check { // check.go
		return chkTypedStart(c, "MPI_Issend", buf, count, d, dest, tag, false, func() (*Request, error) {
			return isendTyped(c, "MPI_Issend", buf, count, d, dest, tag, true)
		})
	}
	return isendTyped(c, "MPI_Issend", buf, count, d, dest, tag, true)
}

func isendTyped[T Elem](c *Comm, op string, buf []T, count int, d *Datatype, dest, tag int, sync bool) (*Request, error) {
	if err := c.checkSendArgs(op, dest, tag); err != nil {
		return nil, err
	}
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return nil, c.handle(err)
	}
	req := &Request{c: c, op: op, peer: dest}
	if dest == ProcNull {
		req.finish(emptyStatus(), nil)
		return req, nil
	}
	data, pooled := d.packed(b, count)
	r, sent, err := c.w.eng.IsendMsg(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(tag), d.sig.dt, data, sync, 0)
	req.sent = sent // for Cancel
	if err != nil {
		p2p.PutBuf(pooled)
		if errors.Is(err, p2p.ErrPeerLost) || errors.Is(err, p2p.ErrRevoked) {
			// Reported at completion, as Isend's (seed 002 A.2).
			r = c.w.eng.NewLocalReq()
			r.Finish(p2p.Status{Err: err})
			req.pr = r
			return req, nil
		}
		return nil, c.handle(c.engineErr(op, dest, err))
	}
	if r == nil {
		p2p.PutBuf(pooled)
		req.finish(emptyStatus(), nil)
		return req, nil
	}
	req.pr = r
	req.typed = &typedReq{d: d, pooled: pooled}
	return req, nil
}

// IrecvTyped starts a receive of up to count elements of d laid over buf
// (MPI_Irecv with a datatype); the data is unpacked into buf when the
// request completes (Wait, Test, ...).
func IrecvTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, source, tag int) (*Request, error) {
	if c != nil && c.w.cfg.Check { // check.go
		return chkTypedStart(c, "MPI_Irecv", buf, count, d, source, tag, true, func() (*Request, error) {
			return irecvTypedOp(c, "MPI_Irecv", buf, count, d, source, tag)
		})
	}
	return irecvTypedOp(c, "MPI_Irecv", buf, count, d, source, tag)
}

func irecvTypedOp[T Elem](c *Comm, op string, buf []T, count int, d *Datatype, source, tag int) (*Request, error) {
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return nil, err
	}
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return nil, c.handle(err)
	}
	req := &Request{c: c, op: op, peer: source, recv: true}
	if source == ProcNull {
		req.finish(procNullStatus(), nil)
		return req, nil
	}
	room, pooled := d.room(b, count)
	r, err := c.postRecv(source, tag, d.sig.dt, room)
	if err != nil {
		p2p.PutBuf(pooled)
		return nil, c.handle(c.engineErr(op, source, err))
	}
	req.pr = r
	req.typed = &typedReq{d: d, dst: b, room: room, pooled: pooled}
	if source == AnySource {
		c.ftm().trackWild(c, req)
	}
	return req, nil
}

// runCarrier prepares collective kind over packed data s (send) and r
// (receive) of signature f. The data travels as elements of a carrier type
// of f's size: basic elements for a datatype of one basic type (the
// counts in basic elements, so that plain slices of that type match at
// the other members), bytes for a struct signature; the messages carry
// f's type (the prep's ov argument).
func runCarrier(c *Comm, op string, kind int, f *elemFacts, s, r []byte, root int, red ...*Op) (collRun, error) {
	n := 1
	if f.runs == nil {
		n = f.size
	}
	switch n {
	case 2:
		return carrierRun[uint16](c, op, kind, f, s, r, root, red...)
	case 4:
		return carrierRun[uint32](c, op, kind, f, s, r, root, red...)
	case 8:
		return carrierRun[uint64](c, op, kind, f, s, r, root, red...)
	case 16:
		return carrierRun[[2]uint64](c, op, kind, f, s, r, root, red...)
	}
	return carrierRun[byte](c, op, kind, f, s, r, root, red...)
}

func carrierRun[T any](c *Comm, op string, kind int, f *elemFacts, s, r []byte, root int, red ...*Op) (collRun, error) {
	sb, rb := fromBytes[T](s), fromBytes[T](r)
	switch kind {
	case coll.KReduce:
		return reducePrep(c, op, sb, rb, red[0], root, f)
	case coll.KAllreduce:
		return allreducePrep(c, op, sb, rb, red[0], f)
	case coll.KBcast:
		return bcastPrep(c, op, sb, root, f)
	case coll.KGather:
		return gatherPrep(c, op, sb, rb, root, f)
	case coll.KScatter:
		return scatterPrep(c, op, sb, rb, root, f)
	case coll.KAlltoall:
		return alltoallPrep(c, op, sb, rb, f)
	}
	return allgatherPrep(c, op, sb, rb, f)
}

// BcastTyped broadcasts count elements of d laid over buf from root
// (MPI_Bcast with a datatype). Every member passes the same type
// signature (count x signature of d); the layouts may differ.
func BcastTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, root int) error {
	const op = "MPI_Bcast"
	b, err := checkTypedColl(c, op, buf, count, d)
	if err != nil {
		return err
	}
	room, pooled := d.room(b, count)
	defer p2p.PutBuf(pooled)
	me := c.rank == root && !c.IsInter() || root == Root
	if me && !d.contig {
		d.pack(room, b, count)
	}
	run, err := runCarrier(c, op, coll.KBcast, d.sig, room, nil, root)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if !me && root != ProcNull && !d.contig { // ProcNull: an intercommunicator's root group, no data
		d.unpack(b, room)
	}
	return nil
}

// GatherTyped gathers sendcount elements of sendtype from every member
// into recvbuf at root, rank i's recvcount elements of recvtype at element
// i*recvcount (MPI_Gather with datatypes).
func GatherTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) error {
	if isInter(c) { // intercoll_typed.go
		run, err := interGatherTypedPrep(c, "MPI_Gather", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root)
		return blocking(c, run, err)
	}
	const op = "MPI_Gather"
	sb, err := checkTypedColl(c, op, sendbuf, sendcount, sendtype)
	if err != nil {
		return err
	}
	atRoot := c.rank == root
	var rb []byte
	if atRoot {
		if rb, err = checkTypedColl(c, op, recvbuf, recvcount*c.size, recvtype); err != nil {
			return err
		}
		if recvtype.sig.dt != sendtype.sig.dt || recvcount*recvtype.size != sendcount*sendtype.size {
			return c.failColl(newErr(ErrType, op, c, NoPeer, "the root sends %d x %s and receives %d x %s per rank: the signatures differ",
				sendcount, sendtype.name, recvcount, recvtype.name))
		}
	}
	sdata, sp := sendtype.packed(sb, sendcount)
	defer p2p.PutBuf(sp)
	var rroom []byte
	var rp *[]byte
	if atRoot {
		rroom, rp = recvtype.room(rb, recvcount*c.size)
		defer p2p.PutBuf(rp)
	}
	run, err := runCarrier(c, op, coll.KGather, sendtype.sig, sdata, rroom, root)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if atRoot && !recvtype.contig {
		recvtype.unpack(rb, rroom)
	}
	return nil
}

// ScatterTyped sends block i (sendcount elements of sendtype at element
// i*sendcount) of sendbuf at root to member i's recvbuf, recvcount
// elements of recvtype (MPI_Scatter with datatypes).
func ScatterTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype, root int) error {
	if isInter(c) { // intercoll_typed.go
		run, err := interScatterTypedPrep(c, "MPI_Scatter", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root)
		return blocking(c, run, err)
	}
	const op = "MPI_Scatter"
	rb, err := checkTypedColl(c, op, recvbuf, recvcount, recvtype)
	if err != nil {
		return err
	}
	atRoot := c.rank == root
	var sdata []byte
	if atRoot {
		sb, err := checkTypedColl(c, op, sendbuf, sendcount*c.size, sendtype)
		if err != nil {
			return err
		}
		if recvtype.sig.dt != sendtype.sig.dt || recvcount*recvtype.size != sendcount*sendtype.size {
			return c.failColl(newErr(ErrType, op, c, NoPeer, "the root sends %d x %s and receives %d x %s per rank: the signatures differ",
				sendcount, sendtype.name, recvcount, recvtype.name))
		}
		var sp *[]byte
		sdata, sp = sendtype.packed(sb, sendcount*c.size)
		defer p2p.PutBuf(sp)
	}
	rroom, rp := recvtype.room(rb, recvcount)
	defer p2p.PutBuf(rp)
	run, err := runCarrier(c, op, coll.KScatter, recvtype.sig, sdata, rroom, root)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if !recvtype.contig {
		recvtype.unpack(rb, rroom)
	}
	return nil
}

// AllgatherTyped gathers sendcount elements of sendtype from every member
// into every member's recvbuf, rank i's recvcount elements of recvtype at
// element i*recvcount (MPI_Allgather with datatypes).
func AllgatherTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) error {
	const op = "MPI_Allgather"
	sb, err := checkTypedColl(c, op, sendbuf, sendcount, sendtype)
	if err != nil {
		return err
	}
	rb, err := checkTypedColl(c, op, recvbuf, recvcount*c.peerSize(), recvtype) // the remote group's blocks on an intercommunicator
	if err != nil {
		return err
	}
	if !c.IsInter() && (recvtype.sig.dt != sendtype.sig.dt || recvcount*recvtype.size != sendcount*sendtype.size) { // an intercommunicator's groups may send different amounts
		return c.failColl(newErr(ErrType, op, c, NoPeer, "this rank sends %d x %s and receives %d x %s per rank: the signatures differ",
			sendcount, sendtype.name, recvcount, recvtype.name))
	}
	sdata, sp := sendtype.packed(sb, sendcount)
	defer p2p.PutBuf(sp)
	rroom, rp := recvtype.room(rb, recvcount*c.peerSize())
	defer p2p.PutBuf(rp)
	run, err := runCarrier(c, op, coll.KAllgather, sendtype.sig, sdata, rroom, 0)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if !recvtype.contig {
		recvtype.unpack(rb, rroom)
	}
	return nil
}

// ReduceTyped combines count elements of d laid over sendbuf of every
// member with op, in rank order, into recvbuf at root, laid over by d
// (MPI_Reduce with a datatype). op must be a predefined operation defined
// on d's basic type (a vector of float64 with Sum, say); a user operation
// takes Go elements (NewOp) instead.
func ReduceTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op, root int) error {
	if isInter(c) { // intercoll_typed.go
		run, err := interReduceTypedPrep(c, "MPI_Reduce", sendbuf, recvbuf, count, d, op, root)
		return blocking(c, run, err)
	}
	const name = "MPI_Reduce"
	sb, err := checkTypedColl(c, name, sendbuf, count, d)
	if err != nil {
		return err
	}
	atRoot := c.rank == root
	var rb, rroom []byte
	if atRoot {
		if rb, err = checkTypedColl(c, name, recvbuf, count, d); err != nil {
			return err
		}
		var rp *[]byte
		rroom, rp = d.room(rb, count)
		defer p2p.PutBuf(rp)
	}
	sdata, sp := d.packed(sb, count)
	defer p2p.PutBuf(sp)
	run, err := runCarrier(c, name, coll.KReduce, d.sig, sdata, rroom, root, op)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if atRoot && !d.contig {
		d.unpack(rb, rroom)
	}
	return nil
}

// AllreduceTyped combines count elements of d laid over sendbuf of every
// member with op, in rank order, into every member's recvbuf, laid over by
// d (MPI_Allreduce with a datatype); op as for ReduceTyped.
func AllreduceTyped[S, R Elem](c *Comm, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op) error {
	const name = "MPI_Allreduce"
	sb, err := checkTypedColl(c, name, sendbuf, count, d)
	if err != nil {
		return err
	}
	rb, err := checkTypedColl(c, name, recvbuf, count, d)
	if err != nil {
		return err
	}
	sdata, sp := d.packed(sb, count)
	defer p2p.PutBuf(sp)
	rroom, rp := d.room(rb, count)
	defer p2p.PutBuf(rp)
	run, err := runCarrier(c, name, coll.KAllreduce, d.sig, sdata, rroom, 0, op)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if !d.contig {
		d.unpack(rb, rroom)
	}
	return nil
}

// AlltoallTyped sends block j (sendcount elements of sendtype at element
// j*sendcount of sendbuf) to member j, which stores it as block i (i the
// sender; recvcount elements of recvtype at element i*recvcount of
// recvbuf) (MPI_Alltoall with datatypes).
func AlltoallTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, recvbuf []R, recvcount int, recvtype *Datatype) error {
	if isInter(c) { // intercoll_typed.go
		run, err := interAlltoallTypedPrep(c, "MPI_Alltoall", sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype)
		return blocking(c, run, err)
	}
	const op = "MPI_Alltoall"
	if err := checkComm(c, op); err != nil {
		return err
	}
	sb, err := checkTypedColl(c, op, sendbuf, sendcount*c.size, sendtype)
	if err != nil {
		return err
	}
	rb, err := checkTypedColl(c, op, recvbuf, recvcount*c.size, recvtype)
	if err != nil {
		return err
	}
	if recvtype.sig.dt != sendtype.sig.dt || recvcount*recvtype.size != sendcount*sendtype.size {
		return c.failColl(newErr(ErrType, op, c, NoPeer, "this rank sends %d x %s and receives %d x %s per rank: the signatures differ",
			sendcount, sendtype.name, recvcount, recvtype.name))
	}
	sdata, sp := sendtype.packed(sb, sendcount*c.size)
	defer p2p.PutBuf(sp)
	rroom, rp := recvtype.room(rb, recvcount*c.size)
	defer p2p.PutBuf(rp)
	run, err := runCarrier(c, op, coll.KAlltoall, sendtype.sig, sdata, rroom, 0)
	if err = blocking(c, run, err); err != nil {
		return err
	}
	if !recvtype.contig {
		recvtype.unpack(rb, rroom)
	}
	return nil
}

// checkTypedColl is checkTyped for a collective: a rejected argument
// fails the call at every member (failColl).
func checkTypedColl[T Elem](c *Comm, op string, buf []T, count int, d *Datatype) ([]byte, error) {
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return nil, c.failColl(err)
	}
	return b, nil
}
