package mpi

import "github.com/ftmpi/ftmpi/internal/coll"

// Collectives on intercommunicators (MPI 4.0 section 6.2.2). The
// intracommunicator collectives dispatch here when c.IsInter().
//
// Each call takes the next collective sequence number of c when it is
// prepared (the ...Prep functions; all processes of both groups call the
// intercommunicator's collectives in the same order, so they agree on it)
// and tags its messages (KInter+kind)<<24 | seq: on the local intracommunicator's
// collective context within a group, on c's collective context between
// the two leaders (local rank 0 of each group). Prepared runs may thus be
// executed concurrently (nonblocking forms) without mixing messages.
//
// Algorithms: every operation goes through the leaders: the local group's
// contribution is combined at its leader (binomial tree), the leaders
// exchange, and each leader broadcasts what it received within its group
// (binomial tree), preceded by a status word so that an error at a leader
// (a type or size mismatch between the groups) is reported by every
// process of its group instead of leaving them waiting.

// interLinkFor returns the link of the next collective of kind on c.
func (c *Comm) interLinkFor(op string, kind int) *interLink {
	tag := coll.Tag(coll.KInter+kind, c.coll.seq.Add(1))
	return c.link(op, tag, tag)
}

// result broadcasts the leader's outcome (ok, and a count) within the
// local group and returns the count; ferr is the leader's own error.
func (l *interLink) result(ferr error, count int) (int, error) {
	st := []uint64{0, uint64(count)}
	if l.isLeader() && ferr == nil {
		st[0] = 1
	}
	if l.loc.N > 1 {
		if err := l.loc.BcastTree(asBytes(st), l.leader); err != nil {
			return 0, err
		}
	}
	if ferr != nil {
		return 0, ferr
	}
	if st[0] != 1 {
		return 0, l.leaderFailed()
	}
	return int(st[1]), nil
}

// interBarrierPrep prepares an intercommunicator barrier: no process
// leaves before every process of both groups has entered.
func interBarrierPrep(c *Comm, op string) (collRun, error) {
	l := c.interLinkFor(op, coll.KBarrier)
	return func() error { return l.and(nil) }, nil
}

// interBcastPrep prepares an intercommunicator broadcast: in the root's
// group the root passes Root and the others ProcNull; in the other group
// every process passes the root's rank in the remote group and receives
// buf. Buffers must have the same length at the root and the receivers.
func interBcastPrep[T Elem](c *Comm, op string, buf []T, root int, ov ...*elemFacts) (collRun, error) {
	if root != Root && root != ProcNull && (root < 0 || root >= len(c.remote)) {
		return nil, newErr(ErrRoot, op, c, NoPeer,
			"root %d: on an intercommunicator the root passes mpi.Root, the rest of its group mpi.ProcNull, and the other group the root's rank in [0, %d)",
			root, len(c.remote))
	}
	l := c.interLinkFor(op, coll.KBcast)
	dt := factsFor[T](ov).dt
	b := asBytes(buf)
	return func() error {
		switch root {
		case ProcNull:
			return nil
		case Root:
			setDT(l.cross, dt)
			return l.cross.Send(l.remote, b)
		}
		var ferr error
		if l.isLeader() {
			var got int
			setDT(l.cross, dt)
			if got, ferr = l.cross.Recv(root, b); ferr == nil && got != len(b) {
				ferr = newErr(ErrCount, op, c, root, "the root sent %d elements, the buffer holds %d", got/dtypeSize(dt), len(buf))
			}
		}
		if _, err := l.result(ferr, 0); err != nil {
			return err
		}
		if l.loc.N > 1 {
			return l.loc.BcastTree(b, l.leader)
		}
		return nil
	}, nil
}

// interAllreducePrep prepares an intercommunicator all-reduction: every
// process of each group receives in recv the reduction (in rank order) of
// the send buffers of the OTHER group. Both groups pass the same length;
// len(recv) >= len(send).
func interAllreducePrep[T Elem](c *Comm, name string, send, recv []T, op *Op, ov ...*elemFacts) (collRun, error) {
	f, err := opFunc[T](c, name, op, ov...)
	if err != nil {
		return nil, err
	}
	if len(recv) < len(send) {
		return nil, newErr(ErrTruncate, name, c, NoPeer, "receive buffer of %d elements, %d needed", len(recv), len(send))
	}
	l := c.interLinkFor(name, coll.KAllreduce)
	dt := factsFor[T](ov).dt
	x := newCx(c.local, name, sigOf(coll.KReduce, op, 0, len(send)), dt) // the local reduction, on the local intracommunicator
	commut := op.commutative
	return func() error {
		n := len(send)
		out := asBytes(recv[:n])
		var ferr error
		var tmp []T
		if l.isLeader() {
			tmp = make([]T, n)
		}
		if err := x.Reduce(asBytes(send), asBytes(tmp), l.leader, coll.ReduceFn(f), commut); err != nil {
			return err
		}
		if l.isLeader() {
			var got int
			setDT(l.cross, dt)
			if got, ferr = l.cross.SendRecv(l.remote, asBytes(tmp), out); ferr == nil && got != len(out) {
				ferr = newErr(ErrCount, name, c, NoPeer, "the remote group reduced %d elements, this group %d", got/dtypeSize(dt), n)
			}
		}
		if _, err := l.result(ferr, 0); err != nil {
			return err
		}
		if l.loc.N > 1 && n > 0 {
			return l.loc.BcastTree(out, l.leader)
		}
		return nil
	}, nil
}

// interAllgatherPrep prepares an intercommunicator all-gather: every
// process of each group receives in recv the send buffers of the OTHER
// group, in rank order. The processes of a group pass send buffers of one
// length; recv must hold RemoteSize times the remote group's length.
func interAllgatherPrep[T Elem](c *Comm, op string, send, recv []T, ov ...*elemFacts) (collRun, error) {
	l := c.interLinkFor(op, coll.KAllgather)
	dt := factsFor[T](ov).dt
	return func() error {
		var all []byte
		if l.isLeader() {
			all = make([]byte, l.loc.N*len(asBytes(send)))
		}
		if err := l.loc.GatherTree(asBytes(send), all, l.leader); err != nil {
			return err
		}
		out := asBytes(recv)
		var ferr error
		got := 0
		if l.isLeader() {
			setDT(l.cross, dt)
			got, ferr = l.cross.SendRecv(l.remote, all, out)
			if ferr == nil && got%len(c.remote) != 0 {
				ferr = newErr(ErrCount, op, c, NoPeer, "the remote group sent %d bytes, not a multiple of its size %d", got, len(c.remote))
			}
		}
		got, err := l.result(ferr, got)
		if err != nil {
			return err
		}
		if l.loc.N > 1 && got > 0 {
			return l.loc.BcastTree(out[:got], l.leader)
		}
		return nil
	}, nil
}
