package mpi

import "github.com/ftmpi/ftmpi/internal/p2p"

// ulfmModel is the default fault-tolerance model: ULFM (seed 002 appendix
// A). A failure of a member makes wildcard receives raise ErrPending (a
// blocking one ErrProcFailed) until FailureAck; point-to-point operations
// with the failed process raise ErrProcFailed; collectives raise
// ErrProcFailed (their context is poisoned, coll_util.go) until the program
// shrinks the communicator. Its state (acknowledged failures, revocation
// overlay, agreements) is the communicator's commFT (ft.go), shared with
// the run-through model, which keeps the ULFM calls working.
type ulfmModel struct{}

func (ulfmModel) name() string { return "ULFM" }

func (ulfmModel) wildFailed(c *Comm) bool { return c.hasUnackedFailure() }

func (ulfmModel) wildRecvErr(c *Comm, op string) error {
	return newErr(ErrProcFailed, op, c, AnySource,
		"a potential sender failed (%v) and the failure is not acknowledged", c.failedMembers())
}

// wildPending: seed 002 A.2.2, the request stays pending.
func (ulfmModel) wildPending(r *Request, op string) error { return r.pendingErr(op) }

func (ulfmModel) trackWild(*Comm, *Request) {}

func (ulfmModel) untrackWild(*Comm, *p2p.Req) {}

func (ulfmModel) cancelledWildErr(*Comm, string) error { return nil }

// sendrecvResult: the receive's error, else the send's.
func (ulfmModel) sendrecvResult(_ *Comm, _ string, st Status, sendErr, recvErr error, _, _ int) (Status, error) {
	if recvErr != nil {
		return st, recvErr
	}
	return st, sendErr
}

func (ulfmModel) recognized() []int { return nil }

func (ulfmModel) collRoute(*Comm, string) (*collView, collRun, bool) { return nil, nil, false }

func (ulfmModel) create(_ *Comm, _ string, fn func() (*Comm, error)) (*Comm, error) { return fn() }

func (ulfmModel) splitColours(*Comm, []int64) {}

func (ulfmModel) alive(*Comm) *Comm { return nil }

func (ulfmModel) free(*Comm) bool { return true }

func (ulfmModel) contexts(c *Comm) []uint32 { return c.ownContexts() }

func (ulfmModel) onLost(*Comm, int) {}
