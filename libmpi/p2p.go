package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/mpi"
)

// Every call of a C program runs on the C thread that made it, locked to
// it: short waits spin without yielding their processor, which for a
// locked goroutine is two thread hand-offs (transport.SetLockedCallers).
func init() { transport.SetLockedCallers(true) }

// creq is a C request: the Go request and what its completion needs.
type creq struct {
	r *mpi.Request
	// start makes the next operation of a persistent request (MPI_Start);
	// nil for others.
	start func() (*mpi.Request, error)
	// done, if set, runs when the request completes, before its status is
	// returned (a nonblocking collective's copy-back, say).
	done func(st *mpi.Status)
}

// tagIn converts a C tag: MPI_ANY_TAG is the Go AnyTag.
func tagIn(t C.int) int {
	if t == C.MPI_ANY_TAG {
		return mpi.AnyTag
	}
	return int(t)
}

// checkTag rejects the negative tags that are not MPI_ANY_TAG (a receive's
// only wildcard) before they reach Go, where -1 is the wildcard.
func checkTag(c *mpi.Comm, op string, t C.int, recv bool) C.int {
	if t >= 0 || (recv && t == C.MPI_ANY_TAG) {
		return cSuccess
	}
	if t == C.MPI_ANY_TAG {
		return fail(c, bad(mpi.ErrTag, op, "MPI_ANY_TAG is a receive's wildcard, not a tag to send with"))
	}
	return fail(c, bad(mpi.ErrTag, op, "tag %d is negative (valid tags are 0..MPI_TAG_UB, or MPI_ANY_TAG to receive)", int(t)))
}

// setStatus writes st into the C status s (nil: MPI_STATUS_IGNORE).
func setStatus(s *C.MPI_Status, st mpi.Status) {
	if s == nil {
		return
	}
	s.MPI_SOURCE = C.int(st.Source)
	if st.Tag == mpi.AnyTag {
		s.MPI_TAG = C.MPI_ANY_TAG
	} else {
		s.MPI_TAG = C.int(st.Tag)
	}
	if st.Err != nil {
		s.MPI_ERROR = code(st.Err)
	}
	s.MPI_internal[0] = C.int(uint32(st.Bytes))
	s.MPI_internal[1] = C.int(uint32(uint64(st.Bytes) >> 32))
	s.MPI_internal[2] = cbool(st.Cancelled)
}

func statusBytes(s *C.MPI_Status) int {
	return int(uint64(uint32(s.MPI_internal[0])) | uint64(uint32(s.MPI_internal[1]))<<32)
}

// statusAt is element i of a C status array (nil for MPI_STATUSES_IGNORE).
func statusAt(a *C.MPI_Status, i int) *C.MPI_Status {
	if a == nil {
		return nil
	}
	return (*C.MPI_Status)(unsafe.Add(unsafe.Pointer(a), uintptr(i)*unsafe.Sizeof(*a)))
}

// sendArgs resolves the arguments every send and receive has.
func p2pArgs(op string, buf unsafe.Pointer, count C.int, dt, comm C.uintptr_t) (*mpi.Comm, []byte, *mpi.Datatype, C.int) {
	c, err := commOf(comm, op)
	if err != nil {
		return nil, nil, nil, code(err)
	}
	d, err := typeOf(dt, c, op)
	if err != nil {
		return nil, nil, nil, code(err)
	}
	b, v, err := view(buf, int(count), d, op)
	if err != nil {
		return nil, nil, nil, fail(c, err)
	}
	return c, b, v, cSuccess
}

func send(op string, buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, sync bool) C.int {
	c, b, d, rc := p2pArgs(op, buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, op, tag, false); rc != cSuccess {
		return rc
	}
	if sync {
		return code(mpi.SsendTyped(c, b, int(count), d, int(dest), tagIn(tag)))
	}
	return code(mpi.SendTyped(c, b, int(count), d, int(dest), tagIn(tag)))
}

//export ftmpi_Send
func ftmpi_Send(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send("MPI_Send", buf, count, dt, dest, tag, comm, false)
}

//export ftmpi_Ssend
func ftmpi_Ssend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send("MPI_Ssend", buf, count, dt, dest, tag, comm, true)
}

//export ftmpi_Rsend
func ftmpi_Rsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	return send("MPI_Rsend", buf, count, dt, dest, tag, comm, false)
}

