package mpi

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/coll/shmcoll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rma/segment"
)

// Shared-memory collectives (issue 28 item 3; internal/coll/shmcoll).
//
// The blocking Barrier, Bcast, Reduce, Allreduce, Allgather, Gather and
// Allgatherv of an intracommunicator whose members all run on one host go
// through a segment all of them map, instead of the point-to-point
// algorithms, when shmUse says so for the call's kind, size and member
// count (Gatherv and Scatter(v) not: their counts are known at the root
// only, so the members cannot agree on the steps). The
// choice depends only on what every member agrees on: the communicator's size
// (2..shmcoll.MaxMembers), the hosts of its members as the launcher told
// every process, the call's kind and plain element type, the test override
// of the algorithm choice (Hosts.Force: tests that force an algorithm
// family get the point-to-point ones) and the checking mode (Config.Check,
// which exchanges every call's signature). The nonblocking and persistent
// forms keep the point-to-point algorithms: only blocking calls are
// ordered the same at every member, which the segment's single
// sequence of steps needs. A derived datatype (the typed forms) moves the
// same bytes as its signature's plain elements, so it takes the same path.
//
// The segment is set up at the first such call, collectively and within
// that call (its sequence number, tag and signature: a member that
// rejected the call releases the others' set-up as it releases any call,
// and mismatched calls are found as in the point-to-point algorithms):
// rank 0 creates its file (internal/rma/segment), every member maps it, and
// all agree that all did (two allgathers of the engine); then rank 0
// removes the file's name. If any member could not map it, all use the
// point-to-point algorithms on the communicator from then on (this call
// included); if the set-up failed (a failure, a released call), the next
// eligible call tries again. Every call takes one sequence number, as the
// point-to-point path does. Free removes the mapping (and a cleanup does,
// should the communicator be dropped unfreed).
//
// A member that rejects the arguments of such a call (failColl) while the
// segment is in use publishes a rejection there (shmcoll.Group.Reject):
// the others' waits for it end, and they take the reason from the release
// the rejecting member sends anyway (a receive on the call's tag, which
// the release completes).
//
// Failures: a waiter that stopped spinning sleeps on the segment's futex
// doorbell; the World's watcher (shmBells: one goroutine per World,
// started with its first segment) rings the doorbell of every mapped
// segment with a sleeper (shmcoll.Group.Wake) when this process learns of
// a peer loss (p2p.Engine.FailureSignal), a newly revoked or poisoned
// context (p2p.Engine.PoisonSignal) or the job's abort, and a context
// view's sleeping wait rings it at the cut of its context
// (context.AfterFunc, from shmEnv.Block to Unblock), so the waiter asks
// shmEnv.Check at once rather than at its next timeout (at most
// shmcoll.SleepBound, a safety net). A member of the communicator known failed poisons the
// collective context (as World.waitColl does) and ends the call with
// ErrProcFailed, a revoked communicator with ErrRevoked, an aborted job
// with the abort's error. A call that fails here turns the communicator's
// shared-memory path off at this member (its step numbers no longer agree
// with the others'); the later calls take the point-to-point path, which
// fails at once on the poisoned context.

// Shared-memory path states of a communicator (collComm.shmState).
const (
	shmUnknown int32 = iota // not set up yet: set up at the next eligible call
	shmOn                   // collComm.shm is the group
	shmOff                  // point-to-point algorithms
)

// collShm is a communicator's shared-memory collective state.
type collShm struct {
	shmState atomic.Int32
	shm      *shmcoll.Group
	shmSeg   *segment.Segment
	shmEnv   shmEnv // the current call's (one blocking call at a time)
	// shmPending: the call being prepared would take the segment, were its
	// arguments accepted (set and cleared by its prep: shmReject).
	shmPending bool
	// armed: next holds the arguments of a call prepared on the segment
	// whose run (run, made once) has not started (shmRun).
	armed bool
	next  shmPrepared
	run   collRun
}

