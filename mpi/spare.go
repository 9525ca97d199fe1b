package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/ftmpi/ftmpi/internal/trace"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/ft/spare"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Spare processes (Fenix's idea; ftmpirun --spares K, RunSpares): the
// last K processes of a start set wait inside Init, reachable by every
// process (they took part in the endpoint exchange) but in no CommWorld,
// until a repair (Comm.Replace) takes them as the replacements of failed
// ranks, or the job ends without needing them. The spare's side of the
// protocol is the pure machine of internal/ft/spare, driven here by
// ctl.Spare frames; the survivors' side is Comm.Replace.

// spareState is a World's bookkeeping of spares: as a spare (machine,
// the activation it holds, the outcome Init waits for) and as a rank (the
// pool it knows, the replies its activations wait for).
type spareState struct {
	mu      sync.Mutex
	isSpare bool
	m       spare.Machine
	held    map[uint64][]byte // activations accepted, by key (payload)
	outcome chan spareOutcome // as a spare: what Init does (one value)
	killed  chan struct{}     // in process: the spare was killed (closed once)

	pool    []int // spares known to this process, in order (process ids)
	taken   map[int]bool
	seq     uint64
	replies map[uint64]chan spareReply
}

// spareOutcome is how a spare leaves its wait.
type spareOutcome struct {
	act    *activation   // non-nil: a repair made it a rank
	take   *launcherTake // non-nil: the launcher made it a rank's new incarnation (reinit)
	failed bool          // orphaned: leave as a failed process
	ended  string        // without a head: the job cannot continue (the survivors' reason)
}

// launcherTake is the launcher's activation of a spare (boot.EventActivate,
// --on-failure reinit): it becomes incarnation inc of rank and joins
// Reinit epoch epoch.
type launcherTake struct {
	rank, inc, epoch int
	next             *reincarnate.State // without a head: the ranks' decision of a new epoch (hreinit.go); the other fields unused
}

// onLauncherSpare handles the launcher's events for a spare (rte.Hooks.Spare).
func (w *World) onLauncherSpare(ev boot.Event) {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSpare {
		return
	}
	switch ev.Kind {
	case boot.EventRelease:
		w.stepSpareLocked(spare.Event{Kind: spare.KindRelease, Lost: -1}, nil)
	case boot.EventActivate:
		if _, ok := s.m.Step(spare.Event{Kind: spare.KindTake, Lost: -1}); !ok {
			// Held by a repair of the ranks: under --on-failure reinit the
			// spares are the launcher's, so this is a program that also
			// called Replace. The launcher counts it as the rank's now.
			fmt.Fprintf(os.Stderr, "ftmpi: spare process %d: taken by the launcher as rank %d while %v\n", w.rank, ev.Rank, s.m.Phase())
		}
		select { // (a full channel: a repair's outcome is already there; never block the watcher)
		case s.outcome <- spareOutcome{take: &launcherTake{rank: ev.Rank, inc: ev.Incarnation, epoch: ev.Epoch}}:
		default:
		}
	}
}

type spareReply struct {
	from int
	kind spare.Kind
}

// activation is what a spare needs to become a rank: the repaired
// communicator's context pair, members and its rank there, and the
// survivors that decide the repair.
type activation struct {
	key       uint64
	pair      int
	rank      int
	members   []int
	survivors []int
	name      string
}

func (a *activation) encode() []byte {
	b := make([]byte, 0, 8*(4+len(a.members)+len(a.survivors))+len(a.name))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.pair))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.rank))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(a.members)))
	for _, m := range a.members {
		b = binary.LittleEndian.AppendUint64(b, uint64(m))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(a.survivors)))
	for _, m := range a.survivors {
		b = binary.LittleEndian.AppendUint64(b, uint64(m))
	}
	return append(b, a.name...)
}

// maxActivationProcs bounds the lists of an activation (a defective frame
// must not make a spare allocate much).
const maxActivationProcs = 1 << 24

