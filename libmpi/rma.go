package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "cside.h"
#include "comm_cside.h"
#include "coll_cside.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Windows (MPI-4.1 chapter 12). A C window is a byte window of package
// mpi (mpi.WinCreateBytes) over the C memory, with its displacement unit;
// the operations forward their (buffer, count, datatype) triples to the
// typed one-sided calls of mpi/cbind_win.go (where MPI_PROC_NULL as a
// target is a no-op, as MPI says).

// wins holds the windows made from C; winC their C-side facts.
var (
	wins  = newTable[*mpi.Win](kindWin)
	winMu sync.Mutex
	winC  = map[*mpi.Win]*cwin{}
)

// cwin is what C needs of a window beyond the Go object: its base address
// (MPI_WIN_BASE), the attribute values it points MPI_Win_get_attr at (in C
// memory: size, disp_unit, flavor, model), and the memory MPI_Win_allocate
// made (freed by MPI_Win_free).
type cwin struct {
	base  unsafe.Pointer
	attrs *winAttrs
	alloc bool
}

// winAttrs are the values of the predefined window attributes, in C
// memory, in their C types.
type winAttrs struct {
	size                   C.MPI_Aint
	unit, flavor, model, _ C.int
}

// winOf resolves a window handle for op. An invalid handle is an
// MPI_ERR_WIN error raised on MPI_COMM_WORLD's error handler.
func winOf(h C.uintptr_t, op string) (*mpi.Win, error) {
	if w, ok := wins.get(uintptr(h)); ok {
		return w, nil
	}
	if uintptr(h) == hWinNull {
		return nil, worldFail(bad(mpi.ErrWin, op, "MPI_WIN_NULL is not a window"))
	}
	return nil, worldFail(bad(mpi.ErrWin, op, "invalid window handle %#x (%s)", uintptr(h), describe(uintptr(h), kindWin)))
}

// winHandle returns the C handle of w.
func winHandle(w *mpi.Win) C.uintptr_t {
	if w == nil {
		return hWinNull
	}
	return C.uintptr_t(wins.put(w))
}

// winFail raises err, found by the binding in a call on w, on w's error
// handler and returns its code.
func winFail(w *mpi.Win, err error) C.int {
	return code(w.CallErrhandler(err))
}

// winType resolves a datatype handle of a call on w (errors on w's handler).
func winType(h C.uintptr_t, w *mpi.Win, op string) (*mpi.Datatype, C.int) {
	if d, ok := predefTypes[uintptr(h)]; ok {
		return d, cSuccess
	}
	if d, ok := types.get(uintptr(h)); ok {
		return d, cSuccess
	}
	if uintptr(h) == hTypeNull {
		return nil, winFail(w, bad(mpi.ErrType, op, "MPI_DATATYPE_NULL is not a datatype"))
	}
	return nil, winFail(w, bad(mpi.ErrType, op, "invalid datatype handle %#x (%s)", uintptr(h), describe(uintptr(h), kindDatatype)))
}

// rmaOps are the operations of one-sided accumulates: the predefined ones
// by ABI value (user operations are not allowed there, MPI-4.1 12.3.4).
var rmaOps = map[uintptr]*mpi.Op{
	0x021: mpi.Sum, 0x022: mpi.Min, 0x023: mpi.Max, 0x024: mpi.Prod,
	0x028: mpi.Band, 0x029: mpi.Bor, 0x02a: mpi.Bxor,
	0x030: mpi.Land, 0x031: mpi.Lor, 0x032: mpi.Lxor,
	0x038: mpi.MinLoc, 0x039: mpi.MaxLoc, 0x03c: mpi.Replace, 0x03d: mpi.NoOp,
}

func rmaOpOf(h C.uintptr_t, w *mpi.Win, op string) (*mpi.Op, C.int) {
	if o, ok := rmaOps[uintptr(h)]; ok {
		return o, cSuccess
	}
	if uintptr(h) == hOpNull {
		return nil, winFail(w, bad(mpi.ErrOp, op, "MPI_OP_NULL is not an operation"))
	}
	return nil, winFail(w, bad(mpi.ErrOp, op, "operation %#x is not a predefined operation (one-sided accumulates take MPI_SUM ... MPI_REPLACE, MPI_NO_OP)", uintptr(h)))
}

// modeIn converts C assertion bits (MPI_MODE_*) to package mpi's; unknown
// bits become a bit package mpi rejects (MPI_ERR_ASSERT).
func modeIn(a C.int) int {
	out, v := 0, int(a)
	for _, m := range []struct{ c, g int }{
		{C.MPI_MODE_NOCHECK, mpi.ModeNoCheck}, {C.MPI_MODE_NOPRECEDE, mpi.ModeNoPrecede},
		{C.MPI_MODE_NOPUT, mpi.ModeNoPut}, {C.MPI_MODE_NOSTORE, mpi.ModeNoStore},
		{C.MPI_MODE_NOSUCCEED, mpi.ModeNoSucceed}} {
		if v&m.c != 0 {
			out |= m.g
			v &^= m.c
		}
	}
	if v != 0 {
		out |= 1 << 20
	}
	return out
}

