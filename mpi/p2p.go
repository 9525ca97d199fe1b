package mpi

import (
	"errors"
	"strings"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// checkComm validates a communicator argument (no handler can run for nil).
func checkComm(c *Comm, op string) error {
	if c == nil {
		return newErr(ErrComm, op, nil, NoPeer, "nil communicator")
	}
	if c.w.finalized.Load() {
		return newErr(ErrOther, op, c, NoPeer, "called after MPI_Finalize")
	}
	if c.freed.Load() {
		return newErr(ErrComm, op, c, NoPeer, "communicator was freed")
	}
	if c.done != nil && c.badView() {
		return c.badViewErr(op)
	}
	return nil
}

func (c *Comm) checkDest(op string, dest int) error {
	if dest == ProcNull || (dest >= 0 && dest < c.peerSize()) {
		return nil
	}
	return newErr(ErrRank, op, c, dest, "destination rank %d out of range [0, %d)", dest, c.peerSize())
}

func (c *Comm) checkSource(op string, src int) error {
	if src == ProcNull || src == AnySource || (src >= 0 && src < c.peerSize()) {
		return nil
	}
	return newErr(ErrRank, op, c, src, "source rank %d out of range [0, %d)", src, c.peerSize())
}

// checkSendTag checks that tag is in 0..TagUB (MPI_TAG_UB): a larger tag
// would not fit the 32 bits a message carries.
func (c *Comm) checkSendTag(op string, tag, peer int) error {
	switch {
	case tag < 0:
		return newErr(ErrTag, op, c, peer, "tag %d is negative (valid tags are 0..%d)", tag, TagUB)
	case tag > TagUB:
		return newErr(ErrTag, op, c, peer, "tag %d is above the upper bound (valid tags are 0..%d)", tag, TagUB)
	}
	return nil
}

// checkRecvTag is checkSendTag that also accepts AnyTag.
func (c *Comm) checkRecvTag(op string, tag, peer int) error {
	if tag == AnyTag {
		return nil
	}
	return c.checkSendTag(op, tag, peer)
}

// checkRecvArgs validates the communicator, source and tag of a receive or
// probe; a bad source or tag goes through c's error handler.
func (c *Comm) checkRecvArgs(op string, source, tag int) error {
	if err := checkComm(c, op); err != nil {
		return err
	}
	if err := c.checkSource(op, source); err != nil {
		return c.handle(err)
	}
	if err := c.checkRecvTag(op, tag, source); err != nil {
		return c.handle(err)
	}
	return nil
}

// checkSendArgs validates the communicator, destination and tag of a send.
func (c *Comm) checkSendArgs(op string, dest, tag int) error {
	if err := checkComm(c, op); err != nil {
		return err
	}
	if err := c.checkDest(op, dest); err != nil {
		return c.handle(err)
	}
	if err := c.checkSendTag(op, tag, dest); err != nil {
		return c.handle(err)
	}
	return nil
}

// sendArgs checks the communicator, destination, tag and element type of
// a send of T elements and returns T's message type; an error has passed
// c's handler where one can run.
func sendArgs[T Elem](c *Comm, op string, dest, tag int) (p2p.DType, error) {
	if err := c.checkSendArgs(op, dest, tag); err != nil {
		return 0, err
	}
	dt, err := elemFor[T](c, op)
	if err != nil {
		return 0, c.handle(err)
	}
	return dt, nil
}

// recvArgs is sendArgs for a receive from source.
func recvArgs[T Elem](c *Comm, op string, source, tag int) (p2p.DType, error) {
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return 0, err
	}
	dt, err := elemFor[T](c, op)
	if err != nil {
		return 0, c.handle(err)
	}
	return dt, nil
}

