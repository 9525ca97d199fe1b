package mpi

// Datatype constructors for the C binding (libmpi) that the Go API had no
// form of: MPI_Type_create_hindexed, MPI_Type_create_hindexed_block,
// MPI_Type_create_subarray, MPI_Type_create_darray and MPI_Type_dup. They
// build typemaps as the other constructors do (derive), so the results
// travel, pack and compare like any datatype.

import (
	"fmt"
	"slices"
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// TypeCreateHindexed is blocks of blocklens[i] copies of old at byte
// displacements displs[i] (MPI_Type_create_hindexed). Unlike
// TypeCreateStruct, the extent is not rounded up to an alignment.
func TypeCreateHindexed(blocklens, displs []int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_hindexed"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	if len(blocklens) != len(displs) {
		return nil, errType(ErrArg, op, "%d block lengths, %d displacements", len(blocklens), len(displs))
	}
	blocks := make([]block, len(displs))
	for i := range blocks {
		blocks[i] = block{displs[i], blocklens[i], old}
	}
	return derive(op, fmt.Sprintf("hindexed(%v, %v, %s)", blocklens, displs, old.name), blocks, false)
}

// TypeCreateHindexedBlock is TypeCreateHindexed with every block of
// blocklen copies (MPI_Type_create_hindexed_block).
func TypeCreateHindexedBlock(blocklen int, displs []int, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_hindexed_block"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	blocks := make([]block, len(displs))
	for i := range blocks {
		blocks[i] = block{displs[i], blocklen, old}
	}
	return derive(op, fmt.Sprintf("hindexed_block(%d, %v, %s)", blocklen, displs, old.name), blocks, false)
}

// TypeDup is a copy of old with the same typemap and bounds
// (MPI_Type_dup); it is committed if old is, and gets the copies of old's
// attributes that their copy callbacks make (a failing one fails TypeDup).
func TypeDup(old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_dup"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	d, err := newDatatype(old.name, old.runs, old.lb, old.ub)
	if err != nil {
		return nil, err
	}
	d.align = old.align
	d.lbMark, d.ubMark, d.noLo, d.noHi = old.lbMark, old.ubMark, old.noLo, old.noHi
	d.committed.Store(old.committed.Load())
	if t := old.attrs(false); t != nil {
		nt := d.attrs(true)
		if err := t.copyTo(old, nt); err != nil {
			nt.drop()
			typeAttrs.Delete(d)
			return nil, newErr(ErrOther, op, nil, NoPeer, "attribute copy callback failed: %v", err)
		}
	}
	return d, nil
}

// Committed reports whether d was committed (Commit; the predefined
// datatypes are). It has no MPI counterpart as a call (MPI makes using an
// uncommitted datatype an error; the C library asks before it uses one).
func (d *Datatype) Committed() bool { return d != nil && d.committed.Load() }

// place returns t moved by disp bytes with lower bound 0 and extent
// extent: the final step of subarray and darray (MPI's LB and UB markers).
func place(op, name string, t *Datatype, disp, extent int) (*Datatype, error) {
	s, err := derive(op, name, []block{{disp, 1, t}}, false)
	if err != nil {
		return nil, err
	}
	d, err := newDatatype(name, s.runs, 0, extent)
	if err == nil {
		d.lbMark, d.ubMark = true, true // MPI-4.1 defines both as resized: bound markers
	}
	return d, err
}

