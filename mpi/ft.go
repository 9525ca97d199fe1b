package mpi

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// ftWorld is the fault-tolerance state of one World: the order in which
// failures became known, and the index of live communicators by context
// (their fault-tolerance state is on the Comm: Comm.ft, Comm.model).
type ftWorld struct {
	mu     sync.Mutex
	order  []int    // world ranks, in the order their failure became known here
	known  []uint64 // the same ranks, as a bitmap (hasBit)
	parked map[uint32][]parkedMsg
	byCtx  map[uint32]*Comm // live communicators of this process, by context id

	losses    lossQueue    // the in-process fabric's losses, batched (batchLosses)
	killsOnly atomic.Bool  // every transport loss is a kill that reaches the engine (batchLosses)
	passes    atomic.Int64 // onLostAll calls: passes over the state for failures
}

// registerComm makes c findable by its context id, so that fault-tolerance
// notices (revoke, agreement) for c can be handled before this process
// uses c for fault tolerance itself.
func (w *World) registerComm(c *Comm) {
	w.ft.mu.Lock()
	if w.ft.byCtx == nil {
		w.ft.byCtx = make(map[uint32]*Comm)
	}
	w.ft.byCtx[c.ctx] = c
	// A revocation that arrived before c existed here revoked only the
	// contexts its message named (onRevoke): an intercommunicator's
	// local group kept working, and a collective that starts there (a
	// reduction within the group) went on at some processes and hung or
	// failed with the wrong class at others (TestInterCollRevoked under
	// -race). The whole revocation applies now. (Under w.ft.mu, as
	// onRevoke's revocation of an unknown communicator: it comes either
	// before this look or after c is findable.)
	if w.eng.IsRevoked(c.ctx) {
		w.eng.Revoke(c.ownContexts()...)
	}
	w.ft.mu.Unlock()
}

// commFTByCtx returns the fault-tolerance state of the live communicator
// with context ctx, or nil if there is none.
func (w *World) commFTByCtx(ctx uint32) *commFT {
	w.ft.mu.Lock()
	c := w.ft.byCtx[ctx]
	w.ft.mu.Unlock()
	if c == nil {
		return nil
	}
	return w.ftOf(c)
}

// commFT is the fault-tolerance state of one communicator in one process:
// the runtime's drivers (rte.CommFT: the overlay of the members, the
// revocation's broadcast, the agreements) and what the API keeps.
type commFT struct {
	c *Comm
	d *rte.CommFT // the runtime's part

	mu    sync.Mutex
	acked []int // world ranks whose failure was acknowledged, in acknowledgement order

	// lastTurn is closed when the last agreement operation of c taken so
	// far ends (agreeturn.go); mu held.
	lastTurn chan struct{}
}

// ftOf returns (creating it on first use) the fault-tolerance state of c.
// A communicator with that state is in the index by context, so that
// failures reach it (onLostAll).
func (w *World) ftOf(c *Comm) *commFT {
	if f := c.ft.Load(); f != nil {
		return f
	}
	w.ft.mu.Lock()
	defer w.ft.mu.Unlock()
	if f := c.ft.Load(); f != nil {
		return f
	}
	c = c.base // the communicator, not a context view of it
	f := &commFT{c: c}
	// Failures already known are known to the overlay too (Known).
	d, err := w.rt.NewCommFT(rte.CommFTConfig{
		Ctx: c.ctx, Members: c.sortedProcs(false), N: c.size,
		Known: w.ft.order, Order: w.failedOrder, Failed: c.failedMembers, Apply: c.revokeLocal,
		Segment: c.agreeSegName, Parked: c.stepParked, Name: func() string { return c.name },
	})
	if err != nil {
		panic(fmt.Sprintf("ftmpi: internal error: %v", err))
	}
	f.d = d
	if w.ft.byCtx == nil {
		w.ft.byCtx = make(map[uint32]*Comm)
	}
	w.ft.byCtx[c.ctx] = c
	c.ft.Store(f) // under w.ft.mu, as onLostAll records a failure: each failure is in rb already or reaches it by onLostAll
	return f
}

