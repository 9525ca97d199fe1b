package mpi

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// Split and Create on intercommunicators (MPI-4.1 7.4.2), and the
// nonblocking duplication (MPI_Comm_idup) whose agreement runs in the
// background.
//
// An intercommunicator Split or Create runs over both groups through the
// intercommunicator's interLink: each group learns its own (colour, key)
// pairs (or subgroup) over its local part, the leaders swap them, and
// every process then knows both sides of its new intercommunicator. The
// two context pairs of the results are agreed by all processes of both
// groups (those not joining contribute all-free bitmaps), as Dup does.

// interSplit is Split on intercommunicator c with raw errors.
func (c *Comm) interSplit(op string, color, key int) (*Comm, error) {
	lc := c
	if v := c.ftm().alive(c); v != nil {
		lc = v // run-through with recognised failures: the alive processes agree
	}
	l := lc.link(op, tagInterLocal, tagInterCross)
	n, nr := l.loc.N, len(lc.remote)
	all := make([]byte, 16*n)
	if err := l.loc.Allgather(putInts(int64(color), int64(key)), all); err != nil {
		return nil, err
	}
	raw, err := l.swap(all, 16*nr)
	if err != nil {
		return nil, err
	}
	// Both tables are the same at every process of both groups: a bad
	// colour is reported everywhere.
	for side, tab := range [][]byte{all, raw} {
		for r := 0; r < len(tab)/16; r++ {
			if col := getInt(tab, 2*r); col < 0 && col != Undefined {
				where := "local"
				if side == 1 {
					where = "remote"
				}
				return nil, newErr(ErrArg, op, c, NoPeer, "%s rank %d passed colour %d (colours are >= 0 or mpi.Undefined)", where, r, col)
			}
		}
	}
	pick := func(tab []byte) []int {
		var ranks []int
		for r := 0; r < len(tab)/16; r++ {
			if getInt(tab, 2*r) == int64(color) {
				ranks = append(ranks, r)
			}
		}
		slices.SortStableFunc(ranks, func(a, b int) int {
			ka, kb := getInt(tab, 2*a+1), getInt(tab, 2*b+1)
			switch {
			case ka < kb:
				return -1
			case ka > kb:
				return 1
			}
			return 0
		})
		return ranks
	}
	var lr, rr []int
	if color != Undefined {
		lr, rr = pick(all), pick(raw)
	}
	join := len(lr) > 0 && len(rr) > 0 // a colour on one side only: MPI_COMM_NULL
	pairs, err := ctxAgreement(c.w, c, op, 2, uint64(c.ctx)|1<<59, join, l.and)
	if err != nil || !join {
		return nil, err
	}
	members, remote, rank := make([]int, len(lr)), make([]int, len(rr)), -1
	for i, r := range lr {
		members[i] = lc.local.members[r]
		if r == l.loc.Me {
			rank = i
		}
	}
	for i, r := range rr {
		remote[i] = lc.remote[r]
	}
	name := fmt.Sprintf("split(%s, colour %d)", shortName(c), color)
	return newInter(c, name, pairs, members, remote, rank), nil
}

// interCreate is Create on intercommunicator c with raw errors: g is a
// subgroup of c's local group (the same at every process of the group);
// the result's remote group is the other group's g.
func (c *Comm) interCreate(op string, g *Group) (*Comm, error) {
	lc := c
	if v := c.ftm().alive(c); v != nil {
		lc = v
	}
	l := lc.link(op, tagInterLocal, tagInterCross)
	hdr, err := l.swap(putInts(int64(len(g.procs))), 8)
	if err != nil {
		return nil, err
	}
	nr := int(getInt(hdr, 0))
	raw, err := l.swap(putIntSlice(g.procs), 8*nr)
	if err != nil {
		return nil, err
	}
	remote := make([]int, nr)
	for i := range remote {
		remote[i] = int(getInt(raw, i))
	}
	rank := g.index(c.w.rank)
	join := rank >= 0 && nr > 0
	pairs, err := ctxAgreement(c.w, c, op, 2, uint64(c.ctx)|1<<58, join, l.and)
	if err != nil || !join {
		return nil, err
	}
	return newInter(c, derivedName("create", c), pairs, slices.Clone(g.procs), remote, rank), nil
}

