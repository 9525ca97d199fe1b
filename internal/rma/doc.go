// Package rma is the one-sided (MPI-4.1 chapter 12) engine under package
// mpi's typed Win bindings, as internal/coll is the collective one.
//
// It owns, per window and member (Window): the target server (Serve: it
// reads the requests of every origin in arrival order, applies them to
// the window memory under the memory lock, answers those that want an
// answer), the request protocol (Header, the layout requests' typemap
// codec), the lock state (LockTable: holders, the queue, grants in
// request order, a failed origin's locks and requests dropped), the
// active-target markers (Markers), the origin's epochs (fence, Post/Start/
// Complete/Wait, Lock/LockAll) with their checks and waits, the
// outstanding one-way operations and the failures kept per target until
// the synchronisation that must raise them, and the accumulates applied
// on bytes (MPI_REPLACE and MPI_NO_OP itself, the predefined reductions
// through Config.Reduce). A shared window's segment is the engine's too
// (ShareWindow: what the members exchange to set it up, its layout, its
// outcomes as Error codes; SharedMem: the parts, the query's rule, the
// unmapping), over package rma/segment (the file, the mapping, the
// set-up's protocol).
//
// Protocol. Put and accumulate are one way; a target's server applies
// the requests of one origin in the order they were sent, so the marker,
// unlock or flush that the origin's synchronisation sends afterwards says
// they were applied. Get, the fetching accumulates and compare-and-swap
// are a round trip completed in the call. An operation on the member's own
// window is applied in the call. A failure of the target is kept and
// raised by the next synchronisation (an EpochError; seed 002 A.2.4); a
// synchronisation also raises it when the target of one-way operations is
// known failed by then. A fence is a barrier of markers (every member not
// known failed sent its own), not a collective barrier, so the epoch
// completes among the live members (seed 003 17.11); every wait
// re-examines its condition when a marker arrives and when a failure
// becomes known (Net.Signal), so no synchronisation waits for a failed
// process, and a revocation or the end of the job ends it with an Error.
// When the transport reports a loss, the server drops the failed origins'
// locks and queued requests and grants the next waiters: a lock held by a
// failed process is released.
//
// It knows nothing of communicators, datatypes, error classes or the
// fault-tolerance models: it talks to its transport through Net (window
// ranks, one ordered channel per pair), applies the layout requests of
// derived datatypes through Config.Layout, and returns Error (a Code),
// EpochError (a kept failure) or the Net's own errors, which the binding
// maps to its error classes. It must not import package mpi or any
// transport, start goroutines (the binding runs Serve in one), read
// clocks or keep process-global state.
package rma
