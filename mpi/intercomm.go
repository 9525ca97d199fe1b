package mpi

import (
	"encoding/binary"
	"fmt"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// Intercommunicators. An intercommunicator joins two disjoint groups; a
// process's rank and size are those of its local group, and the ranks of
// point-to-point calls name processes of the remote group. Each
// intercommunicator owns two context-id pairs, agreed by both groups: one
// for the traffic between the groups (ctx: user messages, ctx+1: the
// leaders' internal exchanges) and one for an internal intracommunicator
// over the local group (c.local), which the intercommunicator collectives
// and management use within a group. The leader of a group is its rank 0.

// interLink ties the two groups of an intercommunicator (or of one being
// built) for internal agreement: loc spans the local group, cross joins
// the local leader to the remote leader.
type interLink struct {
	c      *Comm // named in errors
	op     string
	loc    *coll.Set
	leader int // index of the local leader in loc
	cross  *coll.Set
	remote int // index of the remote leader in cross
}

func (l *interLink) isLeader() bool { return l.loc.Me == l.leader }

// link returns the interLink of intercommunicator c with internal tags.
func (c *Comm) link(op string, tagLocal, tagCross int32) *interLink {
	loc := internalSet(c, op, c.local.ctx+1, tagLocal, c.local.rank, c.local.size, c.local.members)
	cross := internalSet(c, op, c.ctx+1, tagCross, c.rank, len(c.remote), c.remote)
	return &interLink{c: c, op: op, loc: loc, leader: 0, cross: cross, remote: 0}
}

func (l *interLink) leaderFailed() error {
	return newErr(ErrOther, l.op, l.c, NoPeer, "the exchange between the leaders of the two groups failed")
}

// and ANDs words over both groups; every process gets the result.
func (l *interLink) and(words []uint64) error {
	ext := make([]uint64, len(words)+1)
	copy(ext, words)
	ext[len(words)] = 1 // status: 0 if the leaders' exchange failed
	if err := l.loc.ReduceAND(ext, l.leader); err != nil {
		return err
	}
	var ferr error
	if l.isLeader() {
		tmp := make([]uint64, len(ext))
		if _, ferr = l.cross.SendRecv(l.remote, asBytes(ext), asBytes(tmp)); ferr == nil {
			for i := range ext {
				ext[i] &= tmp[i]
			}
		} else {
			ext[len(words)] = 0
		}
	}
	if l.loc.N > 1 {
		if err := l.loc.BcastTree(asBytes(ext), l.leader); err != nil {
			return err
		}
	}
	if ferr != nil {
		return ferr
	}
	if ext[len(words)] != 1 {
		return l.leaderFailed()
	}
	copy(words, ext)
	return nil
}

// swap sends out (the leader's) to the remote group and returns the remote
// leader's out to every local process; n is the size the remote sends.
func (l *interLink) swap(out []byte, n int) ([]byte, error) {
	buf := make([]byte, 1+n) // status byte, then the remote data
	var ferr error
	if l.isLeader() {
		var got int
		got, ferr = l.cross.SendRecv(l.remote, out, buf[1:])
		if ferr == nil && got != n {
			ferr = newErr(ErrIntern, l.op, l.c, NoPeer, "remote leader sent %d bytes, expected %d", got, n)
		}
		if ferr == nil {
			buf[0] = 1
		}
	}
	if l.loc.N > 1 {
		if err := l.loc.BcastTree(buf, l.leader); err != nil {
			return nil, err
		}
	}
	if ferr != nil {
		return nil, ferr
	}
	if buf[0] != 1 {
		return nil, l.leaderFailed()
	}
	return buf[1:], nil
}

// newInter builds this process's intercommunicator from agreed pairs.
func newInter(parent *Comm, name string, pairs []int, members, remote []int, rank int) *Comm {
	// Complete before registerComm publishes it: a revocation arriving on
	// a transport goroutine reads remote and local (a data race otherwise).
	ic := newComm(&Comm{w: parent.w, ctx: uint32(2 * pairs[0]), rank: rank, size: len(members), members: members,
		owned: true, name: name, remote: remote})
	ic.errh.Store(parent.errh.Load())
	ic.codec.Store(parent.codec.Load())
	ic.local = newDerived(parent, name+".local", pairs[1], members, rank)
	parent.w.chkPrivate(ic.local, "local") // check.go: freed with ic, never listed
	parent.w.registerComm(ic)
	return ic
}

func seedFor(tag int) uint64 { return uint64(tag&(1<<30-1)) | 1<<63 }

// IntercommCreate builds an intercommunicator from two disjoint groups
// (MPI_Intercomm_create). Each group calls it on its local
// intracommunicator local with the same localLeader (a rank of local);
// the two leaders must both be members of peer, and each leader passes
// the other's rank in peer as remoteLeader (checked only at the leaders)
// and the same tag. The leaders exchange the groups over peer (on an
// internal context: tag does not interfere with user messages) and then
// broadcast within local. The result inherits local's error handler.
func IntercommCreate(local *Comm, localLeader int, peer *Comm, remoteLeader, tag int) (*Comm, error) {
	const op = "MPI_Intercomm_create"
	if err := checkLive(local, op); err != nil {
		return nil, err
	}
	if local.IsInter() {
		return nil, local.handle(newErr(ErrComm, op, local, NoPeer, "the local communicator must be an intracommunicator"))
	}
	if localLeader < 0 || localLeader >= local.size {
		return nil, local.handle(newErr(ErrRank, op, local, localLeader, "local leader %d out of range [0, %d)", localLeader, local.size))
	}
	if err := local.checkSendTag(op, tag, NoPeer); err != nil {
		return nil, local.handle(err)
	}
	loc := collSet(local, op, tagInterLocal)
	l := &interLink{c: local, op: op, loc: loc, leader: localLeader}
	mine := local.groupProcs()

	// The leaders check their arguments and swap group sizes; the outcome
	// reaches every local process, so all of them fail or none.
	hdr := make([]byte, 16) // status, remote size
	var lerr error
	if l.isLeader() {
		lerr = func() error {
			if err := checkLive(peer, op); err != nil {
				return err
			}
			if remoteLeader < 0 || remoteLeader >= peer.peerSize() {
				return newErr(ErrRank, op, peer, remoteLeader, "remote leader %d out of range [0, %d) of the peer communicator", remoteLeader, peer.peerSize())
			}
			if peer.peerWorldRank(remoteLeader) == local.w.rank {
				return newErr(ErrRank, op, peer, remoteLeader, "remote leader %d is the local leader itself: the groups must be disjoint", remoteLeader)
			}
			procs := peer.members
			if peer.IsInter() {
				procs = peer.remote
			}
			l.cross = internalSet(local, op, peer.ctx+1, intercommTag(tag), peer.rank, peer.peerSize(), procs)
			l.remote = remoteLeader
			out := putInts(int64(len(mine)))
			in := make([]byte, 8)
			if _, err := l.cross.SendRecv(remoteLeader, out, in); err != nil {
				return err
			}
			copy(hdr[8:], in)
			return nil
		}()
		if lerr == nil {
			hdr[0] = 1
		}
	}
	if loc.N > 1 {
		if err := loc.BcastTree(hdr, localLeader); err != nil {
			return nil, local.handle(err)
		}
	}
	if lerr != nil {
		return nil, local.handle(lerr)
	}
	if hdr[0] != 1 {
		return nil, local.handle(newErr(ErrArg, op, local, localLeader, "the local leader (rank %d) rejected its arguments", localLeader))
	}
	nRemote := int(getInt(hdr, 1))

	// The remote group's world ranks.
	raw, err := l.swap(putIntSlice(mine), 8*nRemote)
	if err != nil {
		return nil, local.handle(err)
	}
	remote := make([]int, nRemote)
	for i := range remote {
		remote[i] = int(getInt(raw, i))
	}
	mineG := local.Group()
	for i, p := range remote {
		if mineG.contains(p) {
			return nil, local.handle(newErr(ErrGroup, op, local, NoPeer,
				"remote group member %d (world rank %d) is also in the local group: the groups must be disjoint", i, p))
		}
	}
	if local.w.net != nil {
		if err := l.swapEndpoints(local.w, mine); err != nil { // intercomm_eps.go
			return nil, local.handle(err)
		}
	}

	pairs, err := ctxAgreement(local.w, local, op, 2, seedFor(tag), true, l.and)
	if err != nil {
		return nil, local.handle(err)
	}
	name := fmt.Sprintf("intercomm(%s)", shortName(local))
	return newInter(local, name, pairs, mine, remote, local.rank), nil
}

func putIntSlice(v []int) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// interDup duplicates intercommunicator c (MPI_Comm_dup): same groups,
// new contexts agreed by both groups.
func (c *Comm) interDup(op string) (*Comm, error) {
	lc := c
	if v := c.ftm().alive(c); v != nil {
		lc = v // run-through with recognised failures: the alive processes agree
	}
	l := lc.link(op, tagInterLocal, tagInterCross)
	pairs, err := ctxAgreement(c.w, c, op, 2, uint64(c.ctx)|1<<61, true, l.and)
	if err != nil {
		return nil, err
	}
	return newInter(c, derivedName("dup", c), pairs, c.groupProcs(), c.remote, c.rank), nil
}

// Merge returns an intracommunicator over both groups of intercommunicator
// c (MPI_Intercomm_merge). The group whose processes pass high=false
// comes first; all processes of a group must pass the same value, and if
// both groups pass the same value, the group whose leader has the lower
// CommWorld rank comes first. It is collective over both groups and
// inherits c's error handler.
func (c *Comm) Merge(high bool) (mc *Comm, err error) {
	const op = "MPI_Intercomm_merge"
	if end := c.traceRepair(rte.RepairMerge, nil); end != nil {
		defer func() { end(err) }()
	}
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if !c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "not an intercommunicator"))
	}
	merge := func() (*Comm, error) {
		lc := c
		if v := c.ftm().alive(c); v != nil {
			lc = v // run-through with recognised failures: the alive processes agree
		}
		l := lc.link(op, tagInterLocal, tagInterCross)
		h := int64(0)
		if high {
			h = 1
		}
		mine := c.groupProcs()
		raw, err := l.swap(putInts(h, int64(mine[0])), 16)
		if err != nil {
			return nil, err
		}
		rHigh, rLeader := getInt(raw, 0) != 0, int(getInt(raw, 1))
		first := !high
		if high == rHigh {
			first = mine[0] < rLeader
		}
		pairs, err := ctxAgreement(c.w, c, op, 1, uint64(c.ctx)|1<<60, true, l.and)
		if err != nil {
			return nil, err
		}
		members := make([]int, 0, len(mine)+len(c.remote))
		rank := c.rank
		if first {
			members = append(append(members, mine...), c.remote...)
		} else {
			members = append(append(members, c.remote...), mine...)
			rank += len(c.remote)
		}
		return newDerived(c, derivedName("merge", c), pairs[0], members, rank), nil
	}
	nc, err := c.ftm().create(c, op, merge)
	return nc, c.handle(err)
}
