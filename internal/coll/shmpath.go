package coll

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/ftmpi/ftmpi/internal/coll/shmcoll"
	"github.com/ftmpi/ftmpi/internal/rma/segment"
)

// The shared-memory path (issue 28 item 3; internal/coll/shmcoll): the
// blocking Barrier, Bcast, Reduce, Allreduce, Allgather, Gather and
// Allgatherv of a communicator whose members all run on one host go
// through a segment all of them map, instead of the point-to-point
// algorithms, when ShmUse says so for the call's kind, size and member
// count. This file chooses it (ShmUse) and drives it: a communicator's
// path (ShmPath: its state, its segment set up collectively within its
// first eligible call, the call prepared on it, the rejection of a call),
// the waits' environment (the failures, revocations, job abort and
// context cut that end a wait) and the process's doorbell watcher
// (ShmHost). The caller (package mpi) gives what a communicator is
// (ShmComm: whether it may use a segment at all, from values every member
// agrees on; its sequence of collective calls; its failed members; its
// names; its error classes; the record of a blocked wait in the call
// table, which this package does not know) and the typed entries.
//
// The segment is set up at the first eligible call, collectively and
// within that call (its sequence number, tag and signature: a member that
// rejected the call releases the others' set-up as it releases any call,
// and mismatched calls are found as in the point-to-point algorithms):
// rank 0 creates its file (segment.Share), every member maps it, and all
// agree that all did (two allgathers over the call's Set); then rank 0
// removes the file's name. If any member could not map it, all use the
// point-to-point algorithms on the communicator from then on (this call
// included); if the set-up failed (a failure, a released call), the next
// eligible call tries again. Every call takes one sequence number, as the
// point-to-point path does. Free removes the mapping (and a cleanup does,
// should the communicator be dropped unfreed).
//
// A member that rejects the arguments of such a call (ShmPath.Reject)
// while the segment is in use publishes a rejection there: the others'
// waits for it end with a ShmError of ShmRejected, and the caller takes
// the reason from the release the rejecting member sends anyway.
//
// Failures: a waiter that stopped spinning sleeps on the segment's futex
// doorbell; the process's watcher (ShmHost: one goroutine per process,
// started with its first segment) rings the doorbell of every mapped
// segment with a sleeper when this process learns of a peer loss
// (ShmEngine.FailureSignal), a newly revoked or poisoned context
// (ShmEngine.PoisonSignal) or the job's abort, and a context view's
// sleeping wait rings it at the cut of its context (context.AfterFunc,
// from the wait's Block to Unblock), so the waiter checks at once rather
// than at its next timeout (at most shmcoll.SleepBound, a safety net). A
// member of the communicator known failed ends the call with the caller's
// ShmComm.ShmFailed error, a revoked communicator with ShmRevoked, an
// aborted job with ShmAborted, a cut context with ShmCut. A call that
// fails here turns the communicator's path off at this member (its step
// numbers no longer agree with the others'); the later calls take the
// point-to-point path, which fails at once on the poisoned context.

