package mpi

import (
	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
)

// ftModel is the fault-tolerance model of one communicator: what a failure
// of a member means for the operations on it. Two implementations:
//
//   - ulfmModel (model_ulfm.go), the default: seed 002 appendix A. Wildcard
//     receives raise ErrPending until FailureAck, collectives fail with
//     ErrProcFailed (their context is poisoned) until Shrink.
//   - rtModel (runthrough.go, runthrough_coll.go; the collectives' view of
//     the alive members is internal/coll's View): run-through
//     stabilization, seed 003.
//     Wildcard receives are disabled by a failure until ReenableAnySource,
//     collectives are inactive until Validate and then run on the view of
//     the alive members; creation is all-or-nothing.
//
// A communicator gets its model when it is created (Comm.model): ULFM,
// except for the communicators the run-through model creates from a
// run-through parent (create), which are run-through. The chapter-17 calls
// (GroupFailed, Validate, EnableRunThrough, ...) switch a ULFM
// communicator to run-through for good, by one atomic swap of the model
// (Comm.runThrough). The point-to-point, request, agreement, communicator
// management and collective code calls the model and never asks which one
// it is. The revocation, acknowledgement, agreement and shrink state common
// to both models is the communicator's commFT (ft.go), also on the Comm.
//
// Other objects over a communicator: a one-sided window or a file opened on
// a communicator takes its communicator's model at creation (c.ftm()) and
// keeps it in its own model field; its operations classify errors and route
// their collective parts (fence, create, free, collective I/O) through
// collRoute and create/free like a communicator's, and its contexts are
// added to contexts so that a revocation reaches them. Methods take the
// communicator the object was created on; a model that needs
// per-object state (as rtModel keeps per communicator) is created for the
// object by the same create hook. No branch on the model is needed in the
// point-to-point or collective code for them.
type ftModel interface {
	// name is the model's name ("ULFM", "run-through"), for tests and
	// messages.
	name() string

	// Point-to-point and requests.

	// wildFailed reports whether a failure now affects the wildcard
	// (AnySource) receives of c (ULFM: an unacknowledged failure of a
	// member; run-through: wildcards disabled since the last
	// ReenableAnySource).
	wildFailed(c *Comm) bool
	// wildRecvErr is the error of a blocking wildcard receive that
	// wildFailed released before it matched a message.
	wildRecvErr(c *Comm, op string) error
	// wildPending is called by Wait and Test of a pending nonblocking
	// wildcard receive r while wildFailed. It returns the error to raise
	// with r left pending (ULFM: ErrPending), or nil once it has completed
	// r (run-through: cancelled, reported by cancelledWildErr).
	wildPending(r *Request, op string) error
	// trackWild registers a new nonblocking wildcard receive of c (the
	// run-through model completes it on a later failure).
	trackWild(c *Comm, r *Request)
	// untrackWild forgets a tracked wildcard receive before its engine
	// request is released.
	untrackWild(c *Comm, pr *p2p.Req)
	// cancelledWildErr is the error of a wildcard receive that completed
	// as cancelled without a Cancel call; nil: a plain cancellation.
	cancelledWildErr(c *Comm, op string) error
	// sendrecvResult combines the outcomes of the two halves of a
	// Sendrecv (st: the receive's status) into its status and error.
	sendrecvResult(c *Comm, op string, st Status, sendErr, recvErr error, dest, source int) (Status, error)

	// Agreement.

	// recognized lists the world ranks of failed members that count as
	// acknowledged at every process in Agree (run-through: recognised by
	// Validate).
	recognized() []int

	// Collectives.

	// collRoute decides how a collective op on c runs: ok=false, on c by
	// the ordinary algorithm (a failure poisons its context); fail != nil,
	// it fails with fail's error (at completion for the nonblocking
	// forms); v != nil, on the view v of c's alive members.
	collRoute(c *Comm, op string) (v *collView, fail collRun, ok bool)

	// Communicator management.

	// create runs fn, which creates a communicator from c (Dup, Split,
	// Create, Merge), and sets the new communicator's model.
	create(c *Comm, op string, fn func() (*Comm, error)) (*Comm, error)
	// splitColours adjusts Split's table of (colour, key) pairs of c's
	// ranks (run-through: recognised failed processes pass Undefined).
	splitColours(c *Comm, all []int64)
	// alive returns the internal communicator of c's alive members that
	// c's internal protocols (CreateGroup, intercommunicator Dup and
	// Merge) run on, nil to run them on c.
	alive(c *Comm) *Comm
	// free releases the model's state on Free; it reports whether c's own
	// context-id pair may return to the pool.
	free(c *Comm) (releaseOwn bool)
	// contexts lists every context of c, revoked with c.
	contexts(c *Comm) []uint32
	// onLost runs (from the engine's lost-peer hook; it must not block) after
	// the failure of world rank peer, a member of c, became known.
	onLost(c *Comm, peer int)
}

// modelRef holds a communicator's model (an interface value cannot be
// swapped atomically by itself).
type modelRef struct{ m ftModel }

// ftm returns c's fault-tolerance model. A nil model is ULFM (which keeps
// no per-communicator state of its own: the ULFM state is c's commFT):
// CommWorld, CommSelf, spawned, shrunk and internal communicators, and
// those created from a ULFM communicator.
func (c *Comm) ftm() ftModel {
	if r := c.model.Load(); r != nil {
		return r.m
	}
	return ulfmModel{}
}

// setModel sets the model of a communicator that no other goroutine uses
// yet (at its creation).
func (c *Comm) setModel(m ftModel) { c.model.Store(&modelRef{m}) }

// ownContexts lists c's own contexts (and those of an intercommunicator's
// local communicator).
func (c *Comm) ownContexts() []uint32 {
	ctxs := []uint32{c.ctx, c.ctx + 1}
	if c.local != nil {
		ctxs = append(ctxs, c.local.ctx, c.local.ctx+1)
	}
	return ctxs
}

// modelsOnLost runs (from the lost-peer hook) after peer's failure became known:
// the model of every communicator containing peer learns of it.
func (w *World) modelsOnLost(comms []*commFT, peer int) {
	for _, f := range comms {
		if f.d.Has(peer) {
			f.c.ftm().onLost(f.c, peer)
		}
	}
}

// collView is the view a collective runs on when some members of its
// communicator are recognised failed: the internal communicator of the
// alive members (an intercommunicator of both groups' alive members for an
// intercommunicator), with its own context-id pair, and the maps of both
// groups' ranks onto it (runthrough_coll.go moves the arguments).
type collView struct {
	comm   *Comm
	local  coll.View // the (local) group
	remote coll.View // intercommunicators: the remote group
}
