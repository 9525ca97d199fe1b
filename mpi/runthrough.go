package mpi

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// Run-through stabilization (seed 003: the MPI Forum draft chapter 17 of
// 2011). Processes recognise failures collectively with Validate, after
// which the same communicator keeps working: collectives skip the
// recognised failed processes.
//
// This file is the run-through fault-tolerance model (rtModel, an ftModel:
// model.go) and its public calls; runthrough_coll.go routes collectives
// (rtModel.collRoute) and maps their arguments onto the view, whose map and
// block moving are the collective engine's (internal/coll's View).
//
// Two fault-tolerance models, one per communicator. A communicator follows
// ULFM (seed 002: wildcard receives raise ErrPending until FailureAck,
// collectives fail until Shrink) until the program calls a chapter-17
// function on it - GroupFailed, RemoteGroupFailed, ReenableAnySource,
// Validate, Ivalidate, CollectivesEnabled - or EnableRunThrough; from then
// on it follows run-through stabilization, for good (one atomic swap of
// its model). Communicators created from a run-through communicator by
// Dup, Split, Create and Merge are run-through from their creation (with
// its recognised failures, 17.8.2). ULFM calls (Revoke, Agree, Shrink,
// FailureAck) keep working on a run-through communicator, and Shrink's
// result is a fresh ULFM communicator, so one program can validate one
// communicator and shrink another. (CreateGroup - collective over its
// group only, so its creation cannot be all-or-nothing over the parent -
// and IntercommCreate give ULFM communicators.)
//
// Collectives over recognised failures run the ordinary algorithms on a
// view: an internal communicator of the alive members (in rank order) with
// its own context-id pair, agreed by Validate. Arguments indexed by rank
// are mapped to the view and results mapped back; the segments of failed
// processes in receive buffers are left untouched (17.7: undefined).

// rtModel is the run-through model of one communicator, with its state.
type rtModel struct {
	// activeAt is the engine's LostCount at which every known failure of
	// a member was found recognised (a cache for the collectives' check).
	activeAt atomic.Int64

	mu        sync.Mutex
	reenabled []int                 // world ranks known failed at the last ReenableAnySource
	wild      map[*p2p.Req]*Request // pending nonblocking wildcard receives, completed when wildcards are disabled
	snap      atomic.Pointer[rtSnap]
}

// rtSnap is what the last Validate decided; replaced as a whole.
type rtSnap struct {
	recognized []int // world ranks of the recognised failed members (both groups), ascending
	// view is the view of the alive members; nil without recognised
	// failures among them.
	view *collView
	lost int64 // the engine's LostCount when view was made
}

// makeSnap builds the snapshot of recognised set failed for c, claiming
// context-id pairs for a view if there is a failure among the members
// (collective: every alive member calls it with the same arguments).
// window (from w0, start) is a bitmap of pairs free at every participant,
// agreed by the caller.
func (c *Comm) makeSnap(op string, failed []int, window []uint64, w0, start int, seed uint64) (*rtSnap, error) {
	snap := &rtSnap{recognized: failed}
	local, aliveWorld := coll.NewView(c.memberWorldRanks(), failed)
	var remote coll.View
	var remoteWorld []int
	if c.IsInter() {
		remote, remoteWorld = coll.NewView(c.remote, failed)
	}
	if local.Full() && remote.Full() {
		return snap, nil
	}
	k := 1
	if c.IsInter() {
		k = 2
	}
	pairs, err := c.rtViewPairs(op, k, window, w0, start, seed)
	if err != nil {
		return nil, err
	}
	me := local.VRank[c.rank]
	v := newView(c, pairs[0], aliveWorld, me)
	if c.IsInter() {
		v.remote = remoteWorld
		v.local = newView(c, pairs[1], aliveWorld, me)
	}
	snap.view = &collView{comm: v, local: local, remote: remote}
	snap.lost = c.w.eng.LostCount()
	return snap, nil
}

