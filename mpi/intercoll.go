package mpi

import (
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The rooted, v, all-to-all and reduce-scatter collectives on
// intercommunicators (MPI-4.1 6.2.2 and the section of each function);
// intercomm_coll.go has Barrier, Bcast, Allreduce and Allgather. The
// intracommunicator preps of coll.go dispatch here when c.IsInter(). Scan
// and Exscan are not defined on intercommunicators (they answer ErrComm).
//
// Roots: in the root's group the root passes Root and the others
// ProcNull (they take part in nothing but the sequence number); the other
// group passes the root's rank in the remote group. The data moves between
// the groups only:
//
//   - Gather(v): every process of the other group sends its buffer to the
//     root, which receives RemoteSize blocks.
//   - Scatter(v): the root sends block j to process j of the other group.
//   - Reduce: the root receives the reduction, in rank order, of the other
//     group's send buffers.
//   - Allgatherv: every process receives the other group's buffers.
//   - Alltoall(v): process i of one group sends its block j to process j
//     of the other, which stores it as its block i.
//   - ReduceScatter(Block): the reduction of one group's send buffers is
//     scattered over the other group, in its own counts.
//
// Buffers: where the slice collectives take a count from len(send) and the
// intercommunicator has no send buffer (the root of Gather, Reduce) or the
// two groups pass different lengths (Alltoall), the length of the receive
// buffer gives the count: at the root of Gather, recv holds RemoteSize
// blocks of len(recv)/RemoteSize elements; at the root of Reduce, recv
// holds the count of elements; Alltoall's send and recv hold RemoteSize
// blocks each, of len/RemoteSize elements. The receiver checks the
// lengths that arrive against them (ErrCount). In place is not defined on
// intercommunicators (ErrBuffer when send and recv overlap).
//
// Messages: each call takes the intercommunicator's next sequence number
// when it is prepared (interLinkFor), so the nonblocking and persistent
// forms match in call order. Traffic between the groups goes point to
// point on the intercommunicator's collective context between the
// processes concerned (no leader relays the data of Gather, Scatter and
// Alltoall); the reductions combine within a group on its local
// intracommunicator (signature-checked as any intracommunicator
// collective), and the group's leader (local rank 0) exchanges the result.
// Where a leader's exchange decides the outcome of its whole group
// (Allgatherv, ReduceScatter) the leader broadcasts a status word first
// (interLink.result), so an error there is reported by every process of
// the group. A failed process or a revoked communicator fails the waits
// as in every collective (collNet.Wait); the waits between the groups
// watch the processes of both groups (interCallFor).

// interCallFor is the link of the next collective of kind on c (see
// interLinkFor) whose cross set watches both groups for failures: its
// members are addressed by remote rank as in interLinkFor, and the
// processes of the local group follow them in Procs, so a process waiting
// for a remote one fails when a process of either group has failed (the
// other group's part may depend on it) instead of waiting for a message
// that never comes, as every member of an intracommunicator collective
// does.
func (c *Comm) interCallFor(op string, kind int) *interLink {
	l := c.interLinkFor(op, kind)
	procs := make([]int, 0, len(c.remote)+c.local.size)
	procs = append(procs, c.remote...)
	for i := range c.local.size {
		procs = append(procs, c.local.worldRank(i))
	}
	l.cross.Procs, l.cross.N = procs, len(procs)
	return l
}

// interRole is the part a process plays in a rooted intercommunicator
// collective.
type interRole int

const (
	roleIdle interRole = iota // ProcNull: the root's group, not the root
	roleRoot                  // Root
	roleLeaf                  // the other group: root names the root in the remote group
)

// interRootRole checks an intercommunicator collective's root argument.
func interRootRole(c *Comm, op string, root int) (interRole, error) {
	switch {
	case root == Root:
		return roleRoot, nil
	case root == ProcNull:
		return roleIdle, nil
	case root >= 0 && root < len(c.remote):
		return roleLeaf, nil
	}
	return 0, newErr(ErrRoot, op, c, NoPeer,
		"root %d: on an intercommunicator the root passes mpi.Root, the rest of its group mpi.ProcNull, and the other group the root's rank in [0, %d)",
		root, len(c.remote))
}

// setElem sets the element type of the messages of s (a Set of newCall)
// and the element size its errors count in.
func setElem(s *coll.Set, dt p2p.DType) {
	setDT(s, dt)
	s.ESize = dtypeSize(dt)
}

// noop is the run of a process that takes no part in a call beyond its
// sequence number (ProcNull).
func noop() error { return nil }

// xfer is the outstanding sends and receives of one process in an
// intercommunicator collective, on one set (all posted, then all waited
// for: no order between the groups, so no deadlock).
type xfer struct {
	s     *coll.Set
	reqs  []coll.Req
	peers []int
	want  []int // -1: a send; -2: a receive of any length; else the exact bytes
	first error // the first error (posting stops there)
}

func newXfer(s *coll.Set, n int) *xfer {
	return &xfer{s: s, reqs: make([]coll.Req, 0, n), peers: make([]int, 0, n), want: make([]int, 0, n)}
}

// recv posts a receive from member from into b; exact: exactly len(b)
// bytes are expected.
func (x *xfer) recv(from int, b []byte, exact bool) {
	if x.first != nil {
		return
	}
	r, err := x.s.Net.Irecv(x.s, from, b)
	if err != nil {
		x.first = err
		return
	}
	w := -2
	if exact {
		w = len(b)
	}
	x.reqs, x.peers, x.want = append(x.reqs, r), append(x.peers, from), append(x.want, w)
}

// send posts a send of b to member to.
func (x *xfer) send(to int, b []byte) {
	if x.first != nil {
		return
	}
	r, err := x.s.Net.Isend(x.s, to, b)
	if err != nil {
		x.first = err
		return
	}
	if r != nil {
		x.reqs, x.peers, x.want = append(x.reqs, r), append(x.peers, to), append(x.want, -1)
	}
}

// wait waits for everything posted (cancelling the receives if posting
// failed) and returns the first error.
func (x *xfer) wait() error {
	if x.first != nil {
		for i, r := range x.reqs {
			if x.want[i] != -1 {
				x.s.Net.Cancel(r)
			}
		}
	}
	for i, r := range x.reqs {
		got, err := x.s.Net.Wait(x.s, r, x.peers[i])
		if err == nil && x.want[i] >= 0 && got != x.want[i] {
			err = x.s.Net.Mismatch(x.s, x.peers[i], got, x.want[i])
		}
		if err != nil && x.first == nil {
			x.first = err
		}
	}
	return x.first
}

// overlaps reports whether two byte slices share memory.
func overlaps(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

func notInPlace(c *Comm, op string, send, recv []byte) error {
	if overlaps(send, recv) {
		return newErr(ErrBuffer, op, c, NoPeer, "the send and receive buffers overlap: in place is not defined on intercommunicators")
	}
	return nil
}

// interCountsDispls validates the n counts and displacements (nil:
// packed) of a v-variant's blocks of the remote group against a buffer
// of size elements and returns the displacements to use.
func interCountsDispls(c *Comm, op, what string, counts, displs []int, n, size int, short *Class) ([]int, error) {
	if len(counts) != n {
		return nil, newErr(ErrCount, op, c, NoPeer, "%d %s counts for a remote group of size %d", len(counts), what, n)
	}
	if displs != nil && len(displs) != n {
		return nil, newErr(ErrArg, op, c, NoPeer, "%d %s displacements for a remote group of size %d", len(displs), what, n)
	}
	d := displs
	if d == nil {
		d = make([]int, n)
	}
	off := 0
	for i, k := range counts {
		if k < 0 {
			return nil, newErr(ErrCount, op, c, i, "negative %s count %d for remote rank %d", what, k, i)
		}
		if displs == nil {
			d[i] = off
			off += k
		} else if d[i] < 0 {
			return nil, newErr(ErrArg, op, c, i, "negative %s displacement %d for remote rank %d", what, d[i], i)
		}
		if d[i]+k > size {
			return nil, newErr(short, op, c, i, "%s buffer of %d elements is too small for %d elements at displacement %d (remote rank %d)",
				what, size, k, d[i], i)
		}
	}
	return d, nil
}

// blocksOf is every process's block of b: n blocks of len(b)/n bytes.
func blocksOf(b []byte, n int) (counts, displs []int) {
	k := 0
	if n > 0 {
		k = len(b) / n
	}
	counts, displs = make([]int, n), make([]int, n)
	for i := range n {
		counts[i], displs[i] = k, i*k
	}
	return counts, displs
}

// interGatherPrep: the root receives RemoteSize blocks of
// len(recv)/RemoteSize elements, block j from remote rank j's send.
func interGatherPrep[T Elem](c *Comm, op string, send, recv []T, root int, ov ...*elemFacts) (collRun, error) {
	role, err := interRootRole(c, op, root)
	if err != nil {
		return nil, err
	}
	rs := len(c.remote)
	if role == roleRoot && len(recv)%rs != 0 {
		return nil, newErr(ErrCount, op, c, NoPeer, "the root's receive buffer of %d elements is not %d blocks (the remote group's size) of one length",
			len(recv), rs)
	}
	var counts, displs []int
	if role == roleRoot {
		counts, displs = blocksOf(asBytes(recv), rs)
	}
	return interGathervRun(c, op, coll.KGather, role, root, asBytes(send), asBytes(recv), counts, displs, true, factsFor[T](ov).dt), nil
}

// interGathervPrep: the root receives counts[j] elements of remote rank j
// at recv[displs[j]:].
func interGathervPrep[T Elem](c *Comm, op string, send, recv []T, counts, displs []int, root int, ov ...*elemFacts) (collRun, error) {
	role, err := interRootRole(c, op, root)
	if err != nil {
		return nil, err
	}
	var bc, bd []int
	if role == roleRoot {
		d, err := interCountsDispls(c, op, "receive", counts, displs, len(c.remote), len(recv), ErrTruncate)
		if err != nil {
			return nil, err
		}
		esz := esizeOf[T]()
		bc, bd = scaled(counts, esz), scaled(d, esz)
	}
	return interGathervRun(c, op, coll.KGatherv, role, root, asBytes(send), asBytes(recv), bc, bd, true, factsFor[T](ov).dt), nil
}

// interGathervRun is a gather of byte blocks (bc, bd at the root) over
// the link of the next collective of kind.
func interGathervRun(c *Comm, op string, kind int, role interRole, root int, send, recv []byte, bc, bd []int, exact bool, dt p2p.DType) collRun {
	l := c.interCallFor(op, kind)
	setElem(l.cross, dt)
	switch role {
	case roleIdle:
		return noop
	case roleLeaf:
		return func() error { return l.cross.Send(root, send) }
	}
	return func() error {
		x := newXfer(l.cross, len(bc))
		for j := range bc {
			x.recv(j, recv[bd[j]:bd[j]+bc[j]], exact)
		}
		return x.wait()
	}
}

// interScatterPrep: the root sends block j (len(send)/RemoteSize
// elements) to remote rank j, which receives exactly len(recv) elements.
func interScatterPrep[T Elem](c *Comm, op string, send, recv []T, root int, ov ...*elemFacts) (collRun, error) {
	role, err := interRootRole(c, op, root)
	if err != nil {
		return nil, err
	}
	rs := len(c.remote)
	if role == roleRoot && len(send)%rs != 0 {
		return nil, newErr(ErrCount, op, c, NoPeer, "the root's send buffer of %d elements is not %d blocks (the remote group's size) of one length",
			len(send), rs)
	}
	var counts, displs []int
	if role == roleRoot {
		counts, displs = blocksOf(asBytes(send), rs)
	}
	return interScattervRun(c, op, coll.KScatter, role, root, asBytes(send), asBytes(recv), counts, displs, true, factsFor[T](ov).dt), nil
}

// interScattervPrep: the root sends counts[j] elements at send[displs[j]:]
// to remote rank j; recv must hold what arrives.
func interScattervPrep[T Elem](c *Comm, op string, send, recv []T, counts, displs []int, root int, ov ...*elemFacts) (collRun, error) {
	role, err := interRootRole(c, op, root)
	if err != nil {
		return nil, err
	}
	var bc, bd []int
	if role == roleRoot {
		d, err := interCountsDispls(c, op, "send", counts, displs, len(c.remote), len(send), ErrCount)
		if err != nil {
			return nil, err
		}
		esz := esizeOf[T]()
		bc, bd = scaled(counts, esz), scaled(d, esz)
	}
	return interScattervRun(c, op, coll.KScatterv, role, root, asBytes(send), asBytes(recv), bc, bd, false, factsFor[T](ov).dt), nil
}

func interScattervRun(c *Comm, op string, kind int, role interRole, root int, send, recv []byte, bc, bd []int, exact bool, dt p2p.DType) collRun {
	l := c.interCallFor(op, kind)
	setElem(l.cross, dt)
	switch role {
	case roleIdle:
		return noop
	case roleLeaf:
		return func() error {
			x := newXfer(l.cross, 1)
			x.recv(root, recv, exact)
			return x.wait()
		}
	}
	return func() error {
		x := newXfer(l.cross, len(bc))
		for i := range bc {
			j := (c.rank + i) % len(bc) // the roots of concurrent calls start at different processes
			x.send(j, send[bd[j]:bd[j]+bc[j]])
		}
		return x.wait()
	}
}

// interReducePrep: the root receives in recv (its length is the count)
// the reduction, in rank order, of the remote group's send buffers.
func interReducePrep[T Elem](c *Comm, name string, send, recv []T, op *Op, root int, ov ...*elemFacts) (collRun, error) {
	role, err := interRootRole(c, name, root)
	if err != nil {
		return nil, err
	}
	var f redFn
	if role == roleLeaf {
		if f, err = opFunc[T](c, name, op, ov...); err != nil {
			return nil, err
		}
	}
	l := c.interCallFor(name, coll.KReduce)
	dt := factsFor[T](ov).dt
	setElem(l.cross, dt)
	switch role {
	case roleIdle:
		return noop, nil
	case roleRoot:
		out := asBytes(recv)
		return func() error {
			x := newXfer(l.cross, 1)
			x.recv(0, out, true) // from the remote leader
			return x.wait()
		}, nil
	}
	n := len(send)
	x := newCx(c.local, name, sigOf(coll.KReduce, op, 0, n), dt) // the group's reduction, on the local intracommunicator
	commut := op.commutative
	return func() error {
		var tmp []T
		if l.isLeader() {
			tmp = make([]T, n)
		}
		if err := x.Reduce(asBytes(send), asBytes(tmp), l.leader, coll.ReduceFn(f), commut); err != nil {
			return err
		}
		if l.isLeader() {
			return l.cross.Send(root, asBytes(tmp))
		}
		return nil
	}, nil
}

// interAllgathervPrep: every process receives counts[j] elements of remote
// rank j at recv[displs[j]:]; its own send goes to the other group. The
// leader of each group receives the other group's buffers (it knows their
// counts from its own), then broadcasts them packed within its group.
func interAllgathervPrep[T Elem](c *Comm, op string, send, recv []T, counts, displs []int, ov ...*elemFacts) (collRun, error) {
	d, err := interCountsDispls(c, op, "receive", counts, displs, len(c.remote), len(recv), ErrTruncate)
	if err != nil {
		return nil, err
	}
	esz := esizeOf[T]()
	bc, bd := scaled(counts, esz), scaled(d, esz)
	l := c.interCallFor(op, coll.KAllgatherv)
	dt := factsFor[T](ov).dt
	setElem(l.cross, dt)
	setElem(l.loc, dt)
	sb, rb := asBytes(send), asBytes(recv)
	return func() error {
		total := sum(bc)
		packed, h := p2p.GetBuf(total)
		defer p2p.PutBuf(h)
		packed = packed[:total]
		x := newXfer(l.cross, len(bc)+1)
		if l.isLeader() {
			off := 0
			for j, k := range bc {
				x.recv(j, packed[off:off+k], true)
				off += k
			}
		}
		x.send(l.remote, sb)
		if _, err := l.result(x.wait(), 0); err != nil {
			return err
		}
		if l.loc.N > 1 && total > 0 {
			if err := l.loc.BcastTree(packed, l.leader); err != nil {
				return err
			}
		}
		off := 0
		for j, k := range bc {
			copy(rb[bd[j]:bd[j]+k], packed[off:off+k])
			off += k
		}
		return nil
	}, nil
}

// interAlltoallPrep: send and recv hold RemoteSize blocks each; block j
// of send goes to remote rank j, block j of recv comes from it.
func interAlltoallPrep[T Elem](c *Comm, op string, send, recv []T, ov ...*elemFacts) (collRun, error) {
	rs := len(c.remote)
	if len(send)%rs != 0 || len(recv)%rs != 0 {
		return nil, newErr(ErrCount, op, c, NoPeer, "send and receive buffers of %d and %d elements: each must be %d blocks (the remote group's size) of one length",
			len(send), len(recv), rs)
	}
	sc, sd := blocksOf(asBytes(send), rs)
	rc, rd := blocksOf(asBytes(recv), rs)
	return interAlltoallvRun(c, op, coll.KAlltoall, asBytes(send), sc, sd, asBytes(recv), rc, rd, factsFor[T](ov).dt)
}

// interAlltoallvPrep: sc[j] elements at send[sd[j]:] go to remote rank j;
// rc[j] elements from it land at recv[rd[j]:].
func interAlltoallvPrep[T Elem](c *Comm, op string, send []T, sc, sd []int, recv []T, rc, rd []int, ov ...*elemFacts) (collRun, error) {
	rs := len(c.remote)
	sd, err := interCountsDispls(c, op, "send", sc, sd, rs, len(send), ErrCount)
	if err != nil {
		return nil, err
	}
	if rd, err = interCountsDispls(c, op, "receive", rc, rd, rs, len(recv), ErrTruncate); err != nil {
		return nil, err
	}
	esz := esizeOf[T]()
	return interAlltoallvRun(c, op, coll.KAlltoallv, asBytes(send), scaled(sc, esz), scaled(sd, esz), asBytes(recv), scaled(rc, esz), scaled(rd, esz), factsFor[T](ov).dt)
}

// interAlltoallvRun exchanges byte blocks with every remote process.
func interAlltoallvRun(c *Comm, op string, kind int, send []byte, sc, sd []int, recv []byte, rc, rd []int, dt p2p.DType) (collRun, error) {
	if err := notInPlace(c, op, send, recv); err != nil {
		return nil, err
	}
	l := c.interCallFor(op, kind)
	setElem(l.cross, dt)
	rs := len(sc)
	return func() error {
		x := newXfer(l.cross, 2*rs)
		for j := range rs {
			x.recv(j, recv[rd[j]:rd[j]+rc[j]], true)
		}
		for i := range rs {
			j := (c.rank + i) % rs
			x.send(j, send[sd[j]:sd[j]+sc[j]])
		}
		return x.wait()
	}, nil
}

// interReduceScatterPrep: counts (one per process of the local group)
// partition the reduction of the REMOTE group's send buffers (sum(counts)
// elements, the same total in both groups); process i receives block i.
// Each group reduces its send buffers at its leader, the leaders swap the
// reductions, and each scatters the one it received within its group.
func interReduceScatterPrep[T Elem](c *Comm, name string, send, recv []T, counts []int, op *Op, kind int, ov ...*elemFacts) (collRun, error) {
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, err
	}
	if len(counts) != c.size {
		return nil, newErr(ErrCount, name, c, NoPeer, "%d counts for a local group of size %d", len(counts), c.size)
	}
	total := 0
	for i, k := range counts {
		if k < 0 {
			return nil, newErr(ErrCount, name, c, i, "negative count %d for rank %d", k, i)
		}
		total += k
	}
	if len(send) < total {
		return nil, newErr(ErrCount, name, c, NoPeer, "send buffer of %d elements, %d needed", len(send), total)
	}
	if len(recv) < counts[c.rank] {
		return nil, newErr(ErrTruncate, name, c, NoPeer, "receive buffer of %d elements, %d needed", len(recv), counts[c.rank])
	}
	if err := notInPlace(c, name, asBytes(send[:total]), asBytes(recv[:counts[c.rank]])); err != nil {
		return nil, err
	}
	esz := esizeOf[T]()
	bc := scaled(counts, esz)
	bd := make([]int, len(bc))
	for i := 1; i < len(bc); i++ {
		bd[i] = bd[i-1] + bc[i-1]
	}
	l := c.interCallFor(name, kind)
	dt := factsFor[T](ov).dt
	setElem(l.cross, dt)
	setElem(l.loc, dt)
	x := newCx(c.local, name, sigOf(coll.KReduce, op, 0, total), dt) // the group's reduction, on the local intracommunicator
	commut := op.commutative
	return func() error {
		var mine, theirs []T
		if l.isLeader() {
			mine, theirs = make([]T, total), make([]T, total)
		}
		if err := x.Reduce(asBytes(send[:total]), asBytes(mine), l.leader, coll.ReduceFn(f), commut); err != nil {
			return err
		}
		var ferr error
		if l.isLeader() {
			got, err := l.cross.SendRecv(l.remote, asBytes(mine), asBytes(theirs))
			if ferr = err; ferr == nil && got != total*esz {
				ferr = newErr(ErrCount, name, c, NoPeer, "the remote group reduced %d elements, this group scatters %d (the totals of the counts differ)",
					got/esz, total)
			}
		}
		if _, err := l.result(ferr, 0); err != nil {
			return err
		}
		return l.loc.Scatterv(asBytes(theirs), asBytes(recv[:counts[c.rank]]), bc, bd, l.leader, true)
	}, nil
}

// interReduceScatterBlockPrep is interReduceScatterPrep with
// len(send)/Size elements for every process of the local group.
func interReduceScatterBlockPrep[T Elem](c *Comm, name string, send, recv []T, op *Op, ov ...*elemFacts) (collRun, error) {
	if len(send)%c.size != 0 {
		return nil, newErr(ErrCount, name, c, NoPeer, "send buffer of %d elements is not a multiple of the local group's size %d", len(send), c.size)
	}
	counts := make([]int, c.size)
	for i := range counts {
		counts[i] = len(send) / c.size
	}
	return interReduceScatterPrep(c, name, send, recv, counts, op, coll.KReduceScatterBlock, ov...)
}
