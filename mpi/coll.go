package mpi

import (
	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// Collective operations on intracommunicators (MPI chapter 6).
//
// Conventions:
//
//   - Typed collectives are generic package functions taking the
//     communicator first; element counts are the lengths of the slices
//     (every rank must pass consistent lengths, as MPI requires consistent
//     counts). Calls that differ between members (operation, root, count,
//     element type, reduction) are erroneous in MPI; ftmpi detects them
//     when a message crosses between the differing calls and reports both
//     calls (coll_sig.go, which also says what it cannot detect).
//   - A call whose arguments this rank rejects (an error returned before
//     anything is sent) is still a call of the sequence: the other members'
//     matching calls fail with this rank's reason instead of waiting.
//   - Receive buffers may be longer than needed; only the described prefix
//     or blocks are written. Arguments significant only at the root (the
//     receive buffer of Reduce, Gather(v); the send buffer of Scatter(v);
//     counts and displacements of Gatherv and Scatterv) are ignored, and
//     may be nil, elsewhere.
//   - Displacements (displs) are in elements; a nil displs slice means the
//     blocks are packed in rank order (displs[i] = sum of counts[:i]).
//   - In place (MPI_IN_PLACE) is expressed by aliasing: pass the same
//     slice as send and recv for Reduce (at the root), Allreduce,
//     ReduceScatterBlock, ReduceScatter, Scan, Exscan and Alltoall(v); for
//     Gather(v) and Allgather(v) pass this rank's own block of recv as
//     send (e.g. recv[r*n:(r+1)*n]); for Scatter(v) the root passes its own
//     block of send as recv. Any other overlap between send and recv is
//     erroneous.
//   - Collectives use the communicator's collective context and a tag made
//     of a per-communicator sequence number, so they never match
//     point-to-point messages, and consecutive or outstanding nonblocking
//     collectives on one communicator never mix (all ranks must call
//     collectives in the same order, as in MPI); the messages carry the
//     signature of the call (coll_sig.go).
//   - The nonblocking forms (I...) validate their arguments at once and
//     return a Request that completes when the operation has completed
//     locally; buffers must not be touched until then.
//   - Intercommunicators: every collective but Scan and Exscan (and their
//     nonblocking and persistent forms) follows the intercommunicator
//     semantics (intercomm_coll.go, intercoll.go); Scan and Exscan return
//     ErrComm.
//
// Algorithms and their choice: internal/coll (alg.go). The choice depends
// only on what every member agrees on: the sizes and counts of the call,
// whether the members outnumber the cores of a host and whether they all
// share one host, as the launcher reported them (Comm.crowded,
// Comm.oneHost), never on this process's CPU count or affinity.

// collRun is a prepared collective: validated, sequence number taken.
type collRun func() error

// blocking runs a prepared collective and applies the error handler.
func blocking(c *Comm, run collRun, err error) error {
	if err != nil {
		return err
	}
	return c.handle(run())
}

// nonblocking starts a prepared collective in a goroutine.
func nonblocking(c *Comm, op string, run collRun, err error) (*Request, error) {
	if err != nil {
		return nil, err
	}
	return c.startColl(op, run), nil
}

// Barrier blocks until every process of c has called it (MPI_Barrier).
func (c *Comm) Barrier() error {
	run, err := barrierPrep(c, "MPI_Barrier")
	return blocking(c, run, err)
}

// Ibarrier starts a barrier (MPI_Ibarrier); the request completes once
// every process of c has called Barrier or Ibarrier.
func (c *Comm) Ibarrier() (*Request, error) {
	run, err := barrierPrep(c, "MPI_Ibarrier")
	return nonblocking(c, "MPI_Ibarrier", run, err)
}

func barrierPrep(c *Comm, op string) (collRun, error) {
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if run, err, ok := routeBarrier(c, op); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if c.IsInter() {
		return handledInter(c, op, coll.KBarrier)(interBarrierPrep(c, op))
	}
	if c.hierSpans() { // members on several hosts (coll_hier.go)
		if run, ok := hierBarrier(c, op); ok {
			return run, nil
		}
	}
	if op == "MPI_Barrier" && coll.ShmUse(coll.KBarrier, c.size, 0) { // blocking, on one host: through a shared segment (coll_shm.go)
		sig := sigOf(coll.KBarrier, nil, 0, 0)
		if run, ok := shmRun(c, op, sig, p2p.DTByte, coll.ShmArgs{Kind: coll.KBarrier}); ok {
			return run, nil
		}
	}
	x := newCx(c, op, sigOf(coll.KBarrier, nil, 0, 0), p2p.DTByte)
	return checked(x, x.Barrier), nil
}

// Bcast broadcasts buf from root to every process of c (MPI_Bcast). Every
// rank passes a buffer of the same length.
func Bcast[T Elem](c *Comm, buf []T, root int) error {
	run, err := bcastPrep(c, "MPI_Bcast", buf, root)
	return blocking(c, run, err)
}

// Ibcast starts a broadcast (MPI_Ibcast).
func Ibcast[T Elem](c *Comm, buf []T, root int) (*Request, error) {
	run, err := bcastPrep(c, "MPI_Ibcast", buf, root)
	return nonblocking(c, "MPI_Ibcast", run, err)
}

func bcastPrep[T Elem](c *Comm, op string, buf []T, root int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if run, err, ok := routeBcast(c, op, buf, root, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, op, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() {
		return handledInter(c, op, coll.KBcast)(interBcastPrep(c, op, buf, root, ov...))
	}
	if err := c.checkRoot(op, root); err != nil {
		return nil, c.failColl(err)
	}
	if c.hierSpans() { // members on several hosts (coll_hier.go)
		if run, ok := hierBcast(c, op, buf, root, ov); ok {
			return run, nil
		}
	}
	if op == "MPI_Bcast" && coll.ShmUse(coll.KBcast, c.size, len(buf)*esizeOf[T]()) {
		sig, dt := sigOf(coll.KBcast, nil, root, len(buf)), factsFor[T](ov).dt
		if run, ok := shmRun(c, op, sig, dt, coll.ShmArgs{Kind: coll.KBcast, Send: asBytes(buf), Root: root}); ok {
			return run, nil
		}
	}
	x := newCx(c, op, sigOf(coll.KBcast, nil, root, len(buf)), factsFor[T](ov).dt)
	return checked(x, func() error { return x.Bcast(asBytes(buf), root) }), nil
}

// Reduce combines send of every process with op, in rank order, into recv
// at root (MPI_Reduce). recv (len(recv) >= len(send)) is used at root
// only. In place: the root passes the same slice as send and recv.
func Reduce[T Elem](c *Comm, send, recv []T, op *Op, root int) error {
	run, err := reducePrep(c, "MPI_Reduce", send, recv, op, root)
	return blocking(c, run, err)
}

// Ireduce starts a reduction (MPI_Ireduce).
func Ireduce[T Elem](c *Comm, send, recv []T, op *Op, root int) (*Request, error) {
	run, err := reducePrep(c, "MPI_Ireduce", send, recv, op, root)
	return nonblocking(c, "MPI_Ireduce", run, err)
}

func reducePrep[T Elem](c *Comm, name string, send, recv []T, op *Op, root int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeReduce(c, name, send, recv, op, root, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KReduce)(interReducePrep(c, name, send, recv, op, root, ov...))
	}
	if err := rootedChecks(c, name, root); err != nil {
		return nil, err
	}
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, c.failColl(err)
	}
	if c.rank == root && len(recv) < len(send) {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), len(send)))
	}
	if c.hierSpans() { // members on several hosts (coll_hier.go)
		if run, ok := hierReduce(c, name, send, recv, op, f, root, ov); ok {
			return run, nil
		}
	}
	if name == "MPI_Reduce" && coll.ShmUse(coll.KReduce, c.size, len(send)*esizeOf[T]()) {
		sig, dt := sigOf(coll.KReduce, op, root, len(send)), factsFor[T](ov).dt
		a := coll.ShmArgs{Kind: coll.KReduce, Send: asBytes(send), PRecv: asBytes(recv), Root: root, ESize: dtypeSize(dt), F: coll.ReduceFn(f), Commut: op.commutative}
		if c.rank == root {
			a.Recv = asBytes(recv[:len(send)])
		}
		if run, ok := shmRun(c, name, sig, dt, a); ok {
			return run, nil
		}
	}
	x := newCx(c, name, sigOf(coll.KReduce, op, root, len(send)), factsFor[T](ov).dt)
	commut := op.commutative
	return checked(x, func() error { return x.Reduce(asBytes(send), asBytes(recv), root, coll.ReduceFn(f), commut) }), nil
}