// sortedProcs returns the sorted world ranks of c's members: of its local
// group if local, of both groups of an intercommunicator otherwise (the
// fault-tolerance overlay, rte.CommFTConfig.Members). nil is the
// identity 0..c.size-1 (a world); otherwise c's own member list when it
// is sorted already (a shrunk or split world keeps its order), and a
// sorted copy otherwise; made once per communicator, never changed.
func (c *Comm) sortedProcs(local bool) []int {
	c.procsOnce.Do(func() {
		sorted := func(procs []int) []int {
			if !slices.IsSorted(procs) {
				procs = slices.Sorted(slices.Values(procs))
			}
			return procs
		}
		if c.members != nil {
			c.localProcs = sorted(c.members)
		}
		c.allProcs = c.localProcs
		if len(c.remote) > 0 {
			c.allProcs = sorted(slices.Concat(c.memberWorldRanks(), c.remote))
		}
	})
	if local {
		return c.localProcs
	}
	return c.allProcs
}

// hasSorted reports whether p is among c's sorted members list (nil: the
// identity 0..c.size-1), by bisection.
func (c *Comm) hasSorted(list []int, p int) bool {
	if list == nil {
		return p >= 0 && p < c.size
	}
	_, ok := slices.BinarySearch(list, p)
	return ok
}

// memberWorldRanks lists the world ranks of c's (local) group in rank order.
func (c *Comm) memberWorldRanks() []int {
	if c.members != nil {
		return c.members
	}
	r := make([]int, c.size)
	for i := range r {
		r[i] = i
	}
	return r
}

// forgetFT drops c's fault-tolerance state (on Free).
func (w *World) forgetFT(c *Comm) {
	w.ft.mu.Lock()
	if w.ft.byCtx[c.ctx] == c.base {
		delete(w.ft.byCtx, c.ctx)
	}
	w.ft.mu.Unlock()
	if f := c.base.ft.Load(); f != nil {
		f.d.Close() // the agreements' segment, if any (agree.go)
	}
}

// subscribeFT subscribes the fault-tolerance state to the engine's peer
// losses, a batch at a time (p2p.Engine.SubscribeLostBatch: an in-process
// kill of many ranks is one call), except those that reach a retired
// epoch (as rte.Rank.SubscribeLost).
func (w *World) subscribeFT() {
	w.eng.SubscribeLostBatch(func(peers []int, causes []error) {
		if !w.rt.Retired() {
			w.onLostAll(peers, causes)
		}
	})
}

// onLostAll is the fault-tolerance state's subscriber of peer losses: it
// records the order of failures, and makes the failures known to the
// detector's broadcast, the revocation overlays, the agreements and every
// communicator's model. Failures learnt together (peers, in the order
// they became known; causes[i] is peers[i]'s) cost one pass over the
// communicators, and one step of each broadcast and agreement instance.
func (w *World) onLostAll(peers []int, causes []error) {
	w.ft.passes.Add(1)
	w.rt.Fails.LostAll(peers) // one step of the detector and the broadcast for the batch
	// Lock order: a commFT's mu is never taken while holding w.ft.mu.
	w.ft.mu.Lock()
	for _, p := range peers {
		w.recordFailureLocked(p)
	}
	comms := make([]*commFT, 0, len(w.ft.byCtx))
	for _, c := range w.ft.byCtx {
		if f := c.ft.Load(); f != nil {
			comms = append(comms, f)
		}
	}
	w.ft.mu.Unlock()
	// The revocations' broadcasts are repaired around the failures, and
	// every agreement instance learns of them (rte.CommFT.LostAll).
	for _, f := range comms {
		f.d.LostAll(peers)
	}
	// Every communicator's fault-tolerance model learns of the failure
	// (run-through: it disables wildcard receives, seed 003 17.6).
	for _, p := range peers {
		w.modelsOnLost(comms, p)
	}
}

// lossQueue batches the peer losses the in-process fabric reports to one
// rank (mpi.Run), so that a kill of many ranks costs each survivor a few
// passes (p2p.Engine.FailPeers, onLostAll), not one per rank killed
// (issue 24: 990,000 single notifications for 100 kills among 10,000
// ranks). An injected kill's killer tells every other rank in turn, which
// only queues the loss (the rank's queue is noted in the kill), then
// takes what each of those ranks has queued by then, its own losses and
// other killers' alike, unless another caller is taking them; it returns
// once every loss it queued was taken. Any other loss is taken at once,
// with what is queued.
type lossQueue struct {
	mu       sync.Mutex
	peers    []int
	causes   []error
	kills    []*injectedKill // the queued losses' own, counted in their pending
	draining bool            // a caller is taking losses
}

// queue adds the loss of peer to the queue.
func (q *lossQueue) queue(peer int, cause error) {
	q.mu.Lock()
	q.peers = append(q.peers, peer)
	q.causes = append(q.causes, cause)
	if k, ok := cause.(*injectedKill); ok {
		k.pending.Add(1)
		q.kills = append(q.kills, k)
	}
	q.mu.Unlock()
}

