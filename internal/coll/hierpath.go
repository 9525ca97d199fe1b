package coll

import (
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll/hier"
)

// The hierarchical path (issue 28 item 3; internal/coll/hier): a Barrier,
// Bcast, Reduce, Allreduce or Allgather of a communicator whose members
// run on several hosts, more than one of them on some host, runs as a
// step within each host, a step among one member per host, and a fan-out
// within each host. This file chooses it (HierUse) and drives it: each
// step is an algorithm of this package over a subset of the members, on
// the call's context, tag and signature, its messages going through the
// call's own Net with the members' indices in the whole Set (hierNet), so
// two members exchange messages in one step only (those of a host in its
// steps, the representatives of different hosts in the network step), the
// steps' messages never match each other's receives, and every wait of
// every step is the whole call's wait: the caller's Net ends it when any
// member of the whole communicator fails, not only a member of the step.

// HierUse reports whether a call of kind with n bytes per member takes the
// hierarchical path on a layout where some host's members outnumber its
// cores (crowded) or none do, under mode (FTMPI_COLL_HIER, which the
// launcher passes to every member alike: -1 never, 1 whenever the layout
// allows, 0 the measured choice). Every member computes the same. From the
// interleaved launches of 29 Nov (docs/benchmarks.md, "Hierarchical
// collectives"; 4 namespace hosts, TCP between them, 8 launches per
// mode): with 2 members per host (not crowded on a 2-core machine) the
// hierarchy took 0.43-0.61x the flat time for Barrier, Allreduce 8 B and
// 64 KiB, Bcast 64 KiB, Reduce and Allgather 8 B, and 2.2x for Reduce 64
// KiB; with 4 per host (crowded) it was slower for every kind (the flat
// algorithms' crowded variants wake fewer processes than three steps do).
// Sizes between the measured ones are a guess; Reduce and Allgather only
// up to 1 KiB.
func HierUse(mode int32, kind int, crowded bool, n int) bool {
	switch mode {
	case -1:
		return false
	case 1:
		return true
	}
	if crowded {
		return false
	}
	switch kind {
	case KBarrier:
		return true
	case KAllreduce:
		return n <= 64<<10
	case KBcast:
		return n >= 64<<10 && n <= hierBcastMax
	case KReduce, KAllgather:
		return n <= 1<<10
	}
	return false
}

// hierBcastMax is the largest Bcast the hierarchy takes (measured at 64
// KiB and 1 MiB).
const hierBcastMax = 64 << 10

// HierPath is a communicator's host layout for the hierarchical path,
// made once per communicator (NewHierPath) from values every member holds
// alike; safe for concurrent use.
type HierPath struct {
	calls    atomic.Uint64 // calls made through the hierarchy (Calls)
	layout   *hier.Layout
	crowded  []bool // by host index: its members outnumber its cores
	anyCrowd bool   // some host is crowded
}

// NewHierPath is the layout of n members, member i running on host
// host(i) ("": not known here), crowded(members) reporting whether the
// given members of one host outnumber its cores; nil when some member's
// host is unknown or the layout does not span hosts (one host, or one
// member per host: hier.Layout.Spans). It asks host of the members in
// order and stops at the first unknown one, and builds no layout when
// every member is on one host: under mpi.Run no host is known, and
// grouping every member of every communicator at every rank was O(n^2)
// work at each communicator's first collective (at 10,000 in-process
// ranks, half of a ULFM repair's processor time).
func NewHierPath(n int, host func(i int) string, crowded func(members []int) bool) *HierPath {
	var names []string
	one := true
	for i := range n {
		h := host(i)
		if h == "" {
			return nil
		}
		if names == nil {
			names = make([]string, n)
		}
		names[i] = h
		one = one && h == names[0]
	}
	if one {
		return nil
	}
	l := hier.NewLayout(n, func(i int) string { return names[i] })
	if !l.Spans() {
		return nil
	}
	p := &HierPath{layout: l, crowded: make([]bool, len(l.Hosts))}
	for i, ms := range l.Hosts {
		p.crowded[i] = crowded(ms)
		p.anyCrowd = p.anyCrowd || p.crowded[i]
	}
	return p
}

// Use reports whether a call of kind with n bytes per member takes p
// under mode (HierUse, crowded if any host of p is).
func (p *HierPath) Use(mode int32, kind, n int) bool { return HierUse(mode, kind, p.anyCrowd, n) }

// Calls is the number of calls started on p (Start).
func (p *HierPath) Calls() uint64 { return p.calls.Load() }

// Hier is one call over the hierarchy (HierPath.Start).
type Hier struct{ m hier.Member }