// Allreduce combines send of every process with op, in rank order, into
// recv of every process (MPI_Allreduce); len(recv) >= len(send). In
// place: pass the same slice as send and recv.
func Allreduce[T Elem](c *Comm, send, recv []T, op *Op) error {
	run, err := allreducePrep(c, "MPI_Allreduce", send, recv, op)
	return blocking(c, run, err)
}

// Iallreduce starts an all-reduction (MPI_Iallreduce).
func Iallreduce[T Elem](c *Comm, send, recv []T, op *Op) (*Request, error) {
	run, err := allreducePrep(c, "MPI_Iallreduce", send, recv, op)
	return nonblocking(c, "MPI_Iallreduce", run, err)
}

func allreducePrep[T Elem](c *Comm, name string, send, recv []T, op *Op, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeAllreduce(c, name, send, recv, op, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	shmCand := name == "MPI_Allreduce" && coll.ShmUse(coll.KAllreduce, c.size, len(send)*esizeOf[T]())
	c.coll.shm.Pending(shmCand) // a rejection below is published in the segment (shmReject)
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() {
		return handledInter(c, name, coll.KAllreduce)(interAllreducePrep(c, name, send, recv, op, ov...))
	}
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, c.failColl(err)
	}
	if len(recv) < len(send) {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), len(send)))
	}
	c.coll.shm.Pending(false)
	if c.hierSpans() { // members on several hosts (coll_hier.go)
		if run, ok := hierAllreduce(c, name, send, recv, op, f, ov); ok {
			return run, nil
		}
	}
	if shmCand {
		sig, dt := sigOf(coll.KAllreduce, op, 0, len(send)), factsFor[T](ov).dt
		if run, ok := shmRun(c, name, sig, dt, coll.ShmArgs{Kind: coll.KAllreduce, Send: asBytes(send), Recv: asBytes(recv[:len(send)]),
			PRecv: asBytes(recv), ESize: dtypeSize(dt), F: coll.ReduceFn(f), F4: coll.ReduceFn4(opFunc4[T](op, ov...)), Commut: op.commutative}); ok {
			return run, nil
		}
	}
	x := newCx(c, name, sigOf(coll.KAllreduce, op, 0, len(send)), factsFor[T](ov).dt)
	commut := op.commutative
	return checked(x, func() error { return x.Allreduce(asBytes(send), asBytes(recv), coll.ReduceFn(f), commut) }), nil
}