// engineErr converts an engine error into an MPI error. The class says
// what the engine's sentinel says, so the detail is only what the engine
// added to it (engineDetail): an error text never repeats itself.
func (c *Comm) engineErr(op string, peer int, err error) error {
	switch {
	case errors.Is(err, p2p.ErrTruncate):
		return newErr(ErrTruncate, op, c, peer, "%s", engineDetail(err, p2p.ErrTruncate))
	case errors.Is(err, p2p.ErrType):
		return newErr(ErrType, op, c, peer, "%s", engineDetail(err, p2p.ErrType))
	case errors.Is(err, p2p.ErrRevoked):
		return newErr(ErrRevoked, op, c, peer, "")
	case errors.Is(err, p2p.ErrPeerLost):
		var mf *memberFailedError
		if errors.As(err, &mf) {
			// A collective context poisoned by a member's failure: the
			// error names that member, not the peer the caller waited on.
			c.w.recordFailure(mf.proc)
			return newErr(ErrProcFailed, op, c, c.rankOfProc(mf.proc), "%s", mf.Error())
		}
		if peer >= 0 && peer < c.peerSize() {
			if wr := c.peerWorldRank(peer); c.w.eng.IsLost(wr) || c.w.awaitKill(wr) {
				c.w.recordFailure(wr)
			} else {
				// The transport saw the connection break before the
				// runtime confirmed the failure (the confirmation adds
				// it to the failures known here): the caller learns of
				// it now, and the timeline says so.
				c.w.rt.TraceKnown(wr)
			}
		}
		return newErr(ErrProcFailed, op, c, peer, "%s", engineDetail(err, p2p.ErrPeerLost))
	case errors.Is(err, p2p.ErrClosed):
		return c.w.abortedErr(op, c)
	}
	return newErr(ErrIntern, op, c, peer, "%v", err)
}

// engineDetail is what err says beyond sentinel, the engine error it
// wraps as "sentinel: detail" (fmt.Errorf("%w: ...")): the MPI class
// already says what the sentinel says.
func engineDetail(err, sentinel error) string {
	s, prefix := err.Error(), sentinel.Error()
	if s == prefix {
		return ""
	}
	return strings.TrimPrefix(s, prefix+": ")
}

// Send performs a blocking standard-mode send of buf to rank dest
// (MPI_Send). It returns once buf may be reused.
func Send[T Elem](c *Comm, buf []T, dest, tag int) error {
	// The common case (issue 28): arguments that pass every check send
	// without the checks' calls; any other case goes through send,
	// which finds and reports the error.
	if c != nil && dest >= 0 && uint(tag) <= TagUB && dest < c.peerSize() && c.usable() {
		if f := elemOf[T](); f.err == "" {
			if _, err := c.sendBytes("MPI_Send", f.dt, asBytes(buf), dest, tag, false); err != nil {
				return c.handle(err)
			}
			return nil
		}
	}
	return send(c, "MPI_Send", buf, dest, tag, false)
}

// usable is checkComm's test of a non-nil c without its error: true
// when checkComm(c, op) returns nil.
func (c *Comm) usable() bool {
	return !c.w.finalized.Load() && !c.freed.Load() && (c.done == nil || !c.badView())
}

// Ssend performs a synchronous send (MPI_Ssend): it returns only once the
// matching receive has started.
func Ssend[T Elem](c *Comm, buf []T, dest, tag int) error {
	return send(c, "MPI_Ssend", buf, dest, tag, true)
}

func send[T Elem](c *Comm, op string, buf []T, dest, tag int, sync bool) error {
	dt, err := sendArgs[T](c, op, dest, tag)
	if err != nil {
		return err
	}
	if dest == ProcNull {
		return nil
	}
	_, err = c.sendBytes(op, dt, asBytes(buf), dest, tag, sync)
	return c.handle(err)
}

// sendBytes sends b (elements of type dt) to dest, a rank of c, and waits
// until b may be reused. The error is raw; aborted says the wait ended
// with the job (the transport may still hold b).
func (c *Comm) sendBytes(op string, dt p2p.DType, b []byte, dest, tag int, sync bool) (aborted bool, err error) {
	r, err := c.w.eng.Isend(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(tag), dt, b, sync)
	if err != nil {
		return false, c.engineErr(op, dest, err)
	}
	if r == nil {
		return false, nil
	}
	if err := c.waitSend(op, r, dest); err != nil {
		select {
		case <-c.w.abort: // the transport may still hold b
			return true, err
		default:
			return false, err
		}
	}
	return false, nil
}

