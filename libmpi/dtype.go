package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"math"
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Derived datatypes in C: the constructors forward to package mpi and
// give the new datatype a handle in the types table (types.go); the
// predefined datatypes stay in predefTypes. What a constructor was called
// with is recorded for MPI_Type_get_envelope and MPI_Type_get_contents,
// and names for MPI_Type_set_name/get_name, both by the binding (package
// mpi's datatypes have neither).

// dtRec is how a derived datatype was made (MPI_Type_get_contents).
type dtRec struct {
	combiner int
	ints     []int
	aints    []int
	types    []C.uintptr_t // the handles passed (predefined ones stay valid)
	objs     []*mpi.Datatype
}

var (
	dtRecs  sync.Map // *mpi.Datatype -> *dtRec
	dtNames sync.Map // handle (uintptr) -> string
)

// predefTypeNames are the names of the predefined datatypes
// (MPI_Type_get_name).
var predefTypeNames = map[uintptr]string{
	0x201: "MPI_AINT", 0x202: "MPI_COUNT", 0x203: "MPI_OFFSET", 0x207: "MPI_PACKED", 0x208: "MPI_SHORT",
	0x209: "MPI_INT", 0x20a: "MPI_LONG", 0x20b: "MPI_LONG_LONG", 0x20c: "MPI_UNSIGNED_SHORT", 0x20d: "MPI_UNSIGNED",
	0x20e: "MPI_UNSIGNED_LONG", 0x20f: "MPI_UNSIGNED_LONG_LONG", 0x210: "MPI_FLOAT", 0x212: "MPI_C_FLOAT_COMPLEX",
	0x213: "MPI_CXX_FLOAT_COMPLEX", 0x214: "MPI_DOUBLE", 0x216: "MPI_C_DOUBLE_COMPLEX", 0x217: "MPI_CXX_DOUBLE_COMPLEX",
	0x218: "MPI_INTEGER", 0x219: "MPI_LOGICAL", 0x21a: "MPI_REAL", 0x21b: "MPI_COMPLEX", 0x21c: "MPI_DOUBLE_PRECISION",
	0x21d: "MPI_DOUBLE_COMPLEX", 0x220: "MPI_LONG_DOUBLE", 0x224: "MPI_C_LONG_DOUBLE_COMPLEX",
	0x225: "MPI_CXX_LONG_DOUBLE_COMPLEX", 0x228: "MPI_FLOAT_INT", 0x229: "MPI_DOUBLE_INT", 0x22a: "MPI_LONG_INT",
	0x22b: "MPI_2INT", 0x22c: "MPI_SHORT_INT", 0x22d: "MPI_LONG_DOUBLE_INT", 0x230: "MPI_2REAL",
	0x231: "MPI_2DOUBLE_PRECISION", 0x232: "MPI_2INTEGER", 0x238: "MPI_C_BOOL", 0x239: "MPI_CXX_BOOL",
	0x23c: "MPI_WCHAR", 0x240: "MPI_INT8_T", 0x241: "MPI_UINT8_T", 0x243: "MPI_CHAR", 0x244: "MPI_SIGNED_CHAR",
	0x245: "MPI_UNSIGNED_CHAR", 0x247: "MPI_BYTE", 0x248: "MPI_INT16_T", 0x249: "MPI_UINT16_T", 0x250: "MPI_INT32_T",
	0x251: "MPI_UINT32_T", 0x258: "MPI_INT64_T", 0x259: "MPI_UINT64_T", 0x2c0: "MPI_INTEGER1", 0x2c3: "MPI_CHARACTER",
	0x2c8: "MPI_INTEGER2", 0x2d0: "MPI_INTEGER4", 0x2d2: "MPI_REAL4", 0x2d8: "MPI_INTEGER8", 0x2da: "MPI_REAL8",
	0x2db: "MPI_COMPLEX8", 0x2e0: "MPI_INTEGER16", 0x2e2: "MPI_REAL16", 0x2e3: "MPI_COMPLEX16", 0x2eb: "MPI_COMPLEX32",
	hTypeLB: "MPI_LB", hTypeUB: "MPI_UB",
}

