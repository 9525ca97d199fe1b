package mpi

import (
	"errors"
	"strconv"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Persistent requests (MPI-4.1 3.9 for point-to-point, 6.13 for the
// persistent collectives).
//
// An *Init call checks its arguments once and returns an inactive
// persistent Request; Start (or Startall) begins one operation with those
// arguments, and the completion calls (Wait, Test, Waitall, ...) complete
// it and leave the request inactive, ready for the next Start. The
// completion calls treat an inactive persistent request as MPI_REQUEST_NULL
// (an empty status; Waitany and Testany skip it) but never set its entry
// to nil: the program keeps it to start it again, until Request.Free.
//
// Failure rules: each Start begins a fresh operation on the communicator
// the request was made on, so it follows the rules of its nonblocking
// counterpart (Isend, Irecv, Ibcast, ...) in the communicator's model:
//
//   - A failure of the peer or a revocation of the communicator is never
//     reported by Start but by the completion call (seed 002 A.2: "All
//     process failure errors are postponed until the corresponding
//     completion function is called"): ErrProcFailed, ErrRevoked.
//   - A wildcard (AnySource) persistent receive that a failure affects
//     raises what Irecv's request raises: ULFM, ErrPending at Wait with the
//     request still active (acknowledge with FailureAck, then wait again);
//     run-through, ErrRankFailStop while wildcards are disabled.
//   - Run-through: a persistent send or receive naming a recognised failed
//     peer completes with ErrRankFailStop at each Start's completion, as
//     Isend and Irecv do; persistent collectives run on the view of the
//     alive processes once the failures are recognised by Validate.
//   - A persistent request is bound to its communicator: after Shrink the
//     requests of the old (revoked) communicator keep completing with
//     ErrRevoked (or ErrProcFailed); make new ones on the shrunk
//     communicator.
//
// Persistent collectives: the Init call is a collective call (every member
// makes it, in the same order as its other collectives); it checks the
// arguments and takes the position of the first operation in the
// communicator's collective sequence, so argument errors are reported by
// Init. Each later Start takes the next position, like a call of the
// nonblocking form: all members must start their persistent collectives in
// the same order relative to one another and to the other collectives
// (MPI-4.1 6.13). The first Start runs what Init prepared, even if a
// failure happened in between.

// persistent is the state of a persistent request.
type persistent struct {
	// start begins one operation: it sets r.pr, or finishes r. An error
	// is one of the call's own (already through the error handler); r is
	// then left inactive.
	start  func(r *Request) error
	active bool // started and not yet completed by a completion call
}

// newPersistent returns an inactive persistent request.
func newPersistent(c *Comm, op string, peer int, recv bool) *Request {
	r := &Request{c: c, op: op, peer: peer, recv: recv, pers: &persistent{}, done: true, st: emptyStatus()}
	if c.w.cfg.Check {
		c.chkAdd(r, NoPeer, 0, nil, recv) // live until freed (check.go)
	}
	return r
}

// usable checks that r may be passed to op.
func (r *Request) usable(op string) error {
	if r == nil {
		return newErr(ErrRequest, op, nil, NoPeer, "nil request")
	}
	if r.freed {
		return newErr(ErrRequest, op, r.c, NoPeer, "request was freed")
	}
	if r.returned {
		return r.chkUsed(op)
	}
	return nil
}

// inactive reports whether r counts as MPI_REQUEST_NULL in the completion
// calls: nil, freed, or a persistent request not started since its last
// completion.
func (r *Request) inactive() bool {
	return r == nil || r.freed || (r.pers != nil && !r.pers.active)
}

// deactivate marks a persistent request inactive once a completion call
// has returned its status.
func (r *Request) deactivate() {
	r.sent = p2p.SentMsg{} // its completion was returned: too late to cancel
	if r.pers != nil {
		r.pers.active = false
		return
	}
	r.returned = true
	if r.chk {
		r.chkDone()
	}
}

// retire ends the entry i of a completion call's slice whose completion it
// returned: a persistent request becomes inactive, any other is set to nil.
func retire(reqs []*Request, i int) {
	reqs[i].sent = p2p.SentMsg{} // its completion was returned: too late to cancel
	if r := reqs[i]; r.pers != nil {
		r.pers.active = false
		return
	}
	if reqs[i].chk { // (not marked returned: RequestOf.Wait after Waitall is how its value is taken)
		reqs[i].chkDone()
	}
	reqs[i] = nil
}

// Start begins the operation of the persistent request r (MPI_Start). r
// must be inactive: starting an active request (started and not yet
// completed by Wait, Test or another completion call) is an ErrRequest
// error, as is starting a freed request; a request whose communicator was
// freed is an ErrComm error. Failures of the peer and revocations are
// reported by the completion call, never by Start.
func (r *Request) Start() error {
	const op = "MPI_Start"
	if err := r.startable(op); err != nil {
		return err
	}
	return r.begin()
}

// startable checks that r can be started.
func (r *Request) startable(op string) error {
	if err := r.usable(op); err != nil {
		return err
	}
	if r.pers == nil {
		return r.c.handle(newErr(ErrRequest, op, r.c, NoPeer, "the %s request is not persistent (only the requests of the *Init calls can be started)", r.op))
	}
	if r.pers.active {
		return r.c.handle(newErr(ErrRequest, op, r.c, NoPeer, "the %s request is already active: complete it (Wait, Test) before starting it again", r.op))
	}
	return checkComm(r.c, op)
}

// begin starts a checked persistent request.
func (r *Request) begin() error {
	r.done, r.st, r.err, r.tracked, r.userCancel, r.sent = false, Status{}, nil, false, false, p2p.SentMsg{}
	r.pers.active = true
	if err := r.pers.start(r); err != nil {
		r.pers.active = false
		r.done, r.st = true, emptyStatus()
		return err
	}
	return nil
}

// Startall starts every request of reqs (MPI_Startall). They are all
// checked first (non-nil, persistent, inactive, each one once): if one is
// not startable, none is started and the error names its index.
func Startall(reqs []*Request) error {
	const op = "MPI_Startall"
	for i, r := range reqs {
		if err := r.startable(op); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e2 := *e
				e2.Detail = "request " + strconv.Itoa(i) + ": " + e.Detail
				return &e2
			}
			return err
		}
		for _, q := range reqs[:i] {
			if q == r {
				return r.c.handle(newErr(ErrRequest, op, r.c, NoPeer, "request %d appears twice", i))
			}
		}
	}
	for _, r := range reqs {
		if err := r.begin(); err != nil {
			return err
		}
	}
	return nil
}

