package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/ftmpi/ftmpi/mpi"
)

// Info objects: a table of *mpi.Info; MPI_INFO_NULL is a nil *mpi.Info
// (accepted where a call takes hints), MPI_INFO_ENV the process's
// environment, made on first use: the same before MPI_Init, after it and
// after MPI_Finalize (MPI-4.1 11.2.1).
var (
	infos      = newTable[*mpi.Info](kindInfo)
	infoEnvMu  sync.Mutex
	infoEnvObj *mpi.Info
)

func infoEnv() *mpi.Info {
	infoEnvMu.Lock()
	defer infoEnvMu.Unlock()
	if infoEnvObj == nil {
		i := mpi.NewInfo()
		if len(os.Args) > 0 {
			i.Set("command", os.Args[0])
			if len(os.Args) > 1 {
				i.Set("argv", strings.Join(os.Args[1:], " "))
			}
		}
		// The job's size as the launcher gave it (a singleton: 1).
		np := strings.TrimSpace(os.Getenv("FTMPI_SIZE"))
		if np == "" {
			np = "1"
		}
		i.Set("maxprocs", np)
		i.Set("thread_level", "MPI_THREAD_MULTIPLE")
		if h, err := os.Hostname(); err == nil {
			i.Set("host", h)
		}
		i.Set("arch", runtime.GOARCH)
		if wd, err := os.Getwd(); err == nil {
			i.Set("wdir", wd)
		}
		infoEnvObj = i
	}
	return infoEnvObj
}

// infoOf resolves an info handle for op: MPI_INFO_NULL gives nil (no
// hints) with no error; an invalid handle is an MPI_ERR_INFO error raised
// on MPI_COMM_WORLD's error handler.
func infoOf(h C.uintptr_t, op string) (*mpi.Info, error) {
	switch uintptr(h) {
	case hInfoNull:
		return nil, nil
	case hInfoEnv:
		return infoEnv(), nil
	}
	if i, ok := infos.get(uintptr(h)); ok {
		return i, nil
	}
	return nil, worldFail(bad(mpi.ErrInfo, op, "invalid info handle %#x (a %s handle, or freed)", uintptr(h), kindName(uintptr(h))))
}

// infoObj is infoOf for calls on the info object itself, where
// MPI_INFO_NULL is an MPI_ERR_INFO error too.
func infoObj(h C.uintptr_t, op string) (*mpi.Info, error) {
	if uintptr(h) == hInfoNull {
		return nil, worldFail(bad(mpi.ErrInfo, op, "MPI_INFO_NULL is not an info object"))
	}
	return infoOf(h, op)
}

// infoHandle returns a new C handle for info (a nil info: MPI_INFO_NULL).
func infoHandle(i *mpi.Info) C.uintptr_t {
	if i == nil {
		return hInfoNull
	}
	return C.uintptr_t(infos.put(i))
}

// worldCode raises err, an error the Go API returned from a call that has
// no communicator (its handler did not run), on MPI_COMM_WORLD's error
// handler and returns its code.
func worldCode(err error) C.int {
	if err == nil {
		return cSuccess
	}
	return code(worldFail(err))
}

//export ftmpi_Info_create
func ftmpi_Info_create(info *C.uintptr_t) C.int {
	if info == nil {
		return worldCode(bad(mpi.ErrArg, "MPI_Info_create", "info is NULL"))
	}
	*info = C.uintptr_t(infos.putNew(mpi.NewInfo()))
	return cSuccess
}

//export ftmpi_Info_free
func ftmpi_Info_free(info *C.uintptr_t) C.int {
	const op = "MPI_Info_free"
	if uintptr(*info) == hInfoEnv {
		return worldCode(bad(mpi.ErrInfo, op, "MPI_INFO_ENV is predefined and cannot be freed"))
	}
	if _, err := infoObj(*info, op); err != nil {
		return code(err)
	}
	infos.del(uintptr(*info))
	*info = hInfoNull
	return cSuccess
}