// ShmUse reports whether a call of kind over np members with n bytes per
// member (all agreed) takes the segment, from the interleaved
// measurements of issue 28 (docs/benchmarks.md, "Shared-memory
// collectives"):
//
//   - Barrier: always (0.10-0.21x the point-to-point time at np 2-8).
//   - Bcast and Reduce: np >= 4 and up to shmcoll.RingMax (8 KiB), the
//     ring of slots that lets the root (Bcast) or the contributors
//     (Reduce) run up to shmcoll.RingDepth steps ahead (8 B: Bcast 0.70x
//     at np 4, 0.16x at np 8; Reduce 0.43x, 0.74x; at np 2 2.7x and 1.4x
//     slower, where a point-to-point call is one eager message). Larger
//     Reduces take the point-to-point algorithms: on the two data slots
//     one side waits for the other every second slot (Reduce 1.07-1.81x
//     slower in the first session's runs). A Bcast of shmBcastBig (1 MiB)
//     or more at np >= 4 goes through the root's contribution slot of the
//     large Allreduce, one step for 1 MiB at up to 16 members (issue 28,
//     session 19: each member woken once a call and one memcpy, where the
//     point-to-point flat Bcast had every reader read the root's pages
//     with process_vm_readv; np 8 1 MiB 0.58x at load 11). Between 8 KiB
//     and 1 MiB the point-to-point algorithms stay: there the root must
//     wait for every reader before its next call, where point-to-point
//     roots run ahead (64 KiB at np 8: 2.4x slower through the slot).
//   - Allreduce: always (8 B 0.13-0.55x). Above 4 KiB it is a
//     reduce-scatter and an allgather through slots of up to 1 MiB a
//     member (shmcoll.BigSlot): two steps for a 1 MiB call at np 2-16
//     (1 MiB, CPU time of all ranks a call against the point-to-point
//     reduce and broadcast: 0.65-0.75x at np 8, 0.5-0.7x at np 16; 0.4x
//     at np 2 against the segment's 32 steps of 64 KiB before; issue 28,
//     session 14).
//   - Allgather: up to 64 KiB per member, and beyond when np <= 4 (8 B
//     0.10-0.49x; chosen with the first session's Allreduce, whose 1 MiB
//     through the two slots was 1.31x at np 8: every slot's step waits for
//     all eight processes on two cores).
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
// Communicators of one member, or of more than shmcoll.MaxMembers, do not
// take it. It has no MPI counterpart.
func ShmUse(kind, np, n int) bool {
	if np < 2 || np > shmcoll.MaxMembers {
		return false
	}
	switch kind {
	case KBarrier:
		return true
	case KBcast:
		return np >= 4 && (n <= shmcoll.RingMax || n >= shmBcastBig)
	case KReduce:
		return np >= 4 && n <= shmcoll.RingMax
	case KAllreduce:
		return true
	case KAllgather:
		return n <= 64<<10 || np <= 4
	case KGather:
		return np >= 4 && n > 16<<10 && n <= 64<<10
	case KAllgatherv:
		return np >= 4
	}
	return false
}

// shmBcastBig is the smallest Bcast (bytes) above shmcoll.RingMax that
// takes the segment (ShmUse).
const shmBcastBig = 1 << 20

// ShmArgs is one call's arguments, for the segment and for the
// point-to-point algorithm (a set-up the members refused), held by value:
// a call through a segment in use allocates nothing (docs/benchmarks.md,
// issue 28, session 11: three closures a call were a sixth of an
// Allreduce 8 B at np 2). It has no MPI counterpart.
type ShmArgs struct {
	Kind        int    // KBarrier, KBcast, KReduce, KAllreduce, KGather, KAllgather or KAllgatherv
	Send, Recv  []byte // the segment's buffers (Recv nil where unused)
	PRecv       []byte // the point-to-point algorithm's receive buffer
	Root, ESize int
	F           ReduceFn
	F4          ReduceFn4 // Allreduce: F's four-input form (nil: none)
	Commut      bool
	Counts      []int // Allgatherv: bytes per member
	Displs      []int // Allgatherv: byte displacements
}

// onSegment runs the call on g.
func (a *ShmArgs) onSegment(g *shmcoll.Group, call shmcoll.Call) error {
	switch a.Kind {
	case KBarrier:
		return g.Barrier(call)
	case KBcast:
		return g.Bcast(call, a.Send, a.Root)
	case KReduce:
		return g.Reduce(call, a.Send, a.Recv, a.Root, a.ESize, a.F)
	case KAllreduce:
		return g.Allreduce(call, a.Send, a.Recv, a.ESize, a.F, shmcoll.Fn4(a.F4))
	case KGather:
		return g.Gather(call, a.Send, a.Recv, a.Root)
	case KAllgather:
		return g.Allgather(call, a.Send, a.Recv)
	case KAllgatherv:
		return g.Allgatherv(call, a.Send, a.Recv, a.Counts, a.Displs)
	}
	panic("coll: a collective kind without a shared-memory form")
}