var emptySnap = &rtSnap{}

func newRTModel() *rtModel {
	rt := &rtModel{wild: make(map[*p2p.Req]*Request)}
	rt.snap.Store(emptySnap)
	return rt
}

// runThrough switches c to the run-through model (idempotent: one atomic
// swap of c's model, from ULFM) and returns it.
func (c *Comm) runThrough() *rtModel {
	for {
		ref := c.model.Load()
		if ref != nil {
			if rt, ok := ref.m.(*rtModel); ok {
				return rt
			}
		}
		rt := newRTModel()
		if c.model.CompareAndSwap(ref, &modelRef{rt}) {
			c.w.ftOf(c) // so that failures reach c's wildcard receives (onLost)
			return rt
		}
	}
}

// EnableRunThrough makes c follow the run-through stabilization model of
// seed 003 instead of ULFM's. It has no MPI counterpart: an ftmpi call,
// not an MPI function (the chapter-17 functions of seed 003 do the same
// implicitly; errors name it MPIX_Comm_enable_run_through). It is local
// and cannot be undone.
func (c *Comm) EnableRunThrough() error {
	if err := checkComm(c, "MPIX_Comm_enable_run_through"); err != nil {
		return err
	}
	c.runThrough()
	return nil
}

// RunThrough reports whether c follows the run-through stabilization model
// (see EnableRunThrough). It has no MPI counterpart (see EnableRunThrough).
func (c *Comm) RunThrough() bool {
	if c == nil {
		return false
	}
	_, ok := c.ftm().(*rtModel)
	return ok
}

// failedRanks returns the ranks in the local group (remote: the remote
// group) of c's processes known failed here, ascending.
func (c *Comm) failedRanks(remote bool) []int {
	if c.w.eng.LostCount() == 0 {
		return nil
	}
	procs := c.memberWorldRanks()
	if remote {
		procs = c.remote
	}
	var out []int
	for r, p := range procs {
		if c.w.eng.IsLost(p) {
			out = append(out, r)
		}
	}
	return out
}

// lostMembers returns the world ranks of c's members (both groups) that
// the engine knows lost, ascending. (failedMembers lists them in the order
// the failures became known, but is updated a moment after the engine
// completes the operations that a failure ends: a process that just saw a
// receive fail must find the failure here.)
func (c *Comm) lostMembers() []int {
	if c.w.eng.LostCount() == 0 {
		return nil
	}
	var out []int
	for _, p := range c.memberWorldRanks() {
		if c.w.eng.IsLost(p) {
			out = append(out, p)
		}
	}
	for _, p := range c.remote {
		if c.w.eng.IsLost(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func groupOfRanks(procs, ranks []int, self int) *Group {
	ps := make([]int, len(ranks))
	for i, r := range ranks {
		ps[i] = procs[r]
	}
	return newGroup(ps, self)
}

// GroupFailed returns the group of the processes of c known failed by this
// process at the time of the call, in rank order (MPI_Comm_group_failed,
// seed 003 17.4.1); for an intercommunicator, of the local group. It is
// local. It makes c a run-through communicator (see EnableRunThrough).
func (c *Comm) GroupFailed() (*Group, error) {
	if err := checkComm(c, "MPI_Comm_group_failed"); err != nil {
		return nil, err
	}
	c.runThrough()
	return groupOfRanks(c.memberWorldRanks(), c.failedRanks(false), c.w.rank), nil
}

// RemoteGroupFailed returns the group of the processes of the remote
// group of intercommunicator c known failed here, in rank order
// (MPI_Comm_remote_group_failed, seed 003 17.4.1). On an intracommunicator
// it is an ErrComm error. It is local.
func (c *Comm) RemoteGroupFailed() (*Group, error) {
	const op = "MPI_Comm_remote_group_failed"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if !c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "not an intercommunicator"))
	}
	c.runThrough()
	return groupOfRanks(c.remote, c.failedRanks(true), c.w.rank), nil
}