// shmUse reports whether a call of kind over np members with n bytes per
// member (all agreed) takes the segment, from the interleaved measurements
// of issue 28 (docs/benchmarks.md, "Shared-memory collectives"):
//
//   - Barrier: always (0.10-0.21x the point-to-point time at np 2-8).
//   - Bcast and Reduce: np >= 4 and up to shmcoll.RingMax (8 KiB), the
//     ring of slots that lets the root (Bcast) or the contributors
//     (Reduce) run up to shmcoll.RingDepth steps ahead (8 B: Bcast 0.70x
//     at np 4, 0.16x at np 8; Reduce 0.43x, 0.74x; at np 2 2.7x and 1.4x
//     slower, where a point-to-point call is one eager message). Larger
//     ones take the point-to-point algorithms: on the two data slots one
//     side waits for the other every second slot (Bcast 1.3-14x, Reduce
//     1.07-1.81x slower in the first session's runs).
//   - Allreduce, Allgather: up to 64 KiB per member, and beyond when
//     np <= 4 (Allreduce 8 B 0.13-0.55x, Allgather 8 B 0.10-0.49x; 1 MiB:
//     0.53x at np 2, 0.81x at np 4, 1.31x at np 8, where every slot's two
//     steps wait for all eight processes on two cores).
//   - Gather (n bytes per member): only np >= 4 and 16-64 KiB (64 KiB:
//     0.41x at np 4, 0.53x at np 8; 8 B: 1.6-29x slower at np 2-8, 1 MiB
//     1.8-4.1x slower at np 2-4, as Reduce: a contributor runs at most one
//     slot ahead of the root, where point-to-point ones run ahead on eager
//     sends).
//   - Allgatherv (n: the largest count in bytes): np >= 4 (0.15-0.81x at
//     8 B, 64 KiB and 1 MiB); not np 2 (1.37-2.19x slower).
//
// Gather's and Allgatherv's figures: docs/benchmarks.md, the interleaved
// run of 2026-11-29 02:10 (load 11-25, 9 and 5 launches per point).
func shmUse(kind, np, n int) bool {
	switch kind {
	case coll.KBarrier:
		return true
	case coll.KBcast, coll.KReduce:
		return np >= 4 && n <= shmcoll.RingMax
	case coll.KAllreduce, coll.KAllgather:
		return n <= 64<<10 || np <= 4
	case coll.KGather:
		return np >= 4 && n > 16<<10 && n <= 64<<10
	case coll.KAllgatherv:
		return np >= 4
	}
	return false
}

// maxCount is the largest of counts (0 for none).
func maxCount(counts []int) int {
	m := 0
	for _, n := range counts {
		m = max(m, n)
	}
	return m
}

// shmArgs is one call's arguments, for the segment and for the
// point-to-point algorithm (a set-up the members refused), held by value:
// a call through a segment in use allocates nothing (docs/benchmarks.md,
// issue 28, session 11: three closures a call were a sixth of an
// Allreduce 8 B at np 2).
type shmArgs struct {
	kind        int    // coll.KBarrier, KBcast, ...
	send, recv  []byte // the segment's buffers (recv nil where unused)
	precv       []byte // the point-to-point algorithm's receive buffer
	root, esize int
	f           redFn
	commut      bool
	counts      []int // Allgatherv: bytes per member
	displs      []int // Allgatherv: byte displacements
}

// onSegment runs the call on g.
func (a *shmArgs) onSegment(g *shmcoll.Group, call shmcoll.Call) error {
	switch a.kind {
	case coll.KBarrier:
		return g.Barrier(call)
	case coll.KBcast:
		return g.Bcast(call, a.send, a.root)
	case coll.KReduce:
		return g.Reduce(call, a.send, a.recv, a.root, a.esize, a.f)
	case coll.KAllreduce:
		return g.Allreduce(call, a.send, a.recv, a.esize, a.f)
	case coll.KGather:
		return g.Gather(call, a.send, a.recv, a.root)
	case coll.KAllgather:
		return g.Allgather(call, a.send, a.recv)
	case coll.KAllgatherv:
		return g.Allgatherv(call, a.send, a.recv, a.counts, a.displs)
	}
	panic("mpi: a collective kind without a shared-memory form")
}

// p2p runs the call with the point-to-point algorithm on x.
func (a *shmArgs) p2p(x *coll.Set) error {
	switch a.kind {
	case coll.KBarrier:
		return x.Barrier()
	case coll.KBcast:
		return x.Bcast(a.send, a.root)
	case coll.KReduce:
		return x.Reduce(a.send, a.precv, a.root, coll.ReduceFn(a.f), a.commut)
	case coll.KAllreduce:
		return x.Allreduce(a.send, a.precv, coll.ReduceFn(a.f), a.commut)
	case coll.KGather:
		return x.Gather(a.send, a.precv, a.root)
	case coll.KAllgather:
		return x.Allgather(a.send, a.precv)
	case coll.KAllgatherv:
		return x.Allgatherv(a.send, a.precv, a.counts, a.displs)
	}
	panic("mpi: a collective kind without a shared-memory form")
}

// shmPrepared is a call prepared on a segment in use.
type shmPrepared struct {
	c   *Comm // may be a context view
	g   *shmcoll.Group
	op  string
	sig coll.Sig
	dt  p2p.DType
	a   shmArgs
}

