package main

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cside.h"
*/
import "C"

import (
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// The process's MPI state.
var (
	world     *mpi.World
	initOnce  sync.Mutex
	finalized atomic.Bool // the runtime ended: no MPI call works
	// worldModel: MPI_Init was called and MPI_Finalize not yet;
	// worldFinalized: MPI_Finalize was called; worldUsers: the world
	// model and the sessions open (initOnce).
	worldModel     bool
	worldFinalized bool
	worldUsers     int
	threadLvl      = 0 // the level provided, in the ABI's values

	comms = newTable[*mpi.Comm](kindComm)
	reqs  = newTable[*creq](kindRequest)
)

// commOf resolves a communicator handle for op. An invalid handle is an
// MPI_ERR_COMM error raised on MPI_COMM_WORLD's error handler.
func commOf(h C.uintptr_t, op string) (*mpi.Comm, error) {
	if world == nil {
		return nil, bad(mpi.ErrOther, op, "MPI is not initialized (call MPI_Init first)")
	}
	switch uintptr(h) {
	case hWorld:
		return world.CommWorld(), nil
	case hSelf:
		return world.CommSelf(), nil
	case hCommNull:
		return nil, worldFail(bad(mpi.ErrComm, op, "MPI_COMM_NULL is not a communicator"))
	}
	if c, ok := comms.get(uintptr(h)); ok {
		return c, nil
	}
	return nil, worldFail(bad(mpi.ErrComm, op, "invalid communicator handle %#x (%s)", uintptr(h), describe(uintptr(h), kindComm)))
}

// commHandle returns the C handle of c, allocating one if c is new to C.
func commHandle(c *mpi.Comm) C.uintptr_t {
	if c == nil {
		return hCommNull
	}
	if world != nil {
		if c == world.CommWorld() {
			return hWorld
		}
		if c == world.CommSelf() {
			return hSelf
		}
	}
	return C.uintptr_t(comms.put(c))
}

// worldFail raises err, found by the binding before any communicator, on
// MPI_COMM_WORLD's error handler, and returns it.
func worldFail(err error) error {
	if world != nil {
		return world.CommWorld().CallErrhandler(err)
	}
	return err
}

// fail raises err, found by the binding in a call on c, on c's error
// handler and returns its code.
func fail(c *mpi.Comm, err error) C.int {
	if c != nil {
		c.CallErrhandler(err)
	} else {
		worldFail(err)
	}
	return code(err)
}

//export ftmpi_Init
func ftmpi_Init(argc *C.int, argv ***C.char) C.int {
	var provided C.int
	return ftmpi_Init_thread(argc, argv, 0, &provided)
}

//export ftmpi_Init_thread
func ftmpi_Init_thread(argc *C.int, argv ***C.char, required C.int, provided *C.int) C.int {
	initOnce.Lock()
	defer initOnce.Unlock()
	if worldModel || worldFinalized || finalized.Load() {
		return code(bad(mpi.ErrOther, "MPI_Init", "MPI is already initialized (or finalized): MPI_Init may be called once"))
	}
	if err := startWorld(); err != nil {
		return code(err)
	}
	worldModel = true
	if provided != nil {
		*provided = C.MPI_THREAD_MULTIPLE
	}
	return cSuccess
}

// startWorld starts the process's MPI runtime for MPI_Init or the first
// MPI_Session_init (initOnce held); each caller is a user of it, and the
// last to end (MPI_Finalize, MPI_Session_finalize) finalizes it.
func startWorld() error {
	worldUsers++
	if world != nil {
		return nil
	}
	cfg := mpi.DefaultConfig()
	cfg.UntypedMatch = true // MPI's matching rule for C (MPI_PACKED, MPI_BYTE against typed receives)
	w, err := mpi.InitConfig(cfg)
	if err != nil {
		worldUsers--
		return err
	}
	world = w
	threadLvl = C.MPI_THREAD_MULTIPLE
	initCSide()
	return nil
}

// endWorld ends one user of the runtime (initOnce held): the last one
// finalizes it.
func endWorld() error {
	if worldUsers--; worldUsers > 0 {
		return nil
	}
	err := world.Finalize()
	finalized.Store(true)
	return err
}

//export ftmpi_Initialized
func ftmpi_Initialized(flag *C.int) C.int {
	*flag = cbool(worldModel || worldFinalized)
	return cSuccess
}

//export ftmpi_Finalized
func ftmpi_Finalized(flag *C.int) C.int {
	*flag = cbool(worldFinalized || finalized.Load())
	return cSuccess
}

//export ftmpi_Finalize
func ftmpi_Finalize() C.int {
	initOnce.Lock()
	defer initOnce.Unlock()
	if !worldModel || finalized.Load() {
		return code(bad(mpi.ErrOther, "MPI_Finalize", "MPI is not initialized (MPI_Init), or already finalized"))
	}
	// MPI_COMM_SELF's attributes go first, their delete callbacks running
	// while MPI is still usable (MPICH init/attrself).
	if err := world.DeleteSelfAttrs(); err != nil {
		return code(err)
	}
	worldModel = false
	worldFinalized = true
	return code(endWorld())
}

//export ftmpi_Abort
func ftmpi_Abort(comm C.uintptr_t, errorcode C.int) C.int {
	if world == nil {
		os.Exit(int(errorcode))
	}
	world.Abort(int(errorcode))
	return cSuccess
}

//export ftmpi_Query_thread
func ftmpi_Query_thread(provided *C.int) C.int {
	*provided = C.int(threadLvl)
	return cSuccess
}

//export ftmpi_Is_thread_main
func ftmpi_Is_thread_main(flag *C.int) C.int {
	*flag = cbool(C.ftmpi_is_main_thread() != 0)
	return cSuccess
}

//export ftmpi_Comm_rank
func ftmpi_Comm_rank(comm C.uintptr_t, rank *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_rank")
	if err != nil {
		return code(err)
	}
	if rank == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_rank", "rank is NULL"))
	}
	*rank = C.int(c.Rank())
	return cSuccess
}