// CollectivesEnabled reports whether c is collectively active
// (MPI_Comm_collectives_enabled, seed 003 17.8.2): every failure of a
// member known here has been recognised by Validate. It is local.
func (c *Comm) CollectivesEnabled() (bool, error) {
	if err := checkComm(c, "MPI_Comm_collectives_enabled"); err != nil {
		return false, err
	}
	return len(c.runThrough().unrecognized(c)) == 0, nil
}

// unrecognized returns the world ranks of c's members known failed here
// and not recognised by the last Validate.
func (rt *rtModel) unrecognized(c *Comm) []int {
	lost := c.w.eng.LostCount()
	if lost == 0 || rt.activeAt.Load() == lost {
		return nil
	}
	out := unrecognizedOf(c.lostMembers(), rt.snap.Load().recognized)
	if len(out) == 0 {
		rt.activeAt.Store(lost)
	}
	return out
}

// ReenableAnySource re-enables wildcard (AnySource) receives on c and
// returns the group of the processes known failed at that moment, in rank
// order (MPI_Comm_reenable_any_source, seed 003 17.6); for an
// intercommunicator, of the remote group (the possible sources). A failure
// detected later disables them again. It is local.
func (c *Comm) ReenableAnySource() (*Group, error) {
	if err := checkComm(c, "MPI_Comm_reenable_any_source"); err != nil {
		return nil, err
	}
	rt := c.runThrough()
	failed := c.lostMembers()
	rt.mu.Lock()
	rt.reenabled = failed
	rt.mu.Unlock()
	if c.IsInter() {
		return groupOfRanks(c.remote, c.failedRanks(true), c.w.rank), nil
	}
	return groupOfRanks(c.memberWorldRanks(), c.failedRanks(false), c.w.rank), nil
}

func (*rtModel) name() string { return "run-through" }

// wildFailed reports whether wildcard receives on c are disabled: a member
// failed since the last ReenableAnySource (seed 003 17.6).
func (rt *rtModel) wildFailed(c *Comm) bool {
	if c.w.eng.LostCount() == 0 {
		return false
	}
	failed := c.lostMembers()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return wildcardsDisabled(failed, rt.reenabled)
}

// unrecognizedOf returns the members of lost (ascending) that are not in
// recognized (ascending): the failures that keep a communicator
// collectively inactive until the next Validate (seed 003 17.7).
func unrecognizedOf(lost, recognized []int) []int {
	var out []int
	for _, p := range lost {
		if _, found := slices.BinarySearch(recognized, p); !found {
			out = append(out, p)
		}
	}
	return out
}

// wildcardsDisabled reports whether a process of failed (the members known
// failed now) was not yet failed at the last ReenableAnySource, whose known
// failures were reenabled: wildcard receives are then disabled (seed 003
// 17.6).
func wildcardsDisabled(failed, reenabled []int) bool {
	for _, p := range failed {
		if !slices.Contains(reenabled, p) {
			return true
		}
	}
	return false
}

func (*rtModel) wildRecvErr(c *Comm, op string) error {
	return newErr(ErrRankFailStop, op, c, AnySource,
		"wildcard receives are disabled: process(es) %v of the communicator failed (ReenableAnySource re-enables them)", c.lostMembers())
}

// wildPending cancels r: it completes with ErrRankFailStop
// (cancelledWildErr), unless it already matched a message.
func (*rtModel) wildPending(r *Request, _ string) error {
	r.c.w.eng.Cancel(r.pr)
	return nil
}

// cancelledWildErr: a wildcard receive cancelled without Cancel was
// completed by the run-through rules: wildcard receives were disabled by a
// failure (seed 003 17.6, 17.6.1).
func (rt *rtModel) cancelledWildErr(c *Comm, op string) error { return rt.wildRecvErr(c, op) }