// Gather collects send (the same length n at every rank) of every process
// into recv at root, rank i's block at recv[i*n:(i+1)*n] (MPI_Gather).
// In place: the root passes its own block of recv as send.
func Gather[T Elem](c *Comm, send, recv []T, root int) error {
	run, err := gatherPrep(c, "MPI_Gather", send, recv, root)
	return blocking(c, run, err)
}

// Igather starts a gather (MPI_Igather).
func Igather[T Elem](c *Comm, send, recv []T, root int) (*Request, error) {
	run, err := gatherPrep(c, "MPI_Igather", send, recv, root)
	return nonblocking(c, "MPI_Igather", run, err)
}

func gatherPrep[T Elem](c *Comm, name string, send, recv []T, root int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeGather(c, name, send, recv, root, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	shmCand := name == "MPI_Gather" && coll.ShmUse(coll.KGather, c.size, len(send)*esizeOf[T]())
	c.coll.shm.Pending(shmCand) // a rejection below is published in the segment (shmReject)
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KGather)(interGatherPrep(c, name, send, recv, root, ov...))
	}
	if err := rootedChecks(c, name, root); err != nil {
		return nil, err
	}
	if c.rank == root && len(recv) < c.size*len(send) {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed (%d ranks x %d)",
			len(recv), c.size*len(send), c.size, len(send)))
	}
	c.coll.shm.Pending(false)
	if shmCand {
		sig, dt := sigOf(coll.KGather, nil, root, len(send)), factsFor[T](ov).dt
		a := coll.ShmArgs{Kind: coll.KGather, Send: asBytes(send), PRecv: asBytes(recv), Root: root}
		if c.rank == root {
			a.Recv = asBytes(recv[:c.size*len(send)])
		}
		if run, ok := shmRun(c, name, sig, dt, a); ok {
			return run, nil
		}
	}
	x := newCx(c, name, sigOf(coll.KGather, nil, root, len(send)), factsFor[T](ov).dt)
	return checked(x, func() error { return x.Gather(asBytes(send), asBytes(recv), root) }), nil
}

