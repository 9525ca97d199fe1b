package main

/*
#include <stdlib.h>
#include "cside.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

var errhs = newTable[*mpi.Errhandler](kindErrhandler)

// predefErrh are the predefined error handlers by ABI value; more are
// added by the fault-tolerance calls (MPI_ERRORS_REINIT_*: reinit.go).
var predefErrh = map[uintptr]*mpi.Errhandler{
	hErrFatal:  mpi.ErrorsAreFatal,
	hErrReturn: mpi.ErrorsReturn,
	hErrAbort:  mpi.ErrorsAreFatal,
}

func errhOf(h C.uintptr_t, op string) (*mpi.Errhandler, error) {
	if e, ok := predefErrh[uintptr(h)]; ok {
		return e, nil
	}
	if e, ok := errhs.get(uintptr(h)); ok {
		return e, nil
	}
	return nil, worldFail(bad(mpi.ErrArg, op, "invalid error handler handle %#x", uintptr(h)))
}

func errhHandle(e *mpi.Errhandler) C.uintptr_t {
	for h, p := range predefErrh {
		if p == e && h != hErrAbort {
			return C.uintptr_t(h)
		}
	}
	return C.uintptr_t(errhs.put(e))
}

//export ftmpi_Comm_create_errhandler
func ftmpi_Comm_create_errhandler(fn unsafe.Pointer, errhandler *C.uintptr_t) C.int {
	if fn == nil {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Comm_create_errhandler", "null function")))
	}
	e := mpi.NewErrhandler(func(c *mpi.Comm, err error) {
		h := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
		defer C.free(unsafe.Pointer(h))
		*h = commHandle(c)
		v := (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(v))
		*v = code(err)
		C.ftmpi_call_comm_errhandler(fn, (*C.MPI_Comm)(unsafe.Pointer(h)), v)
	})
	*errhandler = C.uintptr_t(errhs.put(e))
	return cSuccess
}

//export ftmpi_Errhandler_create
func ftmpi_Errhandler_create(fn unsafe.Pointer, errhandler *C.uintptr_t) C.int {
	return ftmpi_Comm_create_errhandler(fn, errhandler)
}

//export ftmpi_Comm_set_errhandler
func ftmpi_Comm_set_errhandler(comm, errhandler C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_set_errhandler")
	if err != nil {
		return code(err)
	}
	e, err := errhOf(errhandler, "MPI_Comm_set_errhandler")
	if err != nil {
		return code(err)
	}
	return code(c.SetErrhandler(e))
}

//export ftmpi_Errhandler_set
func ftmpi_Errhandler_set(comm, errhandler C.uintptr_t) C.int {
	return ftmpi_Comm_set_errhandler(comm, errhandler)
}

//export ftmpi_Comm_get_errhandler
func ftmpi_Comm_get_errhandler(comm C.uintptr_t, errhandler *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_get_errhandler")
	if err != nil {
		return code(err)
	}
	*errhandler = errhHandle(c.Errhandler())
	return cSuccess
}

//export ftmpi_Errhandler_get
func ftmpi_Errhandler_get(comm C.uintptr_t, errhandler *C.uintptr_t) C.int {
	return ftmpi_Comm_get_errhandler(comm, errhandler)
}

//export ftmpi_Errhandler_free
func ftmpi_Errhandler_free(errhandler *C.uintptr_t) C.int {
	if _, ok := predefErrh[uintptr(*errhandler)]; !ok {
		if _, ok := errhs.get(uintptr(*errhandler)); !ok {
			return code(worldFail(bad(mpi.ErrArg, "MPI_Errhandler_free", "invalid error handler handle %#x", uintptr(*errhandler))))
		}
		// The handler stays valid while communicators use it (the Go value
		// is referenced by them); only the handle goes.
		errhs.del(uintptr(*errhandler))
	}
	*errhandler = hErrhNull
	return cSuccess
}

//export ftmpi_Comm_call_errhandler
func ftmpi_Comm_call_errhandler(comm C.uintptr_t, errorcode C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_call_errhandler")
	if err != nil {
		return code(err)
	}
	c.CallErrhandler(errOf(int(errorcode), "MPI_Comm_call_errhandler"))
	return cSuccess
}

//export ftmpi_Add_error_class
func ftmpi_Add_error_class(errorclass *C.int) C.int {
	userMu.Lock()
	defer userMu.Unlock()
	v := userNext
	userNext++
	userClassOf[v] = v
	*errorclass = C.int(v)
	return cSuccess
}

//export ftmpi_Add_error_code
func ftmpi_Add_error_code(errorclass C.int, errorcode *C.int) C.int {
	userMu.Lock()
	defer userMu.Unlock()
	cl := int(errorclass)
	if _, ok := userClassOf[cl]; !ok && (cl < 0 || cl > cErrLastcode) {
		return code(bad(mpi.ErrArg, "MPI_Add_error_code", "%d is not an error class", cl))
	}
	v := userNext
	userNext++
	userClassOf[v] = cl
	*errorcode = C.int(v)
	return cSuccess
}

//export ftmpi_Add_error_string
func ftmpi_Add_error_string(errorcode C.int, str *C.char) C.int {
	v := int(errorcode)
	if v < 0x100 {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Add_error_string", "%d is a predefined error code", v)))
	}
	userMu.Lock()
	defer userMu.Unlock()
	if _, ok := userClassOf[v]; !ok {
		return code(bad(mpi.ErrArg, "MPI_Add_error_string", "%d is not an error code", v))
	}
	userStrings[v] = C.GoString(str)
	return cSuccess
}

// lastUsedCode is the MPI_LASTUSEDCODE attribute.
func lastUsedCode() int {
	userMu.Lock()
	defer userMu.Unlock()
	return userNext - 1
}

//export ftmpi_Alloc_mem
func ftmpi_Alloc_mem(size C.MPI_Aint, info C.uintptr_t, baseptr unsafe.Pointer) C.int {
	if size < 0 {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Alloc_mem", "negative size %d", int64(size))))
	}
	p := C.malloc(C.size_t(max(size, 1)))
	if p == nil {
		return code(worldFail(bad(mpi.ErrArg, "MPI_Alloc_mem", "out of memory for %d bytes", int64(size))))
	}
	*(*unsafe.Pointer)(baseptr) = p
	return cSuccess
}

//export ftmpi_Free_mem
func ftmpi_Free_mem(base unsafe.Pointer) C.int {
	C.free(base)
	return cSuccess
}

// removeUser is MPI_Remove_error_class/code (MPI-4.1 9.5): v must be a
// user class (isClass) or a user code that is not a class; a class with
// codes still attached cannot go.
func removeUser(op string, v int, isClass bool) C.int {
	userMu.Lock()
	defer userMu.Unlock()
	cl, ok := userClassOf[v]
	if !ok || (cl == v) != isClass {
		what := "a user-defined error code"
		if isClass {
			what = "a user-defined error class"
		}
		return code(bad(mpi.ErrArg, op, "%d is not %s (MPI_Add_error_class/code)", v, what))
	}
	if isClass {
		for c, k := range userClassOf {
			if k == v && c != v {
				return code(bad(mpi.ErrArg, op, "error class %d still has code %d (remove its codes first)", v, c))
			}
		}
	}
	delete(userClassOf, v)
	delete(userStrings, v)
	return cSuccess
}

//export ftmpi_Remove_error_class
func ftmpi_Remove_error_class(errorclass C.int) C.int {
	return removeUser("MPI_Remove_error_class", int(errorclass), true)
}

//export ftmpi_Remove_error_code
func ftmpi_Remove_error_code(errorcode C.int) C.int {
	return removeUser("MPI_Remove_error_code", int(errorcode), false)
}

//export ftmpi_Remove_error_string
func ftmpi_Remove_error_string(errorcode C.int) C.int {
	userMu.Lock()
	defer userMu.Unlock()
	if _, ok := userClassOf[int(errorcode)]; !ok {
		return code(bad(mpi.ErrArg, "MPI_Remove_error_string", "%d is not a user-defined error code", int(errorcode)))
	}
	delete(userStrings, int(errorcode))
	return cSuccess
}

// MPICH's names of the same calls (its test suite's errhan/adderr uses them).

//export ftmpix_Delete_error_class
func ftmpix_Delete_error_class(errorclass C.int) C.int { return ftmpi_Remove_error_class(errorclass) }

//export ftmpix_Delete_error_code
func ftmpix_Delete_error_code(errorcode C.int) C.int { return ftmpi_Remove_error_code(errorcode) }

//export ftmpix_Delete_error_string
func ftmpix_Delete_error_string(errorcode C.int) C.int { return ftmpi_Remove_error_string(errorcode) }
