package main

/*
#include <stdint.h>
#include "include/mpi.h"
*/
import "C"

import (
	"net"
	"os"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// Process creation and management (MPI-4.1 chapter 11): spawning C
// programs under ftmpirun (the children find their parent with
// MPI_Comm_get_parent), ports, accept/connect, disconnect, join and the
// name service, forwarding to package mpi (spawn.go, dpm*.go).

// cargv converts a NULL-terminated C argument vector (MPI_ARGV_NULL: none).
func cargv(argv **C.char) []string {
	if argv == nil {
		return nil
	}
	var out []string
	for p := argv; *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(p))) {
		out = append(out, C.GoString(*p))
	}
	return out
}

// setErrcodes fills the first n entries of errcodes (MPI_ERRCODES_IGNORE:
// nil) with v.
func setErrcodes(errcodes *C.int, n int, v C.int) {
	if errcodes == nil || n <= 0 {
		return
	}
	for i, e := 0, unsafe.Slice(errcodes, n); i < n; i++ {
		e[i] = v
	}
}

func spawn(op string, command *C.char, argv **C.char, maxprocs C.int, info C.uintptr_t, root C.int, comm C.uintptr_t, intercomm *C.uintptr_t, errcodes *C.int) C.int {
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	var cmd string
	var args []string
	if int(root) == c.Rank() { // only the root's arguments count
		if command == nil {
			return fail(c, bad(mpi.ErrArg, op, "command is NULL"))
		}
		cmd, args = C.GoString(command), cargv(argv)
	}
	ic, err := c.SpawnInfo(cmd, args, int(maxprocs), i, int(root))
	if err != nil {
		if int(root) == c.Rank() {
			setErrcodes(errcodes, int(maxprocs), code(err))
		}
		return code(err)
	}
	if int(root) == c.Rank() {
		setErrcodes(errcodes, int(maxprocs), cSuccess)
	}
	*intercomm = commHandle(ic)
	return cSuccess
}

//export ftmpi_Comm_spawn
func ftmpi_Comm_spawn(command *C.char, argv **C.char, maxprocs C.int, info C.uintptr_t, root C.int, comm C.uintptr_t, intercomm *C.uintptr_t, errcodes *C.int) C.int {
	return spawn("MPI_Comm_spawn", command, argv, maxprocs, info, root, comm, intercomm, errcodes)
}

// MPI_Comm_spawn_multiple: the root's arrays become mpi.SpawnCommands
// (package mpi: one world of every command's processes, MPI_APPNUM the
// index of each one's command); errcodes has one entry per process.
//
//export ftmpi_Comm_spawn_multiple
func ftmpi_Comm_spawn_multiple(count C.int, commands **C.char, argvs ***C.char, maxprocs *C.int, infos *C.uintptr_t, root C.int, comm C.uintptr_t, intercomm *C.uintptr_t, errcodes *C.int) C.int {
	const op = "MPI_Comm_spawn_multiple"
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	var cmds []mpi.SpawnCommand
	total := 0
	isRoot := int(root) == c.Rank()
	if isRoot { // only the root's arguments count
		if count < 1 || commands == nil || maxprocs == nil {
			return fail(c, bad(mpi.ErrArg, op, "count %d, or array_of_commands or array_of_maxprocs NULL", int(count)))
		}
		n := int(count)
		cs, ms := unsafe.Slice(commands, n), unsafe.Slice(maxprocs, n)
		var avs []**C.char
		if argvs != nil { // MPI_ARGVS_NULL: no arguments
			avs = unsafe.Slice(argvs, n)
		}
		var is []C.uintptr_t
		if infos != nil {
			is = unsafe.Slice(infos, n)
		}
		for k := 0; k < n; k++ {
			if cs[k] == nil {
				return fail(c, bad(mpi.ErrArg, op, "array_of_commands[%d] is NULL", k))
			}
			sc := mpi.SpawnCommand{Command: C.GoString(cs[k]), MaxProcs: int(ms[k])}
			if avs != nil {
				sc.Args = cargv(avs[k])
			}
			if is != nil {
				if sc.Info, err = infoOf(is[k], op); err != nil {
					return code(err)
				}
			}
			cmds = append(cmds, sc)
			total += max(sc.MaxProcs, 0)
		}
	}
	ic, err := c.SpawnMultiple(cmds, int(root))
	if err != nil {
		if isRoot {
			setErrcodes(errcodes, total, code(err))
		}
		return code(err)
	}
	if isRoot {
		setErrcodes(errcodes, total, cSuccess)
	}
	*intercomm = commHandle(ic)
	return cSuccess
}

//export ftmpi_Comm_get_parent
func ftmpi_Comm_get_parent(parent *C.uintptr_t) C.int {
	if world == nil {
		return code(bad(mpi.ErrOther, "MPI_Comm_get_parent", "MPI is not initialized (call MPI_Init first)"))
	}
	p := world.Parent()
	if p == nil {
		*parent = hCommNull
		return cSuccess
	}
	// Its name is MPI_COMM_PARENT (MPI-4.1 7.8: like MPI_COMM_WORLD's and
	// MPI_COMM_SELF's, the default name of the parent communicator), not
	// the empty name of the communicators a program makes (comm.go, named).
	named.LoadOrStore(p, struct{}{})
	*parent = commHandle(p)
	return cSuccess
}