func (p *shmPrepared) run() error {
	c := p.c
	c.collStartCheck()
	seq := c.nextSeq()
	return c.shmCall(p.g, p.op, seq, p.sig, p.dt, &p.a)
}

// runArmed runs the call armed by shmRun (collShm.armed).
func (cc *collShm) runArmed() error {
	p := cc.next
	cc.next, cc.armed = shmPrepared{}, false // nothing retained; a call prepared while this one runs may arm
	return p.run()
}

// shmRun prepares the call op (signature sig, element type dt, arguments
// a) on c through the segment when c uses or may use it; a set-up the
// members refused runs a's point-to-point algorithm. ok is false if c
// does not use the segment.
//
// On a segment in use, the returned run is the communicator's one
// preallocated function (collShm.run) and the call's arguments wait in
// collShm.next, unless an earlier prepared call has not run yet (armed):
// then this call gets a closure of its own. So each prepared call runs
// its own arguments, whatever the order of the runs.
func shmRun(c *Comm, op string, sig coll.Sig, dt p2p.DType, a shmArgs) (collRun, bool) {
	cc := &c.coll
	switch cc.shmState.Load() {
	case shmOff:
		return nil, false
	case shmOn:
		g := cc.shm
		if g.Poisoned() || c.w.eng.LostCount() != 0 && c.hasFailedMember() || c.w.eng.IsRevoked(c.ctx+1) {
			// The point-to-point path reports the failure, the revocation or
			// the mismatch at once.
			cc.shmState.Store(shmOff)
			return nil, false
		}
		if !cc.armed {
			cc.armed, cc.next = true, shmPrepared{c: c, g: g, op: op, sig: sig, dt: dt, a: a}
			if cc.run == nil {
				cc.run = cc.runArmed // allocated once per communicator
			}
			return cc.run, true
		}
		p := &shmPrepared{c: c, g: g, op: op, sig: sig, dt: dt, a: a}
		return p.run, true
	}
	if !c.shmEligible() {
		cc.shmState.Store(shmOff)
		return nil, false
	}
	x, ap := newCx(c, op, sig, dt), &shmArgs{}
	*ap = a // on the heap only here: a itself stays on the stack
	return func() error {
		g, err := c.shmSetUp(x)
		switch {
		case err != nil:
			return err // shmUnknown: the next call tries again
		case g == nil:
			cc.shmState.Store(shmOff)
			return ap.p2p(x)
		}
		cc.shm = g
		cc.shmState.Store(shmOn)
		return c.shmCall(g, op, seqOfTag(x.Tag), sig, dt, ap)
	}, true
}

// shmCall runs a, the call of sequence number seq, on g.
func (c *Comm) shmCall(g *shmcoll.Group, op string, seq uint32, sig coll.Sig, dt p2p.DType, a *shmArgs) error {
	e := &c.coll.shmEnv
	e.c, e.g = c, g // c may be a context view: its Done is this call's
	e.op, e.seq, e.sig, e.dt = op, seq, sig, dt
	if err := a.onSegment(g, shmCall(sig, dt)); err != nil {
		return c.shmErr(op, seq, sig, dt, err)
	}
	return nil
}

// shmEligible reports, from values every member agrees on, whether c's
// collectives may use a shared segment.
func (c *Comm) shmEligible() bool {
	if c.IsInter() || c.size < 2 || c.size > shmcoll.MaxMembers || c.w.cfg.Check || c.w.rt.Hosts.Force.Load() != 0 {
		return false
	}
	return c.w.rt.Hosts.Same(c.size, c.worldRank)
}

// shmSetUp makes, maps and agrees on c's segment within the call of set x
// (collective over c). It returns nil and no error if some member could
// not map it (or rank 0 could not create it).
func (c *Comm) shmSetUp(x *coll.Set) (*shmcoll.Group, error) {
	size := shmcoll.Size(c.size)
	// The set-up (rank 0 creates the file, every member maps it, all agree
	// that all did, rank 0 removes the name) is segment.Share's.
	m := segment.Members{Rank: c.rank, Size: c.size, Allgather: func(mine []int64) ([]int64, error) {
		all := make([]byte, 8*len(mine)*c.size)
		if err := x.Allgather(putInts(mine...), all); err != nil {
			return nil, err
		}
		out := make([]int64, len(mine)*c.size)
		for i := range out {
			out[i] = getInt(all, i)
		}
		return out, nil
	}}
	s, err := segment.Share(m, segment.KindColl, nil, nil, func([][]int64) (*segment.Segment, int) {
		return segment.New([]int{size}, []int{1}, false)
	})
	if err != nil {
		var ce *segment.CreateError
		var re *segment.RefusedError
		var me *segment.MapError
		if errors.As(err, &ce) || errors.As(err, &re) || errors.As(err, &me) {
			return nil, nil // rank 0 could not create it, or some member could not map it
		}
		return nil, err
	}
	g, err := shmcoll.New(s.Mapping, c.size, c.rank, c.crowded(), &c.coll.shmEnv)
	if err != nil { // the same at every member: the same size and layout
		s.Unmap()
		return nil, nil
	}
	c.coll.shmEnv.c = c
	c.coll.shmSeg = s
	bells := &c.w.shmBells
	bells.add(c.w, g)
	runtime.AddCleanup(c, func(m shmMapped) { m.bells.remove(m.g); m.s.Unmap() }, shmMapped{s, g, bells})
	return g, nil
}

