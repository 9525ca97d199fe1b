package mpi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/rte/sparedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// MPI_Reinit without a head (issue 14: srun or mpiexec with
// FTMPI_REINIT=1 and FTMPI_SPARES=K). No launcher can start a process, so
// the new incarnation of a failed rank is a waiting spare, and no head
// announces epochs or exchanges endpoints, so the processes do both:
//
//  1. A rank's failure (the lost hook) ends the epoch at every survivor
//     that is inside Reinit, as the head's announcement does (outside:
//     seed 000 1.4.2, the job is aborted). The epoch's engine and
//     transport stay open: they carry the rest.
//  2. The failure round: the survivors agree (internal/ft/agree, over a
//     communicator of the ranks kept for it) on the failed processes, the
//     union of what each knew plus those that did not contribute;
//     reincarnate.Decide turns that and the State every live process holds
//     into the same Plan everywhere (a spare per failed rank, the next
//     epoch), or into ErrNoSpare at every survivor.
//  3. Every survivor sends the Plan's next State to every spare (the taken
//     ones and those still waiting); a spare takes the first copy.
//  4. Every member of the next epoch (ranks, taken and waiting spares)
//     opens a fresh engine and transport (new sockets, new shared memory:
//     nothing of the old epoch can be matched in the new one) and sends its
//     new endpoint to every other member over the old epoch's connections;
//     it opens the epoch once each member's endpoint arrived or the member
//     is known failed, or after half a heartbeat timeout, without the
//     missing ones (failed in the new epoch's engine and announced: a
//     failure of the new epoch, which a next round repairs). Process ids stay the PMI ranks in every epoch;
//     a failed process never comes back, so no id is reused.
//  5. The old epoch's World is retired (its goroutines stopped, its frames
//     dropped) but its connections are kept until the process opens the
//     epoch after (every member of that one has left this one) or
//     finalizes: closing them earlier would look like a death to a member
//     still waiting for this process's endpoint.
//
// A failure during a round is either in its agreement (agreed or not, as
// the agreement says), or after it: then it is a failure of the next
// epoch, which starts another round there. Nothing waits without a
// failure detector or a deadline.

// Kinds of ctl.Reinit frames (Header.B); Header.A is the next epoch.
const (
	hrDecide   = 1 // to a spare: the next State (reincarnate.State.Encode)
	hrEndpoint = 2 // to a member of the next epoch: the sender's endpoint there (JSON)
	hrEnd      = 3 // to a waiting spare: no epoch follows, the payload says why
)

// roundCtxPair is the context pair of the ranks' failure-round
// communicator, claimed in every World with a headless Reinit state (the
// last pair: communicator creation never picks a pair that is in use).
const roundCtxPair = ctxPairs - 1

// hreinit is a process's headless Reinit state, shared by the Worlds of
// its epochs.
type hreinit struct {
	mu    sync.Mutex
	state reincarnate.State
	eps   map[int]map[int]boot.Endpoint // by epoch, by process id: the endpoints received for that epoch
	wake  chan struct{}                 // signalled (capacity 1) when an endpoint arrives
	prev  *World                        // the retired World whose connections are still kept
}

// newHReinit is the state of the start described by info.
func newHReinit(info boot.Info) *hreinit {
	var pool []int
	for i := info.WorldSize(); i < info.Size; i++ {
		pool = append(pool, i)
	}
	return &hreinit{state: reincarnate.Initial(info.WorldSize(), pool), wake: make(chan struct{}, 1)}
}

// newRoundComm sets up the ranks' failure-round communicator of w: CommWorld's
// processes on a reserved context pair (never the user's: a round must
// not mix with an agreement the program left unfinished on CommWorld).
func (w *World) newRoundComm() {
	w.ctxTable().claim([]int{roundCtxPair})
	c := w.world
	w.round = newComm(&Comm{w: w, name: "ftmpi Reinit round", ctx: 2 * roundCtxPair, rank: c.rank, size: c.size, members: c.members})
	w.round.errh.Store(ErrorsReturn)
	w.registerComm(w.round)
}

