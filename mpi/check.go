package mpi

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The checking mode (Config.Check, FTMPI_CHECK=1, ftmpirun --check).
//
// Collectives. Without it, a mismatch between the members' calls is found
// only by a member that receives a message of another call (coll_sig.go):
// a broadcast's root returns success, and two mismatched members that wait
// for each other wait until something else ends the wait. With it, every
// public collective on an intracommunicator (blocking, nonblocking,
// persistent, neighbourhood; the run-through model's views included,
// since their calls go through the same prep functions) starts with an
// allgather of the members' signatures (coll.Sig and element type, 16
// bytes a member) on the call's own context, with the call's sequence
// number in its own tag space (coll.TagCheck), so the exchange is never
// confused with the call. Every member sees every signature and compares
// them the same way, so a mismatch is an error at every member, naming
// another member's call and its own, and no member runs the algorithm.
// A failure during the exchange is a failure of the call (the exchange's
// waits are the call's: a member's failure or a revocation ends them); a
// member that rejected its arguments before the call fails the exchange at
// the others through the call's poison (coll.PhaseTags covers the check's
// tags).
//
// What is compared is what MPI requires to agree: the operation, the root,
// the reduction operation, and the element type and count where every
// member passes the same (coll.Counted); not the counts of the
// v-variants, which differ by member, and not a zero-count call's element
// type (an empty message has no type signature). Neighbourhood
// collectives compare the operation only: their counts must agree between
// neighbours, not across the communicator.
//
// On a run-through view (collectives after recognised failures) the ranks
// an error names are the view's: the alive processes in rank order.
//
// Intercommunicator collectives compare their kind only (checkInter,
// below). Not covered: the internal sets of communicator management. Every process of a job must run with
// the same setting: a checking member waits for the exchange.

// checked is run preceded, under the checking mode, by the check of x's
// call across its members. Without the checking mode it is run.
func checked(x *coll.Set, run collRun) collRun {
	n := x.Net.(*collNet)
	if !n.c.w.cfg.Check || x.N <= 1 {
		return run
	}
	return func() error {
		if err := n.checkCall(x); err != nil {
			return err
		}
		return run()
	}
}

// checkCall exchanges the signatures of x's call among its members and
// returns the mismatch, if any, as the error of this member's call.
func (n *collNet) checkCall(x *coll.Set) error {
	chk := newCall(n.c, n.op, x.Ctx, coll.TagCheck(seqOfTag(x.Tag)), p2p.DTByte, x.Me, x.N, x.Procs)
	chk.Crowded = x.Crowded
	buf := make([]byte, 16*(x.N+1))
	mine, all := buf[:16], buf[16:]
	binary.LittleEndian.PutUint64(mine, uint64(x.Sig))
	binary.LittleEndian.PutUint64(mine[8:], uint64(n.dt))
	if err := chk.Allgather(mine, all); err != nil {
		return err
	}
	for i := range x.N {
		if i == x.Me {
			continue
		}
		theirs := coll.Sig(binary.LittleEndian.Uint64(all[16*i:]))
		tdt := p2p.DType(binary.LittleEndian.Uint64(all[16*i+8:]))
		if !sigsAgree(x.Sig, theirs, n.dt, tdt) {
			class := mismatchClass(theirs, x.Sig, tdt, n.dt)
			return newErr(class, n.op, n.c, NoPeer, "rank %d called %s; this rank %s",
				i, describeCall(theirs, tdt), describeCall(x.Sig, n.dt))
		}
	}
	return nil
}

// sigsAgree reports whether two members' calls, of signatures a and b and
// element types adt and bdt, are the same call as far as MPI requires.
func sigsAgree(a, b coll.Sig, adt, bdt p2p.DType) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case coll.KNeighborAllgather, coll.KNeighborAllgatherv, coll.KNeighborAlltoall, coll.KNeighborAlltoallv:
		return true // counts agree between neighbours only
	}
	if a.Root() != b.Root() || a.Op() != b.Op() || a.Count() != b.Count() {
		return false
	}
	if coll.Counted(a.Kind()) && a.Count() == 0 {
		return true // no type signature to compare
	}
	return adt == bdt
}