// TypeCreateSubarray is the subarray of subsizes elements starting at
// starts of an array of sizes elements of old in each dimension
// (MPI_Type_create_subarray); orderC says the array is in C order (row
// major, the last dimension contiguous), else in Fortran order. Its lower
// bound is 0 and its extent the whole array's. It is local: no process
// failure can affect it.
func TypeCreateSubarray(sizes, subsizes, starts []int, orderC bool, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_subarray"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	n := len(sizes)
	if n < 1 || len(subsizes) != n || len(starts) != n {
		return nil, errType(ErrArg, op, "%d sizes, %d subsizes, %d starts (the same number, at least 1)", n, len(subsizes), len(starts))
	}
	for i := range n {
		switch {
		case sizes[i] < 1:
			return nil, errType(ErrArg, op, "sizes[%d] is %d (sizes are >= 1)", i, sizes[i])
		case subsizes[i] < 0 || subsizes[i] > sizes[i]:
			return nil, errType(ErrArg, op, "subsizes[%d] is %d, outside [0, %d]", i, subsizes[i], sizes[i])
		case starts[i] < 0 || starts[i] > sizes[i]-subsizes[i]:
			return nil, errType(ErrArg, op, "starts[%d] is %d, outside [0, %d]", i, starts[i], sizes[i]-subsizes[i])
		}
	}
	name := fmt.Sprintf("subarray(%v, %v, %v, %s)", sizes, subsizes, starts, old.name)
	ext := old.ext()
	stride, disp := ext, 0
	t := old
	for k := range n {
		i := k // inner to outer dimension
		if orderC {
			i = n - 1 - k
		}
		var err error
		if k == 0 {
			t, err = derive(op, name, []block{{0, subsizes[i], old}}, false)
		} else {
			t, err = hvector(op, name, subsizes[i], 1, stride, t)
		}
		if err != nil {
			return nil, err
		}
		disp += starts[i] * stride
		stride *= sizes[i]
	}
	return place(op, name, t, disp, stride)
}

// The distributions of TypeCreateDarray (MPI_DISTRIBUTE_*).
const (
	DistributeNone     = 0  // MPI_DISTRIBUTE_NONE: the dimension is not distributed
	DistributeBlock    = 1  // MPI_DISTRIBUTE_BLOCK
	DistributeCyclic   = 2  // MPI_DISTRIBUTE_CYCLIC
	DistributeDfltDarg = -1 // MPI_DISTRIBUTE_DFLT_DARG: the default block size
)

// TypeCreateDarray is the part of a global array of gsizes elements of old
// that process rank of size processes holds when the array is distributed
// over a grid of psizes processes (row-major process coordinates) by
// distribs with block sizes dargs (MPI_Type_create_darray, the layout of
// High Performance Fortran); orderC as for TypeCreateSubarray. Its lower
// bound is 0 and its extent the global array's. It is local: no process
// failure can affect it.
func TypeCreateDarray(size, rank int, gsizes, distribs, dargs, psizes []int, orderC bool, old *Datatype) (*Datatype, error) {
	const op = "MPI_Type_create_darray"
	if old == nil {
		return nil, errType(ErrType, op, "nil datatype")
	}
	n := len(gsizes)
	if n < 1 || len(distribs) != n || len(dargs) != n || len(psizes) != n {
		return nil, errType(ErrArg, op, "%d gsizes, %d distribs, %d dargs, %d psizes (the same number, at least 1)", n, len(distribs), len(dargs), len(psizes))
	}
	if size < 1 || rank < 0 || rank >= size {
		return nil, errType(ErrArg, op, "rank %d of size %d", rank, size)
	}
	prod := 1
	for i := range n {
		if gsizes[i] < 1 || psizes[i] < 1 {
			return nil, errType(ErrArg, op, "gsizes[%d] = %d, psizes[%d] = %d (both are >= 1)", i, gsizes[i], i, psizes[i])
		}
		if dargs[i] != DistributeDfltDarg && dargs[i] < 1 {
			return nil, errType(ErrArg, op, "dargs[%d] is %d (>= 1 or the default)", i, dargs[i])
		}
		switch distribs[i] {
		case DistributeNone:
			if psizes[i] != 1 {
				return nil, errType(ErrArg, op, "dimension %d is not distributed but psizes[%d] is %d", i, i, psizes[i])
			}
		case DistributeBlock:
			if dargs[i] != DistributeDfltDarg && dargs[i]*psizes[i] < gsizes[i] {
				return nil, errType(ErrArg, op, "dimension %d: %d blocks of %d do not cover %d elements", i, psizes[i], dargs[i], gsizes[i])
			}
		case DistributeCyclic:
		default:
			return nil, errType(ErrArg, op, "distribs[%d] is %d", i, distribs[i])
		}
		prod *= psizes[i]
	}
	if prod != size {
		return nil, errType(ErrArg, op, "the process grid %v has %d processes, not %d", psizes, prod, size)
	}
	name := fmt.Sprintf("darray(%d, %d, %v, %v, %v, %v, %s)", size, rank, gsizes, distribs, dargs, psizes, old.name)
	coords := make([]int, n)
	procs, r := size, rank
	for i := range n {
		procs /= psizes[i]
		coords[i] = r / procs
		r %= procs
	}
	ext := old.ext()
	offs := make([]int, n)
	t := old
	for k := range n {
		i := k // inner to outer dimension
		if orderC {
			i = n - 1 - k
		}
		// stride: the bytes between consecutive elements of dimension i.
		stride := ext
		for j := range n {
			if (orderC && j > i) || (!orderC && j < i) {
				stride *= gsizes[j]
			}
		}
		var err error
		switch distribs[i] {
		case DistributeCyclic:
			t, offs[i], err = darrayCyclic(op, name, gsizes[i], psizes[i], coords[i], dargs[i], k == 0, ext, stride, t)
		case DistributeBlock:
			t, offs[i], err = darrayBlock(op, name, gsizes[i], psizes[i], coords[i], dargs[i], k == 0, stride, t)
		default:
			t, offs[i], err = darrayBlock(op, name, gsizes[i], 1, 0, DistributeDfltDarg, k == 0, stride, t)
		}
		if err != nil {
			return nil, err
		}
	}
	disp, elems := 0, 1
	for k := range n {
		i := k
		if orderC {
			i = n - 1 - k
		}
		disp += elems * offs[i]
		elems *= gsizes[i]
	}
	return place(op, name, t, disp*ext, elems*ext)
}

