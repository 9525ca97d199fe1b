package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"math"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// The large-count (MPI_Count) forms of the datatype calls (MPI-4.0
// _c functions). The constructors pass their counts, block lengths and
// displacements to package mpi as Go ints, whole (dtype.go's shared
// forms): MPI_Type_contiguous_c(2^32, MPI_CHAR) is a datatype of 2^32
// bytes. The queries and pack calls answer in MPI_Count. Subarray,
// darray and the external32 calls still take ints (a larger value is an
// MPI_ERR_ARG error naming it).

// cIntsOf converts n MPI_Counts at p to C ints for op.
func cIntsOf(op string, p *C.MPI_Count, n int) ([]C.int, error) {
	out := make([]C.int, max(n, 1))
	if n <= 0 || p == nil {
		return out, nil
	}
	for i, v := range unsafe.Slice(p, n) {
		if v > math.MaxInt32 || v < math.MinInt32 {
			return nil, worldFail(bad(mpi.ErrArg, op, "count or displacement %d does not fit in an int (ftmpi takes ints here)", int64(v)))
		}
		out[i] = C.int(v)
	}
	return out, nil
}

// cmCounts converts n MPI_Counts at p to Go ints.
func cmCounts(p *C.MPI_Count, n int) []int {
	if n <= 0 || p == nil {
		return nil
	}
	out := make([]int, n)
	for i, v := range unsafe.Slice(p, n) {
		out[i] = int(v)
	}
	return out
}

func cIntOf(op string, v C.MPI_Count) (C.int, error) {
	if v > math.MaxInt32 || v < math.MinInt32 {
		return 0, worldFail(bad(mpi.ErrArg, op, "count %d does not fit in an int (ftmpi takes ints here)", int64(v)))
	}
	return C.int(v), nil
}

//export ftmpi_Type_contiguous_c
func ftmpi_Type_contiguous_c(count C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeContiguous("MPI_Type_contiguous_c", int(count), oldtype, newtype)
}

//export ftmpi_Type_vector_c
func ftmpi_Type_vector_c(count, blocklen, stride C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeVector("MPI_Type_vector_c", int(count), int(blocklen), int(stride), oldtype, newtype)
}

//export ftmpi_Type_create_hvector_c
func ftmpi_Type_create_hvector_c(count, blocklen, stride C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	return typeHvector("MPI_Type_create_hvector_c", int(count), int(blocklen), int(stride), oldtype, newtype)
}

//export ftmpi_Type_indexed_c
func ftmpi_Type_indexed_c(count C.MPI_Count, blocklens, displs *C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_indexed_c"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeIndexed(op, cmCounts(blocklens, int(count)), cmCounts(displs, int(count)), oldtype, newtype)
}

//export ftmpi_Type_create_hindexed_c
func ftmpi_Type_create_hindexed_c(count C.MPI_Count, blocklens, displs *C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_hindexed_c"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeHindexed(op, cmCounts(blocklens, int(count)), cmCounts(displs, int(count)), oldtype, newtype)
}

//export ftmpi_Type_create_indexed_block_c
func ftmpi_Type_create_indexed_block_c(count, blocklen C.MPI_Count, displs *C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_indexed_block_c"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeIndexedBlock(op, int(blocklen), cmCounts(displs, int(count)), oldtype, newtype)
}

//export ftmpi_Type_create_hindexed_block_c
func ftmpi_Type_create_hindexed_block_c(count, blocklen C.MPI_Count, displs *C.MPI_Count, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_hindexed_block_c"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeHindexedBlock(op, int(blocklen), cmCounts(displs, int(count)), oldtype, newtype)
}

//export ftmpi_Type_create_struct_c
func ftmpi_Type_create_struct_c(count C.MPI_Count, blocklens, displs *C.MPI_Count, typesIn *C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_struct_c"
	if err := dtCount(op, int(count)); err != nil {
		return code(err)
	}
	return typeStruct(op, cmCounts(blocklens, int(count)), cmCounts(displs, int(count)), typesIn, newtype)
}

