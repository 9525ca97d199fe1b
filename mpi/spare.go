package mpi

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// Spare processes (Fenix's idea; ftmpirun --spares K, RunSpares): the
// last K processes of a start set wait inside Init, reachable by every
// process (they took part in the endpoint exchange) but in no CommWorld,
// until a repair (Comm.Replace) takes them as the replacements of failed
// ranks, or the job ends without needing them. The spare's side of the
// protocol is the pure machine of internal/ft/spare, driven by
// internal/rte/sparedrive (ctl.Spare frames, the pool, activations); the
// survivors' side is Comm.Replace, whose agreements and leader's picks
// the runtime runs (rte.CommFT: AgreeFailed, Replace) and which decides
// the survivors and context ids and builds the repaired communicator.

// spareState is a World's part in spares besides the runtime's driver
// (rte.Rank.Spares, internal/rte/sparedrive: the spare's machine, the
// pool, activations; rte.Rank.AwaitSpare: the spare's wait): what the
// World's own goroutines read.
type spareState struct {
	// isSpare: this World waits in Init as a spare (set at the start,
	// cleared by becomeRank; read and written by the Init goroutine only:
	// other goroutines ask the driver, IsSpare).
	isSpare bool
}

// launcherTake is the launcher's activation of a spare (rte.Hooks.Spare,
// --on-failure reinit): it becomes incarnation inc of rank and joins
// Reinit epoch epoch.
type launcherTake struct {
	rank, inc, epoch int
	next             *rte.ReinitState // without a head: the ranks' decision of a new epoch (hreinit.go); the other fields unused
}

// inEpoch reports whether process p is in w's Reinit epoch (a spare of
// another epoch is the launcher's to release).
func (w *World) inEpoch(p int) bool {
	if w.net == nil {
		return true
	}
	return w.net.Known(p)
}

// errSpareReleased is what awaitActivation returns when the job ended
// without needing the spare.
var errSpareReleased = errors.New("spare released: the job ended without needing it")

// errSpareOrphaned: the spare leaves as a failed process.
var errSpareOrphaned = errors.New("spare orphaned: every survivor of the repair that held it failed")

// errSpareEnded: the ranks cannot continue (headless Reinit with no
// spare left for every failed rank); the spare leaves as a failed process.
var errSpareEnded = errors.New("the job cannot continue")

// awaitActivation is a spare's wait inside Init (the runtime's:
// rte.Rank.AwaitSpare). It returns nil when a repair took the spare
// (CommWorld is then the repaired communicator, and Replacement returns
// it), the launcher's take (the caller opens the rank's epoch),
// errSpareReleased when the job ended without needing it,
// errSpareOrphaned when it must leave as a failed process, or the job's
// abort.
func (w *World) awaitActivation() (*launcherTake, error) {
	res := w.rt.AwaitSpare(w.abort)
	switch res.End {
	case rte.SpareRepaired:
		return nil, w.becomeRank(res.Act.Name, res.Act.Pair, res.Act.Members, res.Act.Rank)
	case rte.SpareLauncherTake:
		return &launcherTake{rank: res.Take.Rank, inc: res.Take.Inc, epoch: res.Take.Epoch}, nil
	case rte.SpareNextEpoch:
		return &launcherTake{next: res.Next}, nil
	case rte.SpareEnded:
		return nil, fmt.Errorf("%w: %s", errSpareEnded, res.Reason)
	case rte.SpareOrphaned:
		return nil, errSpareOrphaned
	case rte.SpareAborted:
		return nil, w.abortedErr("MPI_Init", nil)
	}
	return nil, errSpareReleased
}

// becomeRank makes an activated spare a member of the repaired
// communicator: it claims the agreed context pair (free at a spare: it
// never created a communicator) and the communicator becomes its
// CommWorld.
func (w *World) becomeRank(name string, pair int, members []int, rank int) error {
	w.rt.TraceSpareTaken(name, rank)
	if !w.ctxTable().claim([]int{pair}) {
		return fmt.Errorf("the context id %d of the repaired communicator is in use", pair)
	}
	nc := newDerived(w.world, name, pair, members, rank)
	w.rt.Spares.Promote()
	w.spares.isSpare = false
	w.replacement = nc
	w.world = nc
	return nil
}

// Replacement returns the communicator this process joined as the
// replacement of a failed rank (the newcomer's side of MPIX_Comm_replace,
// the ULFM tutorials' helper; Comm.Replace): a spare that a repair took
// returns from Init with it as CommWorld, and Replacement tells it apart
// from a process that started as a rank (nil), so that it restores its
// state from the others instead of starting afresh.
func (w *World) Replacement() *Comm { return w.replacement }

