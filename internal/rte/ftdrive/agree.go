package ftdrive

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/ft/shmagree"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// keepDecided is how many decided agreement instances a communicator keeps
// to answer members that are still running them.
const keepDecided = 16

// AgreeRadix is the radix of the agreement's trees (agree.Config.Radix;
// the same at every process, as it must be). Up to 16 processes the tree
// is flat: with more processes than cores, which is the common case of a
// small job on one host, an agreement costs what it wakes processes, and
// the flat tree wakes each non-root process twice (proposal, decision)
// where the binomial tree wakes inner nodes once more per child; measured
// on 2 cores, Agree went from 2.2-2.3x to 1.8-2.0x the time of an
// Allreduce of 8 bytes at 4 to 16 processes. Larger communicators get
// 16-nomial trees (depth log16 n).
const AgreeRadix = 16

// AgreeEarlyReturn is the default of Agreements.EarlyReturn: off. The
// two-phase variant (agree.Config.EarlyReturn) wakes each non-root process
// once per failure-free agreement instead of twice (np 8 and 16 on 2
// cores: Agree 0.50-0.68x; docs/benchmarks.md, "Recovery costs (issue 28
// item 6)"), but it is not uniform: a process that decided and then
// crashed may have decided otherwise than the survivors. MPI_Comm_validate
// gives "the same group of failed processes to every process" (seed 003
// 17.7.4), and a process that returns from MPI_Comm_shrink with another
// group may send on the new communicator before it dies; with early return
// on, the run-through example 17.8 (TestRunThroughExample17_8Exscan)
// printed the wrong sums in 20 of 300 runs (rank 0, the root, decided,
// returned and was killed before its proposal reached anyone), 0 of 300
// with the uniform protocol. So every agreement stays uniform until the
// variant can be chosen per call kind at every member.
const AgreeEarlyReturn = false

// Agreements drives the agreement instances of one communicator: the
// protocol is the pure state machine of internal/ft/agree; this is its
// I/O. Messages go out as ctl.Agree control frames over the
// communicator's overlay (its members' process ids, sorted), failures
// come in from the engine's lost hook (Lost), and decisions wake the
// caller (Await).
type Agreements struct {
	*Overlay
	known func() []int
	// EarlyReturn selects the two-phase variant for the instances created
	// after it is set (AgreeEarlyReturn by default); every member of the
	// communicator must use the same.
	EarlyReturn bool

	mu    sync.Mutex
	next  uint64 // the instance the next Begin uses
	insts map[uint64]*agreeInst

	seg segUse // the shared-memory fast path (UseSegment)
}

// FastStats counts, in this process, the agreement instances decided on
// a shared segment and those that fell back from it to the protocol
// (tests and benchmarks: the path taken).
var FastStats struct{ Decided, Fallbacks atomic.Uint64 }

// segUse is the fast path's segment of one communicator at one process:
// opened at its first use, closed by Close once no agreement uses it.
type segUse struct {
	mu     sync.Mutex
	name   string // the segment's rendezvous name; "" no fast path
	set    bool   // UseSegment was called
	seg    *shmagree.Seg
	srv    *server // this member made the segment and passes it to the others (segment.go)
	failed error   // the open failed (why): the protocol only
	closed bool
	users  int
}

type agreeInst struct {
	mu         sync.Mutex
	node       *agree.Node
	decided    chan struct{} // closed at the decision
	decideOnce sync.Once
}

// Overlay is one communicator as its fault-tolerance protocols see it:
// its members' process ids, sorted, over which they run, and the means to
// send.
type Overlay struct {
	eng   *p2p.Engine
	ctx   uint32
	self  int   // this process's position in procs
	procs Procs // process ids of the members, sorted
}

// NewOverlay describes the communicator with context ctx whose members
// (both groups of an intercommunicator) are procs; self is this process's
// id.
// Its frames are control frames, posted by the engine (never written
// inline), so a transport callback may send them.
func NewOverlay(eng *p2p.Engine, ctx uint32, self int, procs Procs) *Overlay {
	return &Overlay{eng: eng, ctx: ctx, self: procs.Pos(self), procs: procs}
}

