package mpi

import (
	"context"
	"errors"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Shared-memory collectives (issue 28 item 3): the blocking Barrier,
// Bcast, Reduce, Allreduce, Allgather, Gather and Allgatherv of an
// intracommunicator whose members all run on one host go through a
// segment all of them map, instead of the point-to-point algorithms, when
// internal/coll says so for the call's kind, size and member count
// (coll.ShmUse) and drives it (coll.ShmPath, in commState: the segment's
// set-up within the first eligible call, the calls on it, the rejection
// of a call, the waits' environment: failures, revocations, the job's
// abort, a view's cut, the call table's record, and the process's
// doorbell watcher, coll.ShmHost). Gatherv and Scatter(v) do not: their
// counts are known at the root only, so the members cannot agree on the
// steps. The nonblocking and persistent forms keep the point-to-point
// algorithms: only blocking calls are ordered the same at every member,
// which the segment's single sequence of steps needs. A derived datatype
// (the typed forms) moves the same bytes as its signature's plain
// elements, so it takes the same path.
//
// What stays here is what the choice is made from, values every member
// agrees on (shmEligible: an intracommunicator, the hosts of its members
// as the launcher told every process, the test override of the algorithm
// choice, Hosts.Force: tests that force an algorithm family get the
// point-to-point ones, and the checking mode, Config.Check, which
// exchanges every call's signature), what a communicator is to the path
// (shmComm: its sequence of calls, its failed members, which poison its
// collective context as World.waitColl does, its names, its error
// classes) and one typed entry per kind in coll.go's preparations.

// shmRun prepares the call op (signature sig, element type dt, arguments
// a) on c through the segment when c uses or may use it (coll.ShmPath.
// Prepare); ok is false if c does not use the segment.
func shmRun(c *Comm, op string, sig coll.Sig, dt p2p.DType, a coll.ShmArgs) (collRun, bool) {
	return c.coll.shm.Prepare((*shmComm)(c), op, sig, uint64(dt), a)
}

// maxCount is the largest of counts (0 for none).
func maxCount(counts []int) int {
	m := 0
	for _, n := range counts {
		m = max(m, n)
	}
	return m
}

// shmEligible reports, from values every member agrees on, whether c's
// collectives may use a shared segment (the size bounds are coll.ShmUse's).
func (c *Comm) shmEligible() bool {
	if c.IsInter() || c.w.cfg.Check || c.w.rt.Hosts.Force.Load() != 0 {
		return false
	}
	return c.w.rt.Hosts.Same(c.size, c.worldRank)
}

// shmHost is w's side of the shared-memory collectives, made at its first
// segment.
func (w *World) shmHost() *coll.ShmHost {
	w.shmOnce.Do(func() { w.shm = coll.NewShmHost(w.eng, w.abort, w.stop, &w.bg) })
	return w.shm
}

// freeShm removes c's mapping (Free); c's collectives no longer use it.
func (c *Comm) freeShm() { c.coll.shm.Free() }

// shmReject tells the other members, through the segment, that this
// member rejected its call (failColl), if that call would have taken the
// segment (coll.ShmPath.Pending), and stops using the segment.
func (c *Comm) shmReject() { c.coll.shm.Reject() }

// shmCalls is the number of collective calls c made through its segment
// here (tests).
func (c *Comm) shmCalls() uint64 { return c.coll.shm.Calls() }

// shmComm is a handle of a communicator as its shared-memory path sees it
// (coll.ShmComm); a context view is its own handle.
type shmComm Comm

func (s *shmComm) ShmEligible() bool { return (*Comm)(s).shmEligible() }

func (s *shmComm) ShmHost() *coll.ShmHost { return s.w.shmHost() }

func (s *shmComm) ShmContexts() (pt, co uint32) { return s.ctx, s.ctx + 1 }

func (s *shmComm) ShmSet(op string, sig coll.Sig, dt uint64) *coll.Set {
	return newCx((*Comm)(s), op, sig, p2p.DType(dt))
}

func (s *shmComm) ShmStart() uint32 {
	c := (*Comm)(s)
	c.collStartCheck()
	return c.nextSeq()
}

func (s *shmComm) ShmLost() bool { return (*Comm)(s).hasFailedMember() }

// ShmFailed poisons the collective context (as World.waitColl does) when
// a member is known failed, and returns that failure.
func (s *shmComm) ShmFailed() error {
	c := (*Comm)(s)
	w := c.w
	if p := w.eng.FirstLost(func(p int) bool { return c.setHas(c.size, c.members, p) }); p >= 0 {
		mf := &memberFailedError{proc: p}
		w.eng.Poison(mf, c.ctx+1)
		return mf
	}
	return nil
}

func (s *shmComm) ShmContext() context.Context { return s.cctx }

// ShmErr turns an error of the shared-memory call op (sequence number
// seq, signature sig, element type dt) into the call's.
func (s *shmComm) ShmErr(op string, seq uint32, sig coll.Sig, dt64 uint64, err error) error {
	c, dt := (*Comm)(s), p2p.DType(dt64)
	var se *coll.ShmError
	if errors.As(err, &se) {
		switch se.Why {
		case coll.ShmRejected:
			// The rejecting member releases the call: its reason completes a
			// receive on the call's tag.
			x := newCall(c, op, c.ctx+1, coll.TagColl(seq), dt, c.rank, c.size, c.members)
			x.Sig = sig
			if _, err := x.Recv(se.Peer, nil); err != nil {
				return err
			}
			return newErr(ErrOther, op, c, se.Peer, "rank %d rejected its call", se.Peer)
		case coll.ShmMismatched:
			theirs, tdt := se.Sig, p2p.DType(se.DT)
			return newErr(mismatchClass(theirs, sig, tdt, dt), op, c, NoPeer, "rank %d called %s; this rank %s",
				se.Peer, describeCall(theirs, tdt), describeCall(sig, dt))
		case coll.ShmPoisoned:
			return newErr(ErrOther, op, c, NoPeer, "another rank found mismatched collective calls")
		case coll.ShmCut:
			return c.cutErr(op, NoPeer, "")
		case coll.ShmAborted:
			return c.engineErr(op, NoPeer, p2p.ErrClosed)
		case coll.ShmRevoked:
			return c.engineErr(op, NoPeer, p2p.ErrRevoked)
		}
	}
	if errors.Is(err, p2p.ErrPeerLost) || errors.Is(err, p2p.ErrRevoked) || errors.Is(err, p2p.ErrClosed) {
		return c.engineErr(op, NoPeer, err)
	}
	return newErr(ErrOther, op, c, NoPeer, "%v", err)
}
