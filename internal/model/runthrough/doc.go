// Package runthrough holds the pure parts of the run-through stabilization
// fault-tolerance model (seed 003, the MPI Forum draft chapter 17 of 2011):
// the map of a group onto the view of its alive members that collectives run
// on after Validate (Map), the moving of rank-indexed arguments and blocks
// between a group and its view, and the set arithmetic that decides whether
// a communicator is collectively active (Unrecognized) and whether wildcard
// receives are disabled (WildcardsDisabled).
//
// It works on world ranks and group positions only. It must not know the mpi
// package's types, do I/O, start goroutines or read clocks; the mpi package's
// run-through model (mpi/runthrough*.go) drives it.
package runthrough