//export ftmpi_Info_set
func ftmpi_Info_set(info C.uintptr_t, key, value *C.char) C.int {
	const op = "MPI_Info_set"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	if key == nil || value == nil {
		return worldCode(bad(mpi.ErrArg, op, "NULL key or value"))
	}
	return worldCode(i.Set(C.GoString(key), C.GoString(value)))
}

func infoKey(op string, key *C.char) (string, error) {
	if key == nil {
		return "", worldFail(bad(mpi.ErrInfoKey, op, "NULL key"))
	}
	k := C.GoString(key)
	if k == "" || len(k) > mpi.MaxInfoKey {
		return "", worldFail(bad(mpi.ErrInfoKey, op, "key of %d bytes (1 to %d)", len(k), mpi.MaxInfoKey))
	}
	return k, nil
}

//export ftmpi_Info_get
func ftmpi_Info_get(info C.uintptr_t, key *C.char, valuelen C.int, value *C.char, flag *C.int) C.int {
	const op = "MPI_Info_get"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	k, err := infoKey(op, key)
	if err != nil {
		return code(err)
	}
	if valuelen < 0 {
		return worldCode(bad(mpi.ErrArg, op, "negative valuelen %d", int(valuelen)))
	}
	v, ok := i.Get(k)
	*flag = cbool(ok)
	if ok {
		cstr(value, v, int(valuelen)+1) // value has valuelen+1 bytes
	}
	return cSuccess
}

//export ftmpi_Info_get_string
func ftmpi_Info_get_string(info C.uintptr_t, key *C.char, buflen *C.int, value *C.char, flag *C.int) C.int {
	const op = "MPI_Info_get_string"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	k, err := infoKey(op, key)
	if err != nil {
		return code(err)
	}
	v, ok := i.Get(k)
	*flag = cbool(ok)
	if !ok {
		return cSuccess
	}
	if *buflen > 0 {
		cstr(value, v, int(*buflen))
	}
	*buflen = C.int(len(v) + 1)
	return cSuccess
}

//export ftmpi_Info_get_valuelen
func ftmpi_Info_get_valuelen(info C.uintptr_t, key *C.char, valuelen *C.int, flag *C.int) C.int {
	const op = "MPI_Info_get_valuelen"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	k, err := infoKey(op, key)
	if err != nil {
		return code(err)
	}
	v, ok := i.Get(k)
	*flag = cbool(ok)
	if ok {
		*valuelen = C.int(len(v))
	}
	return cSuccess
}

//export ftmpi_Info_delete
func ftmpi_Info_delete(info C.uintptr_t, key *C.char) C.int {
	const op = "MPI_Info_delete"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	k, err := infoKey(op, key)
	if err != nil {
		return code(err)
	}
	return worldCode(i.Delete(k))
}

//export ftmpi_Info_get_nkeys
func ftmpi_Info_get_nkeys(info C.uintptr_t, nkeys *C.int) C.int {
	i, err := infoObj(info, "MPI_Info_get_nkeys")
	if err != nil {
		return code(err)
	}
	*nkeys = C.int(i.GetNkeys())
	return cSuccess
}

//export ftmpi_Info_get_nthkey
func ftmpi_Info_get_nthkey(info C.uintptr_t, n C.int, key *C.char) C.int {
	const op = "MPI_Info_get_nthkey"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	k, err := i.GetNthkey(int(n))
	if err != nil {
		return worldCode(err)
	}
	cstr(key, k, C.MPI_MAX_INFO_KEY)
	return cSuccess
}

//export ftmpi_Info_dup
func ftmpi_Info_dup(info C.uintptr_t, newinfo *C.uintptr_t) C.int {
	const op = "MPI_Info_dup"
	i, err := infoObj(info, op)
	if err != nil {
		return code(err)
	}
	n, err := i.Dup()
	if err != nil {
		return worldCode(err)
	}
	*newinfo = C.uintptr_t(infos.putNew(n))
	return cSuccess
}

//export ftmpi_Info_create_env
func ftmpi_Info_create_env(argc C.int, argv **C.char, info *C.uintptr_t) C.int {
	n, err := infoEnv().Dup()
	if err != nil {
		return worldCode(err)
	}
	*info = C.uintptr_t(infos.putNew(n))
	return cSuccess
}