// Gatherv collects send of every process into recv at root, rank i's
// counts[i] elements at recv[displs[i]:] (MPI_Gatherv). counts, displs
// and recv are significant at root only; len(send) must equal the root's
// counts[rank]. nil displs means packed.
func Gatherv[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) error {
	run, err := gathervPrep(c, "MPI_Gatherv", send, recv, counts, displs, root)
	return blocking(c, run, err)
}

// Igatherv starts a Gatherv (MPI_Igatherv).
func Igatherv[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) (*Request, error) {
	run, err := gathervPrep(c, "MPI_Igatherv", send, recv, counts, displs, root)
	return nonblocking(c, "MPI_Igatherv", run, err)
}

func scaled(a []int, k int) []int {
	if a == nil {
		return nil
	}
	b := make([]int, len(a))
	for i, v := range a {
		b[i] = v * k
	}
	return b
}

func gathervPrep[T Elem](c *Comm, name string, send, recv []T, counts, displs []int, root int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeGatherv(c, name, send, recv, counts, displs, root, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KGatherv)(interGathervPrep(c, name, send, recv, counts, displs, root, ov...))
	}
	if err := rootedChecks(c, name, root); err != nil {
		return nil, err
	}
	dt := factsFor[T](ov).dt
	esz := esizeOf[T]()
	var bc, bd []int
	if c.rank == root {
		d, err := c.checkCountsDispls(name, "receive", counts, displs, len(recv), ErrTruncate)
		if err != nil {
			return nil, c.failColl(err)
		}
		if counts[root] != len(send) {
			return nil, c.failColl(errf(ErrCount, name, c, "root sends %d elements but counts[%d] is %d", len(send), root, counts[root]))
		}
		bc, bd = scaled(counts, esz), scaled(d, esz)
	}
	x := newCx(c, name, sigOf(coll.KGatherv, nil, root, -1), dt)
	return checked(x, func() error { return x.Gatherv(asBytes(send), asBytes(recv), bc, bd, root) }), nil
}

// Scatter sends block i (recv's length n elements, send[i*n:(i+1)*n]) of
// send at root to process i's recv (MPI_Scatter). send is significant at
// root only. In place: the root passes its own block of send as recv.
func Scatter[T Elem](c *Comm, send, recv []T, root int) error {
	run, err := scatterPrep(c, "MPI_Scatter", send, recv, root)
	return blocking(c, run, err)
}

// Iscatter starts a scatter (MPI_Iscatter).
func Iscatter[T Elem](c *Comm, send, recv []T, root int) (*Request, error) {
	run, err := scatterPrep(c, "MPI_Iscatter", send, recv, root)
	return nonblocking(c, "MPI_Iscatter", run, err)
}

func scatterPrep[T Elem](c *Comm, name string, send, recv []T, root int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeScatter(c, name, send, recv, root, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KScatter)(interScatterPrep(c, name, send, recv, root, ov...))
	}
	if err := rootedChecks(c, name, root); err != nil {
		return nil, err
	}
	if c.rank == root && len(send) < c.size*len(recv) {
		return nil, c.failColl(errf(ErrCount, name, c, "send buffer of %d elements, %d needed (%d ranks x %d)",
			len(send), c.size*len(recv), c.size, len(recv)))
	}
	x := newCx(c, name, sigOf(coll.KScatter, nil, root, len(recv)), factsFor[T](ov).dt)
	return checked(x, func() error { return x.Scatter(asBytes(send), asBytes(recv), root) }), nil
}

