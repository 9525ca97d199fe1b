package main

// MPI sessions (MPI-4.1 11.3): MPI_Session_init starts the runtime if
// MPI_Init has not (the world model and the sessions share it; the last of
// them to end finalizes it), and the two process sets every MPI has,
// "mpi://WORLD" and "mpi://SELF", give groups for
// MPI_Comm_create_from_group.

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// session is an MPI_Session.
type session struct {
	errh *mpi.Errhandler
	info *mpi.Info // the hints given, with thread_level as provided
}

var sessions = newTable[*session](kindSession)

// The process sets, in MPI_Session_get_nth_pset's order.
var psets = []string{"mpi://WORLD", "mpi://SELF"}

func sessionOf(h C.uintptr_t, op string) (*session, error) {
	if s, ok := sessions.get(uintptr(h)); ok {
		return s, nil
	}
	what := "a " + kindName(uintptr(h)) + " handle, or finalized"
	if uintptr(h) == uintptr(C.uintptr_t(uintptr(unsafe.Pointer(C.MPI_SESSION_NULL)))) {
		what = "MPI_SESSION_NULL"
	}
	return nil, bad(mpi.ErrSession, op, "invalid session handle %#x (%s)", uintptr(h), what)
}

// sessionFail raises err on s's error handler (MPI_ERRORS_RETURN without
// one: a session error before any session exists cannot abort a job that
// may not be running).
func sessionFail(s *session, err error) C.int {
	if s != nil && s.errh == mpi.ErrorsAreFatal && world != nil {
		return code(world.CommSelf().CallErrhandler(err))
	}
	return code(err)
}

//export ftmpi_Session_init
func ftmpi_Session_init(info, errhandler C.uintptr_t, out *C.uintptr_t) C.int {
	const op = "MPI_Session_init"
	in, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	e, err := errhOf(errhandler, op)
	if err != nil {
		return code(err)
	}
	initOnce.Lock()
	defer initOnce.Unlock()
	if finalized.Load() {
		return code(bad(mpi.ErrOther, op, "ftmpi's runtime has ended (the last of MPI_Finalize and MPI_Session_finalize): it cannot start again in this process"))
	}
	if err := startWorld(); err != nil {
		return code(err)
	}
	used := mpi.NewInfo()
	if in != nil {
		for _, k := range in.Keys() {
			v, _ := in.Get(k)
			used.Set(k, v)
		}
	}
	used.Set("thread_level", "MPI_THREAD_MULTIPLE")
	*out = C.uintptr_t(sessions.putNew(&session{errh: e, info: used}))
	return cSuccess
}

//export ftmpi_Session_finalize
func ftmpi_Session_finalize(h *C.uintptr_t) C.int {
	const op = "MPI_Session_finalize"
	s, err := sessionOf(*h, op)
	if err != nil {
		return code(err)
	}
	initOnce.Lock()
	defer initOnce.Unlock()
	sessions.del(uintptr(*h))
	*h = C.uintptr_t(uintptr(unsafe.Pointer(C.MPI_SESSION_NULL)))
	if err := endWorld(); err != nil {
		return sessionFail(s, err)
	}
	return cSuccess
}

//export ftmpi_Session_get_info
func ftmpi_Session_get_info(h C.uintptr_t, infoUsed *C.uintptr_t) C.int {
	s, err := sessionOf(h, "MPI_Session_get_info")
	if err != nil {
		return code(err)
	}
	i := mpi.NewInfo()
	for _, k := range s.info.Keys() {
		v, _ := s.info.Get(k)
		i.Set(k, v)
	}
	*infoUsed = infoHandle(i)
	return cSuccess
}

//export ftmpi_Session_get_num_psets
func ftmpi_Session_get_num_psets(h, info C.uintptr_t, n *C.int) C.int {
	if _, err := sessionOf(h, "MPI_Session_get_num_psets"); err != nil {
		return code(err)
	}
	*n = C.int(len(psets))
	return cSuccess
}

//export ftmpi_Session_get_nth_pset
func ftmpi_Session_get_nth_pset(h, info C.uintptr_t, n C.int, psetLen *C.int, name *C.char) C.int {
	const op = "MPI_Session_get_nth_pset"
	s, err := sessionOf(h, op)
	if err != nil {
		return code(err)
	}
	if n < 0 || int(n) >= len(psets) {
		return sessionFail(s, bad(mpi.ErrArg, op, "process set %d out of range [0, %d)", int(n), len(psets)))
	}
	p := psets[n]
	if *psetLen <= 0 {
		// Asking for the length, the terminating null included.
		*psetLen = C.int(len(p) + 1)
		return cSuccess
	}
	cstr(name, p, int(*psetLen))
	*psetLen = C.int(len(p) + 1)
	return cSuccess
}

// psetGroup is the group of the process set named name (case-insensitive,
// as the standard's names are).
func psetGroup(name, op string) (*mpi.Group, error) {
	switch strings.ToLower(name) {
	case "mpi://world":
		return world.CommWorld().Group(), nil
	case "mpi://self":
		return world.CommSelf().Group(), nil
	}
	return nil, bad(mpi.ErrArg, op, "no process set %q (ftmpi has mpi://WORLD and mpi://SELF)", name)
}

//export ftmpi_Session_get_pset_info
func ftmpi_Session_get_pset_info(h C.uintptr_t, name *C.char, info *C.uintptr_t) C.int {
	const op = "MPI_Session_get_pset_info"
	s, err := sessionOf(h, op)
	if err != nil {
		return code(err)
	}
	g, err := psetGroup(C.GoString(name), op)
	if err != nil {
		return sessionFail(s, err)
	}
	i := mpi.NewInfo()
	i.Set("mpi_size", strconv.Itoa(g.Size()))
	*info = infoHandle(i)
	return cSuccess
}

//export ftmpi_Group_from_session_pset
func ftmpi_Group_from_session_pset(h C.uintptr_t, name *C.char, group *C.uintptr_t) C.int {
	const op = "MPI_Group_from_session_pset"
	s, err := sessionOf(h, op)
	if err != nil {
		return code(err)
	}
	g, err := psetGroup(C.GoString(name), op)
	if err != nil {
		return sessionFail(s, err)
	}
	*group = groupHandle(g)
	return cSuccess
}

//export ftmpi_Session_set_errhandler
func ftmpi_Session_set_errhandler(h, errhandler C.uintptr_t) C.int {
	const op = "MPI_Session_set_errhandler"
	s, err := sessionOf(h, op)
	if err != nil {
		return code(err)
	}
	e, err := errhOf(errhandler, op)
	if err != nil {
		return code(err)
	}
	s.errh = e
	return cSuccess
}

//export ftmpi_Session_get_errhandler
func ftmpi_Session_get_errhandler(h C.uintptr_t, errhandler *C.uintptr_t) C.int {
	s, err := sessionOf(h, "MPI_Session_get_errhandler")
	if err != nil {
		return code(err)
	}
	*errhandler = errhHandle(s.errh)
	return cSuccess
}
