package mpi

import (
	"context"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Request is a pending nonblocking operation (MPI_Request). A Request must
// not be waited on or tested from two goroutines at once; different
// requests may be used concurrently. Once complete it stays complete:
// waiting again returns the same status. A persistent request (SendInit,
// RecvInit, the *Init collectives: persistent.go) instead becomes inactive
// once a completion call returned its status: waiting on it then returns
// an empty status at once, and Start begins its next operation.
type Request struct {
	c    *Comm
	op   string
	peer int
	recv bool
	// local: pr is completed by a goroutine (nonblocking collectives), its
	// Status.Err already an MPI error.
	local bool
	pr    *p2p.Req // nil once finished
	// tracked: a wildcard receive tracked by its communicator's
	// fault-tolerance model (ftModel.trackWild); userCancel: Cancel was
	// called (a wildcard receive cancelled otherwise was completed by the
	// model: ftModel.cancelledWildErr).
	tracked, userCancel bool
	// pers: a persistent request (persistent.go); freed: Free was called.
	pers  *persistent
	freed bool
	// The checking mode (check.go): chk, the World keeps r as live;
	// returned, Wait or Test returned the status of this non-persistent
	// request.
	chk, returned bool
	// onDone, if set, is given the engine request once it completed,
	// before it is released (IrecvValue takes the received data,
	// IsendValue recycles its encoded buffer).
	onDone func(*p2p.Req)

	done bool
	st   Status
	err  error

	// sent: a send's message, which Cancel can still withdraw (zero once
	// cancelled or once its completion was returned).
	sent p2p.SentMsg

	typed *typedReq // a derived-datatype request: unpack at completion (datatype.go)
	ext   *extReq   // a local request whose status and cancel are its maker's (request_ext.go)
}

func (r *Request) finish(st Status, err error) {
	r.done = true
	r.st, r.err = st, err
	if r.pr != nil {
		if r.onDone != nil {
			r.onDone(r.pr)
			r.onDone = nil
		}
		if r.tracked {
			r.c.ftm().untrackWild(r.c, r.pr)
		}
		r.c.w.eng.Release(r.pr)
		r.pr = nil
	}
}

// collect records the outcome of a completed engine request.
func (r *Request) collect() {
	ps := r.pr.Status()
	if r.local {
		if r.ext != nil {
			r.ext.collect(r, ps.Err)
			return
		}
		st := emptyStatus()
		st.Err = ps.Err
		r.finish(st, ps.Err)
		return
	}
	if r.typed != nil {
		defer func() { r.typed.done(&r.st, ps, r.err) }()
	}
	if r.recv {
		st, err := r.c.recvStatus(r.op, ps, r.peer)
		if ps.Cancelled && !r.userCancel && r.peer == AnySource {
			// Completed by the model's rules (run-through: wildcard
			// receives were disabled by a failure, seed 003 17.6, 17.6.1).
			if werr := r.c.ftm().cancelledWildErr(r.c, r.op); werr != nil {
				st.Cancelled = false
				err = werr
				st.Err = err
			}
		}
		r.finish(st, err)
		return
	}
	st := emptyStatus()
	st.Cancelled = ps.Cancelled
	var err error
	if ps.Err != nil {
		err = r.c.engineErr(r.op, r.peer, ps.Err)
		st.Err = err
	}
	r.finish(st, err)
}

func (r *Request) ready() bool { return r.done || r.pr.Done() }

// Wait blocks until the operation completes and returns its status
// (MPI_Wait). Errors go through the communicator's error handler.
func (r *Request) Wait() (Status, error) {
	if err := r.usable("MPI_Wait"); err != nil {
		return emptyStatus(), err
	}
	if r.inactive() {
		return emptyStatus(), nil // an inactive persistent request (MPI 3.7.3)
	}
	if r.done {
		r.deactivate()
		return r.st, r.err
	}
	// A failure that affects wildcard receives is the model's (waitOne):
	// ULFM (seed 002 A.2.2) raises ErrPending while a potential sender
	// failed without acknowledgement, the request staying pending;
	// run-through (seed 003 17.6) completes it with ErrRankFailStop.
	pending, aborted := r.waitOne("MPI_Wait")
	if aborted != nil {
		return emptyStatus(), r.c.handle(aborted)
	}
	if pending != nil {
		if r.done { // cut (ctx.go): complete, with its status
			return r.st, r.c.handle(r.err)
		}
		return emptyStatus(), r.c.handle(pending)
	}
	r.collect()
	r.deactivate()
	return r.st, r.c.handle(r.err)
}

// wildcard reports whether r is a pending MPI_ANY_SOURCE receive.
func (r *Request) wildcard() bool {
	return r.recv && !r.local && r.peer == AnySource && r.pr != nil
}

func (r *Request) pendingErr(op string) error {
	return newErr(ErrPending, op, r.c, AnySource,
		"a potential sender failed (%v) and the failure is not acknowledged; the receive is still pending (acknowledge with FailureAck)",
		r.c.failedMembers())
}

// Test reports whether the operation has completed, with its status
// (MPI_Test).
func (r *Request) Test() (Status, bool, error) {
	if err := r.usable("MPI_Test"); err != nil {
		return emptyStatus(), false, err
	}
	if r.inactive() {
		return emptyStatus(), true, nil
	}
	if r.done {
		r.deactivate()
		return r.st, true, r.err
	}
	if !r.pr.Done() {
		select {
		case <-r.c.w.abort:
			return emptyStatus(), false, r.c.handle(r.c.w.abortedErr("MPI_Test", r.c))
		default:
		}
		if err := r.wildCheck("MPI_Test"); err != nil {
			return emptyStatus(), false, r.c.handle(err)
		}
		if !r.pr.Done() {
			return emptyStatus(), false, nil
		}
	}
	r.collect()
	r.deactivate()
	return r.st, true, r.c.handle(r.err)
}

// Cancel asks for the operation to be cancelled (MPI_Cancel, MPI-4.1
// 3.8.4) and returns at once; the request must still be completed (Wait,
// Test, ...) or freed, and its status says whether it was cancelled
// (Status.Cancelled). A receive that has not matched a message is
// cancelled. A send (of any mode, persistent ones included) is cancelled
// if its message has not matched a receive yet: the receiver withdraws it
// and no receive will get it; otherwise the send completes normally. A
// send's completion then waits for the receiver's answer (a failed
// receiver completes it with ErrProcFailed). Cancel after the completion
// was returned has no effect.
func (r *Request) Cancel() error {
	if err := r.usable("MPI_Cancel"); err != nil {
		return err
	}
	if r.ext != nil {
		return r.ext.cancelReq(r)
	}
	if !r.recv && r.sent.Valid() {
		r.cancelSend()
		return nil
	}
	if r.done {
		return nil
	}
	r.userCancel = true
	r.c.w.eng.Cancel(r.pr)
	return nil
}

// cancelSend asks the receiver to withdraw the message of send r. A
// rendezvous send still pending (r.pr) completes cancelled or normally on
// its own; a send already complete (eager, buffered) waits again, for the
// receiver's answer.
func (r *Request) cancelSend() {
	sent := r.sent
	r.sent = p2p.SentMsg{}
	r.userCancel = true
	if r.done && r.err != nil {
		return // failed: nothing was sent
	}
	c := r.c.w.eng.CancelSend(sent)
	if !r.done {
		return // c completes on its own; left to the garbage collector
	}
	r.done, r.pr, r.st, r.err = false, c, Status{}, nil
}

// wildCheck applies the model's failure rules to r for Wait, Test and the
// multiple-completion calls (Waitany, Waitall, Waitsome and their Test
// forms) alike (seed 002 A.1: none blocks forever): a pending wildcard
// receive of a communicator where a failure affects wildcards gets the
// model's error with r left pending (ULFM, seed 002 A.2.2 and 5.1.4:
// ErrPending), or is completed by the model (run-through: then r.ready()).
// It returns nil when r is not affected.
func (r *Request) wildCheck(op string) error {
	if r == nil || !r.wildcard() || r.pr.Done() {
		return nil
	}
	m := r.c.ftm()
	if !m.wildFailed(r.c) {
		return nil
	}
	return m.wildPending(r, op)
}

// failureSignal returns the failure signal of the engine of the first
// active request of reqs (nil, which never fires, when there is none).
// Taken before the requests are examined, it fires on any failure that
// the examination could have missed.
func failureSignal(reqs []*Request) <-chan struct{} {
	for _, r := range reqs {
		if r != nil && !r.done {
			return r.c.w.eng.FailureSignal()
		}
	}
	return nil
}

// waitAnyReady blocks until one of reqs (non-nil, not done) completes,
// sig fires (a failure became known: the caller re-examines the requests)
// or the job is aborted; it reports false on abort.
func waitAnyReady(reqs []*Request, sig <-chan struct{}) bool {
	var w *World
	ch := make(chan struct{}, 1)
	for _, r := range reqs {
		if r != nil && !r.done {
			r.pr.SetWaiter(&ch)
			w = r.c.w
			if r.c.cctx != nil && !r.local { // started on a view: its context wakes us to cut r (ctx.go)
				stop := context.AfterFunc(r.c.cctx, func() {
					select {
					case ch <- struct{}{}:
					default:
					}
				})
				defer stop()
			}
		}
	}
	defer func() {
		for _, r := range reqs {
			if r != nil && r.pr != nil {
				r.pr.SetWaiter(nil)
			}
		}
	}()
	if w == nil {
		return true
	}
	for {
		for _, r := range reqs {
			if !r.inactive() && (r.ready() || !r.local && r.c.cctx != nil && r.c.cctx.Err() != nil) {
				return true
			}
		}
		select {
		case <-ch:
		case <-sig:
			return true
		case <-w.abort:
			return false
		}
	}
}

// waitOne waits for r (Wait, Waitall): pending is the model's error
// when r is a wildcard receive a failure leaves pending (r not completed),
// aborted the error of an aborted job; both nil once r is ready.
func (r *Request) waitOne(op string) (pending, aborted error) {
	w := r.c.w
	if !r.pr.Done() {
		defer w.leave(r.track(op))
	}
	if !r.wildcard() {
		switch r.pr.WaitCancel(w.abort, r.c.done) {
		case p2p.WaitAborted:
			return nil, w.abortedErr(op, r.c)
		case p2p.WaitCancelled: // started on a view: r is cut (ctx.go)
			return r.cut(op), nil
		}
		return nil, nil
	}
	for {
		sig := w.eng.FailureSignal()
		if err := r.wildCheck(op); err != nil {
			return err, nil
		}
		switch r.pr.WaitSignalCancel(w.abort, sig, r.c.done) {
		case p2p.WaitDone:
			return nil, nil
		case p2p.WaitAborted:
			return nil, w.abortedErr(op, r.c)
		case p2p.WaitCancelled:
			return r.cut(op), nil
		}
	}
}

// Waitall waits for every request (MPI_Waitall) and returns their
// statuses; nil entries are inactive (MPI_REQUEST_NULL) and get an empty
// status. Completed entries are set to nil. If any request failed, the
// error is of class ErrInStatus and each status's Err tells which. A
// wildcard receive that a failure leaves pending (ULFM: a potential sender
// failed, unacknowledged, seed 002 A.2.2) is not completed: its entry
// stays, its status's Err is of class ErrPending, and the other requests
// are completed as usual.
func Waitall(reqs []*Request) ([]Status, error) {
	if err := chkList("MPI_Waitall", reqs); err != nil {
		return nil, err
	}
	sts := make([]Status, len(reqs))
	var failed, abortReq *Request
	var failErr, abortErr error
	for i, r := range reqs {
		if r.inactive() {
			sts[i] = emptyStatus()
			continue
		}
		if !r.done {
			pending, aborted := r.waitOne("MPI_Waitall")
			if aborted != nil {
				abortReq, abortErr = r, aborted
				sts[i] = emptyStatus()
				sts[i].Err = aborted
				continue
			}
			if pending != nil && !r.done {
				sts[i] = emptyStatus()
				sts[i].Err = pending
				if failed == nil {
					failed, failErr = r, pending
				}
				continue
			}
			if !r.done {
				r.collect()
			}
		}
		sts[i] = r.st
		sts[i].Err = r.err
		if r.err != nil && failed == nil {
			failed, failErr = r, r.err
		}
		retire(reqs, i)
	}
	if abortErr != nil {
		// Through the handler, as Wait's: under ErrorsReinitAsync a
		// Waitall blocked when the epoch ends rolls back; it returned the
		// error, and a C program's loop went on with the step's sums.
		return sts, abortReq.c.handle(abortErr)
	}
	if isCut(failErr) {
		return sts, failErr // a request cut by its view's context (ctx.go): the caller's own request
	}
	if failed != nil {
		return sts, failed.c.handle(inStatus("MPI_Waitall", failed.c, failErr))
	}
	return sts, nil
}

// Waitany waits until one request completes and returns its index and
// status (MPI_Waitany); the entry is set to nil. With no active request
// it returns Undefined. When no request is complete and a wildcard receive
// is left pending by a failure (ULFM: ErrPending, seed 002 A.2.2), it
// returns that request's index and error without completing it (the entry
// stays).
func Waitany(reqs []*Request) (int, Status, error) {
	const op = "MPI_Waitany"
	if err := chkList(op, reqs); err != nil {
		return Undefined, emptyStatus(), err
	}
	for {
		sig := failureSignal(reqs)
		i, st, done, err, active := testany(reqs, op)
		if !active {
			return Undefined, emptyStatus(), nil
		}
		if done || err != nil {
			return i, st, err
		}
		if i := cutOne(reqs, op); i >= 0 {
			continue // reqs[i] is complete: cut, or completed with its message
		}
		tw, slot := trackAny(op, reqs)
		ok := waitAnyReady(reqs, sig)
		tw.leave(slot)
		if !ok {
			for _, r := range reqs {
				if r != nil {
					return Undefined, emptyStatus(), r.c.handle(r.c.w.abortedErr(op, r.c))
				}
			}
		}
	}
}

// Waitsome waits until at least one request completes and returns the
// indices and statuses of all completed ones (MPI_Waitsome); their entries
// are set to nil. With no active request it returns nil indices. When none
// completes and wildcard receives are left pending by a failure (ULFM:
// ErrPending), it returns their indices with those errors in their
// statuses (error class ErrInStatus), without completing them.
func Waitsome(reqs []*Request) ([]int, []Status, error) {
	const op = "MPI_Waitsome"
	if err := chkList(op, reqs); err != nil {
		return nil, nil, err
	}
	for {
		sig := failureSignal(reqs)
		idx, sts, err, active := testsome(reqs, op)
		if len(idx) > 0 || !active {
			return idx, sts, err
		}
		if i := cutOne(reqs, op); i >= 0 {
			continue
		}
		tw, slot := trackAny(op, reqs)
		ok := waitAnyReady(reqs, sig)
		tw.leave(slot)
		if !ok {
			for _, r := range reqs {
				if r != nil {
					return nil, nil, r.c.handle(r.c.w.abortedErr(op, r.c))
				}
			}
		}
	}
}

// Testsome returns the indices and statuses of the requests that have
// completed (MPI_Testsome), setting their entries to nil. When none has
// and wildcard receives are left pending by a failure, it reports them as
// Waitsome does.
func Testsome(reqs []*Request) ([]int, []Status, error) {
	if err := chkList("MPI_Testsome", reqs); err != nil {
		return nil, nil, err
	}
	idx, sts, err, _ := testsome(reqs, "MPI_Testsome")
	return idx, sts, err
}

// checkWild applies wildCheck to every request of reqs; it returns the
// indices of those left pending and their errors.
func checkWild(reqs []*Request, op string) (idx []int, errs []error) {
	for i, r := range reqs {
		if err := r.wildCheck(op); err != nil {
			idx = append(idx, i)
			errs = append(errs, err)
		}
	}
	return idx, errs
}

func testsome(reqs []*Request, op string) (idx []int, sts []Status, err error, active bool) {
	pidx, perrs := checkWild(reqs, op)
	var failed *Request
	for i, r := range reqs {
		if r.inactive() {
			continue
		}
		active = true
		if !r.ready() {
			continue
		}
		if !r.done {
			r.collect()
		}
		st := r.st
		st.Err = r.err
		idx = append(idx, i)
		sts = append(sts, st)
		if r.err != nil && failed == nil {
			failed = r
		}
		retire(reqs, i)
	}
	if failed != nil {
		return idx, sts, failed.c.handle(inStatus(op, failed.c, failed.err)), active
	}
	if len(idx) == 0 && len(pidx) > 0 {
		for k, i := range pidx {
			st := emptyStatus()
			st.Err = perrs[k]
			sts = append(sts, st)
			idx = append(idx, i)
		}
		r := reqs[pidx[0]]
		return idx, sts, r.c.handle(inStatus(op, r.c, perrs[0])), active
	}
	return idx, sts, nil, active
}

// Testall reports whether every request has completed (MPI_Testall). If
// so it returns their statuses and sets the entries to nil; otherwise it
// completes none of them. When some wildcard receive is left pending by a
// failure (ULFM: ErrPending), it reports false with error class
// ErrInStatus and that error in the request's status, completing none.
func Testall(reqs []*Request) ([]Status, bool, error) {
	const op = "MPI_Testall"
	if err := chkList(op, reqs); err != nil {
		return nil, false, err
	}
	if pidx, perrs := checkWild(reqs, op); len(pidx) > 0 {
		sts := make([]Status, len(reqs))
		for i := range sts {
			sts[i] = emptyStatus()
		}
		for k, i := range pidx {
			sts[i].Err = perrs[k]
		}
		r := reqs[pidx[0]]
		return sts, false, r.c.handle(inStatus(op, r.c, perrs[0]))
	}
	for _, r := range reqs {
		if !r.inactive() && !r.ready() {
			return nil, false, nil
		}
	}
	sts, err := Waitall(reqs)
	return sts, true, err
}

// Testany reports whether some request has completed (MPI_Testany); if so
// it returns its index and status and sets the entry to nil. When none has
// and a wildcard receive is left pending by a failure (ULFM: ErrPending),
// it returns that request's index and error with false, the entry kept.
func Testany(reqs []*Request) (int, Status, bool, error) {
	if err := chkList("MPI_Testany", reqs); err != nil {
		return Undefined, emptyStatus(), false, err
	}
	i, st, done, err, active := testany(reqs, "MPI_Testany")
	if !active {
		return Undefined, emptyStatus(), true, nil
	}
	return i, st, done, err
}

// testany completes one ready request of reqs (done), or reports the first
// wildcard receive a failure leaves pending (err, not done).
func testany(reqs []*Request, op string) (i int, st Status, done bool, err error, active bool) {
	pidx, perrs := checkWild(reqs, op)
	for i, r := range reqs {
		if r.inactive() {
			continue
		}
		active = true
		if r.ready() {
			if !r.done {
				r.collect()
			}
			retire(reqs, i)
			return i, r.st, true, r.c.handle(r.err), true
		}
	}
	if len(pidx) > 0 {
		st := emptyStatus()
		st.Err = perrs[0]
		return pidx[0], st, false, reqs[pidx[0]].c.handle(perrs[0]), active
	}
	return Undefined, emptyStatus(), false, nil, active
}