//export ftmpi_Recv
func ftmpi_Recv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, source, tag C.int, comm C.uintptr_t, status *C.MPI_Status) C.int {
	c, b, d, rc := p2pArgs("MPI_Recv", buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, "MPI_Recv", tag, true); rc != cSuccess {
		return rc
	}
	st, err := mpi.RecvTyped(c, b, int(count), d, int(source), tagIn(tag))
	setStatus(status, st)
	return code(err)
}

// newReq returns the C handle of a new request.
func newReq(cr *creq) C.uintptr_t { return C.uintptr_t(reqs.putNew(cr)) }

func isend(op string, buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t, sync bool) C.int {
	c, b, d, rc := p2pArgs(op, buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, op, tag, false); rc != cSuccess {
		return rc
	}
	var r *mpi.Request
	var err error
	if sync {
		r, err = mpi.IssendTyped(c, b, int(count), d, int(dest), tagIn(tag))
	} else {
		r, err = mpi.IsendTyped(c, b, int(count), d, int(dest), tagIn(tag))
	}
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r})
	return cSuccess
}

//export ftmpi_Isend
func ftmpi_Isend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return isend("MPI_Isend", buf, count, dt, dest, tag, comm, request, false)
}

//export ftmpi_Issend
func ftmpi_Issend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return isend("MPI_Issend", buf, count, dt, dest, tag, comm, request, true)
}

//export ftmpi_Irsend
func ftmpi_Irsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return isend("MPI_Irsend", buf, count, dt, dest, tag, comm, request, false)
}

//export ftmpi_Irecv
func ftmpi_Irecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, source, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	c, b, d, rc := p2pArgs("MPI_Irecv", buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, "MPI_Irecv", tag, true); rc != cSuccess {
		return rc
	}
	r, err := mpi.IrecvTyped(c, b, int(count), d, int(source), tagIn(tag))
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r})
	return cSuccess
}

//export ftmpi_Send_init
func ftmpi_Send_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return persistent("MPI_Send_init", buf, count, dt, dest, tag, comm, request, func(c *mpi.Comm, b []byte, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IsendTyped(c, b, int(count), d, int(dest), tagIn(tag))
	})
}

//export ftmpi_Ssend_init
func ftmpi_Ssend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return persistent("MPI_Ssend_init", buf, count, dt, dest, tag, comm, request, func(c *mpi.Comm, b []byte, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IssendTyped(c, b, int(count), d, int(dest), tagIn(tag))
	})
}

//export ftmpi_Rsend_init
func ftmpi_Rsend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return ftmpi_Send_init(buf, count, dt, dest, tag, comm, request)
}

//export ftmpi_Bsend_init
func ftmpi_Bsend_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return persistent("MPI_Bsend_init", buf, count, dt, dest, tag, comm, request, func(c *mpi.Comm, b []byte, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IbsendTyped(c, b, int(count), d, int(dest), tagIn(tag))
	})
}

// Buffered mode (MPI-4.1 3.6): the buffer is the program's C memory,
// handed to package mpi as it is (MPI_BSEND_OVERHEAD is more than the
// none it needs).

//export ftmpi_Buffer_attach
func ftmpi_Buffer_attach(buffer unsafe.Pointer, size C.int) C.int {
	if world == nil {
		return code(bad(mpi.ErrOther, "MPI_Buffer_attach", "MPI is not initialized"))
	}
	if size < 0 || (buffer == nil && size > 0) {
		return code(worldFail(bad(mpi.ErrBuffer, "MPI_Buffer_attach", "buffer %p of %d bytes", buffer, int(size))))
	}
	var b []byte
	if size > 0 {
		b = unsafe.Slice((*byte)(buffer), int(size))
	}
	if err := world.BufferAttach(b); err != nil {
		return code(worldFail(err))
	}
	return cSuccess
}

//export ftmpi_Buffer_detach
func ftmpi_Buffer_detach(bufferAddr unsafe.Pointer, size *C.int) C.int {
	if world == nil {
		return code(bad(mpi.ErrOther, "MPI_Buffer_detach", "MPI is not initialized"))
	}
	b := world.BufferDetach()
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	if bufferAddr != nil {
		*(*unsafe.Pointer)(bufferAddr) = p
	}
	if size != nil {
		*size = C.int(len(b))
	}
	return cSuccess
}