//export ftmpi_Comm_size
func ftmpi_Comm_size(comm C.uintptr_t, size *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_size")
	if err != nil {
		return code(err)
	}
	if size == nil {
		return fail(c, bad(mpi.ErrArg, "MPI_Comm_size", "size is NULL"))
	}
	*size = C.int(c.Size())
	return cSuccess
}

//export ftmpi_Get_processor_name
func ftmpi_Get_processor_name(name *C.char, resultlen *C.int) C.int {
	n, err := mpi.GetProcessorName()
	if err != nil {
		return code(err)
	}
	*resultlen = C.int(cstr(name, n, C.MPI_MAX_PROCESSOR_NAME))
	return cSuccess
}

//export ftmpi_Get_version
func ftmpi_Get_version(version, subversion *C.int) C.int {
	*version, *subversion = C.MPI_VERSION, C.MPI_SUBVERSION
	return cSuccess
}

//export ftmpi_Get_library_version
func ftmpi_Get_library_version(version *C.char, resultlen *C.int) C.int {
	*resultlen = C.int(cstr(version, "ftmpi libmpi (MPI-5.0 standard ABI; ULFM, run-through stabilization, Reinit): "+mpi.GetLibraryVersion(), C.MPI_MAX_LIBRARY_VERSION_STRING))
	return cSuccess
}

//export ftmpi_Abi_get_version
func ftmpi_Abi_get_version(major, minor *C.int) C.int {
	*major, *minor = C.MPI_ABI_VERSION, C.MPI_ABI_SUBVERSION
	return cSuccess
}

//export ftmpi_Error_string
func ftmpi_Error_string(errorcode C.int, str *C.char, resultlen *C.int) C.int {
	*resultlen = C.int(cstr(str, errString(int(errorcode)), C.MPI_MAX_ERROR_STRING))
	return cSuccess
}

//export ftmpi_Error_class
func ftmpi_Error_class(errorcode C.int, errorclass *C.int) C.int {
	c := classOf(int(errorcode))
	if c < 0 {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Error_class", "%d is not an error code", int(errorcode))))
	}
	*errorclass = C.int(c)
	return cSuccess
}

// cstr copies s into the C buffer p of max bytes (NUL included) and
// returns the length copied.
func cstr(p *C.char, s string, max int) int {
	if p == nil {
		return 0
	}
	if len(s) > max-1 {
		s = s[:max-1]
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(p)), len(s)+1)
	copy(b, s)
	b[len(s)] = 0
	return len(s)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
