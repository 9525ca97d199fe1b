package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Collectives: each C function resolves its handles and buffers (cview),
// applies MPI_IN_PLACE as package mpi expresses it (aliasing: the receive
// buffer, or this rank's block of it, as the send buffer), and calls the
// blocking, nonblocking or persistent form of package mpi's typed
// collective (mode). Arguments significant only at the root are not
// looked at elsewhere.

// inPlace reports whether p is MPI_IN_PLACE.
func inPlace(p unsafe.Pointer) bool { return uintptr(p) == 1 }

// rootIn converts a C root: MPI_ROOT and MPI_PROC_NULL (intercommunicators)
// are the Go constants.
func rootIn(root C.int) int {
	switch root {
	case C.MPI_ROOT:
		return mpi.Root
	case C.MPI_PROC_NULL:
		return mpi.ProcNull
	}
	return int(root)
}

// rootSide is this process's part in a rooted collective on a.c with
// root r (after rootIn): the root (on an intercommunicator the process
// passing MPI_ROOT), idle (MPI_PROC_NULL on an intercommunicator: no
// other argument is significant), inter, and the number of blocks at the
// root (the remote group's size on an intercommunicator).
func (a *call) rootSide(r int) (isRoot, idle, inter bool, peers int) {
	if a.c == nil {
		return false, false, false, 0
	}
	if a.c.IsInter() {
		return r == mpi.Root, r == mpi.ProcNull, true, a.c.RemoteSize()
	}
	return a.c.Rank() == r, false, false, a.c.Size()
}

// interInPlace fails the call if sendbuf is MPI_IN_PLACE on an
// intercommunicator (the standard defines no in place there).
func (a *call) interInPlace(sendbuf unsafe.Pointer) {
	if a.ok() && a.c.IsInter() && inPlace(sendbuf) {
		a.failf(mpi.ErrBuffer, "MPI_IN_PLACE is not defined on intercommunicators")
	}
}

// mode is how a collective runs: blocking (req nil), nonblocking (req
// set), or persistent (req set, persist: an inactive request whose every
// MPI_Start runs it).
type mode struct {
	name    string // the MPI name, for messages
	req     *C.uintptr_t
	nb      bool // nonblocking or persistent
	persist bool
}

func blockingMode(name string) mode { return mode{name: name} }
func nbMode(name string, r *C.uintptr_t) mode {
	return mode{name: name, req: r, nb: true}
}
func persistMode(name string, r *C.uintptr_t) mode {
	return mode{name: name, req: r, nb: true, persist: true}
}

// run runs the call: b for the blocking form, nb for the nonblocking one,
// pi makes the persistent one (a Go persistent request, which matches the
// other members' in the order of the Init calls).
func (m mode) run(c *mpi.Comm, b func() error, nb, pi func() (*mpi.Request, error)) C.int {
	if !m.nb {
		return code(b())
	}
	if m.persist {
		if pi == nil {
			return fail(c, bad(mpi.ErrUnsupportedOperation, m.name, "no persistent form"))
		}
		pr, err := pi()
		if err != nil {
			return code(err)
		}
		*m.req = newReq(&creq{start: pr.StartNonblocking})
		return cSuccess
	}
	r, err := nb()
	if err != nil {
		return code(err)
	}
	*m.req = newReq(&creq{r: r})
	return cSuccess
}

// call is one collective call's resolved state: its communicator and the
// first error found (already raised on its handler).
type call struct {
	m  mode
	c  *mpi.Comm
	rc C.int
}

// newCall resolves comm for a call of mode m. The call is a value: kept in
// the binding's frame it costs no allocation.
func newCall(m mode, comm C.uintptr_t) call {
	a := call{m: m}
	c, err := commOf(comm, m.name)
	if err != nil {
		a.rc = code(err)
		return a
	}
	a.c = c
	if m.nb && m.req == nil {
		a.rc = fail(c, bad(mpi.ErrArg, m.name, "request is NULL"))
	}
	return a
}

func (a *call) ok() bool { return a.rc == cSuccess }

// failf raises an argument error found by the binding.
func (a *call) failf(class *mpi.Class, format string, args ...any) {
	if a.ok() {
		a.rc = fail(a.c, bad(class, a.m.name, format, args...))
	}
}

// typ resolves a datatype handle.
func (a *call) typ(h C.uintptr_t) *mpi.Datatype {
	if !a.ok() {
		return nil
	}
	d, err := typeOf(h, a.c, a.m.name)
	if err != nil {
		a.rc = code(err)
		return nil
	}
	return d
}