//export ftmpi_Bsend
func ftmpi_Bsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	c, b, d, rc := p2pArgs("MPI_Bsend", buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, "MPI_Bsend", tag, false); rc != cSuccess {
		return rc
	}
	return code(mpi.BsendTyped(c, b, int(count), d, int(dest), tagIn(tag)))
}

//export ftmpi_Ibsend
func ftmpi_Ibsend(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	c, b, d, rc := p2pArgs("MPI_Ibsend", buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, "MPI_Ibsend", tag, false); rc != cSuccess {
		return rc
	}
	r, err := mpi.IbsendTyped(c, b, int(count), d, int(dest), tagIn(tag))
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r})
	return cSuccess
}

//export ftmpi_Recv_init
func ftmpi_Recv_init(buf unsafe.Pointer, count C.int, dt C.uintptr_t, source, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return persistent("MPI_Recv_init", buf, count, dt, source, tag, comm, request, func(c *mpi.Comm, b []byte, d *mpi.Datatype) (*mpi.Request, error) {
		return mpi.IrecvTyped(c, b, int(count), d, int(source), tagIn(tag))
	})
}

// persistent makes an inactive persistent request whose every MPI_Start
// posts the operation mk makes.
func persistent(op string, buf unsafe.Pointer, count C.int, dt C.uintptr_t, peer, tag C.int, comm C.uintptr_t, request *C.uintptr_t, mk func(*mpi.Comm, []byte, *mpi.Datatype) (*mpi.Request, error)) C.int {
	c, b, d, rc := p2pArgs(op, buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, op, tag, op == "MPI_Recv_init"); rc != cSuccess {
		return rc
	}
	*request = newReq(&creq{start: func() (*mpi.Request, error) { return mk(c, b, d) }})
	return cSuccess
}

//export ftmpi_Start
func ftmpi_Start(request *C.uintptr_t) C.int {
	cr, ok := reqs.get(uintptr(*request))
	if !ok || cr.start == nil {
		return code(worldFail(bad(mpi.ErrRequest, "MPI_Start", "not a persistent request")))
	}
	if cr.r != nil {
		return code(worldFail(bad(mpi.ErrRequest, "MPI_Start", "the request is active (MPI_Start of an active persistent request)")))
	}
	r, err := cr.start()
	if err != nil {
		return code(err)
	}
	cr.r = r
	return cSuccess
}

//export ftmpi_Startall
func ftmpi_Startall(count C.int, requests *C.uintptr_t) C.int {
	rs := unsafe.Slice(requests, int(count))
	for i := range rs {
		if rc := ftmpi_Start(&rs[i]); rc != cSuccess {
			return rc
		}
	}
	return cSuccess
}

// complete finishes C request *h after its Go request completed with st:
// a persistent request becomes inactive, another one is freed and *h set
// to MPI_REQUEST_NULL.
func complete(h *C.uintptr_t, cr *creq, st *mpi.Status) {
	if cr.done != nil {
		cr.done(st)
	}
	if cr.start != nil {
		cr.r = nil
		return
	}
	reqs.del(uintptr(*h))
	*h = hReqNull
}

// reqOf resolves request handle *h; ok false with rc 0 means an inactive
// or null request (an empty status).
func reqOf(h *C.uintptr_t, op string) (*creq, C.int) {
	if uintptr(*h) == hReqNull {
		return nil, cSuccess
	}
	cr, ok := reqs.get(uintptr(*h))
	if !ok {
		return nil, code(worldFail(bad(mpi.ErrRequest, op, "invalid request handle %#x", uintptr(*h))))
	}
	return cr, cSuccess
}

// completeStatus is complete for a status the caller holds by value: it
// stays on the caller's stack unless cr has a done hook (no allocation per
// MPI_Wait or MPI_Test, TestP2PBindingAllocs).
func completeStatus(h *C.uintptr_t, cr *creq, st mpi.Status) mpi.Status {
	if cr.done != nil {
		hooked := st
		complete(h, cr, &hooked)
		return hooked
	}
	complete(h, cr, nil)
	return st
}

func emptyStatus(s *C.MPI_Status) {
	setStatus(s, mpi.Status{Source: mpi.AnySource, Tag: mpi.AnyTag})
	if s != nil {
		s.MPI_ERROR = cSuccess // MPI 3.7.3: an empty status's error is MPI_SUCCESS
	}
}

