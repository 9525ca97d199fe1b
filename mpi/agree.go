package mpi

import (
	"slices"
	"sync"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// keepDecided is how many decided agreement instances a communicator keeps
// to answer members that are still running them.
const keepDecided = 16

// agreeRadix is the radix of the agreement's trees (agree.Config.Radix;
// the same at every process, as it must be). Up to 16 processes the tree
// is flat: with more processes than cores, which is the common case of a
// small job on one host, an agreement costs what it wakes processes, and
// the flat tree wakes each non-root process twice (proposal, decision)
// where the binomial tree wakes inner nodes once more per child; measured
// on 2 cores, Agree went from 2.2-2.3x to 1.8-2.0x the time of an
// Allreduce of 8 bytes at 4 to 16 processes. Larger communicators get
// 16-nomial trees (depth log16 n).
const agreeRadix = 16

// agreeState drives the agreement instances of one communicator. The
// protocol itself is the pure state machine of internal/ft/agree; this is
// its I/O: messages go out as control frames, failures come in from the
// engine's lost hook, and decisions wake the caller.
type agreeState struct {
	next  uint64 // the instance the next Agree/Shrink on this communicator uses
	insts map[uint64]*agreeInst
}

type agreeInst struct {
	mu         sync.Mutex
	node       *agree.Node
	started    bool
	decided    chan struct{} // closed at the decision
	decideOnce sync.Once
}

// instanceLocked returns (creating) instance seq of f, and the messages
// its creation produced (to be sent by the caller); f.mu held.
func (f *commFT) instanceLocked(w *World, seq uint64) (*agreeInst, []agree.Msg) {
	var msgs []agree.Msg
	if f.agree == nil {
		f.agree = &agreeState{insts: make(map[uint64]*agreeInst)}
	}
	in := f.agree.insts[seq]
	if in == nil {
		in = &agreeInst{node: agree.New(agree.Config{Self: f.index[w.rank], N: len(f.overlay), Instance: seq, Radix: agreeRadix}),
			decided: make(chan struct{})}
		f.agree.insts[seq] = in
		// Failures known before the instance existed.
		for _, p := range w.failedOrder() {
			if i, ok := f.index[p]; ok {
				msgs = append(msgs, in.node.Failed(i)...)
			}
		}
		// Forget old instances (a decided node is needed only while its
		// members may still be running it).
		for s, old := range f.agree.insts {
			if s+keepDecided < seq && old.isDecided() {
				delete(f.agree.insts, s)
			}
		}
	}
	return in, msgs
}

// agreeOnLost tells every agreement instance of the communicators that
// contain peer about its failure - also the decided ones and those no
// caller waits on any more: a decided node re-sends its decision along
// its new tree when its failure knowledge changes, and a member that did
// not get the decision from the failed process depends on that (the
// caller's loop in agreeOn feeds only the instance it runs).
func (w *World) agreeOnLost(comms []*commFT, peer int) {
	for _, f := range comms {
		i, ok := f.index[peer]
		if !ok {
			continue
		}
		f.mu.Lock()
		var insts []*agreeInst
		if f.agree != nil {
			for _, in := range f.agree.insts {
				insts = append(insts, in)
			}
		}
		f.mu.Unlock()
		var out []agree.Msg
		for _, in := range insts {
			in.mu.Lock()
			out = append(out, in.node.Failed(i)...)
			in.mu.Unlock()
		}
		if len(out) > 0 {
			f := f
			w.sendAgree(f, out)
		}
	}
}

// sendAgree queues agreement messages of communicator f (safe from a
// transport callback: control frames are posted, never written inline).
func (w *World) sendAgree(f *commFT, msgs []agree.Msg) {
	for _, m := range msgs {
		h := transport.Header{Tag: ctlAgree, Ctx: f.c.ctx, Seq: m.Instance}
		_ = w.eng.SendControl(f.overlay[m.To], h, agree.EncodeMsg(m))
	}
}

func (w *World) onAgreeMsg(from int, h transport.Header, payload []byte) {
	f := w.commFTByCtx(h.Ctx)
	if f == nil {
		// The communicator is not known here yet: keep the message until it is.
		w.parkAgreeMsg(from, h, payload)
		return
	}
	w.stepAgree(f, from, h, payload)
}

func (w *World) stepAgree(f *commFT, from int, h transport.Header, payload []byte) {
	m, err := agree.DecodeMsg(payload)
	if err != nil {
		return
	}
	if _, ok := f.index[from]; !ok {
		return
	}
	f.mu.Lock()
	in, out := f.instanceLocked(w, h.Seq)
	f.mu.Unlock()
	in.mu.Lock()
	out = append(out, in.node.Step(m)...)
	decided := in.node.Decided()
	in.mu.Unlock()
	if decided {
		in.markDecided()
	}
	if len(out) > 0 {
		w.sendAgree(f, out)
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

// markDecided closes decided once; the transport goroutine (stepAgree) and
// the caller (agreeOn) may both see the decision.
func (in *agreeInst) markDecided() {
	in.decideOnce.Do(func() { close(in.decided) })
}

// parkAgreeMsg keeps agreement messages for a communicator this process has
// not set up yet (a fast member may start an agreement on a communicator
// before a slow one registered it).
func (w *World) parkAgreeMsg(from int, h transport.Header, payload []byte) {
	w.ft.mu.Lock()
	defer w.ft.mu.Unlock()
	if w.ft.parked == nil {
		w.ft.parked = make(map[uint32][]parkedMsg)
	}
	w.ft.parked[h.Ctx] = append(w.ft.parked[h.Ctx], parkedMsg{from, h, slices.Clone(payload)})
}

type parkedMsg struct {
	from    int
	h       transport.Header
	payload []byte
}

// agreeOn runs one agreement instance on c with contribution v and returns
// the decision: the combined value and the overlay indices of the
// contributors.
func (c *Comm) agreeOn(op string, v agree.Value) (agree.Value, agree.Set, error) {
	w := c.w
	f := w.ftOf(c)
	f.mu.Lock()
	if f.agree == nil {
		f.agree = &agreeState{insts: make(map[uint64]*agreeInst)}
	}
	seq := f.agree.next
	f.agree.next++
	in, early := f.instanceLocked(w, seq)
	f.mu.Unlock()
	w.sendAgree(f, early)
	// Messages that arrived before this communicator was registered.
	w.ft.mu.Lock()
	parked := w.ft.parked[c.ctx]
	delete(w.ft.parked, c.ctx)
	w.ft.mu.Unlock()
	for _, p := range parked {
		w.stepAgree(f, p.from, p.h, p.payload)
	}

	var failed agree.Set
	for _, p := range c.failedMembers() {
		failed.Add(f.index[p])
	}
	in.mu.Lock()
	in.started = true
	out := in.node.Start(v, failed)
	decided := in.node.Decided()
	in.mu.Unlock()
	w.sendAgree(f, out)
	if decided {
		in.markDecided()
	}
	for {
		sig := w.eng.FailureSignal()
		// Failures that happened since the last look.
		var msgs []agree.Msg
		in.mu.Lock()
		for _, p := range c.failedMembers() {
			msgs = append(msgs, in.node.Failed(f.index[p])...)
		}
		done := in.node.Decided()
		in.mu.Unlock()
		w.sendAgree(f, msgs)
		if done {
			in.markDecided()
		}
		select {
		case <-in.decided:
			in.mu.Lock()
			val, contrib, _ := in.node.Decision()
			in.mu.Unlock()
			return val, contrib, nil
		case <-sig:
		case <-w.abort:
			return agree.Value{}, agree.Set{}, w.abortedErr(op, c)
		case <-w.stop:
			// Finalized (or, in process, killed and finalized by Run): a
			// nonblocking agreement still running in the background ends.
			return agree.Value{}, agree.Set{}, w.abortedErr(op, c)
		}
	}
}

// Agree performs a fault-tolerant agreement on flag over c
// (MPI_Comm_agree, seed 002 A.2.4): it returns the logical AND of the flags
// of the live processes. It completes despite failures, also on a revoked
// communicator, and never raises ErrRevoked. If a process failed before
// contributing and its failure was not acknowledged (FailureAck) by every
// participant, every participant gets ErrProcFailed (uniformly), together
// with the agreed flag.
func (c *Comm) Agree(flag bool) (bool, error) {
	var bits uint64
	if flag {
		bits = 1
	}
	out, err := c.AgreeBits(bits)
	return out&1 == 1, err
}

// AgreeBits is Agree on a 64-bit integer: the result is the bitwise AND of
// the contributions (MPI_Comm_agree's integer form).
func (c *Comm) AgreeBits(flags uint64) (uint64, error) {
	const op = "MPI_Comm_agree"
	if err := checkComm(c, op); err != nil {
		return 0, err
	}
	v, err := c.agreeBits(op, flags)
	return v, c.handle(err)
}

// agreeBits runs the agreement and returns the raw error.
func (c *Comm) agreeBits(op string, flags uint64) (uint64, error) {
	f := c.w.ftOf(c)
	var v agree.Value
	v.Flags = flags
	for _, p := range c.failedMembers() {
		v.Union.Add(f.index[p])
	}
	f.mu.Lock()
	for _, p := range f.acked {
		v.Inter.Add(f.index[p])
	}
	f.mu.Unlock()
	// Run-through (seed 003): failures recognised by Validate count as
	// acknowledged (the recognised set is the same at every process).
	if rt := c.rt.Load(); rt != nil {
		for _, p := range rt.snap.Load().recognized {
			v.Inter.Add(f.index[p])
		}
	}
	// On an intercommunicator each group learns the AND of the *remote*
	// group's flags (seed 002 A.3.1). Each group's flags travel in their
	// own 64 positions of Inter (above the acknowledged set), the other
	// group's positions set to 1, so intersecting gives each group's AND.
	var mine, remote int
	if c.IsInter() {
		n := len(f.overlay)
		mine, remote = n, n+64
		if !slices.Contains(c.memberWorldRanks(), f.overlay[0]) {
			mine, remote = remote, mine
		}
		for b := 0; b < 64; b++ {
			if flags&(1<<b) != 0 {
				v.Inter.Add(mine + b)
			}
			v.Inter.Add(remote + b)
		}
		v.Flags = ^uint64(0)
	}
	// Inter is intersected over the contributors: a failure is in the
	// decided Inter only if every contributor had acknowledged it.
	val, contrib, err := c.agreeOn(op, v)
	if err != nil {
		return 0, err
	}
	result := val.Flags
	if c.IsInter() {
		result = 0
		for b := 0; b < 64; b++ {
			if val.Inter.Has(remote + b) {
				result |= 1 << b
			}
		}
	}
	for i := range f.overlay {
		if !contrib.Has(i) && !val.Inter.Has(i) {
			return result, newErr(ErrProcFailed, op, c, NoPeer,
				"process %d failed before contributing and not every process acknowledged it", f.overlay[i])
		}
	}
	return result, nil
}

// Iagree starts a nonblocking agreement (MPI_Comm_iagree); once the request
// completes, *result holds the agreed flag.
func (c *Comm) Iagree(flag bool, result *bool) (*Request, error) {
	const op = "MPI_Comm_iagree"
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if result == nil {
		return nil, c.handle(newErr(ErrArg, op, c, NoPeer, "nil result pointer"))
	}
	var bits uint64
	if flag {
		bits = 1
	}
	return c.startColl(op, func() error {
		v, err := c.agreeBits(op, bits)
		*result = v&1 == 1
		return err
	}), nil
}
