package mpi

// Requests whose completion is their maker's: the generalized requests
// (MPI_Grequest_start, MPI 13.2) and MPI_Isendrecv, whose one request
// covers a send and a receive.

import (
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// extReq is what a request made here adds to a local Request.
type extReq struct {
	// status fills the status of the completed request (query_fn; the
	// receive's status for Isendrecv); its error is the request's.
	status func(*Status) error
	// free releases the maker's state (free_fn), once, after status or
	// at MPI_Request_free.
	free func() error
	// cancel is MPI_Cancel's (cancel_fn), given whether the operation
	// has completed; nil: MPI_Cancel does nothing.
	cancel func(complete bool) error

	mu       sync.Mutex
	complete bool // GrequestComplete was called
	freed    bool // free ran
	dropped  bool // MPI_Request_free before completion: free at completion
}

// collect ends r, whose engine request completed with err.
func (x *extReq) collect(r *Request, err error) {
	st := emptyStatus()
	if x.status != nil {
		if serr := x.status(&st); serr != nil && err == nil {
			err = serr
		}
	}
	if ferr := x.runFree(); ferr != nil && err == nil {
		err = ferr
	}
	st.Err = err
	r.finish(st, err)
}

func (x *extReq) runFree() error {
	x.mu.Lock()
	if x.freed || x.free == nil {
		x.freed = true
		x.mu.Unlock()
		return nil
	}
	x.freed = true
	x.mu.Unlock()
	return x.free()
}

func (x *extReq) cancelReq(r *Request) error {
	if x.cancel == nil {
		return nil
	}
	x.mu.Lock()
	complete := x.complete || r.done
	x.mu.Unlock()
	if err := x.cancel(complete); err != nil {
		return r.c.handle(newErr(ErrOther, "MPI_Cancel", r.c, NoPeer, "the request's cancel function failed: %v", err))
	}
	return nil
}

// freeReq is MPI_Request_free of r: a completed request is ended (its
// free function runs now), an active one when it completes.
func (x *extReq) freeReq(r *Request) error {
	if r.pr == nil {
		return nil
	}
	if r.pr.Done() {
		r.collect()
		return r.c.handle(r.err)
	}
	x.mu.Lock()
	x.dropped = true
	x.mu.Unlock()
	r.pr, r.done, r.st = nil, true, emptyStatus()
	return nil
}

// Grequest is a generalized request's completion handle (MPI 13.2, what
// MPI_Grequest_complete takes): the Request GrequestStart returned is
// waited on as any other; Complete ends it.
type Grequest struct {
	r  *Request
	pr *p2p.Req
	x  *extReq
}

// GrequestStart starts a generalized request (MPI_Grequest_start): an
// operation the program carries out itself and ends with
// Grequest.Complete. When the request is waited on or tested after it
// completed, query fills its status (its error becomes the request's),
// then free releases the program's state; cancel is MPI_Cancel's, told
// whether Complete was already called. Any of the three may be nil.
// Errors of the request are raised on Self's error handler.
func (w *World) GrequestStart(query func(*Status) error, free func() error, cancel func(complete bool) error) (*Request, *Grequest) {
	c := w.CommSelf()
	pr := c.w.eng.NewLocalReq()
	x := &extReq{status: query, free: free, cancel: cancel}
	r := &Request{c: c, op: "MPI_Grequest", peer: NoPeer, local: true, pr: pr, ext: x}
	return r, &Grequest{r: r, pr: pr, x: x}
}

// Complete tells that the operation of g has ended
// (MPI_Grequest_complete): a Wait on its request returns. Completing twice
// is an ErrRequest error.
func (g *Grequest) Complete() error {
	g.x.mu.Lock()
	if g.x.complete {
		g.x.mu.Unlock()
		return g.r.c.handle(newErr(ErrRequest, "MPI_Grequest_complete", g.r.c, NoPeer, "the generalized request was already completed"))
	}
	g.x.complete = true
	dropped := g.x.dropped
	g.x.mu.Unlock()
	g.pr.Finish(p2p.Status{})
	if dropped {
		// MPI_Request_free came first: nobody will wait; free now.
		if err := g.x.runFree(); err != nil {
			return g.r.c.handle(newErr(ErrOther, "MPI_Grequest_complete", g.r.c, NoPeer, "the request's free function failed: %v", err))
		}
	}
	return nil
}

// IsendrecvTyped starts a send to dest and a receive from source as one
// request (MPI_Isendrecv, MPI-4.0 3.10); it completes when both have, with
// the receive's status. sendbuf and recvbuf must not overlap.
func IsendrecvTyped[S, R Elem](c *Comm, sendbuf []S, sendcount int, sendtype *Datatype, dest, sendtag int,
	recvbuf []R, recvcount int, recvtype *Datatype, source, recvtag int) (*Request, error) {
	return isendrecv(c, "MPI_Isendrecv", func() (*Request, error) {
		return isendTyped(c, "MPI_Isendrecv", sendbuf, sendcount, sendtype, dest, sendtag, false)
	}, func() (*Request, error) {
		return irecvTypedOp(c, "MPI_Isendrecv", recvbuf, recvcount, recvtype, source, recvtag)
	})
}

// IsendrecvReplaceTyped is IsendrecvTyped with one buffer
// (MPI_Isendrecv_replace): buf is sent as it is at the call and replaced
// by the received message.
func IsendrecvReplaceTyped[T Elem](c *Comm, buf []T, count int, d *Datatype, dest, sendtag, source, recvtag int) (*Request, error) {
	const op = "MPI_Isendrecv_replace"
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return nil, c.handle(err)
	}
	tmp := append([]byte(nil), b...)
	return isendrecv(c, op, func() (*Request, error) {
		return isendTyped(c, op, tmp, count, d, dest, sendtag, false)
	}, func() (*Request, error) {
		return irecvTypedOp(c, op, b, count, d, source, recvtag)
	})
}

// isendrecv posts the receive, then the send, and returns the request
// that completes when a goroutine has waited for both.
func isendrecv(c *Comm, op string, send, recv func() (*Request, error)) (*Request, error) {
	rr, err := recv()
	if err != nil {
		return nil, err
	}
	sr, err := send()
	if err != nil {
		rr.Cancel()
		rr.waitQuiet(op)
		return nil, err
	}
	var rst Status
	pr := c.w.eng.NewLocalReq()
	x := &extReq{status: func(st *Status) error { *st = rst; return rst.Err }}
	req := &Request{c: c, op: op, peer: NoPeer, local: true, pr: pr, ext: x}
	go func() {
		st, rerr := rr.waitQuiet(op)
		if rerr != nil && !rr.done {
			// Pending (a wildcard receive after an unacknowledged
			// failure, seed 002 A.2.2): this request cannot stay pending
			// on its own, so the receive ends here with that error.
			rr.Cancel()
			rr.waitQuiet(op)
		}
		_, serr := sr.waitQuiet(op)
		if rerr == nil {
			rerr = serr
		}
		st.Err = rerr
		rst = st
		pr.Finish(p2p.Status{Err: rerr})
	}()
	return req, nil
}

// waitQuiet waits for r as Wait does but raises no error handler: the
// caller reports the error through a request of its own.
func (r *Request) waitQuiet(op string) (Status, error) {
	if r.done {
		return r.st, r.err
	}
	pending, aborted := r.waitOne(op)
	if aborted != nil {
		return emptyStatus(), aborted
	}
	if pending != nil {
		if r.done {
			return r.st, r.err
		}
		return emptyStatus(), pending
	}
	r.collect()
	return r.st, r.err
}