//export ftmpi_Wait
func ftmpi_Wait(request *C.uintptr_t, status *C.MPI_Status) C.int {
	cr, rc := reqOf(request, "MPI_Wait")
	if cr == nil || cr.r == nil {
		emptyStatus(status)
		return rc
	}
	st, err := cr.r.Wait()
	if errors.Is(err, mpi.ErrPending) {
		// ULFM: a wildcard receive a failure left pending stays pending
		// (and its handle valid) until it completes or is cancelled.
		setStatus(status, st)
		return code(err)
	}
	setStatus(status, completeStatus(request, cr, st))
	return code(err)
}

//export ftmpi_Test
func ftmpi_Test(request *C.uintptr_t, flag *C.int, status *C.MPI_Status) C.int {
	cr, rc := reqOf(request, "MPI_Test")
	if cr == nil || cr.r == nil {
		*flag = 1
		emptyStatus(status)
		return rc
	}
	st, ok, err := cr.r.Test()
	*flag = cbool(ok)
	if !ok {
		return code(err)
	}
	setStatus(status, completeStatus(request, cr, st))
	return code(err)
}

//export ftmpi_Request_get_status
func ftmpi_Request_get_status(request C.uintptr_t, flag *C.int, status *C.MPI_Status) C.int {
	h := request
	cr, rc := reqOf(&h, "MPI_Request_get_status")
	if cr == nil || cr.r == nil {
		*flag = 1
		emptyStatus(status)
		return rc
	}
	st, ok, err := cr.r.GetStatus()
	*flag = cbool(ok)
	if ok {
		setStatus(status, st)
	}
	return code(err)
}

// goReqs returns the Go requests of a C request array (nil for null and
// inactive ones) with their C records.
func goReqs(count C.int, requests *C.uintptr_t, op string) ([]C.uintptr_t, []*creq, []*mpi.Request, C.int) {
	if count < 0 {
		return nil, nil, nil, code(worldFail(bad(mpi.ErrCount, op, "negative count %d", int(count))))
	}
	if count == 0 {
		return nil, nil, nil, cSuccess
	}
	hs := unsafe.Slice(requests, int(count))
	crs := make([]*creq, count)
	rs := make([]*mpi.Request, count)
	for i := range hs {
		cr, rc := reqOf(&hs[i], op)
		if rc != cSuccess {
			return nil, nil, nil, rc
		}
		crs[i] = cr
		if cr != nil {
			rs[i] = cr.r
		}
	}
	return hs, crs, rs, cSuccess
}

//export ftmpi_Waitall
func ftmpi_Waitall(count C.int, requests *C.uintptr_t, statuses *C.MPI_Status) C.int {
	hs, crs, rs, rc := goReqs(count, requests, "MPI_Waitall")
	if rc != cSuccess || len(hs) == 0 {
		return rc
	}
	sts, err := mpi.Waitall(rs)
	for i := range hs {
		if crs[i] == nil || crs[i].r == nil {
			emptyStatus(statusAt(statuses, i))
			continue
		}
		if rs[i] != nil { // still pending (ErrPending): kept
			if i < len(sts) {
				setStatus(statusAt(statuses, i), sts[i])
			}
			continue
		}
		complete(&hs[i], crs[i], &sts[i])
		setStatus(statusAt(statuses, i), sts[i])
	}
	return code(err)
}

//export ftmpi_Testall
func ftmpi_Testall(count C.int, requests *C.uintptr_t, flag *C.int, statuses *C.MPI_Status) C.int {
	hs, crs, rs, rc := goReqs(count, requests, "MPI_Testall")
	if rc != cSuccess || len(hs) == 0 {
		*flag = 1
		return rc
	}
	sts, ok, err := mpi.Testall(rs)
	*flag = cbool(ok)
	if !ok {
		return code(err)
	}
	for i := range hs {
		if crs[i] == nil || crs[i].r == nil {
			emptyStatus(statusAt(statuses, i))
			continue
		}
		complete(&hs[i], crs[i], &sts[i])
		setStatus(statusAt(statuses, i), sts[i])
	}
	return code(err)
}

//export ftmpi_Waitany
func ftmpi_Waitany(count C.int, requests *C.uintptr_t, index *C.int, status *C.MPI_Status) C.int {
	hs, crs, rs, rc := goReqs(count, requests, "MPI_Waitany")
	if rc != cSuccess {
		return rc
	}
	i, st, err := mpi.Waitany(rs)
	if i == mpi.Undefined || i < 0 {
		*index = C.MPI_UNDEFINED
		emptyStatus(status)
		return code(err)
	}
	*index = C.int(i)
	if rs[i] == nil {
		st = completeStatus(&hs[i], crs[i], st)
	}
	setStatus(status, st)
	return code(err)
}