// newWin makes the window over size bytes at base (C memory) and records
// it; the window hints of info become its hints (Win.SetInfo).
func newWin(op string, base unsafe.Pointer, size C.MPI_Aint, dispUnit int, info, comm C.uintptr_t, win *C.uintptr_t, alloc bool) C.int {
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if win == nil {
		return fail(c, bad(mpi.ErrArg, op, "win is NULL"))
	}
	in, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	if size < 0 {
		return fail(c, bad(mpi.ErrArg, op, "negative size %d", int64(size)))
	}
	if base == nil && size > 0 {
		return fail(c, bad(mpi.ErrArg, op, "null base with size %d", int64(size)))
	}
	var mem []byte
	if size > 0 {
		mem = unsafe.Slice((*byte)(base), int(size))
	}
	w, err := mpi.WinCreateBytes(c, mem, dispUnit, alloc)
	if err != nil {
		return code(err)
	}
	if in != nil {
		_ = w.SetInfo(in) // fails only on a freed window
	}
	attrs := (*winAttrs)(C.calloc(1, C.size_t(unsafe.Sizeof(winAttrs{}))))
	attrs.size, attrs.unit, attrs.flavor, attrs.model = size, C.int(dispUnit), C.MPI_WIN_FLAVOR_CREATE, C.MPI_WIN_UNIFIED
	if alloc {
		attrs.flavor = C.MPI_WIN_FLAVOR_ALLOCATE
	}
	winMu.Lock()
	winC[w] = &cwin{base: base, attrs: attrs, alloc: alloc}
	winMu.Unlock()
	*win = winHandle(w)
	return cSuccess
}

//export ftmpi_Win_create
func ftmpi_Win_create(base unsafe.Pointer, size C.MPI_Aint, dispUnit C.int, info, comm C.uintptr_t, win *C.uintptr_t) C.int {
	return newWin("MPI_Win_create", base, size, int(dispUnit), info, comm, win, false)
}

//export ftmpi_Win_allocate
func ftmpi_Win_allocate(size C.MPI_Aint, dispUnit C.int, info, comm C.uintptr_t, baseptr unsafe.Pointer, win *C.uintptr_t) C.int {
	const op = "MPI_Win_allocate"
	if size < 0 || baseptr == nil {
		c, err := commOf(comm, op)
		if err != nil {
			return code(err)
		}
		if baseptr == nil {
			return fail(c, bad(mpi.ErrArg, op, "baseptr is NULL"))
		}
		return fail(c, bad(mpi.ErrArg, op, "negative size %d", int64(size)))
	}
	p := C.calloc(C.size_t(max(size, 1)), 1)
	if p == nil {
		return code(worldFail(bad(mpi.ErrOther, op, "out of memory for %d bytes", int64(size))))
	}
	rc := newWin(op, p, size, int(dispUnit), info, comm, win, true)
	if rc != cSuccess {
		C.free(p)
		return rc
	}
	*(*unsafe.Pointer)(baseptr) = p
	return cSuccess
}

//export ftmpi_Win_free
func ftmpi_Win_free(win *C.uintptr_t) C.int {
	w, err := winOf(*win, "MPI_Win_free")
	if err != nil {
		return code(err)
	}
	if err := w.Free(); err != nil {
		return code(err)
	}
	winMu.Lock()
	cw := winC[w]
	delete(winC, w)
	winMu.Unlock()
	if cw != nil {
		C.free(unsafe.Pointer(cw.attrs))
		if cw.alloc {
			C.free(cw.base)
		}
	}
	wins.del(uintptr(*win))
	*win = hWinNull
	return cSuccess
}

//export ftmpi_Win_fence
func ftmpi_Win_fence(assert C.int, win C.uintptr_t) C.int {
	w, err := winOf(win, "MPI_Win_fence")
	if err != nil {
		return code(err)
	}
	return code(w.Fence(modeIn(assert)))
}

// rmaArgs resolves a window, an origin triple and a target datatype.
type rmaCall struct {
	w      *mpi.Win
	ob     []byte
	od, td *mpi.Datatype
}

func rmaArgs(op string, win C.uintptr_t, buf unsafe.Pointer, count int, dt, tdt C.uintptr_t) (rmaCall, C.int) {
	var a rmaCall
	w, err := winOf(win, op)
	if err != nil {
		return a, code(err)
	}
	a.w = w
	d, rc := winType(dt, w, op)
	if rc != cSuccess {
		return a, rc
	}
	if a.td, rc = winType(tdt, w, op); rc != cSuccess {
		return a, rc
	}
	if a.ob, a.od, err = view(buf, int(count), d, op); err != nil {
		return a, winFail(w, err)
	}
	return a, cSuccess
}

//export ftmpi_Put
func ftmpi_Put(buf unsafe.Pointer, count C.int, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.int, tdt, win C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Put", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.PutTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td))
}

//export ftmpi_Get
func ftmpi_Get(buf unsafe.Pointer, count C.int, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.int, tdt, win C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Get", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.GetTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td))
}

