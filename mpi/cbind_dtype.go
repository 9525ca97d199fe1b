package mpi

// Datatype constructors for the C binding (libmpi) that the Go API had no
// form of: MPI_Type_create_hindexed, MPI_Type_create_hindexed_block,
// MPI_Type_create_subarray, MPI_Type_create_darray and MPI_Type_dup. They
// build typemaps as the other constructors do (derive), so the results
// travel, pack and compare like any datatype.

import "fmt"

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
// (MPI_Type_dup); it is committed if old is.
func TypeDup(old *Datatype) (*Datatype, error) {
	if old == nil {
		return nil, errType(ErrType, "MPI_Type_dup", "nil datatype")
	}
	d, err := newDatatype(old.name, old.runs, old.lb, old.ub)
	if err != nil {
		return nil, err
	}
	d.committed.Store(old.committed.Load())
	return d, nil
}

// Committed reports whether d was committed (Commit; the predefined
// datatypes are).
func (d *Datatype) Committed() bool { return d != nil && d.committed.Load() }

// place returns t moved by disp bytes with lower bound 0 and extent
// extent: the final step of subarray and darray (MPI's LB and UB markers).
func place(op, name string, t *Datatype, disp, extent int) (*Datatype, error) {
	s, err := derive(op, name, []block{{disp, 1, t}}, false)
	if err != nil {
		return nil, err
	}
	return newDatatype(name, s.runs, 0, extent)
}

// TypeCreateSubarray is the subarray of subsizes elements starting at
// starts of an array of sizes elements of old in each dimension
// (MPI_Type_create_subarray); orderC says the array is in C order (row
// major, the last dimension contiguous), else in Fortran order. Its lower
// bound is 0 and its extent the whole array's.
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
// bound is 0 and its extent the global array's.
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