// Spares returns the spare processes this process still counts as
// available (process ids): no MPI counterpart (Fenix's spare pool).
func (w *World) Spares() []int { return w.rt.Spares.Available() }

// releaseSpares tells every spare this rank knows of that the job ends
// (called by Finalize): a waiting spare leaves Init; a held or taken one
// ignores it.
func (w *World) releaseSpares() { w.rt.Spares.Release() }

// replaceAttempts bounds how often Replace starts over after a failure
// during the repair or a spare that another repair took first.
const replaceAttempts = 16

// errRetryReplace: the survivors agreed to abandon this attempt.
var errRetryReplace = errors.New("repair attempt abandoned")

// Replace repairs c after failures and returns a communicator with c's
// size in which every survivor keeps its rank and every failed rank is
// taken by a new process: MPIX_Comm_replace (the ULFM tutorials' helper;
// no MPI standard function). It revokes c, agrees on the failed ranks,
// takes spare processes for them (ftmpirun --spares, RunSpares) or, when
// none are left, spawns them as spares (Spawn's path, under ftmpirun
// only), and builds the new communicator over them in c's rank order
// (directly: no shrunk communicator, merge or split unless it spawns); the
// new processes return from Init with it as CommWorld (World.Replacement).
// It is collective over c's survivors.
//
// Its outcome is uniform, by agreement: every survivor gets the same new
// communicator, or every survivor gets the same error. A failure during
// the repair, or a spare that another repair took first (a spare is never
// taken twice: it accepts one activation only), starts it over, up to 16
// times. With no failed process it returns a duplicate of c.
// Errors: ErrSpawn when no spare is left and processes cannot be spawned
// (under mpi.Run, or the launcher refused), ErrProcFailed after too many
// attempts.
func (c *Comm) Replace() (rc *Comm, err error) {
	const op = "MPIX_Comm_replace"
	if end := c.traceRepair(rte.RepairReplace, nil); end != nil {
		defer func() { end(err) }()
	}
	if err := checkComm(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, c.handle(newErr(ErrComm, op, c, NoPeer, "Replace needs an intracommunicator"))
	}
	var last error
	for attempt := 0; attempt < replaceAttempts; attempt++ {
		nc, err := c.replaceOnce(op)
		if err == nil {
			return nc, nil
		}
		if !errors.Is(err, errRetryReplace) {
			return nil, c.handle(err)
		}
		last = err
	}
	return nil, c.handle(newErr(ErrProcFailed, op, c, NoPeer, "%d attempts abandoned, the last: %v", replaceAttempts, last))
}

