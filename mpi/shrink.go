package mpi

import (
	"slices"
	"strconv"
	"sync"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// Shrink creates a communicator of c's surviving processes, in their old
// rank order (MPIX_Comm_shrink; MPI_Comm_shrink in MPI-6). It works on a
// revoked communicator and, unlike the first ULFM text (which says
// MPI_ERR_ARG) but as Open MPI 5 and the later ULFM text, on one that was
// not revoked, which it leaves unrevoked (docs/semantics.md, "Shrink
// without Revoke"). Every survivor gets the same communicator even if
// more processes fail during the call: the failed set and the new
// communicator are both decided by fault-tolerant agreements, which are
// uniform. A process that fails after the failed set was decided may be a
// member of the result; its failure is then reported by the new
// communicator like any other. In the common case this is one agreement
// (the failed set and the context-id pair; shrink).
func (c *Comm) Shrink() (*Comm, error) {
	const op = "MPI_Comm_shrink"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	// One protocol after the other; on a view, cut by its context (ctx.go).
	v, err := c.protocol(op, func() (any, error) { return c.base.shrink(op) }, dropShrunk)
	nc, _ := v.(*Comm)
	return nc, c.handle(err)
}

// Ishrink starts a nonblocking Shrink (MPIX_Comm_ishrink; MPI_Comm_ishrink
// in MPI-6); the request's
// Wait returns the new communicator.
func (c *Comm) Ishrink() (*RequestOf[*Comm], error) {
	const op = "MPI_Comm_ishrink"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	t := c.takeTurn()
	return startCollOf(c, op, func() (*Comm, error) { return inTurn(t, op, func() (*Comm, error) { return c.shrink(op) }) }), nil
}

// agreeDeadAndFree runs the agreement that decides who failed (the union
// of what every contributor knew, plus the processes that failed before
// contributing: dead, sorted process ids) and the context-id pairs free
// at every contributor (window, the bitmaps intersected), the window
// starting at start (from seed). Nothing is reserved: a pair of the
// window may be taken here meanwhile by a concurrent creation on another
// communicator, so a claim from it must be checked by an agreement
// (Replace's second agreement does); agreeDeadAndReserve is the form
// whose pairs are held.
func (c *Comm) agreeDeadAndFree(op string, seed uint64) (window []uint64, dead []int, start int, err error) {
	start = startPos(seed, 0)
	window = make([]uint64, ctxWindow)
	c.w.ctxTable().freeMask(window, start/64)
	dead, err = c.agreeFailed(op, c.failedMembers(), window)
	return window, dead, start, err
}

// agreeDeadAndReserve is agreeDeadAndFree with the window's free pairs
// reserved in this process's table before it contributes them
// (ctxReservation): the agreed window is the AND of the contributors'
// reservations, so a survivor (a contributor: one that did not contribute
// is in dead) holds every pair of it and claims one without another
// agreement. On success the caller ends res (keep or release); on an
// error nothing stays reserved.
func (c *Comm) agreeDeadAndReserve(op string, seed uint64) (window []uint64, dead []int, start int, res *ctxReservation, err error) {
	t := c.w.ctxTable()
	start = startPos(seed, 0)
	if t.lowFirst {
		start = 0 // tests: overlap concurrent creations' first attempts
	}
	window = make([]uint64, ctxWindow)
	res = t.reserve(window, start/64)
	defer func() {
		if err != nil {
			res.release()
		}
	}()
	shrinkStep(c.w, "reserved")
	dead, err = c.agreeFailed(op, c.failedMembers(), window)
	return window, dead, start, res, err
}

// shrinkHook, if set (tests), is called by each process at the steps of
// an intracommunicator's Shrink ("reserved": its window reserved, before
// the agreement; "decided": the agreement decided; "claimed": the pair
// kept, the rest released; "built": the new communicator registered).
var shrinkHook func(w *World, step string)

func shrinkStep(w *World, step string) {
	if h := shrinkHook; h != nil {
		h(w, step)
	}
}

func (c *Comm) shrink(op string) (nc *Comm, err error) {
	if end := c.traceRepair(rte.RepairShrink, nil); end != nil {
		defer func() { end(err) }()
	}
	if c.IsInter() {
		return c.shrinkInter(op)
	}
	w := c.w
	seed := uint64(c.ctx) ^ 0x5368726b
	// 1. One agreement decides who failed and the free context-id pairs,
	// the pairs offered reserved at every contributor.
	window, dead, start, res, err := c.agreeDeadAndReserve(op, seed)
	if err != nil {
		return nil, err
	}
	defer res.release() // what was not kept, on every return
	shrinkStep(w, "decided")
	w0 := start / 64
	var survivors []int
	me := -1
	if c.members == nil && c.size >= sharedListMin {
		// A world-like group: the identity less the dead, one list for
		// every rank of this process (sharedSurvivors).
		for _, p := range dead {
			if p < c.size {
				w.recordFailure(p) // as below
			}
		}
		survivors = sharedSurvivors(c.size, dead)
		if i, ok := slices.BinarySearch(survivors, w.rank); ok {
			me = i
		}
	} else {
		survivors = make([]int, 0, c.size-min(len(dead), c.size))
		deadBits := bitsOf(dead) // a lookup per member
		for r := range c.size {
			if p := c.worldRank(r); !hasBit(deadBits, p) {
				survivors = append(survivors, p)
			} else {
				// A failure the agreement established is known here from
				// now on (GetFailed, AckFailed), even while this process's
				// own notice of it is still on its way, as for an operation
				// that returns ErrProcFailed.
				w.recordFailure(p)
			}
		}
		me = slices.Index(survivors, w.rank)
	}
	if me < 0 {
		return nil, newErr(ErrIntern, op, c, NoPeer, "this process is not among the survivors")
	}
	// 2. The first common free pair. Every survivor contributed, so every
	// survivor reserved it: it keeps it and releases the rest, with no
	// agreement of its own, and every survivor returns the same
	// communicator (the pair and the members are functions of the
	// decision).
	if rel := pickPairs(window, 1, start%64); rel != nil {
		pair := (w0*64 + rel[0]) % ctxPairs
		if !res.keep(pair) {
			return nil, newErr(ErrIntern, op, c, NoPeer, "the agreed context-id pair %d was not reserved here", pair)
		}
		shrinkStep(w, "claimed")
		nc := newDerived(c, derivedName("shrink", c), pair, survivors, me)
		if agreeShmEarly {
			w.ftOf(nc).d.OpenSegment()
		}
		shrinkStep(w, "built")
		return nc, nil
	}
	// 3. Rare: no common free pair in the window (the same at every
	// survivor: the window is agreed). The reservation ends and the
	// general context-id agreement runs, its bitmap ANDs and claim check
	// as fault-tolerant agreements on c.
	res.release()
	pairs, err := ctxAgreement(w, c, op, 1, seed+1, true, c.agreedAnd(op))
	if err != nil {
		return nil, err
	}
	return newDerived(c, derivedName("shrink", c), pairs[0], survivors, me), nil
}

// shrinkInter shrinks an intercommunicator: one agreement over both groups
// decides who failed, each group keeps its survivors in their old order,
// and the two context pairs of the new intercommunicator are chosen by the
// context-id agreement with its bitmap ANDs run as fault-tolerant
// agreements over both groups. Every survivor of either group gets the
// same result or the same error.
func (c *Comm) shrinkInter(op string) (*Comm, error) {
	w := c.w
	dead, err := c.agreeFailed(op, c.failedMembers(), nil)
	if err != nil {
		return nil, err
	}
	isDead := func(p int) bool {
		_, ok := slices.BinarySearch(dead, p)
		return ok
	}
	alive := func(procs []int) []int {
		var out []int
		for _, p := range procs {
			if !isDead(p) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, p := range slices.Concat(c.memberWorldRanks(), c.remote) {
		if isDead(p) {
			// Known here from now on (GetFailed), as in the
			// intracommunicator case: the agreement established it.
			w.recordFailure(p)
		}
	}
	local, remote := alive(c.memberWorldRanks()), alive(c.remote)
	if len(remote) == 0 {
		// Seed 002 A.3.1: Shrink raises no ErrProcFailed nor ErrRevoked.
		// But an intercommunicator needs a remote group, and the agreed
		// failed set holds all of it, so there is nothing to return.
		// ErrComm, the same at every survivor (the set is an agreement's
		// decision), says that this communicator has no shrunk form;
		// ErrProcFailed would send a revoke-and-shrink loop round for
		// ever (docs/semantics.md, "Shrink of an intercommunicator
		// whose remote group failed").
		return nil, newErr(ErrComm, op, c, NoPeer, "every process of the remote group failed: an intercommunicator needs a non-empty remote group, so it has no shrunk form (MPI_COMM_NULL); the local group's survivors go on with a communicator of their own")
	}
	me := slices.Index(local, w.rank)
	if me < 0 {
		return nil, newErr(ErrIntern, op, c, NoPeer, "this process is not among the survivors")
	}
	pairs, err := ctxAgreement(w, c, op, 2, uint64(c.ctx)^0x53687249, true, c.agreedAnd(op))
	if err != nil {
		return nil, err
	}
	return newInter(c, derivedName("shrink", c), pairs, local, remote, me), nil
}

// agreedAnd is the bitmap AND of the context-id agreement (ctxAgreement)
// run as a fault-tolerant agreement over c's members: usable on a revoked
// communicator or one with failed members, with the same result at every
// process.
func (c *Comm) agreedAnd(op string) func([]uint64) error {
	return func(words []uint64) error { return c.agreeAnd(op, words) }
}

// bitsOf returns the bitmap of the sorted process ids procs (hasBit).
func bitsOf(procs []int) []uint64 {
	if len(procs) == 0 {
		return nil
	}
	w := make([]uint64, procs[len(procs)-1]/64+1)
	for _, p := range procs {
		w[p>>6] |= 1 << (uint(p) & 63)
	}
	return w
}

// hasBit reports whether bit p of the bitmap w is set (bit p&63 of word
// p/64).
func hasBit(w []uint64, p int) bool {
	return p >= 0 && p>>6 < len(w) && w[p>>6]&(1<<(uint(p)&63)) != 0
}

// sharedListMin is the size from which the shrink of a world-like group
// (the identity: a world, its duplicates) shares its member list among
// the ranks of the process (sharedSurvivors).
const sharedListMin = 1024

// sharedLists holds the member lists of the last few shrinks of large
// world-like groups in this process. Under mpi.Run every survivor of a
// shrink computes the same list, the identity less the agreed dead set:
// at 10,000 ranks each wrote its own 9,900 entries, 784 MB and 0.8 s of
// CPU in all (issue 24). Member lists are never changed in place (Dup
// shares its parent's), and these are cut to their length, so that an
// append copies.
var sharedLists struct {
	mu   sync.Mutex
	keys []string
	vals [][]int
}

// sharedSurvivors returns the processes 0..n-1 not in dead, in order: the
// list made for the same n and dead set before, if it is among the last
// few, or a new one kept for the next callers.
func sharedSurvivors(n int, dead []int) []int {
	members := dead
	key := strconv.AppendInt(nil, int64(n), 10)
	for _, p := range members {
		if p < n {
			key = strconv.AppendInt(append(key, ','), int64(p), 10)
		}
	}
	sharedLists.mu.Lock()
	defer sharedLists.mu.Unlock()
	for i, k := range sharedLists.keys {
		if k == string(key) {
			return sharedLists.vals[i]
		}
	}
	list := make([]int, 0, n)
	next := 0
	for _, p := range members {
		if p >= n {
			break
		}
		for ; next < p; next++ {
			list = append(list, next)
		}
		next = p + 1
	}
	for ; next < n; next++ {
		list = append(list, next)
	}
	list = list[:len(list):len(list)]
	const keep = 4
	if len(sharedLists.keys) == keep {
		sharedLists.keys, sharedLists.vals = sharedLists.keys[1:], sharedLists.vals[1:]
	}
	sharedLists.keys = append(sharedLists.keys, string(key))
	sharedLists.vals = append(sharedLists.vals, list)
	return list
}