// p2p runs the call with the point-to-point algorithm on x.
func (a *ShmArgs) p2p(x *Set) error {
	switch a.Kind {
	case KBarrier:
		return x.Barrier()
	case KBcast:
		return x.Bcast(a.Send, a.Root)
	case KReduce:
		return x.Reduce(a.Send, a.PRecv, a.Root, a.F, a.Commut)
	case KAllreduce:
		return x.Allreduce(a.Send, a.PRecv, a.F, a.Commut)
	case KGather:
		return x.Gather(a.Send, a.PRecv, a.Root)
	case KAllgather:
		return x.Allgather(a.Send, a.PRecv)
	case KAllgatherv:
		return x.Allgatherv(a.Send, a.PRecv, a.Counts, a.Displs)
	}
	panic("coll: a collective kind without a shared-memory form")
}

// ShmComm is a communicator as its shared-memory path sees it, given by
// the caller with each call (a handle of the communicator: a context view
// is its own handle). It has no MPI counterpart.
type ShmComm interface {
	// ShmEligible reports, from values every member agrees on, whether
	// the communicator's collectives may use a segment at all (read until
	// the path is set up or off).
	ShmEligible() bool
	// ShmHost is the process's side of the shared-memory collectives
	// (read at the set-up).
	ShmHost() *ShmHost
	// ShmContexts are the communicator's point-to-point and collective
	// contexts: a revocation of either ends a wait (read at the set-up).
	ShmContexts() (pt, co uint32)
	// ShmSet begins a call op of signature sig and element type dt over
	// the point-to-point algorithms (taking the call's sequence number,
	// as ShmStart does): the set-up's, and the call's if the members
	// refused the segment.
	ShmSet(op string, sig Sig, dt uint64) *Set
	// ShmStart begins a call on the segment: the communicator's checks at
	// a collective's start, and the call's sequence number.
	ShmStart() uint32
	// ShmLost reports whether a member is known failed (asked only when
	// the engine knows of a loss).
	ShmLost() bool
	// ShmFailed is nil, or the error that ends a wait because a member is
	// known failed (the caller makes the failure known to the later calls
	// on the communicator); asked only when the engine knows of a loss.
	ShmFailed() error
	// ShmContext is the context of the handle (nil: none): its Done cuts
	// a wait.
	ShmContext() context.Context
	// ShmBlock records in the process's table of calls in progress (hang
	// reports, the trace timeline) that the call op (element type dt,
	// signature sig, sequence number seq) waits for member peer (-1:
	// none), process proc, and returns what to give ShmUnblock. It is
	// called when a wait is about to sleep, so it must not allocate or
	// block.
	ShmBlock(op string, dt uint64, sig Sig, seq uint32, peer, proc int) int
	// ShmUnblock ends the wait ShmBlock recorded (its result).
	ShmUnblock(slot int)
	// ShmErr turns the error of the call op (sequence number seq,
	// signature sig, element type dt) into the caller's: a *ShmError, the
	// error of ShmFailed, or another.
	ShmErr(op string, seq uint32, sig Sig, dt uint64, err error) error
}

// ShmWhy is why a call on the segment ended (ShmError). It has no MPI
// counterpart.
type ShmWhy int

// The reasons of a ShmError. They have no MPI counterpart.
const (
	ShmRejected   ShmWhy = iota + 1 // member Peer rejected its call (its release tells why)
	ShmMismatched                   // member Peer called another collective (Sig, DT)
	ShmPoisoned                     // another member found mismatched calls
	ShmCut                          // the handle's context is done
	ShmAborted                      // the job was aborted
	ShmRevoked                      // the communicator was revoked
)

// ShmError is the error of a call on the segment, other than a failed
// member's (ShmComm.ShmFailed). It has no MPI counterpart.
type ShmError struct {
	Why  ShmWhy
	Peer int    // ShmRejected, ShmMismatched: the member
	Sig  Sig    // ShmMismatched: the member's call
	DT   uint64 // ShmMismatched: its element type
}