//export ftmpi_Accumulate
func ftmpi_Accumulate(buf unsafe.Pointer, count C.int, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.int, tdt, o, win C.uintptr_t) C.int {
	const op = "MPI_Accumulate"
	a, rc := rmaArgs(op, win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	gop, rc := rmaOpOf(o, a.w, op)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.AccumulateTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td, gop))
}

// getAccArgs resolves the arguments of MPI_Get_accumulate (and its R form).
func getAccArgs(op string, buf unsafe.Pointer, count int, dt C.uintptr_t, res unsafe.Pointer, rcount int, rdt C.uintptr_t,
	tdt, o, win C.uintptr_t) (a rmaCall, rb []byte, rd *mpi.Datatype, gop *mpi.Op, rc C.int) {
	gop, rc = nil, cSuccess
	w, err := winOf(win, op)
	if err != nil {
		return a, nil, nil, nil, code(err)
	}
	a.w = w
	if gop, rc = rmaOpOf(o, w, op); rc != cSuccess {
		return
	}
	if a.td, rc = winType(tdt, w, op); rc != cSuccess {
		return
	}
	var d *mpi.Datatype
	if gop == mpi.NoOp {
		d, count, buf = a.td, 0, nil // the origin is ignored (MPI-4.1 12.3.5)
	} else if d, rc = winType(dt, w, op); rc != cSuccess {
		return
	}
	if a.ob, a.od, err = view(buf, int(count), d, op); err != nil {
		return a, nil, nil, nil, winFail(w, err)
	}
	if rd, rc = winType(rdt, w, op); rc != cSuccess {
		return
	}
	if rb, rd, err = view(res, int(rcount), rd, op); err != nil {
		return a, nil, nil, nil, winFail(w, err)
	}
	return
}

//export ftmpi_Get_accumulate
func ftmpi_Get_accumulate(buf unsafe.Pointer, count C.int, dt C.uintptr_t, res unsafe.Pointer, rcount C.int, rdt C.uintptr_t,
	target C.int, disp C.MPI_Aint, tcount C.int, tdt, o, win C.uintptr_t) C.int {
	a, rb, rd, gop, rc := getAccArgs("MPI_Get_accumulate", buf, int(count), dt, res, int(rcount), rdt, tdt, o, win)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.GetAccumulateTyped(a.w, a.ob, int(count), a.od, rb, int(rcount), rd, int(target), int(disp), int(tcount), a.td, gop))
}

//export ftmpi_Fetch_and_op
func ftmpi_Fetch_and_op(buf, res unsafe.Pointer, dt C.uintptr_t, target C.int, disp C.MPI_Aint, o, win C.uintptr_t) C.int {
	const op = "MPI_Fetch_and_op"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	d, rc := winType(dt, w, op)
	if rc != cSuccess {
		return rc
	}
	gop, rc := rmaOpOf(o, w, op)
	if rc != cSuccess {
		return rc
	}
	if res == nil || (buf == nil && gop != mpi.NoOp) {
		return winFail(w, bad(mpi.ErrBuffer, op, "null origin or result buffer"))
	}
	// The buffers span the element's typemap (a pair type has a gap: its
	// span is not its size).
	var ob []byte
	od := d
	if buf != nil {
		if ob, od, err = view(buf, 1, d, op); err != nil {
			return winFail(w, err)
		}
	}
	rb, rd, err := view(res, 1, d, op)
	if err != nil {
		return winFail(w, err)
	}
	if od != d || rd != d { // a negative lower bound: through the typed calls
		return code(mpi.GetAccumulateTyped(w, ob, 1, od, rb, 1, rd, int(target), int(disp), 1, d, gop))
	}
	return code(mpi.FetchAndOpTyped(w, ob, rb, d, int(target), int(disp), gop))
}

//export ftmpi_Compare_and_swap
func ftmpi_Compare_and_swap(buf, cmp, res unsafe.Pointer, dt C.uintptr_t, target C.int, disp C.MPI_Aint, win C.uintptr_t) C.int {
	const op = "MPI_Compare_and_swap"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	d, rc := winType(dt, w, op)
	if rc != cSuccess {
		return rc
	}
	if buf == nil || cmp == nil || res == nil {
		return winFail(w, bad(mpi.ErrBuffer, op, "null origin, compare or result buffer"))
	}
	n := d.Size()
	bs := func(p unsafe.Pointer) []byte { return unsafe.Slice((*byte)(p), n) }
	return code(mpi.CompareAndSwapTyped(w, bs(buf), bs(cmp), bs(res), d, int(target), int(disp)))
}

// rreq returns the request of an R operation.
func rreq(r *mpi.Request, err error, request *C.uintptr_t) C.int {
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r})
	return cSuccess
}

//export ftmpi_Rput
func ftmpi_Rput(buf unsafe.Pointer, count C.int, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.int, tdt, win C.uintptr_t, request *C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Rput", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RputTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td)
	return rreq(r, err, request)
}

//export ftmpi_Rget
func ftmpi_Rget(buf unsafe.Pointer, count C.int, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.int, tdt, win C.uintptr_t, request *C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Rget", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RgetTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td)
	return rreq(r, err, request)
}