// Recv receives a message into buf (MPI_Recv). source may be AnySource,
// tag may be AnyTag. A message longer than buf is an ErrTruncate error.
func Recv[T Elem](c *Comm, buf []T, source, tag int) (Status, error) {
	const op = "MPI_Recv"
	// The common case (issue 28), as in Send: arguments that pass every
	// check skip the checks' calls.
	if c != nil && (source >= 0 || source == AnySource) && (uint(tag) <= TagUB || tag == AnyTag) &&
		source < c.peerSize() && c.usable() {
		if f := elemOf[T](); f.err == "" {
			return c.recvBlocking(op, f.dt, asBytes(buf), source, tag)
		}
	}
	dt, err := recvArgs[T](c, op, source, tag)
	if err != nil {
		return emptyStatus(), err
	}
	if source == ProcNull {
		return procNullStatus(), nil
	}
	return c.recvBlocking(op, dt, asBytes(buf), source, tag)
}

// recvBlocking is Recv after its argument checks, of b (elements of type
// dt) from source (not ProcNull); the error has passed c's handler.
func (c *Comm) recvBlocking(op string, dt p2p.DType, b []byte, source, tag int) (Status, error) {
	// The fast path (issue 28): a message already here is received in
	// this goroutine without a request; otherwise the receive is posted.
	peer := -1
	if source >= 0 {
		peer = c.peerWorldRank(source)
	}
	ps, r, err := c.w.eng.RecvOrPost(c.ctx, int32(source), peer, int32(tag), dt, b)
	if err != nil {
		return emptyStatus(), c.handle(c.engineErr(op, source, err))
	}
	if r == nil {
		st, err := c.recvStatus(op, ps, source)
		if err != nil {
			return st, c.handle(err)
		}
		return st, nil
	}
	if err := c.waitRecv(op, r, source); err != nil {
		return emptyStatus(), c.handle(err)
	}
	st, err := c.recvStatusOf(op, r.StatusRef(), source)
	c.w.eng.Release(r)
	if err != nil {
		return st, c.handle(err)
	}
	return st, nil
}

// waitRecv waits for a blocking receive. A blocking wildcard receive whose
// potential sender failed is cancelled and raises the model's error
// (ULFM, seed 002 A.2.2: ErrProcFailed while the failure is not
// acknowledged), unless it already matched a message.
func (c *Comm) waitRecv(op string, r *p2p.Req, source int) error {
	w := c.w
	// The wait is recorded in the call table once it goes on past the
	// transport's brief poll (p2p.Req.OnBlock: recvHook), so a receive
	// whose reply comes within a ping-pong's round trip records nothing,
	// as one that found its message already there (issue 28: the record
	// is about a seventh of a 1-byte round trip's instructions); slot is
	// read from r before r is released. With an observer on the table
	// (the trace timeline) every wait is recorded at once.
	slot := -1
	if !r.Done() {
		if w.rt.Calls.Observed() {
			slot = c.trackReq(op, "", source, r)
		} else {
			r.OnBlock((*recvHook)(c), op, source)
		}
		defer func() { w.leave(slot) }()
	}
	if source != AnySource {
		how := r.WaitCancel(w.abort, c.done)
		if slot < 0 {
			slot = r.BlockSlot()
		}
		switch how {
		case p2p.WaitAborted:
			return w.abortedErr(op, c)
		case p2p.WaitCancelled:
			return c.recvCut(op, r, source)
		}
		return nil
	}
	// The model says when a failure releases the receive and with which
	// error (ULFM: an unacknowledged failure, ErrProcFailed; run-through,
	// seed 003 17.6: wildcards disabled, ErrRankFailStop). A receive that
	// already matched a message completes with it.
	m := c.ftm()
	for {
		sig := w.eng.FailureSignal()
		if !r.Done() && m.wildFailed(c) && w.eng.Cancel(r) {
			if slot < 0 {
				slot = r.BlockSlot()
			}
			w.eng.Release(r)
			return m.wildRecvErr(c, op)
		}
		how := r.WaitSignalCancel(w.abort, sig, c.done)
		if slot < 0 {
			slot = r.BlockSlot()
		}
		switch how {
		case p2p.WaitDone:
			return nil
		case p2p.WaitAborted:
			return w.abortedErr(op, c)
		case p2p.WaitCancelled:
			return c.recvCut(op, r, source)
		}
	}
}

// recvHook is a communicator as the p2p.BlockHook of its blocking
// receives (waitRecv): it records the wait in the call table.
type recvHook Comm