//export ftmpi_Testany
func ftmpi_Testany(count C.int, requests *C.uintptr_t, index *C.int, flag *C.int, status *C.MPI_Status) C.int {
	hs, crs, rs, rc := goReqs(count, requests, "MPI_Testany")
	if rc != cSuccess {
		return rc
	}
	active := false
	for _, r := range rs {
		active = active || r != nil
	}
	if !active {
		*flag, *index = 1, C.MPI_UNDEFINED
		emptyStatus(status)
		return cSuccess
	}
	i, st, ok, err := mpi.Testany(rs)
	*flag = cbool(ok)
	*index = C.MPI_UNDEFINED
	if ok {
		*index = C.int(i)
		setStatus(status, completeStatus(&hs[i], crs[i], st))
	} else if err != nil && i >= 0 {
		*index = C.int(i)
	}
	return code(err)
}

func some(op string, incount C.int, requests *C.uintptr_t, outcount *C.int, indices *C.int, statuses *C.MPI_Status, wait bool) C.int {
	hs, crs, rs, rc := goReqs(incount, requests, op)
	if rc != cSuccess {
		return rc
	}
	active := false
	for _, r := range rs {
		active = active || r != nil
	}
	if !active {
		*outcount = C.MPI_UNDEFINED
		return cSuccess
	}
	var idx []int
	var sts []mpi.Status
	var err error
	if wait {
		idx, sts, err = mpi.Waitsome(rs)
	} else {
		idx, sts, err = mpi.Testsome(rs)
	}
	*outcount = C.int(len(idx))
	out := unsafe.Slice(indices, max(len(idx), 1))
	for k, i := range idx {
		out[k] = C.int(i)
		if rs[i] == nil {
			complete(&hs[i], crs[i], &sts[k])
		}
		setStatus(statusAt(statuses, k), sts[k])
	}
	return code(err)
}

//export ftmpi_Waitsome
func ftmpi_Waitsome(incount C.int, requests *C.uintptr_t, outcount *C.int, indices *C.int, statuses *C.MPI_Status) C.int {
	return some("MPI_Waitsome", incount, requests, outcount, indices, statuses, true)
}

//export ftmpi_Testsome
func ftmpi_Testsome(incount C.int, requests *C.uintptr_t, outcount *C.int, indices *C.int, statuses *C.MPI_Status) C.int {
	return some("MPI_Testsome", incount, requests, outcount, indices, statuses, false)
}

//export ftmpi_Request_free
func ftmpi_Request_free(request *C.uintptr_t) C.int {
	cr, rc := reqOf(request, "MPI_Request_free")
	if rc != cSuccess {
		return rc
	}
	if cr == nil {
		return code(worldFail(bad(mpi.ErrRequest, "MPI_Request_free", "MPI_REQUEST_NULL")))
	}
	var err error
	if cr.r != nil {
		err = cr.r.Free()
	}
	reqs.del(uintptr(*request))
	*request = hReqNull
	return code(err)
}

//export ftmpi_Cancel
func ftmpi_Cancel(request *C.uintptr_t) C.int {
	cr, rc := reqOf(request, "MPI_Cancel")
	if cr == nil || cr.r == nil {
		return rc
	}
	return code(cr.r.Cancel())
}

//export ftmpi_Test_cancelled
func ftmpi_Test_cancelled(status *C.MPI_Status, flag *C.int) C.int {
	*flag = status.MPI_internal[2]
	return cSuccess
}

//export ftmpi_Get_count
func ftmpi_Get_count(status *C.MPI_Status, dt C.uintptr_t, count *C.int) C.int {
	n, rc := getCount("MPI_Get_count", status, dt)
	if rc == cSuccess {
		*count = C.int(n)
	}
	return rc
}

//export ftmpi_Get_elements
func ftmpi_Get_elements(status *C.MPI_Status, dt C.uintptr_t, count *C.int) C.int {
	var c C.MPI_Count
	rc := ftmpi_Get_elements_x(status, dt, &c)
	*count = C.int(c)
	return rc
}

