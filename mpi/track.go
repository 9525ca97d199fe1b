package mpi

import (
	"strings"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// The call tracking: every wait of the API that may block records what
// it waits in, in the table its epoch's runtime owns (rte.Rank.Calls,
// internal/rte/calls.go), and only when it
// is about to block (a completed request records nothing), so a call that
// does not wait pays nothing and one that waits pays a few atomic
// operations, no allocation and no clock. The hang report (hang.go) and
// the trace timeline read the table.

// trackType names an element type without allocating (a struct type is
// "struct": its registered name is formatted on demand only).
func trackType(dt p2p.DType) string {
	if dt.Code() == p2p.DTStruct {
		return "struct"
	}
	return p2p.DTypeName(dt)
}

// entry is a blank entry of op on c.
func (c *Comm) entry(op string) rte.Call {
	return rte.BlankCall(op, c.name, c.ctx)
}

// setPeer sets e's peer to rank peer of c (AnySource, NoPeer included).
func (c *Comm) setPeer(e *rte.Call, peer int) {
	switch {
	case peer == AnySource:
		e.Peer = rte.CallAny
	case peer >= 0 && (c.remote != nil && peer < len(c.remote) || c.remote == nil && peer < c.size):
		e.Peer, e.PeerProc = int32(peer), int32(c.peerWorldRank(peer))
	}
}

// trackReq records a wait of op on engine request r with peer (a rank of
// c) and returns the slot for leave (-1: not recorded).
func (c *Comm) trackReq(op, of string, peer int, r *p2p.Req) int {
	e := rte.Call{Op: op, Of: of, Comm: c.name, Ctx: c.ctx, Peer: rte.CallNone, PeerProc: rte.CallNone,
		Root: rte.CallNone, Count: rte.CallNone, Seq: rte.CallNone}
	c.setPeer(&e, peer)
	tag, dt, n := r.Posted()
	e.Tag, e.Type = tag, trackType(dt)
	if n >= 0 {
		e.Count = int64(n / dtypeSize(dt))
	}
	return c.w.rt.Calls.Enter(&e)
}

// trackOp records a wait of op on c with no further detail.
func (c *Comm) trackOp(op string) int {
	e := c.entry(op)
	return c.w.rt.Calls.Enter(&e)
}

// trackColl records the wait of a collective call of set s for peer (an
// index in s), with the call's signature and sequence number when it is a
// public collective.
func (n *collNet) track(s *coll.Set, peer int) int {
	c := n.c
	e := c.entry(n.op)
	if sig := s.Sig; sig != 0 {
		setColl(&e, sig, uint32(s.Tag)&(1<<24-1))
	}
	e.Type = trackType(n.dt)
	if peer >= 0 && peer < s.N {
		e.Peer, e.PeerProc = int32(peer), int32(s.Proc(peer))
	}
	e.Background = background(n.op)
	return c.w.rt.Calls.Enter(&e)
}

// setColl sets e's fields of a public collective call: its root and
// count (from its signature sig) and its sequence number seq.
func setColl(e *rte.Call, sig coll.Sig, seq uint32) {
	k := sig.Kind()
	if coll.Rooted(k) {
		e.Root = int32(sig.Root())
	}
	if coll.Counted(k) {
		e.Count = int64(sig.Count())
	}
	e.Seq = int64(seq)
}

// ShmBlock records the wait of a call on c's shared-memory path
// (coll.ShmComm): op of element type dt, signature sig, sequence number
// seq, for member peer (-1: none) of process proc.
func (s *shmComm) ShmBlock(op string, dt uint64, sig coll.Sig, seq uint32, peer, proc int) int {
	c := (*Comm)(s)
	e := c.entry(op)
	e.Type = trackType(p2p.DType(dt))
	setColl(&e, sig, seq)
	if peer >= 0 {
		e.Peer, e.PeerProc = int32(peer), int32(proc)
	}
	return c.w.rt.Calls.Enter(&e)
}

// ShmUnblock ends the wait ShmBlock recorded.
func (s *shmComm) ShmUnblock(slot int) { s.w.rt.Calls.Leave(slot) }

// leave ends a wait that track* recorded (a nil w: nothing recorded).
func (w *World) leave(i int) {
	if w != nil {
		w.rt.Calls.Leave(i)
	}
}

// background reports whether op is a nonblocking operation, whose waits
// run in a goroutine of their own, not in the program's call.
func background(op string) bool {
	switch {
	case strings.HasPrefix(op, "MPI_Ineighbor"):
		return true
	case strings.HasPrefix(op, "MPI_In"): // MPI_Init, MPI_Intercomm_*, MPI_Info_*
		return false
	case strings.HasPrefix(op, "MPI_I"), strings.HasPrefix(op, "MPIX_I"):
		return true
	}
	return strings.Contains(op, "_i") // MPI_Comm_idup, MPIX_Comm_iagree, MPI_File_iread_all
}

// trackAny records a wait of op (Waitany, Waitsome) on reqs: the peer of
// the only pending request, if one.
func trackAny(op string, reqs []*Request) (*World, int) {
	var first *Request
	pending := 0
	for _, r := range reqs {
		if r != nil && !r.done && r.pr != nil {
			if first == nil {
				first = r
			}
			pending++
		}
	}
	if first == nil {
		return nil, -1
	}
	c := first.c
	e := c.entry(op)
	e.Of = first.op
	if pending == 1 {
		c.setPeer(&e, first.peer)
	}
	return c.w, c.w.rt.Calls.Enter(&e)
}

// track records a wait of op (MPI_Wait, MPI_Waitall) on r.
func (r *Request) track(op string) int {
	c := r.c
	if r.local {
		e := c.entry(op)
		e.Of = r.op
		return c.w.rt.Calls.Enter(&e)
	}
	return c.trackReq(op, r.op, r.peer, r.pr)
}