//export ftmpi_Type_create_resized_c
func ftmpi_Type_create_resized_c(oldtype C.uintptr_t, lb, extent C.MPI_Count, newtype *C.uintptr_t) C.int {
	return ftmpi_Type_create_resized(oldtype, C.MPI_Aint(lb), C.MPI_Aint(extent), newtype)
}

//export ftmpi_Type_create_subarray_c
func ftmpi_Type_create_subarray_c(ndims C.int, sizes, subsizes, starts *C.MPI_Count, order C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	const op = "MPI_Type_create_subarray_c"
	n := int(ndims)
	sz, err := cIntsOf(op, sizes, n)
	if err != nil {
		return code(err)
	}
	sub, err := cIntsOf(op, subsizes, n)
	if err != nil {
		return code(err)
	}
	st, err := cIntsOf(op, starts, n)
	if err != nil {
		return code(err)
	}
	return ftmpi_Type_create_subarray(ndims, &sz[0], &sub[0], &st[0], order, oldtype, newtype)
}

//export ftmpi_Type_size_c
func ftmpi_Type_size_c(datatype C.uintptr_t, size *C.MPI_Count) C.int {
	return ftmpi_Type_size_x(datatype, size)
}

//export ftmpi_Type_get_extent_c
func ftmpi_Type_get_extent_c(datatype C.uintptr_t, lb, extent *C.MPI_Count) C.int {
	return ftmpi_Type_get_extent_x(datatype, lb, extent)
}

//export ftmpi_Type_get_true_extent_c
func ftmpi_Type_get_true_extent_c(datatype C.uintptr_t, lb, extent *C.MPI_Count) C.int {
	return ftmpi_Type_get_true_extent_x(datatype, lb, extent)
}

//export ftmpi_Pack_c
func ftmpi_Pack_c(inbuf unsafe.Pointer, incount C.MPI_Count, dt C.uintptr_t, outbuf unsafe.Pointer, outsize C.MPI_Count, position *C.MPI_Count, comm C.uintptr_t) C.int {
	const op = "MPI_Pack_c"
	c, d, rc := packArgs(op, comm, dt)
	if rc != cSuccess {
		return rc
	}
	pos := int(*position)
	if pos < 0 || pos > int(outsize) {
		return fail(c, bad(mpi.ErrArg, op, "position %d outside the output buffer of %d bytes", pos, int64(outsize)))
	}
	b, v, err := view(inbuf, int(incount), d, op)
	if err != nil {
		return fail(c, err)
	}
	n, err := mpi.Pack(b, int(incount), v, window(outbuf, pos, int(outsize)))
	if err != nil {
		return fail(c, err)
	}
	*position = C.MPI_Count(pos + n)
	return cSuccess
}

//export ftmpi_Unpack_c
func ftmpi_Unpack_c(inbuf unsafe.Pointer, insize C.MPI_Count, position *C.MPI_Count, outbuf unsafe.Pointer, outcount C.MPI_Count, dt C.uintptr_t, comm C.uintptr_t) C.int {
	const op = "MPI_Unpack_c"
	c, d, rc := packArgs(op, comm, dt)
	if rc != cSuccess {
		return rc
	}
	pos := int(*position)
	if pos < 0 || pos > int(insize) {
		return fail(c, bad(mpi.ErrArg, op, "position %d outside the input buffer of %d bytes", pos, int64(insize)))
	}
	b, v, err := view(outbuf, int(outcount), d, op)
	if err != nil {
		return fail(c, err)
	}
	n, err := mpi.Unpack(window(inbuf, pos, int(insize)), b, int(outcount), v)
	if err != nil {
		return fail(c, err)
	}
	*position = C.MPI_Count(pos + n)
	return cSuccess
}