// Blocking implements p2p.BlockHook: r's wait goes on.
func (h *recvHook) Blocking(r *p2p.Req) int {
	op, source := r.BlockOp()
	return (*Comm)(h).trackReq(op, "", source, r)
}

func (c *Comm) postRecv(source, tag int, dtype p2p.DType, buf []byte) (*p2p.Req, error) {
	peer := -1
	if source >= 0 {
		peer = c.peerWorldRank(source)
	}
	return c.w.eng.Irecv(c.ctx, int32(source), peer, int32(tag), dtype, buf)
}

// recvStatus turns an engine status into an MPI status and error.
func (c *Comm) recvStatus(op string, ps p2p.Status, source int) (Status, error) {
	return c.recvStatusOf(op, &ps, source)
}

// recvStatusOf is recvStatus of the status at ps, read in place (a
// blocking receive's, issue 28: not copied on the 1-byte path).
func (c *Comm) recvStatusOf(op string, ps *p2p.Status, source int) (Status, error) {
	count := ps.Bytes
	if n := dtypeSize(ps.DType); n != 1 {
		count /= n
	}
	st := Status{Source: ps.Source, Tag: ps.Tag, Count: count, Bytes: ps.Bytes, Cancelled: ps.Cancelled}
	if ps.Err != nil {
		peer := ps.Source
		if peer == AnySource {
			peer = source
		}
		st.Err = c.engineErr(op, peer, ps.Err)
		return st, st.Err
	}
	return st, nil
}

// Isend starts a standard-mode send (MPI_Isend). buf must not be modified
// until the request completes. A failure of dest (or a revocation of c) is
// not reported by Isend but by the request's completion (seed 002 A.2).
func Isend[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	return isend(c, "MPI_Isend", buf, dest, tag, false)
}

// Issend starts a synchronous send (MPI_Issend); failures are reported at
// completion, as for Isend.
func Issend[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	return isend(c, "MPI_Issend", buf, dest, tag, true)
}

func isend[T Elem](c *Comm, op string, buf []T, dest, tag int, sync bool) (*Request, error) {
	dt, err := sendArgs[T](c, op, dest, tag)
	if err != nil {
		return nil, err
	}
	if c.w.cfg.Check { // check.go
		if err := c.chkBuf(op, asBytes(buf), false); err != nil {
			return nil, c.handle(err)
		}
	}
	req := &Request{c: c, op: op, peer: dest}
	if dest == ProcNull {
		req.finish(emptyStatus(), nil)
		return req, nil
	}
	req, err = c.isendBytes(req, dt, asBytes(buf), dest, tag, sync)
	if c.w.cfg.Check {
		c.chkAdd(req, dest, tag, asBytes(buf), false)
	}
	return req, err
}

// isendBytes starts the send of req: b (elements of type dt) to dest, a
// rank of c. The error has passed c's handler.
func (c *Comm) isendBytes(req *Request, dt p2p.DType, b []byte, dest, tag int, sync bool) (*Request, error) {
	op := req.op
	r, sent, err := c.w.eng.IsendMsg(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(tag), dt, b, sync, 0)
	req.sent = sent // for Cancel
	if err != nil {
		if errors.Is(err, p2p.ErrPeerLost) || errors.Is(err, p2p.ErrRevoked) {
			// A failure of the destination (or a revocation) is reported
			// by the completion call, not the start call, in both models
			// (seed 002 A.2: "All process failure errors are postponed
			// until the corresponding completion function is called";
			// seed 003 17.6.1), as Irecv's are.
			r = c.w.eng.NewLocalReq()
			r.Finish(p2p.Status{Err: err})
			req.pr = r
			return req, nil
		}
		return nil, c.handle(c.engineErr(op, dest, err))
	}
	if r == nil {
		req.finish(emptyStatus(), nil)
		return req, nil
	}
	req.pr = r
	return req, nil
}

// Irecv starts a receive (MPI_Irecv). buf must not be read until the
// request completes.
func Irecv[T Elem](c *Comm, buf []T, source, tag int) (*Request, error) {
	const op = "MPI_Irecv"
	dt, err := recvArgs[T](c, op, source, tag)
	if err != nil {
		return nil, err
	}
	if c.w.cfg.Check { // check.go
		if err := c.chkBuf(op, asBytes(buf), true); err != nil {
			return nil, c.handle(err)
		}
	}
	req, err := c.irecv(op, source, tag, func() (*p2p.Req, error) { return c.postRecv(source, tag, dt, asBytes(buf)) })
	if c.w.cfg.Check {
		c.chkAdd(req, source, tag, asBytes(buf), true)
	}
	return req, err
}

