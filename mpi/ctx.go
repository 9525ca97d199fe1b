package mpi

import (
	"context"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Contexts and deadlines.
//
// Design. A blocking call is bounded by a context.Context through a view
// of its communicator, c.WithContext(ctx), not through a second function
// per call (RecvCtx, SendCtx, BcastCtx, ...): a view is a *Comm, so every
// function that takes a communicator (point-to-point, probes, request
// completion, every collective, communicator management, Agree, Shrink,
// and whatever is added later) takes the view without a new signature,
// and the API does not double. A *Comm is a handle over the state its
// views share (comm.go: commState), so a view is the same communicator:
// same ranks, context ids, collective sequence, error handler and
// fault-tolerance model. The only cost to calls without a context is a
// nil channel in the select they block in, which never fires (the eager
// path allocates nothing either way: TestEagerPathDoesNotAllocate,
// TestViewEagerPathDoesNotAllocate).
//
// Semantics (documented on WithContext): the context bounds the time a
// call waits; a call that can complete without waiting completes. What a
// cut leaves behind depends on what MPI can withdraw:
//
//   - a receive (Recv, Sendrecv's receive) that has not
//     matched a message is withdrawn from matching (the engine's Cancel),
//     so a message that arrives later is matched by a later receive, never
//     written into a buffer the caller got back; one that has matched
//     completes with its message (as MPI_Cancel of a matched receive
//     fails), which takes at most the transfer of that message;
//   - a send: MPI cannot withdraw a message announced to its receiver
//     (MPI-4.1 deprecates MPI_Cancel of sends), so a rendezvous send still
//     waiting for its receiver goes on from a copy of the buffer
//     (p2p.Engine.Detach) and is delivered whole if the receiver receives
//     it; the caller gets its buffer back and the error says the message
//     may still be delivered. An eager send never waits for the receiver;
//     one blocked in the transport (the peer stopped reading and the
//     socket buffers are full) is not interrupted: the transport owns the
//     buffer until it has written it or the peer is declared failed;
//   - a probe (Probe, Mprobe) just stops waiting; Mrecv is not cut (its
//     message is matched already: it completes as a matched receive);
//   - Wait, Waitall, Waitany, Waitsome of a request started on a view end
//     it as the blocking call would (Request.cut): a receive that has not
//     matched is withdrawn (its status says Cancelled, its error is the
//     cut), a rendezvous send is detached, a matched receive or a send
//     being written completes; the request is then complete. The request
//     of a nonblocking collective started on a view completes when its
//     call, cut by the same context, ends; Iagree and Ishrink requests
//     complete when their protocol does (use Agree or Shrink on a view to
//     get control back at the deadline);
//   - a public collective (Barrier, Bcast, ..., and the nonblocking forms
//     running on a view) fails at this member and is failed at the others
//     as a mismatched call is (coll_sig.go: releaseCall): they return an
//     error of class ErrOther naming this rank and the context's error,
//     instead of waiting for this member; members that finished their part
//     before they heard of it return success. The outcome is therefore not
//     uniform, as with any collective error: a program that needs to know
//     agrees on it (Agree) or revokes. The communicator stays usable: the
//     next collective call is matched as usual;
//   - communicator creation (Dup, Split, Create, ...) on a view runs its
//     agreements as public collectives on the view: a cut fails the call
//     here and at the members that still needed this one, but members that
//     finished have the new communicator; as after any creation that
//     failed somewhere, the program must not use it without agreeing on
//     the outcome (Agree on the parent) and frees it otherwise;
//   - an internal protocol that carries no call signature (communicator
//     management's internal exchanges, intercommunicator collectives) cannot
//     be released call by call: a cut revokes the communicator (Revoke),
//     so the other members' operations on it fail with ErrRevoked;
//   - Agree and Shrink must run to their end at every live member (the
//     others' agreement needs this process's part): at this process the
//     call returns the context's error and the protocol goes on in the
//     background; the communicator a cut Shrink makes is revoked and freed
//     as soon as it exists, so the other survivors' operations on it fail
//     with ErrRevoked instead of waiting for this process.
//
// The error of a cut is an *Error of class ErrOther that wraps the
// context's error (errors.Is(err, context.DeadlineExceeded)). It is the
// caller's own request, so it is returned to the caller without calling
// the communicator's error handler (ErrorsAreFatal on CommWorld does not
// abort the job on a deadline). The error the other members of a cut
// collective see is an ordinary error and goes through their handlers.

// WithContext returns a view of c whose blocking calls return when ctx is
// done (MPI has no counterpart: it bounds MPI calls by a Go context). The
// view is c itself in every other respect: calls on the view and on c are
// calls on one communicator, in one collective sequence. Requests started
// on the view are bounded by ctx when waited on. Communicators created
// from the view (Dup, Split, Shrink, ...) do not inherit ctx. SetName on a
// view names the view only.
//
// A call on the view waits until it completes, the job aborts, or ctx is
// done; in the last case it returns an error of class ErrOther that
// wraps ctx.Err() (errors.Is(err, context.Canceled) or
// context.DeadlineExceeded), without calling the error handler. A call
// that can complete without waiting completes even if ctx is already done.
// What a cut call leaves behind (a withdrawn receive, a send delivered
// from a copy, a collective failed at the other members, a revoked
// communicator) is described at the top of ctx.go and in docs/semantics.md.
//
// A nil ctx gives a view on which every call fails with ErrArg.
//
// It has no MPI counterpart: Go-specific (MPI has no cancellation or
// deadline of a blocking call).
func (c *Comm) WithContext(ctx context.Context) *Comm {
	if c == nil {
		return nil
	}
	v := *c
	v.cctx = ctx
	if ctx == nil {
		v.done = closedChan
	} else {
		v.done = ctx.Done()
		if v.done == nil {
			// A context that is never done (context.Background): the view
			// behaves as c.
			v.cctx = nil
		}
	}
	if c.local != nil {
		v.local = c.local.WithContext(ctx)
	}
	return &v
}

// Context returns the context of a view made by WithContext, or
// context.Background() for a communicator without one. It has no MPI
// counterpart: Go-specific (see WithContext).
func (c *Comm) Context() context.Context {
	if c == nil || c.cctx == nil {
		return context.Background()
	}
	return c.cctx
}

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// badView reports whether c is a view made with a nil context.
func (c *Comm) badView() bool { return c.done != nil && c.cctx == nil }

func (c *Comm) badViewErr(op string) error {
	return newErr(ErrArg, op, c, NoPeer, "the communicator is a view made by WithContext with a nil context")
}

// cutErr is the error of a call on view c cut by its context; more is
// what the cut left behind ("" if nothing).
func (c *Comm) cutErr(op string, peer int, more string) error {
	cause := c.cctx.Err()
	if cause == nil {
		cause = context.Canceled
	}
	e := newErr(ErrOther, op, c, peer, "%v%s", cause, more)
	e.cause = cause
	return e
}

// isCut reports whether err is the error of a call cut by its context.
func isCut(err error) bool {
	e, ok := err.(*Error)
	return ok && e.cause != nil
}

// waitSend waits for send request r of op to dest and releases it; a cut
// detaches a rendezvous send that has not started writing its data.
func (c *Comm) waitSend(op string, r *p2p.Req, dest int) error {
	w := c.w
	if !r.Done() {
		defer w.leave(c.trackReq(op, "", dest, r))
	}
	switch r.WaitCancel(w.abort, c.done) {
	case p2p.WaitAborted:
		return w.abortedErr(op, c)
	case p2p.WaitCancelled:
		if w.eng.Detach(r) {
			return c.cutErr(op, dest, fmt.Sprintf("; the message was already announced to rank %d and is delivered from a copy if that rank receives it (a send cannot be withdrawn)", dest))
		}
		// Its data is being written: the transport holds the buffer.
		if !r.Wait(w.abort) {
			return w.abortedErr(op, c)
		}
	}
	st := r.Status()
	w.eng.Release(r)
	if st.Err != nil {
		return c.engineErr(op, dest, st.Err)
	}
	return nil
}

// recvCut handles a receive r whose wait was cut by c's context: it is
// withdrawn from matching if it has not matched (the cut error is
// returned and r released), otherwise it is waited for (nil: r completed
// with its message, to be collected by the caller).
func (c *Comm) recvCut(op string, r *p2p.Req, source int) error {
	w := c.w
	if w.eng.Cancel(r) {
		w.eng.Release(r)
		return c.cutErr(op, source, "")
	}
	if !r.Wait(w.abort) {
		return w.abortedErr(op, c)
	}
	return nil
}

// cutOne cuts the first pending request of reqs (not a local one) whose
// view's context is done and returns its index, or -1: the request is
// then complete (Waitany and Waitsome pick it up).
func cutOne(reqs []*Request, op string) int {
	for i, r := range reqs {
		if r != nil && !r.done && !r.local && r.c.cctx != nil && r.c.cctx.Err() != nil {
			r.cut(op)
			return i
		}
	}
	return -1
}

// cut ends request r, started on a view whose context is done, as the
// blocking call would end: a receive that has not matched is withdrawn
// (completed as cancelled with the cut error), a rendezvous send waiting
// for its receiver is detached (it goes on from a copy), and one that
// matched or is being written is waited for (nil: r completed on its own,
// to be collected as usual). A nonblocking collective's request (local)
// is not cut here: its call, running on the view, ends by the cut itself.
// It returns the cut error with r finished, or nil.
func (r *Request) cut(op string) error {
	c, e := r.c, r.c.w.eng
	if !r.local {
		if r.recv && e.Cancel(r.pr) {
			st := emptyStatus()
			st.Cancelled = true
			err := c.cutErr(op, r.peer, "; the receive is withdrawn")
			st.Err = err
			r.finish(st, err)
			return err
		}
		if !r.recv && e.Detach(r.pr) {
			r.pr = nil // the engine completes it on its own
			err := c.cutErr(op, r.peer, fmt.Sprintf("; the message was already announced to rank %d and is delivered from a copy if that rank receives it (a send cannot be withdrawn)", r.peer))
			st := emptyStatus()
			st.Err = err
			r.finish(st, err)
			return err
		}
	}
	if !r.pr.Wait(c.w.abort) {
		return c.w.abortedErr(op, c)
	}
	return nil
}

// protocol runs fn, a fault-tolerant protocol on c that must run to its
// end at every live member (Agree, Shrink), in its turn (agreeturn.go). On a
// view it waits for fn or the view's context: on a cut fn goes on in the
// background; drop, if not nil, is called there with what fn made once it
// ends (see Shrink).
func (c *Comm) protocol(op string, fn func() (any, error), drop func(any)) (any, error) {
	defer c.w.leave(c.trackOp(op))
	t := c.takeTurn() // agreeturn.go: in call order with the other agreement operations
	run := func() (any, error) { return inTurn(t, op, fn) }
	if c.done == nil {
		return run()
	}
	type result struct {
		v   any
		err error
	}
	ch := make(chan result) // unbuffered: a result is taken, or dropped after the cut
	cut := make(chan struct{})
	go func() {
		v, err := run()
		select {
		case ch <- result{v, err}:
		case <-cut:
			if drop != nil && err == nil {
				drop(v)
			}
		}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-c.done:
		// Either the protocol's result or the cut: whichever is first.
		select {
		case r := <-ch:
			return r.v, r.err
		default:
		}
		close(cut)
		return nil, c.cutErr(op, NoPeer, "; the protocol goes on in the background at this process")
	}
}

// cut ends a collective call of s whose wait for r was cut by the view's
// context: the call fails at the other members (a public collective,
// releaseCall) or the communicator is revoked (an internal protocol,
// which carries no call signature to fail it by); then r, which that
// completes, is waited for so that its buffer is the caller's again.
func (n *collNet) cut(s *coll.Set, r *p2p.Req) error {
	c, w := n.c, n.c.w
	var err error
	if s.Sig != 0 || coll.IsCheck(s.Tag) { // a public call, or its signature check (check.go)
		c.releaseCall(s, ErrOther, fmt.Sprintf("its call was cut by its context (%v)", c.cctx.Err()))
		err = c.cutErr(n.op, NoPeer, "; the other members' calls fail too")
	} else {
		f := w.ftOf(c)
		c.revokeLocal()
		f.d.Revoke()
		err = c.cutErr(n.op, NoPeer, "; the communicator is revoked")
	}
	if r.Wait(w.abort) {
		w.eng.Release(r)
	}
	return err
}

// dropShrunk disposes of the communicator a Shrink cut by its context made
// in the background: revoked, so that the other survivors' operations on
// it fail instead of waiting for this process, and freed here.
func dropShrunk(v any) {
	nc := v.(*Comm)
	_ = nc.Revoke()
	_ = nc.Free()
}