func (e *ShmError) Error() string {
	switch e.Why {
	case ShmRejected:
		return "coll: a member rejected its call"
	case ShmMismatched:
		return "coll: a member called another collective"
	case ShmPoisoned:
		return "coll: another member found mismatched collective calls"
	case ShmCut:
		return "coll: the call's context was cut"
	case ShmAborted:
		return "coll: the job was aborted"
	case ShmRevoked:
		return "coll: the communicator was revoked"
	}
	return "coll: the shared-memory call failed"
}

var (
	errShmCut     = &ShmError{Why: ShmCut}
	errShmAborted = &ShmError{Why: ShmAborted}
	errShmRevoked = &ShmError{Why: ShmRevoked}
)

// shmOutcome is err of the segment's protocol as a ShmError (others as they
// are).
func shmOutcome(err error) error {
	var mm *shmcoll.MismatchError
	var rj *shmcoll.RejectedError
	switch {
	case errors.As(err, &rj):
		return &ShmError{Why: ShmRejected, Peer: rj.Peer}
	case errors.As(err, &mm):
		return &ShmError{Why: ShmMismatched, Peer: mm.Peer, Sig: Sig(mm.Sig), DT: mm.DT}
	case errors.Is(err, shmcoll.ErrPoisoned):
		return &ShmError{Why: ShmPoisoned}
	}
	return err
}

// ShmEngine is the failure state the waits of a process's shared-memory
// calls watch, as its point-to-point engine keeps it (*p2p.Engine). It
// has no MPI counterpart.
type ShmEngine interface {
	LostCount() int64               // how many peers are known lost
	IsRevoked(ctx uint32) bool      // whether ctx is revoked
	FailureSignal() <-chan struct{} // closed at the next loss
	PoisonSignal() <-chan struct{}  // closed at the next revocation or poisoning
}

// ShmHost is a process's side of the shared-memory collectives (one per
// World): the failure state, the job's abort, and the set of mapped
// segments whose sleepers its watcher (one goroutine, started with the
// first segment, ended by stop, by the abort or by the process's kill)
// wakes when the process learns of a peer loss, a newly revoked or
// poisoned context or the job's abort: subscribed once, so that a wait
// that goes to sleep starts nothing (a goroutine per sleeping wait cost
// Allreduce and Allgather 64 KiB at np 8 about a fifth). It has no MPI
// counterpart.
type ShmHost struct {
	eng         ShmEngine
	abort, stop <-chan struct{}
	bg          *sync.WaitGroup

	set     *shmGroups
	mu      sync.Mutex // guards started
	started bool
}

// shmGroups is the set of a process's mapped segments its watcher rings.
// It holds them weakly, and a dropped communicator's cleanup holds this
// set, not the ShmHost (whose engine may reach the communicator): either
// would keep the communicator's path reachable (a segment's group reaches
// its path through its waiters' environment), and its cleanup would never
// run.
type shmGroups struct {
	mu sync.Mutex
	m  map[weak.Pointer[shmcoll.Group]]struct{}
}

// NewShmHost is the side of a process whose engine is eng, whose job's
// abort closes abort and whose end closes stop; the watcher counts itself
// in bg. It has no MPI counterpart.
func NewShmHost(eng ShmEngine, abort, stop <-chan struct{}, bg *sync.WaitGroup) *ShmHost {
	return &ShmHost{eng: eng, abort: abort, stop: stop, bg: bg,
		set: &shmGroups{m: make(map[weak.Pointer[shmcoll.Group]]struct{})}}
}

// add registers g (mapped, held by the caller's path) and starts the
// watcher if it is not running.
func (h *ShmHost) add(g weak.Pointer[shmcoll.Group]) {
	h.set.mu.Lock()
	h.set.m[g] = struct{}{}
	h.set.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return
	}
	select {
	case <-h.stop:
		return // released: its segments' waiters end by their own checks
	default:
	}
	h.started = true
	eng, abort, stop := h.eng, h.abort, h.stop
	fail, poison := eng.FailureSignal(), eng.PoisonSignal()
	h.bg.Add(1)
	go func() {
		defer h.bg.Done()
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
				h.ring()
				return
			}
			h.ring()
		}
	}()
}

