package mpi

import (
	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The datatype-taking forms of the intercommunicator collectives of
// intercoll.go (the C library's path): the typed preps of typed_coll.go
// and the blocking typed calls of datatype.go dispatch here when the
// communicator is an intercommunicator. They lay the buffers out as
// typed_coll.go does (packing at the start, unpacking at the end) with the
// intercommunicator's sizes: the root's buffers and the counts and
// displacements of the v-variants describe the REMOTE group's blocks. The
// arguments MPI calls insignificant are not looked at: the send side at
// the root of Gather(v) and Reduce, the receive side at the root of
// Scatter(v), everything at a ProcNull process (its datatypes may be nil).

// isInter reports whether c is a (non-nil) intercommunicator.
func isInter(c *Comm) bool { return c != nil && c.IsInter() }

// byteFacts are the facts of data moved as bytes.
var byteFacts = &numFacts[p2p.DTByte]

// pairFacts are the carrier facts of data sent with st and received with
// rt: on an intercommunicator the two sides of a process describe
// different messages (its sends go to the other group, whose types match
// them), so the data travels as st's carriers only when rt's are alike,
// else as bytes.
func pairFacts(st, rt *Datatype) *elemFacts {
	if st.sig.dt == rt.sig.dt && carrierSize(st.sig) == carrierSize(rt.sig) {
		return st.sig
	}
	return byteFacts
}

// interRoleTyped checks c and root for a typed rooted call.
func interRoleTyped(c *Comm, name string, root int) (interRole, error) {
	if err := checkComm(c, name); err != nil {
		return 0, err
	}
	role, err := interRootRole(c, name, root)
	if err != nil {
		return 0, c.handle(err)
	}
	return role, nil
}

func interGatherTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype, root int) (collRun, error) {
	role, err := interRoleTyped(c, name, root)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KGather, root: root}
	f := byteFacts
	switch role {
	case roleRoot:
		n := recvcount * len(c.remote)
		rb, err := checkTypedColl(c, name, recvbuf, n, rt)
		if err != nil {
			return nil, err
		}
		a.r, f = t.room(rb, n, rt), rt.sig
	case roleLeaf:
		sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
		if err != nil {
			return nil, err
		}
		a.s, f = t.pack(sb, sendcount, st), st.sig
	}
	return t.finish(a, f)
}

func interGathervTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, counts, displs []int, rt *Datatype, root int) (collRun, error) {
	role, err := interRoleTyped(c, name, root)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KGatherv, root: root}
	f := byteFacts
	switch role {
	case roleRoot:
		if err := checkV(c, name, "receive", counts, displs, len(c.remote)); err != nil {
			return nil, c.handle(err)
		}
		rb, err := checkTypedColl(c, name, recvbuf, vspan(counts, displs), rt)
		if err != nil {
			return nil, err
		}
		f = rt.sig
		var off []int
		a.r, off = t.roomBlocks(rb, counts, packedDispls(counts, displs), rt)
		a.rc, a.rd = inCarrier(counts, rt, f), bytesInCarrier(off, f)
	case roleLeaf:
		sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
		if err != nil {
			return nil, err
		}
		a.s, f = t.pack(sb, sendcount, st), st.sig
	}
	return t.finish(a, f)
}

func interScatterTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype, root int) (collRun, error) {
	role, err := interRoleTyped(c, name, root)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KScatter, root: root}
	f := byteFacts
	switch role {
	case roleRoot:
		n := sendcount * len(c.remote)
		sb, err := checkTypedColl(c, name, sendbuf, n, st)
		if err != nil {
			return nil, err
		}
		a.s, f = t.pack(sb, n, st), st.sig
	case roleLeaf:
		rb, err := checkTypedColl(c, name, recvbuf, recvcount, rt)
		if err != nil {
			return nil, err
		}
		a.r, f = t.room(rb, recvcount, rt), rt.sig
	}
	return t.finish(a, f)
}

func interScattervTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, counts, displs []int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype, root int) (collRun, error) {
	role, err := interRoleTyped(c, name, root)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KScatterv, root: root}
	f := byteFacts
	switch role {
	case roleRoot:
		if err := checkV(c, name, "send", counts, displs, len(c.remote)); err != nil {
			return nil, c.handle(err)
		}
		sb, err := checkTypedColl(c, name, sendbuf, vspan(counts, displs), st)
		if err != nil {
			return nil, err
		}
		f = st.sig
		var off []int
		a.s, off = t.packBlocks(sb, counts, packedDispls(counts, displs), st)
		a.sc, a.sd = inCarrier(counts, st, f), bytesInCarrier(off, f)
	case roleLeaf:
		rb, err := checkTypedColl(c, name, recvbuf, recvcount, rt)
		if err != nil {
			return nil, err
		}
		a.r, f = t.room(rb, recvcount, rt), rt.sig
	}
	return t.finish(a, f)
}

func interReduceTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, recvbuf []R, count int, d *Datatype, op *Op, root int) (collRun, error) {
	role, err := interRoleTyped(c, name, root)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KReduce, root: root}
	f := byteFacts
	switch role {
	case roleRoot:
		rb, err := checkTypedColl(c, name, recvbuf, count, d)
		if err != nil {
			return nil, err
		}
		a.r, f = t.room(rb, count, d), d.sig
	case roleLeaf:
		sb, err := checkTypedColl(c, name, sendbuf, count, d)
		if err != nil {
			return nil, err
		}
		o, bf, err := bindOp(c, name, op, d)
		if err != nil {
			return nil, c.handle(err)
		}
		a.s, a.op, f = t.pack(sb, count, d), o, bf
	}
	return t.finish(a, f)
}

func interAlltoallTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, recvcount int, rt *Datatype) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	rs := len(c.remote)
	sb, err := checkTypedColl(c, name, sendbuf, sendcount*rs, st)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, recvcount*rs, rt)
	if err != nil {
		return nil, err
	}
	t := typedRunOf(c, name)
	return t.finish(&tcall{kind: coll.KAlltoall, s: t.pack(sb, sendcount*rs, st), r: t.room(rb, recvcount*rs, rt)}, pairFacts(st, rt))
}

func interAlltoallvTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sc, sd []int, st *Datatype, recvbuf []R, rc, rd []int, rt *Datatype) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	rs := len(c.remote)
	if err := checkV(c, name, "send", sc, sd, rs); err != nil {
		return nil, c.handle(err)
	}
	if err := checkV(c, name, "receive", rc, rd, rs); err != nil {
		return nil, c.handle(err)
	}
	sb, err := checkTypedColl(c, name, sendbuf, vspan(sc, sd), st)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, vspan(rc, rd), rt)
	if err != nil {
		return nil, err
	}
	f := pairFacts(st, rt)
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KAlltoallv}
	var soff, roff []int
	a.s, soff = t.packBlocks(sb, sc, packedDispls(sc, sd), st)
	a.r, roff = t.roomBlocks(rb, rc, packedDispls(rc, rd), rt)
	a.sc, a.sd = inCarrier(sc, st, f), bytesInCarrier(soff, f)
	a.rc, a.rd = inCarrier(rc, rt, f), bytesInCarrier(roff, f)
	return t.finish(a, f)
}

func interAllgathervTypedPrep[S, R Elem](c *Comm, name string, sendbuf []S, sendcount int, st *Datatype, recvbuf []R, counts, displs []int, rt *Datatype) (collRun, error) {
	if err := checkComm(c, name); err != nil {
		return nil, err
	}
	if err := checkV(c, name, "receive", counts, displs, len(c.remote)); err != nil {
		return nil, c.handle(err)
	}
	sb, err := checkTypedColl(c, name, sendbuf, sendcount, st)
	if err != nil {
		return nil, err
	}
	rb, err := checkTypedColl(c, name, recvbuf, vspan(counts, displs), rt)
	if err != nil {
		return nil, err
	}
	f := pairFacts(st, rt)
	t := typedRunOf(c, name)
	a := &tcall{kind: coll.KAllgatherv, s: t.pack(sb, sendcount, st)}
	var off []int
	a.r, off = t.roomBlocks(rb, counts, packedDispls(counts, displs), rt)
	a.rc, a.rd = inCarrier(counts, rt, f), bytesInCarrier(off, f)
	return t.finish(a, f)
}