// Free releases the request (MPI_Request_free). A completed or inactive
// request is released at once. An active one completes on its own (a send
// is still delivered, a receive still fills its buffer) but can no longer
// be waited on; its outcome, a failure included, is not reported. Any
// later call with r is an ErrRequest error; a freed persistent request
// cannot be started again.
func (r *Request) Free() error {
	const op = "MPI_Request_free"
	if err := r.usable(op); err != nil {
		return err
	}
	r.freed = true
	if r.chk {
		r.chkDone()
	}
	if r.ext != nil {
		return r.ext.freeReq(r)
	}
	if r.pr == nil {
		return nil
	}
	if r.pr.Done() {
		r.collect()
		return nil
	}
	if r.tracked {
		r.c.ftm().untrackWild(r.c, r.pr)
		r.tracked = false
	}
	// Released to the garbage collector once complete; done keeps the
	// completion calls from looking at it (a freed request is inactive).
	r.pr, r.done, r.st = nil, true, emptyStatus()
	return nil
}

// SendInit makes a persistent standard-mode send of buf to dest
// (MPI_Send_init). buf is sent as it is at each Start and must not be
// modified until that operation completes.
func SendInit[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	return sendInit(c, "MPI_Send_init", buf, dest, tag, false)
}

// SsendInit makes a persistent synchronous send (MPI_Ssend_init): each
// operation completes once the matching receive has started.
func SsendInit[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	return sendInit(c, "MPI_Ssend_init", buf, dest, tag, true)
}

// RsendInit makes a persistent ready-mode send (MPI_Rsend_init). A correct
// ready-mode program has its receive posted before each Start; ftmpi sends
// it as a standard-mode send, which MPI allows (MPI-4.1 3.4).
func RsendInit[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	return sendInit(c, "MPI_Rsend_init", buf, dest, tag, false)
}