//export ftmpi_Raccumulate
func ftmpi_Raccumulate(buf unsafe.Pointer, count C.int, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.int, tdt, o, win C.uintptr_t, request *C.uintptr_t) C.int {
	const op = "MPI_Raccumulate"
	a, rc := rmaArgs(op, win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	gop, rc := rmaOpOf(o, a.w, op)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RaccumulateTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td, gop)
	return rreq(r, err, request)
}

//export ftmpi_Rget_accumulate
func ftmpi_Rget_accumulate(buf unsafe.Pointer, count C.int, dt C.uintptr_t, res unsafe.Pointer, rcount C.int, rdt C.uintptr_t,
	target C.int, disp C.MPI_Aint, tcount C.int, tdt, o, win C.uintptr_t, request *C.uintptr_t) C.int {
	a, rb, rd, gop, rc := getAccArgs("MPI_Rget_accumulate", buf, int(count), dt, res, int(rcount), rdt, tdt, o, win)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RgetAccumulateTyped(a.w, a.ob, int(count), a.od, rb, int(rcount), rd, int(target), int(disp), int(tcount), a.td, gop)
	return rreq(r, err, request)
}

// winCall runs fn on the window of handle win.
func winCall(op string, win C.uintptr_t, fn func(w *mpi.Win) error) C.int {
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	return code(fn(w))
}

//export ftmpi_Win_lock
func ftmpi_Win_lock(lockType, rank, assert C.int, win C.uintptr_t) C.int {
	return winCall("MPI_Win_lock", win, func(w *mpi.Win) error {
		lt := 0 // neither: MPI_ERR_LOCKTYPE from package mpi
		switch lockType {
		case C.MPI_LOCK_SHARED:
			lt = mpi.LockShared
		case C.MPI_LOCK_EXCLUSIVE:
			lt = mpi.LockExclusive
		}
		if rank == C.MPI_PROC_NULL {
			return nil
		}
		return w.Lock(lt, int(rank), modeIn(assert))
	})
}

//export ftmpi_Win_unlock
func ftmpi_Win_unlock(rank C.int, win C.uintptr_t) C.int {
	return winCall("MPI_Win_unlock", win, func(w *mpi.Win) error {
		if rank == C.MPI_PROC_NULL {
			return nil
		}
		return w.Unlock(int(rank))
	})
}

//export ftmpi_Win_lock_all
func ftmpi_Win_lock_all(assert C.int, win C.uintptr_t) C.int {
	return winCall("MPI_Win_lock_all", win, func(w *mpi.Win) error { return w.LockAll(modeIn(assert)) })
}

//export ftmpi_Win_unlock_all
func ftmpi_Win_unlock_all(win C.uintptr_t) C.int {
	return winCall("MPI_Win_unlock_all", win, (*mpi.Win).UnlockAll)
}

//export ftmpi_Win_flush
func ftmpi_Win_flush(rank C.int, win C.uintptr_t) C.int {
	return winCall("MPI_Win_flush", win, func(w *mpi.Win) error {
		if rank == C.MPI_PROC_NULL {
			return nil
		}
		return w.Flush(int(rank))
	})
}

//export ftmpi_Win_flush_all
func ftmpi_Win_flush_all(win C.uintptr_t) C.int {
	return winCall("MPI_Win_flush_all", win, (*mpi.Win).FlushAll)
}

//export ftmpi_Win_flush_local
func ftmpi_Win_flush_local(rank C.int, win C.uintptr_t) C.int {
	return winCall("MPI_Win_flush_local", win, func(w *mpi.Win) error {
		if rank == C.MPI_PROC_NULL {
			return nil
		}
		return w.FlushLocal(int(rank))
	})
}

//export ftmpi_Win_flush_local_all
func ftmpi_Win_flush_local_all(win C.uintptr_t) C.int {
	return winCall("MPI_Win_flush_local_all", win, (*mpi.Win).FlushLocalAll)
}

//export ftmpi_Win_post
func ftmpi_Win_post(group C.uintptr_t, assert C.int, win C.uintptr_t) C.int {
	const op = "MPI_Win_post"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	g, err := groupOf(group, nil, op)
	if err != nil {
		return code(err)
	}
	return code(w.Post(g, modeIn(assert)))
}

//export ftmpi_Win_start
func ftmpi_Win_start(group C.uintptr_t, assert C.int, win C.uintptr_t) C.int {
	const op = "MPI_Win_start"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	g, err := groupOf(group, nil, op)
	if err != nil {
		return code(err)
	}
	return code(w.Start(g, modeIn(assert)))
}

//export ftmpi_Win_complete
func ftmpi_Win_complete(win C.uintptr_t) C.int {
	return winCall("MPI_Win_complete", win, (*mpi.Win).Complete)
}

//export ftmpi_Win_wait
func ftmpi_Win_wait(win C.uintptr_t) C.int {
	return winCall("MPI_Win_wait", win, (*mpi.Win).Wait)
}

