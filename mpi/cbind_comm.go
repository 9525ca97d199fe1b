package mpi

// Communicator calls for the C binding (libmpi) that the Go API had no
// form of: MPI_Comm_split_type, MPI_Cart_map and MPI_Graph_map, the
// MPI_HOST and MPI_IO attributes, MPI_INFO_ENV.

import (
	"hash/fnv"
	"os"
	"strconv"
	"strings"
)

// Split types of SplitType (MPI_COMM_TYPE_*).
const (
	// CommTypeShared groups the processes that share memory: those on one
	// host (MPI_COMM_TYPE_SHARED).
	CommTypeShared = 1
)

// SplitType partitions c by splitType (MPI_Comm_split_type): with
// CommTypeShared, the processes of c on one host form a communicator,
// ranked by key (ties by rank in c). A process passing Undefined gets a
// nil communicator; so does every process for a split type ftmpi does not
// know (the hardware-guided types), which MPI allows. It is collective
// over c. The hosts are those the launcher reported (every process knows
// them all, so every process computes the same partition); under Run, and
// where the launcher named no host, the processes are on one host.
//
// Failures: like every creation (Split, Dup), a failure of a member of c
// during the call raises ErrProcFailed (ErrRevoked on a revoked c), and
// under ULFM it may do so at some processes while the others get their
// communicator: agree on the outcome (Agree on c) before using it.
func (c *Comm) SplitType(splitType, key int) (*Comm, error) {
	const op = "MPI_Comm_split_type"
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "not supported on intercommunicators"))
	}
	color := Undefined
	if splitType == CommTypeShared {
		// The colour is the lowest rank of c on the caller's host.
		mine := c.w.rt.Hosts.Name(c.worldRank(c.rank))
		for r := 0; r < c.size; r++ {
			if c.w.rt.Hosts.Name(c.worldRank(r)) == mine {
				color = r
				break
			}
		}
	}
	nc, err := c.ftm().create(c, op, func() (*Comm, error) { return c.split(op, color, key) })
	if nc != nil && err == nil && splitType == CommTypeShared {
		nc.name = "split_type(" + shortName(c) + ", shared)"
	}
	return nc, c.handle(err)
}

// CartMap returns the rank the calling process would have in a Cartesian
// grid of dims over c (MPI_Cart_map): its rank in c if it is among the
// first prod(dims) ranks, Undefined otherwise (ftmpi does not reorder, as
// CartCreate). A dimension < 1 or a grid larger than c is an ErrDims
// error, periods of another length an ErrArg error.
func (c *Comm) CartMap(dims []int, periods []bool) (int, error) {
	const op = "MPI_Cart_map"
	if err := checkLive(c, op); err != nil {
		return 0, err
	}
	n := 1
	for i, d := range dims {
		if d < 1 {
			return 0, c.handle(newErr(ErrDims, op, c, NoPeer, "dims[%d] is %d (dimensions are >= 1)", i, d))
		}
		n *= d
		if n > c.size {
			return 0, c.handle(newErr(ErrDims, op, c, NoPeer, "a grid of %v has more processes than the communicator's %d", dims, c.size))
		}
	}
	if len(periods) != len(dims) {
		return 0, c.handle(newErr(ErrArg, op, c, NoPeer, "%d periods for %d dimensions", len(periods), len(dims)))
	}
	if c.rank < n {
		return c.rank, nil
	}
	return Undefined, nil
}

// GraphMap returns the rank the calling process would have in a graph
// topology of len(index) nodes over c (MPI_Graph_map): its rank in c if
// below the number of nodes, Undefined otherwise. More nodes than
// processes is an ErrArg error.
func (c *Comm) GraphMap(index, edges []int) (int, error) {
	const op = "MPI_Graph_map"
	if err := checkLive(c, op); err != nil {
		return 0, err
	}
	if len(index) > c.size {
		return 0, c.handle(newErr(ErrArg, op, c, NoPeer, "a graph of %d nodes has more nodes than the communicator's %d processes", len(index), c.size))
	}
	for i, x := range index {
		if x < 0 || (i > 0 && x < index[i-1]) {
			return 0, c.handle(newErr(ErrArg, op, c, NoPeer, "index[%d] is %d (index is non-decreasing and >= 0)", i, x))
		}
	}
	if c.rank < len(index) {
		return c.rank, nil
	}
	return Undefined, nil
}

// The predefined attributes MPI_HOST and MPI_IO (MPI-4.1 9.1.2), as ints:
//
//   - AttrHost: ProcNull: ftmpi has no host process.
//   - AttrIO: AnySource: every process may do I/O.
var (
	AttrHost = predefined("MPI_HOST", func(*Comm) any { return ProcNull })
	AttrIO   = predefined("MPI_IO", func(*Comm) any { return AnySource })
)

