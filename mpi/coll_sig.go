package mpi

import (
	"fmt"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// Mismatched collective calls, and calls that fail at one member only.
//
// The MPI standard calls a program erroneous when the members of a
// communicator make different collective calls at the same point of their
// sequence (another operation, root, count, element type or reduction
// operation). ftmpi detects it: every message of a collective carries the
// signature of the sender's call (coll.Sig, in a header field those frames
// do not otherwise use: no byte more on the wire), every public collective
// of a communicator uses the same tag for a given sequence number
// (coll.TagColl), so a Bcast's messages reach a Reduce made at the same
// point, and a receiver whose call differs from the sender's fails with an
// error naming both calls (collNet.Wait -> mismatch), also when the message
// of the other call comes from another member than the one it waits for
// (p2p.Engine.IrecvSig: that member may never send to it): "rank 2 called
// MPI_Reduce (root 0, 4 x int64, MPI_SUM); this rank MPI_Bcast (root 1, 4
// x int64)". The class says what differs first: the operation ErrOther,
// the root ErrRoot, the element type ErrType, the count ErrCount, the
// reduction ErrOp.
//
// Releasing the others. A member whose call fails on its own (it saw a
// mismatch, or its arguments were rejected before the call started:
// failColl) takes the call's sequence number like the others and sends a
// ctl.CollFail control frame, naming itself and the reason, to every other
// member. The receiver poisons the call's (context, tags) in its engine
// (p2p.Engine.PoisonTags): every pending and future operation of that call
// completes with the error, so a member waiting for a message that the
// failed member will never send returns, with the failed member's rank and
// reason, instead of hanging. We chose a control frame over sending the
// messages the failed member owes, marked as failed: a member that failed
// before the call started (bad arguments) cannot run the algorithm, a
// mismatched member runs another algorithm than the others (it owes other
// messages than they wait for), and rendezvous sends to it would wait for
// a receive it never posts; one frame per member reaches every wait of the
// call whatever its algorithm. It costs nothing when calls match.
//
// The poison of a call is kept after the call (a member may start the call
// after the frame arrived, and must then fail it); it is cleared when the
// sequence numbers have advanced half their 2^24 range past it (nextSeq),
// long before the tag is reused.
//
// What detection cannot do without costing every call a round of messages:
// a member that receives no message of the mismatched call before its part
// ends (the root of a broadcast only sends; a call with a count of 0 sends
// and receives nothing) returns success, and two
// mismatched members that each wait for the other, with no message between
// them (a Bcast's tree and a Reduce's tree run in opposite directions), wait
// until something else ends the wait (a failure, a revocation). The
// mismatched messages such a call left behind are dropped once any member
// fails the call.
//
// The checking mode (Config.Check, check.go) pays that round of messages:
// before a collective runs, its members exchange their signatures, and a
// mismatch is an error at every member, before any message of the call.

// sigOf is the signature of a call of kind with reduction op (nil: none).
func sigOf(kind int, op *Op, root, count int) coll.Sig {
	code := 0
	if op != nil {
		code = int(op.kind) + 1
	}
	return coll.MakeSig(kind, code, root, count)
}

// collNames are the MPI names of the collective kinds (blocking forms).
var collNames = [...]string{
	coll.KBarrier: "MPI_Barrier", coll.KBcast: "MPI_Bcast", coll.KReduce: "MPI_Reduce",
	coll.KAllreduce: "MPI_Allreduce", coll.KGather: "MPI_Gather", coll.KGatherv: "MPI_Gatherv",
	coll.KScatter: "MPI_Scatter", coll.KScatterv: "MPI_Scatterv", coll.KAllgather: "MPI_Allgather",
	coll.KAllgatherv: "MPI_Allgatherv", coll.KAlltoall: "MPI_Alltoall", coll.KAlltoallv: "MPI_Alltoallv",
	coll.KReduceScatter: "MPI_Reduce_scatter", coll.KReduceScatterBlock: "MPI_Reduce_scatter_block",
	coll.KScan: "MPI_Scan", coll.KExscan: "MPI_Exscan",
	coll.KNeighborAllgather: "MPI_Neighbor_allgather", coll.KNeighborAllgatherv: "MPI_Neighbor_allgatherv",
	coll.KNeighborAlltoall: "MPI_Neighbor_alltoall", coll.KNeighborAlltoallv: "MPI_Neighbor_alltoallv",
}

// opNames are the names of the reduction codes of signatures (sigOf).
var opNames = [...]string{
	1 + opUser: "a user operation", 1 + opSum: "MPI_SUM", 1 + opProd: "MPI_PROD", 1 + opMin: "MPI_MIN",
	1 + opMax: "MPI_MAX", 1 + opLand: "MPI_LAND", 1 + opLor: "MPI_LOR", 1 + opLxor: "MPI_LXOR",
	1 + opBand: "MPI_BAND", 1 + opBor: "MPI_BOR", 1 + opBxor: "MPI_BXOR",
}

func nameOr(names []string, i int, what string) string {
	if i >= 0 && i < len(names) && names[i] != "" {
		return names[i]
	}
	return fmt.Sprintf("%s %d", what, i)
}

// describeCall is a call as errors name it: "MPI_Reduce (root 0, 4 x
// int64, MPI_SUM)".
func describeCall(s coll.Sig, dt p2p.DType) string {
	k := s.Kind()
	if k == coll.KBarrier {
		return nameOr(collNames[:], k, "collective kind")
	}
	b := nameOr(collNames[:], k, "collective kind") + " ("
	if coll.Rooted(k) {
		b += fmt.Sprintf("root %d, ", s.Root())
	}
	if coll.Counted(k) {
		n := fmt.Sprint(s.Count())
		if s.Count() == coll.SigMaxCount {
			n = ">= " + n
		}
		b += n + " x "
	}
	b += p2p.DTypeName(dt)
	if coll.Reducing(k) {
		b += ", " + nameOr(opNames[:], s.Op(), "operation")
	}
	return b + ")"
}

// mismatchClass is the class of a mismatch: what differs first.
func mismatchClass(a, b coll.Sig, adt, bdt p2p.DType) *Class {
	switch {
	case a.Kind() != b.Kind():
		return ErrOther
	case a.Root() != b.Root():
		return ErrRoot
	case adt != bdt:
		return ErrType
	case a.Count() != b.Count():
		return ErrCount
	}
	return ErrOp
}

// mismatch is the error of a message of call theirs (element type tdt) from
// member peer of s: it fails this member's call, which releases the others.
func (n *collNet) mismatch(s *coll.Set, peer int, theirs coll.Sig, tdt p2p.DType) error {
	class := mismatchClass(theirs, s.Sig, tdt, n.dt)
	them, us := describeCall(theirs, tdt), describeCall(s.Sig, n.dt)
	n.c.releaseCall(s, class, fmt.Sprintf("it called %s, rank %d %s", us, peer, them))
	return newErr(class, n.op, n.c, NoPeer, "rank %d called %s; this rank %s", peer, them, us)
}

// collFailure is the poison of a collective call that failed at member rank
// for reason (a ctl.CollFail frame); collNet.err turns it into an Error of
// the failed operation.
type collFailure struct {
	class  *Class
	rank   int
	reason string
}

func (f *collFailure) Error() string {
	return fmt.Sprintf("the call failed at rank %d: %s", f.rank, f.reason)
}

// err turns an engine error of a request of this call into the call's
// error.
func (n *collNet) err(peer int, err error) error {
	if f, ok := err.(*collFailure); ok {
		return newErr(f.class, n.op, n.c, NoPeer, "%s", f.Error())
	}
	return n.c.engineErr(n.op, peer, err)
}

// seqOfTag is the sequence number in a public collective's tag.
func seqOfTag(tag int32) uint32 { return uint32(tag) & (1<<24 - 1) }

// releaseCall fails the call of s at every other member (see the comment at
// the top): it poisons the call here, so the messages still coming are
// dropped, and sends the reason to the others. class and reason describe
// the failure as the others will report it.
func (c *Comm) releaseCall(s *coll.Set, class *Class, reason string) {
	if s.Sig == 0 && !coll.IsCheck(s.Tag) {
		return // an internal set: its users agree on outcomes themselves
	}
	procs := make([]int, 0, s.N)
	for i := range s.N {
		if i != s.Me {
			procs = append(procs, s.Proc(i))
		}
	}
	c.w.releaseCall(s.Ctx, seqOfTag(s.Tag), s.Me, class, reason, procs)
}

func (w *World) releaseCall(ctx, seq uint32, me int, class *Class, reason string, procs []int) {
	tags := coll.PhaseTags(seq)
	w.eng.PoisonTags(&collFailure{class: class, rank: me, reason: reason}, ctx, tags[:]...)
	w.rt.SendCollFail(procs, rte.CollFail{Ctx: ctx, Seq: seq, Rank: me, Code: class.code, Reason: reason})
}

// onCollFail handles a ctl.CollFail frame (decoded by the runtime): the
// call it names failed at its sender; fail it here too.
func (w *World) onCollFail(_ int, m rte.CollFail) {
	f := &collFailure{class: classByCode(m.Code), rank: m.Rank, reason: m.Reason}
	tags := coll.PhaseTags(m.Seq)
	w.eng.PoisonTags(f, m.Ctx, tags[:]...)
}

// classes are the classes a CollFail frame may name.
var classes = []*Class{ErrBuffer, ErrCount, ErrType, ErrTag, ErrComm, ErrRank, ErrRequest, ErrRoot,
	ErrGroup, ErrOp, ErrTopology, ErrDims, ErrArg, ErrUnknown, ErrTruncate, ErrOther, ErrIntern, ErrInStatus, ErrPending,
	ErrProcFailed, ErrRevoked}

func classByCode(code int) *Class {
	for _, c := range classes {
		if c.code == code {
			return c
		}
	}
	return ErrOther
}

// nextSeq takes the sequence number of the next collective call on c, and
// clears the poison of the call half the sequence range ago (see the
// comment at the top).
func (c *Comm) nextSeq() uint32 {
	seq := c.coll.seq.Add(1)
	if c.w.eng.TagPoisons() > 0 {
		old := coll.PhaseTags(seq - 1<<23)
		c.w.eng.ClearTags(c.ctx+1, old[:]...)
	}
	return seq
}

// failColl is the error of a collective call whose arguments this member
// rejected: the call still takes its sequence number, and the other
// members' calls fail with the reason (releaseCall) instead of waiting
// for this member. The error has passed c's handler.
func (c *Comm) failColl(err error) error {
	if e, ok := err.(*Error); ok {
		c.releaseNext(e)
	}
	return c.handle(err)
}

// releaseNext takes the sequence number of the next collective call on
// intracommunicator c and fails that call at the other members with e's
// class and detail (see failColl).
func (c *Comm) releaseNext(e *Error) {
	if c.IsInter() || c.size <= 1 {
		return
	}
	c.shmReject() // the others may wait in the shared segment (coll_shm.go)
	seq := c.nextSeq()
	procs := make([]int, 0, c.size-1)
	for i := range c.size {
		if i != c.rank {
			procs = append(procs, c.worldRank(i))
		}
	}
	c.w.releaseCall(c.ctx+1, seq, c.rank, e.Class, e.Detail, procs)
}
