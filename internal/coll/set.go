// Package coll is the collective engine: the participants of one
// collective call (a Set), the algorithms (barrier, broadcast, reduction,
// gather, scatter, all-to-all, scan and their variants, on byte views of
// typed buffers), and the choice among them; and the hierarchical path of
// a communicator spanning hosts (hierpath.go): whether a call takes it
// (HierUse) and its steps, each an algorithm of this package over a
// subset of the members on the call's own Net, composed by
// internal/coll/hier; and the shared-memory path of a communicator on one
// host (shmpath.go): whether a call takes it (ShmUse), the communicator's
// segment set up within its first such call (ShmPath), the calls on it
// through internal/coll/shmcoll, the rejection of a call, the waits'
// environment (the failures, revocations, abort and context cut that end
// a wait, watched through ShmEngine and the caller's ShmComm; the call
// table's record of a blocked wait) and the process's doorbell watcher
// (ShmHost, the one goroutine of this package); and the view of a
// communicator's alive members that the run-through model's collectives
// run on (view.go: View, the arguments and blocks moved onto it).
//
// It talks to the point-to-point layer only through the Net interface
// (start a send or a receive of a byte buffer to a member, wait for it,
// cancel it), and the shared-memory path's waits watch the engine's
// failure state only through ShmEngine, so it knows nothing of
// communicators, error classes or the fault-tolerance models: the caller
// (package mpi) builds a Set for each call (ShmComm.ShmSet on the
// shared-memory path) and turns the errors into its own (ShmComm.ShmErr).
//
// Every choice of algorithm depends only on values every member agrees on:
// the set's size, the byte counts and the root of the call, and Crowded and
// OneHost, which the caller computes from the launcher's data (ranks per
// host and the host's cores) identically at every member. It must never read the local
// process's CPU count, affinity or GOMAXPROCS: members that chose
// different algorithms for one call would wait for each other forever.
//
// The package holds no per-job state but pools of scratch buffers and
// what the caller keeps for it (a communicator's ShmPath, a process's
// ShmHost).
package coll

// Req is a started send or receive, as Net returns it.
type Req any

// Net is the point-to-point layer as the collectives of one Set see it.
// Members are addressed by their index in the set; the implementation maps
// an index to a process with Set.Proc and sends on Set.Ctx with Set.Tag
// and Set.DT. Errors it returns are final (already in the caller's terms).
type Net interface {
	// Isend starts sending b to member to. A nil Req means the send is
	// already complete (b may be reused).
	Isend(s *Set, to int, b []byte) (Req, error)
	// Irecv starts receiving from member from into b.
	Irecv(s *Set, from int, b []byte) (Req, error)
	// Wait waits for r, a request with member peer, releases it and
	// returns the bytes received. A failure of any member of s must
	// complete it with an error (a collective never waits forever).
	Wait(s *Set, r Req, peer int) (int, error)
	// Cancel cancels a posted receive; it still has to be waited for.
	Cancel(r Req)
	// Mismatch is the error of a receive from peer of got bytes where the
	// call's arguments imply want (the members passed different counts).
	Mismatch(s *Set, peer, got, want int) error
}

// Set is the participants of one collective call: N members, this one
// being Me, exchanging messages on one context and tag.
type Set struct {
	Net   Net
	Ctx   uint32 // context of every message of the call
	Tag   int32  // tag of every message (see Tag and Phase2)
	Sig   Sig    // signature of the call carried by the messages (0: none, not checked; see sig.go)
	ESize int    // element size: blocks are split on element boundaries
	Me, N int
	Procs []int // process of each member index; nil: the identity

	p2 *Set // room for the second phase's Set (Call), so phase2 does not allocate

	// The two bytes last, beside each other: a Set is 96 bytes, as it was
	// before it carried Sig.
	DT      uint8 // element type code carried by the messages
	Crowded bool  // some host runs more members than it has cores (see package comment)
	OneHost bool  // every member runs on one host (as the launcher told every member)
}

// Call is a Set with room for the Set of its second phase (a composite
// algorithm's messages use a second tag): one allocation per call.
type Call struct {
	Set    Set
	second Set
}

// Init links the room for the second phase and returns the call's Set;
// call it after filling c.Set.
func (c *Call) Init() *Set {
	c.Set.p2 = &c.second
	return &c.Set
}

// Proc is the process of member i.
func (s *Set) Proc(i int) int {
	if s.Procs == nil {
		return i
	}
	return s.Procs[i]
}

// Kinds of collective calls (in their signatures, Sig).
const (
	KBarrier = 1 + iota
	KBcast
	KReduce
	KAllreduce
	KGather
	KGatherv
	KScatter
	KScatterv
	KAllgather
	KAllgatherv
	KAlltoall
	KAlltoallv
	KReduceScatter
	KReduceScatterBlock
	KScan
	KExscan
	KNeighborAllgather
	KNeighborAllgatherv
	KNeighborAlltoall
	KNeighborAlltoallv
	kPhase2 = 64 // added to a kind for the second phase of a composite algorithm
)

// Tag is the tag of the collective call with sequence number seq in tag
// space sp (KColl, KInter+kind): sp<<24 | seq mod 2^24. Every member
// numbers the collective calls of a communicator in the same order, so
// consecutive and concurrent (nonblocking) collectives never match each
// other's messages. Tags below 1<<24 (negative ones included) are left for
// other internal protocols.
func Tag(sp int, seq uint32) int32 { return int32(sp)<<24 | int32(seq&(1<<24-1)) }

