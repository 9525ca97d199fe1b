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

// msgs holds the messages matched probes took (MPI_Message); the ABI's
// MPI_MESSAGE_NO_PROC stands for mpi.MessageNoProc.
var msgs = newTable[*mpi.Message](kindMessage)

func msgHandle(m *mpi.Message) C.uintptr_t {
	if m == mpi.MessageNoProc {
		return hMsgNoProc
	}
	return C.uintptr_t(msgs.putNew(m))
}

// msgOf resolves *h and sets it to MPI_MESSAGE_NULL: a message is received
// once (MPI 3.8.3).
func msgOf(h *C.uintptr_t, op string) (*mpi.Message, error) {
	v := uintptr(*h)
	if v == hMsgNoProc {
		*h = hMsgNull
		return mpi.MessageNoProc, nil
	}
	m, ok := msgs.get(v)
	if !ok {
		what := describe(v, kindMessage)
		if v == hMsgNull {
			what = "MPI_MESSAGE_NULL"
		}
		return nil, worldFail(bad(mpi.ErrRequest, op, "invalid message handle %#x (%s)", v, what))
	}
	msgs.del(v)
	*h = hMsgNull
	return m, nil
}

//export ftmpi_Mprobe
func ftmpi_Mprobe(source, tag C.int, comm C.uintptr_t, message *C.uintptr_t, status *C.MPI_Status) C.int {
	c, err := commOf(comm, "MPI_Mprobe")
	if err != nil {
		return code(err)
	}
	if rc := checkTag(c, "MPI_Mprobe", tag, true); rc != cSuccess {
		return rc
	}
	m, st, err := c.Mprobe(int(source), tagIn(tag))
	if err != nil {
		return code(err)
	}
	*message = msgHandle(m)
	setStatus(status, st)
	return cSuccess
}

//export ftmpi_Improbe
func ftmpi_Improbe(source, tag C.int, comm C.uintptr_t, flag *C.int, message *C.uintptr_t, status *C.MPI_Status) C.int {
	c, err := commOf(comm, "MPI_Improbe")
	if err != nil {
		return code(err)
	}
	if rc := checkTag(c, "MPI_Improbe", tag, true); rc != cSuccess {
		return rc
	}
	m, st, ok, err := c.Improbe(int(source), tagIn(tag))
	*flag = cbool(ok)
	if err != nil || !ok {
		return code(err)
	}
	*message = msgHandle(m)
	setStatus(status, st)
	return cSuccess
}

// mrecvView lays the receive buffer out for a matched receive: the Go
// calls take a plain slice, so a datatype whose data is not contiguous
// gets a contiguous staging buffer, and unpack (non-nil then) lays the
// received elements out after the receive completed.
func mrecvView(op string, buf unsafe.Pointer, count C.int, dt C.uintptr_t) ([]byte, func(st *mpi.Status), C.int) {
	d, err := typeOf(dt, nil, op)
	if err != nil {
		return nil, nil, code(err)
	}
	b, v, err := view(buf, int(count), d, op)
	if err != nil {
		return nil, nil, code(worldFail(err))
	}
	n := int(count) * v.Size()
	lo, text := v.TrueExtent()
	if _, ext := v.Extent(); lo == 0 && text == v.Size() && ext == v.Size() {
		return b[:n], nil, cSuccess
	}
	stage := make([]byte, n)
	unpack := func(st *mpi.Status) {
		if st.Err != nil || v.Size() == 0 {
			return
		}
		// Whole elements received (a shorter message fills fewer).
		got := min(st.Bytes, n) / v.Size()
		if _, err := mpi.Unpack(stage, b, got, v); err != nil {
			st.Err = err
		}
	}
	return stage, unpack, cSuccess
}

//export ftmpi_Mrecv
func ftmpi_Mrecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, message *C.uintptr_t, status *C.MPI_Status) C.int {
	const op = "MPI_Mrecv"
	b, unpack, rc := mrecvView(op, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	m, err := msgOf(message, op)
	if err != nil {
		return code(err)
	}
	st, err := mpi.Mrecv(m, b)
	if err == nil && unpack != nil {
		unpack(&st)
		err = st.Err
	}
	setStatus(status, st)
	return code(err)
}

//export ftmpi_Imrecv
func ftmpi_Imrecv(buf unsafe.Pointer, count C.int, dt C.uintptr_t, message *C.uintptr_t, request *C.uintptr_t) C.int {
	const op = "MPI_Imrecv"
	b, unpack, rc := mrecvView(op, buf, count, dt)
	if rc != cSuccess {
		return rc
	}
	m, err := msgOf(message, op)
	if err != nil {
		return code(err)
	}
	r, err := mpi.Imrecv(m, b)
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r, done: unpack})
	return cSuccess
}