// splitInter and createInter are Split and Create's intercommunicator
// branch (errors through c's handler).
func (c *Comm) splitInter(op string, color, key int) (*Comm, error) {
	nc, err := c.ftm().create(c, op, func() (*Comm, error) { return c.interSplit(op, color, key) })
	return nc, c.handle(err)
}

func (c *Comm) createInter(op string, g *Group) (*Comm, error) {
	if err := c.checkSubgroup(op, g); err != nil {
		return nil, c.handle(err)
	}
	nc, err := c.ftm().create(c, op, func() (*Comm, error) { return c.interCreate(op, g) })
	return nc, c.handle(err)
}

// idupSeqs numbers the IdupStart calls on each communicator: every member
// starts them in the same order, so the n-th has the same number at all
// of them, and its agreement runs on its own internal tag.
var idupSeqs sync.Map // *Comm -> *atomic.Uint64

// idupTag is the internal tag of the seq-th IdupStart on a communicator:
// the top of the range of IntercommCreate's tags (programs use small
// tags), on the communicator's own collective context; never -1 (AnyTag).
func idupTag(seq uint64) int32 { return intercommTag(1<<30 - 2 - int(seq%(1<<20))) }

// IdupStart starts a nonblocking duplication of c (MPI_Comm_idup,
// MPI_Comm_idup_with_info when withInfo). The context agreement runs in
// the background on an internal tag of its own, so several duplications
// (of the same or of overlapping communicators) may be pending at once and
// complete in any order, and other operations on c may follow before the
// request completes. newcomm returns the new communicator once the
// request has completed (nil if it failed). Under a run-through model,
// whose creations take turns on c, it duplicates at the call (Idup).
func (c *Comm) IdupStart(info *Info, withInfo bool) (req *Request, newcomm func() *Comm, err error) {
	op := "MPI_Comm_idup"
	if withInfo {
		op = "MPI_Comm_idup_with_info"
	}
	if err := checkLive(c, op); err != nil {
		return nil, nil, err
	}
	if _, ok := c.ftm().(ulfmModel); !ok || c.ftm().alive(c) != nil {
		nc, r, err := c.Idup(info, withInfo)
		return r, func() *Comm { return nc }, err
	}
	v, _ := idupSeqs.LoadOrStore(c, new(atomic.Uint64))
	seq := v.(*atomic.Uint64).Add(1) - 1
	info = info.clone() // the caller may change or free it before completion
	var nc *Comm
	req = c.startColl(op, func() error {
		d, err := c.idupRun(op, idupTag(seq), seq)
		if err == nil {
			if err = c.dupAttrs(op, d, info, withInfo); err != nil {
				d = nil
			}
		}
		nc = d
		return err
	})
	return req, func() *Comm { return nc }, nil
}

// idupRun agrees on the new contexts of IdupStart's duplicate.
func (c *Comm) idupRun(op string, tag int32, seq uint64) (*Comm, error) {
	seed := uint64(c.ctx)<<32 | seq&(1<<24-1) | 1<<57
	if c.IsInter() {
		l := c.link(op, tag, tag)
		pairs, err := ctxAgreement(c.w, c, op, 2, seed, true, l.and)
		if err != nil {
			return nil, err
		}
		return newInter(c, derivedName("idup", c), pairs, c.groupProcs(), c.remote, c.rank), nil
	}
	x := internalSet(c, op, c.ctx+1, tag, c.rank, c.size, c.members)
	pairs, err := ctxAgreement(c.w, c, op, 1, seed, true, x.AllAND)
	if err != nil {
		return nil, err
	}
	nc := newDerived(c, derivedName("idup", c), pairs[0], c.members, c.rank)
	nc.topo = c.topo
	return nc, nil
}