// Scatterv sends counts[i] elements at send[displs[i]:] from root to
// process i's recv (MPI_Scatterv). send, counts and displs are significant
// at root only; recv must hold the count destined to the rank. nil displs
// means packed.
func Scatterv[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) error {
	run, err := scattervPrep(c, "MPI_Scatterv", send, recv, counts, displs, root)
	return blocking(c, run, err)
}

// Iscatterv starts a Scatterv (MPI_Iscatterv).
func Iscatterv[T Elem](c *Comm, send, recv []T, counts, displs []int, root int) (*Request, error) {
	run, err := scattervPrep(c, "MPI_Iscatterv", send, recv, counts, displs, root)
	return nonblocking(c, "MPI_Iscatterv", run, err)
}

func scattervPrep[T Elem](c *Comm, name string, send, recv []T, counts, displs []int, root int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeScatterv(c, name, send, recv, counts, displs, root, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KScatterv)(interScattervPrep(c, name, send, recv, counts, displs, root, ov...))
	}
	if err := rootedChecks(c, name, root); err != nil {
		return nil, err
	}
	dt := factsFor[T](ov).dt
	esz := esizeOf[T]()
	var bc, bd []int
	if c.rank == root {
		d, err := c.checkCountsDispls(name, "send", counts, displs, len(send), ErrCount)
		if err != nil {
			return nil, c.failColl(err)
		}
		if len(recv) < counts[root] {
			return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), counts[root]))
		}
		bc, bd = scaled(counts, esz), scaled(d, esz)
	}
	x := newCx(c, name, sigOf(coll.KScatterv, nil, root, -1), dt)
	return checked(x, func() error {
		r := asBytes(recv)
		if c.rank == root {
			r = r[:bc[root]]
		}
		return x.Scatterv(asBytes(send), r, bc, bd, root, false)
	}), nil
}

// Allgather collects send (the same length n at every rank) of every
// process into recv of every process, rank i's block at recv[i*n:]
// (MPI_Allgather). In place: pass this rank's own block of recv as send.
func Allgather[T Elem](c *Comm, send, recv []T) error {
	run, err := allgatherPrep(c, "MPI_Allgather", send, recv)
	return blocking(c, run, err)
}

// Iallgather starts an Allgather (MPI_Iallgather).
func Iallgather[T Elem](c *Comm, send, recv []T) (*Request, error) {
	run, err := allgatherPrep(c, "MPI_Iallgather", send, recv)
	return nonblocking(c, "MPI_Iallgather", run, err)
}

