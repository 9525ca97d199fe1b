package p2p

import "slices"

// Detach gives the caller of a rendezvous send its buffer back before the
// send completes (package mpi: a send whose context was cancelled). The
// request to send is already at the receiver and cannot be withdrawn (MPI
// deprecates cancelling sends), so a send still waiting for its CTS goes
// on from a copy of its buffer: the receiver that matches it gets the
// message whole, and the request completes on its own (the caller must
// not wait on it nor release it). Detach reports false when the send is
// complete or its data is being written (the transport holds the buffer:
// wait for it), and for receives (use Cancel).
func (e *Engine) Detach(r *Req) bool {
	if r.isRecv {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if r.done.Load() || e.sends[r.id] != r {
		return false
	}
	r.buf = slices.Clone(r.buf)
	return true
}
