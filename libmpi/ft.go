package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"github.com/ftmpi/ftmpi/mpi"
)

// Process fault tolerance for C (include/ftmpi/ft.h, include/mpi-ext.h):
// ULFM (ulfm.go), run-through stabilization (runthrough.go) and Reinit
// (reinit.go, reinit.c). The semantics are package mpi's; these files
// convert handles and forward. Errors the Go calls return already went
// through the communicator's error handler (code); argument errors found
// here go through it by fail.
//
// Error classes: MPI_ERR_PROC_FAILED (75) and MPI_ERR_REVOKED (77) are Go's
// ErrProcFailed and ErrRevoked (errors.go); MPI_ERR_RANK_FAIL_STOP is
// MPI_ERR_PROC_FAILED (mpi.h), as ErrRankFailStop is ErrProcFailed.

// groupOut stores g as a new group handle in *out (a NULL out is an
// MPI_ERR_ARG error on c).
func groupOut(c *mpi.Comm, op string, out *C.uintptr_t, g *mpi.Group, err error) C.int {
	if out == nil {
		return fail(c, bad(mpi.ErrArg, op, "the group argument is NULL"))
	}
	if err != nil {
		*out = hGroupNull
		return code(err)
	}
	*out = groupHandle(g)
	return cSuccess
}

// groupReq makes the C request of a nonblocking call whose completion
// yields a group, stored in *out then (MPI_Icomm_validate).
func groupReq(r *mpi.RequestOf[*mpi.Group], out *C.uintptr_t) *creq {
	return &creq{r: r.Request, done: func(*mpi.Status) {
		if g, err := r.Wait(); err == nil {
			*out = groupHandle(g)
		} else {
			*out = hGroupNull
		}
	}}
}