func allgatherPrep[T Elem](c *Comm, name string, send, recv []T, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeAllgather(c, name, send, recv, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	shmCand := name == "MPI_Allgather" && coll.ShmUse(coll.KAllgather, c.size, len(send)*esizeOf[T]())
	c.coll.shm.Pending(shmCand) // a rejection below is published in the segment (shmReject)
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() {
		return handledInter(c, name, coll.KAllgather)(interAllgatherPrep(c, name, send, recv, ov...))
	}
	p, n := c.size, len(send)
	if len(recv) < p*n {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed (%d ranks x %d)", len(recv), p*n, p, n))
	}
	c.coll.shm.Pending(false)
	if c.hierSpans() { // members on several hosts (coll_hier.go)
		if run, ok := hierAllgather(c, name, send, recv, ov); ok {
			return run, nil
		}
	}
	if shmCand {
		sig, dt := sigOf(coll.KAllgather, nil, 0, len(send)), factsFor[T](ov).dt
		if run, ok := shmRun(c, name, sig, dt, coll.ShmArgs{Kind: coll.KAllgather, Send: asBytes(send), Recv: asBytes(recv[:p*n]), PRecv: asBytes(recv)}); ok {
			return run, nil
		}
	}
	x := newCx(c, name, sigOf(coll.KAllgather, nil, 0, len(send)), factsFor[T](ov).dt)
	return checked(x, func() error { return x.Allgather(asBytes(send), asBytes(recv)) }), nil
}

// Allgatherv collects send of every process into recv of every process,
// rank i's counts[i] elements at recv[displs[i]:] (MPI_Allgatherv).
// len(send) must equal counts[rank]; nil displs means packed. In place:
// pass this rank's own block of recv as send.
func Allgatherv[T Elem](c *Comm, send, recv []T, counts, displs []int) error {
	run, err := allgathervPrep(c, "MPI_Allgatherv", send, recv, counts, displs)
	return blocking(c, run, err)
}

// Iallgatherv starts an Allgatherv (MPI_Iallgatherv).
func Iallgatherv[T Elem](c *Comm, send, recv []T, counts, displs []int) (*Request, error) {
	run, err := allgathervPrep(c, "MPI_Iallgatherv", send, recv, counts, displs)
	return nonblocking(c, "MPI_Iallgatherv", run, err)
}

func allgathervPrep[T Elem](c *Comm, name string, send, recv []T, counts, displs []int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeAllgatherv(c, name, send, recv, counts, displs, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	shmCand := name == "MPI_Allgatherv" && len(counts) == c.size && coll.ShmUse(coll.KAllgatherv, c.size, maxCount(counts)*esizeOf[T]())
	c.coll.shm.Pending(shmCand) // a rejection below is published in the segment (shmReject)
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KAllgatherv)(interAllgathervPrep(c, name, send, recv, counts, displs, ov...))
	}
	d, err := c.checkCountsDispls(name, "receive", counts, displs, len(recv), ErrTruncate)
	if err != nil {
		return nil, c.failColl(err)
	}
	if counts[c.rank] != len(send) {
		return nil, c.failColl(errf(ErrCount, name, c, "rank %d sends %d elements but counts[%d] is %d", c.rank, len(send), c.rank, counts[c.rank]))
	}
	c.coll.shm.Pending(false)
	dt := factsFor[T](ov).dt
	esz := esizeOf[T]()
	bc, bd := scaled(counts, esz), scaled(d, esz)
	if shmCand {
		sig := sigOf(coll.KAllgatherv, nil, 0, sum(counts))
		if run, ok := shmRun(c, name, sig, dt, coll.ShmArgs{Kind: coll.KAllgatherv, Send: asBytes(send), Recv: asBytes(recv), PRecv: asBytes(recv),
			Counts: bc, Displs: bd}); ok {
			return run, nil
		}
	}
	x := newCx(c, name, sigOf(coll.KAllgatherv, nil, 0, sum(counts)), dt)
	return checked(x, func() error { return x.Allgatherv(asBytes(send), asBytes(recv), bc, bd) }), nil
}

// Alltoall sends block j of send (len(send)/p elements) to process j,
// which stores it as block i (i the sender) of recv (MPI_Alltoall).
// len(send) must be a multiple of the size. In place: pass the same slice
// as send and recv.
func Alltoall[T Elem](c *Comm, send, recv []T) error {
	run, err := alltoallPrep(c, "MPI_Alltoall", send, recv)
	return blocking(c, run, err)
}

// Ialltoall starts an Alltoall (MPI_Ialltoall).
func Ialltoall[T Elem](c *Comm, send, recv []T) (*Request, error) {
	run, err := alltoallPrep(c, "MPI_Ialltoall", send, recv)
	return nonblocking(c, "MPI_Ialltoall", run, err)
}

func alltoallPrep[T Elem](c *Comm, name string, send, recv []T, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeAlltoall(c, name, send, recv, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KAlltoall)(interAlltoallPrep(c, name, send, recv, ov...))
	}
	p := c.size
	if len(send)%p != 0 {
		return nil, c.failColl(errf(ErrCount, name, c, "send buffer of %d elements is not a multiple of the size %d", len(send), p))
	}
	if len(recv) < len(send) {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), len(send)))
	}
	dt := factsFor[T](ov).dt
	bn := len(send) / p * esizeOf[T]()
	x := newCx(c, name, sigOf(coll.KAlltoall, nil, 0, len(send)/p), dt)
	return checked(x, func() error { return x.Alltoall(asBytes(send), asBytes(recv), bn) }), nil
}