func sendInit[T Elem](c *Comm, op string, buf []T, dest, tag int, sync bool) (*Request, error) {
	dt, err := sendArgs[T](c, op, dest, tag)
	if err != nil {
		return nil, err
	}
	req := newPersistent(c, op, dest, false)
	b := asBytes(buf)
	req.pers.start = func(r *Request) error {
		r.startSend(dt, b, dest, tag, sync)
		return nil
	}
	return req, nil
}

// startSend begins one send of a persistent request, as isend does; a
// failure or a revocation completes r with its error (at completion, seed
// 002 A.2).
func (r *Request) startSend(dt p2p.DType, b []byte, dest, tag int, sync bool) {
	c := r.c
	if dest == ProcNull {
		r.finish(emptyStatus(), nil)
		return
	}
	pr, sent, err := c.w.eng.IsendMsg(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(tag), dt, b, sync, 0)
	r.sent = sent // for Cancel
	switch {
	case err != nil:
		pr = c.w.eng.NewLocalReq()
		pr.Finish(p2p.Status{Err: err})
		r.pr = pr
	case pr == nil:
		r.finish(emptyStatus(), nil)
	default:
		r.pr = pr
	}
}

// RecvInit makes a persistent receive into buf (MPI_Recv_init). source
// may be AnySource, tag AnyTag. buf must not be read until each operation
// completes.
func RecvInit[T Elem](c *Comm, buf []T, source, tag int) (*Request, error) {
	const op = "MPI_Recv_init"
	dt, err := recvArgs[T](c, op, source, tag)
	if err != nil {
		return nil, err
	}
	req := newPersistent(c, op, source, true)
	b := asBytes(buf)
	req.pers.start = func(r *Request) error {
		if source == ProcNull {
			r.finish(procNullStatus(), nil)
			return nil
		}
		pr, err := c.postRecv(source, tag, dt, b)
		if err != nil {
			// Only a closed engine (the job ended) fails the post.
			pr = c.w.eng.NewLocalReq()
			pr.Finish(p2p.Status{Err: err})
			r.pr = pr
			return nil
		}
		r.pr = pr
		if source == AnySource {
			c.ftm().trackWild(c, r)
		}
		return nil
	}
	return req, nil
}

// Persistent collectives (MPI-4.1 6.13). Each Init call prepares the first
// operation at once (see the file comment); each later Start prepares the
// next like its nonblocking form.

// collInit makes a persistent collective whose operations prep prepares.
func collInit(c *Comm, op string, prep func() (collRun, error)) (*Request, error) {
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	run, err := prep()
	if err != nil {
		return nil, err
	}
	req := newPersistent(c, op, NoPeer, false)
	req.local = true
	first := run
	req.pers.start = func(r *Request) error {
		run := first
		if run == nil {
			var err error
			if run, err = prep(); err != nil {
				return err
			}
		}
		first = nil
		r.pr = c.goColl(op, run)
		return nil
	}
	return req, nil
}

// BarrierInit makes a persistent barrier (MPI_Barrier_init).
func (c *Comm) BarrierInit() (*Request, error) {
	const op = "MPI_Barrier_init"
	return collInit(c, op, func() (collRun, error) { return barrierPrep(c, op) })
}

// BcastInit makes a persistent broadcast of buf from root (MPI_Bcast_init).
func BcastInit[T Elem](c *Comm, buf []T, root int) (*Request, error) {
	const op = "MPI_Bcast_init"
	return collInit(c, op, func() (collRun, error) { return bcastPrep(c, op, buf, root) })
}

// ReduceInit makes a persistent reduction (MPI_Reduce_init).
func ReduceInit[T Elem](c *Comm, send, recv []T, rop *Op, root int) (*Request, error) {
	const op = "MPI_Reduce_init"
	return collInit(c, op, func() (collRun, error) { return reducePrep(c, op, send, recv, rop, root) })
}

// AllreduceInit makes a persistent all-reduction (MPI_Allreduce_init).
func AllreduceInit[T Elem](c *Comm, send, recv []T, rop *Op) (*Request, error) {
	const op = "MPI_Allreduce_init"
	return collInit(c, op, func() (collRun, error) { return allreducePrep(c, op, send, recv, rop) })
}