// shmMapped is what a dropped communicator's cleanup unmaps.
type shmMapped struct {
	s     *segment.Segment
	g     *shmcoll.Group
	bells *shmBells
}

// freeShm removes c's mapping (Free); c's collectives no longer use it.
func (c *Comm) freeShm() {
	cc := &c.coll
	if cc.shmState.Swap(shmOff) == shmOn && cc.shmSeg != nil {
		c.w.shmBells.remove(cc.shm)
		cc.shmSeg.Unmap()
	}
}

// shmReject tells the other members, through the segment, that this
// member rejected its call (failColl), if that call would have taken the
// segment, and stops using the segment.
func (c *Comm) shmReject() {
	cc := &c.coll
	pending := cc.shmPending
	cc.shmPending = false
	if pending && cc.shmState.Load() == shmOn {
		cc.shmState.Store(shmOff)
		cc.shm.Reject()
	}
}

// shmEnv answers a shared-memory waiter of c: whether the call must end,
// and the call table's record of a blocked wait.
type shmEnv struct {
	c   *Comm
	g   *shmcoll.Group
	op  string
	seq uint32
	sig coll.Sig
	dt  p2p.DType

	wk *shmWaker // the current blocked wait's (Block to Unblock)
}

// shmWaker rings the doorbell of one blocked shared-memory wait of a
// context view when its context is done (context.AfterFunc). Unblock sets
// stopped under mu: no ring after it returns (the caller may then unmap
// the segment), without waiting for a ring already started.
type shmWaker struct {
	mu      sync.Mutex
	stopped bool
	stop    func() bool // the AfterFunc's
}

// ring wakes the sleepers of g unless the wait ended.
func (k *shmWaker) ring(g *shmcoll.Group) {
	k.mu.Lock()
	if !k.stopped {
		g.Wake()
	}
	k.mu.Unlock()
}

// shmBells is a World's set of mapped segments whose sleepers its
// watcher (one goroutine per World, started with the first segment, ended
// by the World's stop, by its job's abort or by its kill) wakes when this
// process learns of a peer loss (p2p.Engine.FailureSignal), a newly
// revoked or poisoned context (Engine.PoisonSignal) or the job's abort:
// subscribed once, so that a
// wait that goes to sleep starts nothing (a goroutine per sleeping wait
// cost Allreduce and Allgather 64 KiB at np 8 about a fifth).
type shmBells struct {
	mu      sync.Mutex
	groups  map[*shmcoll.Group]struct{}
	started bool
}

// add registers g (mapped) and starts w's watcher if it is not running.
func (b *shmBells) add(w *World, g *shmcoll.Group) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.groups == nil {
		b.groups = make(map[*shmcoll.Group]struct{})
	}
	b.groups[g] = struct{}{}
	if b.started {
		return
	}
	select {
	case <-w.stop:
		return // released: its segments' waiters end by their own checks
	default:
	}
	b.started = true
	eng, abort, stop := w.eng, w.abort, w.stop
	fail, poison := eng.FailureSignal(), eng.PoisonSignal()
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		for {
			select {
			case <-stop:
				return
			case <-fail:
				fail = eng.FailureSignal() // before the ring: a later loss closes it
			case <-poison:
				poison = eng.PoisonSignal()
			case <-abort:
				// Final: every later wait's Check sees the abort
				// before it sleeps, so nothing is left to ring for.
				b.ring()
				return
			}
			b.ring()
		}
	}()
}

// remove unregisters g: no ring reaches it after remove returns (its
// segment may then be unmapped).
func (b *shmBells) remove(g *shmcoll.Group) {
	b.mu.Lock()
	delete(b.groups, g)
	b.mu.Unlock()
}

