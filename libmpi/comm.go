package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"sync"

	"github.com/ftmpi/ftmpi/mpi"
)

// Communicator management: MPI_Comm_dup ... MPI_Comm_free, names,
// comparisons, intercommunicators and communicator hints, forwarding to
// package mpi. A new communicator gets a handle in the comms table
// (commHandle); MPI_Comm_free frees it and sets the caller's handle to
// MPI_COMM_NULL.

// named are the communicators C named with MPI_Comm_set_name: the others
// have the empty name MPI gives them (the predefined ones excepted),
// where package mpi has a descriptive default for its messages.
var named sync.Map // *mpi.Comm -> struct{}

// newCommOut stores the result of a communicator constructor: its handle
// (MPI_COMM_NULL for a nil communicator) or the error's code.
func newCommOut(nc *mpi.Comm, err error, newcomm *C.uintptr_t) C.int {
	if err != nil {
		if newcomm != nil {
			*newcomm = hCommNull // a failed Dup (an attribute copy callback failed) gives MPI_COMM_NULL
		}
		return code(err)
	}
	*newcomm = commHandle(nc)
	return cSuccess
}

//export ftmpi_Comm_dup
func ftmpi_Comm_dup(comm C.uintptr_t, newcomm *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_dup")
	if err != nil {
		return code(err)
	}
	nc, err := c.Dup()
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Comm_dup_with_info
func ftmpi_Comm_dup_with_info(comm, info C.uintptr_t, newcomm *C.uintptr_t) C.int {
	const op = "MPI_Comm_dup_with_info"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	nc, err := c.DupWithInfo(i)
	return newCommOut(nc, err, newcomm)
}

func idup(op string, comm, info C.uintptr_t, withInfo bool, newcomm, request *C.uintptr_t) C.int {
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	// The duplication proceeds in the background (several may be pending,
	// on overlapping communicators, completed in any order): newcomm gets
	// its handle when the request completes, as MPI specifies.
	r, get, err := c.IdupStart(i, withInfo)
	if err != nil {
		return code(err)
	}
	*request = newReq(&creq{r: r, done: func(*mpi.Status) {
		if nc := get(); nc != nil {
			*newcomm = commHandle(nc)
		} else {
			*newcomm = hCommNull
		}
	}})
	return cSuccess
}

//export ftmpi_Comm_idup
func ftmpi_Comm_idup(comm C.uintptr_t, newcomm, request *C.uintptr_t) C.int {
	return idup("MPI_Comm_idup", comm, hInfoNull, false, newcomm, request)
}

//export ftmpi_Comm_idup_with_info
func ftmpi_Comm_idup_with_info(comm, info C.uintptr_t, newcomm, request *C.uintptr_t) C.int {
	return idup("MPI_Comm_idup_with_info", comm, info, true, newcomm, request)
}

//export ftmpi_Comm_split
func ftmpi_Comm_split(comm C.uintptr_t, color, key C.int, newcomm *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_split")
	if err != nil {
		return code(err)
	}
	nc, err := c.Split(int(color), int(key))
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Comm_split_type
func ftmpi_Comm_split_type(comm C.uintptr_t, splitType, key C.int, info C.uintptr_t, newcomm *C.uintptr_t) C.int {
	const op = "MPI_Comm_split_type"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	t := mpi.Undefined
	switch splitType {
	case C.MPI_COMM_TYPE_SHARED:
		t = mpi.CommTypeShared
	case C.MPI_COMM_TYPE_HW_GUIDED:
		// The guided split by shared memory is the shared split; other
		// resource types are unknown: MPI_COMM_NULL at every process.
		if v, _ := i.Get("mpi_hw_resource_type"); v == "mpi_shared_memory" {
			t = mpi.CommTypeShared
		}
	case C.MPI_UNDEFINED, C.MPI_COMM_TYPE_HW_UNGUIDED, C.MPI_COMM_TYPE_RESOURCE_GUIDED:
	default:
		return fail(c, bad(mpi.ErrArg, op, "unknown split_type %d", int(splitType)))
	}
	nc, err := c.SplitType(t, int(key))
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Comm_create
func ftmpi_Comm_create(comm, group C.uintptr_t, newcomm *C.uintptr_t) C.int {
	const op = "MPI_Comm_create"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	g, err := groupOf(group, c, op)
	if err != nil {
		return code(err)
	}
	nc, err := c.Create(g)
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Comm_create_group
func ftmpi_Comm_create_group(comm, group C.uintptr_t, tag C.int, newcomm *C.uintptr_t) C.int {
	const op = "MPI_Comm_create_group"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	g, err := groupOf(group, c, op)
	if err != nil {
		return code(err)
	}
	if g.Rank() == mpi.Undefined {
		// MPI: a process not in the group gets MPI_COMM_NULL (it need not
		// call; if it does, nothing happens).
		*newcomm = hCommNull
		return cSuccess
	}
	nc, err := c.CreateGroup(g, tagIn(tag))
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Comm_free
func ftmpi_Comm_free(comm *C.uintptr_t) C.int {
	const op = "MPI_Comm_free"
	if comm == nil {
		return worldCode(bad(mpi.ErrArg, op, "comm is NULL"))
	}
	c, err := commOf(*comm, op)
	if err != nil {
		return code(err)
	}
	if err := c.Free(); err != nil {
		return code(err)
	}
	named.Delete(c)
	comms.del(uintptr(*comm))
	*comm = hCommNull
	return cSuccess
}

//export ftmpi_Comm_compare
func ftmpi_Comm_compare(comm1, comm2 C.uintptr_t, result *C.int) C.int {
	const op = "MPI_Comm_compare"
	a, err := commOf(comm1, op)
	if err != nil {
		return code(err)
	}
	b, err := commOf(comm2, op)
	if err != nil {
		return code(err)
	}
	*result = cmpOut(mpi.CompareComms(a, b))
	return cSuccess
}

//export ftmpi_Comm_set_name
func ftmpi_Comm_set_name(comm C.uintptr_t, name *C.char) C.int {
	const op = "MPI_Comm_set_name"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if name == nil {
		return fail(c, bad(mpi.ErrArg, op, "name is NULL"))
	}
	s := C.GoString(name)
	if len(s) > C.MPI_MAX_OBJECT_NAME-1 {
		s = s[:C.MPI_MAX_OBJECT_NAME-1]
	}
	if err := c.SetName(s); err != nil {
		return fail(c, err)
	}
	named.Store(c, struct{}{})
	return cSuccess
}

//export ftmpi_Comm_get_name
func ftmpi_Comm_get_name(comm C.uintptr_t, name *C.char, resultlen *C.int) C.int {
	const op = "MPI_Comm_get_name"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	s := ""
	if _, ok := named.Load(c); ok || uintptr(comm) == hWorld || uintptr(comm) == hSelf {
		s = c.Name()
	}
	*resultlen = C.int(cstr(name, s, C.MPI_MAX_OBJECT_NAME))
	return cSuccess
}

//export ftmpi_Comm_test_inter
func ftmpi_Comm_test_inter(comm C.uintptr_t, flag *C.int) C.int {
	c, err := commOf(comm, "MPI_Comm_test_inter")
	if err != nil {
		return code(err)
	}
	*flag = cbool(c.IsInter())
	return cSuccess
}

//export ftmpi_Comm_remote_size
func ftmpi_Comm_remote_size(comm C.uintptr_t, size *C.int) C.int {
	const op = "MPI_Comm_remote_size"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	if !c.IsInter() {
		return fail(c, bad(mpi.ErrComm, op, "%s is not an intercommunicator", c.Name()))
	}
	*size = C.int(c.RemoteSize())
	return cSuccess
}

//export ftmpi_Intercomm_create
func ftmpi_Intercomm_create(local C.uintptr_t, localLeader C.int, peer C.uintptr_t, remoteLeader, tag C.int, newintercomm *C.uintptr_t) C.int {
	const op = "MPI_Intercomm_create"
	lc, err := commOf(local, op)
	if err != nil {
		return code(err)
	}
	// peer_comm is significant at the local leader only: the others may
	// pass anything (MPI_COMM_NULL, typically).
	var pc *mpi.Comm
	if lc.Rank() == int(localLeader) {
		if pc, err = commOf(peer, op); err != nil {
			return code(err)
		}
	}
	nc, err := mpi.IntercommCreate(lc, int(localLeader), pc, int(remoteLeader), tagIn(tag))
	return newCommOut(nc, err, newintercomm)
}

//export ftmpi_Intercomm_merge
func ftmpi_Intercomm_merge(intercomm C.uintptr_t, high C.int, newintracomm *C.uintptr_t) C.int {
	c, err := commOf(intercomm, "MPI_Intercomm_merge")
	if err != nil {
		return code(err)
	}
	nc, err := c.Merge(high != 0)
	return newCommOut(nc, err, newintracomm)
}

//export ftmpi_Comm_set_info
func ftmpi_Comm_set_info(comm, info C.uintptr_t) C.int {
	const op = "MPI_Comm_set_info"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	return code(c.SetInfo(i))
}

//export ftmpi_Comm_get_info
func ftmpi_Comm_get_info(comm C.uintptr_t, infoUsed *C.uintptr_t) C.int {
	c, err := commOf(comm, "MPI_Comm_get_info")
	if err != nil {
		return code(err)
	}
	i, err := c.GetInfo()
	if err != nil {
		return code(err)
	}
	*infoUsed = C.uintptr_t(infos.putNew(i))
	return cSuccess
}

// errhOrNil resolves the error handler argument of the MPI-4 group
// constructors (MPI_ERRHANDLER_NULL: MPI_COMM_WORLD's).
func errhOrNil(h C.uintptr_t, op string) (*mpi.Errhandler, error) {
	if uintptr(h) == hErrhNull {
		return nil, nil
	}
	return errhOf(h, op)
}

//export ftmpi_Comm_create_from_group
func ftmpi_Comm_create_from_group(group C.uintptr_t, stringtag *C.char, info, errhandler C.uintptr_t, newcomm *C.uintptr_t) C.int {
	const op = "MPI_Comm_create_from_group"
	if world == nil {
		return code(bad(mpi.ErrOther, op, "MPI is not initialized (ftmpi has no sessions: call MPI_Init first)"))
	}
	g, err := groupOf(group, nil, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	h, err := errhOrNil(errhandler, op)
	if err != nil {
		return code(err)
	}
	if stringtag == nil {
		return worldCode(bad(mpi.ErrArg, op, "stringtag is NULL"))
	}
	nc, err := world.CommCreateFromGroup(g, C.GoString(stringtag), i, h)
	return newCommOut(nc, err, newcomm)
}

//export ftmpi_Intercomm_create_from_groups
func ftmpi_Intercomm_create_from_groups(local C.uintptr_t, localLeader C.int, remote C.uintptr_t, remoteLeader C.int, stringtag *C.char, info, errhandler C.uintptr_t, newintercomm *C.uintptr_t) C.int {
	const op = "MPI_Intercomm_create_from_groups"
	if world == nil {
		return code(bad(mpi.ErrOther, op, "MPI is not initialized (ftmpi has no sessions: call MPI_Init first)"))
	}
	lg, err := groupOf(local, nil, op)
	if err != nil {
		return code(err)
	}
	rg, err := groupOf(remote, nil, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	h, err := errhOrNil(errhandler, op)
	if err != nil {
		return code(err)
	}
	if stringtag == nil {
		return worldCode(bad(mpi.ErrArg, op, "stringtag is NULL"))
	}
	nc, err := world.IntercommCreateFromGroups(lg, int(localLeader), rg, int(remoteLeader), C.GoString(stringtag), i, h)
	return newCommOut(nc, err, newintercomm)
}
