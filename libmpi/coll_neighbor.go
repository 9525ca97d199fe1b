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

// Neighbourhood collectives: the count arrays have the in- and out-degree
// of the communicator's topology (mpi.Comm.NeighborCounts).

// degrees returns the in- and out-degree of a's communicator.
func (a *call) degrees() (int, int) {
	if !a.ok() {
		return 0, 0
	}
	in, out, err := a.c.NeighborCounts()
	if err != nil {
		a.failf(mpi.ErrTopology, "the communicator has no process topology")
	}
	return in, out
}

func nallgather(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	in, _ := a.degrees()
	sn, rn := a.count(sendcount, "sendcount"), a.count(recvcount, "recvcount")
	sd, rd := a.typ(sendtype), a.typ(recvtype)
	sb, sv, _ := a.buf(sendbuf, sn, sd)
	rb, rv, _ := a.buf(recvbuf, rn*in, rd)
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.NeighborAllgatherTyped(c, sb, sn, sv, rb, rn, rv) },
		func() (*mpi.Request, error) { return mpi.IneighborAllgatherTyped(c, sb, sn, sv, rb, rn, rv) }, nil)
}

//export ftmpi_Neighbor_allgather
func ftmpi_Neighbor_allgather(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t) C.int {
	return nallgather(blockingMode("MPI_Neighbor_allgather"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Ineighbor_allgather
func ftmpi_Ineighbor_allgather(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nallgather(nbMode("MPI_Ineighbor_allgather", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

func nallgatherv(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs carr, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	in, _ := a.degrees()
	sn := a.count(sendcount, "sendcount")
	sd, rd := a.typ(sendtype), a.typ(recvtype)
	sb, sv, _ := a.buf(sendbuf, sn, sd)
	rc := a.ints(recvcounts, in, "recvcounts")
	rds := a.ints(displs, in, "displs")
	rb, rv, rds := a.vbuf(recvbuf, rc, rds, rd)
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.NeighborAllgathervTyped(c, sb, sn, sv, rb, rc, rds, rv) },
		func() (*mpi.Request, error) { return mpi.IneighborAllgathervTyped(c, sb, sn, sv, rb, rc, rds, rv) }, nil)
}

//export ftmpi_Neighbor_allgatherv
func ftmpi_Neighbor_allgatherv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype, comm C.uintptr_t) C.int {
	return nallgatherv(blockingMode("MPI_Neighbor_allgatherv"), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, comm)
}

//export ftmpi_Ineighbor_allgatherv
func ftmpi_Ineighbor_allgatherv(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, displs *C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nallgatherv(nbMode("MPI_Ineighbor_allgatherv", request), sendbuf, int64(sendcount), sendtype, recvbuf, ci(recvcounts), ci(displs), recvtype, comm)
}

func nalltoall(m mode, sendbuf unsafe.Pointer, sendcount int64, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount int64, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	in, out := a.degrees()
	sn, rn := a.count(sendcount, "sendcount"), a.count(recvcount, "recvcount")
	sd, rd := a.typ(sendtype), a.typ(recvtype)
	sb, sv, _ := a.buf(sendbuf, sn*out, sd)
	rb, rv, _ := a.buf(recvbuf, rn*in, rd)
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.NeighborAlltoallTyped(c, sb, sn, sv, rb, rn, rv) },
		func() (*mpi.Request, error) { return mpi.IneighborAlltoallTyped(c, sb, sn, sv, rb, rn, rv) }, nil)
}

//export ftmpi_Neighbor_alltoall
func ftmpi_Neighbor_alltoall(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t) C.int {
	return nalltoall(blockingMode("MPI_Neighbor_alltoall"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Ineighbor_alltoall
func ftmpi_Ineighbor_alltoall(sendbuf unsafe.Pointer, sendcount C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nalltoall(nbMode("MPI_Ineighbor_alltoall", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

func nalltoallv(m mode, sendbuf unsafe.Pointer, sendcounts, sdispls carr, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls carr, recvtype, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	in, out := a.degrees()
	sd, rd := a.typ(sendtype), a.typ(recvtype)
	sc := a.ints(sendcounts, out, "sendcounts")
	sds := a.ints(sdispls, out, "sdispls")
	rc := a.ints(recvcounts, in, "recvcounts")
	rds := a.ints(rdispls, in, "rdispls")
	sb, sv, sds := a.vbuf(sendbuf, sc, sds, sd)
	rb, rv, rds := a.vbuf(recvbuf, rc, rds, rd)
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.NeighborAlltoallvTyped(c, sb, sc, sds, sv, rb, rc, rds, rv) },
		func() (*mpi.Request, error) { return mpi.IneighborAlltoallvTyped(c, sb, sc, sds, sv, rb, rc, rds, rv) }, nil)
}

//export ftmpi_Neighbor_alltoallv
func ftmpi_Neighbor_alltoallv(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtype, comm C.uintptr_t) C.int {
	return nalltoallv(blockingMode("MPI_Neighbor_alltoallv"), sendbuf, ci(sendcounts), ci(sdispls), sendtype, recvbuf, ci(recvcounts), ci(rdispls), recvtype, comm)
}

//export ftmpi_Ineighbor_alltoallv
func ftmpi_Ineighbor_alltoallv(sendbuf unsafe.Pointer, sendcounts, sdispls *C.int, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts, rdispls *C.int, recvtype, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nalltoallv(nbMode("MPI_Ineighbor_alltoallv", request), sendbuf, ci(sendcounts), ci(sdispls), sendtype, recvbuf, ci(recvcounts), ci(rdispls), recvtype, comm)
}

func nalltoallw(m mode, sendbuf unsafe.Pointer, sendcounts carr, sdispls carr, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts carr, rdispls carr, recvtypes *C.uintptr_t, comm C.uintptr_t) C.int {
	a := newCall(m, comm)
	in, out := a.degrees()
	sc := a.ints(sendcounts, out, "sendcounts")
	sds := a.ints(sdispls, out, "sdispls")
	rc := a.ints(recvcounts, in, "recvcounts")
	rds := a.ints(rdispls, in, "rdispls")
	sb, sds, sts := a.wside(sendbuf, sc, sds, sendtypes, "send")
	rb, rds, rts := a.wside(recvbuf, rc, rds, recvtypes, "recv")
	if !a.ok() {
		return a.rc
	}
	c := a.c
	return m.run(c, func() error { return mpi.NeighborAlltoallwTyped(c, sb, sc, sds, sts, rb, rc, rds, rts) },
		func() (*mpi.Request, error) {
			return mpi.IneighborAlltoallwTyped(c, sb, sc, sds, sts, rb, rc, rds, rts)
		}, nil)
}

//export ftmpi_Neighbor_alltoallw
func ftmpi_Neighbor_alltoallw(sendbuf unsafe.Pointer, sendcounts *C.int, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.int, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t) C.int {
	return nalltoallw(blockingMode("MPI_Neighbor_alltoallw"), sendbuf, ci(sendcounts), ca(sdispls), sendtypes, recvbuf, ci(recvcounts), ca(rdispls), recvtypes, comm)
}

//export ftmpi_Ineighbor_alltoallw
func ftmpi_Ineighbor_alltoallw(sendbuf unsafe.Pointer, sendcounts *C.int, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.int, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nalltoallw(nbMode("MPI_Ineighbor_alltoallw", request), sendbuf, ci(sendcounts), ca(sdispls), sendtypes, recvbuf, ci(recvcounts), ca(rdispls), recvtypes, comm)
}