// hreinitLost ends w's epoch when a rank failed (the lost hook), if this
// process is inside Reinit; outside, the failure has no rollback location
// and the job is aborted (seed 000 1.4.2, as ftmpirun does).
func (w *World) hreinitLost(peer int) {
	hr, p := w.hr, w.proc
	if hr == nil || p == nil || w.round == nil || w.ended.Load() || w.finalized.Load() || !w.round.hasWorldRank(peer) || p.Current() != w {
		return
	}
	if w.fenceFinished(peer) {
		return // it entered MPI_Finalize: its end is no failure to recover
	}
	hr.mu.Lock()
	inside := p.Inside()
	if inside {
		p.Advance(w.epoch+1, fmt.Sprintf("process %d failed", peer))
	}
	hr.mu.Unlock()
	if inside {
		return
	}
	msg := fmt.Sprintf("process %d failed while rank %d is outside MPI_Reinit: no rollback location (seed 000, 1.4.2)", peer, w.world.rank)
	go func() {
		fmt.Fprintf(os.Stderr, "ftmpi: %s; aborting the job\n", msg)
		_ = p.Abort(1, msg)
		os.Exit(1)
	}()
}

// leave marks this process out of Reinit as fn returned in cur, unless
// cur's epoch ended meanwhile (then it rolls back with the others). One
// lock with hreinitLost: a failure is either before (rollback) or after
// (fatal), never lost in between.
func (hr *hreinit) leave(p *process, cur *World) bool {
	hr.mu.Lock()
	defer hr.mu.Unlock()
	if cur.ended.Load() {
		return false
	}
	p.SetActive(false)
	return true
}

// roundNeeds reports whether a broken connection to peer still matters
// after w's epoch ended: during the failure round and the exchange, until
// peer's endpoint of the next epoch arrived.
func (w *World) roundNeeds(peer int) bool {
	hr := w.hr
	if hr == nil || w.retired.Load() {
		return false
	}
	hr.mu.Lock()
	defer hr.mu.Unlock()
	_, have := hr.eps[w.epoch+1][peer]
	return !have
}

// onHReinit handles a ctl.Reinit frame (on a transport goroutine: it
// records and signals, never blocks nor sends).
func (w *World) onHReinit(from int, h transport.Header, payload []byte) {
	hr := w.hr
	if hr == nil {
		fmt.Fprintf(os.Stderr, "ftmpi: process %d: a Reinit frame from process %d without FTMPI_REINIT=1 here: dropped\n", w.rank, from)
		return
	}
	switch h.B {
	case hrEndpoint:
		var ep boot.Endpoint
		if err := json.Unmarshal(payload, &ep); err != nil || h.A > 1<<30 {
			fmt.Fprintf(os.Stderr, "ftmpi: process %d: malformed endpoint from process %d dropped: %v\n", w.rank, from, err)
			return
		}
		ep.Rank = from
		hr.mu.Lock()
		if hr.eps == nil {
			hr.eps = make(map[int]map[int]boot.Endpoint)
		}
		e := int(h.A)
		if hr.eps[e] == nil {
			hr.eps[e] = make(map[int]boot.Endpoint)
		}
		hr.eps[e][from] = ep
		hr.mu.Unlock()
		select {
		case hr.wake <- struct{}{}:
		default:
		}
	case hrDecide, hrEnd:
		if !w.spares.IsSpare() {
			return // a rank decides itself
		}
		var o sparedrive.Outcome
		if h.B == hrEnd {
			o.Ended = string(payload)
		} else {
			st, err := reincarnate.DecodeState(payload)
			if err != nil {
				fmt.Fprintf(os.Stderr, "ftmpi: process %d: malformed Reinit decision from process %d dropped: %v\n", w.rank, from, err)
				return
			}
			hr.mu.Lock()
			stale := st.Epoch <= hr.state.Epoch
			hr.mu.Unlock()
			if stale {
				return // another survivor's copy of a decision taken already
			}
			o.Next = &st
		}
		w.spares.Offer(o) // the first copy wins; never blocks the transport
	default:
		fmt.Fprintf(os.Stderr, "ftmpi: process %d: Reinit frame of unknown kind %d from process %d dropped\n", w.rank, h.B, from)
	}
}

