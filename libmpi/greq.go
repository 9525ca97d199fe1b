package main

// MPI_Isendrecv(_replace) and the generalized requests (MPI_Grequest_*):
// requests whose completion package mpi composes (mpi/request_ext.go).

/*
#include <stdint.h>
#include "cside.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

//export ftmpi_Isendrecv
func ftmpi_Isendrecv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, dest, sendtag C.int,
	recvbuf unsafe.Pointer, recvcount C.int, recvtype C.uintptr_t, source, recvtag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	const op = "MPI_Isendrecv"
	c, sb, sd, rb, rd, rc := sendrecvArgs(op, sendbuf, sendcount, sendtype, sendtag, recvbuf, recvcount, recvtype, recvtag, comm)
	if rc != cSuccess {
		return rc
	}
	r, err := mpi.IsendrecvTyped(c, sb, int(sendcount), sd, int(dest), tagIn(sendtag), rb, int(recvcount), rd, int(source), tagIn(recvtag))
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r})
	return cSuccess
}

//export ftmpi_Isendrecv_replace
func ftmpi_Isendrecv_replace(buf unsafe.Pointer, count C.int, dt C.uintptr_t, dest, sendtag, source, recvtag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	const op = "MPI_Isendrecv_replace"
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
	r, err := mpi.IsendrecvReplaceTyped(c, b, int(count), d, int(dest), tagIn(sendtag), int(source), tagIn(recvtag))
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r})
	return cSuccess
}

// greqs maps a generalized request's C handle to its completion handle
// (MPI_Grequest_complete takes the request handle).
var greqs sync.Map // C.uintptr_t -> *mpi.Grequest

// greqErr is the error of a user callback that returned code v.
func greqErr(v C.int, op string) error {
	if v == cSuccess {
		return nil
	}
	return errOf(int(v), op)
}

//export ftmpi_Grequest_start
func ftmpi_Grequest_start(query, free, cancel unsafe.Pointer, extra unsafe.Pointer, request *C.uintptr_t) C.int {
	if world == nil {
		return C.MPI_ERR_OTHER
	}
	var qf func(*mpi.Status) error
	if query != nil {
		qf = func(st *mpi.Status) error {
			var cs C.MPI_Status
			setStatus(&cs, *st)
			cs.MPI_ERROR = cSuccess
			v := C.ftmpi_call_grequest_query(query, extra, &cs)
			st.Source, st.Tag = int(cs.MPI_SOURCE), int(cs.MPI_TAG)
			if cs.MPI_TAG == C.MPI_ANY_TAG {
				st.Tag = mpi.AnyTag
			}
			st.Bytes = statusBytes(&cs)
			st.Count = st.Bytes
			st.Cancelled = cs.MPI_internal[2] != 0
			if v == cSuccess && cs.MPI_ERROR != cSuccess {
				v = cs.MPI_ERROR
			}
			return greqErr(v, "MPI_Grequest query function")
		}
	}
	var ff func() error
	if free != nil {
		ff = func() error { return greqErr(C.ftmpi_call_grequest_free(free, extra), "MPI_Grequest free function") }
	}
	var cf func(bool) error
	if cancel != nil {
		cf = func(complete bool) error {
			return greqErr(C.ftmpi_call_grequest_cancel(cancel, extra, cbool(complete)), "MPI_Grequest cancel function")
		}
	}
	r, g := world.GrequestStart(qf, ff, cf)
	h := newReq(&creq{r: r})
	greqs.Store(h, g)
	// The completion handle is forgotten once the request is: MPI_Wait
	// or MPI_Request_free ends the request, MPI_Grequest_complete may
	// still come after MPI_Request_free.
	*request = h
	return cSuccess
}

//export ftmpi_Grequest_complete
func ftmpi_Grequest_complete(request C.uintptr_t) C.int {
	v, ok := greqs.LoadAndDelete(request)
	if !ok {
		return code(worldFail(bad(mpi.ErrRequest, "MPI_Grequest_complete", "%#x is not a generalized request that is still to complete", uintptr(request))))
	}
	return code(v.(*mpi.Grequest).Complete())
}
