// Package rma is the one-sided (MPI-4.1 chapter 12) engine under package
// mpi's typed Win bindings. So far it owns a window target's lock state
// (LockTable: holders, the queue of waiting requests, grants in request
// order, the locks and requests of failed origins dropped), the markers
// of the active-target epochs (Markers: fence epochs reached per member,
// posts and completes not yet matched, each wait's completion given the
// members known failed) and the request header every window request
// starts with (Header: its fields and their encoding on the wire).
//
// It knows nothing of communicators, datatypes, error classes or the
// fault-tolerance models: package mpi's target server reads requests,
// applies them to the window memory and replies, calling the lock table
// and the codec here. Still in package mpi (issue 25 item 2, the next
// steps): the target server loop, the waits and their wake-ups, the
// origin's epoch and failure bookkeeping and the accumulate operations on
// byte buffers (the reduction table lives with the datatypes).
//
// It must not import package mpi, do I/O, start goroutines, read clocks,
// lock (callers serialise: the lock table is the server goroutine's, the
// markers are under the window's marker mutex) or keep
// process-global state.
package rma