// trackWild registers a nonblocking wildcard receive of c, so that a later
// failure completes it (17.6), and completes it at once if wildcards are
// disabled now and no message matched it. (With an already-queued message
// it completes normally: the advice to implementors of 17.6 for
// manager/worker programs.)
func (rt *rtModel) trackWild(c *Comm, req *Request) {
	rt.mu.Lock()
	rt.wild[req.pr] = req
	rt.mu.Unlock()
	req.tracked = true
	if rt.wildFailed(c) {
		rt.disableWild(c)
	}
}

func (rt *rtModel) untrackWild(_ *Comm, pr *p2p.Req) {
	rt.mu.Lock()
	delete(rt.wild, pr)
	rt.mu.Unlock()
}

// disableWild completes c's pending wildcard receives with an error (their
// Wait and Test report ErrRankFailStop).
func (rt *rtModel) disableWild(c *Comm) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for pr := range rt.wild {
		c.w.eng.Cancel(pr) // fails if it already matched a message: then it completes normally
		delete(rt.wild, pr)
	}
}

// onLost: the failure disables c's wildcard receives (seed 003 17.6);
// pending ones complete with the error.
func (rt *rtModel) onLost(c *Comm, _ int) {
	if rt.wildFailed(c) {
		rt.disableWild(c)
	}
}

// recognized: failures recognised by Validate count as acknowledged in
// Agree (the recognised set is the same at every process).
func (rt *rtModel) recognized() []int { return rt.snap.Load().recognized }

// Validate recognises the failed processes of c collectively and
// re-activates collectives on c (MPI_Comm_validate, run-through
// stabilization; no MPIX_ or MPI-6 counterpart). It must be called by all
// alive processes of c, with no collective of c in progress. Every process
// gets the same group - the local group's failed processes, in rank order
// - or every process gets an error: the failed set is decided by a
// fault-tolerant agreement, as the union of the failures known to the
// participants and the processes that failed before contributing. Afterwards collectives on c run over
// the alive processes, skipping the recognised failed ones, until another
// member fails. A process that fails during Validate may be left out of
// the recognised set; c is then collectively inactive again, and Validate
// tells so by CollectivesEnabled.
func (c *Comm) Validate() (*Group, error) {
	const op = "MPI_Comm_validate"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	g, err := inTurn(c.takeTurn(), op, func() (*Group, error) { return c.validate(op) })
	return g, c.handle(err)
}

// Ivalidate starts a nonblocking Validate (MPI_Icomm_validate); the
// request's Wait returns the group of recognised failed processes.
func (c *Comm) Ivalidate() (*RequestOf[*Group], error) {
	const op = "MPI_Icomm_validate"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	c.runThrough()
	t := c.takeTurn()
	return startCollOf(c, op, func() (*Group, error) { return inTurn(t, op, func() (*Group, error) { return c.validate(op) }) }), nil
}

func (c *Comm) validate(op string) (*Group, error) {
	rt := c.runThrough()
	w := c.w
	old := rt.snap.Load()
	t := w.ctxTable()
	seed := uint64(c.ctx)<<20 ^ 0x56616c6964617465
	start := startPos(seed, len(old.recognized))
	w0 := start / 64
	// One agreement decides the failed set and a window of context-id
	// pairs free at every contributor (for the view, if one is needed).
	window := make([]uint64, ctxWindow)
	t.freeMask(window, w0)
	failed, err := c.agreeFailed(op, c.lostMembers(), window)
	if err != nil {
		return nil, err
	}
	if slices.Contains(failed, w.rank) {
		return nil, newErr(ErrIntern, op, c, NoPeer, "this process was decided failed")
	}
	result := func() *Group {
		var ranks []int
		for r, p := range c.memberWorldRanks() {
			if slices.Contains(failed, p) {
				ranks = append(ranks, r)
			}
		}
		return groupOfRanks(c.memberWorldRanks(), ranks, w.rank)
	}
	if slices.Equal(failed, old.recognized) {
		return result(), nil // the same decision everywhere: nothing new
	}
	snap, err := c.makeSnap(op, failed, window, w0, start, seed)
	if err != nil {
		return nil, err
	}
	rt.snap.Store(snap)
	old.retire(t)
	return result(), nil
}

