package mpi

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The glue between communicators and the collective engine
// (internal/coll): the per-communicator collective state, the Set of one
// call, the Net through which the engine reaches the point-to-point engine,
// and where the processes run (the input of the algorithm choice).

// collComm is a communicator's collective state.
type collComm struct {
	// seq numbers the collective calls on the communicator: every member
	// calls collectives in the same order, so they agree on it (coll.Tag).
	seq atomic.Uint32

	crowdOnce sync.Once
	crowded   bool // some host runs more members than it has cores
	oneHost   bool // every member runs on one host

	shm      coll.ShmPath // the shared-memory path (coll_shm.go)
	collHier              // the hierarchical path (coll_hier.go)
}

// crowded reports whether c's members outnumber the cores of one of their
// hosts, from the launcher's data (rte.Hosts): every member computes the
// same value.
func (c *Comm) crowded() bool {
	c.hostFacts()
	return c.coll.crowded
}

// oneHost reports whether every member of c runs on one host, from the
// launcher's data (rte.Hosts; every member computes the same value).
func (c *Comm) oneHost() bool {
	c.hostFacts()
	return c.coll.oneHost
}

func (c *Comm) hostFacts() {
	cc := &c.coll
	cc.crowdOnce.Do(func() {
		h := &c.w.rt.Hosts
		cc.crowded = h.Crowded(c.size, c.worldRank)
		cc.oneHost = h.Same(c.size, c.worldRank)
	})
}

// collCall is one collective call: the engine's Set (with room for its
// second phase) and its Net, in one allocation.
type collCall struct {
	coll.Call
	net collNet
}

// collNet is coll.Net over the World's engine; errors are those of op on c.
type collNet struct {
	c  *Comm
	op string
	dt p2p.DType // element type of the messages (Set.DT holds its code only)
}

// newCall prepares a call of op on a set of c's engine: n members with
// process mapping procs (nil: identity), this process being me.
func newCall(c *Comm, op string, ctx uint32, tag int32, dt p2p.DType, me, n int, procs []int) *coll.Set {
	x := &collCall{net: collNet{c: c, op: op, dt: dt}}
	x.Set = coll.Set{Net: &x.net, Ctx: ctx, Tag: tag, DT: uint8(dt), ESize: dtypeSize(dt), Me: me, N: n, Procs: procs}
	return x.Init()
}

// newCx prepares the next collective call on intracommunicator c, of
// signature sig (see coll_sig.go): its members on its collective context,
// with the next sequence number.
func newCx(c *Comm, op string, sig coll.Sig, dt p2p.DType) *coll.Set {
	c.collStartCheck()
	s := newCall(c, op, c.ctx+1, coll.TagColl(c.nextSeq()), dt, c.rank, c.size, c.members)
	s.Sig = sig
	s.Crowded = c.crowded()
	s.OneHost = c.oneHost()
	return s
}

// internalSet is a set of n processes procs (nil: identity) exchanging
// bytes on ctx with an internal tag (communicator management); errors
// name c.
func internalSet(c *Comm, op string, ctx uint32, tag int32, me, n int, procs []int) *coll.Set {
	return newCall(c, op, ctx, tag, p2p.DTByte, me, n, procs)
}

// collSet is the set of all members of intracommunicator c on its
// collective context with an internal tag.
func collSet(c *Comm, op string, tag int32) *coll.Set {
	return internalSet(c, op, c.ctx+1, tag, c.rank, c.size, c.members)
}

func (n *collNet) Isend(s *coll.Set, to int, b []byte) (coll.Req, error) {
	r, err := n.c.w.eng.IsendSig(s.Ctx, int32(s.Me), s.Proc(to), s.Tag, n.dt, b, false, uint64(s.Sig))
	if err != nil {
		return nil, n.err(to, err)
	}
	if r == nil {
		return nil, nil // complete (not a typed nil)
	}
	return r, nil
}

func (n *collNet) Irecv(s *coll.Set, from int, b []byte) (coll.Req, error) {
	r, err := n.c.w.eng.IrecvSig(s.Ctx, int32(from), s.Proc(from), s.Tag, n.dt, b, uint64(s.Sig))
	if err != nil {
		return nil, n.err(from, err)
	}
	return r, nil
}

// Wait waits for r; a failure of a member of s completes it with
// ErrProcFailed (see World.waitColl). A message of another call than this
// member's (its signature, or its element type, differs) fails the call
// here and at the other members (coll_sig.go).
func (n *collNet) Wait(s *coll.Set, r coll.Req, peer int) (int, error) {
	pr := r.(*p2p.Req)
	w := n.c.w
	if !pr.Done() {
		defer w.leave(n.track(s, peer))
	}
	switch w.waitColl(pr, s.Ctx, n.c, s.N, s.Procs, n.c.done) {
	case p2p.WaitAborted:
		return 0, w.abortedErr(n.op, n.c)
	case p2p.WaitCancelled:
		return 0, n.cut(s, pr)
	}
	st := pr.Status()
	recv := pr.IsRecv()
	w.eng.Release(pr)
	// An empty message has no type signature (MPI: zero counts match any
	// datatype): its element type is not compared.
	if recv && st.Sig != 0 && s.Sig != 0 && (coll.Sig(st.Sig) != s.Sig || st.DType != n.dt && st.Bytes > 0) {
		return 0, n.mismatch(s, st.Source, coll.Sig(st.Sig), st.DType)
	}
	if st.Err != nil {
		return 0, n.err(peer, st.Err)
	}
	return st.Bytes, nil
}