//export ftmpi_Pack_size_c
func ftmpi_Pack_size_c(incount C.MPI_Count, dt C.uintptr_t, comm C.uintptr_t, size *C.MPI_Count) C.int {
	const op = "MPI_Pack_size_c"
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
	*size = C.MPI_Count(n)
	return cSuccess
}

//export ftmpi_Type_create_darray_c
func ftmpi_Type_create_darray_c(size, rank, ndims C.int, gsizes *C.MPI_Count, distribs, dargs, psizes *C.int, order C.int, oldtype C.uintptr_t, newtype *C.uintptr_t) C.int {
	gs, err := cIntsOf("MPI_Type_create_darray_c", gsizes, int(ndims))
	if err != nil {
		return code(err)
	}
	return ftmpi_Type_create_darray(size, rank, ndims, &gs[0], distribs, dargs, psizes, order, oldtype, newtype)
}

// The envelopes of the datatypes made by the _c constructors give their
// counts as integers, not as large counts (a value above 2^31 is
// truncated by MPI_Type_get_contents: not yet separated).

//export ftmpi_Type_get_envelope_c
func ftmpi_Type_get_envelope_c(datatype C.uintptr_t, nints, naddrs, nlarge, ntypes *C.MPI_Count, combiner *C.int) C.int {
	var ni, na, nt C.int
	if rc := ftmpi_Type_get_envelope(datatype, &ni, &na, &nt, combiner); rc != cSuccess {
		return rc
	}
	*nints, *naddrs, *nlarge, *ntypes = C.MPI_Count(ni), C.MPI_Count(na), 0, C.MPI_Count(nt)
	return cSuccess
}

//export ftmpi_Type_get_contents_c
func ftmpi_Type_get_contents_c(datatype C.uintptr_t, maxInts, maxAddrs, maxLarge, maxTypes C.MPI_Count, ints *C.int, addrs *C.MPI_Aint, large *C.MPI_Count, typesOut *C.uintptr_t) C.int {
	clamp := func(v C.MPI_Count) C.int { return C.int(min(max(v, 0), math.MaxInt32)) }
	return ftmpi_Type_get_contents(datatype, clamp(maxInts), clamp(maxAddrs), clamp(maxTypes), ints, addrs, typesOut)
}

//export ftmpi_Pack_external_c
func ftmpi_Pack_external_c(datarep *C.char, inbuf unsafe.Pointer, incount C.MPI_Count, dt C.uintptr_t, outbuf unsafe.Pointer, outsize C.MPI_Count, position *C.MPI_Count) C.int {
	n, err := cIntOf("MPI_Pack_external_c", incount)
	if err != nil {
		return code(err)
	}
	pos := C.MPI_Aint(*position)
	rc := ftmpi_Pack_external(datarep, inbuf, n, dt, outbuf, C.MPI_Aint(outsize), &pos)
	*position = C.MPI_Count(pos)
	return rc
}

//export ftmpi_Unpack_external_c
func ftmpi_Unpack_external_c(datarep *C.char, inbuf unsafe.Pointer, insize C.MPI_Count, position *C.MPI_Count, outbuf unsafe.Pointer, outcount C.MPI_Count, dt C.uintptr_t) C.int {
	n, err := cIntOf("MPI_Unpack_external_c", outcount)
	if err != nil {
		return code(err)
	}
	pos := C.MPI_Aint(*position)
	rc := ftmpi_Unpack_external(datarep, inbuf, C.MPI_Aint(insize), &pos, outbuf, n, dt)
	*position = C.MPI_Count(pos)
	return rc
}

//export ftmpi_Pack_external_size_c
func ftmpi_Pack_external_size_c(datarep *C.char, incount C.MPI_Count, dt C.uintptr_t, size *C.MPI_Count) C.int {
	n, err := cIntOf("MPI_Pack_external_size_c", incount)
	if err != nil {
		return code(err)
	}
	var s C.MPI_Aint
	rc := ftmpi_Pack_external_size(datarep, n, dt, &s)
	*size = C.MPI_Count(s)
	return rc
}