//export ftmpi_Win_test
func ftmpi_Win_test(win C.uintptr_t, flag *C.int) C.int {
	return winCall("MPI_Win_test", win, func(w *mpi.Win) error {
		ok, err := w.Test()
		*flag = cbool(ok)
		return err
	})
}

//export ftmpi_Win_sync
func ftmpi_Win_sync(win C.uintptr_t) C.int {
	return winCall("MPI_Win_sync", win, (*mpi.Win).Sync)
}

//export ftmpi_Win_get_group
func ftmpi_Win_get_group(win C.uintptr_t, group *C.uintptr_t) C.int {
	return winCall("MPI_Win_get_group", win, func(w *mpi.Win) error {
		g, err := w.Group()
		if err == nil {
			*group = groupHandle(g)
		}
		return err
	})
}

//export ftmpi_Win_set_name
func ftmpi_Win_set_name(win C.uintptr_t, name *C.char) C.int {
	return winCall("MPI_Win_set_name", win, func(w *mpi.Win) error { return w.SetName(C.GoString(name)) })
}

//export ftmpi_Win_get_name
func ftmpi_Win_get_name(win C.uintptr_t, name *C.char, resultlen *C.int) C.int {
	return winCall("MPI_Win_get_name", win, func(w *mpi.Win) error {
		*resultlen = C.int(cstr(name, w.Name(), C.MPI_MAX_OBJECT_NAME))
		return nil
	})
}

//export ftmpi_Win_set_info
func ftmpi_Win_set_info(win, info C.uintptr_t) C.int {
	const op = "MPI_Win_set_info"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	return code(w.SetInfo(i))
}

//export ftmpi_Win_get_info
func ftmpi_Win_get_info(win C.uintptr_t, info *C.uintptr_t) C.int {
	return winCall("MPI_Win_get_info", win, func(w *mpi.Win) error {
		i, err := w.GetInfo()
		if err == nil {
			*info = infoHandle(i)
		}
		return err
	})
}

// MPI_Win_get_attr answers the predefined window attributes (MPI-4.1
// 12.2.6): MPI_WIN_BASE is the base address itself, the others point at
// C memory holding the value (MPI_Aint for the size, int otherwise).
// Other keyvals are those of MPI_Win_create_keyval.
//
//export ftmpi_Win_get_attr
func ftmpi_Win_get_attr(win C.uintptr_t, keyval C.int, val unsafe.Pointer, flag *C.int) C.int {
	const op = "MPI_Win_get_attr"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	winMu.Lock()
	cw := winC[w]
	winMu.Unlock()
	if val == nil || flag == nil {
		return winFail(w, bad(mpi.ErrArg, op, "attribute_val or flag is NULL"))
	}
	*flag = 1
	out := (*unsafe.Pointer)(val)
	switch keyval {
	case C.MPI_WIN_BASE:
		*out = cw.base
	case C.MPI_WIN_SIZE:
		*out = unsafe.Pointer(&cw.attrs.size)
	case C.MPI_WIN_DISP_UNIT:
		*out = unsafe.Pointer(&cw.attrs.unit)
	case C.MPI_WIN_CREATE_FLAVOR:
		*out = unsafe.Pointer(&cw.attrs.flavor)
	case C.MPI_WIN_MODEL:
		*out = unsafe.Pointer(&cw.attrs.model)
	default:
		k, rc := winKeyOf(keyval, w, op)
		if rc != cSuccess {
			return rc
		}
		v, ok, err := w.GetAttr(k)
		if err != nil {
			return code(err)
		}
		*flag = cbool(ok)
		if ok {
			u, _ := v.(uintptr)
			*(*C.uintptr_t)(val) = C.uintptr_t(u)
		}
	}
	return cSuccess
}

// winKeyOf resolves a window keyval (a handle of attr.go's keyvals
// table); an invalid one is an MPI_ERR_KEYVAL error on w's handler.
func winKeyOf(keyval C.int, w *mpi.Win, op string) (*mpi.Keyval, C.int) {
	if keyval >= 0 {
		if ck, ok := keyvals.get(uintptr(keyval)); ok {
			return ck.k, cSuccess
		}
	}
	return nil, winFail(w, bad(mpi.ErrKeyval, op, "invalid keyval %d (not a window keyval, or freed)", int(keyval)))
}

// ftmpi_Win_create_keyval serves MPI_Win_create_keyval (rma_cside.c):
// delFn is a C function pointer, 0 for MPI_WIN_NULL_DELETE_FN. Windows
// are never duplicated, so the copy callback is never called.
//
//export ftmpi_Win_create_keyval
func ftmpi_Win_create_keyval(copyFn, delFn C.uintptr_t, keyval *C.int, extra C.uintptr_t) C.int {
	if keyval == nil {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Win_create_keyval", "win_keyval is NULL")))
	}
	ck := &ckey{}
	var del mpi.WinDeleteAttrFn
	if delFn != 0 {
		del = func(w *mpi.Win, _ *mpi.Keyval, val any) error {
			v, _ := val.(uintptr)
			rc := C.ftmpi_attr_delete_tramp(C.FTMPI_ATTR_WIN, delFn, winHandle(w), ck.handle, C.uintptr_t(v), extra)
			if rc != C.MPI_SUCCESS {
				return errOf(int(rc), "MPI_Win_delete_attr_function")
			}
			return nil
		}
	}
	ck.k = mpi.WinCreateKeyval(del)
	ck.handle = C.int(keyvals.putNew(ck))
	*keyval = ck.handle
	return cSuccess
}