// darrayBlock is the block distribution of one dimension of global
// elements over nprocs (this process: coordinate rank): the local
// elements of t (inner: contiguous, else stride bytes apart), with the
// extent of the whole dimension, and the offset of the first one in
// elements of the dimension.
func darrayBlock(op, name string, global, nprocs, rank, darg int, inner bool, stride int, t *Datatype) (*Datatype, int, error) {
	blk := (global + nprocs - 1) / nprocs
	if darg != DistributeDfltDarg {
		blk = darg
	}
	mine := max(min(blk, global-blk*rank), 0)
	var nt *Datatype
	var err error
	if inner {
		nt, err = derive(op, name, []block{{0, mine, t}}, false)
	} else {
		nt, err = hvector(op, name, mine, 1, stride, t)
	}
	if err != nil {
		return nil, 0, err
	}
	off := blk * rank
	if mine == 0 {
		off = 0
	}
	nt, err = newDatatype(name, nt.runs, 0, global*t.ext())
	return nt, off, err
}

// darrayCyclic is the cyclic distribution of one dimension in blocks of
// darg elements (default 1); the innermost dimension carries its own
// offset (ext: the bytes of one element of the array).
func darrayCyclic(op, name string, global, nprocs, rank, darg int, inner bool, ext, stride int, t *Datatype) (*Datatype, int, error) {
	blk := 1
	if darg != DistributeDfltDarg {
		blk = darg
	}
	st, end := rank*blk, global-1
	local := 0
	if end >= st {
		span := end - st + 1
		local = span/(nprocs*blk)*blk + min(span%(nprocs*blk), blk)
	}
	count, rem := local/blk, local%blk
	step := nprocs * blk * stride
	nt, err := hvector(op, name, count, blk, step, t)
	if err != nil {
		return nil, 0, err
	}
	if rem > 0 {
		if nt, err = derive(op, name, []block{{0, 1, nt}, {count * step, rem, t}}, false); err != nil {
			return nil, 0, err
		}
	}
	off := rank * blk
	if inner {
		if nt, err = derive(op, name, []block{{rank * blk * ext, 1, nt}}, false); err != nil {
			return nil, 0, err
		}
		off = 0
	}
	if local == 0 {
		off = 0
	}
	nt, err = newDatatype(name, nt.runs, 0, global*t.ext())
	return nt, off, err
}

