package mpi

import (
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Request is a pending nonblocking operation (MPI_Request). A Request must
// not be waited on or tested from two goroutines at once; different
// requests may be used concurrently. Once complete it stays complete:
// waiting again returns the same status.
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

	done bool
	st   Status
	err  error
}

func (r *Request) finish(st Status, err error) {
	r.done = true
	r.st, r.err = st, err
	if r.pr != nil {
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
		st := emptyStatus()
		st.Err = ps.Err
		r.finish(st, ps.Err)
		return
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
	if r == nil {
		return emptyStatus(), newErr(ErrRequest, "MPI_Wait", nil, NoPeer, "nil request")
	}
	if r.done {
		return r.st, r.err
	}
	if r.wildcard() {
		// A failure that affects wildcard receives is the model's: ULFM
		// (seed 002 A.2.1) raises ErrPending while a potential sender
		// failed without acknowledgement, the request staying pending;
		// run-through (seed 003 17.6) completes it with ErrRankFailStop.
		m, w := r.c.ftm(), r.c.w
		for {
			sig := w.eng.FailureSignal()
			if !r.pr.Done() && m.wildFailed(r.c) {
				if err := m.wildPending(r, "MPI_Wait"); err != nil {
					return emptyStatus(), r.c.handle(err)
				}
			}
			switch r.pr.WaitSignal(w.abort, sig) {
			case 1:
				return emptyStatus(), r.c.handle(w.abortedErr("MPI_Wait", r.c))
			case 2:
				continue
			}
			break
		}
	} else if !r.pr.Wait(r.c.w.abort) {
		return emptyStatus(), r.c.handle(r.c.w.abortedErr("MPI_Wait", r.c))
	}
	r.collect()
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
	if r == nil {
		return emptyStatus(), false, newErr(ErrRequest, "MPI_Test", nil, NoPeer, "nil request")
	}
	if r.done {
		return r.st, true, r.err
	}
	if !r.pr.Done() {
		select {
		case <-r.c.w.abort:
			return emptyStatus(), false, r.c.handle(r.c.w.abortedErr("MPI_Test", r.c))
		default:
		}
		if m := r.c.ftm(); r.wildcard() && m.wildFailed(r.c) {
			if err := m.wildPending(r, "MPI_Test"); err != nil {
				return emptyStatus(), false, r.c.handle(err)
			}
		}
		if !r.pr.Done() {
			return emptyStatus(), false, nil
		}
	}
	r.collect()
	return r.st, true, r.c.handle(r.err)
}

// Cancel asks for the operation to be cancelled (MPI_Cancel). A receive
// that has not matched a message is cancelled; a send is never cancelled
// (MPI allows cancellation to fail) and completes normally. Wait reports
// the outcome in Status.Cancelled.
func (r *Request) Cancel() error {
	if r == nil {
		return newErr(ErrRequest, "MPI_Cancel", nil, NoPeer, "nil request")
	}
	if r.done {
		return nil
	}
	r.userCancel = true
	r.c.w.eng.Cancel(r.pr)
	return nil
}

// waitChan blocks until one of reqs (non-nil, not done) completes or the
// job is aborted; it reports false on abort.
func waitAnyReady(reqs []*Request) bool {
	var w *World
	ch := make(chan struct{}, 1)
	for _, r := range reqs {
		if r != nil && !r.done {
			r.pr.SetWaiter(&ch)
			w = r.c.w
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
			if r != nil && r.ready() {
				return true
			}
		}
		select {
		case <-ch:
		case <-w.abort:
			return false
		}
	}
}

// Waitall waits for every request (MPI_Waitall) and returns their
// statuses; nil entries are inactive (MPI_REQUEST_NULL) and get an empty
// status. Completed entries are set to nil. If any request failed, the
// error is of class ErrInStatus and each status's Err tells which.
func Waitall(reqs []*Request) ([]Status, error) {
	sts := make([]Status, len(reqs))
	var failed *Request
	var abortErr error
	for i, r := range reqs {
		if r == nil {
			sts[i] = emptyStatus()
			continue
		}
		if !r.done {
			if !r.pr.Wait(r.c.w.abort) {
				abortErr = r.c.w.abortedErr("MPI_Waitall", r.c)
				sts[i] = emptyStatus()
				sts[i].Err = abortErr
				continue
			}
			r.collect()
		}
		sts[i] = r.st
		sts[i].Err = r.err
		if r.err != nil && failed == nil {
			failed = r
		}
		reqs[i] = nil
	}
	if abortErr != nil {
		return sts, abortErr
	}
	if failed != nil {
		return sts, failed.c.handle(newErr(ErrInStatus, "MPI_Waitall", failed.c, NoPeer, "first failure: %v", failed.err))
	}
	return sts, nil
}

// Waitany waits until one request completes and returns its index and
// status (MPI_Waitany); the entry is set to nil. With no active request
// it returns Undefined.
func Waitany(reqs []*Request) (int, Status, error) {
	active := false
	for _, r := range reqs {
		if r != nil {
			active = true
			break
		}
	}
	if !active {
		return Undefined, emptyStatus(), nil
	}
	for {
		for i, r := range reqs {
			if r != nil && r.ready() {
				if !r.done {
					r.collect()
				}
				reqs[i] = nil
				return i, r.st, r.c.handle(r.err)
			}
		}
		if !waitAnyReady(reqs) {
			for _, r := range reqs {
				if r != nil {
					return Undefined, emptyStatus(), r.c.handle(r.c.w.abortedErr("MPI_Waitany", r.c))
				}
			}
		}
	}
}

// Waitsome waits until at least one request completes and returns the
// indices and statuses of all completed ones (MPI_Waitsome); their entries
// are set to nil. With no active request it returns nil indices.
func Waitsome(reqs []*Request) ([]int, []Status, error) {
	for {
		idx, sts, err, active := testsome(reqs, "MPI_Waitsome")
		if len(idx) > 0 || !active {
			return idx, sts, err
		}
		if !waitAnyReady(reqs) {
			for _, r := range reqs {
				if r != nil {
					return nil, nil, r.c.handle(r.c.w.abortedErr("MPI_Waitsome", r.c))
				}
			}
		}
	}
}

// Testsome returns the indices and statuses of the requests that have
// completed (MPI_Testsome), setting their entries to nil.
func Testsome(reqs []*Request) ([]int, []Status, error) {
	idx, sts, err, _ := testsome(reqs, "MPI_Testsome")
	return idx, sts, err
}

func testsome(reqs []*Request, op string) (idx []int, sts []Status, err error, active bool) {
	var failed *Request
	for i, r := range reqs {
		if r == nil {
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
		reqs[i] = nil
	}
	if failed != nil {
		err = failed.c.handle(newErr(ErrInStatus, op, failed.c, NoPeer, "first failure: %v", failed.err))
	}
	return idx, sts, err, active
}

// Testall reports whether every request has completed (MPI_Testall). If
// so it returns their statuses and sets the entries to nil; otherwise it
// completes none of them.
func Testall(reqs []*Request) ([]Status, bool, error) {
	for _, r := range reqs {
		if r != nil && !r.ready() {
			return nil, false, nil
		}
	}
	sts, err := Waitall(reqs)
	return sts, true, err
}

// Testany reports whether some request has completed (MPI_Testany); if so
// it returns its index and status and sets the entry to nil.
func Testany(reqs []*Request) (int, Status, bool, error) {
	active := false
	for i, r := range reqs {
		if r == nil {
			continue
		}
		active = true
		if r.ready() {
			if !r.done {
				r.collect()
			}
			reqs[i] = nil
			return i, r.st, true, r.c.handle(r.err)
		}
	}
	if !active {
		return Undefined, emptyStatus(), true, nil
	}
	return Undefined, emptyStatus(), false, nil
}