//export ftmpi_Win_free_keyval
func ftmpi_Win_free_keyval(keyval *C.int) C.int {
	const op = "MPI_Win_free_keyval"
	if keyval == nil {
		return code(worldFail(bad(mpi.ErrArg, op, "win_keyval is NULL")))
	}
	ck, ok := keyvals.get(uintptr(*keyval))
	if !ok || *keyval < 0 {
		return code(worldFail(bad(mpi.ErrKeyval, op, "invalid keyval %d (not a window keyval, or freed)", int(*keyval))))
	}
	if err := mpi.WinFreeKeyval(ck.k); err != nil {
		return code(worldFail(err))
	}
	// The handle stays valid (as a communicator keyval's, attr.go).
	*keyval = C.MPI_KEYVAL_INVALID
	return cSuccess
}

// ftmpi_Win_set_attr serves MPI_Win_set_attr (rma_cside.c).
//
//export ftmpi_Win_set_attr
func ftmpi_Win_set_attr(win C.uintptr_t, keyval C.int, val C.uintptr_t) C.int {
	const op = "MPI_Win_set_attr"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	k, rc := winKeyOf(keyval, w, op)
	if rc != cSuccess {
		return rc
	}
	return code(w.SetAttr(k, uintptr(val)))
}

//export ftmpi_Win_delete_attr
func ftmpi_Win_delete_attr(win C.uintptr_t, keyval C.int) C.int {
	const op = "MPI_Win_delete_attr"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	k, rc := winKeyOf(keyval, w, op)
	if rc != cSuccess {
		return rc
	}
	return code(w.DeleteAttr(k))
}

//export ftmpi_Win_create_errhandler
func ftmpi_Win_create_errhandler(fn unsafe.Pointer, errhandler *C.uintptr_t) C.int {
	if fn == nil {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Win_create_errhandler", "null function")))
	}
	e := mpi.WinCreateErrhandler(func(w *mpi.Win, err error) {
		h := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
		defer C.free(unsafe.Pointer(h))
		*h = winHandle(w)
		v := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(v))
		*v = code(err)
		C.ftmpi_call_win_errhandler(fn, (*C.MPI_Win)(unsafe.Pointer(h)), v)
	})
	*errhandler = C.uintptr_t(errhs.put(e))
	return cSuccess
}

//export ftmpi_Win_set_errhandler
func ftmpi_Win_set_errhandler(win, errhandler C.uintptr_t) C.int {
	const op = "MPI_Win_set_errhandler"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	e, err := errhOf(errhandler, op)
	if err != nil {
		return code(err)
	}
	return code(w.SetErrhandler(e))
}

//export ftmpi_Win_get_errhandler
func ftmpi_Win_get_errhandler(win C.uintptr_t, errhandler *C.uintptr_t) C.int {
	return winCall("MPI_Win_get_errhandler", win, func(w *mpi.Win) error {
		*errhandler = errhHandle(w.Errhandler())
		return nil
	})
}

//export ftmpi_Win_call_errhandler
func ftmpi_Win_call_errhandler(win C.uintptr_t, errorcode C.int) C.int {
	return winCall("MPI_Win_call_errhandler", win, func(w *mpi.Win) error {
		w.CallErrhandler(errOf(int(errorcode), "MPI_Win_call_errhandler"))
		return nil
	})
}

// The large-count forms (MPI-4.1 12): the same calls with MPI_Count
// counts and MPI_Aint displacement units.

//export ftmpi_Win_create_c
func ftmpi_Win_create_c(base unsafe.Pointer, size, dispUnit C.MPI_Aint, info, comm C.uintptr_t, win *C.uintptr_t) C.int {
	return newWin("MPI_Win_create_c", base, size, int(dispUnit), info, comm, win, false)
}

//export ftmpi_Win_allocate_c
func ftmpi_Win_allocate_c(size, dispUnit C.MPI_Aint, info, comm C.uintptr_t, baseptr unsafe.Pointer, win *C.uintptr_t) C.int {
	if dispUnit > 1<<31-1 {
		return ftmpi_Win_allocate(size, -1, info, comm, baseptr, win) // not positive as an int: MPI_ERR_ARG
	}
	return ftmpi_Win_allocate(size, C.int(dispUnit), info, comm, baseptr, win)
}

//export ftmpi_Put_c
func ftmpi_Put_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, win C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Put", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.PutTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td))
}

//export ftmpi_Get_c
func ftmpi_Get_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, win C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Get", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.GetTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td))
}

//export ftmpi_Accumulate_c
func ftmpi_Accumulate_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, o, win C.uintptr_t) C.int {
	const op = "MPI_Accumulate"
	a, rc := rmaArgs(op, win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	gop, rc := rmaOpOf(o, a.w, op)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.AccumulateTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td, gop))
}