func decodeActivation(key uint64, b []byte) (*activation, error) {
	a := &activation{key: key}
	next := func() (int, error) {
		if len(b) < 8 {
			return 0, errors.New("truncated")
		}
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if v > maxActivationProcs {
			return 0, fmt.Errorf("value %d out of range", v)
		}
		return int(v), nil
	}
	list := func() ([]int, error) {
		n, err := next()
		if err != nil {
			return nil, err
		}
		if n*8 > len(b) {
			return nil, fmt.Errorf("a list of %d in %d bytes", n, len(b))
		}
		out := make([]int, n)
		for i := range out {
			if out[i], err = next(); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	var err error
	if a.pair, err = next(); err != nil {
		return nil, err
	}
	if a.rank, err = next(); err != nil {
		return nil, err
	}
	if a.members, err = list(); err != nil {
		return nil, err
	}
	if a.survivors, err = list(); err != nil {
		return nil, err
	}
	if a.pair >= ctxPairs || a.rank >= len(a.members) || len(a.survivors) == 0 {
		return nil, fmt.Errorf("pair %d, rank %d of %d members, %d survivors", a.pair, a.rank, len(a.members), len(a.survivors))
	}
	a.name = string(b)
	return a, nil
}

// initSpares sets up w's spare bookkeeping: pool lists the spares a rank
// may take; isSpare makes w a spare that waits (awaitActivation).
func (w *World) initSpares(pool []int, isSpare bool) {
	s := &w.spares
	s.pool = pool
	s.isSpare = isSpare
	if isSpare {
		s.outcome = make(chan spareOutcome, 1)
		s.killed = make(chan struct{})
	}
	w.ctl.MustRegister(ctl.Spare, w.onSpare)
}

// onSpare handles a ctl.Spare frame (on a transport goroutine: it only
// steps the machine and queues replies).
func (w *World) onSpare(from int, h transport.Header, payload []byte) {
	s := &w.spares
	kind := spare.Kind(h.B)
	switch kind {
	case spare.KindAccept, spare.KindRefuse:
		s.mu.Lock()
		ch := s.replies[h.Seq]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- spareReply{from, kind}:
			default: // a duplicate beyond the expected replies
			}
		}
		return
	case spare.KindActivate, spare.KindCommit, spare.KindAbandon, spare.KindRelease, spare.KindDrop:
	default:
		fmt.Fprintf(os.Stderr, "ftmpi: process %d: spare frame of unknown kind %d from process %d dropped\n", w.rank, h.B, from)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSpare {
		if kind == spare.KindActivate { // not a spare (any more): refuse
			_ = w.eng.SendControl(from, transport.Header{Tag: int32(ctl.Spare), B: uint64(spare.KindRefuse), Seq: h.Seq}, nil)
		}
		return
	}
	ev := spare.Event{Kind: kind, From: from, Key: h.Seq, Lost: -1}
	if kind == spare.KindDrop { // the attempt of leader A with context pair Seq
		ev.Key, ev.Leader, ev.Tag = 0, int(h.A), h.Seq
	}
	var act *activation
	if kind == spare.KindActivate {
		var err error
		if act, err = decodeActivation(h.Seq, payload); err != nil {
			fmt.Fprintf(os.Stderr, "ftmpi: process %d: malformed spare activation from process %d dropped: %v\n", w.rank, from, err)
			return
		}
		ev.Survivors, ev.Tag = act.survivors, uint64(act.pair)
	}
	w.stepSpareLocked(ev, act)
}

// stepSpareLocked steps the spare machine (s.mu held) and carries out
// its action.
func (w *World) stepSpareLocked(ev spare.Event, act *activation) {
	s := &w.spares
	before := s.m.Phase()
	a, ok := s.m.Step(ev)
	if !ok {
		return
	}
	switch {
	case a.Reply != 0:
		if a.Reply == spare.KindAccept && before == spare.Waiting {
			if s.held == nil {
				s.held = make(map[uint64][]byte)
			}
			s.held[a.Key] = act.encode()
		}
		_ = w.eng.SendControl(a.To, transport.Header{Tag: int32(ctl.Spare), B: uint64(a.Reply), Seq: a.Key}, nil)
	case a.Return:
		held, err := decodeActivation(a.Key, s.held[a.Key])
		if err != nil { // encoded here: cannot happen
			held = nil
		}
		s.outcome <- spareOutcome{act: held}
	case a.Exit:
		s.outcome <- spareOutcome{failed: a.Failed}
	}
}

// spareLost tells the spare machine of a failure (the lost hook).
func (w *World) spareLost(peer int) {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isSpare {
		w.stepSpareLocked(spare.Event{Lost: peer}, nil)
	}
}

// errSpareReleased is what awaitActivation returns when the job ended
// without needing the spare.
var errSpareReleased = errors.New("spare released: the job ended without needing it")

// errSpareOrphaned: the spare leaves as a failed process.
var errSpareOrphaned = errors.New("spare orphaned: every survivor of the repair that held it failed")

// errSpareEnded: the ranks cannot continue (headless Reinit with no
// spare left for every failed rank); the spare leaves as a failed process.
var errSpareEnded = errors.New("the job cannot continue")

// awaitActivation is a spare's wait inside Init. It returns nil when a
// repair took the spare (CommWorld is then the repaired communicator, and
// Replacement returns it), the launcher's take (the caller opens the
// rank's epoch), errSpareReleased when the job ended without needing it,
// errSpareOrphaned when it must leave as a failed process, or the job's
// abort.
func (w *World) awaitActivation() (*launcherTake, error) {
	s := &w.spares
	select {
	case o := <-s.outcome:
		switch {
		case o.act != nil:
			return nil, w.becomeRank(o.act)
		case o.take != nil:
			return o.take, nil
		case o.ended != "":
			return nil, fmt.Errorf("%w: %s", errSpareEnded, o.ended)
		case o.failed:
			return nil, errSpareOrphaned
		}
		return nil, errSpareReleased
	case <-s.killed:
		return nil, errSpareOrphaned
	case <-w.abort:
		return nil, w.abortedErr("MPI_Init", nil)
	}
}

// becomeRank makes an activated spare a member of the repaired
// communicator: it claims the agreed context pair (free at a spare: it
// never created a communicator) and the communicator becomes its
// CommWorld.
func (w *World) becomeRank(a *activation) error {
	if r := w.trc; r != nil {
		r.Instant(trace.CatRepair, trace.NameSpare, map[string]any{"proc": w.rank, "comm": a.name, "rank": a.rank})
	}
	if !w.ctxTable().claim([]int{a.pair}) {
		return fmt.Errorf("the context id %d of the repaired communicator is in use", a.pair)
	}
	nc := newDerived(w.world, a.name, a.pair, a.members, a.rank)
	w.spares.mu.Lock()
	w.spares.isSpare = false
	w.spares.mu.Unlock()
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
func (w *World) Spares() []int {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, p := range s.pool {
		if !s.taken[p] && !w.eng.IsLost(p) {
			out = append(out, p)
		}
	}
	return out
}

// releaseSpares tells every spare this rank knows of that the job ends
// (called by Finalize): a waiting spare leaves Init; a held or taken one
// ignores it.
func (w *World) releaseSpares() {
	s := &w.spares
	s.mu.Lock()
	pool := slices.Clone(s.pool) // taken ones too: a spare picked by an abandoned attempt still waits
	s.mu.Unlock()
	for _, p := range pool {
		if w.eng.IsLost(p) {
			continue
		}
		if w.net != nil {
			if _, ok := w.net.Endpoint(p); !ok {
				continue // not in this Reinit epoch: the launcher releases it
			}
		}
		_ = w.eng.SendControl(p, transport.Header{Tag: int32(ctl.Spare), B: uint64(spare.KindRelease)}, nil)
	}
}

// markTaken removes procs from this process's pool.
func (w *World) markTaken(procs []int) {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken == nil {
		s.taken = make(map[int]bool)
	}
	for _, p := range procs {
		s.taken[p] = true
	}
}

// addToPool adds spares (spawned ones) to this process's pool.
func (w *World) addToPool(procs []int) {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pool = append(s.pool, procs...)
}

// unmarkTaken puts procs back into this process's pool.
func (w *World) unmarkTaken(procs []int) {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range procs {
		delete(s.taken, p)
	}
}

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
	if c != nil && c.w.trc != nil {
		start := trace.Now()
		defer func() { c.traceSpan(trace.CatRepair, trace.NameReplace, start, err, nil) }()
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
func (c *Comm) replaceOnce(op string) (*Comm, error) {
	w := c.w
	_ = c.Revoke()
	b := c.base
	f := w.ftOf(b)
	t := w.ctxTable()
	seed := uint64(b.ctx) ^ 0x5265706c
	val, dead, start, err := b.agreeDeadAndFree(op, f, seed)
	w0 := start / 64
	if err != nil {
		return nil, err
	}
	old := c.groupProcs()
	var survivors, lost []int // process ids, old ranks
	for r, p := range old {
		if dead.Has(p) {
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
	if rel := pickPairs(val.Inter.Words(ctxWindow), 2, start%64); rel != nil {
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
	name := derivedName("replace", c)
	members := slices.Clone(old)
	leader := survivors[0]
	var word leaderWord
	if me == 0 {
		word = w.leadReplace(claimed, pairs[0], old, lost, survivors, name)
	}
	if h := w.replaceHook; h != nil {
		h("activated")
	}
	var flags uint64
	if claimed {
		flags = 1
	}
	res, contrib, err := b.agreeOn(op, agree.Value{Flags: flags, Union: agree.SetFromWords(word.encode())})
	if err != nil {
		return nil, err
	}
	all := true
	for _, p := range survivors {
		all = all && contrib.Has(f.pos(p))
	}
	got, told := decodeLeaderWord(res.Union.Words(leaderWordLen(len(lost))), len(lost))
	if !told {
		// The leader failed before it contributed: its attempt cannot
		// commit, and nobody knows whom it activated.
		if claimed {
			t.release(pairs...)
		}
		w.dropLeader(leader, pairs[0])
		return nil, fmt.Errorf("%w: the leader failed during the repair", errRetryReplace)
	}
	if me != 0 {
		w.markTaken(got.chosen)
	}
	ok := res.Flags&1 == 1 && all
	if ok && got.spawn > 0 {
		return c.replaceSpawn(op, pairs, survivors, me, members, lost, got)
	}
	commit := ok && got.accepted
	kind := spare.KindAbandon
	if commit {
		kind = spare.KindCommit
	}
	for _, p := range got.chosen {
		_ = w.eng.SendControl(p, transport.Header{Tag: int32(ctl.Spare), B: uint64(kind), Seq: got.key}, nil)
	}
	if !commit {
		if claimed {
			t.release(pairs...)
		}
		w.unmarkTaken(got.back())
		return nil, fmt.Errorf("%w: a new process refused, or a process failed during the repair", errRetryReplace)
	}
	t.release(pairs[1])
	for i, r := range lost {
		members[r] = got.chosen[i]
	}
	return newDerived(c, name, pairs[0], members, c.rank), nil
}

// leaderWord is what the leader of a repair attempt tells the others in
// the second agreement (its Union, to which nobody else contributes).
type leaderWord struct {
	key      uint64
	accepted bool   // every picked spare accepted (with spawn 0)
	spawn    int    // failed ranks without a spare: to spawn
	refused  uint64 // bit i: chosen[i] refused, failed or did not answer (it does not go back to the pool)
	chosen   []int  // the spares picked, for the failed ranks in order
}

// leaderWordLen is the length in words of a leaderWord for n failed
// ranks: key, flags and spawn count, refused, then the picks.
func leaderWordLen(n int) int { return 3 + n }

// The flags word: bit 0, the leader contributed (its word is there at
// all); bit 1, accepted; the spawn count from bit 8.
func (l leaderWord) encode() []uint64 {
	if l.key == 0 {
		return nil // not the leader
	}
	out := make([]uint64, 0, leaderWordLen(len(l.chosen)+l.spawn))
	fl := uint64(1) | uint64(l.spawn)<<8
	if l.accepted {
		fl |= 2
	}
	out = append(out, l.key, fl, l.refused)
	for _, p := range l.chosen {
		out = append(out, uint64(p)+1)
	}
	return out
}

// decodeLeaderWord reads the agreed word for n failed ranks; told is
// false when the leader did not contribute.
func decodeLeaderWord(words []uint64, n int) (l leaderWord, told bool) {
	if words[1]&1 == 0 {
		return leaderWord{}, false
	}
	l.key, l.accepted, l.spawn, l.refused = words[0], words[1]&2 != 0, int(words[1]>>8), words[2]
	if l.spawn > n {
		l.spawn = n // cannot happen: the leader wrote it for n
	}
	for _, v := range words[3 : 3+n-l.spawn] {
		l.chosen = append(l.chosen, int(v)-1)
	}
	return l, true
}

// back returns the picked spares that may serve again after an abandoned
// attempt: those that accepted (they wait again) or were not asked.
func (l leaderWord) back() []int {
	var out []int
	for i, p := range l.chosen {
		if i < 64 && l.refused&(1<<i) == 0 {
			out = append(out, p)
		}
	}
	return out
}

// leadReplace is the leader's part of a repair attempt: it picks a spare
// for each failed rank and, when there is one for every failed rank and
// its claim of the context pair held, activates them (the repaired
// communicator's pair and members are agreed already).
func (w *World) leadReplace(claimed bool, pair int, old, lost, survivors []int, name string) leaderWord {
	l := leaderWord{key: w.nextActivationKey()}
	avail := w.Spares()
	n := min(len(avail), len(lost))
	l.chosen, l.spawn = avail[:n:n], len(lost)-n
	w.markTaken(l.chosen) // whatever the outcome: a refused spare serves another repair
	if l.spawn > 0 || !claimed {
		// Spawning: the shrunk communicator activates them all once the
		// rest are spawned (replaceSpawn). A failed claim: nothing to ask.
		return l
	}
	members := slices.Clone(old)
	for i, r := range lost {
		members[r] = l.chosen[i]
	}
	all, answered := w.activate(l.key, pair, members, lost, survivors, name)
	for i, p := range l.chosen {
		if i >= 64 || !answered[p] {
			l.refused |= 1 << min(i, 63)
		}
	}
	l.accepted = all
	return l
}

// dropLeader tells every spare this process knows that the attempt of
// leader (tagged by the context pair it would have used) is abandoned:
// the leader failed before telling anyone whom it activated.
func (w *World) dropLeader(leader, pair int) {
	s := &w.spares
	s.mu.Lock()
	pool := slices.Clone(s.pool)
	s.mu.Unlock()
	for _, p := range pool {
		if !w.eng.IsLost(p) {
			_ = w.eng.SendControl(p, transport.Header{Tag: int32(ctl.Spare), B: uint64(spare.KindDrop), A: uint64(leader), Seq: uint64(pair)}, nil)
		}
	}
}

// replaceSpawn is the rest of a repair attempt that found too few spares:
// over the shrunk communicator (the survivors, on the second agreed
// pair), the missing processes are spawned as spares, the leader
// activates the picked and the spawned ones for the repaired communicator
// (on the first agreed pair), and an agreement decides the outcome
// (Spawn's path: under ftmpirun only).
func (c *Comm) replaceSpawn(op string, pairs, survivors []int, me int, members, lost []int, l leaderWord) (*Comm, error) {
	w := c.w
	shrunk := newDerived(c, derivedName("shrink", c), pairs[1], survivors, me)
	shrunk.errh.Store(ErrorsReturn)
	chosen := l.chosen
	eps, spairs, err := shrunk.spawnRaw(op, "", os.Args[1:], l.spawn, 0, true)
	if err != nil {
		w.ctxTable().release(pairs[0])
		w.unmarkTaken(chosen) // none was asked
		if isFailure(err) {
			return nil, fmt.Errorf("%w: spawn: %v", errRetryReplace, err)
		}
		return nil, err
	}
	w.ctxTable().release(spairs...) // no intercommunicator: they become ranks
	var spawned []int
	for _, ep := range eps {
		spawned = append(spawned, ep.Rank)
	}
	w.addToPool(spawned) // an abandoned attempt returns them; the end of the job releases them
	chosen = append(slices.Clone(chosen), spawned...)
	w.markTaken(chosen)
	for i, r := range lost {
		members[r] = chosen[i]
	}
	// The leader activates the new processes; they accept or refuse. The
	// agreement's bit 0 says whether everything succeeded; bit 1+i
	// whether chosen[i] may serve again if the attempt is abandoned.
	bits := ^uint64(0)
	if shrunk.rank == 0 {
		all, answered := w.activate(l.key, pairs[0], members, lost, survivors, derivedName("replace", c))
		if !all {
			bits &^= 1
		}
		for i, p := range chosen {
			if i < 63 && !answered[p] {
				bits &^= 1 << (i + 1)
			}
		}
	}
	agreed, aerr := shrunk.AgreeBits(bits)
	commit := agreed&1 == 1 && aerr == nil
	kind := spare.KindAbandon
	if commit {
		kind = spare.KindCommit
	}
	for _, p := range chosen {
		_ = w.eng.SendControl(p, transport.Header{Tag: int32(ctl.Spare), B: uint64(kind), Seq: l.key}, nil)
	}
	if !commit {
		w.ctxTable().release(pairs[0])
		if aerr == nil || isFailure(aerr) { // the value is agreed either way
			var back []int
			for i, p := range chosen {
				if i < 63 && agreed&(1<<(i+1)) != 0 {
					back = append(back, p)
				}
			}
			w.unmarkTaken(back)
		}
		return nil, fmt.Errorf("%w: a new process refused, or a process failed during the repair", errRetryReplace)
	}
	nc := newDerived(c, derivedName("replace", c), pairs[0], members, c.rank)
	// The shrunk communicator was the repair's own: every survivor
	// contributed to the last agreement after its broadcast, so nothing of
	// it is in flight.
	_ = shrunk.Free()
	return nc, nil
}

// nextActivationKey names one repair attempt of a leader, different from
// every other repair's (the leader's process id is in it).
func (w *World) nextActivationKey() uint64 {
	s := &w.spares
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return uint64(w.rank)<<32 | s.seq
}

// activate sends the activation of repair key to each new process and
// waits for every answer: all reports that all accepted, accepted which
// did. A new process that fails, or does not answer within the activation
// timeout, counts as a refusal.
func (w *World) activate(key uint64, pair int, members, lost, survivors []int, name string) (all bool, accepted map[int]bool) {
	accepted = map[int]bool{}
	s := &w.spares
	ch := make(chan spareReply, 2*len(lost))
	s.mu.Lock()
	if s.replies == nil {
		s.replies = make(map[uint64]chan spareReply)
	}
	s.replies[key] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.replies, key)
		s.mu.Unlock()
	}()
	pending := map[int]bool{}
	for _, r := range lost {
		p := members[r]
		a := &activation{key: key, pair: pair, rank: r, members: members, survivors: survivors, name: name}
		if err := w.eng.SendControl(p, transport.Header{Tag: int32(ctl.Spare), B: uint64(spare.KindActivate), Seq: key}, a.encode()); err != nil {
			return false, accepted
		}
		pending[p] = true
	}
	deadline := time.NewTimer(w.activationTimeout())
	defer deadline.Stop()
	all = true
	for len(pending) > 0 {
		sig := w.eng.FailureSignal()
		for p := range pending {
			if w.eng.IsLost(p) {
				delete(pending, p)
				all = false
			}
		}
		if len(pending) == 0 {
			break
		}
		select {
		case r := <-ch:
			if pending[r.from] {
				delete(pending, r.from)
				all = all && r.kind == spare.KindAccept
				accepted[r.from] = r.kind == spare.KindAccept
			}
		case <-sig:
		case <-deadline.C:
			return false, accepted
		case <-w.abort:
			return false, accepted
		case <-w.stop:
			return false, accepted
		}
	}
	return all, accepted
}

// activationTimeout bounds the wait for a spare's answer: a stopped spare
// must not hang the repair (it counts as a refusal; the next attempt
// takes another).
func (w *World) activationTimeout() time.Duration {
	return max(10*w.cfg.HeartbeatTimeout, 10*time.Second)
}