// NewAgreements returns the agreement driver of the communicator ov;
// known returns the process ids known failed (read when an instance is
// created).
func NewAgreements(ov *Overlay, known func() []int) *Agreements {
	return &Agreements{Overlay: ov, known: known, EarlyReturn: AgreeEarlyReturn, insts: make(map[uint64]*agreeInst)}
}

// SegmentFrom is the first agreement instance of a communicator that
// takes the shared segment (UseSegment); the ones before take the message
// protocol. A communicator's first agreement is often its only one (the
// context id of a Dup or Split, a shrunk communicator's first call right
// after a failure), and its members would each create, size and map the
// segment's file inside it, arriving at different times: at np 16 on 2
// cores that first agreement took 1.1-1.4 ms on the segment against
// 0.5-0.6 ms by messages (issue 28, session 17). The instance number is the
// same at every member, so every member takes the same path.
const SegmentFrom = 1

// SegmentFits reports whether a communicator of n members may take the
// agreements' fast path over a shared segment (UseSegment): from 2 to
// shmagree.MaxMembers members.
func SegmentFits(n int) bool { return n >= 2 && n <= shmagree.MaxMembers }

// UseSegment makes the agreements of this communicator try the failure-free
// fast path over the shared segment of rendezvous name name first
// (internal/ft/shmagree), the message protocol being the fallback; name ""
// means never. Only the first call counts; every member should make the
// same choice (one that does not take part makes the others wait
// shmagree.Patience once, then fall back: never a wrong decision). The
// segment is made or passed, and mapped, at the first agreement that
// takes it (or OpenSegment).
func (a *Agreements) UseSegment(name func() string) {
	p := name() // (outside the lock: name may take the caller's locks)
	u := &a.seg
	u.mu.Lock()
	defer u.mu.Unlock()
	if !u.set {
		u.set = true
		u.name = p
	}
}

// SegmentError is why this communicator's segment could not be opened
// (its agreements then take the message protocol only), nil if it was or
// was not tried.
func (a *Agreements) SegmentError() error {
	a.seg.mu.Lock()
	defer a.seg.mu.Unlock()
	return a.seg.failed
}

// segRefusals says once a process that a segment was refused or could
// not be made (not expected: another user's listener on its name, a
// failed memfd); a listener gone with its member is a failure, silent.
var segRefusals sync.Once

// SegmentSet reports whether UseSegment was called.
func (a *Agreements) SegmentSet() bool {
	a.seg.mu.Lock()
	defer a.seg.mu.Unlock()
	return a.seg.set
}

// OpenSegment maps the fast path's segment now (UseSegment having chosen
// one) rather than in the first agreement.
func (a *Agreements) OpenSegment() {
	if a.acquireSeg() != nil {
		a.releaseSeg()
	}
}

// acquireSeg returns the mapped segment (opening it on first use) for one
// agreement, nil if none; releaseSeg must follow.
func (a *Agreements) acquireSeg() *shmagree.Seg {
	u := &a.seg
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.name == "" || u.failed != nil || u.closed {
		return nil
	}
	if u.seg == nil {
		s, srv, err := openSegment(u.name, a.procs.Len(), a.self)
		if err != nil {
			u.failed = err
			if errors.Is(err, errRefused) || errors.Is(err, errMake) {
				segRefusals.Do(func() {
					fmt.Fprintf(os.Stderr, "ftmpi: process %d: the agreements' shared segment of a communicator: %v; its agreements use messages\n", a.procs.At(a.self), err)
				})
			}
			return nil
		}
		u.seg, u.srv = s, srv
	}
	u.users++
	return u.seg
}

func (a *Agreements) releaseSeg() {
	u := &a.seg
	u.mu.Lock()
	defer u.mu.Unlock()
	u.users--
	if u.closed && u.users == 0 && u.seg != nil {
		u.seg.Close()
		u.seg = nil
	}
}

// wakeSeg rings the segment's doorbell (a failure became known).
func (a *Agreements) wakeSeg() {
	u := &a.seg
	u.mu.Lock()
	if u.seg != nil && !u.closed {
		u.seg.Wake()
	}
	u.mu.Unlock()
}

