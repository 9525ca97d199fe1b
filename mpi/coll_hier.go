package mpi

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/coll/hier"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Hierarchical collectives (issue 28 item 3; internal/coll/hier).
//
// A blocking or nonblocking Barrier, Bcast, Reduce, Allreduce or Allgather
// of an intracommunicator whose members run on several hosts, more than
// one of them on some host, runs as a step within each host, a step among
// one member per host, and a fan-out within each host, when hierUse says
// so for the call's kind and size. The choice depends only on values every
// member holds alike: the hosts of the members as the launcher told every
// process (rte.Hosts.Name; a communicator whose hosts are all unknown is
// on one host), the call's kind, size and reduction (only commutative
// ones: hosts combine their members first) and FTMPI_COLL_HIER, which the
// launcher passes to every process alike (0: never, 1: whenever the layout
// allows, unset: hierUse's measured choice).
//
// Each step is an algorithm of internal/coll over a subset of the
// members, on the call's context, tag and signature, its messages carrying
// the members' communicator ranks (hierNet): two members exchange messages
// in one step only (those of a host in its steps, the representatives of
// different hosts in the network step), so the steps' messages never
// match each other's receives, and a mismatched or rejected call is found
// and released as on the point-to-point path. Every wait of every step
// watches the whole communicator (collNet.Wait with the call's whole Set):
// a member that fails anywhere ends every survivor's call with
// ErrProcFailed, also a member waiting within its host for a leader that
// waits for another host.
//
// The steps within a host are point-to-point (the shared-memory segment
// of coll_shm.go is set up for communicators on one host only).

// hierMode is FTMPI_COLL_HIER: -1 never, 1 whenever the layout allows, 0
// the measured choice (hierUse). Tests set it (SetHierForTest).
var hierMode atomic.Int32

func init() {
	switch os.Getenv("FTMPI_COLL_HIER") {
	case "0":
		hierMode.Store(-1)
	case "1":
		hierMode.Store(1)
	}
}

// hierUse reports whether a call of kind with n bytes per member takes
// the hierarchical path on a layout where some host's members outnumber
// its cores (crowded) or none do; every member computes the same. From
// the interleaved launches of 29 Nov (docs/benchmarks.md, "Hierarchical
// collectives"; 4 namespace hosts, TCP between them, 8 launches per
// mode): with 2 members per host (not crowded on this 2-core machine) the
// hierarchy took 0.43-0.61x the flat time for Barrier, Allreduce 8 B and
// 64 KiB, Bcast 64 KiB, Reduce and Allgather 8 B, and 2.2x for Reduce
// 64 KiB; with 4 per host (crowded) it was slower for every kind (the
// flat algorithms' crowded variants wake fewer processes than three
// steps do). Sizes between the measured ones are a guess; Reduce and
// Allgather only up to 1 KiB.
func hierUse(kind int, crowded bool, n int) bool {
	switch hierMode.Load() {
	case -1:
		return false
	case 1:
		return true
	}
	if crowded {
		return false
	}
	switch kind {
	case coll.KBarrier:
		return true
	case coll.KAllreduce:
		return n <= 64<<10
	case coll.KBcast:
		return n >= 64<<10 && n <= hierBcastMax
	case coll.KReduce, coll.KAllgather:
		return n <= 1<<10
	}
	return false
}

// hierBcastMax is the largest Bcast the hierarchy takes (measured at 64
// KiB and 1 MiB).
const hierBcastMax = 64 << 10

// collHier is a communicator's host layout for the hierarchical path.
type collHier struct {
	calls    atomic.Uint64 // calls made through the hierarchy here (tests)
	once     sync.Once
	layout   *hier.Layout // nil: one host, or one member per host
	crowded  []bool       // by host index: its members outnumber its cores
	anyCrowd bool         // some host is crowded
}