// MPI_LB and MPI_UB (mpi.h, an extension: removed in MPI-3.0, not in the
// standard ABI): the bound marker types. Their handles are above the
// ABI's reserved range of predefined handles (MPI-5.0 reserves the small
// values) and below every user handle (kind<<24, handles.go).
const (
	hTypeLB = 0x10001
	hTypeUB = 0x10002
)

// markerTypes are the marker types by handle; like the predefined
// datatypes they are named, committed and cannot be freed.
var markerTypes = map[uintptr]*mpi.Datatype{hTypeLB: mpi.LBMarker, hTypeUB: mpi.UBMarker}

// predefined reports whether h is a predefined datatype's handle (the
// marker types included).
func predefined(h uintptr) bool {
	_, ok := predefTypes[h]
	return ok || markerTypes[h] != nil
}

// dtIn resolves a datatype argument of a constructor (errors on
// MPI_COMM_WORLD's handler).
func dtIn(h C.uintptr_t, op string) (*mpi.Datatype, error) { return typeOf(h, nil, op) }

// dtOut stores a constructed datatype's handle and its record.
func dtOut(d *mpi.Datatype, err error, rec *dtRec, newtype *C.uintptr_t) C.int {
	if err != nil {
		if newtype != nil {
			*newtype = hTypeNull // a failed constructor (MPI_Type_dup's copy callback) gives MPI_DATATYPE_NULL
		}
		return worldCode(err)
	}
	if newtype == nil {
		return worldCode(bad(mpi.ErrArg, "MPI_Type_create", "newtype is NULL"))
	}
	if rec != nil {
		dtRecs.Store(d, rec)
	}
	*newtype = C.uintptr_t(types.put(d)) // put: typeHandle finds it (a user operation's datatype argument)
	return cSuccess
}

// dtCount checks a count argument.
func dtCount(op string, n int) error {
	if n < 0 {
		return worldFail(bad(mpi.ErrCount, op, "negative count %d", n))
	}
	return nil
}

func cmAints(p *C.MPI_Aint, n int) []int {
	if n <= 0 || p == nil {
		return nil
	}
	s := unsafe.Slice(p, n)
	out := make([]int, n)
	for i, v := range s {
		out[i] = int(v)
	}
	return out
}

// The constructors take Go ints (64 bits): the int forms and the
// large-count _c forms (dtype_c.go) convert their arguments and share
// them, so that a count, block length or displacement above 2^31 reaches
// package mpi whole.