// checkf is the error of a check of the checking mode that failed for op
// on c (c may be nil).
func checkf(class *Class, op string, c *Comm, format string, args ...any) error {
	return newErr(class, op, c, NoPeer, "%s", "ftmpi check: "+fmt.Sprintf(format, args...))
}

// Requests, buffers, and what a process still holds at Finalize.
//
// Under the checking mode a World keeps its live requests (made by Isend,
// Irecv and their typed forms, the nonblocking collectives, the persistent
// Init calls) until their completion was returned (Wait, Test, the
// Wait/Test families) or they were freed; a receive buffer that overlaps
// the buffer of a live request, or a send buffer that overlaps a live
// receive's, is an ErrBuffer error when the operation starts, before
// anything is posted (two pending sends may share a buffer: MPI lets them
// read it). A request used after its completion was returned or after Free
// is an ErrRequest error (in C its handle would be MPI_REQUEST_NULL). At
// Finalize the process prints to stderr the communicators, windows, files
// and requests it still holds (a warning: Finalize goes on).
//
// Requests made elsewhere (IsendValue, IrecvValue, Ibsend, Imrecv,
// Isendrecv, the request-based RMA calls,
// generalized requests) are not recorded: no buffer check, not listed at
// Finalize; the used-after-completion check applies to them all.

// checkState is a World's bookkeeping under the checking mode.
type checkState struct {
	mu      sync.Mutex
	reqs    map[*Request]chkReq
	private map[*Comm]string // the private communicators of windows and files: "window", "file"
	out     io.Writer        // where Finalize's list goes; nil: the diagnostics (rte.Diag; tests set it)
}

// chkReq is a live request as the checks describe it.
type chkReq struct {
	op        string
	peer, tag int
	lo, hi    uintptr // its buffer's bytes; lo == hi: none tracked
	recv      bool
}

func (e chkReq) String() string {
	s := e.op
	if e.peer == NoPeer {
		return s
	}
	dir := " to "
	if e.recv {
		dir = " from "
	}
	peer := fmt.Sprint(e.peer)
	switch e.peer {
	case AnySource:
		peer = "MPI_ANY_SOURCE"
	case ProcNull:
		peer = "MPI_PROC_NULL"
	}
	tag := fmt.Sprint(e.tag)
	if e.tag == AnyTag {
		tag = "MPI_ANY_TAG"
	}
	return s + dir + peer + " tag " + tag
}

func span(b []byte) (lo, hi uintptr) {
	if len(b) == 0 {
		return 0, 0
	}
	lo = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return lo, lo + uintptr(len(b))
}

// chkBuf checks, under the checking mode, that b, the buffer of a new
// receive (recv) or send, overlaps no buffer that a live request owns and
// this one would conflict with. The error has not passed c's handler.
func (c *Comm) chkBuf(op string, b []byte, recv bool) error {
	if !c.w.cfg.Check || len(b) == 0 {
		return nil
	}
	lo, hi := span(b)
	k := &c.w.chk
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, e := range k.reqs {
		if (recv || e.recv) && lo < e.hi && e.lo < hi {
			what := "send"
			if recv {
				what = "receive"
			}
			return checkf(ErrBuffer, op, c, "the %s buffer (%d bytes) overlaps the buffer of a pending %s, which owns it until its completion is returned (Wait, Test)",
				what, len(b), e)
		}
	}
	return nil
}

// chkAdd records, under the checking mode, req as live, with its buffer b
// (nil: none) and, for a point-to-point request, its peer and tag.
func (c *Comm) chkAdd(req *Request, peer, tag int, b []byte, recv bool) {
	if !c.w.cfg.Check || req == nil {
		return
	}
	lo, hi := span(b)
	k := &c.w.chk
	k.mu.Lock()
	if k.reqs == nil {
		k.reqs = make(map[*Request]chkReq)
	}
	k.reqs[req] = chkReq{op: req.op, peer: peer, tag: tag, lo: lo, hi: hi, recv: recv}
	req.chk = true
	k.mu.Unlock()
}