// ring wakes the sleepers of every registered segment (the event is
// recorded: a sleeper counted before this reads it in its Check).
func (b *shmBells) ring() {
	b.mu.Lock()
	for g := range b.groups {
		if g.Sleepers() != 0 {
			g.Wake()
		}
	}
	b.mu.Unlock()
}

func (e *shmEnv) Check() error {
	c := e.c
	w := c.w
	select {
	case <-w.abort:
		return p2p.ErrClosed
	default:
	}
	if c.done != nil {
		select {
		case <-c.done:
			return errShmCut
		default:
		}
	}
	if w.eng.LostCount() != 0 {
		if p := w.eng.FirstLost(func(p int) bool { return c.setHas(c.size, c.members, p) }); p >= 0 {
			mf := &memberFailedError{proc: p}
			w.eng.Poison(mf, c.ctx+1)
			return mf
		}
	}
	if w.eng.IsRevoked(c.ctx+1) || w.eng.IsRevoked(c.ctx) {
		return p2p.ErrRevoked
	}
	return nil
}

// Block records the wait for rank peer in the call table (hang reports).
// The events Check reports ring the doorbell through the World's watcher
// (shmBells), subscribed at the segment's set-up; only a context view's
// wait arms a ring on its context (context.AfterFunc, no goroutine until
// it fires), until Unblock.
func (e *shmEnv) Block(peer int) int {
	c := e.c
	if c.cctx != nil {
		wk := &shmWaker{}
		g := e.g
		wk.stop = context.AfterFunc(c.cctx, func() { wk.ring(g) })
		e.wk = wk
	}
	en := c.entry(e.op)
	k := e.sig.Kind()
	if coll.Rooted(k) {
		en.Root = int32(e.sig.Root())
	}
	if coll.Counted(k) {
		en.Count = int64(e.sig.Count())
	}
	en.Seq = int64(e.seq & (1<<24 - 1))
	en.Type = trackType(e.dt)
	if peer >= 0 && peer < c.size {
		en.Peer, en.PeerProc = int32(peer), int32(c.worldRank(peer))
	}
	return c.w.calls.Enter(&en)
}

func (e *shmEnv) Unblock(i int) {
	if k := e.wk; k != nil {
		k.stop()
		k.mu.Lock()
		k.stopped = true
		k.mu.Unlock()
		e.wk = nil
	}
	e.c.w.leave(i)
}

var errShmCut = errors.New("the communicator's context was cut")

// shmErr turns an error of the shared-memory call op (sequence number
// seq, signature sig, element type dt) into the call's, and turns the
// path off at this member.
func (c *Comm) shmErr(op string, seq uint32, sig coll.Sig, dt p2p.DType, err error) error {
	c.coll.shmState.Store(shmOff)
	var mm *shmcoll.MismatchError
	var rj *shmcoll.RejectedError
	switch {
	case errors.As(err, &rj):
		// The rejecting member releases the call: its reason completes a
		// receive on the call's tag.
		x := newCall(c, op, c.ctx+1, coll.TagColl(seq), dt, c.rank, c.size, c.members)
		x.Sig = sig
		if _, err := x.Recv(rj.Peer, nil); err != nil {
			return err
		}
		return newErr(ErrOther, op, c, rj.Peer, "rank %d rejected its call", rj.Peer)
	case errors.As(err, &mm):
		theirs, tdt := coll.Sig(mm.Sig), p2p.DType(mm.DT)
		return newErr(mismatchClass(theirs, sig, tdt, dt), op, c, NoPeer, "rank %d called %s; this rank %s",
			mm.Peer, describeCall(theirs, tdt), describeCall(sig, dt))
	case errors.Is(err, shmcoll.ErrPoisoned):
		return newErr(ErrOther, op, c, NoPeer, "another rank found mismatched collective calls")
	case err == errShmCut:
		return c.cutErr(op, NoPeer, "")
	case errors.Is(err, p2p.ErrPeerLost), errors.Is(err, p2p.ErrRevoked), errors.Is(err, p2p.ErrClosed):
		return c.engineErr(op, NoPeer, err)
	}
	return newErr(ErrOther, op, c, NoPeer, "%v", err)
}

// shmCalls is the number of collective calls c made through its segment
// here (tests).
func (c *Comm) shmCalls() uint64 {
	if g := c.coll.shm; g != nil {
		return g.Calls.Load()
	}
	return 0
}

func shmCall(sig coll.Sig, dt p2p.DType) shmcoll.Call {
	return shmcoll.Call{Sig: uint64(sig), DT: uint64(dt)}
}