func (n *collNet) Cancel(r coll.Req) { n.c.w.eng.Cancel(r.(*p2p.Req)) }

func (n *collNet) Mismatch(s *coll.Set, peer, got, want int) error {
	return newErr(ErrCount, n.op, n.c, peer, "received %d elements from rank %d, expected %d (arguments differ across ranks)",
		got/s.ESize, peer, want/s.ESize)
}

// Internal tags of communicator management. They live on collective
// contexts (ctx+1), where the public collectives use tags >= 1<<24, so
// they are all negative (and never -1, AnyTag). (Dup, Split and Create
// agree through the public Allreduce and Allgather on the parent.)
const (
	tagInterLocal int32 = -4 // intercommunicator management, within the local group
	tagInterCross int32 = -5 // intercommunicator management, between the two leaders

	// CreateGroup(g, tag) uses tagCreateGroupBase + tag mod 2^30 on the
	// parent's collective context; IntercommCreate's leaders use
	// tagIntercommBase + tag mod 2^30 on the peer's collective context.
	tagCreateGroupBase int32 = math.MinInt32
	tagIntercommBase   int32 = math.MinInt32 + 1<<30
)

func createGroupTag(tag int) int32 { return tagCreateGroupBase + int32(tag&(1<<30-1)) }
func intercommTag(tag int) int32   { return tagIntercommBase + int32(tag&(1<<30-1)) }

// Word encodings of small records.
func putInts(vals ...int64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func getInt(b []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }

// startColl runs a collective in a goroutine and returns the Request that
// completes when it ends (the nonblocking collectives, MPI_I...). fn
// returns raw errors; Wait applies the error handler.
func (c *Comm) startColl(op string, fn func() error) *Request {
	r := &Request{c: c, op: op, peer: NoPeer, local: true, pr: c.goColl(op, fn)}
	if c.w.cfg.Check {
		c.chkAdd(r, NoPeer, 0, nil, false) // check.go
	}
	return r
}

// goColl runs fn in a goroutine and returns the local engine request its
// end completes (startColl; a persistent collective's Start).
func (c *Comm) goColl(op string, fn func() error) *p2p.Req {
	pr := c.w.eng.NewLocalReq()
	go func() {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = newErr(ErrIntern, op, c, NoPeer, "panic in collective: %v", p)
				}
			}()
			err = fn()
		}()
		pr.Finish(p2p.Status{Err: err})
	}()
	return pr
}

// Argument checks shared by the collectives.

func (c *Comm) checkRoot(op string, root int) error {
	if root < 0 || root >= c.size {
		return newErr(ErrRoot, op, c, NoPeer, "root %d out of range [0, %d)", root, c.size)
	}
	return nil
}

func notInter(c *Comm, op string) error {
	if c.IsInter() {
		return newErr(ErrComm, op, c, NoPeer, "not supported on intercommunicators")
	}
	return nil
}

// rootedChecks checks the arguments of the collectives with a root that
// only intracommunicators support; the error has passed c's handler.
func rootedChecks(c *Comm, op string, root int) error {
	if err := notInter(c, op); err != nil {
		return c.handle(err)
	}
	if err := c.checkRoot(op, root); err != nil {
		return c.failColl(err)
	}
	return nil
}

// checkCountsDispls validates per-rank counts and displacements (nil
// displs: packed in rank order) against a buffer of n elements. It returns
// the displacements to use. what names the buffer for messages; short is
// the class of a too-small buffer.
func (c *Comm) checkCountsDispls(op, what string, counts, displs []int, n int, short *Class) ([]int, error) {
	p := c.size
	if len(counts) != p {
		return nil, newErr(ErrCount, op, c, NoPeer, "%d %s counts for a communicator of size %d", len(counts), what, p)
	}
	if displs != nil && len(displs) != p {
		return nil, newErr(ErrArg, op, c, NoPeer, "%d %s displacements for a communicator of size %d", len(displs), what, p)
	}
	packed := displs == nil
	if packed {
		displs = make([]int, p)
	}
	off := 0
	for i, k := range counts {
		if k < 0 {
			return nil, newErr(ErrCount, op, c, i, "negative %s count %d for rank %d", what, k, i)
		}
		if packed {
			displs[i] = off
			off += k
		} else if displs[i] < 0 {
			return nil, newErr(ErrArg, op, c, i, "negative %s displacement %d for rank %d", what, displs[i], i)
		}
		if displs[i]+k > n {
			return nil, newErr(short, op, c, i, "%s buffer of %d elements is too small for %d elements at displacement %d (rank %d)",
				what, n, k, displs[i], i)
		}
	}
	return displs, nil
}

func errf(class *Class, op string, c *Comm, format string, args ...any) error {
	return newErr(class, op, c, NoPeer, format, args...)
}

// setDT sets the element type of the messages of s (a Set of newCall).
func setDT(s *coll.Set, dt p2p.DType) {
	s.DT = uint8(dt)
	s.Net.(*collNet).dt = dt
}