//export ftmpi_Get_accumulate_c
func ftmpi_Get_accumulate_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, res unsafe.Pointer, rcount C.MPI_Count, rdt C.uintptr_t,
	target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, o, win C.uintptr_t) C.int {
	a, rb, rd, gop, rc := getAccArgs("MPI_Get_accumulate", buf, int(count), dt, res, int(rcount), rdt, tdt, o, win)
	if rc != cSuccess {
		return rc
	}
	return code(mpi.GetAccumulateTyped(a.w, a.ob, int(count), a.od, rb, int(rcount), rd, int(target), int(disp), int(tcount), a.td, gop))
}

//export ftmpi_Rput_c
func ftmpi_Rput_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, win C.uintptr_t, request *C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Rput", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RputTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td)
	return rreq(r, err, request)
}

//export ftmpi_Rget_c
func ftmpi_Rget_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, win C.uintptr_t, request *C.uintptr_t) C.int {
	a, rc := rmaArgs("MPI_Rget", win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RgetTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td)
	return rreq(r, err, request)
}

//export ftmpi_Raccumulate_c
func ftmpi_Raccumulate_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, o, win C.uintptr_t, request *C.uintptr_t) C.int {
	const op = "MPI_Raccumulate"
	a, rc := rmaArgs(op, win, buf, int(count), dt, tdt)
	if rc != cSuccess {
		return rc
	}
	gop, rc := rmaOpOf(o, a.w, op)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RaccumulateTyped(a.w, a.ob, int(count), a.od, int(target), int(disp), int(tcount), a.td, gop)
	return rreq(r, err, request)
}

//export ftmpi_Rget_accumulate_c
func ftmpi_Rget_accumulate_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, res unsafe.Pointer, rcount C.MPI_Count, rdt C.uintptr_t,
	target C.int, disp C.MPI_Aint, tcount C.MPI_Count, tdt, o, win C.uintptr_t, request *C.uintptr_t) C.int {
	a, rb, rd, gop, rc := getAccArgs("MPI_Rget_accumulate", buf, int(count), dt, res, int(rcount), rdt, tdt, o, win)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.RgetAccumulateTyped(a.w, a.ob, int(count), a.od, rb, int(rcount), rd, int(target), int(disp), int(tcount), a.td, gop)
	return rreq(r, err, request)
}

//export ftmpi_Win_create_dynamic
func ftmpi_Win_create_dynamic(info, comm C.uintptr_t, win *C.uintptr_t) C.int {
	const op = "MPI_Win_create_dynamic"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if win == nil {
		return fail(c, bad(mpi.ErrArg, op, "win is NULL"))
	}
	in, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	w, err := mpi.WinCreateDynamic(c)
	if err != nil {
		return code(err)
	}
	if in != nil {
		_ = w.SetInfo(in) // fails only on a freed window
	}
	attrs := (*winAttrs)(C.calloc(1, C.size_t(unsafe.Sizeof(winAttrs{}))))
	attrs.size, attrs.unit, attrs.flavor, attrs.model = 0, 1, C.MPI_WIN_FLAVOR_DYNAMIC, C.MPI_WIN_UNIFIED
	winMu.Lock()
	winC[w] = &cwin{attrs: attrs}
	winMu.Unlock()
	*win = winHandle(w)
	return cSuccess
}

//export ftmpi_Win_attach
func ftmpi_Win_attach(win C.uintptr_t, base unsafe.Pointer, size C.MPI_Aint) C.int {
	const op = "MPI_Win_attach"
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	if size < 0 || (base == nil && size > 0) {
		return winFail(w, bad(mpi.ErrArg, op, "base %p with size %d", base, int64(size)))
	}
	var mem []byte
	if size > 0 {
		mem = unsafe.Slice((*byte)(base), int(size))
	}
	return code(w.Attach(mem))
}

//export ftmpi_Win_detach
func ftmpi_Win_detach(win C.uintptr_t, base unsafe.Pointer) C.int {
	return winCall("MPI_Win_detach", win, func(w *mpi.Win) error { return w.Detach(uintptr(base)) })
}

// Shared-memory windows (mpi.Comm.WinAllocateShared): the window memory is
// this process's part of a segment every process of the communicator maps;
// MPI_Win_free unmaps it (package mpi), so cwin.alloc stays false.

// newSharedWin makes the window and records its C facts.
func newSharedWin(op string, size C.MPI_Aint, dispUnit int64, info, comm C.uintptr_t, baseptr unsafe.Pointer, win *C.uintptr_t) C.int {
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if win == nil || baseptr == nil {
		return fail(c, bad(mpi.ErrArg, op, "win or baseptr is NULL"))
	}
	in, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	if dispUnit > 1<<31-1 {
		dispUnit = -1 // not an int: refused (MPI_ERR_ARG) at every process
	}
	w, _, err := c.WinAllocateShared(int(size), int(dispUnit), in)
	if err != nil {
		return code(err)
	}
	base := sharedBase(w, c.Rank())
	attrs := (*winAttrs)(C.calloc(1, C.size_t(unsafe.Sizeof(winAttrs{}))))
	attrs.size, attrs.unit, attrs.flavor, attrs.model = size, C.int(dispUnit), C.MPI_WIN_FLAVOR_SHARED, C.MPI_WIN_UNIFIED
	winMu.Lock()
	winC[w] = &cwin{base: base, attrs: attrs}
	winMu.Unlock()
	*(*unsafe.Pointer)(baseptr) = base
	*win = winHandle(w)
	return cSuccess
}

