package p2p

// Receives of unknown length. A receive posted with IrecvAlloc has no
// buffer: when a message matches it (an unexpected one at the post, or
// one arriving later, eager or by rendezvous), the engine gives it a
// buffer of exactly the message's length, from the size-classed pools,
// or the unexpected message's own pooled buffer without a copy. So a
// message of any length is received whole, in one matching step: unlike
// a probe followed by a receive, no other receive (another goroutine's
// wildcard) can take the message in between.

// DTValue is the type code of a message whose payload is an encoded Go
// value (package mpi's SendValue and the value collectives), so that a
// receive of a typed buffer does not take it for its elements.
const DTValue DType = 64

// IrecvAlloc posts a receive of a message of dtype of any length into a
// buffer the engine provides (see above). peer is the world rank of src
// (-1 for AnySource). Once the request is complete, Data returns the
// message; Release recycles the buffer, so the caller must be done with
// the data (or have taken it with TakeData) before releasing. A matching
// message of another dtype completes the receive with ErrType (the
// message is consumed, as by Irecv).
func (e *Engine) IrecvAlloc(ctx uint32, src int32, peer int, tag int32, dtype DType) (*Req, error) {
	return e.irecv(ctx, src, peer, tag, dtype, nil, 0, true)
}

// allocFor gives an IrecvAlloc receive r a buffer for a matching message
// of n bytes of type dtype (none for another type: the receive then fails
// with ErrType).
func allocFor(r *Req, dtype DType, n int) {
	if r.alloc && dtype == r.dtype && r.buf == nil {
		r.buf, r.pooled = getBuf(n)
	}
}

// Data is the message an IrecvAlloc receive received (valid once it
// completed without error, until Release).
func (r *Req) Data() []byte {
	if !r.alloc || r.st.Bytes > len(r.buf) {
		return nil
	}
	return r.buf[:r.st.Bytes]
}

// TakeData is Data, and the buffer becomes the caller's: Release no
// longer recycles it.
func (r *Req) TakeData() []byte {
	b := r.Data()
	r.buf, r.pooled = nil, nil
	return b
}
