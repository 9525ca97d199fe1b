package main

/*
#include "cside.h"
*/
import "C"

import "github.com/ftmpi/ftmpi/mpi"

// initCSide records the facts the C side keeps (the main thread, the
// rank and size of MPI_COMM_WORLD: fast.c).
func initCSide() {
	C.ftmpi_cside_init()
	C.ftmpi_fast_init(C.int(world.Rank()), C.int(world.Size()))
}

// ftmpi_unsupported_go is the answer of every function declared in mpi.h
// that ftmpi does not implement: MPI_ERR_UNSUPPORTED_OPERATION on
// MPI_COMM_WORLD's error handler, with a message naming the function.
//
//export ftmpi_unsupported_go
func ftmpi_unsupported_go(name *C.char) C.int {
	return code(worldFail(bad(mpi.ErrUnsupportedOperation, C.GoString(name), "%s is not implemented by ftmpi's C library", C.GoString(name))))
}