// drain takes the queued losses with take, in batches, until the queue is
// empty, unless another caller is taking them (who takes these too).
func (q *lossQueue) drain(take func(peers []int, causes []error)) {
	q.mu.Lock()
	if q.draining {
		q.mu.Unlock()
		return
	}
	q.draining = true
	for len(q.peers) > 0 {
		peers, causes, kills := q.peers, q.causes, q.kills
		q.peers, q.causes, q.kills = nil, nil, nil
		q.mu.Unlock()
		take(peers, causes)
		for _, k := range kills {
			k.pending.Done()
		}
		q.mu.Lock()
	}
	q.draining = false
	q.mu.Unlock()
}

// injectedKill is the cause of an in-process kill (Kill under Run): the
// loss queues it was put in, and its losses not taken yet.
type injectedKill struct {
	queues  []*queuedAt // in the order the fabric told the ranks (the killer's goroutine only)
	pending sync.WaitGroup
}

// queuedAt is one rank's loss queue and what takes its losses.
type queuedAt struct {
	q    *lossQueue
	take func(peers []int, causes []error)
}

func (*injectedKill) Error() string { return "killed by fault injection" }

// deliver takes the losses queued at every rank the kill was queued at
// (with what else they queued), then waits until every one of its own
// was taken (some by other callers).
func (k *injectedKill) deliver() {
	for _, at := range k.queues {
		at.q.drain(at.take)
	}
	k.queues = nil
	k.pending.Wait()
}

// batchLosses makes the losses the in-process fabric reports to this rank
// go through its loss queue (mpi.Run, where a loss is a kill, never a
// suspicion, and no suspect hook is installed otherwise).
func (w *World) batchLosses() {
	q := &w.ft.losses
	at := &queuedAt{q: q, take: w.eng.FailPeers}
	w.ft.killsOnly.Store(true)
	w.eng.SetSuspectHook(func(peer int, cause error) {
		q.queue(peer, cause)
		if k, ok := cause.(*injectedKill); ok {
			k.queues = append(k.queues, at) // the killer takes it (deliver)
			return
		}
		q.drain(at.take)
	})
}

// awaitKill waits, under Run, until the loss of peer that the transport
// reported (a send failed, a connection broke) is recorded in the engine,
// and reports whether it is: there every transport loss is a kill, whose
// killer records it at every rank right after the fabric failed the sends
// (injectedKill.deliver), so an operation that raises ErrProcFailed for
// peer also makes the failure known here (FailureAck, GetFailed). Elsewhere
// the loss is a suspicion the runtime confirms later, and awaitKill
// returns false at once. The wait is bounded by killWait.
func (w *World) awaitKill(peer int) bool {
	if !w.ft.killsOnly.Load() {
		return false
	}
	var deadline <-chan time.Time
	for {
		sig := w.eng.FailureSignal()
		if w.eng.IsLost(peer) {
			return true
		}
		if deadline == nil {
			t := time.NewTimer(killWait)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-sig:
		case <-deadline:
			return false
		}
	}
}

// killWait bounds awaitKill: the killer records a kill within microseconds
// to milliseconds; a loss not recorded by then is reported unconfirmed.
const killWait = 10 * time.Second

// recordFailure adds peer to the failures known here (once). The lost hook
// records every failure; an operation that reports ErrProcFailed for a
// peer records it too, so GetFailed and AckFailed include the peer as soon
// as the error is returned (the hook may still be running).
func (w *World) recordFailure(peer int) {
	w.rt.TraceKnown(peer)
	w.ft.mu.Lock()
	w.recordFailureLocked(peer)
	w.ft.mu.Unlock()
}

func (w *World) recordFailureLocked(peer int) {
	if !hasBit(w.ft.known, peer) {
		for peer>>6 >= len(w.ft.known) {
			w.ft.known = append(w.ft.known, 0)
		}
		w.ft.known[peer>>6] |= 1 << (uint(peer) & 63)
		w.ft.order = append(w.ft.order, peer)
	}
}

// failedOrder returns the world ranks known failed, in the order their
// failure became known. The list is shared, not copied (it only grows at
// its end, and its capacity is cut so that an append copies it): callers
// must not change its elements.
func (w *World) failedOrder() []int {
	w.ft.mu.Lock()
	defer w.ft.mu.Unlock()
	return w.ft.order[:len(w.ft.order):len(w.ft.order)]
}

