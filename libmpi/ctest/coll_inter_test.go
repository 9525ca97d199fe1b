package ctest

import "testing"

// TestCollInter: the rooted, v, all-to-all and reduce-scatter collectives
// on an intercommunicator through the C binding (MPI_ROOT and
// MPI_PROC_NULL with their insignificant arguments NULL, the remote
// group's counts), and MPI_IN_PLACE refused with MPI_ERR_BUFFER.
func TestCollInter(t *testing.T) {
	out := collRun(t, "testdata/coll_inter.c", "4")
	collWant(t, out, "result: intercommunicator collectives wrong 0 in-place not refused 0")
}