// Alltoallv sends sendCounts[j] elements at send[sendDispls[j]:] to
// process j, which stores them at recv[recvDispls[i]:] (i the sender;
// recvCounts[i] elements) (MPI_Alltoallv). nil displacements mean packed.
// In place: pass the same slice as send and recv.
func Alltoallv[T Elem](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) error {
	run, err := alltoallvPrep(c, "MPI_Alltoallv", send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	return blocking(c, run, err)
}

// Ialltoallv starts an Alltoallv (MPI_Ialltoallv).
func Ialltoallv[T Elem](c *Comm, send []T, sendCounts, sendDispls []int, recv []T, recvCounts, recvDispls []int) (*Request, error) {
	run, err := alltoallvPrep(c, "MPI_Ialltoallv", send, sendCounts, sendDispls, recv, recvCounts, recvDispls)
	return nonblocking(c, "MPI_Ialltoallv", run, err)
}

func alltoallvPrep[T Elem](c *Comm, name string, send []T, sc, sd []int, recv []T, rc, rd []int, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeAlltoallv(c, name, send, sc, sd, recv, rc, rd, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KAlltoallv)(interAlltoallvPrep(c, name, send, sc, sd, recv, rc, rd, ov...))
	}
	sd, err := c.checkCountsDispls(name, "send", sc, sd, len(send), ErrCount)
	if err != nil {
		return nil, c.failColl(err)
	}
	rd, err = c.checkCountsDispls(name, "receive", rc, rd, len(recv), ErrTruncate)
	if err != nil {
		return nil, c.failColl(err)
	}
	dt := factsFor[T](ov).dt
	esz := esizeOf[T]()
	bsc, bsd, brc, brd := scaled(sc, esz), scaled(sd, esz), scaled(rc, esz), scaled(rd, esz)
	x := newCx(c, name, sigOf(coll.KAlltoallv, nil, 0, -1), dt)
	return checked(x, func() error {
		return x.Alltoallv(asBytes(send), bsc, bsd, asBytes(recv), brc, brd)
	}), nil
}

// ReduceScatterBlock combines send (p blocks of n = len(send)/p elements)
// of every process with op, in rank order, and leaves block i of the
// result in process i's recv (MPI_Reduce_scatter_block). len(send) must
// be a multiple of the size. In place: pass the same slice as send and
// recv (the result lands in its first block).
func ReduceScatterBlock[T Elem](c *Comm, send, recv []T, op *Op) error {
	run, err := reduceScatterBlockPrep(c, "MPI_Reduce_scatter_block", send, recv, op)
	return blocking(c, run, err)
}

// IreduceScatterBlock starts a ReduceScatterBlock (MPI_Ireduce_scatter_block).
func IreduceScatterBlock[T Elem](c *Comm, send, recv []T, op *Op) (*Request, error) {
	run, err := reduceScatterBlockPrep(c, "MPI_Ireduce_scatter_block", send, recv, op)
	return nonblocking(c, "MPI_Ireduce_scatter_block", run, err)
}

func reduceScatterBlockPrep[T Elem](c *Comm, name string, send, recv []T, op *Op, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeReduceScatterBlock(c, name, send, recv, op, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KReduceScatterBlock)(interReduceScatterBlockPrep(c, name, send, recv, op, ov...))
	}
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, c.failColl(err)
	}
	p := c.size
	if len(send)%p != 0 {
		return nil, c.failColl(errf(ErrCount, name, c, "send buffer of %d elements is not a multiple of the size %d", len(send), p))
	}
	n := len(send) / p
	if len(recv) < n {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), n))
	}
	dt := factsFor[T](ov).dt
	bn := n * esizeOf[T]()
	x := newCx(c, name, sigOf(coll.KReduceScatterBlock, op, 0, n), dt)
	commut := op.commutative
	return checked(x, func() error {
		counts := make([]int, p)
		for i := range counts {
			counts[i] = bn
		}
		return x.ReduceScatter(asBytes(send), asBytes(recv), counts, coll.ReduceFn(f), commut)
	}), nil
}

// ReduceScatter combines send (sum(counts) elements) of every process
// with op, in rank order, and leaves the counts[i] elements of block i
// (blocks packed in rank order) in process i's recv
// (MPI_Reduce_scatter). In place: pass the same slice as send and recv.
func ReduceScatter[T Elem](c *Comm, send, recv []T, counts []int, op *Op) error {
	run, err := reduceScatterPrep(c, "MPI_Reduce_scatter", send, recv, counts, op)
	return blocking(c, run, err)
}