// rtViewPairs claims k context-id pairs for a view of c: the first pairs
// of the agreed window, checked by a second agreement (a concurrent
// creation on another communicator may have taken them), or the general
// context-id agreement run over fault-tolerant agreements on c.
func (c *Comm) rtViewPairs(op string, k int, window []uint64, w0, start int, seed uint64) ([]int, error) {
	t := c.w.ctxTable()
	if rel := pickPairs(window, k, start%64); rel != nil {
		pairs := make([]int, k)
		for i, b := range rel {
			pairs[i] = (w0*64 + b) % ctxPairs
		}
		ok := t.claim(pairs)
		var flag uint64
		if ok {
			flag = 1
		}
		res, err := c.agreeFlags(op, rte.StepFlags, flag)
		if err != nil {
			if ok {
				t.release(pairs...)
			}
			return nil, err
		}
		if res == 1 {
			return pairs, nil
		}
		if ok {
			t.release(pairs...)
		}
	}
	return ctxAgreement(c.w, c, op, k, seed+1, true, c.agreedAnd(op))
}

// newView builds the internal communicator of c's alive members.
func newView(c *Comm, pair int, members []int, rank int) *Comm {
	v := newComm(&Comm{w: c.w, ctx: uint32(2 * pair), rank: rank, size: len(members), members: members, name: c.name})
	v.errh.Store(ErrorsReturn)
	return v
}

// retire gives up a view that was replaced or whose communicator was
// freed. Its context-id pair returns to the pool only if no failure
// happened since it was made: a failure may have poisoned its collective
// context in the engine, and a later communicator must not inherit that.
// (A few pairs per failure are lost; there are 16384.)
func (s *rtSnap) retire(t *ctxTable) {
	if s.view == nil {
		return
	}
	v := s.view.comm
	if v.freed.Swap(true) {
		return
	}
	if v.w.eng.LostCount() == s.lost {
		t.release(int(v.ctx / 2))
		if v.local != nil {
			t.release(int(v.local.ctx / 2))
		}
	}
}

// alive returns the view of c's alive processes, nil if c has no
// recognised failure.
func (rt *rtModel) alive(*Comm) *Comm {
	if v := rt.snap.Load().view; v != nil {
		return v.comm
	}
	return nil
}

// free releases the view on Free. c's own context-id pair may not return
// to the pool if a member failed: its collective context may be poisoned.
func (rt *rtModel) free(c *Comm) (releaseOwn bool) {
	rt.snap.Load().retire(c.w.ctxTable())
	return !c.hasFailedMember()
}

// contexts lists c's contexts and its view's, revoked with c.
func (rt *rtModel) contexts(c *Comm) []uint32 {
	ctxs := c.ownContexts()
	if v := rt.snap.Load().view; v != nil {
		ctxs = append(ctxs, v.comm.ownContexts()...)
	}
	return ctxs
}

// create wraps the creation of a communicator from c (seed 003
// 17.8.2-17.8.3): if c is collectively inactive here, creation fails
// uniformly with ErrRankFailStop; and creation is all-or-nothing - after
// the creation protocol a fault-tolerant agreement on c decides whether it
// succeeded at every participant; if not, every participant discards the
// new communicator and returns an error. The new communicator is a
// run-through one from its creation, with the recognised failures among
// its members recognised.
func (rt *rtModel) create(c *Comm, op string, fn func() (*Comm, error)) (*Comm, error) {
	return inTurn(c.takeTurn(), op, func() (*Comm, error) { return rt.createInTurn(c, op, fn) })
}