// Close drops the fast path's segment's rendezvous name (if this member
// still serves it) and unmaps it once no agreement uses it (the
// communicator is freed: its context id may be reused by the same
// members, who must not find the old segment).
func (a *Agreements) Close() {
	u := &a.seg
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return
	}
	u.closed = true
	if u.srv != nil {
		u.srv.stop()
		u.srv = nil
	}
	if u.seg != nil && u.users == 0 {
		u.seg.Close()
		u.seg = nil
	}
}

// instanceLocked returns (creating) instance seq, and the messages its
// creation produced (to be sent by the caller); a.mu held.
func (a *Agreements) instanceLocked(seq uint64) (*agreeInst, []agree.Msg) {
	var msgs []agree.Msg
	in := a.insts[seq]
	if in == nil {
		in = &agreeInst{node: agree.New(agree.Config{Self: a.self, N: a.procs.Len(), Instance: seq, Radix: AgreeRadix, EarlyReturn: a.EarlyReturn}),
			decided: make(chan struct{})}
		a.insts[seq] = in
		// Failures known before the instance existed.
		var idx []int
		for _, p := range a.known() {
			if i, ok := a.procs.Index(p); ok {
				idx = append(idx, i)
			}
		}
		msgs = append(msgs, in.node.FailedAll(idx)...)
		// Forget old instances (a decided node is needed only while its
		// members may still be running it): a look at every instance once
		// the map holds twice the kept number, not at every instance (a
		// failure-free agreement on a shared segment costs a few µs, and
		// this look was a tenth of it).
		if len(a.insts) > 2*keepDecided {
			for s, old := range a.insts {
				if s+keepDecided < seq && old.isDecided() {
					delete(a.insts, s)
				}
			}
		}
	}
	return in, msgs
}

// Lost tells every agreement instance about the failure of process peer -
// also the decided ones and those no caller waits on any more: a decided
// node re-sends its decision along its new tree when its failure
// knowledge changes, and a member that did not get the decision from the
// failed process depends on that (Await feeds only the instance it runs).
// It may be called from a transport callback.
func (a *Agreements) Lost(peer int) { a.LostAll([]int{peer}) }

