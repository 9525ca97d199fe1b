package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "cside.h"
#include "coll_cside.h"
*/
import "C"

import (
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Reduction operations: the predefined ones are package mpi's; a C user
// operation (MPI_Op_create) is its function pointer, made into an
// mpi.NewDatatypeOp for each call that uses it, so that the function
// receives the datatype handle the program passed.

// cop is a C user operation.
type cop struct {
	fn      unsafe.Pointer
	commute bool
	big     bool // MPI_User_function_c: the length is an MPI_Count
}

var cops = newTable[*cop](kindOp)

// predefOps are the predefined operations by ABI handle value.
var predefOps = map[uintptr]*mpi.Op{
	0x021: mpi.Sum, 0x022: mpi.Min, 0x023: mpi.Max, 0x024: mpi.Prod,
	0x028: mpi.Band, 0x029: mpi.Bor, 0x02a: mpi.Bxor,
	0x030: mpi.Land, 0x031: mpi.Lor, 0x032: mpi.Lxor,
	0x038: mpi.MinLoc, 0x039: mpi.MaxLoc, 0x03c: mpi.Replace, 0x03d: mpi.NoOp,
}

// movedOnly are the C datatypes Go has no type for: the long double ones
// are reduced in C (ldTypes), the others (16-byte Fortran integers and
// reals) only moved.
var movedOnly = map[uintptr]string{
	0x220: "MPI_LONG_DOUBLE", 0x224: "MPI_C_LONG_DOUBLE_COMPLEX", 0x225: "MPI_CXX_LONG_DOUBLE_COMPLEX",
	0x22d: "MPI_LONG_DOUBLE_INT", 0x2e0: "MPI_INTEGER16", 0x2e2: "MPI_REAL16", 0x2eb: "MPI_COMPLEX32",
}

// ldOps and ldTypes are the operations and datatypes of the long double
// reductions (coll_cside.h).
var (
	ldOps = map[*mpi.Op]int{mpi.Sum: C.FTMPI_LD_SUM, mpi.Prod: C.FTMPI_LD_PROD, mpi.Min: C.FTMPI_LD_MIN,
		mpi.Max: C.FTMPI_LD_MAX, mpi.MinLoc: C.FTMPI_LD_MINLOC, mpi.MaxLoc: C.FTMPI_LD_MAXLOC,
		mpi.Land: C.FTMPI_LD_LAND, mpi.Lor: C.FTMPI_LD_LOR, mpi.Lxor: C.FTMPI_LD_LXOR}
	ldTypes = map[uintptr]int{0x220: C.FTMPI_LD_REAL, 0x224: C.FTMPI_LD_COMPLEX, 0x225: C.FTMPI_LD_COMPLEX,
		0x22d: C.FTMPI_LD_INT}
)

// opOf resolves operation handle h for a reduction in op over C datatype
// handle dt, which the Go call sees as d moved by shift bytes (cview). A
// bad handle is an MPI_ERR_OP error (on c's handler; nil: world's).
func opOf(h, dt C.uintptr_t, shift int, c *mpi.Comm, op string) (*mpi.Op, error) {
	raise := func(err error) error {
		if c != nil {
			return c.CallErrhandler(err)
		}
		return worldFail(err)
	}
	if o, ok := predefOps[uintptr(h)]; ok {
		if name, ok := movedOnly[uintptr(dt)]; ok {
			ldop, ldt := ldOps[o], ldTypes[uintptr(dt)]
			if ldop == 0 || ldt == 0 || C.ftmpi_ld_defined(C.int(ldop), C.int(ldt)) == 0 {
				return nil, raise(bad(mpi.ErrOp, op, "%s is not defined on %s", o.Name(), name))
			}
			// long double data, reduced in C (coll_cside.c), in the
			// datatype's layout.
			return mpi.NewDatatypeOp(func(in, inout []byte, origin, count int, d *mpi.Datatype) {
				if count > 0 {
					_, ext := d.Extent()
					C.ftmpi_ld_reduce(C.int(ldop), C.int(ldt), unsafe.Pointer(&in[origin]), unsafe.Pointer(&inout[origin]), C.int64_t(count), C.int64_t(ext))
				}
			}, true), nil
		}
		return o, nil
	}
	if uintptr(h) == hOpNull {
		return nil, raise(bad(mpi.ErrOp, op, "MPI_OP_NULL is not an operation"))
	}
	u, ok := cops.get(uintptr(h))
	if !ok {
		return nil, raise(bad(mpi.ErrOp, op, "invalid operation handle %#x (a %s handle, or freed)", uintptr(h), kindName(uintptr(h))))
	}
	return mpi.NewDatatypeOp(func(in, inout []byte, origin, count int, _ *mpi.Datatype) {
		u.call(in, inout, origin-shift, count, dt)
	}, u.commute), nil
}

// call runs the C function on count elements whose origin is at byte
// origin of in and inout (it may lie outside them: a moved layout).
func (u *cop) call(in, inout []byte, origin, count int, dt C.uintptr_t) {
	if len(in) == 0 || len(inout) == 0 {
		return
	}
	// The arguments live in C memory: a handle is a small integer, which
	// Go must not hold in a pointer variable.
	args := (*[2]C.int64_t)(C.malloc(C.size_t(unsafe.Sizeof([2]C.int64_t{}))))
	defer C.free(unsafe.Pointer(args))
	*(*C.uintptr_t)(unsafe.Pointer(&args[1])) = dt
	a := unsafe.Add(unsafe.Pointer(unsafe.SliceData(in)), origin)
	b := unsafe.Add(unsafe.Pointer(unsafe.SliceData(inout)), origin)
	ph := (*C.MPI_Datatype)(unsafe.Pointer(&args[1]))
	if u.big {
		args[0] = C.int64_t(count)
		C.ftmpi_call_user_op_c(u.fn, a, b, (*C.MPI_Count)(unsafe.Pointer(&args[0])), ph)
		return
	}
	*(*C.int)(unsafe.Pointer(&args[0])) = C.int(count)
	C.ftmpi_call_user_op(u.fn, a, b, (*C.int)(unsafe.Pointer(&args[0])), ph)
}

func opCreate(fn unsafe.Pointer, commute C.int, op *C.uintptr_t, big bool, name string) C.int {
	if fn == nil {
		return code(worldFail(bad(mpi.ErrArg, name, "null user function")))
	}
	if op == nil {
		return code(worldFail(bad(mpi.ErrArg, name, "op is NULL")))
	}
	*op = C.uintptr_t(cops.putNew(&cop{fn: fn, commute: commute != 0, big: big}))
	return cSuccess
}

//export ftmpi_Op_create
func ftmpi_Op_create(fn unsafe.Pointer, commute C.int, op *C.uintptr_t) C.int {
	return opCreate(fn, commute, op, false, "MPI_Op_create")
}

//export ftmpi_Op_create_c
func ftmpi_Op_create_c(fn unsafe.Pointer, commute C.int, op *C.uintptr_t) C.int {
	return opCreate(fn, commute, op, true, "MPI_Op_create_c")
}

//export ftmpi_Op_free
func ftmpi_Op_free(op *C.uintptr_t) C.int {
	const name = "MPI_Op_free"
	if op == nil {
		return code(worldFail(bad(mpi.ErrArg, name, "op is NULL")))
	}
	if _, ok := predefOps[uintptr(*op)]; ok {
		return code(worldFail(bad(mpi.ErrOp, name, "%s is a predefined operation", predefOps[uintptr(*op)].Name())))
	}
	if _, ok := cops.get(uintptr(*op)); !ok {
		return code(worldFail(bad(mpi.ErrOp, name, "invalid operation handle %#x (a %s handle, or freed)", uintptr(*op), kindName(uintptr(*op)))))
	}
	// Calls under way keep their own reference to the function.
	cops.del(uintptr(*op))
	*op = hOpNull
	return cSuccess
}

//export ftmpi_Op_commutative
func ftmpi_Op_commutative(op C.uintptr_t, commute *C.int) C.int {
	const name = "MPI_Op_commutative"
	if commute == nil {
		return code(worldFail(bad(mpi.ErrArg, name, "commute is NULL")))
	}
	if o, ok := predefOps[uintptr(op)]; ok {
		*commute = cbool(o.Commutative() || o == mpi.Replace || o == mpi.NoOp)
		return cSuccess
	}
	u, ok := cops.get(uintptr(op))
	if !ok {
		return code(worldFail(bad(mpi.ErrOp, name, "invalid operation handle %#x (a %s handle, or freed)", uintptr(op), kindName(uintptr(op)))))
	}
	*commute = cbool(u.commute)
	return cSuccess
}