// replaceOnce is one attempt of Replace: two fault-tolerant agreements
// over c (revoked) decide it, so every survivor goes on or starts over
// with the others.
//
//  1. The first decides who failed and which context-id pairs are free at
//     every survivor (as Shrink's): every survivor derives the same
//     survivors, failed ranks, leader (the lowest surviving rank) and two
//     pairs, the repaired communicator's and a shrunk one's (used only
//     when spawning), and claims both.
//  2. The leader picks spares from its pool and activates them (the
//     others are already in the second agreement meanwhile); the second
//     agreement ANDs the claims and carries the leader's word: the key of
//     the attempt, its pick, how many must be spawned, whether every
//     picked spare accepted and which may serve again. If every survivor
//     contributed, every claim held and every spare accepted, the attempt
//     commits: the repaired communicator is built directly from the agreed
//     members (no merge, no split). If spares were missing, the shrunk
//     communicator spawns the rest (replaceSpawn). Else it is abandoned;
//     when the leader failed before contributing, nobody knows whom it
//     activated, and every survivor sends Drop to every spare it knows.
//
// The spare side and the second agreement (picks, activations, the
// leader's word and its codec, the outcome told to the spares) are the
// runtime's: rte.CommFT.Replace, over sparedrive.Repair.
// Why two agreements, not one (issue 28 item 6): the picks need the
// agreed failed ranks (a survivor's own list may miss a failure another
// saw) and the activations the agreed pair; whether every picked spare
// accepted is then known at the leader alone and must reach the others
// uniformly even if the leader or a spare fails meanwhile, which is what
// the second agreement is (a spare's answer sent to every survivor is not
// uniform when the spare fails between two of them).
func (c *Comm) replaceOnce(op string) (*Comm, error) {
	w := c.w
	_ = c.Revoke()
	b := c.base
	t := w.ctxTable()
	seed := uint64(b.ctx) ^ 0x5265706c
	window, dead, start, err := b.agreeDeadAndFree(op, seed)
	w0 := start / 64
	if err != nil {
		return nil, err
	}
	old := c.groupProcs()
	var survivors, lost []int // process ids, old ranks
	for r, p := range old {
		if _, isDead := slices.BinarySearch(dead, p); isDead {
			w.recordFailure(p) // known here from now on, as after Shrink
			lost = append(lost, r)
		} else {
			survivors = append(survivors, p)
		}
	}
	me := slices.Index(survivors, w.rank)
	if me < 0 {
		return nil, newErr(ErrIntern, op, c, NoPeer, "this process is not among the survivors")
	}
	var pairs []int
	claimed := true
	if rel := pickPairs(window, 2, start%64); rel != nil {
		pairs = []int{(w0*64 + rel[0]) % ctxPairs, (w0*64 + rel[1]) % ctxPairs}
		claimed = t.claim(pairs) // checked by the second agreement
	} else {
		// Rare: no pair free at every survivor in the window. The general
		// context-id agreement (its ANDs fault-tolerant agreements too).
		if pairs, err = ctxAgreement(w, b, op, 2, seed+1, true, b.agreedAnd(op)); err != nil {
			if isFailure(err) {
				return nil, fmt.Errorf("%w: context ids: %v", errRetryReplace, err)
			}
			return nil, err
		}
	}
	call := rte.ReplaceCall{Pair: pairs[0], Members: old, Lost: lost, Survivors: survivors,
		Name: derivedName("replace", c), Claimed: claimed, Timeout: w.activationTimeout()}
	if h := w.replaceHook; h != nil {
		call.Activated = func() { h("activated") }
	}
	a, step, err := w.ftOf(b).d.Replace(call, w.abort)
	if err != nil {
		if claimed {
			t.release(pairs...)
		}
		return nil, b.agreeErr(op, err)
	}
	switch step {
	case rte.ReplaceLeaderGone:
		// The leader failed before it contributed: its attempt cannot
		// commit, and nobody knows whom it activated (every spare this
		// process knows was told to drop it).
		if claimed {
			t.release(pairs...)
		}
		return nil, fmt.Errorf("%w: the leader failed during the repair", errRetryReplace)
	case rte.ReplaceSpawn:
		return c.replaceSpawn(op, a, call, pairs, me)
	case rte.ReplaceAbandoned:
		if claimed {
			t.release(pairs...)
		}
		return nil, fmt.Errorf("%w: a new process refused, or a process failed during the repair", errRetryReplace)
	}
	t.release(pairs[1])
	return newDerived(c, call.Name, pairs[0], a.Members(), c.rank), nil
}

// replaceSpawn is the rest of a repair attempt that found too few spares:
// over the shrunk communicator (the survivors, on the second agreed
// pair), the missing processes are spawned as spares, the leader
// activates the picked and the spawned ones for the repaired communicator
// (on the first agreed pair), and an agreement decides the outcome
// (Spawn's path: under ftmpirun only; the spares' side is the runtime's,
// rte.ReplaceAttempt).
func (c *Comm) replaceSpawn(op string, a *rte.ReplaceAttempt, call rte.ReplaceCall, pairs []int, me int) (*Comm, error) {
	w := c.w
	shrunk := newDerived(c, derivedName("shrink", c), pairs[1], call.Survivors, me)
	shrunk.errh.Store(ErrorsReturn)
	spawned, spairs, err := shrunk.spawnRaw(op, "", os.Args[1:], a.Spawn(), 0, true)
	if err != nil {
		w.ctxTable().release(pairs[0])
		a.SpawnFailed() // none was asked
		if isFailure(err) {
			return nil, fmt.Errorf("%w: spawn: %v", errRetryReplace, err)
		}
		return nil, err
	}
	w.ctxTable().release(spairs...) // no intercommunicator: they become ranks
	// The leader activates the new processes; they accept or refuse; the
	// agreement decides.
	bits := a.Spawned(spawned, shrunk.rank == 0)
	agreed, aerr := shrunk.AgreeBits(bits)
	if !a.SettleSpawned(agreed, aerr == nil, aerr == nil || isFailure(aerr)) {
		w.ctxTable().release(pairs[0])
		return nil, fmt.Errorf("%w: a new process refused, or a process failed during the repair", errRetryReplace)
	}
	nc := newDerived(c, call.Name, pairs[0], a.Members(), c.rank)
	// The shrunk communicator was the repair's own: every survivor
	// contributed to the last agreement after its broadcast, so nothing of
	// it is in flight.
	_ = shrunk.Free()
	return nc, nil
}

// activationTimeout bounds the wait for a spare's answer: a stopped spare
// must not hang the repair (it counts as a refusal; the next attempt
// takes another).
func (w *World) activationTimeout() time.Duration {
	return max(10*w.cfg.HeartbeatTimeout, 10*time.Second)
}
