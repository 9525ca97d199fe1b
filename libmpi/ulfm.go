package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"github.com/ftmpi/ftmpi/mpi"
)

// ULFM for C (seed 002 appendix A): the MPI-6 names; the MPIX_ names of
// Open MPI forward to these (gen). Every call is the Go Comm method of the
// same name.

//export ftmpi_Comm_revoke
func ftmpi_Comm_revoke(comm C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_revoke")
	if err != nil {
		return code(err)
	}
	return code(c.Revoke())
}

//export ftmpi_Comm_is_revoked
func ftmpi_Comm_is_revoked(comm C.uintptr_t, flag *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_is_revoked")
	if err != nil {
		return code(err)
	}
	if flag == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_is_revoked", "flag is NULL"))
	}
	*flag = cbool(c.IsRevoked())
	return cSuccess
}

//export ftmpi_Comm_shrink
func ftmpi_Comm_shrink(comm C.uintptr_t, newcomm *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_shrink")
	if err != nil {
		return code(err)
	}
	if newcomm == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_shrink", "newcomm is NULL"))
	}
	nc, err := c.Shrink()
	if err != nil {
		*newcomm = hCommNull
		return code(err)
	}
	*newcomm = commHandle(nc)
	return cSuccess
}

//export ftmpi_Comm_ishrink
func ftmpi_Comm_ishrink(comm C.uintptr_t, newcomm *C.uintptr_t, request *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_ishrink")
	if err != nil {
		return code(err)
	}
	if newcomm == nil || request == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_ishrink", "newcomm or request is NULL"))
	}
	r, err := c.Ishrink()
	if err != nil {
		return code(err)
	}
	*newcomm = hCommNull
	*request = newReq(&creq{r: r.Request, done: func(*mpi.Status) {
		if nc, err := r.Wait(); err == nil {
			*newcomm = commHandle(nc)
		}
	}})
	return cSuccess
}

// agreeIn is the C flag as Go's 64-bit agreement word: the int's 32 bits,
// so that the bitwise AND of the words is the AND of the ints.
func agreeIn(flag C.int) uint64 { return uint64(uint32(int32(flag))) }

func agreeOut(v uint64) C.int { return C.int(int32(uint32(v))) }

//export ftmpi_Comm_agree
func ftmpi_Comm_agree(comm C.uintptr_t, flag *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_agree")
	if err != nil {
		return code(err)
	}
	if flag == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_agree", "flag is NULL"))
	}
	v, err := c.AgreeBits(agreeIn(*flag))
	// The agreed value is valid with MPI_ERR_PROC_FAILED too.
	if err == nil || mpi.ErrorClass(err) == mpi.ErrProcFailed {
		*flag = agreeOut(v)
	}
	return code(err)
}

//export ftmpi_Comm_iagree
func ftmpi_Comm_iagree(comm C.uintptr_t, flag *C.int, request *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_iagree")
	if err != nil {
		return code(err)
	}
	if flag == nil || request == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_iagree", "flag or request is NULL"))
	}
	// The bitwise AND of the C ints (Go's Iagree agrees on a boolean).
	r, err := c.IagreeBits(agreeIn(*flag))
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r.Request, done: func(*mpi.Status) {
		if v, err := r.Wait(); err == nil || mpi.ErrorClass(err) == mpi.ErrProcFailed {
			*flag = agreeOut(v)
		}
	}})
	return cSuccess
}

//export ftmpi_Comm_failure_ack
func ftmpi_Comm_failure_ack(comm C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_failure_ack")
	if err != nil {
		return code(err)
	}
	return code(c.FailureAck())
}

//export ftmpi_Comm_failure_get_acked
func ftmpi_Comm_failure_get_acked(comm C.uintptr_t, failedgrp *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_failure_get_acked")
	if err != nil {
		return code(err)
	}
	g, err := c.FailureGetAcked()
	return groupOut(c, "MPI_Comm_failure_get_acked", failedgrp, g, err)
}

//export ftmpi_Comm_ack_failed
func ftmpi_Comm_ack_failed(comm C.uintptr_t, numToAck C.int, numAcked *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_ack_failed")
	if err != nil {
		return code(err)
	}
	if numAcked == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_ack_failed", "num_acked is NULL"))
	}
	if numToAck < 0 {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_ack_failed", "num_to_ack %d is negative", int(numToAck)))
	}
	n, err := c.AckFailed(int(numToAck))
	if err != nil {
		return code(err)
	}
	*numAcked = C.int(n)
	return cSuccess
}

//export ftmpi_Comm_get_failed
func ftmpi_Comm_get_failed(comm C.uintptr_t, failedgrp *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_get_failed")
	if err != nil {
		return code(err)
	}
	g, err := c.GetFailed()
	return groupOut(c, "MPI_Comm_get_failed", failedgrp, g, err)
}

// Windows and files (seed 002 A.3.2-3): revoke, and the failed group of a
// window (MPI_WIN_GET_FAILED: failure_ack and get_acked in one, as
// one-sided communication has no wildcard to re-enable).

//export ftmpi_Win_revoke
func ftmpi_Win_revoke(win C.uintptr_t) C.int {
	w, err := winOf(win, "MPI_Win_revoke")
	if err != nil {
		return code(err)
	}
	return code(w.Revoke())
}

//export ftmpi_Win_get_failed
func ftmpi_Win_get_failed(win C.uintptr_t, failedgrp *C.uintptr_t) C.int {
	w, err := winOf(win, "MPI_Win_get_failed")
	if err != nil {
		return code(err)
	}
	if failedgrp == nil {
		return winFail(w, bad(mpi.ErrArg, "MPI_Win_get_failed", "failedgrp is NULL"))
	}
	g, err := w.GetFailed()
	if err != nil {
		*failedgrp = hGroupNull
		return code(err)
	}
	*failedgrp = groupHandle(g)
	return cSuccess
}

//export ftmpi_File_revoke
func ftmpi_File_revoke(fh C.uintptr_t) C.int {
	f, err := fileOf(fh, "MPI_File_revoke")
	if err != nil {
		return code(err)
	}
	return code(f.Revoke())
}
