package mpi

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
)

// Communicator management: Dup, Split, Create, CreateGroup, Free. Each
// new communicator gets a context-id pair agreed among the processes that
// take part (commmgmt_ctx.go); the agreement and Split's exchange of
// (colour, key) run on the parent's collective context with internal
// tags, so they never match user messages or the public collectives.

// checkLive validates a communicator argument: not nil, not freed, MPI not
// finalized. (checkComm in p2p.go does the same for the other calls.)
func checkLive(c *Comm, op string) error { return checkComm(c, op) }

// derivedName is the default name of a communicator made from parent.
func derivedName(kind string, parent *Comm) string {
	return kind + "(" + shortName(parent) + ")"
}

func shortName(c *Comm) string {
	if len(c.name) > 48 {
		return c.name[:45] + "..."
	}
	return c.name
}

// newDerived builds a communicator of this process from its parts; pair
// is its agreed context-id pair. It inherits parent's error handler; its
// fault-tolerance model is ULFM unless the parent's model sets another
// (ftModel.create) before the communicator is returned. members nil is
// the identity over parent's size (parent's own members being nil: a
// world's duplicate).
func newDerived(parent *Comm, name string, pair int, members []int, rank int) *Comm {
	size := len(members)
	if members == nil {
		size = parent.size // the parent's group, the identity (a world's duplicate)
	}
	nc := newComm(&Comm{
		w:       parent.w,
		ctx:     uint32(2 * pair),
		rank:    rank,
		size:    size,
		members: members,
		owned:   true,
		name:    name,
	})
	nc.errh.Store(parent.errh.Load())
	nc.codec.Store(parent.codec.Load())
	parent.w.registerComm(nc)
	return nc
}

// agreeOnParent runs the context-id agreement over all members of the
// intracommunicator c, combining the bitmaps with the public Allreduce
// and Band (its prepared form: errors come back raw and go through c's
// handler once, in the caller).
func agreeOnParent(c *Comm, op string, k int, join bool) ([]int, error) {
	and := func(words []uint64) error {
		run, err := allreducePrep(c, op, words, words, Band)
		if err != nil {
			return err
		}
		return run()
	}
	return ctxAgreement(c.w, c, op, k, uint64(c.ctx), join, and)
}

// allgatherInts gathers a few int64 from every member of intracommunicator
// c with the public Allgather (prepared form, raw errors).
func allgatherInts(c *Comm, op string, vals ...int64) ([]int64, error) {
	all := make([]int64, len(vals)*c.size)
	run, err := allgatherPrep(c, op, vals, all)
	if err != nil {
		return nil, err
	}
	return all, run()
}

// groupProcs returns the world ranks of c's (local) group.
func (c *Comm) groupProcs() []int {
	if c.members != nil {
		return c.members
	}
	return c.Group().procs
}

// Dup returns a new communicator with the same group (or groups) as c and
// a new context: messages sent on one are never received on the other
// (MPI_Comm_dup). It is collective over c. The new communicator inherits
// c's error handler.
//
// Attributes: the copy callback of each attribute of c decides whether and
// with which value the new communicator gets it; a failing callback fails
// Dup at this process (the new communicator is freed). The info hints of c
// are copied.
func (c *Comm) Dup() (*Comm, error) {
	return c.dupInfo("MPI_Comm_dup", nil, false)
}

// DupWithInfo is Dup with info as the new communicator's hints instead of
// c's (MPI_Comm_dup_with_info); nil gives it none.
func (c *Comm) DupWithInfo(info *Info) (*Comm, error) {
	return c.dupInfo("MPI_Comm_dup_with_info", info, true)
}

func (c *Comm) dupInfo(op string, info *Info, withInfo bool) (*Comm, error) {
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	nc, err := c.ftm().create(c, op, func() (*Comm, error) { return c.dup(op) })
	if err == nil {
		if err = c.dupAttrs(op, nc, info, withInfo); err != nil {
			nc = nil
		}
	}
	return nc, c.handle(err)
}

// dup is Dup with raw errors.
func (c *Comm) dup(op string) (*Comm, error) {
	if c.IsInter() {
		return c.interDup(op)
	}
	pairs, err := agreeOnParent(c, op, 1, true)
	if err != nil {
		return nil, err
	}
	// A world's duplicate keeps the identity as its member list (none),
	// not n world ranks at every process.
	nc := newDerived(c, derivedName("dup", c), pairs[0], c.members, c.rank)
	nc.topo = c.topo // MPI-4.1 7.4.2: the copy has the same topology
	return nc, nil
}