// Start begins the call x (a Set of the whole communicator, x.Me the
// member's index in it) over p: red is the call's reduction (nil for
// none; it must be commutative), hook, if not nil, is called with x.Me
// and the step's name ("local Gather", "net Barrier", ...) before each
// step (tests kill there).
func (p *HierPath) Start(x *Set, red ReduceFn, hook func(me int, step string)) *Hier {
	p.calls.Add(1)
	h := &Hier{m: hier.Member{L: p.layout, Me: x.Me}}
	h.m.Sub = func(members []int) hier.Group { return p.group(x, members, red, hook) }
	return h
}

// Barrier is MPI_Barrier over the hierarchy.
func (h *Hier) Barrier() error { return h.m.Barrier() }

// Bcast is MPI_Bcast over the hierarchy.
func (h *Hier) Bcast(buf []byte, root int) error { return h.m.Bcast(buf, root) }

// Reduce is MPI_Reduce over the hierarchy (recv: nil but at the root).
func (h *Hier) Reduce(send, recv []byte, root int) error { return h.m.Reduce(send, recv, root) }

// Allreduce is MPI_Allreduce over the hierarchy.
func (h *Hier) Allreduce(send, recv []byte) error { return h.m.Allreduce(send, recv) }

// Allgather is MPI_Allgather over the hierarchy.
func (h *Hier) Allgather(send, recv []byte) error { return h.m.Allgather(send, recv) }

// hierGroup is a step's subset: a Set over members whose Net is hierNet.
type hierGroup struct {
	call Call
	s    *Set
	net  hierNet
	red  ReduceFn
	hook func(me int, step string)
	step string // "local " or "net "
	me   int    // index in the whole call (hook)
}

// hierNet sends and receives a subset's messages as the call's whole Set
// x does, translating subset indices to x's.
type hierNet struct {
	x     *Set
	ranks []int // subset index -> index in x
	v2    *Set
}

// group is the step over members (indices in x, ascending) of the call x.
func (p *HierPath) group(x *Set, members []int, red ReduceFn, hook func(me int, step string)) *hierGroup {
	g := &hierGroup{red: red, hook: hook, step: "net ", me: x.Me}
	g.net = hierNet{x: x, ranks: members}
	me := 0
	for i, r := range members {
		if r == x.Me {
			me = i
		}
	}
	g.call.Set = Set{Net: &g.net, Ctx: x.Ctx, Tag: x.Tag, Sig: x.Sig, DT: x.DT, ESize: x.ESize, Me: me, N: len(members)}
	if h := p.layout.Host[members[0]]; p.layout.Host[members[1]] == h { // one host's members
		g.step = "local "
		g.call.Set.OneHost = true
		g.call.Set.Crowded = p.crowded[h]
	}
	g.s = g.call.Init()
	return g
}

// view is x with the tag of s (a step's phase: the algorithms use a
// second tag for a composite's second phase).
func (n *hierNet) view(s *Set) *Set {
	if s.Tag == n.x.Tag {
		return n.x
	}
	if n.v2 == nil || n.v2.Tag != s.Tag {
		v := *n.x
		v.Tag = s.Tag
		n.v2 = &v
	}
	return n.v2
}

func (n *hierNet) Isend(s *Set, to int, b []byte) (Req, error) {
	return n.x.Net.Isend(n.view(s), n.ranks[to], b)
}

func (n *hierNet) Irecv(s *Set, from int, b []byte) (Req, error) {
	return n.x.Net.Irecv(n.view(s), n.ranks[from], b)
}

func (n *hierNet) Wait(s *Set, r Req, peer int) (int, error) {
	return n.x.Net.Wait(n.view(s), r, n.ranks[peer])
}

func (n *hierNet) Cancel(r Req) { n.x.Net.Cancel(r) }

func (n *hierNet) Mismatch(s *Set, peer, got, want int) error {
	return n.x.Net.Mismatch(n.view(s), n.ranks[peer], got, want)
}

func (g *hierGroup) at(name string) {
	if g.hook != nil {
		g.hook(g.me, g.step+name)
	}
}

func (g *hierGroup) Barrier() error { g.at("Barrier"); return g.s.Barrier() }

func (g *hierGroup) Bcast(buf []byte, root int) error { g.at("Bcast"); return g.s.Bcast(buf, root) }

func (g *hierGroup) Gather(send, recv []byte, root int) error {
	g.at("Gather")
	return g.s.Gather(send, recv, root)
}

func (g *hierGroup) Reduce(send, recv []byte, root int) error {
	g.at("Reduce")
	return g.s.Reduce(send, recv, root, g.red, true)
}

func (g *hierGroup) Allreduce(send, recv []byte) error {
	g.at("Allreduce")
	return g.s.Allreduce(send, recv, g.red, true)
}

func (g *hierGroup) Allgatherv(send, recv []byte, counts, displs []int) error {
	g.at("Allgatherv")
	return g.s.Allgatherv(send, recv, counts, displs)
}
