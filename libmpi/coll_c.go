package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import "unsafe"

// The large-count collectives (MPI-4's _c functions): counts are
// MPI_Count, displacements MPI_Aint; the same calls as coll.go's.
// Generated once from coll.go's and coll_neighbor.go's exports; keep them
// in step.

//export ftmpi_Bcast_c
func ftmpi_Bcast_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return bcast(blockingMode("MPI_Bcast_c"), buf, int64(count), dt, root, comm)
}

//export ftmpi_Ibcast_c
func ftmpi_Ibcast_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return bcast(nbMode("MPI_Ibcast_c", request), buf, int64(count), dt, root, comm)
}

//export ftmpi_Bcast_init_c
func ftmpi_Bcast_init_c(buf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return bcast(persistMode("MPI_Bcast_init_c", request), buf, int64(count), dt, root, comm)
}

//export ftmpi_Reduce_c
func ftmpi_Reduce_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return reduce(blockingMode("MPI_Reduce_c"), sendbuf, recvbuf, int64(count), dt, op, root, comm)
}

//export ftmpi_Ireduce_c
func ftmpi_Ireduce_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return reduce(nbMode("MPI_Ireduce_c", request), sendbuf, recvbuf, int64(count), dt, op, root, comm)
}

//export ftmpi_Reduce_init_c
func ftmpi_Reduce_init_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return reduce(persistMode("MPI_Reduce_init_c", request), sendbuf, recvbuf, int64(count), dt, op, root, comm)
}