// phase2 returns a copy of s whose messages use a distinct tag. The
// phases of one call run one after the other, so the copies share one
// room (Call) when there is one.
func (s *Set) phase2() *Set {
	y := s.p2
	if y == nil {
		y = new(Set)
	}
	*y = *s
	y.p2 = nil
	y.Tag += kPhase2 << 24
	return y
}

// ReduceFn combines byte views of element slices: inout = in ∘ inout.
type ReduceFn func(in, inout []byte)

// ReduceFn4 is the four-input form of a ReduceFn f, for the operations
// that have one (the predefined sum): inout = a ∘ (b ∘ (c ∘ (d ∘ inout)))
// in one pass, each element's operations those of f(d, inout), f(c,
// inout), f(b, inout), f(a, inout) in that order (the same result, bit
// for bit). It has no MPI counterpart.
type ReduceFn4 func(a, b, c, d, inout []byte)

func (s *Set) isend(to int, b []byte) (Req, error)   { return s.Net.Isend(s, to, b) }
func (s *Set) irecv(from int, b []byte) (Req, error) { return s.Net.Irecv(s, from, b) }

func (s *Set) waitSend(r Req, to int) error {
	if r == nil {
		return nil
	}
	_, err := s.Net.Wait(s, r, to)
	return err
}

// waitRecv waits for a receive; want >= 0 is the exact byte count the
// call's arguments imply.
func (s *Set) waitRecv(r Req, from, want int) (int, error) {
	got, err := s.Net.Wait(s, r, from)
	if err == nil && want >= 0 && got != want {
		err = s.Net.Mismatch(s, from, got, want)
	}
	return got, err
}

// Send sends b to member to and waits until b may be reused.
func (s *Set) Send(to int, b []byte) error {
	r, err := s.isend(to, b)
	if err != nil {
		return err
	}
	return s.waitSend(r, to)
}

// Recv receives from member from into b and returns the byte count (any
// count up to len(b)).
func (s *Set) Recv(from int, b []byte) (int, error) {
	r, err := s.irecv(from, b)
	if err != nil {
		return 0, err
	}
	return s.waitRecv(r, from, -1)
}

// recv receives exactly len(b) bytes from member from.
func (s *Set) recv(from int, b []byte) error {
	r, err := s.irecv(from, b)
	if err != nil {
		return err
	}
	_, err = s.waitRecv(r, from, len(b))
	return err
}

// SendRecv sends out to member peer while receiving from it into in,
// whatever the sizes, and returns the byte count received (up to len(in)).
func (s *Set) SendRecv(peer int, out, in []byte) (int, error) {
	return s.exchange(peer, out, peer, in, -1)
}

// sendrecv sends sb to dest while receiving exactly len(rb) bytes from src.
func (s *Set) sendrecv(dest int, sb []byte, src int, rb []byte) error {
	_, err := s.exchange(dest, sb, src, rb, len(rb))
	return err
}

func (s *Set) exchange(dest int, sb []byte, src int, rb []byte, want int) (int, error) {
	rr, err := s.irecv(src, rb)
	if err != nil {
		return 0, err
	}
	sr, err := s.isend(dest, sb)
	if err != nil {
		s.Net.Cancel(rr)
		s.Net.Wait(s, rr, src)
		return 0, err
	}
	err = s.waitSend(sr, dest)
	got, err2 := s.waitRecv(rr, src, want)
	if err == nil {
		err = err2
	}
	return got, err
}

// pending is a set of outstanding requests of one collective.
type pending struct {
	reqs  []Req
	peers []int
	want  []int // -1 for sends, the expected bytes (or -2: any) for receives
}

func (s *Set) postRecv(pd *pending, src int, b []byte, exact bool) error {
	r, err := s.irecv(src, b)
	if err != nil {
		return err
	}
	w := len(b)
	if !exact {
		w = -2
	}
	pd.reqs, pd.peers, pd.want = append(pd.reqs, r), append(pd.peers, src), append(pd.want, w)
	return nil
}

func (s *Set) postSend(pd *pending, dest int, b []byte) error {
	r, err := s.isend(dest, b)
	if err != nil {
		return err
	}
	if r != nil {
		pd.reqs, pd.peers, pd.want = append(pd.reqs, r), append(pd.peers, dest), append(pd.want, -1)
	}
	return nil
}

// waitAll waits for every request and returns the first error.
func (s *Set) waitAll(pd *pending) error {
	var first error
	for i, r := range pd.reqs {
		var err error
		switch w := pd.want[i]; {
		case w == -1:
			err = s.waitSend(r, pd.peers[i])
		case w == -2:
			_, err = s.waitRecv(r, pd.peers[i], -1)
		default:
			_, err = s.waitRecv(r, pd.peers[i], w)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	pd.reqs, pd.peers, pd.want = pd.reqs[:0], pd.peers[:0], pd.want[:0]
	return first
}

// cancelAll cancels posted receives after a failure to post more, and
// waits for everything posted.
func (s *Set) cancelAll(pd *pending) {
	for i, r := range pd.reqs {
		if pd.want[i] != -1 {
			s.Net.Cancel(r)
		}
	}
	s.waitAll(pd)
}