// irecv starts a receive from source with tag, posted by post; the error
// has passed c's handler.
func (c *Comm) irecv(op string, source, tag int, post func() (*p2p.Req, error)) (*Request, error) {
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return nil, err
	}
	req := &Request{c: c, op: op, peer: source, recv: true}
	if source == ProcNull {
		req.finish(procNullStatus(), nil)
		return req, nil
	}
	r, err := post()
	if err != nil {
		return nil, c.handle(c.engineErr(op, source, err))
	}
	req.pr = r
	if source == AnySource {
		c.ftm().trackWild(c, req)
	}
	return req, nil
}

// Sendrecv sends sendbuf to dest and receives into recvbuf from source in
// one call that cannot deadlock against a matching Sendrecv
// (MPI_Sendrecv).
func Sendrecv[S, R Elem](c *Comm, sendbuf []S, dest, sendtag int, recvbuf []R, source, recvtag int) (Status, error) {
	return sendrecvTyped(c, "MPI_Sendrecv", sendbuf, dest, sendtag, recvbuf, source, recvtag)
}

func sendrecvTyped[S, R Elem](c *Comm, op string, sendbuf []S, dest, sendtag int, recvbuf []R, source, recvtag int) (Status, error) {
	if err := checkComm(c, op); err != nil {
		return emptyStatus(), err
	}
	sdt, err := elemFor[S](c, op)
	if err != nil {
		return emptyStatus(), c.handle(err)
	}
	rdt, err := elemFor[R](c, op)
	if err != nil {
		return emptyStatus(), c.handle(err)
	}
	return c.sendrecv(op, sdt, asBytes(sendbuf), dest, sendtag, source, recvtag,
		func() (*p2p.Req, error) { return c.postRecv(source, recvtag, rdt, asBytes(recvbuf)) }, nil)
}

// sendrecv is Sendrecv of b (elements of type sdt) with the receive posted
// by post; got, if not nil, is given the receive once it completed without
// error, before it is released, and its error is the call's.
func (c *Comm) sendrecv(op string, sdt p2p.DType, b []byte, dest, sendtag, source, recvtag int, post func() (*p2p.Req, error), got func(*p2p.Req, Status) error) (Status, error) {
	if err := checkComm(c, op); err != nil {
		return emptyStatus(), err
	}
	if err := c.checkDest(op, dest); err != nil {
		return emptyStatus(), c.handle(err)
	}
	if err := c.checkSendTag(op, sendtag, dest); err != nil {
		return emptyStatus(), c.handle(err)
	}
	if err := c.checkSource(op, source); err != nil {
		return emptyStatus(), c.handle(err)
	}
	if err := c.checkRecvTag(op, recvtag, source); err != nil {
		return emptyStatus(), c.handle(err)
	}
	var rr *p2p.Req
	if source != ProcNull {
		var err error
		rr, err = post()
		if err != nil {
			return emptyStatus(), c.handle(c.engineErr(op, source, err))
		}
	}
	var sendErr error
	if dest != ProcNull {
		sr, err := c.w.eng.Isend(c.ctx, int32(c.rank), c.peerWorldRank(dest), int32(sendtag), sdt, b, false)
		switch {
		case err != nil:
			sendErr = c.engineErr(op, dest, err)
		case sr != nil:
			sendErr = c.waitSend(op, sr, dest)
		}
	}
	// The model combines the halves' outcomes (run-through, seed 003
	// 17.6.2: a failed peer's rank in the status, ErrInStatus).
	m := c.ftm()
	if rr == nil {
		st, err := m.sendrecvResult(c, op, procNullStatus(), sendErr, nil, dest, source)
		return st, c.handle(err)
	}
	if isCut(sendErr) {
		if c.w.eng.Cancel(rr) {
			c.w.eng.Release(rr)
			return emptyStatus(), sendErr
		}
		sendErr = nil // the receive matched: its outcome is the call's
	}
	if sendErr != nil {
		if c.w.eng.Cancel(rr) {
			st, err := m.sendrecvResult(c, op, emptyStatus(), sendErr, nil, dest, source)
			return st, c.handle(err)
		}
	}
	// The receive waits like Recv's: a wildcard one is released by a
	// failure (ULFM: unacknowledged; run-through: wildcards disabled).
	if err := c.waitRecv(op, rr, source); err != nil {
		st, err := m.sendrecvResult(c, op, emptyStatus(), sendErr, err, dest, source)
		return st, c.handle(err)
	}
	st, err := c.recvStatus(op, rr.Status(), source)
	var gotErr error
	if err == nil && got != nil {
		gotErr = got(rr, st)
	}
	c.w.eng.Release(rr)
	st, err = m.sendrecvResult(c, op, st, sendErr, err, dest, source)
	if err == nil {
		err = gotErr
	}
	return st, c.handle(err)
}