//export ftmpi_Allreduce_c
func ftmpi_Allreduce_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t) C.int {
	return allred(blockingMode("MPI_Allreduce_c"), kAllreduce, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Iallreduce_c
func ftmpi_Iallreduce_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(nbMode("MPI_Iallreduce_c", request), kAllreduce, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Allreduce_init_c
func ftmpi_Allreduce_init_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(persistMode("MPI_Allreduce_init_c", request), kAllreduce, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Scan_c
func ftmpi_Scan_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t) C.int {
	return allred(blockingMode("MPI_Scan_c"), kScan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Iscan_c
func ftmpi_Iscan_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(nbMode("MPI_Iscan_c", request), kScan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Scan_init_c
func ftmpi_Scan_init_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(persistMode("MPI_Scan_init_c", request), kScan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Exscan_c
func ftmpi_Exscan_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t) C.int {
	return allred(blockingMode("MPI_Exscan_c"), kExscan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Iexscan_c
func ftmpi_Iexscan_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(nbMode("MPI_Iexscan_c", request), kExscan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Exscan_init_c
func ftmpi_Exscan_init_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allred(persistMode("MPI_Exscan_init_c", request), kExscan, sendbuf, recvbuf, int64(count), dt, op, comm)
}

//export ftmpi_Reduce_scatter_c
func ftmpi_Reduce_scatter_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, counts *C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t) C.int {
	return redScatter(blockingMode("MPI_Reduce_scatter_c"), false, sendbuf, recvbuf, cl(counts), 0, dt, op, comm)
}

//export ftmpi_Ireduce_scatter_c
func ftmpi_Ireduce_scatter_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, counts *C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(nbMode("MPI_Ireduce_scatter_c", request), false, sendbuf, recvbuf, cl(counts), 0, dt, op, comm)
}

//export ftmpi_Reduce_scatter_init_c
func ftmpi_Reduce_scatter_init_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, counts *C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(persistMode("MPI_Reduce_scatter_init_c", request), false, sendbuf, recvbuf, cl(counts), 0, dt, op, comm)
}

//export ftmpi_Reduce_scatter_block_c
func ftmpi_Reduce_scatter_block_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, recvcount C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t) C.int {
	return redScatter(blockingMode("MPI_Reduce_scatter_block_c"), true, sendbuf, recvbuf, carr{}, int64(recvcount), dt, op, comm)
}

//export ftmpi_Ireduce_scatter_block_c
func ftmpi_Ireduce_scatter_block_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, recvcount C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(nbMode("MPI_Ireduce_scatter_block_c", request), true, sendbuf, recvbuf, carr{}, int64(recvcount), dt, op, comm)
}

//export ftmpi_Reduce_scatter_block_init_c
func ftmpi_Reduce_scatter_block_init_c(sendbuf unsafe.Pointer, recvbuf unsafe.Pointer, recvcount C.MPI_Count, dt C.uintptr_t, op C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return redScatter(persistMode("MPI_Reduce_scatter_block_init_c", request), true, sendbuf, recvbuf, carr{}, int64(recvcount), dt, op, comm)
}

//export ftmpi_Reduce_local_c
func ftmpi_Reduce_local_c(inbuf unsafe.Pointer, inoutbuf unsafe.Pointer, count C.MPI_Count, dt C.uintptr_t, op C.uintptr_t) C.int {
	return reduceLocal("MPI_Reduce_local_c", inbuf, inoutbuf, int64(count), dt, op)
}

//export ftmpi_Gather_c
func ftmpi_Gather_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gather(blockingMode("MPI_Gather_c"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Igather_c
func ftmpi_Igather_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return gather(nbMode("MPI_Igather_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Gather_init_c
func ftmpi_Gather_init_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return gather(persistMode("MPI_Gather_init_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Gatherv_c
func ftmpi_Gatherv_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return gatherv(blockingMode("MPI_Gatherv_c"), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, root, comm)
}

//export ftmpi_Igatherv_c
func ftmpi_Igatherv_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return gatherv(nbMode("MPI_Igatherv_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, root, comm)
}

//export ftmpi_Gatherv_init_c
func ftmpi_Gatherv_init_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return gatherv(persistMode("MPI_Gatherv_init_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, root, comm)
}

//export ftmpi_Scatter_c
func ftmpi_Scatter_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return scatter(blockingMode("MPI_Scatter_c"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Iscatter_c
func ftmpi_Iscatter_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return scatter(nbMode("MPI_Iscatter_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Scatter_init_c
func ftmpi_Scatter_init_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return scatter(persistMode("MPI_Scatter_init_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Scatterv_c
func ftmpi_Scatterv_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, displs *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t) C.int {
	return scatterv(blockingMode("MPI_Scatterv_c"), sendbuf, cl(sendcounts), ca(displs), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Iscatterv_c
func ftmpi_Iscatterv_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, displs *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return scatterv(nbMode("MPI_Iscatterv_c", request), sendbuf, cl(sendcounts), ca(displs), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Scatterv_init_c
func ftmpi_Scatterv_init_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, displs *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, root C.int, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return scatterv(persistMode("MPI_Scatterv_init_c", request), sendbuf, cl(sendcounts), ca(displs), sendtype, recvbuf, int64(recvcount), recvtype, root, comm)
}

//export ftmpi_Allgather_c
func ftmpi_Allgather_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return allgather(blockingMode("MPI_Allgather_c"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Iallgather_c
func ftmpi_Iallgather_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allgather(nbMode("MPI_Iallgather_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Allgather_init_c
func ftmpi_Allgather_init_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allgather(persistMode("MPI_Allgather_init_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Allgatherv_c
func ftmpi_Allgatherv_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return allgatherv(blockingMode("MPI_Allgatherv_c"), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, comm)
}

//export ftmpi_Iallgatherv_c
func ftmpi_Iallgatherv_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return allgatherv(nbMode("MPI_Iallgatherv_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, comm)
}

//export ftmpi_Allgatherv_init_c
func ftmpi_Allgatherv_init_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return allgatherv(persistMode("MPI_Allgatherv_init_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, comm)
}

//export ftmpi_Alltoall_c
func ftmpi_Alltoall_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return alltoall(blockingMode("MPI_Alltoall_c"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Ialltoall_c
func ftmpi_Ialltoall_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoall(nbMode("MPI_Ialltoall_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Alltoall_init_c
func ftmpi_Alltoall_init_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoall(persistMode("MPI_Alltoall_init_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Alltoallv_c
func ftmpi_Alltoallv_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return alltoallv(blockingMode("MPI_Alltoallv_c"), sendbuf, cl(sendcounts), ca(sdispls), sendtype, recvbuf, cl(recvcounts), ca(rdispls), recvtype, comm)
}

//export ftmpi_Ialltoallv_c
func ftmpi_Ialltoallv_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallv(nbMode("MPI_Ialltoallv_c", request), sendbuf, cl(sendcounts), ca(sdispls), sendtype, recvbuf, cl(recvcounts), ca(rdispls), recvtype, comm)
}

//export ftmpi_Alltoallv_init_c
func ftmpi_Alltoallv_init_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallv(persistMode("MPI_Alltoallv_init_c", request), sendbuf, cl(sendcounts), ca(sdispls), sendtype, recvbuf, cl(recvcounts), ca(rdispls), recvtype, comm)
}

//export ftmpi_Alltoallw_c
func ftmpi_Alltoallw_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t) C.int {
	return alltoallw(blockingMode("MPI_Alltoallw_c"), sendbuf, cl(sendcounts), ca(sdispls), sendtypes, recvbuf, cl(recvcounts), ca(rdispls), recvtypes, comm)
}

//export ftmpi_Ialltoallw_c
func ftmpi_Ialltoallw_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallw(nbMode("MPI_Ialltoallw_c", request), sendbuf, cl(sendcounts), ca(sdispls), sendtypes, recvbuf, cl(recvcounts), ca(rdispls), recvtypes, comm)
}

//export ftmpi_Alltoallw_init_c
func ftmpi_Alltoallw_init_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t, info C.uintptr_t, request *C.uintptr_t) C.int {
	return alltoallw(persistMode("MPI_Alltoallw_init_c", request), sendbuf, cl(sendcounts), ca(sdispls), sendtypes, recvbuf, cl(recvcounts), ca(rdispls), recvtypes, comm)
}

//export ftmpi_Neighbor_allgather_c
func ftmpi_Neighbor_allgather_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return nallgather(blockingMode("MPI_Neighbor_allgather_c"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Ineighbor_allgather_c
func ftmpi_Ineighbor_allgather_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nallgather(nbMode("MPI_Ineighbor_allgather_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Neighbor_allgatherv_c
func ftmpi_Neighbor_allgatherv_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return nallgatherv(blockingMode("MPI_Neighbor_allgatherv_c"), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, comm)
}

//export ftmpi_Ineighbor_allgatherv_c
func ftmpi_Ineighbor_allgatherv_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, displs *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nallgatherv(nbMode("MPI_Ineighbor_allgatherv_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, cl(recvcounts), ca(displs), recvtype, comm)
}

//export ftmpi_Neighbor_alltoall_c
func ftmpi_Neighbor_alltoall_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return nalltoall(blockingMode("MPI_Neighbor_alltoall_c"), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Ineighbor_alltoall_c
func ftmpi_Ineighbor_alltoall_c(sendbuf unsafe.Pointer, sendcount C.MPI_Count, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcount C.MPI_Count, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nalltoall(nbMode("MPI_Ineighbor_alltoall_c", request), sendbuf, int64(sendcount), sendtype, recvbuf, int64(recvcount), recvtype, comm)
}

//export ftmpi_Neighbor_alltoallv_c
func ftmpi_Neighbor_alltoallv_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t) C.int {
	return nalltoallv(blockingMode("MPI_Neighbor_alltoallv_c"), sendbuf, cl(sendcounts), ca(sdispls), sendtype, recvbuf, cl(recvcounts), ca(rdispls), recvtype, comm)
}

//export ftmpi_Ineighbor_alltoallv_c
func ftmpi_Ineighbor_alltoallv_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtype C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtype C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nalltoallv(nbMode("MPI_Ineighbor_alltoallv_c", request), sendbuf, cl(sendcounts), ca(sdispls), sendtype, recvbuf, cl(recvcounts), ca(rdispls), recvtype, comm)
}

//export ftmpi_Neighbor_alltoallw_c
func ftmpi_Neighbor_alltoallw_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t) C.int {
	return nalltoallw(blockingMode("MPI_Neighbor_alltoallw_c"), sendbuf, cl(sendcounts), ca(sdispls), sendtypes, recvbuf, cl(recvcounts), ca(rdispls), recvtypes, comm)
}

//export ftmpi_Ineighbor_alltoallw_c
func ftmpi_Ineighbor_alltoallw_c(sendbuf unsafe.Pointer, sendcounts *C.MPI_Count, sdispls *C.MPI_Aint, sendtypes *C.uintptr_t, recvbuf unsafe.Pointer, recvcounts *C.MPI_Count, rdispls *C.MPI_Aint, recvtypes *C.uintptr_t, comm C.uintptr_t, request *C.uintptr_t) C.int {
	return nalltoallw(nbMode("MPI_Ineighbor_alltoallw_c", request), sendbuf, cl(sendcounts), ca(sdispls), sendtypes, recvbuf, cl(recvcounts), ca(rdispls), recvtypes, comm)
}