// buf lays count elements of d at p out for Go (view), returning the
// datatype the Go call takes and the bytes it is moved by (0 unless
// view moved the layout).
func (a *call) buf(p unsafe.Pointer, count int, d *mpi.Datatype) ([]byte, *mpi.Datatype, int) {
	if !a.ok() {
		return nil, nil, 0
	}
	if inPlace(p) {
		a.failf(mpi.ErrBuffer, "MPI_IN_PLACE is not allowed here (the standard allows it as the send buffer of most collectives, at the root only for the rooted ones, and as the receive buffer of a scatter at the root)")
		return nil, nil, 0
	}
	b, v, err := view(p, count, d, a.m.name)
	if err != nil {
		a.rc = fail(a.c, err)
		return nil, nil, 0
	}
	shift := 0
	if v != d {
		lo, _ := d.TrueExtent()
		_, ext := d.Extent()
		shift = lo + min(0, (count-1)*ext)
	}
	return b, v, shift
}

// at is p moved by k extents of d.
func at(p unsafe.Pointer, k int, d *mpi.Datatype) unsafe.Pointer {
	_, ext := d.Extent()
	return unsafe.Add(p, k*ext)
}

// carr is a C array of counts or displacements: int, MPI_Count or
// MPI_Aint elements (the large-count _c functions take the wider ones).
type carr struct {
	p    unsafe.Pointer
	wide bool // 8-byte elements
}

func ci(p *C.int) carr       { return carr{unsafe.Pointer(p), false} }
func cl(p *C.MPI_Count) carr { return carr{unsafe.Pointer(p), true} }
func ca(p *C.MPI_Aint) carr  { return carr{unsafe.Pointer(p), true} }

// ints copies the n elements of x (an error for a NULL array).
func (a *call) ints(x carr, n int, what string) []int {
	if !a.ok() {
		return nil
	}
	if x.p == nil {
		a.failf(mpi.ErrArg, "%s is NULL", what)
		return nil
	}
	out := make([]int, n)
	if x.wide {
		for i, v := range unsafe.Slice((*int64)(x.p), n) {
			out[i] = int(v)
		}
		return out
	}
	for i, v := range unsafe.Slice((*int32)(x.p), n) {
		out[i] = int(v)
	}
	return out
}

// vbuf lays out the blocks (counts[i] elements of d at displs[i] extents
// of p) for Go: the buffer from the lowest block, the displacements
// moved to start at 0.
func (a *call) vbuf(p unsafe.Pointer, counts, displs []int, d *mpi.Datatype) ([]byte, *mpi.Datatype, []int) {
	if !a.ok() {
		return nil, nil, nil
	}
	lo, hi := 0, 0
	for i, k := range counts {
		if k < 0 {
			a.failf(mpi.ErrCount, "negative count %d for rank %d", k, i)
			return nil, nil, nil
		}
		if k > 0 {
			lo, hi = min(lo, displs[i]), max(hi, displs[i]+k)
		}
	}
	moved := make([]int, len(displs))
	for i, v := range displs {
		moved[i] = v - lo
	}
	b, v, _ := a.buf(at(p, lo, d), hi-lo, d)
	return b, v, moved
}

// same fails unless the views of one datatype agree (a reduction's
// buffers moved differently: MPI_BOTTOM with another buffer).
func (a *call) same(v1, v2 *mpi.Datatype) {
	if a.ok() && v1 != nil && v2 != nil && v1 != v2 {
		a.failf(mpi.ErrBuffer, "the send and receive buffers need different layouts of the datatype (MPI_BOTTOM with a relative buffer): not supported")
	}
}

func (a *call) op(h, dt C.uintptr_t, shift int) *mpi.Op {
	if !a.ok() {
		return nil
	}
	o, err := opOf(h, dt, shift, a.c, a.m.name)
	if err != nil {
		a.rc = code(err)
		return nil
	}
	return o
}

func (a *call) count(n int64, what string) int {
	if n < 0 {
		a.failf(mpi.ErrCount, "negative %s %d", what, n)
	}
	return int(n)
}

// Barrier.

func barrier(m mode, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	if !a.ok() {
		return a.rc
	}
	return m.run(a.c, a.c.Barrier, a.c.Ibarrier, a.c.BarrierInit)
}

//export ftmpi_Barrier
func ftmpi_Barrier(comm C.uintptr_t) C.int { return barrier(blockingMode("MPI_Barrier"), comm) }

//export ftmpi_Ibarrier
func ftmpi_Ibarrier(comm C.uintptr_t, request *C.uintptr_t) C.int {
	return barrier(nbMode("MPI_Ibarrier", request), comm)
}

//export ftmpi_Barrier_init
func ftmpi_Barrier_init(comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return barrier(persistMode("MPI_Barrier_init", request), comm)
}

// Bcast.

func bcast(m mode, buf unsafe.Pointer, count int64, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	n := a.count(count, "count")
	d := a.typ(dt)
	b, v, _ := a.buf(buf, n, d)
	if !a.ok() {
		return a.rc
	}
	r := rootIn(root)
	return m.run(a.c, func() error { return mpi.BcastTyped(a.c, b, n, v, r) },
		func() (*mpi.Request, error) { return mpi.IbcastTyped(a.c, b, n, v, r) }, func() (*mpi.Request, error) { return mpi.BcastTypedInit(a.c, b, n, v, r) })
}

