package mpi

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
)

// Special ranks and tags, as in MPI.
const (
	AnySource = -1     // MPI_ANY_SOURCE
	AnyTag    = -1     // MPI_ANY_TAG
	ProcNull  = -2     // MPI_PROC_NULL
	Root      = -3     // MPI_ROOT: the root's own root argument in an intercommunicator collective
	Undefined = -32766 // MPI_UNDEFINED
	// TagUB is the largest valid tag (MPI_TAG_UB).
	TagUB = math.MaxInt32
)

// Context ids of the predefined communicators. Every communicator owns two
// consecutive ids: ctx for point-to-point and ctx+1 for its collectives,
// so collective traffic never matches user receives. The ids of derived
// communicators are agreed among their members (commmgmt_ctx.go).
const (
	ctxWorld uint32 = 0
	ctxSelf  uint32 = 2
)

// Comm is a communicator (MPI_Comm): a group of processes and a
// communication context; an intercommunicator has a local and a remote
// group. Its methods are safe for concurrent use, except that collective
// calls on one communicator (including the creation of communicators from
// it) must be made in the same order by all members, as MPI requires.
//
// A *Comm is a handle: WithContext returns another handle of the same
// communicator whose blocking calls honour a context, and every handle of
// one communicator shares its error handler and its failure state (a
// Revoke or FailureAck through one is seen through all).
//
// After a failure (ULFM): Agree decides an outcome uniformly, Revoke stops
// the communicator everywhere, FailureAck and GetFailed acknowledge and
// name the failed processes, Shrink builds a communicator of the
// survivors and Replace one of the old size with new processes in the
// failed ranks (ExampleComm_Shrink).
type Comm struct {
	// Fields are grouped by who may change them. The state every handle
	// of one communicator shares (error handler, fault-tolerance model and
	// state, collective sequence, lazily built views) is behind commState,
	// so that WithContext (ctx.go) can return another handle.
	*commState // shared by the communicator and its context views

	// Identity: set at creation, never changed.
	w       *World
	ctx     uint32 // point-to-point context id; ctx+1 is the collective context
	rank    int    // rank of this process in the (local) group
	size    int    // size of the (local) group
	members []int  // world rank of each member of the (local) group; nil means identity (CommWorld)
	remote  []int  // intercommunicators: world rank of each remote member; nil for intracommunicators
	local   *Comm  // intercommunicators: intracommunicator over the local group (internal traffic)
	owned   bool   // ctx was agreed at creation and returns to the World's pool on Free

	// Name: set by SetName (not concurrently with other calls on c; error
	// messages read it). A view made by WithContext starts with its
	// communicator's name.
	name string

	// A view made by WithContext: its context and that context's Done
	// channel (both nil on the communicator itself, so a blocking call
	// without a context waits on a nil channel, which costs nothing).
	cctx context.Context
	done <-chan struct{}
}

// commState is the state shared by a communicator and its context views.
type commState struct {
	base *Comm // the communicator itself (not a view): its identity

	// Mutable state, safe for concurrent use.
	errh  atomic.Pointer[Errhandler]
	codec atomic.Pointer[Codec] // the codec of Go values (codec.go); nil: GobCodec
	freed atomic.Bool           // Free was called: every later call fails with ErrComm

	// Lazily built views.
	groupOnce, remoteOnce sync.Once
	group, remoteGroup    *Group

	// Per-World state hosted by CommWorld only (World has no slot for it):
	// the table of context ids in use by this process.
	ctxOnce sync.Once
	ctxTab  *ctxTable

	// Fault tolerance. model is c's fault-tolerance model (model.go), set
	// at creation (nil: ULFM) and swapped once, atomically, by a switch to
	// run-through; it holds the model's own state. ft is the state common
	// to both models (revocation overlay, acknowledged failures,
	// agreements: ft.go), made on first use.
	model atomic.Pointer[modelRef]
	ft    atomic.Pointer[commFT]

	// The members' world ranks sorted, for lookups in O(log n) (ft.go):
	// of the local group (localProcs) and of both groups (allProcs).
	// Shared with members when it is sorted already; made on first use;
	// nil: the identity 0..size-1 (sortedProcs).
	procsOnce            sync.Once
	localProcs, allProcs []int

	// The failed members known so far (failedMembers, ft.go): the
	// World's failure order filtered, extended by its new part only.
	failedMu   sync.Mutex
	failedSeen int   // how much of the World's failure order was filtered
	failed     []int // the members among it, in that order

	// coll is the collective state: sequence numbers, algorithm choice
	// inputs (coll_util.go).
	coll collComm

	// attr is the cached attributes and info hints (attr.go, info.go).
	attr commAttrs

	// createGroups counts this process's CreateGroup calls on the
	// communicator per (group, tag) (commmgmt.go: createGroupKey).
	createGroupsMu sync.Mutex
	createGroups   map[uint64]uint64

	// topo is the process topology (topo.go), nil for none; set at
	// creation, never changed, shared by Dup's copy.
	topo *topology
}

// newComm gives a communicator built as a literal its shared state; every
// communicator is made through it.
func newComm(c *Comm) *Comm {
	c.commState = &commState{base: c}
	return c
}

// IsInter reports whether c is an intercommunicator (MPI_Comm_test_inter).
func (c *Comm) IsInter() bool { return c.remote != nil }

// RemoteSize is the size of the remote group of an intercommunicator, 0 for
// an intracommunicator (MPI_Comm_remote_size).
func (c *Comm) RemoteSize() int { return len(c.remote) }

// Rank is the calling process's rank in c (MPI_Comm_rank); for an
// intercommunicator, in the local group.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in c (MPI_Comm_size); for an
// intercommunicator, of the local group.
func (c *Comm) Size() int { return c.size }