//export ftmpi_Get_elements_x
func ftmpi_Get_elements_x(status *C.MPI_Status, dt C.uintptr_t, count *C.MPI_Count) C.int {
	d, err := typeOf(dt, nil, "MPI_Get_elements")
	if err != nil {
		return code(err)
	}
	*count = C.MPI_Count(d.Elements(statusBytes(status)))
	return cSuccess
}

//export ftmpi_Status_set_elements
func ftmpi_Status_set_elements(status *C.MPI_Status, dt C.uintptr_t, count C.int) C.int {
	return ftmpi_Status_set_elements_x(status, dt, C.MPI_Count(count))
}

//export ftmpi_Status_set_cancelled
func ftmpi_Status_set_cancelled(status *C.MPI_Status, flag C.int) C.int {
	status.MPI_internal[2] = cbool(flag != 0)
	return cSuccess
}

func setBytes(s *C.MPI_Status, n int) {
	s.MPI_internal[0] = C.int(uint32(n))
	s.MPI_internal[1] = C.int(uint32(uint64(n) >> 32))
}

//export ftmpi_Probe
func ftmpi_Probe(source, tag C.int, comm C.uintptr_t, status *C.MPI_Status) C.int {
	c, err := commOf(comm, "MPI_Probe")
	if err != nil {
		return code(err)
	}
	st, err := c.Probe(int(source), tagIn(tag))
	setStatus(status, st)
	return code(err)
}

//export ftmpi_Iprobe
func ftmpi_Iprobe(source, tag C.int, comm C.uintptr_t, flag *C.int, status *C.MPI_Status) C.int {
	c, err := commOf(comm, "MPI_Iprobe")
	if err != nil {
		return code(err)
	}
	st, ok, err := c.Iprobe(int(source), tagIn(tag))
	*flag = cbool(ok)
	if ok {
		setStatus(status, st)
	}
	return code(err)
}

// sendrecvArgs resolves the arguments of MPI_Sendrecv and MPI_Isendrecv:
// the two buffers laid over by their datatypes, the tags checked.
func sendrecvArgs(op string, sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, sendtag C.int,
	recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, recvtag C.int, comm C.uintptr_t) (c *mpi.Comm, sb []byte, sd *mpi.Datatype, rb []byte, rd *mpi.Datatype, rc C.int) {
	c, rb, rd, rc = p2pArgs(op, recvbuf, recvcount, recvtype, comm)
	if rc != cSuccess {
		return
	}
	if _, sb, sd, rc = p2pArgs(op, sendbuf, sendcount, sendtype, comm); rc != cSuccess {
		return
	}
	if rc = checkTag(c, op, sendtag, false); rc != cSuccess {
		return
	}
	rc = checkTag(c, op, recvtag, true)
	return
}

//export ftmpi_Sendrecv
func ftmpi_Sendrecv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, dest, sendtag C.int,
	recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, source, recvtag C.int, comm C.uintptr_t, status *C.MPI_Status) C.int {
	const op = "MPI_Sendrecv"
	c, sb, sd, rb, rd, rc := sendrecvArgs(op, sendbuf, sendcount, sendtype, sendtag, recvbuf, recvcount, recvtype, recvtag, comm)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.IrecvTyped(c, rb, int(recvcount), rd, int(source), tagIn(recvtag))
	if err != nil {
		return code(err)
	}
	serr := mpi.SendTyped(c, sb, int(sendcount), sd, int(dest), tagIn(sendtag))
	st, rerr := r.Wait()
	setStatus(status, st)
	if serr != nil {
		return code(serr)
	}
	return code(rerr)
}

//export ftmpi_Sendrecv_replace
func ftmpi_Sendrecv_replace(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, sendtag, source, recvtag C.int, comm C.uintptr_t, status *C.MPI_Status) C.int {
	const op = "MPI_Sendrecv_replace"
	c, b, d, rc := p2pArgs(op, buf, count, dt, comm)
	if rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, op, sendtag, false); rc != cSuccess {
		return rc
	}
	if rc := checkTag(c, op, recvtag, true); rc != cSuccess {
		return rc
	}
	tmp := make([]byte, len(b))
	copy(tmp, b)
	r, err := mpi.IrecvTyped(c, b, int(count), d, int(source), tagIn(recvtag))
	if err != nil {
		return code(err)
	}
	serr := mpi.SendTyped(c, tmp, int(count), d, int(dest), tagIn(sendtag))
	st, rerr := r.Wait()
	setStatus(status, st)
	if serr != nil {
		return code(serr)
	}
	return code(rerr)
}