// IreduceScatter starts a ReduceScatter (MPI_Ireduce_scatter).
func IreduceScatter[T Elem](c *Comm, send, recv []T, counts []int, op *Op) (*Request, error) {
	run, err := reduceScatterPrep(c, "MPI_Ireduce_scatter", send, recv, counts, op)
	return nonblocking(c, "MPI_Ireduce_scatter", run, err)
}

func reduceScatterPrep[T Elem](c *Comm, name string, send, recv []T, counts []int, op *Op, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeReduceScatter(c, name, send, recv, counts, op, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if c.IsInter() { // intercoll.go
		return handledInter(c, name, coll.KReduceScatter)(interReduceScatterPrep(c, name, send, recv, counts, op, coll.KReduceScatter, ov...))
	}
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, c.failColl(err)
	}
	if _, err := c.checkCountsDispls(name, "send", counts, nil, len(send), ErrCount); err != nil {
		return nil, c.failColl(err)
	}
	if len(recv) < counts[c.rank] {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), counts[c.rank]))
	}
	dt := factsFor[T](ov).dt
	bc := scaled(counts, esizeOf[T]())
	x := newCx(c, name, sigOf(coll.KReduceScatter, op, 0, sum(counts)), dt)
	commut := op.commutative
	return checked(x, func() error {
		return x.ReduceScatter(asBytes(send), asBytes(recv), bc, coll.ReduceFn(f), commut)
	}), nil
}

// Scan leaves in recv of process r the combination with op of send of
// processes 0..r, in rank order (MPI_Scan, an inclusive prefix
// reduction). In place: pass the same slice as send and recv.
func Scan[T Elem](c *Comm, send, recv []T, op *Op) error {
	run, err := scanPrep(c, "MPI_Scan", send, recv, op, false)
	return blocking(c, run, err)
}

// Iscan starts a Scan (MPI_Iscan).
func Iscan[T Elem](c *Comm, send, recv []T, op *Op) (*Request, error) {
	run, err := scanPrep(c, "MPI_Iscan", send, recv, op, false)
	return nonblocking(c, "MPI_Iscan", run, err)
}

// Exscan leaves in recv of process r > 0 the combination with op of send
// of processes 0..r-1, in rank order (MPI_Exscan, an exclusive prefix
// reduction); recv of process 0 is not modified. In place: pass the same
// slice as send and recv.
func Exscan[T Elem](c *Comm, send, recv []T, op *Op) error {
	run, err := scanPrep(c, "MPI_Exscan", send, recv, op, true)
	return blocking(c, run, err)
}

// Iexscan starts an Exscan (MPI_Iexscan).
func Iexscan[T Elem](c *Comm, send, recv []T, op *Op) (*Request, error) {
	run, err := scanPrep(c, "MPI_Iexscan", send, recv, op, true)
	return nonblocking(c, "MPI_Iexscan", run, err)
}

func scanPrep[T Elem](c *Comm, name string, send, recv []T, op *Op, exclusive bool, ov ...*elemFacts) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if run, err, ok := routeScan(c, name, send, recv, op, exclusive, ov...); ok { // the fault-tolerance model routes it (runthrough_coll.go)
		return run, err
	}
	if err := elemCheckOv[T](c, name, ov); err != nil {
		return nil, c.failColl(err)
	}
	if err := notInter(c, name); err != nil {
		return nil, c.failColl(err)
	}
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, c.failColl(err)
	}
	if len(recv) < len(send) {
		return nil, c.failColl(errf(ErrTruncate, name, c, "receive buffer of %d elements, %d needed", len(recv), len(send)))
	}
	kind := coll.KScan
	if exclusive {
		kind = coll.KExscan
	}
	x := newCx(c, name, sigOf(kind, op, 0, len(send)), factsFor[T](ov).dt)
	commut := op.commutative
	return checked(x, func() error {
		return x.Scan(asBytes(send), asBytes(recv), coll.ReduceFn(f), commut, exclusive)
	}), nil
}

// sum is the total of counts (every member passes the same counts).
func sum(counts []int) int {
	t := 0
	for _, k := range counts {
		t += k
	}
	return t
}
