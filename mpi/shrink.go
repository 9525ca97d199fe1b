package mpi

import (
	"slices"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// Shrink creates a communicator of c's surviving processes, in their old
// rank order (MPI_Comm_shrink, seed 002 A.2.3). It works on a revoked
// communicator, and every survivor gets the same communicator even if more
// processes fail during the call: the failed set and the new context id
// are both decided by fault-tolerant agreements (internal/ft/agree), which
// are uniform. A process that fails after the failed set was decided may be
// a member of the result; its failure is then reported by the new
// communicator like any other.
func (c *Comm) Shrink() (*Comm, error) {
	const op = "MPI_Comm_shrink"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	nc, err := c.shrink(op)
	return nc, c.handle(err)
}

// Ishrink starts a nonblocking Shrink (MPI_Comm_ishrink); once the request
// completes, *result is the new communicator.
func (c *Comm) Ishrink(result **Comm) (*Request, error) {
	const op = "MPI_Comm_ishrink"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if result == nil {
		return nil, c.handle(newErr(ErrArg, op, c, NoPeer, "nil result pointer"))
	}
	return c.startColl(op, func() error {
		nc, err := c.shrink(op)
		*result = nc
		return err
	}), nil
}

func (c *Comm) shrink(op string) (*Comm, error) {
	if c.IsInter() {
		return nil, newErr(ErrComm, op, c, NoPeer, "shrinking an intercommunicator is not supported yet")
	}
	w := c.w
	f := w.ftOf(c)
	// 1. Agree on who failed: the union of what every contributor knew, plus
	// the processes that failed before contributing.
	var v agree.Value
	v.Flags = 1
	for _, p := range c.failedMembers() {
		v.Union.Add(f.index[p])
	}
	val, contrib, err := c.agreeOn(op, v)
	if err != nil {
		return nil, err
	}
	dead := make(map[int]bool)
	for i, p := range f.overlay {
		if val.Union.Has(i) || !contrib.Has(i) {
			dead[p] = true
		}
	}
	var survivors []int
	for _, p := range c.memberWorldRanks() {
		if !dead[p] {
			survivors = append(survivors, p)
		}
	}
	me := slices.Index(survivors, w.rank)
	if me < 0 {
		return nil, newErr(ErrIntern, op, c, NoPeer, "this process is not among the survivors")
	}
	// 2. Agree on a context-id pair free at every survivor: the bitmap AND
	// of the context-id agreement runs as fault-tolerant agreements on c.
	and := func(words []uint64) error {
		val, _, err := c.agreeOn(op, agree.Value{Flags: 1, Inter: agree.SetFromWords(words)})
		if err != nil {
			return err
		}
		copy(words, val.Inter.Words(len(words)))
		return nil
	}
	pairs, err := ctxAgreement(w, c, op, 1, uint64(c.ctx)^0x5368726b, true, and)
	if err != nil {
		return nil, err
	}
	return newDerived(c, derivedName("shrink", c), pairs[0], survivors, me), nil
}