//export ftmpi_Bcast
func ftmpi_Bcast(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return bcast(blockingMode("MPI_Bcast"), buf, int64(count), dt, root, comm)
}

//export ftmpi_Ibcast
func ftmpi_Ibcast(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return bcast(nbMode("MPI_Ibcast", request), buf, int64(count), dt, root, comm)
}

//export ftmpi_Bcast_init
func ftmpi_Bcast_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, root C.int, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return bcast(persistMode("MPI_Bcast_init", request), buf, int64(count), dt, root, comm)
}

// Reductions.

func reduce(m mode, sendbuf, recvbuf unsafe.Pointer, count int64, dt, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	r := rootIn(root)
	isRoot, idle, inter, _ := a.rootSide(r)
	var sb, rb []byte
	var sv, rv *mpi.Datatype
	var o *mpi.Op
	n := 0
	if !idle { // MPI_PROC_NULL on an intercommunicator: nothing else is significant
		n = a.count(count, "count")
		d := a.typ(dt)
		var shift int
		switch {
		case isRoot && inter: // the send buffer is not significant
			rb, rv, shift = a.buf(recvbuf, n, d)
			sv = rv
		case isRoot:
			rb, rv, shift = a.buf(recvbuf, n, d)
			if inPlace(sendbuf) {
				sb, sv = rb, rv
			} else {
				sb, sv, _ = a.buf(sendbuf, n, d)
			}
		default:
			sb, sv, shift = a.buf(sendbuf, n, d)
		}
		a.same(sv, rv)
		o = a.op(op, dt, shift)
	}
	if !a.ok() {
		return a.rc
	}
	return m.run(a.c, func() error { return mpi.ReduceTypedOp(a.c, sb, rb, n, sv, o, r) },
		func() (*mpi.Request, error) { return mpi.IreduceTyped(a.c, sb, rb, n, sv, o, r) }, func() (*mpi.Request, error) { return mpi.ReduceTypedInit(a.c, sb, rb, n, sv, o, r) })
}

//export ftmpi_Reduce
func ftmpi_Reduce(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return reduce(blockingMode("MPI_Reduce"), sendbuf, recvbuf, int64(count), dt, op, root, comm)
}

//export ftmpi_Ireduce
func ftmpi_Ireduce(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return reduce(nbMode("MPI_Ireduce", request), sendbuf, recvbuf, int64(count), dt, op, root, comm)
}

//export ftmpi_Reduce_init
func ftmpi_Reduce_init(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op C.uintptr_t, root C.int, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return reduce(persistMode("MPI_Reduce_init", request), sendbuf, recvbuf, int64(count), dt, op, root, comm)
}

// Allreduce, Scan and Exscan: count elements each side, in place allowed.
const (
	kAllreduce = iota
	kScan
	kExscan
)

func allred(m mode, kind int, sendbuf, recvbuf unsafe.Pointer, count int64, dt, op, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	n := a.count(count, "count")
	d := a.typ(dt)
	rb, rv, shift := a.buf(recvbuf, n, d)
	sb, sv := rb, rv
	if !inPlace(sendbuf) {
		sb, sv, _ = a.buf(sendbuf, n, d)
	}
	a.same(sv, rv)
	o := a.op(op, dt, shift)
	if !a.ok() {
		return a.rc
	}
	c := a.c
	switch kind {
	case kScan:
		return m.run(c, func() error { return mpi.ScanTyped(c, sb, rb, n, sv, o) },
			func() (*mpi.Request, error) { return mpi.IscanTyped(c, sb, rb, n, sv, o) }, func() (*mpi.Request, error) { return mpi.ScanTypedInit(c, sb, rb, n, sv, o) })
	case kExscan:
		return m.run(c, func() error { return mpi.ExscanTyped(c, sb, rb, n, sv, o) },
			func() (*mpi.Request, error) { return mpi.IexscanTyped(c, sb, rb, n, sv, o) }, func() (*mpi.Request, error) { return mpi.ExscanTypedInit(c, sb, rb, n, sv, o) })
	}
	return m.run(c, func() error { return mpi.AllreduceTypedOp(c, sb, rb, n, sv, o) },
		func() (*mpi.Request, error) { return mpi.IallreduceTyped(c, sb, rb, n, sv, o) }, func() (*mpi.Request, error) { return mpi.AllreduceTypedInit(c, sb, rb, n, sv, o) })
}