// InfoEnv returns a new Info describing how the process was started
// (MPI_INFO_ENV, MPI-4.1 11.2.4): "command" (the program), "argv" (its
// arguments, separated by spaces), "maxprocs" (the size of CommWorld),
// "thread_level" ("MPI_THREAD_MULTIPLE") and "host" (the host name).
func (w *World) InfoEnv() *Info {
	i := NewInfo()
	if len(os.Args) > 0 {
		i.Set("command", os.Args[0])
		if len(os.Args) > 1 {
			i.Set("argv", strings.Join(os.Args[1:], " "))
		}
	}
	i.Set("maxprocs", strconv.Itoa(w.size))
	i.Set("thread_level", "MPI_THREAD_MULTIPLE")
	if h, err := os.Hostname(); err == nil {
		i.Set("host", h)
	}
	return i
}

// Idup starts a duplication of c (MPI_Comm_idup, MPI_Comm_idup_with_info
// when withInfo): ftmpi duplicates at the call, as Dup (DupWithInfo) does,
// and returns the new communicator with a request that is already
// complete. The nonblocking form only lets a program overlap the
// duplication with other work, which MPI does not require.
func (c *Comm) Idup(info *Info, withInfo bool) (*Comm, *Request, error) {
	op := "MPI_Comm_idup"
	if withInfo {
		op = "MPI_Comm_idup_with_info"
	}
	if err := checkLive(c, op); err != nil {
		return nil, nil, err
	}
	nc, err := c.ftm().create(c, op, func() (*Comm, error) { return c.dup(op) })
	if err == nil {
		if err = c.dupAttrs(op, nc, info, withInfo); err != nil {
			nc = nil
		}
	}
	if err != nil {
		return nil, nil, c.handle(err)
	}
	req := &Request{c: c, op: op, peer: NoPeer}
	req.finish(emptyStatus(), nil)
	return nc, req, nil
}

// DeleteAttrs deletes every attribute of c, last set first, running their
// delete callbacks; a failing callback stops it with an ErrOther error.
// MPI_Finalize does this on MPI_COMM_SELF before anything else (MPI-4.1
// 11.2.2), so that libraries can hook their clean-up to it.
func (c *Comm) DeleteAttrs() error {
	const op = "MPI_Finalize"
	if err := checkLive(c, op); err != nil {
		return err
	}
	return c.handle(c.freeAttrs(op))
}

// stringTag maps a string tag of the MPI-4 group constructors to a tag of
// CreateGroup (a hash: processes passing equal strings agree on it).
func stringTag(s string) int {
	h := fnv.New32a()
	h.Write([]byte(s))
	return int(h.Sum32() & (1<<30 - 1))
}

// CommCreateFromGroup returns a communicator over the processes of g, in
// g's order (MPI_Comm_create_from_group): collective over the members of
// g only, which pass the same stringtag (concurrent calls with overlapping
// groups must pass different ones). ftmpi has no sessions: g is a group
// of this World's processes (from its communicators). The new
// communicator gets handler h (nil: CommWorld's) and a copy of info.
func (w *World) CommCreateFromGroup(g *Group, stringtag string, info *Info, h *Errhandler) (*Comm, error) {
	c := w.CommWorld()
	nc, err := c.CreateGroup(g, stringTag(stringtag))
	if err != nil {
		return nil, err
	}
	if h != nil {
		nc.SetErrhandler(h)
	}
	nc.SetInfo(info)
	return nc, nil
}

// IntercommCreateFromGroups returns an intercommunicator between the
// processes of local and remote (MPI_Intercomm_create_from_groups): each
// side passes its own group as local, its leader's rank in it, the other
// side as remote with that side's leader's rank in it, and the same
// stringtag. It is collective over both groups, which must be disjoint.
func (w *World) IntercommCreateFromGroups(local *Group, localLeader int, remote *Group, remoteLeader int, stringtag string, info *Info, h *Errhandler) (*Comm, error) {
	const op = "MPI_Intercomm_create_from_groups"
	c := w.CommWorld()
	if remote == nil || remoteLeader < 0 || remoteLeader >= remote.Size() {
		return nil, c.handle(newErr(ErrRank, op, c, NoPeer, "remote leader %d is not a rank of the remote group", remoteLeader))
	}
	lc, err := w.CommCreateFromGroup(local, stringtag, nil, nil)
	if err != nil {
		return nil, err
	}
	defer lc.Free()
	ic, err := IntercommCreate(lc, localLeader, c, remote.procs[remoteLeader], stringTag(stringtag))
	if err != nil {
		return nil, err
	}
	if h != nil {
		ic.SetErrhandler(h)
	}
	ic.SetInfo(info)
	return ic, nil
}
