package main

/*
#include <stdint.h>
#include "include/mpi.h"

int ftmpi_run_resilient(void *fn, void *data);
*/
import "C"

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Reinit for C (seed 000): MPI_Reinit(resilient_fn, data), MPI_Test_failure,
// MPI_ERRORS_REINIT_SYNC and _ASYNC, and MPI_Reinit_state.
//
// The Go side is mpi.Reinit: its resilient function points the C library
// at the epoch's World (MPI_COMM_WORLD and MPI_COMM_SELF are the new
// epoch's) and calls the C resilient function through
// ftmpi_run_resilient (reinit.c), which sets the rollback point.
//
//   - MPI_ERRORS_REINIT_SYNC: failures return errors to C; MPI_Test_failure
//     asks mpi.TestFailure, and when it would roll back (its Rollback
//     panic is recovered here, in Go) returns -1 to reinit.c, which
//     longjmps to the rollback point within C. ftmpi_run_resilient then
//     returns 1 and the Go resilient function rolls back (panics
//     mpi.Rollback in Go frames only, which mpi.Reinit recovers).
//   - MPI_ERRORS_REINIT_ASYNC: package mpi's handler rolls back at once in a
//     blocked MPI call and at the next MPI call that fails, by panicking
//     with mpi.Rollback in that call. The call was made from the C
//     resilient function, itself called from Go, so the Go runtime unwinds
//     the panic through the C frames of the resilient function (a panic in
//     a cgo callback unwinds to the Go caller of the C code) to
//     mpi.Reinit's recover. No longjmp crosses a Go frame, and no signal is
//     used: C code computing without MPI calls rolls back at its next MPI
//     call that fails (after the failure every call on MPI_COMM_WORLD
//     does), not in the middle of the computation.

// The Reinit error handlers' handles (ft.h).
const (
	hErrReinitSync  = 0x150
	hErrReinitAsync = 0x151
)

func init() {
	predefErrh[hErrReinitSync] = mpi.ErrorsReinitSync
	predefErrh[hErrReinitAsync] = mpi.ErrorsReinitAsync
}

// reinitState is the state of the running resilient function
// (MPI_Reinit_state); -1 outside MPI_Reinit.
var reinitState atomic.Int32

func init() { reinitState.Store(-1) }

//export ftmpi_reinit_go
func ftmpi_reinit_go(fn, data unsafe.Pointer) C.int {
	const op = "MPI_Reinit"
	if world == nil {
		return code(bad(mpi.ErrOther, op, "MPI is not initialized (call MPI_Init first)"))
	}
	if fn == nil {
		return code(worldFail(bad(mpi.ErrArg, op, "resilient_fn is NULL")))
	}
	err := mpi.Reinit(world, func(_ context.Context, w *mpi.World, state mpi.ReinitState) error {
		world = w // MPI_COMM_WORLD and MPI_COMM_SELF are this epoch's
		reinitState.Store(int32(state))
		if C.ftmpi_run_resilient(fn, data) != 0 {
			// MPI_Test_failure longjmped back to the rollback point.
			panic(&mpi.Rollback{Epoch: w.Epoch(), Reason: "MPI_Test_failure found a failure"})
		}
		return nil
	})
	reinitState.Store(-1)
	return code(err)
}

// ftmpi_test_failure_go is MPI_Test_failure's Go side: -1 means roll back
// (reinit.c longjmps), otherwise an MPI code.
//
//export ftmpi_test_failure_go
func ftmpi_test_failure_go() (rc C.int) {
	if world == nil {
		return code(bad(mpi.ErrOther, "MPI_Test_failure", "MPI is not initialized (call MPI_Init first)"))
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(*mpi.Rollback); !ok {
				panic(r)
			}
			rc = -1
		}
	}()
	return code(mpi.TestFailure(world))
}

//export ftmpi_Reinit_state
func ftmpi_Reinit_state(state *C.int) C.int {
	if state == nil {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Reinit_state", "state is NULL")))
	}
	s := reinitState.Load()
	if s < 0 {
		return code(worldFail(bad(mpi.ErrOther, "MPI_Reinit_state", "not inside MPI_Reinit's resilient function")))
	}
	*state = C.int(s)
	return cSuccess
}
