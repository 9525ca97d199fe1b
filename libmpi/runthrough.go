package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"github.com/ftmpi/ftmpi/mpi"
)

// Run-through stabilization for C (seed 003, chapter 17), as its C
// bindings spell the calls. Each is the Go Comm method of the same name;
// calling one makes the communicator a run-through one (package mpi).
// MPI_ERR_RANK_FAIL_STOP is MPI_ERR_PROC_FAILED (mpi.h).

//export ftmpi_Comm_validate
func ftmpi_Comm_validate(comm C.uintptr_t, failed *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_validate")
	if err != nil {
		return code(err)
	}
	if failed == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_validate", "failed is NULL"))
	}
	g, err := c.Validate()
	return groupOut(c, "MPI_Comm_validate", failed, g, err)
}

//export ftmpi_Icomm_validate
func ftmpi_Icomm_validate(comm C.uintptr_t, failed *C.uintptr_t, req *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Icomm_validate")
	if err != nil {
		return code(err)
	}
	if failed == nil || req == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Icomm_validate", "failed or req is NULL"))
	}
	r, err := c.Ivalidate()
	if err != nil {
		return code(err)
	}
	*failed = hGroupNull
	*req = newReq(groupReq(r, failed))
	return cSuccess
}

//export ftmpi_Comm_ivalidate
func ftmpi_Comm_ivalidate(comm C.uintptr_t, failed *C.uintptr_t, req *C.uintptr_t) C.int {
	return ftmpi_Icomm_validate(comm, failed, req)
}

//export ftmpi_Comm_group_failed
func ftmpi_Comm_group_failed(comm C.uintptr_t, failed *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_group_failed")
	if err != nil {
		return code(err)
	}
	g, err := c.GroupFailed()
	return groupOut(c, "MPI_Comm_group_failed", failed, g, err)
}

//export ftmpi_Comm_remote_group_failed
func ftmpi_Comm_remote_group_failed(comm C.uintptr_t, failed *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_remote_group_failed")
	if err != nil {
		return code(err)
	}
	g, err := c.RemoteGroupFailed()
	return groupOut(c, "MPI_Comm_remote_group_failed", failed, g, err)
}

//export ftmpi_Comm_reenable_any_source
func ftmpi_Comm_reenable_any_source(comm C.uintptr_t, failed *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_reenable_any_source")
	if err != nil {
		return code(err)
	}
	g, err := c.ReenableAnySource()
	return groupOut(c, "MPI_Comm_reenable_any_source", failed, g, err)
}

//export ftmpi_Comm_collectives_enabled
func ftmpi_Comm_collectives_enabled(comm C.uintptr_t, active *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_collectives_enabled")
	if err != nil {
		return code(err)
	}
	if active == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_collectives_enabled", "active is NULL"))
	}
	ok, err := c.CollectivesEnabled()
	if err != nil {
		return code(err)
	}
	*active = cbool(ok)
	return cSuccess
}