// External32 is the portable data representation of PackExternal
// ("external32", MPI-4.1 13.5.2): the packed data with every basic element
// big-endian (a complex number as two big-endian reals). ftmpi keeps the
// sizes of its basic types, which are those of external32 except that a
// C long (8 bytes here) is 4 bytes there: data packed from MPI_LONG is not
// portable to a 32-bit long.
const External32 = "external32"

func checkDatarep(op, datarep string) error {
	if datarep != External32 {
		return errType(ErrArg, op, "data representation %q (ftmpi has %q only)", datarep, External32)
	}
	return nil
}

// PackExternal is Pack in the external32 representation
// (MPI_Pack_external): it packs count elements of d laid over in into out
// and returns the number of bytes written.
func PackExternal[T Elem](datarep string, in []T, count int, d *Datatype, out []byte) (int, error) {
	const op = "MPI_Pack_external"
	if err := checkDatarep(op, datarep); err != nil {
		return 0, err
	}
	n, err := Pack(in, count, d, out)
	if err != nil {
		return 0, err
	}
	d.swapPacked(out[:n], count)
	return n, nil
}

// UnpackExternal is Unpack from the external32 representation
// (MPI_Unpack_external); it returns the number of bytes read.
func UnpackExternal[T Elem](datarep string, in []byte, out []T, count int, d *Datatype) (int, error) {
	const op = "MPI_Unpack_external"
	if err := checkDatarep(op, datarep); err != nil {
		return 0, err
	}
	if d == nil {
		return 0, errType(ErrType, op, "nil datatype")
	}
	if count < 0 {
		return 0, errType(ErrCount, op, "negative count %d", count)
	}
	n := count * d.size
	if len(in) < n {
		return 0, errType(ErrTruncate, op, "%d bytes to unpack, the input holds %d", n, len(in))
	}
	tmp := make([]byte, n)
	copy(tmp, in)
	d.swapPacked(tmp, count)
	return Unpack(tmp, out, count, d)
}

// PackExternalSize is the number of bytes PackExternal writes for count
// elements of d (MPI_Pack_external_size).
func PackExternalSize(datarep string, count int, d *Datatype) (int, error) {
	if err := checkDatarep("MPI_Pack_external_size", datarep); err != nil {
		return 0, err
	}
	return PackSize(count, d)
}

// swapPacked reverses the byte order of every basic element of count
// packed elements of d in b (little-endian <-> big-endian).
func (d *Datatype) swapPacked(b []byte, count int) {
	pos := 0
	for range count {
		for _, r := range d.runs {
			sz := numFacts[r.code].size
			unit := sz
			switch r.code.Code() {
			case p2p.DTComplex64, p2p.DTComplex128:
				unit = sz / 2
			}
			n := r.count * sz
			if unit > 1 {
				for k := pos; k+unit <= pos+n; k += unit {
					slices.Reverse(b[k : k+unit])
				}
			}
			pos += n
		}
	}
}

// Datatype attributes (MPI-4.1 7.7.4): keyvals for datatypes, whose
// attributes are copied by TypeDup and deleted by DeleteAttrs
// (MPI_Type_free). A datatype's attributes live beside it (typeAttrs),
// Datatype having no room for them. The predefined datatypes of the C
// binding that share a Go datatype (MPI_INT and MPI_INT32_T, say) share
// their attributes.

const kindDatatype = "datatype"

// typeAttrs are the attributes of datatypes that have some.
var typeAttrs sync.Map // *Datatype -> *attrTable[*Datatype]