func typeContiguous(op string, count int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	if err := dtCount(op, count); err != nil {
		return code(err)
	}
	d, err := mpi.TypeContiguous(count, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_CONTIGUOUS, ints: []int{count}, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_contiguous
func ftmpi_Type_contiguous(count C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeContiguous("MPI_Type_contiguous", int(count), oldtype, newtype)
}

func typeVector(op string, count, blocklen, stride int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	if err := dtCount(op, count); err != nil {
		return code(err)
	}
	d, err := mpi.TypeVector(count, blocklen, stride, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_VECTOR, ints: []int{count, blocklen, stride}, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_vector
func ftmpi_Type_vector(count, blocklen, stride C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeVector("MPI_Type_vector", int(count), int(blocklen), int(stride), oldtype, newtype)
}

func typeHvector(op string, count, blocklen, stride int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	if err := dtCount(op, count); err != nil {
		return code(err)
	}
	d, err := mpi.TypeCreateHvector(count, blocklen, stride, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_HVECTOR, ints: []int{count, blocklen}, aints: []int{stride}, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_create_hvector
func ftmpi_Type_create_hvector(count, blocklen C.int, stride C.MPI_Aint, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeHvector("MPI_Type_create_hvector", int(count), int(blocklen), int(stride), oldtype, newtype)
}

//export ftmpi_Type_hvector
func ftmpi_Type_hvector(count, blocklen C.int, stride C.MPI_Aint, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeHvector("MPI_Type_hvector", int(count), int(blocklen), int(stride), oldtype, newtype)
}

func typeIndexed(op string, bl, ds []int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	d, err := mpi.TypeIndexed(bl, ds, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_INDEXED, ints: append(append([]int{len(bl)}, bl...), ds...), types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_indexed
func ftmpi_Type_indexed(count C.int, blocklens, displs *C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_indexed"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeIndexed(op, cmInts(blocklens, int(count)), cmInts(displs, int(count)), oldtype, newtype)
}

func typeHindexed(op string, bl, ds []int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	d, err := mpi.TypeCreateHindexed(bl, ds, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_HINDEXED, ints: append([]int{len(bl)}, bl...), aints: ds, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_create_hindexed
func ftmpi_Type_create_hindexed(count C.int, blocklens *C.int, displs *C.MPI_Aint, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_hindexed"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeHindexed(op, cmInts(blocklens, int(count)), cmAints(displs, int(count)), oldtype, newtype)
}

//export ftmpi_Type_hindexed
func ftmpi_Type_hindexed(count C.int, blocklens *C.int, displs *C.MPI_Aint, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_hindexed"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeHindexed(op, cmInts(blocklens, int(count)), cmAints(displs, int(count)), oldtype, newtype)
}

func typeIndexedBlock(op string, blocklen int, ds []int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	d, err := mpi.TypeCreateIndexedBlock(blocklen, ds, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_INDEXED_BLOCK, ints: append([]int{len(ds), blocklen}, ds...), types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_create_indexed_block
func ftmpi_Type_create_indexed_block(count, blocklen C.int, displs *C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_indexed_block"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeIndexedBlock(op, int(blocklen), cmInts(displs, int(count)), oldtype, newtype)
}

func typeHindexedBlock(op string, blocklen int, ds []int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	d, err := mpi.TypeCreateHindexedBlock(blocklen, ds, old)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_HINDEXED_BLOCK, ints: []int{len(ds), blocklen}, aints: ds, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_create_hindexed_block
func ftmpi_Type_create_hindexed_block(count, blocklen C.int, displs *C.MPI_Aint, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_hindexed_block"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeHindexedBlock(op, int(blocklen), cmAints(displs, int(count)), oldtype, newtype)
}

func typeStruct(op string, bl, ds []int, typesIn *C.uintptr_t, newtype *C.uintptr_t) C.int {
	n := len(bl)
	if n > 0 && typesIn == nil {
		return worldCode(bad(mpi.ErrArg, op, "array_of_types is NULL"))
	}
	var hs []C.uintptr_t
	if n > 0 {
		hs = append(hs, unsafe.Slice(typesIn, n)...)
	}
	ts := make([]*mpi.Datatype, n)
	for i, h := range hs {
		d, err := dtIn(h, op)
		if err != nil {
			return code(err)
		}
		ts[i] = d
	}
	d, err := mpi.TypeCreateStruct(bl, ds, ts)
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_STRUCT, ints: append([]int{n}, bl...), aints: ds, types: hs, objs: ts}, newtype)
}

//export ftmpi_Type_create_struct
func ftmpi_Type_create_struct(count C.int, blocklens *C.int, displs *C.MPI_Aint, typesIn *C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_struct"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeStruct(op, cmInts(blocklens, int(count)), cmAints(displs, int(count)), typesIn, newtype)
}

//export ftmpi_Type_struct
func ftmpi_Type_struct(count C.int, blocklens *C.int, displs *C.MPI_Aint, typesIn *C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_struct"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeStruct(op, cmInts(blocklens, int(count)), cmAints(displs, int(count)), typesIn, newtype)
}

//export ftmpi_Type_create_resized
func ftmpi_Type_create_resized(oldtype C.uintptr_t, lb, extent C.MPI_Aint, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_resized"
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	d, err := mpi.TypeCreateResized(old, int(lb), int(extent))
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_RESIZED, aints: []int{int(lb), int(extent)}, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

func orderIn(op string, order C.int) (bool, error) {
	switch order {
	case C.MPI_ORDER_C:
		return true, nil
	case C.MPI_ORDER_FORTRAN:
		return false, nil
	}
	return false, worldFail(bad(mpi.ErrArg, op, "order %d is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN", int(order)))
}

//export ftmpi_Type_create_subarray
func ftmpi_Type_create_subarray(ndims C.int, sizes, subsizes, starts *C.int, order C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_subarray"
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	orderC, err := orderIn(op, order)
	if err != nil {
		return code(err)
	}
	if ndims < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative ndims %d", int(ndims)))
	}
	n := int(ndims)
	sz, sub, st := cmInts(sizes, n), cmInts(subsizes, n), cmInts(starts, n)
	d, err := mpi.TypeCreateSubarray(sz, sub, st, orderC, old)
	ints := append(append(append(append([]int{n}, sz...), sub...), st...), int(order))
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_SUBARRAY, ints: ints, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_create_darray
func ftmpi_Type_create_darray(size, rank, ndims C.int, gsizes, distribs, dargs, psizes *C.int, order C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_darray"
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	orderC, err := orderIn(op, order)
	if err != nil {
		return code(err)
	}
	if ndims < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative ndims %d", int(ndims)))
	}
	n := int(ndims)
	gs, ds, da, ps := cmInts(gsizes, n), cmInts(distribs, n), cmInts(dargs, n), cmInts(psizes, n)
	gds, gda := make([]int, n), make([]int, n)
	for i := range n {
		switch ds[i] {
		case C.MPI_DISTRIBUTE_NONE:
			gds[i] = mpi.DistributeNone
		case C.MPI_DISTRIBUTE_BLOCK:
			gds[i] = mpi.DistributeBlock
		case C.MPI_DISTRIBUTE_CYCLIC:
			gds[i] = mpi.DistributeCyclic
		default:
			return worldCode(bad(mpi.ErrArg, op, "array_of_distribs[%d] is %d", i, ds[i]))
		}
		gda[i] = da[i]
		if da[i] == C.MPI_DISTRIBUTE_DFLT_DARG {
			gda[i] = mpi.DistributeDfltDarg
		}
	}
	d, err := mpi.TypeCreateDarray(int(size), int(rank), gs, gds, gda, ps, orderC, old)
	ints := append(append(append(append(append([]int{int(size), int(rank), n}, gs...), ds...), da...), ps...), int(order))
	return dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_DARRAY, ints: ints, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
}

//export ftmpi_Type_dup
func ftmpi_Type_dup(oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_dup"
	old, err := dtIn(oldtype, op)
	if err != nil {
		return code(err)
	}
	d, err := mpi.TypeDup(old)
	rc := dtOut(d, err, &dtRec{combiner: C.MPI_COMBINER_DUP, types: []C.uintptr_t{oldtype}, objs: []*mpi.Datatype{old}}, newtype)
	if rc == cSuccess {
		if s, ok := dtNames.Load(uintptr(oldtype)); ok {
			dtNames.Store(uintptr(*newtype), s)
		}
	}
	return rc
}

//export ftmpi_Type_commit
func ftmpi_Type_commit(datatype *C.uintptr_t) C.int {
	d, err := dtIn(*datatype, "MPI_Type_commit")
	if err != nil {
		return code(err)
	}
	return worldCode(d.Commit())
}

//export ftmpi_Type_free
func ftmpi_Type_free(datatype *C.uintptr_t) C.int {
	const op = "MPI_Type_free"
	h := uintptr(*datatype)
	if predefined(h) {
		return worldCode(bad(mpi.ErrType, op, "%s is predefined and cannot be freed", predefTypeNames[h]))
	}
	d, err := dtIn(*datatype, op)
	if err != nil {
		return code(err)
	}
	if err := d.DeleteAttrs(); err != nil {
		return worldCode(err)
	}
	d.Free()
	types.del(h)
	dtNames.Delete(h)
	dtRecs.Delete(d) // one handle per derived datatype (types.put)
	*datatype = hTypeNull
	return cSuccess
}

// sizeOut converts a byte count to an int result (MPI_UNDEFINED when it
// does not fit).
func sizeOut(n int) C.int {
	if n > math.MaxInt32 {
		return C.MPI_UNDEFINED
	}
	return C.int(n)
}

//export ftmpi_Type_size
func ftmpi_Type_size(datatype C.uintptr_t, size *C.int) C.int {
	d, err := dtIn(datatype, "MPI_Type_size")
	if err != nil {
		return code(err)
	}
	*size = sizeOut(d.Size())
	return cSuccess
}

//export ftmpi_Type_size_x
func ftmpi_Type_size_x(datatype C.uintptr_t, size *C.MPI_Count) C.int {
	d, err := dtIn(datatype, "MPI_Type_size_x")
	if err != nil {
		return code(err)
	}
	*size = C.MPI_Count(d.Size())
	return cSuccess
}

//export ftmpi_Type_get_extent
func ftmpi_Type_get_extent(datatype C.uintptr_t, lb, extent *C.MPI_Aint) C.int {
	d, err := dtIn(datatype, "MPI_Type_get_extent")
	if err != nil {
		return code(err)
	}
	l, e := d.Extent()
	*lb, *extent = C.MPI_Aint(l), C.MPI_Aint(e)
	return cSuccess
}

//export ftmpi_Type_get_extent_x
func ftmpi_Type_get_extent_x(datatype C.uintptr_t, lb, extent *C.MPI_Count) C.int {
	d, err := dtIn(datatype, "MPI_Type_get_extent_x")
	if err != nil {
		return code(err)
	}
	l, e := d.Extent()
	*lb, *extent = C.MPI_Count(l), C.MPI_Count(e)
	return cSuccess
}

//export ftmpi_Type_get_true_extent
func ftmpi_Type_get_true_extent(datatype C.uintptr_t, lb, extent *C.MPI_Aint) C.int {
	d, err := dtIn(datatype, "MPI_Type_get_true_extent")
	if err != nil {
		return code(err)
	}
	l, e := d.TrueExtent()
	*lb, *extent = C.MPI_Aint(l), C.MPI_Aint(e)
	return cSuccess
}

//export ftmpi_Type_get_true_extent_x
func ftmpi_Type_get_true_extent_x(datatype C.uintptr_t, lb, extent *C.MPI_Count) C.int {
	d, err := dtIn(datatype, "MPI_Type_get_true_extent_x")
	if err != nil {
		return code(err)
	}
	l, e := d.TrueExtent()
	*lb, *extent = C.MPI_Count(l), C.MPI_Count(e)
	return cSuccess
}

//export ftmpi_Type_extent
func ftmpi_Type_extent(datatype C.uintptr_t, extent *C.MPI_Aint) C.int {
	d, err := dtIn(datatype, "MPI_Type_extent")
	if err != nil {
		return code(err)
	}
	_, e := d.Extent()
	*extent = C.MPI_Aint(e)
	return cSuccess
}

//export ftmpi_Type_lb
func ftmpi_Type_lb(datatype C.uintptr_t, displacement *C.MPI_Aint) C.int {
	d, err := dtIn(datatype, "MPI_Type_lb")
	if err != nil {
		return code(err)
	}
	l, _ := d.Extent()
	*displacement = C.MPI_Aint(l)
	return cSuccess
}

//export ftmpi_Type_ub
func ftmpi_Type_ub(datatype C.uintptr_t, displacement *C.MPI_Aint) C.int {
	d, err := dtIn(datatype, "MPI_Type_ub")
	if err != nil {
		return code(err)
	}
	l, e := d.Extent()
	*displacement = C.MPI_Aint(l + e)
	return cSuccess
}

//export ftmpi_Type_set_name
func ftmpi_Type_set_name(datatype C.uintptr_t, name *C.char) C.int {
	const op = "MPI_Type_set_name"
	if _, err := dtIn(datatype, op); err != nil {
		return code(err)
	}
	if name == nil {
		return worldCode(bad(mpi.ErrArg, op, "type_name is NULL"))
	}
	s := C.GoString(name)
	if len(s) > C.MPI_MAX_OBJECT_NAME-1 {
		s = s[:C.MPI_MAX_OBJECT_NAME-1]
	}
	dtNames.Store(uintptr(datatype), s)
	return cSuccess
}

//export ftmpi_Type_get_name
func ftmpi_Type_get_name(datatype C.uintptr_t, name *C.char, resultlen *C.int) C.int {
	if _, err := dtIn(datatype, "MPI_Type_get_name"); err != nil {
		return code(err)
	}
	s := predefTypeNames[uintptr(datatype)]
	if v, ok := dtNames.Load(uintptr(datatype)); ok {
		s = v.(string)
	}
	*resultlen = C.int(cstr(name, s, C.MPI_MAX_OBJECT_NAME))
	return cSuccess
}

//export ftmpi_Type_get_envelope
func ftmpi_Type_get_envelope(datatype C.uintptr_t, nints, naddrs, ntypes, combiner *C.int) C.int {
	d, err := dtIn(datatype, "MPI_Type_get_envelope")
	if err != nil {
		return code(err)
	}
	v, ok := dtRecs.Load(d)
	if pre := predefined(uintptr(datatype)); pre || !ok {
		*nints, *naddrs, *ntypes, *combiner = 0, 0, 0, C.MPI_COMBINER_NAMED
		return cSuccess
	}
	r := v.(*dtRec)
	*nints, *naddrs, *ntypes, *combiner = C.int(len(r.ints)), C.int(len(r.aints)), C.int(len(r.types)), C.int(r.combiner)
	return cSuccess
}

//export ftmpi_Type_get_contents
func ftmpi_Type_get_contents(datatype C.uintptr_t, maxInts, maxAddrs, maxTypes C.int, ints *C.int, addrs *C.MPI_Aint, typesOut *C.uintptr_t) C.int {
	const op = "MPI_Type_get_contents"
	d, err := dtIn(datatype, op)
	if err != nil {
		return code(err)
	}
	v, ok := dtRecs.Load(d)
	if pre := predefined(uintptr(datatype)); pre || !ok {
		return worldCode(bad(mpi.ErrType, op, "a predefined datatype has no contents (MPI_COMBINER_NAMED)"))
	}
	r := v.(*dtRec)
	if int(maxInts) < len(r.ints) || int(maxAddrs) < len(r.aints) || int(maxTypes) < len(r.types) {
		return worldCode(bad(mpi.ErrArg, op, "room for %d ints, %d addresses, %d types; the datatype has %d, %d, %d",
			int(maxInts), int(maxAddrs), int(maxTypes), len(r.ints), len(r.aints), len(r.types)))
	}
	if (len(r.ints) > 0 && ints == nil) || (len(r.aints) > 0 && addrs == nil) || (len(r.types) > 0 && typesOut == nil) {
		return worldCode(bad(mpi.ErrArg, op, "a NULL array where the datatype has contents"))
	}
	cmPutInts(ints, r.ints)
	if len(r.aints) > 0 {
		a := unsafe.Slice(addrs, len(r.aints))
		for i, x := range r.aints {
			a[i] = C.MPI_Aint(x)
		}
	}
	if len(r.types) > 0 {
		t := unsafe.Slice(typesOut, len(r.types))
		for i, h := range r.types {
			if predefined(uintptr(h)) {
				t[i] = h
				continue
			}
			// A derived datatype: a new one the caller frees.
			o := r.objs[i]
			lb, ext := o.Extent()
			nd, err := mpi.TypeCreateResized(o, lb, ext) // equivalent, without o's attributes
			if err == nil && o.Committed() {
				err = nd.Commit()
			}
			if err != nil {
				return worldCode(err)
			}
			if rr, ok := dtRecs.Load(r.objs[i]); ok {
				dtRecs.Store(nd, rr)
			}
			t[i] = C.uintptr_t(types.put(nd))
		}
	}
	return cSuccess
}

//export ftmpi_Type_match_size
func ftmpi_Type_match_size(typeclass, size C.int, datatype *C.uintptr_t) C.int {
	const op = "MPI_Type_match_size"
	var m map[C.int]uintptr
	switch typeclass {
	case C.MPI_TYPECLASS_INTEGER:
		m = map[C.int]uintptr{1: 0x2c0, 2: 0x2c8, 4: 0x2d0, 8: 0x2d8, 16: 0x2e0}
	case C.MPI_TYPECLASS_REAL:
		m = map[C.int]uintptr{4: 0x2d2, 8: 0x2da, 16: 0x2e2}
	case C.MPI_TYPECLASS_COMPLEX:
		m = map[C.int]uintptr{8: 0x2db, 16: 0x2e3, 32: 0x2eb}
	default:
		return worldCode(bad(mpi.ErrArg, op, "typeclass %d is not an MPI_TYPECLASS_*", int(typeclass)))
	}
	h, ok := m[size]
	if !ok {
		return worldCode(bad(mpi.ErrArg, op, "no datatype of typeclass %d has %d bytes", int(typeclass), int(size)))
	}
	*datatype = C.uintptr_t(h)
	return cSuccess
}

// packArgs resolves the communicator and the datatype of a pack call and
// checks the datatype is committed.
func packArgs(op string, comm, dt C.uintptr_t) (*mpi.Comm, *mpi.Datatype, C.int) {
	c, err := commOf(comm, op)
	if err != nil {
		return nil, nil, code(err)
	}
	d, err := typeOf(dt, c, op)
	if err != nil {
		return nil, nil, code(err)
	}
	if !d.Committed() {
		return nil, nil, fail(c, bad(mpi.ErrType, op, "datatype %s is not committed (MPI_Type_commit)", d))
	}
	return c, d, cSuccess
}

// window is the C buffer p of n bytes from pos on (nil if empty).
func window(p unsafe.Pointer, pos, n int) []byte {
	if p == nil || n-pos <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, pos)), n-pos)
}

//export ftmpi_Pack
func ftmpi_Pack(inbuf unsafe.Pointer, incount C.int, dt C.uintptr_t, outbuf unsafe.Pointer, outsize C.int, position *C.int, comm C.uintptr_t) C.int {
	const op = "MPI_Pack"
	c, d, rc := packArgs(op, comm, dt)
	if rc != cSuccess {
		return rc
	}
	pos := int(*position)
	if pos < 0 || pos > int(outsize) {
		return fail(c, bad(mpi.ErrArg, op, "position %d outside the output buffer of %d bytes", pos, int(outsize)))
	}
	b, v, err := view(inbuf, int(incount), d, op)
	if err != nil {
		return fail(c, err)
	}
	n, err := mpi.Pack(b, int(incount), v, window(outbuf, pos, int(outsize)))
	if err != nil {
		return fail(c, err)
	}
	*position = C.int(pos + n)
	return cSuccess
}

//export ftmpi_Unpack
func ftmpi_Unpack(inbuf unsafe.Pointer, insize C.int, position *C.int, outbuf unsafe.Pointer, outcount C.int, dt C.uintptr_t, comm C.uintptr_t) C.int {
	const op = "MPI_Unpack"
	c, d, rc := packArgs(op, comm, dt)
	if rc != cSuccess {
		return rc
	}
	pos := int(*position)
	if pos < 0 || pos > int(insize) {
		return fail(c, bad(mpi.ErrArg, op, "position %d outside the input buffer of %d bytes", pos, int(insize)))
	}
	b, v, err := view(outbuf, int(outcount), d, op)
	if err != nil {
		return fail(c, err)
	}
	n, err := mpi.Unpack(window(inbuf, pos, int(insize)), b, int(outcount), v)
	if err != nil {
		return fail(c, err)
	}
	*position = C.int(pos + n)
	return cSuccess
}

//export ftmpi_Pack_size
func ftmpi_Pack_size(incount C.int, dt C.uintptr_t, comm C.uintptr_t, size *C.int) C.int {
	const op = "MPI_Pack_size"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	d, err := typeOf(dt, c, op)
	if err != nil {
		return code(err)
	}
	n, err := mpi.PackSize(int(incount), d)
	if err != nil {
		return fail(c, err)
	}
	*size = sizeOut(n)
	return cSuccess
}

//export ftmpi_Pack_external
func ftmpi_Pack_external(datarep *C.char, inbuf unsafe.Pointer, incount C.int, dt C.uintptr_t, outbuf unsafe.Pointer, outsize C.MPI_Aint, position *C.MPI_Aint) C.int {
	const op = "MPI_Pack_external"
	_, d, rc := packArgs(op, hWorld, dt)
	if rc != cSuccess {
		return rc
	}
	pos := int(*position)
	if pos < 0 || pos > int(outsize) {
		return worldCode(bad(mpi.ErrArg, op, "position %d outside the output buffer of %d bytes", pos, int(outsize)))
	}
	b, v, err := view(inbuf, int(incount), d, op)
	if err != nil {
		return worldCode(err)
	}
	n, err := mpi.PackExternal(C.GoString(datarep), b, int(incount), v, window(outbuf, pos, int(outsize)))
	if err != nil {
		return worldCode(err)
	}
	*position = C.MPI_Aint(pos + n)
	return cSuccess
}

//export ftmpi_Unpack_external
func ftmpi_Unpack_external(datarep *C.char, inbuf unsafe.Pointer, insize C.MPI_Aint, position *C.MPI_Aint, outbuf unsafe.Pointer, outcount C.int, dt C.uintptr_t) C.int {
	const op = "MPI_Unpack_external"
	_, d, rc := packArgs(op, hWorld, dt)
	if rc != cSuccess {
		return rc
	}
	pos := int(*position)
	if pos < 0 || pos > int(insize) {
		return worldCode(bad(mpi.ErrArg, op, "position %d outside the input buffer of %d bytes", pos, int(insize)))
	}
	b, v, err := view(outbuf, int(outcount), d, op)
	if err != nil {
		return worldCode(err)
	}
	n, err := mpi.UnpackExternal(C.GoString(datarep), window(inbuf, pos, int(insize)), b, int(outcount), v)
	if err != nil {
		return worldCode(err)
	}
	*position = C.MPI_Aint(pos + n)
	return cSuccess
}

//export ftmpi_Pack_external_size
func ftmpi_Pack_external_size(datarep *C.char, incount C.int, dt C.uintptr_t, size *C.MPI_Aint) C.int {
	const op = "MPI_Pack_external_size"
	d, err := dtIn(dt, op)
	if err != nil {
		return code(err)
	}
	n, err := mpi.PackExternalSize(C.GoString(datarep), int(incount), d)
	if err != nil {
		return worldCode(err)
	}
	*size = C.MPI_Aint(n)
	return cSuccess
}