// Split partitions c by colour: the processes that pass the same colour
// form a new communicator, ranked by key (ties by rank in c)
// (MPI_Comm_split). A process passing colour Undefined gets a nil
// communicator and a nil error. Colours must be >= 0 or Undefined: a
// negative colour at any process is an ErrArg error at every process.
// It is collective over c. On an intercommunicator (both groups call it)
// the result is an intercommunicator between the local and the remote
// processes of the same colour; a colour with no remote process gives nil.
func (c *Comm) Split(color, key int) (*Comm, error) {
	const op = "MPI_Comm_split"
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return c.splitInter(op, color, key) // intercomm_split.go
	}
	nc, err := c.ftm().create(c, op, func() (*Comm, error) { return c.split(op, color, key) })
	return nc, c.handle(err)
}

// split is Split on an intracommunicator with raw errors.
func (c *Comm) split(op string, color, key int) (*Comm, error) {
	// Every process learns every (colour, key): bad colours are reported
	// consistently, and each process can compute its new group.
	all, err := allgatherInts(c, op, int64(color), int64(key))
	if err != nil {
		return nil, err
	}
	c.ftm().splitColours(c, all) // run-through: recognised failed processes pass Undefined
	for r := 0; r < c.size; r++ {
		if col := all[2*r]; col < 0 && col != Undefined {
			if r == c.rank {
				return nil, newErr(ErrArg, op, c, NoPeer, "colour %d is negative (colours are >= 0 or mpi.Undefined)", col)
			}
			return nil, newErr(ErrArg, op, c, r, "rank %d passed colour %d (colours are >= 0 or mpi.Undefined)", r, col)
		}
	}
	join := color != Undefined
	pairs, err := agreeOnParent(c, op, 1, join)
	if err != nil {
		return nil, err
	}
	if !join {
		return nil, nil
	}
	var ranks []int // ranks in c of the new members, ordered by (key, rank)
	for r := 0; r < c.size; r++ {
		if all[2*r] == int64(color) {
			ranks = append(ranks, r)
		}
	}
	slices.SortStableFunc(ranks, func(a, b int) int {
		ka, kb := all[2*a+1], all[2*b+1]
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	members := make([]int, len(ranks))
	rank := -1
	for i, r := range ranks {
		members[i] = c.worldRank(r)
		if r == c.rank {
			rank = i
		}
	}
	name := fmt.Sprintf("split(%s, colour %d)", shortName(c), color)
	return newDerived(c, name, pairs[0], members, rank), nil
}

// checkSubgroup reports an ErrGroup error if g is nil or not a subset of
// c's group.
func (c *Comm) checkSubgroup(op string, g *Group) error {
	if g == nil {
		return newErr(ErrGroup, op, c, NoPeer, "nil group")
	}
	cg := c.Group()
	for i, p := range g.procs {
		if !cg.contains(p) {
			return newErr(ErrGroup, op, c, NoPeer, "group member %d (world rank %d) is not a member of the communicator", i, p)
		}
	}
	return nil
}

// Create returns a communicator over the processes of g, which must be a
// subset of c's group (ErrGroup otherwise), in g's order (MPI_Comm_create).
// It is collective over all of c, and every process must pass the same
// group; processes not in g get a nil communicator and a nil error. On an
// intercommunicator each group passes a subgroup of its local group, and
// the result's remote group is the other group's (nil if either is empty).
func (c *Comm) Create(g *Group) (*Comm, error) {
	const op = "MPI_Comm_create"
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return c.createInter(op, g) // intercomm_split.go
	}
	if err := c.checkSubgroup(op, g); err != nil {
		return nil, c.handle(err)
	}
	if g.Size() == 0 {
		return nil, nil // the same at every process: nobody joins
	}
	create := func() (*Comm, error) {
		rank := g.index(c.w.rank)
		pairs, err := agreeOnParent(c, op, 1, rank >= 0)
		if err != nil {
			return nil, err
		}
		if rank < 0 {
			return nil, nil
		}
		return newDerived(c, derivedName("create", c), pairs[0], g.procs, rank), nil
	}
	nc, err := c.ftm().create(c, op, create)
	return nc, c.handle(err)
}

// CreateGroup returns a communicator over the processes of g, a subset of
// c's group containing the caller, in g's order
// (MPI_Comm_create_group). Unlike Create it is collective only over the
// members of g: the other members of c need not take part. Concurrent
// CreateGroup calls on c with overlapping groups must use different tags.
func (c *Comm) CreateGroup(g *Group, tag int) (*Comm, error) {
	const op = "MPI_Comm_create_group"
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "not supported on intercommunicators"))
	}
	if err := c.checkSendTag(op, tag, NoPeer); err != nil {
		return nil, c.handle(err)
	}
	if err := c.checkSubgroup(op, g); err != nil {
		return nil, c.handle(err)
	}
	rank := g.index(c.w.rank)
	if rank < 0 {
		return nil, c.handle(newErr(ErrGroup, op, c, NoPeer, "the calling process (world rank %d) is not a member of the group", c.w.rank))
	}
	ctx := c.ctx + 1
	if v := c.ftm().alive(c); v != nil {
		ctx = v.ctx + 1 // run-through with recognised failures: c's own collective context saw a failure
	}
	key := c.createGroupKey(g.procs, tag)
	x := internalSet(c, op, ctx, createGroupTag(int(key)), rank, len(g.procs), g.procs)
	seed := uint64(c.ctx)<<32 | key&(1<<30-1) | 1<<62
	pairs, err := ctxAgreement(c.w, c, op, 1, seed, true, x.AllAND)
	if err != nil {
		return nil, c.handle(err)
	}
	return newDerived(c, derivedName("create_group", c), pairs[0], g.procs, rank), nil
}

