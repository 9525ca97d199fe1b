package mpi

import (
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Message is a message taken out of matching by a matched probe
// (MPI_Message): Mprobe and Improbe remove the message they find from the
// queue of messages waiting for a receive, so no other receive (another
// goroutine's wildcard Recv, say) can take it, and Mrecv or Imrecv
// receives exactly that message. A Message is received once; a second
// Mrecv of it fails with ErrRequest. A message that is never received
// holds its data (an eager message) or its sender (a rendezvous sender
// waits for it) until the World ends.
type Message struct {
	c      *Comm
	m      *p2p.Msg // nil for MessageNoProc
	source int
	used   atomic.Bool
}

// MessageNoProc is the message a matched probe of ProcNull returns
// (MPI_MESSAGE_NO_PROC): receiving it completes at once with a ProcNull
// status and receives nothing; it may be received any number of times.
var MessageNoProc = &Message{source: ProcNull}

// Mprobe blocks until a message matching source and tag can be received,
// takes it out of matching and returns it with its status (MPI_Mprobe):
// receive it with Mrecv or Imrecv. A probe of ProcNull returns
// MessageNoProc. The failure rules are Probe's: a message that arrived is
// found even if its sender failed since; otherwise a failed source raises
// ErrProcFailed, and a wildcard probe that a failure affects raises the
// error of a blocking wildcard receive (ULFM: ErrProcFailed while the
// failure is not acknowledged; run-through: ErrRankFailStop while
// wildcards are disabled).
func (c *Comm) Mprobe(source, tag int) (*Message, Status, error) {
	const op = "MPI_Mprobe"
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return nil, emptyStatus(), err
	}
	if source == ProcNull {
		return MessageNoProc, procNullStatus(), nil
	}
	peer := -1
	if source >= 0 {
		peer = c.peerWorldRank(source)
	}
	e, m := c.w.eng, c.ftm()
	for {
		sig := e.FailureSignal()
		if source == AnySource {
			if mm, ps, ok := e.Improbe(c.ctx, int32(source), int32(tag)); ok {
				return c.message(op, mm, ps)
			}
			if m.wildFailed(c) {
				return nil, emptyStatus(), c.handle(m.wildRecvErr(c, op))
			}
		}
		mm, ps, how, err := e.Mprobe(c.ctx, int32(source), peer, int32(tag), c.w.abort, sig, c.done)
		switch how {
		case p2p.WaitSignalled:
			continue
		case p2p.WaitCancelled:
			return nil, emptyStatus(), c.cutErr(op, source, "")
		}
		if err != nil {
			return nil, emptyStatus(), c.handle(c.engineErr(op, source, err))
		}
		return c.message(op, mm, ps)
	}
}

// Improbe is the nonblocking Mprobe (MPI_Improbe): when a message matching
// source and tag can be received, it takes it out of matching and returns
// it with its status and true; otherwise nil and false. Without such a
// message it raises the error a receive would (see Iprobe).
func (c *Comm) Improbe(source, tag int) (*Message, Status, bool, error) {
	const op = "MPI_Improbe"
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return nil, emptyStatus(), false, err
	}
	if source == ProcNull {
		return MessageNoProc, procNullStatus(), true, nil
	}
	if mm, ps, ok := c.w.eng.Improbe(c.ctx, int32(source), int32(tag)); ok {
		msg, st, err := c.message(op, mm, ps)
		return msg, st, true, err
	}
	if source >= 0 {
		if wr := c.peerWorldRank(source); c.w.eng.IsLost(wr) {
			c.w.recordFailure(wr)
			return nil, emptyStatus(), false, c.handle(newErr(ErrProcFailed, op, c, source, "source rank %d failed", source))
		}
	} else if m := c.ftm(); m.wildFailed(c) {
		return nil, emptyStatus(), false, c.handle(m.wildRecvErr(c, op))
	}
	return nil, emptyStatus(), false, nil
}

func (c *Comm) message(op string, mm *p2p.Msg, ps p2p.Status) (*Message, Status, error) {
	st, _ := c.recvStatus(op, ps, ps.Source)
	return &Message{c: c, m: mm, source: ps.Source}, st, nil
}

// take checks msg for Mrecv and Imrecv and marks it received.
func (msg *Message) take(op string) error {
	if msg == nil {
		return newErr(ErrRequest, op, nil, NoPeer, "nil message")
	}
	if msg.m == nil {
		return nil // MessageNoProc
	}
	if err := checkComm(msg.c, op); err != nil {
		return err
	}
	if msg.used.Swap(true) {
		return msg.c.handle(newErr(ErrRequest, op, msg.c, msg.source, "the message was already received (a Message is received once)"))
	}
	return nil
}

// Mrecv receives the message msg that Mprobe or Improbe took, into buf
// (MPI_Mrecv). A message longer than buf is an ErrTruncate error, one of
// another element type ErrType. An eager message is delivered even if its
// sender failed after the probe (its data is here); a rendezvous message
// whose sender failed before its data came raises ErrProcFailed. The wait
// for a message's data is not cut by a view's context (the message is
// matched already: as with a matched receive, it completes). A second
// Mrecv of msg fails with ErrRequest.
func Mrecv[T Elem](msg *Message, buf []T) (Status, error) {
	const op = "MPI_Mrecv"
	if msg != nil && msg.c != nil { // checked before the message is taken: a bad buffer type leaves it receivable
		if err := elemCheck[T](msg.c, op); err != nil {
			return emptyStatus(), msg.c.handle(err)
		}
	}
	if err := msg.take(op); err != nil {
		return emptyStatus(), err
	}
	if msg.m == nil {
		return procNullStatus(), nil
	}
	c := msg.c
	r, err := c.w.eng.Mrecv(msg.m, dtypeOf[T](), asBytes(buf))
	if err != nil {
		return emptyStatus(), c.handle(c.engineErr(op, msg.source, err))
	}
	if !r.Wait(c.w.abort) {
		return emptyStatus(), c.handle(c.w.abortedErr(op, c))
	}
	st, err := c.recvStatus(op, r.Status(), msg.source)
	c.w.eng.Release(r)
	return st, c.handle(err)
}

// Imrecv starts the receive of msg into buf (MPI_Imrecv); buf must not be
// read until the request completes. The rules are Mrecv's.
func Imrecv[T Elem](msg *Message, buf []T) (*Request, error) {
	const op = "MPI_Imrecv"
	if msg != nil && msg.c != nil { // checked before the message is taken: a bad buffer type leaves it receivable
		if err := elemCheck[T](msg.c, op); err != nil {
			return nil, msg.c.handle(err)
		}
	}
	if err := msg.take(op); err != nil {
		return nil, err
	}
	if msg.m == nil {
		req := &Request{op: op, peer: ProcNull, recv: true}
		req.finish(procNullStatus(), nil)
		return req, nil
	}
	c := msg.c
	r, err := c.w.eng.Mrecv(msg.m, dtypeOf[T](), asBytes(buf))
	if err != nil {
		return nil, c.handle(c.engineErr(op, msg.source, err))
	}
	return &Request{c: c, op: op, peer: msg.source, recv: true, pr: r}, nil
}
