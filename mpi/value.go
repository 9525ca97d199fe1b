package mpi

import (
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Go values as messages, as mpi4py's lower-case send and recv send Python
// objects with pickle: a value of any type (maps, slices of structs with
// pointers, strings) is encoded by the communicator's Codec (GobCodec by
// default, see SetCodec) and travels as one message of its encoded
// length; the receiver needs no size.
//
// The receive takes the message whole in one matching step: the engine
// gives it a buffer of the message's length when a message matches
// (p2p.Engine.IrecvAlloc: the unexpected message's own pooled buffer, or
// a pooled one for a message that arrives later, eager or by
// rendezvous). A probe followed by a receive of the probed size would
// not do with wildcards: another goroutine's receive could take the
// probed message in between.
//
// Value messages carry their own type code (p2p.DTValue): a Recv of a
// typed buffer does not take one for its elements, nor a RecvValue a
// typed message (both fail with ErrType). Status.Count of a value
// message is its encoded length in bytes.
//
// Failures follow the rules of Send and Recv in both fault-tolerance
// models: a receive from a failed process raises ErrProcFailed, a
// wildcard receive that a failure affects the model's error (ULFM:
// ErrProcFailed while blocking, ErrPending for IrecvValue's Wait until
// the failure is acknowledged), a revoked communicator ErrRevoked. A
// value the codec cannot encode, or a message it cannot decode into the
// receiver's type, is an ErrType error naming the codec and the type.

// SendValue sends v, encoded with c's codec, to rank dest with tag
// (mpi4py's comm.send: MPI_Send of the encoded bytes). It returns once
// the encoding may be reused; v is not retained.
func SendValue[T any](c *Comm, v T, dest, tag int) error {
	const op = "SendValue"
	if err := c.checkSendArgs(op, dest, tag); err != nil {
		return err
	}
	if dest == ProcNull {
		return nil
	}
	enc, err := encodeValue(c.Codec(), op, c, dest, &v)
	if err != nil {
		return c.handle(err)
	}
	aborted, err := c.sendBytes(op, p2p.DTValue, enc.b, dest, tag, false)
	if !aborted { // else the transport may still hold the bytes
		enc.free()
	}
	return c.handle(err)
}

// RecvValue receives a value sent by SendValue (or IsendValue, ...) from
// source with tag (mpi4py's comm.recv: MPI_Recv of a message of any
// length, decoded with c's codec into a new T). source may be AnySource,
// tag AnyTag; Status.Count is the encoded length in bytes. From
// ProcNull it returns T's zero value at once.
func RecvValue[T any](c *Comm, source, tag int) (T, Status, error) {
	const op = "RecvValue"
	var zero T
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return zero, emptyStatus(), err
	}
	if source == ProcNull {
		return zero, procNullStatus(), nil
	}
	r, err := c.postRecvValue(source, tag)
	if err != nil {
		return zero, emptyStatus(), c.handle(c.engineErr(op, source, err))
	}
	if err := c.waitRecv(op, r, source); err != nil {
		return zero, emptyStatus(), c.handle(err)
	}
	st, err := c.recvStatus(op, r.Status(), source)
	v := zero
	if err == nil {
		v, err = decodeValue[T](c.Codec(), op, c, st.Source, r.Data())
	}
	c.w.eng.Release(r)
	return v, st, c.handle(err)
}

// postRecvValue posts a receive of a value message of any length.
func (c *Comm) postRecvValue(source, tag int) (*p2p.Req, error) {
	peer := -1
	if source >= 0 {
		peer = c.peerWorldRank(source)
	}
	return c.w.eng.IrecvAlloc(c.ctx, int32(source), peer, int32(tag), p2p.DTValue)
}

// IsendValue starts sending v, encoded with c's codec, to rank dest
// (mpi4py's comm.isend). v is encoded before IsendValue returns, so it may
// be changed at once. Failures of dest are reported at completion, as for
// Isend.
func IsendValue[T any](c *Comm, v T, dest, tag int) (*Request, error) {
	const op = "IsendValue"
	if err := c.checkSendArgs(op, dest, tag); err != nil {
		return nil, err
	}
	req := &Request{c: c, op: op, peer: dest}
	if dest == ProcNull {
		req.finish(emptyStatus(), nil)
		return req, nil
	}
	enc, err := encodeValue(c.Codec(), op, c, dest, &v)
	if err != nil {
		return nil, c.handle(err)
	}
	req, err = c.isendBytes(req, p2p.DTValue, enc.b, dest, tag, false)
	switch {
	case err != nil || req.done:
		enc.free()
	case req.pr != nil:
		req.onDone = func(*p2p.Req) { enc.free() }
	}
	return req, err
}

// IrecvValue starts receiving a value from source with tag (mpi4py's
// comm.irecv); the request's Wait returns it, decoded with c's codec
// into a new T (a decoding error is Wait's), and Status its source, tag
// and encoded length. A wildcard receive follows Irecv's failure rules
// (ULFM: Wait raises ErrPending, leaving the request pending, while a
// potential sender failed without acknowledgement).
func IrecvValue[T any](c *Comm, source, tag int) (*RequestOf[T], error) {
	const op = "IrecvValue"
	req, err := c.irecv(op, source, tag, func() (*p2p.Req, error) { return c.postRecvValue(source, tag) })
	if err != nil {
		return nil, err
	}
	r := &RequestOf[T]{Request: req}
	codec := c.Codec()
	r.decode = func(data []byte) (T, error) {
		v, err := decodeValue[T](codec, op, c, req.st.Source, data)
		return v, c.handle(err)
	}
	if req.pr != nil {
		req.onDone = func(pr *p2p.Req) { r.data = pr.TakeData() }
	}
	return r, nil
}

// SendrecvValue sends v to dest and receives a value from source in one
// call that cannot deadlock against a matching SendrecvValue (mpi4py's
// comm.sendrecv: MPI_Sendrecv of encoded values). Failures combine as for
// Sendrecv.
func SendrecvValue[S, R any](c *Comm, v S, dest, sendtag, source, recvtag int) (R, Status, error) {
	const op = "SendrecvValue"
	var zero R
	if err := checkComm(c, op); err != nil {
		return zero, emptyStatus(), err
	}
	var enc encoded
	if dest >= 0 && dest < c.peerSize() {
		var err error
		if enc, err = encodeValue(c.Codec(), op, c, dest, &v); err != nil {
			return zero, emptyStatus(), c.handle(err)
		}
	}
	got := zero
	codec := c.Codec()
	st, err := c.sendrecv(op, p2p.DTValue, enc.b, dest, sendtag, source, recvtag,
		func() (*p2p.Req, error) { return c.postRecvValue(source, recvtag) },
		func(r *p2p.Req, st Status) error {
			var err error
			got, err = decodeValue[R](codec, op, c, st.Source, r.Data())
			return err
		})
	select {
	case <-c.w.abort: // the transport may still hold the bytes
	default:
		enc.free()
	}
	return got, st, err
}