// createGroupKey names one CreateGroup call on c among the members of
// procs: a hash of the group, the tag and how many calls with both this
// process made before. Every member counts the same calls (MPI: in the
// same order), and successive calls over overlapping groups get different
// internal tags, so a member still in one call never takes a message of
// the next call of another member (MPICH comm/comm_group_rand: the
// agreement's messages of two calls mixed, MPI_ERR_TRUNCATE).
func (c *Comm) createGroupKey(procs []int, tag int) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, p := range procs {
		binary.LittleEndian.PutUint64(b[:], uint64(p))
		h.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], uint64(tag))
	h.Write(b[:])
	k := h.Sum64()
	c.createGroupsMu.Lock()
	if c.createGroups == nil {
		c.createGroups = make(map[uint64]uint64)
	}
	n := c.createGroups[k]
	c.createGroups[k] = n + 1
	c.createGroupsMu.Unlock()
	binary.LittleEndian.PutUint64(b[:], n)
	h.Write(b[:])
	return h.Sum64()
}

// Free releases a communicator (MPI_Comm_free): its context ids return to
// the pool for reuse, and every later call on it fails with ErrComm.
// Messages sent on c must have been received before it is freed. Freeing
// CommWorld or CommSelf, or freeing twice, is an ErrComm error. Free is
// local: it does not wait for the other members. The delete callbacks of
// c's attributes run first; if one fails, Free fails and c stays usable.
func (c *Comm) Free() error {
	const op = "MPI_Comm_free"
	if err := checkLive(c, op); err != nil {
		return err
	}
	if !c.owned {
		return c.handle(newErr(ErrComm, op, c, NoPeer, "%s cannot be freed", c.name))
	}
	if err := c.freeAttrs(op); err != nil { // delete callbacks (MPI-4.1 7.7.2)
		return c.handle(err)
	}
	if c.freed.Swap(true) {
		return newErr(ErrComm, op, c, NoPeer, "communicator already freed")
	}
	c.w.forgetFT(c)
	c.freeShm() // the shared-memory collectives' mapping (coll_shm.go)
	t := c.w.ctxTable()
	if !c.ftm().free(c) {
		return nil // seed 003 17.8.2: Free completes despite failures (the pair is not reused, see rtModel.free)
	}
	// A pair whose contexts a failure or a revocation poisoned stays
	// retired: reused, it would fail the new communicator's operations at
	// once, and late messages of the old one could still arrive (a few
	// pairs of 16384 per failure).
	for _, x := range []*Comm{c, c.local} {
		if x != nil && !c.w.eng.IsPoisoned(x.ctx) && !c.w.eng.IsPoisoned(x.ctx+1) {
			t.release(int(x.ctx / 2))
		}
	}
	return nil
}
