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

// Windows and files (seed 003, 17.4.2-3, 17.11-12).

// winGroup stores the group of a window call in *out.
func winGroup(w *mpi.Win, op string, out *C.uintptr_t, get func() (*mpi.Group, error)) C.int {
	if out == nil {
		return winFail(w, bad(mpi.ErrArg, op, "failed is NULL"))
	}
	g, err := get()
	if err != nil {
		*out = hGroupNull
		return code(err)
	}
	*out = groupHandle(g)
	return cSuccess
}

// fileGroup stores the group of a file call in *out.
func fileGroup(f *mpi.File, op string, out *C.uintptr_t, get func() (*mpi.Group, error)) C.int {
	if out == nil {
		return fileFail(f, bad(mpi.ErrArg, op, "failed is NULL"))
	}
	g, err := get()
	if err != nil {
		*out = hGroupNull
		return code(err)
	}
	*out = groupHandle(g)
	return cSuccess
}

//export ftmpi_Win_validate
func ftmpi_Win_validate(win C.uintptr_t, failed *C.uintptr_t) C.int {
	w, err := winOf(win, "MPI_Win_validate")
	if err != nil {
		return code(err)
	}
	return winGroup(w, "MPI_Win_validate", failed, w.Validate)
}

//export ftmpi_Iwin_validate
func ftmpi_Iwin_validate(win C.uintptr_t, failed *C.uintptr_t, req *C.uintptr_t) C.int {
	w, err := winOf(win, "MPI_Iwin_validate")
	if err != nil {
		return code(err)
	}
	if failed == nil || req == nil {
		return winFail(w, bad(mpi.ErrArg, "MPI_Iwin_validate", "failed or req is NULL"))
	}
	r, err := w.Ivalidate()
	if err != nil {
		return code(err)
	}
	*failed = hGroupNull
	*req = newReq(groupReq(r, failed))
	return cSuccess
}

//export ftmpi_Win_get_group_failed
func ftmpi_Win_get_group_failed(win C.uintptr_t, failed *C.uintptr_t) C.int {
	w, err := winOf(win, "MPI_Win_get_group_failed")
	if err != nil {
		return code(err)
	}
	return winGroup(w, "MPI_Win_get_group_failed", failed, w.GroupFailed)
}

//export ftmpi_File_validate
func ftmpi_File_validate(fh C.uintptr_t, failed *C.uintptr_t) C.int {
	f, err := fileOf(fh, "MPI_File_validate")
	if err != nil {
		return code(err)
	}
	return fileGroup(f, "MPI_File_validate", failed, f.Validate)
}

//export ftmpi_Ifile_validate
func ftmpi_Ifile_validate(fh C.uintptr_t, failed *C.uintptr_t, req *C.uintptr_t) C.int {
	f, err := fileOf(fh, "MPI_Ifile_validate")
	if err != nil {
		return code(err)
	}
	if failed == nil || req == nil {
		return fileFail(f, bad(mpi.ErrArg, "MPI_Ifile_validate", "failed or req is NULL"))
	}
	r, err := f.Ivalidate()
	if err != nil {
		return code(err)
	}
	*failed = hGroupNull
	*req = newReq(groupReq(r, failed))
	return cSuccess
}

//export ftmpi_File_get_group_failed
func ftmpi_File_get_group_failed(fh C.uintptr_t, failed *C.uintptr_t) C.int {
	f, err := fileOf(fh, "MPI_File_get_group_failed")
	if err != nil {
		return code(err)
	}
	return fileGroup(f, "MPI_File_get_group_failed", failed, f.GroupFailed)
}

//export ftmpi_File_collectives_enabled
func ftmpi_File_collectives_enabled(fh C.uintptr_t, active *C.int) C.int {
	f, err := fileOf(fh, "MPI_File_collectives_enabled")
	if err != nil {
		return code(err)
	}
	if active == nil {
		return fileFail(f, bad(mpi.ErrArg, "MPI_File_collectives_enabled", "active is NULL"))
	}
	ok, err := f.CollectivesEnabled()
	if err != nil {
		return code(err)
	}
	*active = cbool(ok)
	return cSuccess
}