// LostAll is Lost for several processes whose failures became known at
// once (p2p.Engine.FailPeers): each instance takes them in one step
// (agree.Node.FailedAll), so it sends nothing on the way to a process of
// the batch.
func (a *Agreements) LostAll(peers []int) {
	var idx []int
	for _, p := range peers {
		if i, ok := a.procs.Index(p); ok {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	a.mu.Lock()
	insts := make([]*agreeInst, 0, len(a.insts))
	for _, in := range a.insts {
		insts = append(insts, in)
	}
	a.mu.Unlock()
	var out []agree.Msg
	for _, in := range insts {
		in.mu.Lock()
		out = append(out, in.node.FailedAll(idx)...)
		decided := in.node.Decided()
		in.mu.Unlock()
		if decided {
			in.markDecided()
		}
	}
	if len(out) > 0 {
		a.send(out)
	}
	a.wakeSeg()
}

// send sends agreement messages (never from a transport callback).
func (a *Agreements) send(msgs []agree.Msg) {
	for _, m := range msgs {
		h := transport.Header{Tag: int32(ctl.Agree), Ctx: a.ctx, Seq: m.Instance}
		_ = a.eng.SendControl(a.procs.At(m.To), h, agree.EncodeMsg(m))
	}
}

// Step handles a ctl.Agree frame for this communicator from process from
// (from a transport callback, or from the caller for a parked frame).
// Malformed messages and messages from non-members are dropped.
func (a *Agreements) Step(from int, h transport.Header, payload []byte) {
	m, err := agree.DecodeMsg(payload)
	if err != nil {
		return
	}
	// The message must be the sender's own, for the instance its header
	// names (a member cannot speak for another).
	if i, ok := a.procs.Index(from); !ok || m.From != i || m.Instance != h.Seq {
		return
	}
	a.mu.Lock()
	in, out := a.instanceLocked(h.Seq)
	a.mu.Unlock()
	in.mu.Lock()
	out = append(out, in.node.Step(m)...)
	decided := in.node.Decided()
	in.mu.Unlock()
	if decided {
		in.markDecided()
	}
	if len(out) > 0 {
		a.send(out)
	}
}

func (in *agreeInst) isDecided() bool {
	select {
	case <-in.decided:
		return true
	default:
		return false
	}
}

// markDecided closes decided once; the transport goroutine (Step) and the
// caller (Await) may both see the decision.
func (in *agreeInst) markDecided() {
	in.decideOnce.Do(func() { close(in.decided) })
}

// Begin opens this process's next agreement instance on the communicator
// (every member opens them in the same order) and returns its number.
func (a *Agreements) Begin() uint64 {
	a.mu.Lock()
	seq := a.next
	a.next++
	if seq >= SegmentFrom && a.segOn() {
		// The instance's node is made only if the segment does not decide
		// (Await) or a frame of it arrives (Step): a node, its channel
		// and its map entry were a tenth of a failure-free agreement on
		// the segment (issue 28, session 17), and a node made later takes
		// the failures known then (instanceLocked), as LostAll would have
		// told it.
		a.mu.Unlock()
		return seq
	}
	_, early := a.instanceLocked(seq)
	a.mu.Unlock()
	a.send(early)
	return seq
}

// segOn reports whether the agreements may take the segment (UseSegment
// chose one, it did not fail to open, the communicator is not closed).
func (a *Agreements) segOn() bool {
	u := &a.seg
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.name != "" && u.failed == nil && !u.closed
}

// Await contributes v to instance seq (opened by Begin) and waits for the
// decision: the combined value and the overlay positions of the
// contributors. failed returns the process ids of the members known
// failed; it is read once, at the start. Failures after that reach the
// instance through Lost, which the engine's lost hook calls for every
// failure (the detector is perfect: every failure is notified), and which
// marks the decision a failure completes: Await is not woken by each
// failure of the job (with f failures among n processes in one address
// space that was n·f wake-ups for nothing). ok is false if abort or stop
// closed first.
func (a *Agreements) Await(seq uint64, v agree.Value, failed func() []int, abort, stop <-chan struct{}) (val agree.Value, contrib agree.Set, ok bool) {
	var fs agree.Set
	for _, p := range failed() {
		if i, ok := a.procs.Index(p); ok {
			fs.Add(i)
		}
	}
	if seq < SegmentFrom {
		// (no segment: the instance number is the same at every member)
	} else if seg := a.acquireSeg(); seg != nil {
		known := func(j int) bool { return fs.Has(j) || a.eng.IsLost(a.procs.At(j)) }
		val, o, err := seg.Agree(seq, v, known, abort, stop)
		a.releaseSeg()
		if err != nil {
			return agree.Value{}, agree.Set{}, false
		}
		if o == shmagree.Decided {
			// Every member decides this (the entries' final states), and
			// none runs the protocol for seq: the instance's node stays
			// unstarted and sends nothing.
			FastStats.Decided.Add(1)
			a.mu.Lock()
			in := a.insts[seq] // (made only if a frame of seq arrived)
			a.mu.Unlock()
			if in != nil {
				in.markDecided()
			}
			var all agree.Set
			for i := range a.procs.Len() {
				all.Add(i)
			}
			return val, all, true
		}
		FastStats.Fallbacks.Add(1)
	}
	a.mu.Lock()
	in, early := a.instanceLocked(seq)
	a.mu.Unlock()
	a.send(early)
	in.mu.Lock()
	out := in.node.Start(v, fs)
	decided := in.node.Decided()
	in.mu.Unlock()
	a.send(out)
	if decided {
		in.markDecided()
	}
	select {
	case <-in.decided:
		in.mu.Lock()
		val, contrib, _ := in.node.Decision()
		in.mu.Unlock()
		return val, contrib, true
	case <-abort:
		return agree.Value{}, agree.Set{}, false
	case <-stop:
		return agree.Value{}, agree.Set{}, false
	}
}