// reinitHeadless is Reinit without a head (see the top of this file).
func reinitHeadless(w *World, fn func(ctx context.Context, w *World, state ReinitState) error) error {
	const op = "MPI_Reinit"
	p, hr := w.proc, w.hr
	if err := p.BeginReinit(w); err != nil {
		return newErr(ErrOther, op, nil, NoPeer, "%v", err)
	}
	state := ReinitNew
	if p.Info().Incarnation > 0 {
		state = ReinitRestarted
	}
	cur := w
	for {
		if !cur.ended.Load() {
			p.SetRunning(cur.epoch)
			rolled, err := runResilient(fn, cur, state)
			if !rolled {
				cur.phase(inject.PhaseReinitReturn)
			}
			if !rolled && hr.leave(p, cur) {
				cur.phase(inject.PhaseReinitLeft)
				return err
			}
			state = ReinitReinited
		}
		next, err := hr.round(p, cur)
		if err != nil {
			p.SetActive(false)
			return newErr(ErrOther, op, nil, NoPeer, "%v", err)
		}
		next.world.errh.Store(cur.world.errh.Load())
		next.self.errh.Store(cur.self.errh.Load())
		next.world.codec.Store(cur.world.codec.Load())
		next.self.codec.Store(cur.self.codec.Load())
		cur = next
	}
}

// round is the failure round of a survivor whose epoch old ended: the
// agreement, the decision, the spares told, the next epoch opened.
func (hr *hreinit) round(p *process, old *World) (*World, error) {
	<-old.abort // ended (the lost hook ends it before anything unwinds)
	next, err := hr.decide(old)
	if err != nil {
		return nil, err
	}
	return hr.join(p, old, next)
}

// decide is the round's agreement and decision at a survivor whose epoch
// old ended, and the telling of the spares: the next epoch's State, or
// the error (ErrNoSpare) every survivor gets.
func (hr *hreinit) decide(old *World) (reincarnate.State, error) {
	failed, err := old.agreeFailed()
	if err != nil {
		return reincarnate.State{}, err
	}
	hr.mu.Lock()
	st := hr.state.Clone()
	hr.mu.Unlock()
	if slices.Contains(failed, old.rank) {
		// The others count this process failed (they suspected it during
		// the round): fail-stop, it must not go on.
		headlessExit(old.rank, old.proc.RemoveDir)("declared failed by the others in the Reinit failure round")
	}
	plan, derr := reincarnate.Decide(st, failed)
	if derr != nil {
		for _, s := range st.Pool {
			if !slices.Contains(failed, s) {
				_ = old.eng.SendControl(s, transport.Header{Tag: int32(ctl.Reinit), B: hrEnd, A: uint64(st.Epoch + 1)}, []byte(derr.Error()))
			}
		}
		return reincarnate.State{}, derr
	}
	enc := plan.Next.Encode(nil)
	for _, t := range plan.Takes {
		_ = old.eng.SendControl(t.Proc, transport.Header{Tag: int32(ctl.Reinit), B: hrDecide, A: uint64(plan.Next.Epoch)}, enc)
	}
	for _, s := range plan.Next.Pool {
		_ = old.eng.SendControl(s, transport.Header{Tag: int32(ctl.Reinit), B: hrDecide, A: uint64(plan.Next.Epoch)}, enc)
	}
	return plan.Next, nil
}

// agreeFailed is the round's agreement among w's ranks: the process ids
// known failed at some contributor, and the ranks that did not
// contribute.
func (w *World) agreeFailed() ([]int, error) {
	c := w.round
	f := w.ftOf(c)
	var v agree.Value
	for p := 0; p < w.size; p++ {
		if p != w.rank && w.eng.IsLost(p) {
			v.Union.Add(p)
		}
	}
	// Not w.abort: it is closed (the epoch ended); the round still runs.
	val, contrib, ok := c.awaitAgreement(v, nil)
	if !ok {
		return nil, errors.New("the failure round's agreement was stopped")
	}
	var failed []int
	for p := 0; p < w.size; p++ {
		if val.Union.Has(p) {
			failed = append(failed, p)
		}
	}
	for i := range f.procs.Len() {
		if p := f.procs.At(i); !contrib.Has(i) && !slices.Contains(failed, p) {
			failed = append(failed, p)
		}
	}
	slices.Sort(failed)
	return failed, nil
}