// hierLayout is c's layout if it spans hosts (hier.Layout.Spans), else
// nil.
func (c *Comm) hierLayout() *hier.Layout {
	hc := &c.coll.collHier
	hc.once.Do(func() {
		if c.IsInter() || c.size < 3 {
			return
		}
		h := &c.w.rt.Hosts
		known := true // a member whose host this process was not told: no hierarchy
		l := hier.NewLayout(c.size, func(i int) string {
			n := h.Name(c.worldRank(i))
			known = known && n != ""
			return n
		})
		if !known || !l.Spans() {
			return
		}
		hc.crowded = make([]bool, len(l.Hosts))
		for i, ms := range l.Hosts {
			hc.crowded[i] = h.Crowded(len(ms), func(j int) int { return c.worldRank(ms[j]) })
			hc.anyCrowd = hc.anyCrowd || hc.crowded[i]
		}
		hc.layout = l
	})
	return hc.layout
}

// hierSpans reports whether c may take the hierarchical path at all: read
// before a call builds the closures of hierRun, so that a communicator on
// one host (the common case) pays one atomic load and a sync.Once check.
func (c *Comm) hierSpans() bool {
	return hierMode.Load() >= 0 && !c.IsInter() && c.size >= 3 && c.hierLayout() != nil
}

// hierRun prepares the call op (signature sig, element type dt, reduction
// red or nil) on c through the hierarchy when hierUse says so for its
// kind and n bytes per member; ok is false otherwise.
func hierRun(c *Comm, op string, sig coll.Sig, dt p2p.DType, n int, red coll.ReduceFn, body func(m *hier.Member) error) (collRun, bool) {
	if hierMode.Load() < 0 || c.IsInter() || c.w.rt.Hosts.Force.Load() != 0 {
		return nil, false
	}
	l := c.hierLayout()
	if l == nil || !hierUse(sig.Kind(), c.coll.collHier.anyCrowd, n) {
		return nil, false
	}
	x := newCx(c, op, sig, dt)
	return checked(x, func() error {
		c.coll.collHier.calls.Add(1)
		m := &hier.Member{L: l, Me: c.rank, Sub: func(members []int) hier.Group {
			return newHierGroup(c, x, l, members, red)
		}}
		return body(m)
	}), true
}

// hierHook, if set (tests), is called by member me before each step
// ("local Gather", "net Barrier", ...): a crash test kills there.
var hierHook func(me int, step string)

// hierGroup is a step's subset: an internal/coll Set over members whose
// Net is hierNet.
type hierGroup struct {
	call coll.Call
	s    *coll.Set
	net  hierNet
	red  coll.ReduceFn
	hook string // "local " or "net "
	me   int    // communicator rank (hierHook)
}

// hierNet sends and receives a subset's messages as the call's whole Set
// x does, translating subset indices to communicator ranks.
type hierNet struct {
	x     *coll.Set
	inner *collNet
	ranks []int // subset index -> communicator rank
	v2    *coll.Set
}

func newHierGroup(c *Comm, x *coll.Set, l *hier.Layout, members []int, red coll.ReduceFn) *hierGroup {
	g := &hierGroup{red: red, hook: "net ", me: c.rank}
	g.net = hierNet{x: x, inner: x.Net.(*collNet), ranks: members}
	me := 0
	for i, r := range members {
		if r == c.rank {
			me = i
		}
	}
	g.call.Set = coll.Set{Net: &g.net, Ctx: x.Ctx, Tag: x.Tag, Sig: x.Sig, DT: x.DT, ESize: x.ESize, Me: me, N: len(members)}
	if h := l.Host[members[0]]; l.Host[members[1]] == h { // one host's members
		g.hook = "local "
		g.call.Set.OneHost = true
		g.call.Set.Crowded = c.coll.collHier.crowded[h]
	}
	g.s = g.call.Init()
	return g
}

