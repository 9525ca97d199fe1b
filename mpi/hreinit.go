package mpi

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/ftmpi/ftmpi/internal/rte"
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

// roundCtxPair is the context pair of the ranks' failure-round
// communicator, claimed in every World with a headless Reinit state (the
// last pair: communicator creation never picks a pair that is in use).
const roundCtxPair = ctxPairs - 1

// hreinit is a process's headless Reinit state, shared by the Worlds of
// its epochs: the runtime's driver (rte.HeadlessReinit: the State, the
// ctl.Reinit frames, the decision and the exchange) and what the World
// decides about itself.
type hreinit struct {
	d *rte.HeadlessReinit

	mu   sync.Mutex // orders a failure against leaving Reinit (hreinitLost, leave)
	prev *World     // the retired World whose connections are still kept
}

// driver is hr's driver (nil without headless Reinit).
func (hr *hreinit) driver() *rte.HeadlessReinit {
	if hr == nil {
		return nil
	}
	return hr.d
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
		w.logf("%s; aborting the job", msg)
		_ = p.Abort(1, msg)
		w.diag().Exit(1)
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
	if hr == nil || w.rt.Retired() {
		return false
	}
	return !hr.d.HasEndpoint(w.epoch+1, peer)
}

// reinitHeadless is Reinit without a head (see the top of this file).
func reinitHeadless(w *World, fn func(ctx context.Context, w *World, state ReinitState) error) error {
	const op = "MPI_Reinit"
	p, hr := w.proc, w.hr
	if err := p.BeginReinit(w); err != nil {
		return newErr(ErrOther, op, nil, NoPeer, "%v", err)
	}
	state := ReinitNew
	if p.Incarnation() > 0 {
		state = ReinitRestarted
	}
	cur := w
	for {
		if !cur.ended.Load() {
			p.SetRunning(cur.epoch)
			rolled, err := runResilient(fn, cur, state)
			if !rolled {
				cur.phase(rte.PhaseReinitReturn)
			}
			if !rolled && hr.leave(p, cur) {
				cur.phase(rte.PhaseReinitLeft)
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
// old ended, and the telling of the spares (the driver's Decide): the
// next epoch's State, or the error (ErrNoSpare) every survivor gets.
func (hr *hreinit) decide(old *World) (rte.ReinitState, error) {
	failed, err := old.agreeFailed()
	if err != nil {
		return rte.ReinitState{}, err
	}
	next, err := hr.d.Decide(old.eng, failed)
	if errors.Is(err, rte.ErrDeclaredFailed) {
		// Fail-stop: it must not go on.
		headlessExit(old.diag(), old.rank, old.proc.RemoveDir)(err.Error())
	}
	return next, err
}

// agreeFailed is the round's agreement among w's ranks: the process ids
// known failed at some contributor, and the ranks that did not
// contribute.
func (w *World) agreeFailed() ([]int, error) {
	c := w.round
	var known []int
	for p := 0; p < w.size; p++ {
		if p != w.rank && w.eng.IsLost(p) {
			known = append(known, p)
		}
	}
	// Not w.abort: it is closed (the epoch ended); the round still runs.
	// The round's members are the epoch's ranks 0..size-1 (a world), so
	// the failed set is the ranks known failed at some contributor and
	// those that did not contribute, sorted.
	failed, err := w.ftOf(c).d.AgreeFailed(rte.AgreeKindOf("MPI_Reinit", rte.StepFailed), known, nil, nil)
	if errors.Is(err, rte.ErrAgreeStopped) {
		return nil, errors.New("the failure round's agreement was stopped")
	}
	if err != nil {
		return nil, err // (the round's communicator runs this agreement alone)
	}
	return failed, nil
}

// join opens the epoch next describes for this process (a survivor, a
// taken spare or a waiting one), whose World of the ending epoch is old,
// and retires old.
func (hr *hreinit) join(p *process, old *World, next rte.ReinitState) (*World, error) {
	self := old.rank
	rank, spare := next.Role(self)
	if rank < 0 && !spare {
		// The survivors agreed that this process failed (a spare
		// suspected while they decided): fail-stop.
		headlessExit(old.diag(), self, p.RemoveDir)(fmt.Sprintf("not in Reinit epoch %d: the survivors count it failed", next.Epoch))
	}
	// From here on the old epoch serves the exchange only: a peer that
	// has sent its endpoint and retired its connections is not a failure
	// worth ending this process for (the new epoch enforces fail-stop).
	old.rt.Fails.Headless(func(string) {}, p.Confirm(old.net))
	hr.d.SetState(next)
	if rank >= 0 && p.Rank() != rank {
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
	p.RejoinThrough(hr.d, old.eng, old.size, next, timeout)
	lay := &rte.Layout{Members: next.Procs, WRank: max(rank, 0), Pool: next.Pool, IsSpare: spare}
	nw, err := openEpoch(p, next.Epoch, old.cfg, hr, lay)
	if err != nil {
		return nil, err
	}
	old.retire()
	hr.mu.Lock()
	prev := hr.prev
	hr.prev = old
	hr.mu.Unlock()
	hr.d.Forget(next.Epoch)
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
			nw.rt.Fails.Announce(m, fmt.Sprintf("left out of Reinit epoch %d (no endpoint)", next.Epoch))
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

// retire ends what is left of w after the next epoch opened: its
// goroutines stop and frames are dropped; its connections stay open until
// release.
func (w *World) retire() {
	w.rt.Retire()
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