// remove unregisters g: no ring reaches it after remove returns (its
// segment may then be unmapped).
func (s *shmGroups) remove(g weak.Pointer[shmcoll.Group]) {
	s.mu.Lock()
	delete(s.m, g)
	s.mu.Unlock()
}

// ring wakes the sleepers of every registered segment (the event is
// recorded: a sleeper counted before this reads it in its Check). A
// group already garbage is skipped (its cleanup removes it).
func (h *ShmHost) ring() {
	s := h.set
	s.mu.Lock()
	for wg := range s.m {
		if g := wg.Value(); g != nil && g.Sleepers() != 0 {
			g.Wake()
		}
	}
	s.mu.Unlock()
}

// Shared-memory path states of a communicator (ShmPath.state).
const (
	shmUnknown int32 = iota // not set up yet: set up at the next eligible call
	shmOn                   // ShmPath.g is the group
	shmOff                  // point-to-point algorithms
)

// ShmPath is a communicator's shared-memory path (its zero value: not
// set up), shared by its handles; one blocking call at a time. It has no
// MPI counterpart.
type ShmPath struct {
	state  atomic.Int32
	g      *shmcoll.Group
	wg     weak.Pointer[shmcoll.Group] // g, as the host's set holds it
	seg    *segment.Segment            // nil once freed
	host   *ShmHost
	procs  []int // the members' processes (nil: the identity)
	n      int
	pt, co uint32 // the communicator's contexts (ShmComm.ShmContexts)
	env    shmEnv // the current call's
	clean  runtime.Cleanup
	keep   *shmKeep // the cleanup's object: reachable as long as the path is
	// pending: the call being prepared would take the segment, were its
	// arguments accepted (Pending; Reject).
	pending bool
	// armed: next holds the arguments of a call prepared on the segment
	// whose run (run, made once) has not started (Prepare).
	armed bool
	next  shmPrepared
	run   func() error
}

// shmKeep is the object a path's cleanup is attached to.
type shmKeep struct{ _ *byte } // a pointer: not a tiny object, whose cleanup could wait for its neighbours'

// shmPrepared is a call prepared on a segment in use.
type shmPrepared struct {
	p   *ShmPath
	c   ShmComm
	g   *shmcoll.Group
	op  string
	sig Sig
	dt  uint64
	a   ShmArgs
}

func (q *shmPrepared) run() error {
	seq := q.c.ShmStart()
	return q.p.call(q.c, q.g, q.op, seq, q.sig, q.dt, &q.a)
}

// runArmed runs the call armed by Prepare (ShmPath.armed).
func (p *ShmPath) runArmed() error {
	q := p.next
	p.next, p.armed = shmPrepared{}, false // nothing retained; a call prepared while this one runs may arm
	return q.run()
}