// chkDone forgets a live request (its completion was returned, or it was
// freed).
func (r *Request) chkDone() {
	k := &r.c.w.chk
	k.mu.Lock()
	delete(k.reqs, r)
	k.mu.Unlock()
	r.chk = false
}

// chkUsed is the error of a request used after its completion was
// returned (the checking mode), or nil.
func (r *Request) chkUsed(op string) error {
	if !r.returned || r.c == nil || !r.c.w.cfg.Check {
		return nil
	}
	return checkf(ErrRequest, op, r.c, "request of %s used after its completion was returned by a completion call (in C its handle is MPI_REQUEST_NULL now)", r.op)
}

// chkList checks, under the checking mode, the requests of a completion
// call on a list: a freed request, or one whose completion was already
// returned, is an ErrRequest error (nil entries are inactive, as
// MPI_REQUEST_NULL). The error has passed the request's handler.
func chkList(op string, reqs []*Request) error {
	for _, r := range reqs { // without the checking mode: up to the first request's World
		if r != nil && r.c != nil {
			if !r.c.w.cfg.Check {
				return nil
			}
			break
		}
	}
	for _, r := range reqs {
		if r == nil || !(r.freed || r.returned) || r.c == nil {
			continue
		}
		what := "freed"
		if !r.freed {
			what = "completed (its completion was returned)"
		}
		return r.c.handle(checkf(ErrRequest, op, r.c, "request of %s used after it was %s", r.op, what))
	}
	return nil
}

// chkPrivate records, under the checking mode, that pc is the private
// communicator of a window or file (kind): Finalize lists the window or
// file, not the communicator.
func (w *World) chkPrivate(pc *Comm, kind string) {
	if !w.cfg.Check {
		return
	}
	w.chk.mu.Lock()
	if w.chk.private == nil {
		w.chk.private = make(map[*Comm]string)
	}
	w.chk.private[pc] = kind
	w.chk.mu.Unlock()
}

// chkFinalize prints, under the checking mode, what this process still
// holds as it enters Finalize: the communicators it made and did not free,
// its windows and files, its requests whose completion was not returned
// and that were not freed. Nothing when it holds nothing.
func (w *World) chkFinalize() {
	if !w.cfg.Check {
		return
	}
	if line := w.held(); line != "" {
		w.chk.mu.Lock()
		out := w.chk.out
		w.chk.mu.Unlock()
		if out == nil {
			out = w.diag().Writer()
		}
		fmt.Fprintln(out, line)
	}
}