// view is x with the tag of s (a step's phase: the algorithms of
// internal/coll use a second tag for a composite's second phase).
func (n *hierNet) view(s *coll.Set) *coll.Set {
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

func (n *hierNet) Isend(s *coll.Set, to int, b []byte) (coll.Req, error) {
	return n.inner.Isend(n.view(s), n.ranks[to], b)
}

func (n *hierNet) Irecv(s *coll.Set, from int, b []byte) (coll.Req, error) {
	return n.inner.Irecv(n.view(s), n.ranks[from], b)
}

func (n *hierNet) Wait(s *coll.Set, r coll.Req, peer int) (int, error) {
	return n.inner.Wait(n.view(s), r, n.ranks[peer])
}

func (n *hierNet) Cancel(r coll.Req) { n.inner.Cancel(r) }

func (n *hierNet) Mismatch(s *coll.Set, peer, got, want int) error {
	return n.inner.Mismatch(n.view(s), n.ranks[peer], got, want)
}

func (g *hierGroup) step(name string) {
	if h := hierHook; h != nil {
		h(g.me, g.hook+name)
	}
}

func (g *hierGroup) Barrier() error { g.step("Barrier"); return g.s.Barrier() }

func (g *hierGroup) Bcast(buf []byte, root int) error { g.step("Bcast"); return g.s.Bcast(buf, root) }

func (g *hierGroup) Gather(send, recv []byte, root int) error {
	g.step("Gather")
	return g.s.Gather(send, recv, root)
}

func (g *hierGroup) Reduce(send, recv []byte, root int) error {
	g.step("Reduce")
	return g.s.Reduce(send, recv, root, g.red, true)
}

func (g *hierGroup) Allreduce(send, recv []byte) error {
	g.step("Allreduce")
	return g.s.Allreduce(send, recv, g.red, true)
}

func (g *hierGroup) Allgatherv(send, recv []byte, counts, displs []int) error {
	g.step("Allgatherv")
	return g.s.Allgatherv(send, recv, counts, displs)
}

// The typed entries, one line each in coll.go's preparations (after the
// arguments are checked, before the shared-memory and point-to-point
// paths).

func hierBarrier(c *Comm, op string) (collRun, bool) {
	return hierRun(c, op, sigOf(coll.KBarrier, nil, 0, 0), p2p.DTByte, 0, nil, (*hier.Member).Barrier)
}

func hierBcast[T Elem](c *Comm, op string, buf []T, root int, ov []*elemFacts) (collRun, bool) {
	return hierRun(c, op, sigOf(coll.KBcast, nil, root, len(buf)), factsFor[T](ov).dt, len(buf)*esizeOf[T](), nil,
		func(m *hier.Member) error { return m.Bcast(asBytes(buf), root) })
}

func hierReduce[T Elem](c *Comm, name string, send, recv []T, op *Op, f redFn, root int, ov []*elemFacts) (collRun, bool) {
	if !op.commutative {
		return nil, false
	}
	return hierRun(c, name, sigOf(coll.KReduce, op, root, len(send)), factsFor[T](ov).dt, len(send)*esizeOf[T](), coll.ReduceFn(f),
		func(m *hier.Member) error {
			var r []byte
			if c.rank == root {
				r = asBytes(recv[:len(send)])
			}
			return m.Reduce(asBytes(send), r, root)
		})
}

func hierAllreduce[T Elem](c *Comm, name string, send, recv []T, op *Op, f redFn, ov []*elemFacts) (collRun, bool) {
	if !op.commutative {
		return nil, false
	}
	return hierRun(c, name, sigOf(coll.KAllreduce, op, 0, len(send)), factsFor[T](ov).dt, len(send)*esizeOf[T](), coll.ReduceFn(f),
		func(m *hier.Member) error { return m.Allreduce(asBytes(send), asBytes(recv[:len(send)])) })
}

func hierAllgather[T Elem](c *Comm, name string, send, recv []T, ov []*elemFacts) (collRun, bool) {
	return hierRun(c, name, sigOf(coll.KAllgather, nil, 0, len(send)), factsFor[T](ov).dt, len(send)*esizeOf[T](), nil,
		func(m *hier.Member) error { return m.Allgather(asBytes(send), asBytes(recv[:c.size*len(send)])) })
}