// join opens the epoch next describes for this process (a survivor, a
// taken spare or a waiting one), whose World of the ending epoch is old,
// and retires old.
func (hr *hreinit) join(p *process, old *World, next reincarnate.State) (*World, error) {
	self := old.rank
	rank, spare := next.Role(self)
	if rank < 0 && !spare {
		// The survivors agreed that this process failed (a spare
		// suspected while they decided): fail-stop.
		headlessExit(self, p.RemoveDir)(fmt.Sprintf("not in Reinit epoch %d: the survivors count it failed", next.Epoch))
	}
	// From here on the old epoch serves the exchange only: a peer that
	// has sent its endpoint and retired its connections is not a failure
	// worth ending this process for (the new epoch enforces fail-stop).
	old.fails.Headless(func(string) {}, p.Confirm(old.net))
	hr.mu.Lock()
	hr.state = next.Clone()
	hr.mu.Unlock()
	if rank >= 0 && p.Info().Rank != rank {
		p.Adopt(rank, next.Inc[rank], next.Epoch) // a spare taken as rank's new incarnation
	}
	// A member that sends no endpoint within half a heartbeat timeout is
	// left out (and announced failed): the members already in the new
	// epoch run their detectors, which would declare a member still
	// waiting here failed after one timeout (a member that died after
	// reaching some members only is seen dead by nobody else).
	timeout := old.cfg.HeartbeatTimeout / 2
	if timeout <= 0 {
		timeout = old.activationTimeout()
	}
	p.SetRejoin(func(epoch int, ep boot.Endpoint) ([]boot.Endpoint, []int, error) {
		return hr.exchange(old, next, epoch, ep, timeout)
	})
	lay := &epochLayout{members: next.Procs, wrank: max(rank, 0), pool: next.Pool, isSpare: spare}
	nw, err := openEpoch(p, next.Epoch, old.cfg, hr, lay)
	if err != nil {
		return nil, err
	}
	old.retire()
	hr.mu.Lock()
	prev := hr.prev
	hr.prev = old
	delete(hr.eps, next.Epoch)
	hr.mu.Unlock()
	if prev != nil {
		// Every member of the new epoch sent its endpoint over old's
		// connections, so none is still in prev's epoch.
		prev.release()
	}
	p.Install(nw, nw.epoch)
	// The members this process opened the epoch without are failed here
	// only: tell the others (they may have their endpoints and count them
	// alive; a death right after sending its endpoint is seen by nobody
	// else, and the detector's observer of it may be this process).
	for _, m := range next.Members() {
		if m != self && nw.eng.IsLost(m) {
			nw.fails.Announce(m, fmt.Sprintf("left out of Reinit epoch %d (no endpoint)", next.Epoch))
		}
	}
	// A rank lost before nw was current (left out by the exchange, or
	// failed as the epoch opened) found no current World in the lost hook:
	// its failure ends nw now (from here on the hook does it).
	if nw.round != nil {
		for _, m := range nw.round.memberWorldRanks() {
			if nw.eng.IsLost(m) {
				nw.hreinitLost(m)
			}
		}
	}
	return nw, nil
}

// exchange sends this process's endpoint of the next epoch to every other
// member over old's connections and collects theirs (reincarnate.Rejoined
// says when it is over and who the epoch starts without).
func (hr *hreinit) exchange(old *World, next reincarnate.State, epoch int, self boot.Endpoint, timeout time.Duration) ([]boot.Endpoint, []int, error) {
	if epoch != next.Epoch {
		return nil, nil, fmt.Errorf("internal error: exchange for epoch %d, decided %d", epoch, next.Epoch)
	}
	b, err := json.Marshal(self)
	if err != nil {
		return nil, nil, fmt.Errorf("encode endpoint: %w", err)
	}
	for _, q := range next.Members() {
		if q != old.rank {
			_ = old.eng.SendControl(q, transport.Header{Tag: int32(ctl.Reinit), B: hrEndpoint, A: uint64(epoch)}, b)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	timedOut := false
	for {
		sig := old.eng.FailureSignal()
		hr.mu.Lock()
		got := hr.eps[epoch]
		have := func(p int) bool { _, ok := got[p]; return ok }
		done, dead := reincarnate.Rejoined(next, old.size, old.rank, have, old.eng.IsLost, timedOut)
		var eps []boot.Endpoint
		if done {
			eps = make([]boot.Endpoint, old.size)
			for p := range eps {
				eps[p] = got[p] // the zero Endpoint for the dead
				eps[p].Rank = p
			}
			eps[old.rank] = self
		}
		hr.mu.Unlock()
		if done {
			return eps, dead, nil
		}
		select {
		case <-hr.wake:
		case <-sig:
		case <-deadline.C:
			timedOut = true
		}
	}
}

// retire ends what is left of w after the next epoch opened: its
// goroutines stop and frames are dropped; its connections stay open until
// release.
func (w *World) retire() {
	w.retired.Store(true)
	w.stopBG()
}

// releasePrev closes the connections of the retired epoch (Finalize).
func (hr *hreinit) releasePrev() {
	hr.mu.Lock()
	prev := hr.prev
	hr.prev = nil
	hr.mu.Unlock()
	if prev != nil {
		prev.release()
	}
}