// GatherInit makes a persistent gather (MPI_Gather_init).
func GatherInit[T Elem](c *Comm, send, recv []T, root int) (*Request, error) {
	const op = "MPI_Gather_init"
	return collInit(c, op, func() (collRun, error) { return gatherPrep(c, op, send, recv, root) })
}

// GathervInit makes a persistent gather with counts (MPI_Gatherv_init).
func GathervInit[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) (*Request, error) {
	const op = "MPI_Gatherv_init"
	return collInit(c, op, func() (collRun, error) { return gathervPrep(c, op, send, recv, counts, displs, root) })
}

// ScatterInit makes a persistent scatter (MPI_Scatter_init).
func ScatterInit[T Elem](c *Comm, send, recv []T, root int) (*Request, error) {
	const op = "MPI_Scatter_init"
	return collInit(c, op, func() (collRun, error) { return scatterPrep(c, op, send, recv, root) })
}

// ScattervInit makes a persistent scatter with counts (MPI_Scatterv_init).
func ScattervInit[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) (*Request, error) {
	const op = "MPI_Scatterv_init"
	return collInit(c, op, func() (collRun, error) { return scattervPrep(c, op, send, recv, counts, displs, root) })
}

// AllgatherInit makes a persistent all-gather (MPI_Allgather_init).
func AllgatherInit[T Elem](c *Comm, send, recv []T) (*Request, error) {
	const op = "MPI_Allgather_init"
	return collInit(c, op, func() (collRun, error) { return allgatherPrep(c, op, send, recv) })
}

// AllgathervInit makes a persistent all-gather with counts
// (MPI_Allgatherv_init).
func AllgathervInit[T Elem](c *Comm, send, recv []T, counts, displs []int) (*Request, error) {
	const op = "MPI_Allgatherv_init"
	return collInit(c, op, func() (collRun, error) { return allgathervPrep(c, op, send, recv, counts, displs) })
}

// AlltoallInit makes a persistent all-to-all (MPI_Alltoall_init).
func AlltoallInit[T Elem](c *Comm, send, recv []T) (*Request, error) {
	const op = "MPI_Alltoall_init"
	return collInit(c, op, func() (collRun, error) { return alltoallPrep(c, op, send, recv) })
}

// AlltoallvInit makes a persistent all-to-all with counts
// (MPI_Alltoallv_init).
func AlltoallvInit[T Elem](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*Request, error) {
	const op = "MPI_Alltoallv_init"
	return collInit(c, op, func() (collRun, error) {
		return alltoallvPrep(c, op, send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	})
}

// ReduceScatterBlockInit makes a persistent reduce-scatter with equal
// blocks (MPI_Reduce_scatter_block_init).
func ReduceScatterBlockInit[T Elem](c *Comm, send, recv []T, rop *Op) (*Request, error) {
	const op = "MPI_Reduce_scatter_block_init"
	return collInit(c, op, func() (collRun, error) { return reduceScatterBlockPrep(c, op, send, recv, rop) })
}

// ReduceScatterInit makes a persistent reduce-scatter
// (MPI_Reduce_scatter_init).
func ReduceScatterInit[T Elem](c *Comm, send, recv []T, counts []int, rop *Op) (*Request, error) {
	const op = "MPI_Reduce_scatter_init"
	return collInit(c, op, func() (collRun, error) { return reduceScatterPrep(c, op, send, recv, counts, rop) })
}

// ScanInit makes a persistent inclusive scan (MPI_Scan_init).
func ScanInit[T Elem](c *Comm, send, recv []T, rop *Op) (*Request, error) {
	const op = "MPI_Scan_init"
	return collInit(c, op, func() (collRun, error) { return scanPrep(c, op, send, recv, rop, false) })
}

// ExscanInit makes a persistent exclusive scan (MPI_Exscan_init).
func ExscanInit[T Elem](c *Comm, send, recv []T, rop *Op) (*Request, error) {
	const op = "MPI_Exscan_init"
	return collInit(c, op, func() (collRun, error) { return scanPrep(c, op, send, recv, rop, true) })
}