// Prepare prepares the call op (signature sig, element type dt,
// arguments a) on the handle c through the segment when the communicator
// uses or may use it; a set-up the members refused runs a's
// point-to-point algorithm. ok is false if the communicator does not use
// the segment (the caller takes the point-to-point path).
//
// On a segment in use, the returned run is the path's one preallocated
// function and the call's arguments wait in the path, unless an earlier
// prepared call has not run yet: then this call gets a closure of its
// own. So each prepared call runs its own arguments, whatever the order
// of the runs. It has no MPI counterpart.
func (p *ShmPath) Prepare(c ShmComm, op string, sig Sig, dt uint64, a ShmArgs) (run func() error, ok bool) {
	switch p.state.Load() {
	case shmOff:
		return nil, false
	case shmOn:
		g, eng := p.g, p.host.eng
		if g.Poisoned() || eng.LostCount() != 0 && c.ShmLost() || eng.IsRevoked(p.co) {
			// The point-to-point path reports the failure, the revocation or
			// the mismatch at once.
			p.state.Store(shmOff)
			return nil, false
		}
		if !p.armed {
			p.armed, p.next = true, shmPrepared{p: p, c: c, g: g, op: op, sig: sig, dt: dt, a: a}
			if p.run == nil {
				p.run = p.runArmed // allocated once per communicator
			}
			return p.run, true
		}
		q := &shmPrepared{p: p, c: c, g: g, op: op, sig: sig, dt: dt, a: a}
		return q.run, true
	}
	if !c.ShmEligible() {
		p.state.Store(shmOff)
		return nil, false
	}
	x, ap := c.ShmSet(op, sig, dt), &ShmArgs{}
	*ap = a // on the heap only here: a itself stays on the stack
	return func() error {
		g, err := p.setUp(c, x)
		switch {
		case err != nil:
			return err // shmUnknown: the next call tries again
		case g == nil:
			p.state.Store(shmOff)
			return ap.p2p(x)
		}
		p.g = g
		p.state.Store(shmOn)
		return p.call(c, g, op, uint32(x.Tag)&seqMask, sig, dt, ap)
	}, true
}

// seqMask is the sequence number's part of a collective call's tag
// (TagColl).
const seqMask = 1<<24 - 1

// call runs a, the call of sequence number seq, on g.
func (p *ShmPath) call(c ShmComm, g *shmcoll.Group, op string, seq uint32, sig Sig, dt uint64, a *ShmArgs) error {
	e := &p.env
	e.c, e.g = c, g // c may be a context view: its context is this call's
	e.op, e.seq, e.sig, e.dt = op, seq, sig, dt
	if err := a.onSegment(g, shmcoll.Call{Sig: uint64(sig), DT: dt}); err != nil {
		p.state.Store(shmOff)
		return c.ShmErr(op, seq, sig, dt, shmOutcome(err))
	}
	return nil
}

