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

// The large-count forms of point-to-point (MPI-4.0 _c, _x): counts are
// MPI_Count. Messages of more than INT_MAX elements are not supported
// (MPI_ERR_COUNT naming the limit); statuses carry 64-bit byte counts, so
// the status calls take any count.

// smallCount converts a large count for op, or reports it too large.
func smallCount(count C.MPI_Count, op string) (C.int, C.int) {
	if count > math.MaxInt32 {
		return 0, code(worldFail(bad(mpi.ErrCount, op, "count %d above INT_MAX: messages of more than 2^31-1 elements are not supported", int64(count))))
	}
	return C.int(count), cSuccess
}

//export ftmpi_Send_c
func ftmpi_Send_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	n, rc := smallCount(count, "MPI_Send_c")
	if rc != cSuccess {
		return rc
	}
	return send("MPI_Send_c", buf, n, dt, dest, tag, comm, false)
}

//export ftmpi_Ssend_c
func ftmpi_Ssend_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t) C.int {
	n, rc := smallCount(count, "MPI_Ssend_c")
	if rc != cSuccess {
		return rc
	}
	return send("MPI_Ssend_c", buf, n, dt, dest, tag, comm, true)
}

//export ftmpi_Recv_c
func ftmpi_Recv_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, source, tag C.int, comm C.uintptr_t, status *C.MPI_Status) C.int {
	n, rc := smallCount(count, "MPI_Recv_c")
	if rc != cSuccess {
		return rc
	}
	return ftmpi_Recv(buf, n, dt, source, tag, comm, status)
}

//export ftmpi_Isend_c
func ftmpi_Isend_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, dest, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	n, rc := smallCount(count, "MPI_Isend_c")
	if rc != cSuccess {
		return rc
	}
	return isend("MPI_Isend_c", buf, n, dt, dest, tag, comm, request, false)
}

//export ftmpi_Irecv_c
func ftmpi_Irecv_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, source, tag C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	n, rc := smallCount(count, "MPI_Irecv_c")
	if rc != cSuccess {
		return rc
	}
	return ftmpi_Irecv(buf, n, dt, source, tag, comm, request)
}

//export ftmpi_Get_count_c
func ftmpi_Get_count_c(status *C.MPI_Status, dt C.uintptr_t, count *C.MPI_Count) C.int {
	n, rc := getCount("MPI_Get_count_c", status, dt)
	if rc == cSuccess {
		*count = C.MPI_Count(n)
	}
	return rc
}

// getCount is MPI_Get_count of op: the whole elements of dt in status's
// bytes, MPI_UNDEFINED for a partial one.
func getCount(op string, status *C.MPI_Status, dt C.uintptr_t) (int, C.int) {
	d, err := typeOf(dt, nil, op)
	if err != nil {
		return 0, code(err)
	}
	n := statusBytes(status)
	switch {
	case d.Size() == 0:
		return 0, cSuccess
	case n%d.Size() != 0:
		return C.MPI_UNDEFINED, cSuccess
	}
	return n / d.Size(), cSuccess
}

//export ftmpi_Get_elements_c
func ftmpi_Get_elements_c(status *C.MPI_Status, dt C.uintptr_t, count *C.MPI_Count) C.int {
	return ftmpi_Get_elements_x(status, dt, count)
}

//export ftmpi_Status_set_elements_x
func ftmpi_Status_set_elements_x(status *C.MPI_Status, dt C.uintptr_t, count C.MPI_Count) C.int {
	d, err := typeOf(dt, nil, "MPI_Status_set_elements_x")
	if err != nil {
		return code(err)
	}
	if count < 0 {
		return code(worldFail(bad(mpi.ErrCount, "MPI_Status_set_elements_x", "negative count %d", int64(count))))
	}
	setBytes(status, int(count)*d.Size()/max(1, d.Elements(d.Size())))
	return cSuccess
}

//export ftmpi_Status_set_elements_c
func ftmpi_Status_set_elements_c(status *C.MPI_Status, dt C.uintptr_t, count C.MPI_Count) C.int {
	return ftmpi_Status_set_elements_x(status, dt, count)
}
