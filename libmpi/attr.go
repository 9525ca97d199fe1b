package main

/*
#include <stdint.h>
#include <stdlib.h>
#include "include/mpi.h"
#include "comm_cside.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Attribute caching on communicators: keyvals are handles of the keyvals
// table (a C int), attribute values are C pointers kept as uintptr (they
// are often small integers), and the copy and delete callbacks written in
// C run through the trampolines of comm_cside.c. The predefined keys
// (MPI_TAG_UB ...) give a pointer to an int that stays valid.

// ckey is a keyval made by C.
type ckey struct {
	k      *mpi.Keyval
	handle C.int
}

var keyvals = newTable[*ckey](kindKeyval)

// predefKeys are the predefined communicator attributes by key value.
var predefKeys = map[C.int]*mpi.Keyval{
	C.MPI_TAG_UB:          mpi.AttrTagUB,
	C.MPI_IO:              mpi.AttrIO,
	C.MPI_HOST:            mpi.AttrHost,
	C.MPI_WTIME_IS_GLOBAL: mpi.AttrWtimeIsGlobal,
	C.MPI_APPNUM:          mpi.AttrAppNum,
	C.MPI_LASTUSEDCODE:    mpi.AttrLastUsedCode,
	C.MPI_UNIVERSE_SIZE:   mpi.AttrUniverseSize,
}

// predefCells are the ints C gets pointers to for the predefined
// attributes (C memory, never freed), by key value.
var (
	predefMu    sync.Mutex
	predefCells = map[C.int]*C.int{}
)

// predefCell stores v in the cell of key and returns the cell.
func predefCell(key C.int, v C.int) *C.int {
	predefMu.Lock()
	defer predefMu.Unlock()
	p, ok := predefCells[key]
	if !ok {
		p = (*C.int)(C.malloc(C.size_t(unsafe.Sizeof(C.int(0)))))
		predefCells[key] = p
	}
	*p = v
	return p
}

// keyOf resolves a communicator keyval for op; an invalid one is an
// MPI_ERR_KEYVAL error on c's handler.
func keyOf(keyval C.int, c *mpi.Comm, op string) (*mpi.Keyval, error) {
	if k, ok := predefKeys[keyval]; ok {
		return k, nil
	}
	if keyval >= 0 {
		if ck, ok := keyvals.get(uintptr(keyval)); ok {
			return ck.k, nil
		}
	}
	err := bad(mpi.ErrKeyval, op, "invalid keyval %d (not a communicator keyval, or freed)", int(keyval))
	if c != nil {
		return nil, c.CallErrhandler(err)
	}
	return nil, worldFail(err)
}

// ftmpi_Comm_create_keyval serves MPI_Comm_create_keyval and
// MPI_Keyval_create (comm_cside.c): copyFn and delFn are C function
// pointers, 0 for MPI_COMM_NULL_COPY_FN and MPI_COMM_NULL_DELETE_FN, 1 for
// MPI_COMM_DUP_FN.
//
//export ftmpi_Comm_create_keyval
func ftmpi_Comm_create_keyval(copyFn, delFn C.uintptr_t, keyval *C.int, extra C.uintptr_t) C.int {
	if keyval == nil {
		return worldCode(bad(mpi.ErrArg, "MPI_Comm_create_keyval", "comm_keyval is NULL"))
	}
	ck := &ckey{}
	var cp mpi.CommCopyAttrFn
	switch copyFn {
	case 0:
	case 1:
		cp = mpi.CommDupFn
	default:
		cp = func(old *mpi.Comm, _ *mpi.Keyval, val any) (any, bool, error) {
			in, _ := val.(uintptr)
			var out C.uintptr_t
			var flag C.int
			rc := C.ftmpi_attr_copy_tramp(C.FTMPI_ATTR_COMM, copyFn, commHandle(old), ck.handle, extra, C.uintptr_t(in), &out, &flag)
			if rc != C.MPI_SUCCESS {
				return nil, false, errOf(int(rc), "MPI_Comm_copy_attr_function")
			}
			return uintptr(out), flag != 0, nil
		}
	}
	var del mpi.CommDeleteAttrFn
	if delFn != 0 {
		del = func(c *mpi.Comm, _ *mpi.Keyval, val any) error {
			v, _ := val.(uintptr)
			rc := C.ftmpi_attr_delete_tramp(C.FTMPI_ATTR_COMM, delFn, commHandle(c), ck.handle, C.uintptr_t(v), extra)
			if rc != C.MPI_SUCCESS {
				return errOf(int(rc), "MPI_Comm_delete_attr_function")
			}
			return nil
		}
	}
	ck.k = mpi.CommCreateKeyval(cp, del)
	ck.handle = C.int(keyvals.putNew(ck))
	*keyval = ck.handle
	return cSuccess
}

//export ftmpi_Comm_free_keyval
func ftmpi_Comm_free_keyval(keyval *C.int) C.int {
	const op = "MPI_Comm_free_keyval"
	if keyval == nil {
		return worldCode(bad(mpi.ErrArg, op, "comm_keyval is NULL"))
	}
	k, err := keyOf(*keyval, nil, op)
	if err != nil {
		return code(err)
	}
	if err := mpi.CommFreeKeyval(k); err != nil {
		return worldCode(err)
	}
	// The handle stays in the table (its slot is not reused): attributes
	// still attached under the keyval are read and deleted through it
	// (MPI-4.1 7.7.2; MPICH attr/fkeyval), and freeing it again is an
	// MPI_ERR_KEYVAL error rather than freeing another keyval.
	*keyval = C.MPI_KEYVAL_INVALID
	return cSuccess
}

//export ftmpi_Keyval_free
func ftmpi_Keyval_free(keyval *C.int) C.int { return ftmpi_Comm_free_keyval(keyval) }

// ftmpi_Comm_set_attr serves MPI_Comm_set_attr and MPI_Attr_put
// (comm_cside.c).
//
//export ftmpi_Comm_set_attr
func ftmpi_Comm_set_attr(comm C.uintptr_t, keyval C.int, val C.uintptr_t) C.int {
	const op = "MPI_Comm_set_attr"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	k, err := keyOf(keyval, c, op)
	if err != nil {
		return code(err)
	}
	return code(c.SetAttr(k, uintptr(val)))
}

//export ftmpi_Comm_get_attr
func ftmpi_Comm_get_attr(comm C.uintptr_t, keyval C.int, attr unsafe.Pointer, flag *C.int) C.int {
	const op = "MPI_Comm_get_attr"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	k, err := keyOf(keyval, c, op)
	if err != nil {
		return code(err)
	}
	if attr == nil || flag == nil {
		return fail(c, bad(mpi.ErrArg, op, "attribute_val or flag is NULL"))
	}
	val, ok, err := c.GetAttr(k)
	if err != nil {
		return code(err)
	}
	*flag = cbool(ok)
	if !ok {
		return cSuccess
	}
	out := (*C.uintptr_t)(attr)
	if _, pre := predefKeys[keyval]; pre {
		var v C.int
		switch x := val.(type) {
		case int:
			v = rankOut(x)
		case bool:
			v = cbool(x)
		}
		if keyval == C.MPI_LASTUSEDCODE {
			v = C.int(lastUsedCode())
		}
		*out = C.uintptr_t(uintptr(unsafe.Pointer(predefCell(keyval, v))))
		return cSuccess
	}
	v, _ := val.(uintptr)
	*out = C.uintptr_t(v)
	return cSuccess
}

//export ftmpi_Attr_get
func ftmpi_Attr_get(comm C.uintptr_t, keyval C.int, attr unsafe.Pointer, flag *C.int) C.int {
	return ftmpi_Comm_get_attr(comm, keyval, attr, flag)
}

//export ftmpi_Comm_delete_attr
func ftmpi_Comm_delete_attr(comm C.uintptr_t, keyval C.int) C.int {
	const op = "MPI_Comm_delete_attr"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	k, err := keyOf(keyval, c, op)
	if err != nil {
		return code(err)
	}
	return code(c.DeleteAttr(k))
}

//export ftmpi_Attr_delete
func ftmpi_Attr_delete(comm C.uintptr_t, keyval C.int) C.int {
	return ftmpi_Comm_delete_attr(comm, keyval)
}

// Datatype attributes.

// ftmpi_Type_create_keyval serves MPI_Type_create_keyval (comm_cside.c):
// copyFn and delFn as for ftmpi_Comm_create_keyval (1: MPI_TYPE_DUP_FN).
//
//export ftmpi_Type_create_keyval
func ftmpi_Type_create_keyval(copyFn, delFn C.uintptr_t, keyval *C.int, extra C.uintptr_t) C.int {
	if keyval == nil {
		return worldCode(bad(mpi.ErrArg, "MPI_Type_create_keyval", "type_keyval is NULL"))
	}
	ck := &ckey{}
	var cp mpi.TypeCopyAttrFn
	switch copyFn {
	case 0:
	case 1:
		cp = func(_ *mpi.Datatype, _ *mpi.Keyval, val any) (any, bool, error) { return val, true, nil }
	default:
		cp = func(old *mpi.Datatype, _ *mpi.Keyval, val any) (any, bool, error) {
			in, _ := val.(uintptr)
			var out C.uintptr_t
			var flag C.int
			rc := C.ftmpi_attr_copy_tramp(C.FTMPI_ATTR_TYPE, copyFn, typeHandle(old), ck.handle, extra, C.uintptr_t(in), &out, &flag)
			if rc != C.MPI_SUCCESS {
				return nil, false, errOf(int(rc), "MPI_Type_copy_attr_function")
			}
			return uintptr(out), flag != 0, nil
		}
	}
	var del mpi.TypeDeleteAttrFn
	if delFn != 0 {
		del = func(d *mpi.Datatype, _ *mpi.Keyval, val any) error {
			v, _ := val.(uintptr)
			rc := C.ftmpi_attr_delete_tramp(C.FTMPI_ATTR_TYPE, delFn, typeHandle(d), ck.handle, C.uintptr_t(v), extra)
			if rc != C.MPI_SUCCESS {
				return errOf(int(rc), "MPI_Type_delete_attr_function")
			}
			return nil
		}
	}
	ck.k = mpi.TypeCreateKeyval(cp, del)
	ck.handle = C.int(keyvals.putNew(ck))
	*keyval = ck.handle
	return cSuccess
}

// typeKeyOf resolves a datatype keyval (an invalid one: MPI_ERR_KEYVAL on
// MPI_COMM_WORLD's handler).
func typeKeyOf(keyval C.int, op string) (*mpi.Keyval, error) {
	if keyval >= 0 {
		if ck, ok := keyvals.get(uintptr(keyval)); ok {
			return ck.k, nil
		}
	}
	return nil, worldFail(bad(mpi.ErrKeyval, op, "invalid keyval %d (not a datatype keyval, or freed)", int(keyval)))
}

//export ftmpi_Type_free_keyval
func ftmpi_Type_free_keyval(keyval *C.int) C.int {
	const op = "MPI_Type_free_keyval"
	k, err := typeKeyOf(*keyval, op)
	if err != nil {
		return code(err)
	}
	if err := mpi.TypeFreeKeyval(k); err != nil {
		return worldCode(err)
	}
	// The handle stays in the table (its slot is not reused): attributes
	// still attached under the keyval are read and deleted through it
	// (MPI-4.1 7.7.2; MPICH attr/fkeyval), and freeing it again is an
	// MPI_ERR_KEYVAL error rather than freeing another keyval.
	*keyval = C.MPI_KEYVAL_INVALID
	return cSuccess
}

// ftmpi_Type_set_attr serves MPI_Type_set_attr (comm_cside.c).
//
//export ftmpi_Type_set_attr
func ftmpi_Type_set_attr(datatype C.uintptr_t, keyval C.int, val C.uintptr_t) C.int {
	const op = "MPI_Type_set_attr"
	d, err := dtIn(datatype, op)
	if err != nil {
		return code(err)
	}
	k, err := typeKeyOf(keyval, op)
	if err != nil {
		return code(err)
	}
	return worldCode(d.SetAttr(k, uintptr(val)))
}

//export ftmpi_Type_get_attr
func ftmpi_Type_get_attr(datatype C.uintptr_t, keyval C.int, attr unsafe.Pointer, flag *C.int) C.int {
	const op = "MPI_Type_get_attr"
	d, err := dtIn(datatype, op)
	if err != nil {
		return code(err)
	}
	k, err := typeKeyOf(keyval, op)
	if err != nil {
		return code(err)
	}
	val, ok, err := d.GetAttr(k)
	if err != nil {
		return worldCode(err)
	}
	*flag = cbool(ok)
	if ok {
		v, _ := val.(uintptr)
		*(*C.uintptr_t)(attr) = C.uintptr_t(v)
	}
	return cSuccess
}

//export ftmpi_Type_delete_attr
func ftmpi_Type_delete_attr(datatype C.uintptr_t, keyval C.int) C.int {
	const op = "MPI_Type_delete_attr"
	d, err := dtIn(datatype, op)
	if err != nil {
		return code(err)
	}
	k, err := typeKeyOf(keyval, op)
	if err != nil {
		return code(err)
	}
	return worldCode(d.DeleteAttr(k))
}

// finalizeSelfAttrs runs the delete callbacks of MPI_COMM_SELF's
// attributes, as MPI_Finalize must first of all (MPI-4.1 11.2.2); the
// error of a failing callback, if any, is returned.
func finalizeSelfAttrs() error {
	if world == nil {
		return nil
	}
	return world.CommSelf().DeleteAttrs()
}
