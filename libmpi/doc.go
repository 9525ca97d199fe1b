// Command libmpi is ftmpi's C library: built with -buildmode=c-shared it is
// libmpi.so (and libmpi_abi.so.1), the MPI-5.0 standard ABI over the same
// runtime as the Go API (package mpi), with ULFM, run-through stabilization
// and Reinit for C programs.
//
// How it maps C to Go:
//
//   - Handles. A C handle (MPI_Comm, MPI_Datatype, ...) is an integer in a
//     pointer type, as the standard ABI has it. Predefined handles have the
//     ABI's fixed values below 0x1000; the others are indices into one table
//     per kind (handles.go), with the kind in the high bits so that a handle
//     of another kind is an error, not a crash. The Go side takes handles as
//     uintptr, never as pointers (the Go runtime must not see small integers
//     in pointer variables).
//   - Calls. include/mpi.h declares the functions by area (include/ftmpi);
//     gen/ writes zbind.c from those declarations: for every function its
//     PMPI_ definition, which converts handles and forwards to the Go
//     export ftmpi_<name> (or, where none exists yet, returns
//     MPI_ERR_UNSUPPORTED_OPERATION with a message naming the function),
//     and MPI_ as a weak alias of it, for profiling tools.
//   - Errors. Every error is an mpi.Error; its class maps to the ABI's
//     class value and its message is kept for MPI_Error_string (errors.go).
//     Errors the binding finds itself (a bad handle, a null buffer with a
//     non-zero count) go through the communicator's error handler as the Go
//     API's own errors do, so MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN and
//     handlers written in C behave the same for both.
//   - Callbacks. C functions (error handlers, reduction operations,
//     attribute callbacks, Reinit's resilient function) are called through
//     small C trampolines in cside.c; the Go side never calls a C function
//     pointer directly.
//   - Threads. Any C thread may call in (MPI_THREAD_MULTIPLE); cgo gives each
//     call a goroutine on that thread, and the tables are safe for
//     concurrent use.
//
// The semantics live once, in package mpi: this package converts and
// forwards, and must not implement MPI behaviour of its own.
package main

func main() {}