func (rt *rtModel) createInTurn(c *Comm, op string, fn func() (*Comm, error)) (*Comm, error) {
	unrec := rt.unrecognized(c)
	var nc *Comm
	var err error
	if len(unrec) > 0 {
		err = newErr(ErrRankFailStop, op, c, NoPeer,
			"the communicator is collectively inactive: failure of %v not recognised (call Validate)", unrec)
	} else {
		nc, err = fn()
	}
	var flag uint64
	if err == nil {
		flag = 1
	}
	res, aerr := c.agreeFlags(op, rte.StepCall, flag)
	if aerr != nil {
		err = aerr
	}
	if err == nil && res != 1 {
		err = newErr(ErrRankFailStop, op, c, NoPeer, "the creation failed at another process (a process failed or the communicator was inactive there)")
	}
	if err != nil {
		if nc != nil {
			nc.discard()
		}
		return nil, err
	}
	if nc == nil {
		return nil, nil
	}
	// The new communicator gets the model and the recognised failures
	// among its members (except Split, whose result has none).
	nrt := newRTModel()
	nc.setModel(nrt)
	nc.w.ftOf(nc) // so that failures reach nc's wildcard receives (onLost)
	var rec []int
	for _, p := range rt.snap.Load().recognized {
		if nc.hasWorldRank(p) {
			rec = append(rec, p)
		}
	}
	if len(rec) == 0 {
		return nc, nil
	}
	snap, err := nc.rtMakeView(op, rec)
	if err != nil {
		nc.discard()
		return nil, err
	}
	nrt.snap.Store(snap)
	return nc, nil
}

// rtMakeView makes the snapshot of the recognised set rec for a new
// communicator (collective over its alive members).
func (c *Comm) rtMakeView(op string, rec []int) (*rtSnap, error) {
	seed := uint64(c.ctx)<<20 ^ 0x56696577
	start := startPos(seed, 0)
	w0 := start / 64
	window := make([]uint64, ctxWindow)
	c.w.ctxTable().freeMask(window, w0)
	if err := c.agreeAnd(op, window); err != nil {
		return nil, err
	}
	return c.makeSnap(op, rec, window, w0, start, seed)
}

// discard drops a communicator that an all-or-nothing creation gave up.
func (c *Comm) discard() {
	if c.freed.Swap(true) {
		return
	}
	c.w.forgetFT(c)
	t := c.w.ctxTable()
	t.release(int(c.ctx / 2))
	if c.local != nil {
		t.release(int(c.local.ctx / 2))
	}
}

// splitColours gives the recognised failed processes of c the colour
// Undefined in Split's table of (colour, key) pairs (seed 003 17.8.2).
func (rt *rtModel) splitColours(_ *Comm, all []int64) {
	v := rt.snap.Load().view
	if v == nil {
		return
	}
	for r, vr := range v.local.VRank {
		if vr < 0 {
			all[2*r] = Undefined
		}
	}
}

// sendrecvResult turns a failure in a Sendrecv on c into ErrInStatus with
// the failed rank in the status (seed 003 17.6.2); other outcomes pass
// through (the receive's error, else the send's).
func (*rtModel) sendrecvResult(c *Comm, op string, st Status, sendErr, recvErr error, dest, source int) (Status, error) {
	failed, peer := recvErr, source
	if !errors.Is(failed, ErrRankFailStop) {
		failed, peer = sendErr, dest
	}
	if !errors.Is(failed, ErrRankFailStop) {
		if recvErr != nil {
			return st, recvErr
		}
		return st, sendErr
	}
	if peer == AnySource {
		var e *Error
		if errors.As(failed, &e) && e.Peer >= 0 {
			peer = e.Peer
		}
	}
	st.Source, st.Err = peer, failed
	return st, newErr(ErrInStatus, op, c, peer, "rank %s failed (see the status)", rankName(peer))
}