//export ftmpi_Allreduce
func ftmpi_Allreduce(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm C.uintptr_t) C.int {
	return allred(blockingMode("MPI_Allreduce"), kAllreduce, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Iallreduce
func ftmpi_Iallreduce(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(nbMode("MPI_Iallreduce", request), kAllreduce, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Allreduce_init
func ftmpi_Allreduce_init(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(persistMode("MPI_Allreduce_init", request), kAllreduce, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Scan
func ftmpi_Scan(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm C.uintptr_t) C.int {
	return allred(blockingMode("MPI_Scan"), kScan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Iscan
func ftmpi_Iscan(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(nbMode("MPI_Iscan", request), kScan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Scan_init
func ftmpi_Scan_init(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(persistMode("MPI_Scan_init", request), kScan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Exscan
func ftmpi_Exscan(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm C.uintptr_t) C.int {
	return allred(blockingMode("MPI_Exscan"), kExscan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Iexscan
func ftmpi_Iexscan(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(nbMode("MPI_Iexscan", request), kExscan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Exscan_init
func ftmpi_Exscan_init(sendbuf, recvbuf unsafe.Pointer, count C.int, dt, op, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(persistMode("MPI_Exscan_init", request), kExscan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

// redScatter: block is the block form (recvcount for every member), else
// counts.
func redScatter(m mode, block bool, sendbuf, recvbuf unsafe.Pointer, counts carr, recvcount int64, dt, op, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	d := a.typ(dt)
	if !a.ok() {
		return a.rc
	}
	a.interInPlace(sendbuf)
	p := a.c.Size()
	var cs []int
	each := 0
	if !block {
		cs = a.ints(counts, p, "recvcounts")
	} else {
		each = a.count(recvcount, "recvcount")
		cs = make([]int, p)
		for i := range cs {
			cs[i] = each
		}
	}
	if !a.ok() {
		return a.rc
	}
	total := 0
	for i, k := range cs {
		if k < 0 {
			a.failf(mpi.ErrCount, "negative recvcounts[%d] %d", i, k)
		}
		total += k
	}
	me := cs[a.c.Rank()]
	var sb, rb []byte
	var sv, rv *mpi.Datatype
	var shift int
	if inPlace(sendbuf) && !a.c.IsInter() { // in place is not defined on intercommunicators (a.buf says so)
		sb, sv, shift = a.buf(recvbuf, total, d)
		rb, rv = sb, sv
	} else {
		sb, sv, shift = a.buf(sendbuf, total, d)
		rb, rv, _ = a.buf(recvbuf, me, d)
	}
	if me > 0 {
		a.same(sv, rv)
	}
	o := a.op(op, dt, shift)
	if !a.ok() {
		return a.rc
	}
	c := a.c
	if block {
		return m.run(c, func() error { return mpi.ReduceScatterBlockTyped(c, sb, rb, each, sv, o) },
			func() (*mpi.Request, error) { return mpi.IreduceScatterBlockTyped(c, sb, rb, each, sv, o) }, func() (*mpi.Request, error) { return mpi.ReduceScatterBlockTypedInit(c, sb, rb, each, sv, o) })
	}
	return m.run(c, func() error { return mpi.ReduceScatterTyped(c, sb, rb, cs, sv, o) },
		func() (*mpi.Request, error) { return mpi.IreduceScatterTyped(c, sb, rb, cs, sv, o) }, func() (*mpi.Request, error) { return mpi.ReduceScatterTypedInit(c, sb, rb, cs, sv, o) })
}

//export ftmpi_Reduce_scatter
func ftmpi_Reduce_scatter(sendbuf, recvbuf unsafe.Pointer, counts *C.int, dt, op, comm C.uintptr_t) C.int {
	return redScatter(blockingMode("MPI_Reduce_scatter"), false, sendbuf, recvbuf, ci(counts), 0, dt, op, comm)
}

//export ftmpi_Ireduce_scatter
func ftmpi_Ireduce_scatter(sendbuf, recvbuf unsafe.Pointer, counts *C.int, dt, op, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(nbMode("MPI_Ireduce_scatter", request), false, sendbuf, recvbuf, ci(counts), 0, dt, op, comm)
}

//export ftmpi_Reduce_scatter_init
func ftmpi_Reduce_scatter_init(sendbuf, recvbuf unsafe.Pointer, counts *C.int, dt, op, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(persistMode("MPI_Reduce_scatter_init", request), false, sendbuf, recvbuf, ci(counts), 0, dt, op, comm)
}

//export ftmpi_Reduce_scatter_block
func ftmpi_Reduce_scatter_block(sendbuf, recvbuf unsafe.Pointer, recvcount C.int, dt, op, comm C.uintptr_t) C.int {
	return redScatter(blockingMode("MPI_Reduce_scatter_block"), true, sendbuf, recvbuf, carr{}, int64(recvcount), dt, op, comm)
}

//export ftmpi_Ireduce_scatter_block
func ftmpi_Ireduce_scatter_block(sendbuf, recvbuf unsafe.Pointer, recvcount C.int, dt, op, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(nbMode("MPI_Ireduce_scatter_block", request), true, sendbuf, recvbuf, carr{}, int64(recvcount), dt, op, comm)
}

//export ftmpi_Reduce_scatter_block_init
func ftmpi_Reduce_scatter_block_init(sendbuf, recvbuf unsafe.Pointer, recvcount C.int, dt, op, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(persistMode("MPI_Reduce_scatter_block_init", request), true, sendbuf, recvbuf, carr{}, int64(recvcount), dt, op, comm)
}

//export ftmpi_Reduce_local
func ftmpi_Reduce_local(inbuf, inoutbuf unsafe.Pointer, count C.int, dt, op C.uintptr_t) C.int {
	return reduceLocal("MPI_Reduce_local", inbuf, inoutbuf, int64(count), dt, op)
}

func reduceLocal(name string, inbuf, inoutbuf unsafe.Pointer, count int64, dt, op C.uintptr_t) C.int {
	if world == nil {
		return code(bad(mpi.ErrOther, name, "MPI is not initialized (call MPI_Init first)"))
	}
	a := &call{m: blockingMode(name), c: world.CommWorld()}
	n := a.count(count, "count")
	d := a.typ(dt)
	ob, ov, shift := a.buf(inoutbuf, n, d)
	ib, iv, _ := a.buf(inbuf, n, d)
	a.same(iv, ov)
	o := a.op(op, dt, shift)
	if !a.ok() {
		return a.rc
	}
	if err := mpi.ReduceLocalTyped(ib, ob, n, ov, o); err != nil {
		return fail(nil, err)
	}
	return cSuccess
}

// Gather and Scatter.

func gather(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	r := rootIn(root)
	isRoot, idle, inter, peers := a.rootSide(r)
	var rb, sb []byte
	var rv, sv *mpi.Datatype
	sn, rn := 0, 0
	if isRoot {
		rn = a.count(recvcount, "recvcount")
		rd := a.typ(recvtype)
		rb, rv, _ = a.buf(recvbuf, rn*peers, rd)
		if inPlace(sendbuf) && !inter && a.ok() {
			sn = rn
			sb, sv, _ = a.buf(at(recvbuf, r*rn, rd), rn, rd)
		}
	}
	if sv == nil && !idle && !(inter && isRoot) && a.ok() { // the root of an intercommunicator sends nothing
		sn = a.count(sendcount, "sendcount")
		sd := a.typ(sendtype)
		sb, sv, _ = a.buf(sendbuf, sn, sd)
	}
	if !a.ok() {
		return a.rc
	}
	if rv == nil {
		rv = sv
	}
	c := a.c
	return m.run(c, func() error { return mpi.GatherTyped(c, sb, sn, sv, rb, rn, rv, r) },
		func() (*mpi.Request, error) { return mpi.IgatherTyped(c, sb, sn, sv, rb, rn, rv, r) }, func() (*mpi.Request, error) { return mpi.GatherTypedInit(c, sb, sn, sv, rb, rn, rv, r) })
}

//export ftmpi_Gather
func ftmpi_Gather(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gather(blockingMode("MPI_Gather"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Igather
func ftmpi_Igather(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return gather(nbMode("MPI_Igather", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Gather_init
func ftmpi_Gather_init(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return gather(persistMode("MPI_Gather_init", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

func gatherv(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs carr, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	r := rootIn(root)
	isRoot, idle, inter, p := a.rootSide(r)
	var rb, sb []byte
	var rv, sv *mpi.Datatype
	var rc, rds []int
	sn := 0
	if isRoot {
		rc = a.ints(recvcounts, p, "recvcounts")
		rds = a.ints(displs, p, "displs")
		rd := a.typ(recvtype)
		rb, rv, rds = a.vbuf(recvbuf, rc, rds, rd)
		if inPlace(sendbuf) && !inter && a.ok() {
			sn = rc[r]
			sb, sv, _ = a.buf(at(recvbuf, a.ints(displs, p, "displs")[r], rd), sn, rd)
		}
	}
	if sv == nil && !idle && !(inter && isRoot) && a.ok() { // the root of an intercommunicator sends nothing
		sn = a.count(sendcount, "sendcount")
		sd := a.typ(sendtype)
		sb, sv, _ = a.buf(sendbuf, sn, sd)
	}
	if !a.ok() {
		return a.rc
	}
	if rv == nil {
		rv = sv
	}
	c := a.c
	return m.run(c, func() error { return mpi.GathervTyped(c, sb, sn, sv, rb, rc, rds, rv, r) },
		func() (*mpi.Request, error) { return mpi.IgathervTyped(c, sb, sn, sv, rb, rc, rds, rv, r) }, func() (*mpi.Request, error) { return mpi.GathervTypedInit(c, sb, sn, sv, rb, rc, rds, rv, r) })
}

//export ftmpi_Gatherv
func ftmpi_Gatherv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherv(blockingMode("MPI_Gatherv"), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, root, comm)
}

//export ftmpi_Igatherv
func ftmpi_Igatherv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return gatherv(nbMode("MPI_Igatherv", request), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, root, comm)
}

//export ftmpi_Gatherv_init
func ftmpi_Gatherv_init(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype C.uintptr_t, root C.int, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return gatherv(persistMode("MPI_Gatherv_init", request), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, root, comm)
}

func scatter(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	r := rootIn(root)
	isRoot, idle, inter, peers := a.rootSide(r)
	var rb, sb []byte
	var rv, sv *mpi.Datatype
	sn, rn := 0, 0
	if isRoot {
		sn = a.count(sendcount, "sendcount")
		sd := a.typ(sendtype)
		sb, sv, _ = a.buf(sendbuf, sn*peers, sd)
		if inPlace(recvbuf) && !inter && a.ok() {
			rn = sn
			rb, rv, _ = a.buf(at(sendbuf, r*sn, sd), sn, sd)
		}
	}
	if rv == nil && !idle && !(inter && isRoot) && a.ok() { // the root of an intercommunicator receives nothing
		rn = a.count(recvcount, "recvcount")
		rd := a.typ(recvtype)
		rb, rv, _ = a.buf(recvbuf, rn, rd)
	}
	if !a.ok() {
		return a.rc
	}
	if sv == nil {
		sv = rv
	}
	c := a.c
	return m.run(c, func() error { return mpi.ScatterTyped(c, sb, sn, sv, rb, rn, rv, r) },
		func() (*mpi.Request, error) { return mpi.IscatterTyped(c, sb, sn, sv, rb, rn, rv, r) }, func() (*mpi.Request, error) { return mpi.ScatterTypedInit(c, sb, sn, sv, rb, rn, rv, r) })
}

//export ftmpi_Scatter
func ftmpi_Scatter(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return scatter(blockingMode("MPI_Scatter"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Iscatter
func ftmpi_Iscatter(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return scatter(nbMode("MPI_Iscatter", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Scatter_init
func ftmpi_Scatter_init(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return scatter(persistMode("MPI_Scatter_init", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

func scatterv(m mode, sendbuf unsafe.Pointer, sendcounts, displs carr, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	r := rootIn(root)
	isRoot, idle, inter, p := a.rootSide(r)
	var rb, sb []byte
	var rv, sv *mpi.Datatype
	var sc, sds []int
	rn := 0
	if isRoot {
		sc = a.ints(sendcounts, p, "sendcounts")
		orig := a.ints(displs, p, "displs")
		sd := a.typ(sendtype)
		sb, sv, sds = a.vbuf(sendbuf, sc, orig, sd)
		if inPlace(recvbuf) && !inter && a.ok() {
			rn = sc[r]
			rb, rv, _ = a.buf(at(sendbuf, orig[r], sd), rn, sd)
		}
	}
	if rv == nil && !idle && !(inter && isRoot) && a.ok() { // the root of an intercommunicator receives nothing
		rn = a.count(recvcount, "recvcount")
		rd := a.typ(recvtype)
		rb, rv, _ = a.buf(recvbuf, rn, rd)
	}
	if !a.ok() {
		return a.rc
	}
	if sv == nil {
		sv = rv
	}
	c := a.c
	return m.run(c, func() error { return mpi.ScattervTyped(c, sb, sc, sds, sv, rb, rn, rv, r) },
		func() (*mpi.Request, error) { return mpi.IscattervTyped(c, sb, sc, sds, sv, rb, rn, rv, r) }, func() (*mpi.Request, error) { return mpi.ScattervTypedInit(c, sb, sc, sds, sv, rb, rn, rv, r) })
}

//export ftmpi_Scatterv
func ftmpi_Scatterv(sendbuf unsafe.Pointer, sendcounts, displs *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return scatterv(blockingMode("MPI_Scatterv"), sendbuf, ci(sendcounts), ci(displs), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Iscatterv
func ftmpi_Iscatterv(sendbuf unsafe.Pointer, sendcounts, displs *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return scatterv(nbMode("MPI_Iscatterv", request), sendbuf, ci(sendcounts), ci(displs), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Scatterv_init
func ftmpi_Scatterv_init(sendbuf unsafe.Pointer, sendcounts, displs *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, root C.int, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return scatterv(persistMode("MPI_Scatterv_init", request), sendbuf, ci(sendcounts), ci(displs), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

// Allgather.

func allgather(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	rn := a.count(recvcount, "recvcount")
	rd := a.typ(recvtype)
	if !a.ok() {
		return a.rc
	}
	peers := a.c.Size()
	if a.c.IsInter() {
		peers = a.c.RemoteSize()
	}
	rb, rv, _ := a.buf(recvbuf, rn*peers, rd)
	var sb []byte
	var sv *mpi.Datatype
	sn := rn
	if inPlace(sendbuf) && !a.c.IsInter() {
		sb, sv, _ = a.buf(at(recvbuf, a.c.Rank()*rn, rd), rn, rd)
	} else {
		sn = a.count(sendcount, "sendcount")
		sd := a.typ(sendtype)
		sb, sv, _ = a.buf(sendbuf, sn, sd)
	}
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.AllgatherTyped(c, sb, sn, sv, rb, rn, rv) },
		func() (*mpi.Request, error) { return mpi.IallgatherTyped(c, sb, sn, sv, rb, rn, rv) }, func() (*mpi.Request, error) { return mpi.AllgatherTypedInit(c, sb, sn, sv, rb, rn, rv) })
}

//export ftmpi_Allgather
func ftmpi_Allgather(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t) C.int {
	return allgather(blockingMode("MPI_Allgather"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Iallgather
func ftmpi_Iallgather(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allgather(nbMode("MPI_Iallgather", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Allgather_init
func ftmpi_Allgather_init(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allgather(persistMode("MPI_Allgather_init", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

func allgatherv(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs carr, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	rd := a.typ(recvtype)
	if !a.ok() {
		return a.rc
	}
	a.interInPlace(sendbuf)
	p := a.c.Size()
	if a.c.IsInter() {
		p = a.c.RemoteSize() // the blocks of the remote group
	}
	rc := a.ints(recvcounts, p, "recvcounts")
	orig := a.ints(displs, p, "displs")
	rb, rv, rds := a.vbuf(recvbuf, rc, orig, rd)
	var sb []byte
	var sv *mpi.Datatype
	sn := 0
	if inPlace(sendbuf) && !a.c.IsInter() && a.ok() { // in place is not defined on intercommunicators (a.buf says so)
		sn = rc[a.c.Rank()]
		sb, sv, _ = a.buf(at(recvbuf, orig[a.c.Rank()], rd), sn, rd)
	} else {
		sn = a.count(sendcount, "sendcount")
		sd := a.typ(sendtype)
		sb, sv, _ = a.buf(sendbuf, sn, sd)
	}
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.AllgathervTyped(c, sb, sn, sv, rb, rc, rds, rv) },
		func() (*mpi.Request, error) { return mpi.IallgathervTyped(c, sb, sn, sv, rb, rc, rds, rv) }, func() (*mpi.Request, error) { return mpi.AllgathervTypedInit(c, sb, sn, sv, rb, rc, rds, rv) })
}

//export ftmpi_Allgatherv
func ftmpi_Allgatherv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype, comm C.uintptr_t) C.int {
	return allgatherv(blockingMode("MPI_Allgatherv"), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, comm)
}

//export ftmpi_Iallgatherv
func ftmpi_Iallgatherv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allgatherv(nbMode("MPI_Iallgatherv", request), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, comm)
}

//export ftmpi_Allgatherv_init
func ftmpi_Allgatherv_init(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allgatherv(persistMode("MPI_Allgatherv_init", request), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, comm)
}

// Alltoall.

func alltoall(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	rn := a.count(recvcount, "recvcount")
	rd := a.typ(recvtype)
	if !a.ok() {
		return a.rc
	}
	a.interInPlace(sendbuf)
	p := a.c.Size()
	if a.c.IsInter() {
		p = a.c.RemoteSize() // a block per process of the remote group
	}
	rb, rv, _ := a.buf(recvbuf, rn*p, rd)
	sb, sv, sn := rb, rv, rn
	if !inPlace(sendbuf) || a.c.IsInter() { // in place is not defined on intercommunicators (a.buf says so)
		sn = a.count(sendcount, "sendcount")
		sd := a.typ(sendtype)
		sb, sv, _ = a.buf(sendbuf, sn*p, sd)
	}
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.AlltoallTyped(c, sb, sn, sv, rb, rn, rv) },
		func() (*mpi.Request, error) { return mpi.IalltoallTyped(c, sb, sn, sv, rb, rn, rv) }, func() (*mpi.Request, error) { return mpi.AlltoallTypedInit(c, sb, sn, sv, rb, rn, rv) })
}

//export ftmpi_Alltoall
func ftmpi_Alltoall(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t) C.int {
	return alltoall(blockingMode("MPI_Alltoall"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Ialltoall
func ftmpi_Ialltoall(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoall(nbMode("MPI_Ialltoall", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Alltoall_init
func ftmpi_Alltoall_init(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoall(persistMode("MPI_Alltoall_init", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

func alltoallv(m mode, sendbuf unsafe.Pointer, sendcounts, sdispls carr, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls carr, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	rd := a.typ(recvtype)
	if !a.ok() {
		return a.rc
	}
	a.interInPlace(sendbuf)
	p := a.c.Size()
	if a.c.IsInter() {
		p = a.c.RemoteSize() // a block per process of the remote group
	}
	rc := a.ints(recvcounts, p, "recvcounts")
	rds := a.ints(rdispls, p, "rdispls")
	rb, rv, rds := a.vbuf(recvbuf, rc, rds, rd)
	sb, sv, sc, sds := rb, rv, rc, rds
	if !inPlace(sendbuf) || a.c.IsInter() { // in place is not defined on intercommunicators (a.buf says so)
		sc = a.ints(sendcounts, p, "sendcounts")
		sds = a.ints(sdispls, p, "sdispls")
		sd := a.typ(sendtype)
		sb, sv, sds = a.vbuf(sendbuf, sc, sds, sd)
	}
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.AlltoallvTyped(c, sb, sc, sds, sv, rb, rc, rds, rv) },
		func() (*mpi.Request, error) { return mpi.IalltoallvTyped(c, sb, sc, sds, sv, rb, rc, rds, rv) }, func() (*mpi.Request, error) { return mpi.AlltoallvTypedInit(c, sb, sc, sds, sv, rb, rc, rds, rv) })
}

//export ftmpi_Alltoallv
func ftmpi_Alltoallv(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtype, comm C.uintptr_t) C.int {
	return alltoallv(blockingMode("MPI_Alltoallv"), sendbuf, ci(sendcounts), ci(sdispls), sendtype, recvbuf, ci(recvcounts), ci(rdispls), recvtype, comm)
}

//export ftmpi_Ialltoallv
func ftmpi_Ialltoallv(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallv(nbMode("MPI_Ialltoallv", request), sendbuf, ci(sendcounts), ci(sdispls), sendtype, recvbuf, ci(recvcounts), ci(rdispls), recvtype, comm)
}

//export ftmpi_Alltoallv_init
func ftmpi_Alltoallv_init(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtype, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallv(persistMode("MPI_Alltoallv_init", request), sendbuf, ci(sendcounts), ci(sdispls), sendtype, recvbuf, ci(recvcounts), ci(rdispls), recvtype, comm)
}

// wside lays out one side of an Alltoallw: the byte range from the lowest
// byte to the highest any block touches, with the displacements moved to
// it.
func (a *call) wside(p unsafe.Pointer, counts, displs []int, hs *C.uintptr_t, what string) ([]byte, []int, []*mpi.Datatype) {
	if !a.ok() {
		return nil, nil, nil
	}
	if hs == nil {
		a.failf(mpi.ErrArg, "%stypes is NULL", what)
		return nil, nil, nil
	}
	n := len(counts)
	handles := unsafe.Slice(hs, n)
	ts := make([]*mpi.Datatype, n)
	lo, hi, any := 0, 0, false
	for i := range n {
		if ts[i] = a.typ(handles[i]); ts[i] == nil {
			return nil, nil, nil
		}
		if counts[i] < 0 {
			a.failf(mpi.ErrCount, "negative %scounts[%d] %d", what, i, counts[i])
			return nil, nil, nil
		}
		if counts[i] == 0 || ts[i].Size() == 0 {
			continue
		}
		tlo, text := ts[i].TrueExtent()
		_, ext := ts[i].Extent()
		span := (counts[i] - 1) * ext
		f, l := displs[i]+tlo+min(0, span), displs[i]+tlo+text+max(0, span)
		if !any || f < lo {
			lo = f
		}
		if !any || l > hi {
			hi = l
		}
		any = true
	}
	moved := make([]int, n)
	for i, v := range displs {
		moved[i] = v - lo
	}
	if !any {
		return nil, moved, ts
	}
	if p == nil && lo < 4096 {
		a.failf(mpi.ErrBuffer, "null %sbuf with data", what)
		return nil, nil, nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, lo)), hi-lo), moved, ts
}

func alltoallw(m mode, sendbuf unsafe.Pointer, sendcounts, sdispls carr, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls carr, recvtypes *C.uintptr_t, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	if !a.ok() {
		return a.rc
	}
	a.interInPlace(sendbuf)
	p := a.c.Size()
	if a.c.IsInter() {
		p = a.c.RemoteSize() // a block per process of the remote group
	}
	rc := a.ints(recvcounts, p, "recvcounts")
	rds := a.ints(rdispls, p, "rdispls")
	rb, rds, rts := a.wside(recvbuf, rc, rds, recvtypes, "recv")
	sb, sc, sds, sts := rb, rc, rds, rts
	if !inPlace(sendbuf) {
		sc = a.ints(sendcounts, p, "sendcounts")
		sds = a.ints(sdispls, p, "sdispls")
		sb, sds, sts = a.wside(sendbuf, sc, sds, sendtypes, "send")
	}
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.AlltoallwTyped(c, sb, sc, sds, sts, rb, rc, rds, rts) },
		func() (*mpi.Request, error) { return mpi.IalltoallwTyped(c, sb, sc, sds, sts, rb, rc, rds, rts) }, func() (*mpi.Request, error) { return mpi.AlltoallwTypedInit(c, sb, sc, sds, sts, rb, rc, rds, rts) })
}

//export ftmpi_Alltoallw
func ftmpi_Alltoallw(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtypes *C.uintptr_t, comm C.uintptr_t) C.int {
	return alltoallw(blockingMode("MPI_Alltoallw"), sendbuf, ci(sendcounts), ci(sdispls), sendtypes, recvbuf, ci(recvcounts), ci(rdispls), recvtypes, comm)
}

//export ftmpi_Ialltoallw
func ftmpi_Ialltoallw(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtypes *C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallw(nbMode("MPI_Ialltoallw", request), sendbuf, ci(sendcounts), ci(sdispls), sendtypes, recvbuf, ci(recvcounts), ci(rdispls), recvtypes, comm)
}

//export ftmpi_Alltoallw_init
func ftmpi_Alltoallw_init(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtypes *C.uintptr_t, comm, info C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallw(persistMode("MPI_Alltoallw_init", request), sendbuf, ci(sendcounts), ci(sdispls), sendtypes, recvbuf, ci(recvcounts), ci(rdispls), recvtypes, comm)
}