// setUp makes, maps and agrees on the segment within the call of set x
// (collective over the communicator). It returns nil and no error if some
// member could not map it (or rank 0 could not create it).
func (p *ShmPath) setUp(c ShmComm, x *Set) (*shmcoll.Group, error) {
	n := x.N
	size := shmcoll.Size(n)
	// The set-up (rank 0 creates the file, every member maps it, all agree
	// that all did, rank 0 removes the name) is segment.Share's.
	m := segment.Members{Rank: x.Me, Size: n, Allgather: func(mine []int64) ([]int64, error) {
		b := make([]byte, 8*len(mine))
		for i, v := range mine {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		all := make([]byte, 8*len(mine)*n)
		if err := x.Allgather(b, all); err != nil {
			return nil, err
		}
		out := make([]int64, len(mine)*n)
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(all[8*i:]))
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
	p.env.p = p
	g, err := shmcoll.New(s.Mapping, n, x.Me, x.Crowded, &p.env)
	if err != nil { // the same at every member: the same size and layout
		s.Unmap()
		return nil, nil
	}
	p.host = c.ShmHost()
	p.pt, p.co = c.ShmContexts()
	p.procs, p.n = x.Procs, n
	p.seg = s
	p.wg = weak.Make(g)
	p.host.add(p.wg)
	p.keep = &shmKeep{}
	// The cleanup's argument must not reach p (nor keep): g does (its
	// waiters' environment is p.env), and so may the host's engine.
	p.clean = runtime.AddCleanup(p.keep, func(m shmMapped) { m.set.remove(m.g); m.s.Unmap() }, shmMapped{s, p.wg, p.host.set})
	return g, nil
}

// shmMapped is what a dropped communicator's cleanup unmaps.
type shmMapped struct {
	s   *segment.Segment
	g   weak.Pointer[shmcoll.Group]
	set *shmGroups
}

// Free removes the mapping (MPI_Comm_free's part), also one the
// communicator's calls no longer used (a failure, a revocation or a
// rejected call made them leave it); the communicator's collectives no
// longer use it.
func (p *ShmPath) Free() {
	p.state.Store(shmOff)
	if s := p.seg; s != nil {
		p.seg = nil
		p.clean.Stop()
		p.host.set.remove(p.wg)
		s.Unmap()
	}
}

// Pending says whether the call being prepared would take the segment,
// were its arguments accepted (a rejection is then published: Reject).
// It has no MPI counterpart.
func (p *ShmPath) Pending(b bool) { p.pending = b }

// Reject tells the other members, through the segment, that this member
// rejected its call, if that call would have taken the segment (Pending),
// and stops using the segment. It has no MPI counterpart.
func (p *ShmPath) Reject() {
	pending := p.pending
	p.pending = false
	if pending && p.state.Load() == shmOn {
		p.state.Store(shmOff)
		p.g.Reject()
	}
}

// On reports whether the communicator's calls go through its segment
// (tests). It has no MPI counterpart.
func (p *ShmPath) On() bool { return p.state.Load() == shmOn }

// Armed reports whether a prepared call's arguments wait in the path
// (tests: a run leaves nothing armed). It has no MPI counterpart.
func (p *ShmPath) Armed() bool { return p.armed }

// Calls is the number of collective calls made through the segment here
// (tests). It has no MPI counterpart.
func (p *ShmPath) Calls() uint64 {
	if g := p.g; g != nil {
		return g.Calls.Load()
	}
	return 0
}

// Sleepers is the number of members asleep on the segment's doorbell (0
// without a segment in use; tests). It has no MPI counterpart.
func (p *ShmPath) Sleepers() int {
	if g := p.g; g != nil && p.On() {
		return g.Sleepers()
	}
	return 0
}

// Mapping is the segment's mapping here (nil: none; tests). It has no MPI
// counterpart.
func (p *ShmPath) Mapping() []byte {
	if s := p.seg; s != nil {
		return s.Mapping
	}
	return nil
}

// shmEnv answers a shared-memory waiter (shmcoll.Env) of the path's
// current call: whether the call must end, and the call table's record
// of a blocked wait.
type shmEnv struct {
	p   *ShmPath
	c   ShmComm // the call's handle
	g   *shmcoll.Group
	op  string
	seq uint32
	sig Sig
	dt  uint64

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

// Check reports why the call must end: the job's abort, the handle's
// context done, a member known failed, the communicator revoked.
func (e *shmEnv) Check() error {
	h := e.p.host
	select {
	case <-h.abort:
		return errShmAborted
	default:
	}
	if ctx := e.c.ShmContext(); ctx != nil {
		select {
		case <-ctx.Done():
			return errShmCut
		default:
		}
	}
	if h.eng.LostCount() != 0 {
		if err := e.c.ShmFailed(); err != nil {
			return err
		}
	}
	if h.eng.IsRevoked(e.p.co) || h.eng.IsRevoked(e.p.pt) {
		return errShmRevoked
	}
	return nil
}

// Block records the wait for member peer in the call table (hang
// reports) through the caller's ShmComm.ShmBlock. The events Check
// reports ring the doorbell through the process's watcher (ShmHost),
// subscribed at the segment's set-up; only a context view's wait arms a
// ring on its context (context.AfterFunc, no goroutine until it fires),
// until Unblock.
func (e *shmEnv) Block(peer int) int {
	if ctx := e.c.ShmContext(); ctx != nil {
		wk := &shmWaker{}
		g := e.g
		wk.stop = context.AfterFunc(ctx, func() { wk.ring(g) })
		e.wk = wk
	}
	proc := -1
	if p := e.p; peer >= 0 && peer < p.n {
		proc = peer
		if p.procs != nil {
			proc = p.procs[peer]
		}
	} else {
		peer = -1
	}
	return e.c.ShmBlock(e.op, e.dt, e.sig, e.seq&seqMask, peer, proc)
}

// Unblock ends the wait Block recorded.
func (e *shmEnv) Unblock(i int) {
	if k := e.wk; k != nil {
		k.stop()
		k.mu.Lock()
		k.stopped = true
		k.mu.Unlock()
		e.wk = nil
	}
	e.c.ShmUnblock(i)
}
