package mpi

import (
	"os"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Hierarchical collectives (issue 28 item 3): a blocking or nonblocking
// Barrier, Bcast, Reduce, Allreduce or Allgather of an intracommunicator
// whose members run on several hosts, more than one of them on some host,
// runs as a step within each host, a step among one member per host, and
// a fan-out within each host, when internal/coll says so for the call's
// kind and size (coll.HierUse) and drives it (coll.HierPath.Start: each
// step an algorithm of internal/coll over a subset of the members, its
// messages going through the call's own collNet, so every wait of every
// step watches the whole communicator and a member that fails anywhere
// ends every survivor's call with ErrProcFailed). What stays here is what
// the choice is made from, values every member holds alike: the hosts of
// the members as the launcher told every process (rte.Hosts.Name; a
// communicator whose hosts are all unknown is on one host), the call's
// reduction (only commutative ones: hosts combine their members first)
// and FTMPI_COLL_HIER, which the launcher passes to every process alike
// (0: never, 1: whenever the layout allows, unset: the measured choice).
//
// The steps within a host are point-to-point (the shared-memory segment
// of coll_shm.go is set up for communicators on one host only).

// hierMode is FTMPI_COLL_HIER: -1 never, 1 whenever the layout allows, 0
// the measured choice (coll.HierUse). Tests set it (SetHierForTest).
var hierMode atomic.Int32

func init() {
	switch os.Getenv("FTMPI_COLL_HIER") {
	case "0":
		hierMode.Store(-1)
	case "1":
		hierMode.Store(1)
	}
}

// collHier is a communicator's host layout for the hierarchical path.
type collHier struct {
	once sync.Once
	path *coll.HierPath // nil: one host, or one member per host
}

// hierLayout is c's layout if it spans hosts (coll.NewHierPath), else
// nil.
func (c *Comm) hierLayout() *coll.HierPath {
	hc := &c.coll.collHier
	hc.once.Do(func() {
		if c.IsInter() || c.size < 3 {
			return
		}
		h := &c.w.rt.Hosts
		hc.path = coll.NewHierPath(c.size, func(i int) string { return h.Name(c.worldRank(i)) },
			func(ms []int) bool { return h.Crowded(len(ms), func(j int) int { return c.worldRank(ms[j]) }) })
	})
	return hc.path
}

// hierSpans reports whether c may take the hierarchical path at all: read
// before a call builds the closures of hierRun, so that a communicator on
// one host (the common case) pays one atomic load and a sync.Once check.
func (c *Comm) hierSpans() bool {
	return hierMode.Load() >= 0 && !c.IsInter() && c.size >= 3 && c.hierLayout() != nil
}

// hierRun prepares the call op (signature sig, element type dt, reduction
// red or nil) on c through the hierarchy when coll.HierUse says so for
// its kind and n bytes per member; ok is false otherwise.
func hierRun(c *Comm, op string, sig coll.Sig, dt p2p.DType, n int, red coll.ReduceFn, body func(h *coll.Hier) error) (collRun, bool) {
	if hierMode.Load() < 0 || c.IsInter() || c.w.rt.Hosts.Force.Load() != 0 {
		return nil, false
	}
	p := c.hierLayout()
	if p == nil || !p.Use(hierMode.Load(), sig.Kind(), n) {
		return nil, false
	}
	x := newCx(c, op, sig, dt)
	return checked(x, func() error { return body(p.Start(x, red, hierHook)) }), true
}

// hierHook, if set (tests), is called by member me before each step
// ("local Gather", "net Barrier", ...): a crash test kills there.
var hierHook func(me int, step string)

// The typed entries, one line each in coll.go's preparations (after the
// arguments are checked, before the shared-memory and point-to-point
// paths).

func hierBarrier(c *Comm, op string) (collRun, bool) {
	return hierRun(c, op, sigOf(coll.KBarrier, nil, 0, 0), p2p.DTByte, 0, nil, (*coll.Hier).Barrier)
}

func hierBcast[T Elem](c *Comm, op string, buf []T, root int, ov []*elemFacts) (collRun, bool) {
	return hierRun(c, op, sigOf(coll.KBcast, nil, root, len(buf)), factsFor[T](ov).dt, len(buf)*esizeOf[T](), nil,
		func(m *coll.Hier) error { return m.Bcast(asBytes(buf), root) })
}

func hierReduce[T Elem](c *Comm, name string, send, recv []T, op *Op, f redFn, root int, ov []*elemFacts) (collRun, bool) {
	if !op.commutative {
		return nil, false
	}
	return hierRun(c, name, sigOf(coll.KReduce, op, root, len(send)), factsFor[T](ov).dt, len(send)*esizeOf[T](), coll.ReduceFn(f),
		func(m *coll.Hier) error {
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
		func(m *coll.Hier) error { return m.Allreduce(asBytes(send), asBytes(recv[:len(send)])) })
}

func hierAllgather[T Elem](c *Comm, name string, send, recv []T, ov []*elemFacts) (collRun, bool) {
	return hierRun(c, name, sigOf(coll.KAllgather, nil, 0, len(send)), factsFor[T](ov).dt, len(send)*esizeOf[T](), nil,
		func(m *coll.Hier) error { return m.Allgather(asBytes(send), asBytes(recv[:c.size*len(send)])) })
}
