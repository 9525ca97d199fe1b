package mpi

import (
	"encoding/binary"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The checking mode (Config.Check, FTMPI_CHECK=1, ftmpirun --check).
//
// Collectives. Without it, a mismatch between the members' calls is found
// only by a member that receives a message of another call (coll_sig.go):
// a broadcast's root returns success, and two mismatched members that wait
// for each other wait until something else ends the wait. With it, every
// public collective on an intracommunicator (blocking, nonblocking,
// persistent, neighbourhood; the run-through model's views included,
// since their calls go through the same prep functions) starts with an
// allgather of the members' signatures (coll.Sig and element type, 16
// bytes a member) on the call's own context, with the call's sequence
// number in its own tag space (coll.TagCheck), so the exchange is never
// confused with the call. Every member sees every signature and compares
// them the same way, so a mismatch is an error at every member, naming
// another member's call and its own, and no member runs the algorithm.
// A failure during the exchange is a failure of the call (the exchange's
// waits are the call's: a member's failure or a revocation ends them); a
// member that rejected its arguments before the call fails the exchange at
// the others through the call's poison (coll.PhaseTags covers the check's
// tags).
//
// What is compared is what MPI requires to agree: the operation, the root,
// the reduction operation, and the element type and count where every
// member passes the same (coll.Counted); not the counts of the
// v-variants, which differ by member, and not a zero-count call's element
// type (an empty message has no type signature). Neighbourhood
// collectives compare the operation only: their counts must agree between
// neighbours, not across the communicator.
//
// Not covered: intercommunicator collectives (their roots differ by
// member by design: MPI_ROOT, MPI_PROC_NULL, a remote rank); the internal
// sets of communicator management. Every process of a job must run with
// the same setting: a checking member waits for the exchange.

// checked is run preceded, under the checking mode, by the check of x's
// call across its members. Without the checking mode it is run.
func checked(x *coll.Set, run collRun) collRun {
	n := x.Net.(*collNet)
	if !n.c.w.cfg.Check || x.N <= 1 {
		return run
	}
	return func() error {
		if err := n.checkCall(x); err != nil {
			return err
		}
		return run()
	}
}

// checkCall exchanges the signatures of x's call among its members and
// returns the mismatch, if any, as the error of this member's call.
func (n *collNet) checkCall(x *coll.Set) error {
	chk := newCall(n.c, n.op, x.Ctx, coll.TagCheck(seqOfTag(x.Tag)), p2p.DTByte, x.Me, x.N, x.Procs)
	chk.Crowded = x.Crowded
	buf := make([]byte, 16*(x.N+1))
	mine, all := buf[:16], buf[16:]
	binary.LittleEndian.PutUint64(mine, uint64(x.Sig))
	binary.LittleEndian.PutUint64(mine[8:], uint64(n.dt))
	if err := chk.Allgather(mine, all); err != nil {
		return err
	}
	for i := range x.N {
		if i == x.Me {
			continue
		}
		theirs := coll.Sig(binary.LittleEndian.Uint64(all[16*i:]))
		tdt := p2p.DType(binary.LittleEndian.Uint64(all[16*i+8:]))
		if !sigsAgree(x.Sig, theirs, n.dt, tdt) {
			class := mismatchClass(theirs, x.Sig, tdt, n.dt)
			return newErr(class, n.op, n.c, NoPeer, "rank %d called %s; this rank %s",
				i, describeCall(theirs, tdt), describeCall(x.Sig, n.dt))
		}
	}
	return nil
}

// sigsAgree reports whether two members' calls, of signatures a and b and
// element types adt and bdt, are the same call as far as MPI requires.
func sigsAgree(a, b coll.Sig, adt, bdt p2p.DType) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case coll.KNeighborAllgather, coll.KNeighborAllgatherv, coll.KNeighborAlltoall, coll.KNeighborAlltoallv:
		return true // counts agree between neighbours only
	}
	if a.Root() != b.Root() || a.Op() != b.Op() || a.Count() != b.Count() {
		return false
	}
	if coll.Counted(a.Kind()) && a.Count() == 0 {
		return true // no type signature to compare
	}
	return adt == bdt
}

// checkf is the error of a check of the checking mode that failed for op
// on c (c may be nil).
func checkf(class *Class, op string, c *Comm, format string, args ...any) error {
	return newErr(class, op, c, NoPeer, "%s", "ftmpi check: "+fmt.Sprintf(format, args...))
}