// sharedBase is the address of rank's part at this process (NULL for an
// empty part, as MPICH answers).
func sharedBase(w *mpi.Win, rank int) unsafe.Pointer {
	_, _, b, err := w.SharedQuery(rank)
	if err != nil || len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(b))
}

//export ftmpi_Win_allocate_shared
func ftmpi_Win_allocate_shared(size C.MPI_Aint, dispUnit C.int, info, comm C.uintptr_t, baseptr unsafe.Pointer, win *C.uintptr_t) C.int {
	return newSharedWin("MPI_Win_allocate_shared", size, int64(dispUnit), info, comm, baseptr, win)
}

//export ftmpi_Win_allocate_shared_c
func ftmpi_Win_allocate_shared_c(size, dispUnit C.MPI_Aint, info, comm C.uintptr_t, baseptr unsafe.Pointer, win *C.uintptr_t) C.int {
	return newSharedWin("MPI_Win_allocate_shared_c", size, int64(dispUnit), info, comm, baseptr, win)
}

// sharedQuery answers MPI_Win_shared_query(_c): rank MPI_PROC_NULL is the
// first process with a non-empty part.
func sharedQuery(op string, win C.uintptr_t, rank C.int, size *C.MPI_Aint, unit *int64, baseptr unsafe.Pointer) C.int {
	w, err := winOf(win, op)
	if err != nil {
		return code(err)
	}
	if size == nil || baseptr == nil {
		return winFail(w, bad(mpi.ErrArg, op, "size or baseptr is NULL"))
	}
	r := int(rank)
	if rank == C.MPI_PROC_NULL {
		r = mpi.ProcNull
	}
	n, u, b, err := w.SharedQuery(r)
	if err != nil {
		return code(err)
	}
	var p unsafe.Pointer // NULL for an empty part
	if len(b) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(b))
	}
	*size, *unit = C.MPI_Aint(n), int64(u)
	*(*unsafe.Pointer)(baseptr) = p
	return cSuccess
}

//export ftmpi_Win_shared_query
func ftmpi_Win_shared_query(win C.uintptr_t, rank C.int, size *C.MPI_Aint, dispUnit *C.int, baseptr unsafe.Pointer) C.int {
	if dispUnit == nil {
		return sharedQuery("MPI_Win_shared_query", win, rank, nil, nil, nil)
	}
	var u int64
	rc := sharedQuery("MPI_Win_shared_query", win, rank, size, &u, baseptr)
	if rc == cSuccess {
		*dispUnit = C.int(u)
	}
	return rc
}

//export ftmpi_Win_shared_query_c
func ftmpi_Win_shared_query_c(win C.uintptr_t, rank C.int, size *C.MPI_Aint, dispUnit *C.MPI_Aint, baseptr unsafe.Pointer) C.int {
	if dispUnit == nil {
		return sharedQuery("MPI_Win_shared_query_c", win, rank, nil, nil, nil)
	}
	var u int64
	rc := sharedQuery("MPI_Win_shared_query_c", win, rank, size, &u, baseptr)
	if rc == cSuccess {
		*dispUnit = C.MPI_Aint(u)
	}
	return rc
}

// The long double types in one-sided accumulates: package mpi carries
// their number to the target, whose library combines them in C
// (coll_cside.c, as the collectives do). The numbers are fixed here, so
// they are the same at every process.
func init() {
	for _, t := range []struct {
		h    uintptr
		id   int
		name string
	}{{0x220, 1, "MPI_LONG_DOUBLE"}, {0x224, 2, "MPI_C_LONG_DOUBLE_COMPLEX"}, {0x225, 2, "MPI_CXX_LONG_DOUBLE_COMPLEX"},
		{0x22d, 3, "MPI_LONG_DOUBLE_INT"}} {
		ldt := ldTypes[t.h]
		d := predefTypes[t.h]
		size := d.Size() // packed elements: MPI_LONG_DOUBLE_INT's 20 bytes, the int after the long double
		mpi.RegisterAccType(d, t.id, t.name, func(o *mpi.Op) bool {
			ldop := ldOps[o]
			return ldop != 0 && C.ftmpi_ld_defined(C.int(ldop), C.int(ldt)) != 0
		}, func(o *mpi.Op, in, inout []byte) {
			if n := len(inout) / size; n > 0 {
				C.ftmpi_ld_reduce(C.int(ldOps[o]), C.int(ldt), unsafe.Pointer(&in[0]), unsafe.Pointer(&inout[0]), C.int64_t(n), C.int64_t(size))
			}
		})
	}
}