// Probe blocks until a message matching source and tag can be received and
// returns its status without receiving it (MPI_Probe). Status.Count is in
// elements of the type the message was sent with. A probe follows the
// receive rules after a failure: a message that arrived is still probed;
// otherwise a failed source raises ErrProcFailed, and a wildcard probe
// that a failure affects raises the error of a blocking wildcard receive
// (ULFM, seed 002 A.2.2: ErrProcFailed while the failure is not
// acknowledged; run-through: ErrRankFailStop while wildcards are disabled).
func (c *Comm) Probe(source, tag int) (Status, error) {
	const op = "MPI_Probe"
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return emptyStatus(), err
	}
	if source == ProcNull {
		return procNullStatus(), nil
	}
	peer := -1
	if source >= 0 {
		peer = c.peerWorldRank(source)
	}
	e, m := c.w.eng, c.ftm()
	slot := -1
	defer func() { c.w.leave(slot) }()
	for {
		sig := e.FailureSignal()
		if slot < 0 {
			en := c.entry(op)
			c.setPeer(&en, source)
			en.Tag = int32(tag)
			slot = c.w.rt.Calls.Enter(&en)
		}
		if source == AnySource {
			if ps, ok := e.Iprobe(c.ctx, int32(source), int32(tag)); ok {
				st, _ := c.recvStatus(op, ps, source)
				return st, nil
			}
			if m.wildFailed(c) {
				return emptyStatus(), c.handle(m.wildRecvErr(c, op))
			}
		}
		// The engine returns a queued message first, then the failure of
		// a named source; sig releases a wildcard probe to re-examine.
		ps, how, err := e.ProbeCancel(c.ctx, int32(source), peer, int32(tag), c.w.abort, sig, c.done)
		switch how {
		case p2p.WaitSignalled:
			continue
		case p2p.WaitCancelled:
			return emptyStatus(), c.cutErr(op, source, "")
		}
		if err != nil {
			return emptyStatus(), c.handle(c.engineErr(op, source, err))
		}
		st, _ := c.recvStatus(op, ps, source)
		return st, nil
	}
}

// Iprobe reports whether a message matching source and tag can be received
// now, and its status (MPI_Iprobe). Without such a message, it raises the
// error a receive would (see Probe): ErrProcFailed for a failed source, and
// the model's error for a wildcard that a failure affects.
func (c *Comm) Iprobe(source, tag int) (Status, bool, error) {
	const op = "MPI_Iprobe"
	if err := c.checkRecvArgs(op, source, tag); err != nil {
		return emptyStatus(), false, err
	}
	if source == ProcNull {
		return procNullStatus(), true, nil
	}
	ps, ok := c.w.eng.Iprobe(c.ctx, int32(source), int32(tag))
	if ok {
		st, _ := c.recvStatus(op, ps, source)
		return st, true, nil
	}
	if source >= 0 {
		if wr := c.peerWorldRank(source); c.w.eng.IsLost(wr) {
			c.w.recordFailure(wr)
			return emptyStatus(), false, c.handle(newErr(ErrProcFailed, op, c, source, "source rank %d failed", source))
		}
	} else if m := c.ftm(); m.wildFailed(c) {
		return emptyStatus(), false, c.handle(m.wildRecvErr(c, op))
	}
	return emptyStatus(), false, nil
}