// failedMembers returns the world ranks of c's members (both groups of an
// intercommunicator) known failed, in the order their failure became known.
//
// The list is shared, not copied (its capacity is cut so that an append
// copies it): callers must not change its elements. Each call filters only
// the failures that became known since the last one, so that a process
// that looks after every failure notice spends the failures' number, not
// their square.
func (c *Comm) failedMembers() []int {
	order := c.w.failedOrder()
	c.failedMu.Lock()
	defer c.failedMu.Unlock()
	for _, p := range order[c.failedSeen:] {
		if c.hasWorldRank(p) {
			c.failed = append(c.failed, p)
		}
	}
	c.failedSeen = len(order)
	return c.failed[:len(c.failed):len(c.failed)]
}

func (c *Comm) hasWorldRank(p int) bool {
	return c.hasSorted(c.sortedProcs(false), p)
}

// hasFailedMember reports whether a member of c is known failed.
func (c *Comm) hasFailedMember() bool {
	if c.w.eng.LostCount() == 0 {
		return false
	}
	return len(c.failedMembers()) > 0
}

// hasUnackedFailure reports whether a member of c failed without the
// failure having been acknowledged on c (ULFM: wildcard receives then
// raise ErrPending).
func (c *Comm) hasUnackedFailure() bool {
	if c.w.eng.LostCount() == 0 {
		return false
	}
	failed := c.failedMembers()
	if len(failed) == 0 {
		return false
	}
	f := c.w.ftOf(c)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range failed {
		if !slices.Contains(f.acked, p) {
			return true
		}
	}
	return false
}

// Revoke revokes c (MPIX_Comm_revoke; MPI_Comm_revoke in MPI-6): every
// pending and later non-local operation on c, at every member, completes with
// ErrRevoked, except Agree and Shrink. The notice spreads by a reliable
// broadcast over a binomial graph of the members, so it arrives even if
// members fail while it spreads. Revoke is local: it does not wait.
func (c *Comm) Revoke() error {
	const op = "MPI_Comm_revoke"
	if err := checkComm(c, op); err != nil {
		return err
	}
	c.w.ftOf(c).d.RevokeCall() // recorded in the timeline, applied here (revokeLocal), broadcast
	return nil
}

// revokeLocal applies a revocation of c in this process.
func (c *Comm) revokeLocal() {
	c.w.eng.Revoke(c.ftm().contexts(c)...)
}

// IsRevoked reports whether c was revoked (MPIX_Comm_is_revoked;
// MPI_Comm_is_revoked in MPI-6).
func (c *Comm) IsRevoked() bool {
	return c != nil && c.w.eng.IsRevoked(c.ctx)
}

func (w *World) onRevoke(from int, h transport.Header, _ []byte) {
	ctx := h.Ctx
	f := w.commFTByCtx(ctx)
	if f == nil {
		// This process does not know c yet: revoke its contexts (and, when
		// c is registered, registerComm revokes the rest of it); the
		// broadcast reaches the other members by their other neighbours.
		// The look is repeated under w.ft.mu, which registerComm holds.
		w.ft.mu.Lock()
		if w.ft.byCtx[ctx] == nil {
			w.eng.Revoke(ctx, ctx+1)
			w.ft.mu.Unlock()
			return
		}
		w.ft.mu.Unlock()
		if f = w.commFTByCtx(ctx); f == nil {
			return // freed meanwhile
		}
	}
	f.d.OnRevoke(from, h)
}

// FailureAck acknowledges the failures of c's members known to this process
// (MPIX_Comm_failure_ack, ULFM's first form, as MPI_Comm_failure_ack in
// ftmpi's mpi.h; its successor in Open MPI 5 and MPI-6 is AckFailed,
// MPI_Comm_ack_failed): wildcard receives on c stop raising ErrPending for
// them, and Agree no longer raises ErrProcFailed for them once every
// participant acknowledged them.
func (c *Comm) FailureAck() error {
	const op = "MPI_Comm_failure_ack"
	if err := checkComm(c, op); err != nil {
		return err
	}
	failed := c.failedMembers()
	f := c.w.ftOf(c)
	f.mu.Lock()
	for _, p := range failed {
		if !slices.Contains(f.acked, p) {
			f.acked = append(f.acked, p)
		}
	}
	f.mu.Unlock()
	return nil
}