func (d *Datatype) attrs(create bool) *attrTable[*Datatype] {
	if t, ok := typeAttrs.Load(d); ok {
		return t.(*attrTable[*Datatype])
	}
	if !create {
		return nil
	}
	t, _ := typeAttrs.LoadOrStore(d, &attrTable[*Datatype]{})
	return t.(*attrTable[*Datatype])
}

// TypeCopyAttrFn is a datatype attribute's copy callback
// (MPI_Type_copy_attr_function), run by TypeDup.
type TypeCopyAttrFn func(old *Datatype, k *Keyval, val any) (newVal any, keep bool, err error)

// TypeDeleteAttrFn is a datatype attribute's delete callback
// (MPI_Type_delete_attr_function), run by DeleteAttr, SetAttr over an
// existing value and DeleteAttrs.
type TypeDeleteAttrFn func(d *Datatype, k *Keyval, val any) error

// TypeCreateKeyval makes a keyval for datatype attributes
// (MPI_Type_create_keyval); nil callbacks do nothing (the attribute is not
// copied).
func TypeCreateKeyval(copyFn TypeCopyAttrFn, deleteFn TypeDeleteAttrFn) *Keyval {
	return &Keyval{kind: kindDatatype, fns: keyFns[*Datatype]{copy: copyFn, del: deleteFn}}
}

// TypeFreeKeyval frees k (MPI_Type_free_keyval); attributes set with it
// stay until deleted.
func TypeFreeKeyval(k *Keyval) error {
	return k.free("MPI_Type_free_keyval", kindDatatype)
}

// SetAttr attaches val to d under k (MPI_Type_set_attr), deleting the
// previous value first.
func (d *Datatype) SetAttr(k *Keyval, val any) error {
	const op = "MPI_Type_set_attr"
	if d == nil {
		return errType(ErrType, op, "nil datatype")
	}
	if err := k.check(op, nil, kindDatatype); err != nil {
		return err
	}
	if err := d.attrs(true).set(d, k, val); err != nil {
		return newErr(ErrOther, op, nil, NoPeer, "delete callback of the previous value failed: %v", err)
	}
	return nil
}

// GetAttr returns the value attached to d under k and whether there is
// one (MPI_Type_get_attr).
func (d *Datatype) GetAttr(k *Keyval) (val any, ok bool, err error) {
	const op = "MPI_Type_get_attr"
	if d == nil {
		return nil, false, errType(ErrType, op, "nil datatype")
	}
	if err := k.checkAttached(op, nil, kindDatatype, func(k *Keyval) bool {
		t := d.attrs(false)
		return t != nil && t.has(k)
	}); err != nil {
		return nil, false, err
	}
	if t := d.attrs(false); t != nil {
		val, ok = t.get(k)
	}
	return val, ok, nil
}

// DeleteAttr deletes the attribute of d under k, running its delete
// callback (MPI_Type_delete_attr).
func (d *Datatype) DeleteAttr(k *Keyval) error {
	const op = "MPI_Type_delete_attr"
	if d == nil {
		return errType(ErrType, op, "nil datatype")
	}
	if err := k.checkAttached(op, nil, kindDatatype, func(k *Keyval) bool {
		t := d.attrs(false)
		return t != nil && t.has(k)
	}); err != nil {
		return err
	}
	if t := d.attrs(false); t != nil {
		if _, err := t.del(d, k); err != nil {
			return newErr(ErrOther, op, nil, NoPeer, "delete callback failed: %v", err)
		}
	}
	return nil
}

// DeleteAttrs deletes every attribute of d, running their delete
// callbacks (what MPI_Type_free does first); a failing callback stops it.
func (d *Datatype) DeleteAttrs() error {
	t := d.attrs(false)
	if t == nil {
		return nil
	}
	if err := t.clear(d); err != nil {
		return newErr(ErrOther, "MPI_Type_free", nil, NoPeer, "attribute delete callback failed: %v", err)
	}
	typeAttrs.Delete(d)
	return nil
}