// held is chkFinalize's line ("" for nothing held).
func (w *World) held() string {
	w.ft.mu.Lock()
	live := make([]*Comm, 0, len(w.ft.byCtx))
	for _, c := range w.ft.byCtx {
		live = append(live, c)
	}
	w.ft.mu.Unlock()
	skip := map[*Comm]bool{w.world: true, w.self: true}
	for _, c := range []*Comm{w.parent, w.round} {
		if c != nil {
			skip[c] = true
			if c.local != nil {
				skip[c.local] = true
			}
		}
	}
	for _, c := range live {
		if c.local != nil {
			skip[c.local] = true // an intercommunicator's group: freed with it
		}
	}
	var comms, wins, files, reqs []string
	w.chk.mu.Lock()
	for _, c := range live {
		if skip[c] || !c.owned || c.freed.Load() {
			continue
		}
		switch w.chk.private[c] {
		case "local":
			continue // an intercommunicator's local group (freed with it, listed as it)
		case "window":
			wins = append(wins, c.name)
		case "file":
			files = append(files, c.name)
		default:
			comms = append(comms, c.name)
		}
	}
	for _, e := range w.chk.reqs {
		reqs = append(reqs, e.String())
	}
	w.chk.mu.Unlock()
	var parts []string
	for _, g := range []struct {
		what  string
		names []string
	}{{"communicator", comms}, {"window", wins}, {"file", files}, {"request", reqs}} {
		if len(g.names) == 0 {
			continue
		}
		slices.Sort(g.names)
		what := g.what
		if len(g.names) > 1 {
			what += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(g.names), what, strings.Join(g.names, ", ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("ftmpi check: at MPI_Finalize, rank %d still holds: %s", w.rank, strings.Join(parts, ", "))
}

// typedSpan is the part of b (checked by checkTyped) that count elements
// of d cover: the bytes an operation on them owns.
func typedSpan(b []byte, count int, d *Datatype) []byte {
	if count == 0 || d.size == 0 {
		return nil
	}
	span := (count - 1) * d.ext()
	return b[d.lo+min(0, span) : d.hi+max(0, span)]
}

// chkTypedStart runs start, the start of a typed Isend, Issend or Irecv
// of count elements of d over buf, under the checking mode's buffer check,
// and records its request.
func chkTypedStart[T Elem](c *Comm, op string, buf []T, count int, d *Datatype, peer, tag int, recv bool, start func() (*Request, error)) (*Request, error) {
	b, err := checkTyped(op, c, buf, count, d)
	if err != nil {
		return start() // which reports the error
	}
	span := typedSpan(b, count, d)
	if err := c.chkBuf(op, span, recv); err != nil {
		return nil, c.handle(err)
	}
	req, err := start()
	c.chkAdd(req, peer, tag, span, recv)
	return req, err
}

// Intercommunicator collectives. Their roots (MPI_ROOT, MPI_PROC_NULL, a
// remote rank) and counts (each group's own) differ by member by design,
// and each kind has its own tags (coll.KInter+kind), so members that call
// different collectives wait for each other forever. Under the checking
// mode the members of both groups first exchange the kind of their call
// (an allgather over the union of the groups, the group holding the lower
// process id first, on the intercommunicator's collective context with
// tag space coll.KInter, which no kind uses); a difference is an ErrOther
// error at every member. Roots, counts, types and reduction operations
// are not compared. Since every member takes part, a process that passes
// MPI_PROC_NULL as the root (which otherwise returns at once) waits for
// the exchange too, and gets ErrProcFailed when a member failed.
// MPI_Alltoallw on an intercommunicator is not checked.

// handledInter applies c's error handler to the error of the prep function
// of an intercommunicator collective of kind (the intracommunicator preps
// do so themselves; the prep runs at the call, so a nonblocking collective
// takes its sequence number in call order), and precedes its run with the
// kind check under the checking mode.
func handledInter(c *Comm, op string, kind int) func(collRun, error) (collRun, error) {
	return func(run collRun, err error) (collRun, error) {
		if err != nil {
			return nil, c.handle(err)
		}
		if !c.w.cfg.Check {
			return run, nil
		}
		seq := c.coll.seq.Load() // the prep took it: collectives on c are called in one order
		return func() error {
			if err := c.checkInter(op, kind, seq); err != nil {
				return err
			}
			return run()
		}, nil
	}
}

// checkInter exchanges the kinds of the call number seq on
// intercommunicator c among the members of both groups.
func (c *Comm) checkInter(op string, kind int, seq uint32) error {
	first, second := c.members, c.remote
	localFirst := len(c.remote) == 0 || (len(c.members) > 0 && c.members[0] < c.remote[0])
	me := c.rank
	if !localFirst {
		first, second = c.remote, c.members
		me += len(c.remote)
	}
	procs := append(slices.Clone(first), second...)
	x := newCall(c, op, c.ctx+1, coll.Tag(coll.KInter, seq), p2p.DTByte, me, len(procs), procs)
	all := make([]byte, 8*len(procs))
	mine := make([]byte, 8)
	binary.LittleEndian.PutUint64(mine, uint64(kind))
	if err := x.Allgather(mine, all); err != nil {
		return err
	}
	for i := range procs {
		theirs := int(binary.LittleEndian.Uint64(all[8*i:]))
		if theirs == kind {
			continue
		}
		group, r := "this", i
		if i >= len(first) {
			r = i - len(first)
		}
		if (i < len(first)) != localFirst {
			group = "the remote"
		}
		return newErr(ErrOther, op, c, NoPeer, "rank %d of %s group called %s; this rank %s",
			r, group, nameOr(collNames[:], theirs, "collective kind"), nameOr(collNames[:], kind, "collective kind"))
	}
	return nil
}