// Name returns the communicator's name (MPI_Comm_get_name). Predefined
// communicators are named as in MPI; derived ones get a descriptive
// default until SetName.
func (c *Comm) Name() string { return c.name }

// SetName sets the communicator's name (MPI_Comm_set_name), used in error
// messages. The name is local to the calling process. It must not be
// called concurrently with other operations on c.
func (c *Comm) SetName(name string) error {
	if c == nil {
		return newErr(ErrComm, "MPI_Comm_set_name", nil, NoPeer, "nil communicator")
	}
	c.name = name
	return nil
}

// World returns the World c belongs to. It has no MPI counterpart:
// Go-specific (MPI's per-process state is global; ftmpi's is the World).
func (c *Comm) World() *World { return c.w }

// Group returns the group of c (MPI_Comm_group); for an intercommunicator,
// the local group.
func (c *Comm) Group() *Group {
	c.groupOnce.Do(func() {
		procs := c.members
		if procs == nil {
			procs = make([]int, c.size)
			for i := range procs {
				procs[i] = i
			}
		}
		c.group = newGroup(procs, c.w.rank)
	})
	return c.group
}

// RemoteGroup returns the remote group of an intercommunicator, nil for an
// intracommunicator (MPI_Comm_remote_group).
func (c *Comm) RemoteGroup() *Group {
	if c.remote == nil {
		return nil
	}
	c.remoteOnce.Do(func() { c.remoteGroup = newGroup(c.remote, c.w.rank) })
	return c.remoteGroup
}

// CompareComms compares two communicators (MPI_Comm_compare): Ident if
// they are the same object, Congruent if their groups (local and remote)
// have the same members in the same order, Similar if the same members in
// another order, Unequal otherwise (and for an intracommunicator against
// an intercommunicator, or a nil one).
func CompareComms(a, b *Comm) Comparison {
	if a == nil || b == nil {
		return Unequal
	}
	if a.base == b.base {
		return Ident
	}
	if a.IsInter() != b.IsInter() {
		return Unequal
	}
	r := compareProcs(a.Group(), b.Group())
	if a.IsInter() {
		rr := compareProcs(a.RemoteGroup(), b.RemoteGroup())
		if rr > r {
			r = rr
		}
	}
	if r == Ident {
		return Congruent
	}
	return r
}

// SetErrhandler sets the error handler of c (MPI_Comm_set_errhandler).
// Communicators derived from c later inherit it.
func (c *Comm) SetErrhandler(h *Errhandler) error {
	if c == nil {
		return newErr(ErrComm, "MPI_Comm_set_errhandler", nil, NoPeer, "nil communicator")
	}
	if h == nil {
		return newErr(ErrArg, "MPI_Comm_set_errhandler", c, NoPeer, "nil error handler")
	}
	if h.win != nil || h.file != nil {
		return newErr(ErrArg, "MPI_Comm_set_errhandler", c, NoPeer, "a %s (WinCreateErrhandler, FileCreateErrhandler) cannot be set on a communicator", h)
	}
	if err := c.checkSetErrhandler(h); err != nil {
		return err
	}
	c.errh.Store(h)
	return nil
}

// Errhandler returns the error handler of c (MPI_Comm_get_errhandler).
func (c *Comm) Errhandler() *Errhandler { return c.errh.Load() }

// worldRank maps a rank of c's (local) group to a world rank.
func (c *Comm) worldRank(r int) int {
	if c.members == nil {
		return r
	}
	return c.members[r]
}

// peerSize is the number of valid point-to-point peers: the size of the
// group that destination and source ranks refer to (the remote group of
// an intercommunicator).
func (c *Comm) peerSize() int {
	if c.remote != nil {
		return len(c.remote)
	}
	return c.size
}

// peerWorldRank maps a point-to-point peer rank (remote rank on an
// intercommunicator) to a world rank.
func (c *Comm) peerWorldRank(r int) int {
	if c.remote != nil {
		return c.remote[r]
	}
	return c.worldRank(r)
}

// rankOfProc is the rank in c of world process p: in the remote group of
// an intercommunicator if p is there (peer ranks of c name the remote
// group), else in the local group; NoPeer if p is not a member.
func (c *Comm) rankOfProc(p int) int {
	if i := slices.Index(c.remote, p); i >= 0 {
		return i
	}
	if c.members == nil {
		if p >= 0 && p < c.size {
			return p
		}
		return NoPeer
	}
	if i := slices.Index(c.members, p); i >= 0 {
		return i
	}
	return NoPeer
}

// Numeric is the set of numeric element types: the element types of the
// predefined reduction operations' loops. Buffers take any Elem. It has no
// MPI counterpart as a type: it is the Go side of MPI's predefined numeric
// datatypes (MPI_BYTE, MPI_INT8_T ... MPI_DOUBLE, MPI_C_DOUBLE_COMPLEX).
type Numeric interface {
	byte | int8 | int16 | int32 | int64 | uint16 | uint32 | uint64 | int | uint | uintptr |
		float32 | float64 | complex64 | complex128
}

// Status describes a completed receive or probe (MPI_Status).
type Status struct {
	Source    int   // rank of the sender in the communicator (MPI_SOURCE)
	Tag       int   // tag of the message (MPI_TAG)
	Count     int   // number of elements received (MPI_Get_count)
	Bytes     int   // bytes received (MPI_Get_elements of MPI_BYTE; the C library's status)
	Cancelled bool  // the request was cancelled (MPI_Test_cancelled)
	Err       error // per-request error, set by Waitall and friends (MPI_ERROR)
}

func emptyStatus() Status { return Status{Source: AnySource, Tag: AnyTag} }

func procNullStatus() Status { return Status{Source: ProcNull, Tag: AnyTag} }
