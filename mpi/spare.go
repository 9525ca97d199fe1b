package mpi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
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
	case spare.KindActivate, spare.KindCommit, spare.KindAbandon, spare.KindRelease:
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
	var act *activation
	if kind == spare.KindActivate {
		var err error
		if act, err = decodeActivation(h.Seq, payload); err != nil {
			fmt.Fprintf(os.Stderr, "ftmpi: process %d: malformed spare activation from process %d dropped: %v\n", w.rank, from, err)
			return
		}
		ev.Survivors = act.survivors
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

// pickSpares takes up to n spares from the pool (the leader's choice).
func (w *World) pickSpares(n int) []int64 {
	avail := w.Spares()
	out := make([]int64, n)
	for i := range out {
		out[i] = -1
		if i < len(avail) {
			out[i] = int64(avail[i])
		}
	}
	return out
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
// no MPI standard function). It revokes c, shrinks it, takes spare
// processes for the failed ranks (ftmpirun --spares, RunSpares) or, when
// none are left, spawns them as spares (Spawn's path, under ftmpirun
// only), and builds the new communicator over them in c's rank order; the
// new processes return from Init with it as CommWorld (World.Replacement).
// It is collective over c's survivors.
//
// Its outcome is uniform, by agreement: every survivor gets the same new
// communicator, or every survivor gets the same error. A failure during
// the repair, or a spare that another repair took first (a spare is never
// taken twice: it accepts one activation only), starts it over, up to 16
// times. With no failed process it returns the shrunk duplicate of c.
// Errors: ErrSpawn when no spare is left and processes cannot be spawned
// (under mpi.Run, or the launcher refused), ErrProcFailed after too many
// attempts.
func (c *Comm) Replace() (*Comm, error) {
	const op = "MPIX_Comm_replace"
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

// replaceOnce is one attempt of Replace. Every step whose outcome may
// differ between survivors is followed by an agreement among them, so all
// go on or all start over.
func (c *Comm) replaceOnce(op string) (*Comm, error) {
	w := c.w
	_ = c.Revoke()
	shrunk, err := c.base.shrink(op) // uniform
	if err != nil {
		if isFailure(err) {
			return nil, fmt.Errorf("%w: shrink: %v", errRetryReplace, err)
		}
		return nil, err
	}
	shrunk.errh.Store(ErrorsReturn)
	old, alive := c.groupProcs(), shrunk.groupProcs()
	var lost []int // old ranks
	for r, p := range old {
		if !slices.Contains(alive, p) {
			lost = append(lost, r)
		}
	}
	if len(lost) == 0 {
		shrunk.errh.Store(c.errh.Load())
		return shrunk, nil
	}
	// 1. The leader picks the spares; the others learn its choice.
	// The last word is the attempt's key, the leader's: the spares it
	// activates hold it, and every survivor names it in the outcome.
	pick := make([]int64, len(lost)+1)
	if shrunk.rank == 0 {
		pick = append(w.pickSpares(len(lost)), int64(w.nextActivationKey()))
	}
	berr := Bcast(shrunk, pick, 0)
	if ok, aerr := shrunk.Agree(berr == nil); !ok || aerr != nil {
		return nil, fmt.Errorf("%w: the choice of spares did not reach every survivor", errRetryReplace)
	}
	key := uint64(pick[len(lost)])
	pick = pick[:len(lost)]
	var chosen []int
	nspawn := 0
	for _, p := range pick {
		if p < 0 {
			nspawn++
		} else {
			chosen = append(chosen, int(p))
		}
	}
	w.markTaken(chosen) // whatever the outcome: a refused spare serves another repair
	// 2. No spare left for some: spawn them as spares (uniform).
	if nspawn > 0 {
		eps, pairs, err := shrunk.spawnRaw(op, "", os.Args[1:], nspawn, 0, true)
		if err != nil {
			if isFailure(err) {
				return nil, fmt.Errorf("%w: spawn: %v", errRetryReplace, err)
			}
			return nil, err
		}
		w.ctxTable().release(pairs...) // no intercommunicator: they become ranks
		var spawned []int
		for _, ep := range eps {
			spawned = append(spawned, ep.Rank)
		}
		w.addToPool(spawned) // an abandoned attempt returns them; the end of the job releases them
		chosen = append(chosen, spawned...)
		w.markTaken(chosen)
	}
	members := slices.Clone(old)
	for i, r := range lost {
		members[r] = chosen[i]
	}
	// 3. The context pair of the new communicator, agreed by the survivors.
	pairs, perr := agreeOnParent(shrunk, op, 1, true)
	// 4. The leader activates the new processes; they accept or refuse.
	// The agreement's bit 0 says whether everything succeeded; bit 1+i
	// whether chosen[i] may serve again if the attempt is abandoned (the
	// leader clears it for a spare that refused, failed or did not answer:
	// taken by another repair, dead, or maybe still held).
	bits := ^uint64(0)
	if perr != nil {
		bits &^= 1
	}
	if shrunk.rank == 0 && perr == nil {
		all, answered := w.activate(key, pairs[0], members, lost, alive, derivedName("replace", c))
		if !all {
			bits &^= 1
		}
		for i, p := range chosen {
			if i < 63 && !answered[p] {
				bits &^= 1 << (i + 1)
			}
		}
	}
	if h := w.replaceHook; h != nil {
		h("activated")
	}
	agreed, aerr := shrunk.AgreeBits(bits)
	commit := agreed&1 == 1 && aerr == nil
	// 5. Every survivor tells every new process the outcome (each takes the
	// first it gets; several, so the death of one survivor cannot leave
	// them waiting).
	kind := spare.KindAbandon
	if commit {
		kind = spare.KindCommit
	}
	for _, p := range chosen {
		_ = w.eng.SendControl(p, transport.Header{Tag: int32(ctl.Spare), B: uint64(kind), Seq: key}, nil)
	}
	if !commit {
		if perr == nil {
			w.ctxTable().release(pairs...)
		}
		if aerr == nil || isFailure(aerr) { // the value is agreed either way
			// The spares that accepted (they wait again) or were never
			// asked go back to the pool.
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