// FailureGetAcked returns the group of c's failed processes acknowledged
// by the last FailureAck (MPIX_Comm_failure_get_acked, ULFM's first form,
// as MPI_Comm_failure_get_acked in ftmpi's mpi.h; its successor in Open
// MPI 5 and MPI-6 is GetFailed, MPI_Comm_get_failed).
func (c *Comm) FailureGetAcked() (*Group, error) {
	const op = "MPI_Comm_failure_get_acked"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	f := c.w.ftOf(c)
	f.mu.Lock()
	acked := slices.Clone(f.acked)
	f.mu.Unlock()
	return newGroup(acked, c.w.rank), nil
}

// GetFailed returns the group of c's processes known failed here, in the
// order their failure became known (MPIX_Comm_get_failed in Open MPI 5;
// MPI_Comm_get_failed in MPI-6).
func (c *Comm) GetFailed() (*Group, error) {
	const op = "MPI_Comm_get_failed"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	return newGroup(c.failedMembers(), c.w.rank), nil
}

// AckFailed acknowledges the first n failures of GetFailed's group and
// returns how many failures are acknowledged now (MPIX_Comm_ack_failed in
// Open MPI 5; MPI_Comm_ack_failed in MPI-6). AckFailed(0) only reports the count; a large n
// acknowledges every known failure.
func (c *Comm) AckFailed(n int) (int, error) {
	const op = "MPI_Comm_ack_failed"
	if err := checkComm(c, op); err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, c.handle(newErr(ErrArg, op, c, NoPeer, "number of failures to acknowledge is negative (%d)", n))
	}
	failed := c.failedMembers()
	f := c.w.ftOf(c)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < n && i < len(failed); i++ {
		if !slices.Contains(f.acked, failed[i]) {
			f.acked = append(f.acked, failed[i])
		}
	}
	return len(f.acked), nil
}

// memberFailedError poisons the collective context of a communicator that
// lost a member. It names the failed process (a world process id), so the
// collective's error names that process, not whichever peer the algorithm
// happened to be waiting on when the context was poisoned.
type memberFailedError struct{ proc int }

func (e *memberFailedError) Error() string {
	return "a participant of the collective operation failed"
}

// Unwrap makes it an engine peer-lost error (errors.Is(err, p2p.ErrPeerLost)).
func (e *memberFailedError) Unwrap() error { return p2p.ErrPeerLost }

// waitColl waits for r, a request of a collective protocol on context ctx
// among the n processes procs (world ranks; nil: 0..n-1) of communicator
// c. If a failure becomes known while waiting and one of them failed, ctx
// is poisoned: every pending and later operation on it completes with
// ErrProcFailed at every process that learns of the failure. So a
// collective never waits forever, neither on a dead participant nor on a
// live one that the failure stopped (seed 002 A.2.2: collectives raise
// ErrProcFailed when a participant failed). It returns p2p.WaitDone,
// p2p.WaitAborted if the job was aborted, or p2p.WaitCancelled if cancel
// (a view's context) closed first. The check costs a lookup per failure
// known, not a pass over the members.
func (w *World) waitColl(r *p2p.Req, ctx uint32, c *Comm, n int, procs []int, cancel <-chan struct{}) int {
	for {
		sig := w.eng.FailureSignal()
		if !r.Done() && w.eng.LostCount() > 0 {
			if p := w.eng.FirstLost(func(p int) bool { return c.setHas(n, procs, p) }); p >= 0 {
				w.eng.Poison(&memberFailedError{proc: p}, ctx)
			}
		}
		if how := r.WaitSignalCancel(w.abort, sig, cancel); how != p2p.WaitSignalled {
			return how
		}
	}
}

// setHas reports whether process p is among the n processes procs (nil:
// 0..n-1) of a collective set on c: by bisection when procs is c's own
// member list (every collective on c's whole group), by a scan otherwise
// (sets over part of c, which are small).
func (c *Comm) setHas(n int, procs []int, p int) bool {
	switch {
	case procs == nil:
		return p >= 0 && p < n
	case len(procs) == len(c.members) && &procs[0] == &c.members[0]:
		return c.hasSorted(c.sortedProcs(true), p)
	}
	return slices.Contains(procs, p)
}

// collStartCheck poisons c's collective context if a member of c is known
// failed, so a collective started after a failure fails at once.
func (c *Comm) collStartCheck() {
	if c.w.eng.LostCount() == 0 {
		return
	}
	if failed := c.failedMembers(); len(failed) > 0 {
		c.w.eng.Poison(&memberFailedError{proc: failed[0]}, c.ctx+1)
	}
}