//export ftmpi_Open_port
func ftmpi_Open_port(info C.uintptr_t, port *C.char) C.int {
	const op = "MPI_Open_port"
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	if world == nil {
		return code(bad(mpi.ErrOther, op, "MPI is not initialized (call MPI_Init first)"))
	}
	name, err := world.OpenPort(i)
	if err != nil {
		return code(worldFail(err))
	}
	if len(name) >= C.MPI_MAX_PORT_NAME {
		return code(worldFail(bad(mpi.ErrIntern, op, "port name of %d bytes exceeds MPI_MAX_PORT_NAME", len(name))))
	}
	cstr(port, name, C.MPI_MAX_PORT_NAME)
	return cSuccess
}

//export ftmpi_Close_port
func ftmpi_Close_port(port *C.char) C.int {
	if world == nil {
		return code(bad(mpi.ErrOther, "MPI_Close_port", "MPI is not initialized (call MPI_Init first)"))
	}
	return code(worldFail(world.ClosePort(C.GoString(port))))
}

func establish(op string, port *C.char, info C.uintptr_t, root C.int, comm C.uintptr_t, newcomm *C.uintptr_t, accept bool) C.int {
	c, err := commOf(comm, op)
	if err != nil {
		return code(err)
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	var name string
	if port != nil && int(root) == c.Rank() {
		name = C.GoString(port)
	}
	var ic *mpi.Comm
	if accept {
		ic, err = c.Accept(name, i, int(root))
	} else {
		ic, err = c.Connect(name, i, int(root))
	}
	if err != nil {
		return code(err)
	}
	*newcomm = commHandle(ic)
	return cSuccess
}

//export ftmpi_Comm_accept
func ftmpi_Comm_accept(port *C.char, info C.uintptr_t, root C.int, comm C.uintptr_t, newcomm *C.uintptr_t) C.int {
	return establish("MPI_Comm_accept", port, info, root, comm, newcomm, true)
}

//export ftmpi_Comm_connect
func ftmpi_Comm_connect(port *C.char, info C.uintptr_t, root C.int, comm C.uintptr_t, newcomm *C.uintptr_t) C.int {
	return establish("MPI_Comm_connect", port, info, root, comm, newcomm, false)
}

//export ftmpi_Comm_disconnect
func ftmpi_Comm_disconnect(comm *C.uintptr_t) C.int {
	const op = "MPI_Comm_disconnect"
	switch uintptr(*comm) {
	case hWorld, hSelf:
		c, _ := commOf(*comm, op)
		return fail(c, bad(mpi.ErrComm, op, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected"))
	}
	c, err := commOf(*comm, op)
	if err != nil {
		return code(err)
	}
	err = c.Disconnect()
	comms.del(uintptr(*comm))
	*comm = hCommNull
	return code(err)
}

//export ftmpi_Comm_join
func ftmpi_Comm_join(fd C.int, intercomm *C.uintptr_t) C.int {
	const op = "MPI_Comm_join"
	if world == nil {
		return code(bad(mpi.ErrOther, op, "MPI is not initialized (call MPI_Init first)"))
	}
	f := os.NewFile(uintptr(fd), "MPI_Comm_join socket")
	if f == nil {
		return code(worldFail(bad(mpi.ErrArg, op, "invalid file descriptor %d", int(fd))))
	}
	conn, err := net.FileConn(f) // a duplicate of fd: the caller keeps its own
	f.Close()
	if err != nil {
		return code(worldFail(bad(mpi.ErrArg, op, "file descriptor %d is not a socket: %v", int(fd), err)))
	}
	defer conn.Close()
	ic, err := world.Join(conn)
	if err != nil {
		return code(worldFail(err))
	}
	*intercomm = commHandle(ic)
	return cSuccess
}

//export ftmpi_Publish_name
func ftmpi_Publish_name(service *C.char, info C.uintptr_t, port *C.char) C.int {
	return nameCall("MPI_Publish_name", service, info, func(i *mpi.Info, s string) error {
		return world.PublishName(s, i, C.GoString(port))
	})
}

//export ftmpi_Unpublish_name
func ftmpi_Unpublish_name(service *C.char, info C.uintptr_t, port *C.char) C.int {
	return nameCall("MPI_Unpublish_name", service, info, func(i *mpi.Info, s string) error {
		return world.UnpublishName(s, i, C.GoString(port))
	})
}

//export ftmpi_Lookup_name
func ftmpi_Lookup_name(service *C.char, info C.uintptr_t, port *C.char) C.int {
	return nameCall("MPI_Lookup_name", service, info, func(i *mpi.Info, s string) error {
		p, err := world.LookupName(s, i)
		if err == nil {
			cstr(port, p, C.MPI_MAX_PORT_NAME)
		}
		return err
	})
}

// nameCall runs a name service call; its errors go to MPI_COMM_WORLD's
// handler (package mpi returns them: no communicator is involved).
func nameCall(op string, service *C.char, info C.uintptr_t, fn func(i *mpi.Info, s string) error) C.int {
	if world == nil {
		return code(bad(mpi.ErrOther, op, "MPI is not initialized (call MPI_Init first)"))
	}
	i, err := infoOf(info, op)
	if err != nil {
		return code(err)
	}
	if service == nil {
		return code(worldFail(bad(mpi.ErrArg, op, "service_name is NULL")))
	}
	return code(worldFail(fn(i, C.GoString(service))))
}
