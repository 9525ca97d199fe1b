package mpi

import "unsafe"

// SetCrowdedForTest forces w's choice of collective algorithms (1: those
// of a crowded host, -1: those of an uncrowded one, 0: from the launcher's
// data). Every rank of a job must set the same mode, before its first
// collective on a communicator (the choice is cached per communicator).
func SetCrowdedForTest(w *World, mode int32) { w.rt.Hosts.Force.Store(mode) }

// CrowdedForTest reports the algorithm choice input of c.
func CrowdedForTest(c *Comm) bool { return c.crowded() }

// ShmCallsForTest is the number of collective calls c made through its
// shared segment at this rank.
func ShmCallsForTest(c *Comm) uint64 { return c.shmCalls() }

// ShmAddrForTest is the address of c's shared segment mapping here (0:
// none).
func ShmAddrForTest(c *Comm) uintptr {
	if m := c.coll.shm.Mapping(); len(m) > 0 {
		return uintptr(unsafe.Pointer(&m[0]))
	}
	return 0
}
