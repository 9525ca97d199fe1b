// Package sparedrive drives the spare processes of one rank (Fenix's
// idea; ftmpirun --spares K, srun's last FTMPI_SPARES tasks, a process a
// repair spawned): the spare's side is the pure machine of
// internal/ft/spare, fed here by ctl.Spare frames, the launcher's takes
// and failures; the ranks' side is the pool a rank may take from, the
// activation of the spares a repair picked (send, wait for the answers
// within a deadline) and the repair's outcome told to them. It owns the
// frames' codec (Activation) and a Replace attempt's spare side (Repair:
// the leader's picks and activations, Lead; the leader's word the
// attempt's second agreement carries, LeaderWord, encoded there and read
// back by Heard; the outcome, Settle; the spawn path's last word,
// LeadSpawned and SettleSpawned).
//
// It must not know about communicators or the MPI API (the mpi package
// runs the repair's agreements over the agreed words and builds the
// repaired communicator), nor
// print or exit: a malformed or unexpected frame is returned as an error
// that names it, for the caller to report. It holds no process-global
// state: one Spares belongs to one World (one epoch of one process).
package sparedrive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/ft/spare"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Net is what the driver needs of the epoch's engine (p2p.Engine).
type Net interface {
	// SendControl posts a control frame to process to (never blocks).
	SendControl(to int, h transport.Header, payload []byte) error
	// IsLost reports whether process p is known failed.
	IsLost(p int) bool
	// FailureSignal returns a channel closed at the next failure.
	FailureSignal() <-chan struct{}
}

// Env is what one rank's driver needs from its runtime.
type Env struct {
	Net  Net
	Self int // this process's id
	// Pairs bounds an activation's context pair (0 <= pair < Pairs).
	Pairs int
	// InEpoch reports whether process p is in this Reinit epoch (a spare
	// of another epoch is the launcher's to release); nil: every process.
	InEpoch func(p int) bool
}

// Activation is what a spare needs to become a rank (the payload of a
// KindActivate frame): the repaired communicator's context pair, members
// and its rank there, and the survivors that decide the repair.
type Activation struct {
	Key       uint64 // the repair attempt (the frame's Seq)
	Pair      int
	Rank      int
	Members   []int
	Survivors []int
	Name      string
}

// Encode is the frame's payload: pair, rank, the members and the
// survivors (each a count and the ids), 8 bytes little-endian each, then
// the name.
func (a *Activation) Encode() []byte {
	b := make([]byte, 0, 8*(4+len(a.Members)+len(a.Survivors))+len(a.Name))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.Pair))
	b = binary.LittleEndian.AppendUint64(b, uint64(a.Rank))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(a.Members)))
	for _, m := range a.Members {
		b = binary.LittleEndian.AppendUint64(b, uint64(m))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(a.Survivors)))
	for _, m := range a.Survivors {
		b = binary.LittleEndian.AppendUint64(b, uint64(m))
	}
	return append(b, a.Name...)
}

// maxActivationProcs bounds the lists of an activation (a defective frame
// must not make a spare allocate much).
const maxActivationProcs = 1 << 24

// DecodeActivation reads the payload of activation key; the pair must be
// below pairs, the rank among the members, and a survivor named.
func DecodeActivation(key uint64, b []byte, pairs int) (*Activation, error) {
	a := &Activation{Key: key}
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
	if a.Pair, err = next(); err != nil {
		return nil, err
	}
	if a.Rank, err = next(); err != nil {
		return nil, err
	}
	if a.Members, err = list(); err != nil {
		return nil, err
	}
	if a.Survivors, err = list(); err != nil {
		return nil, err
	}
	if a.Pair >= pairs || a.Rank >= len(a.Members) || len(a.Survivors) == 0 {
		return nil, fmt.Errorf("pair %d, rank %d of %d members, %d survivors", a.Pair, a.Rank, len(a.Members), len(a.Survivors))
	}
	a.Name = string(b)
	return a, nil
}

// Take is a launcher's activation of a spare (--on-failure reinit): it
// becomes incarnation Inc of rank Rank and joins Reinit epoch Epoch.
type Take struct{ Rank, Inc, Epoch int }

// Outcome is how a spare leaves its wait (one of the fields set; none:
// released, the job ended without it).
type Outcome struct {
	Act    *Activation        // a repair made it a rank
	Take   *Take              // the launcher made it a rank's new incarnation
	Next   *reincarnate.State // without a head: the ranks decided a new Reinit epoch
	Failed bool               // orphaned: leave as a failed process
	Ended  string             // without a head: the job cannot continue (the survivors' reason)
}

type reply struct {
	from int
	kind spare.Kind
}

// Spares is one process's spare bookkeeping: as a spare (the machine,
// the activation it holds, the outcome Init waits for) and as a rank (the
// pool it knows, the replies its activations wait for).
type Spares struct {
	env Env

	mu      sync.Mutex
	isSpare bool
	m       spare.Machine
	held    map[uint64]*Activation // activations accepted, by key
	outcome chan Outcome           // as a spare: what Init does (one value)

	pool    []int // spares known to this process, in order (process ids)
	taken   map[int]bool
	seq     uint64
	replies map[uint64]chan reply

	// As a survivor of repairs: the outcomes it tells the spares (commit
	// from the leader: spare.Outbox), the survivors of the attempts whose
	// word it heard and has not settled yet (by key: at most maxAttempts,
	// a forgotten one is told at once), and the processes it knows failed
	// beyond the engine (a leader the agreement did without).
	out      spare.Outbox
	attempts map[uint64][]int
	gone     map[int]bool
	decided  func(commit, handed bool) // tests: called as an outcome is decided here, before and after the Outbox has it
}

// maxAttempts bounds the attempts heard and not settled kept (an attempt
// that spawned and failed is never settled).
const maxAttempts = 64

// New returns the driver of a process whose known spares are pool (a
// rank may take them); isSpare makes the process a spare that waits
// (Outcome).
func New(env Env, pool []int, isSpare bool) *Spares {
	return &Spares{env: env, pool: pool, isSpare: isSpare, outcome: make(chan Outcome, 1)}
}

// IsSpare reports whether the process still waits as a spare.
func (s *Spares) IsSpare() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.isSpare
}

// Promote marks the spare a rank (a repair took it): frames for spares
// are refused from now on.
func (s *Spares) Promote() {
	s.mu.Lock()
	s.isSpare = false
	s.mu.Unlock()
}

// Pool returns the spares this process knows (taken ones too), in order.
func (s *Spares) Pool() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pool)
}

// Outcome is the channel a waiting spare's outcome arrives on (one value).
func (s *Spares) Outcome() <-chan Outcome { return s.outcome }

// Offer hands a waiting spare an outcome decided elsewhere (headless
// Reinit: the ranks' decision of a new epoch, or its end); the first one
// wins, and nothing blocks. It reports whether this process is a spare.
func (s *Spares) Offer(o Outcome) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSpare {
		return false
	}
	select {
	case s.outcome <- o:
	default:
	}
	return true
}

// Handle takes a ctl.Spare frame from process from (on a transport
// goroutine: it steps the machine and posts replies, never blocks). A
// frame of an unknown kind or a malformed activation is dropped with an
// error that says so.
func (s *Spares) Handle(from int, h transport.Header, payload []byte) error {
	kind := spare.Kind(h.B)
	switch kind {
	case spare.KindAccept, spare.KindRefuse:
		s.mu.Lock()
		ch := s.replies[h.Seq]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- reply{from, kind}:
			default: // a duplicate beyond the expected replies
			}
		}
		return nil
	case spare.KindActivate, spare.KindCommit, spare.KindAbandon, spare.KindRelease, spare.KindDrop:
	default:
		return fmt.Errorf("process %d: spare frame of unknown kind %d from process %d dropped", s.env.Self, h.B, from)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSpare {
		if kind == spare.KindActivate { // not a spare (any more): refuse
			_ = s.env.Net.SendControl(from, frame(spare.KindRefuse, 0, h.Seq), nil)
		}
		return nil
	}
	ev := spare.Event{Kind: kind, From: from, Key: h.Seq, Lost: -1}
	if kind == spare.KindDrop { // the attempt of leader A with context pair Seq
		ev.Key, ev.Leader, ev.Tag = 0, int(h.A), h.Seq
	}
	var act *Activation
	if kind == spare.KindActivate {
		var err error
		if act, err = DecodeActivation(h.Seq, payload, s.env.Pairs); err != nil {
			return fmt.Errorf("process %d: malformed spare activation from process %d dropped: %v", s.env.Self, from, err)
		}
		ev.Survivors, ev.Tag = act.Survivors, uint64(act.Pair)
	}
	s.stepLocked(ev, act)
	return nil
}

func frame(kind spare.Kind, a, seq uint64) transport.Header {
	return transport.Header{Tag: int32(ctl.Spare), B: uint64(kind), A: a, Seq: seq}
}

// stepLocked steps the machine (s.mu held) and carries out its action.
func (s *Spares) stepLocked(ev spare.Event, act *Activation) {
	before := s.m.Phase()
	a, ok := s.m.Step(ev)
	if !ok {
		return
	}
	switch {
	case a.Reply != 0:
		if a.Reply == spare.KindAccept && before == spare.Waiting {
			if s.held == nil {
				s.held = make(map[uint64]*Activation)
			}
			s.held[a.Key] = act
		}
		_ = s.env.Net.SendControl(a.To, frame(a.Reply, 0, a.Key), nil)
	case a.Return:
		s.outcome <- Outcome{Act: s.held[a.Key]}
	case a.Exit:
		s.outcome <- Outcome{Failed: a.Failed}
	}
}

// Lost tells the spare's machine of a failure (the lost hook), and a
// survivor's Outbox: an outcome it owes may be due now.
func (s *Spares) Lost(peer int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isSpare {
		s.stepLocked(spare.Event{Lost: peer}, nil)
	}
	if s.out.Len() > 0 {
		s.tellLocked(s.out.Lost(s.lostLocked))
	}
}

// lostLocked reports whether p is known failed (s.mu held).
func (s *Spares) lostLocked(p int) bool { return s.gone[p] || s.env.Net.IsLost(p) }

// tellLocked sends ts, in order (s.mu held: a Drop's flushed outcomes go
// before it on each connection).
func (s *Spares) tellLocked(ts []spare.Tell) {
	for _, t := range ts {
		a, seq := uint64(0), t.Key
		if t.Kind == spare.KindDrop { // the attempt of leader A with context pair Seq
			a, seq = uint64(t.Leader), t.Tag
		}
		for _, p := range t.To {
			_ = s.env.Net.SendControl(p, frame(t.Kind, a, seq), nil)
		}
	}
}

// SetDecidedHook makes f be called (tests) each time this process decides
// a repair attempt's outcome (Decide): before its Outbox has it (handed
// false: f may end the process there, between its second agreement and
// its Commit) and after (handed true: told, or owed until the survivors
// before it are known failed).
func (s *Spares) SetDecidedHook(f func(commit, handed bool)) {
	s.mu.Lock()
	s.decided = f
	s.mu.Unlock()
}

// Owed returns how many outcomes this process still owes the spares
// (told only if the survivors before it fail).
func (s *Spares) Owed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Len()
}

// LauncherRelease is the launcher's release of a waiting spare: the job
// ends without it.
func (s *Spares) LauncherRelease() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isSpare {
		s.stepLocked(spare.Event{Kind: spare.KindRelease, Lost: -1}, nil)
	}
}

// LauncherTake is the launcher's take of the spare as incarnation t.Inc
// of rank t.Rank. The launcher is the arbiter of its spares: the take
// goes through even when a repair of the ranks holds the spare (a program
// that also called Replace under --on-failure reinit), and the error then
// says so.
func (s *Spares) LauncherTake(t Take) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSpare {
		return nil
	}
	var err error
	if _, ok := s.m.Step(spare.Event{Kind: spare.KindTake, Lost: -1}); !ok {
		err = fmt.Errorf("spare process %d: taken by the launcher as rank %d while %v", s.env.Self, t.Rank, s.m.Phase())
	}
	select { // (a full channel: a repair's outcome is already there; never block the watcher)
	case s.outcome <- Outcome{Take: &t}:
	default:
	}
	return err
}

// Available returns the spares this process still counts as available
// (not taken, not known failed).
func (s *Spares) Available() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for _, p := range s.pool {
		if !s.taken[p] && !s.env.Net.IsLost(p) {
			out = append(out, p)
		}
	}
	return out
}

// Release tells every spare this rank knows of, in this epoch and not
// known failed, that the job ends (Finalize): a waiting spare leaves
// Init; a held or taken one ignores it.
func (s *Spares) Release() {
	for _, p := range s.Pool() { // taken ones too: a spare picked by an abandoned attempt still waits
		if s.env.Net.IsLost(p) || s.env.InEpoch != nil && !s.env.InEpoch(p) {
			continue
		}
		_ = s.env.Net.SendControl(p, frame(spare.KindRelease, 0, 0), nil)
	}
}

// MarkTaken removes procs from this process's pool.
func (s *Spares) MarkTaken(procs []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.taken == nil {
		s.taken = make(map[int]bool)
	}
	for _, p := range procs {
		s.taken[p] = true
	}
}

// Unmark puts procs back into this process's pool.
func (s *Spares) Unmark(procs []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range procs {
		delete(s.taken, p)
	}
}

// AddToPool adds spares (spawned ones) to this process's pool.
func (s *Spares) AddToPool(procs []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pool = append(s.pool, procs...)
}

// NextKey names one repair attempt of a leader, different from every
// other repair's (the leader's process id is in it).
func (s *Spares) NextKey() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return uint64(s.env.Self)<<32 | s.seq
}

// heardLocked records the survivors of attempt key (s.mu held), whose
// outcome Settle or SettleSpawned hands to the Outbox.
func (s *Spares) heardLocked(key uint64, survivors []int) {
	if s.attempts == nil {
		s.attempts = make(map[uint64][]int)
	}
	if len(s.attempts) >= maxAttempts {
		for k := range s.attempts { // forgotten: told at once (more copies, never fewer)
			delete(s.attempts, k)
			break
		}
	}
	s.attempts[key] = survivors
}

// Decide hands the outcome of repair key to the Outbox: Commit (the
// spares procs become the ranks) or Abandon (they wait again), told by
// this process once every survivor of the attempt before it is known
// failed (at once if the attempt's survivors were not heard here). The
// attempt's leader is in its key (NextKey).
func (s *Spares) Decide(key uint64, procs []int, commit bool) {
	kind := spare.KindAbandon
	if commit {
		kind = spare.KindCommit
	}
	t := spare.Tell{Kind: kind, Key: key, Leader: int(key >> 32), To: slices.Clone(procs)}
	s.mu.Lock()
	hook := s.decided
	s.mu.Unlock()
	if hook != nil {
		hook(commit, false) // (a test's process may fail here, between its agreement and its word)
	}
	s.mu.Lock()
	survivors := s.attempts[key]
	delete(s.attempts, key)
	s.tellLocked(s.out.Add(t, spare.Before(t, survivors, s.env.Self), s.lostLocked))
	s.mu.Unlock()
	if hook != nil {
		hook(commit, true)
	}
}

// Drop tells every spare this process knows, not known failed, that the
// attempt of leader (tagged by the context pair it would have used) is
// abandoned: the leader failed before telling anyone whom it activated.
// Of the attempt's survivors (the leader first) the first one not known
// failed after the leader tells them (the Outbox), each after the
// outcomes it owes of the leader's earlier attempts; nil survivors: at
// once.
func (s *Spares) Drop(leader, pair int, survivors []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone == nil {
		s.gone = make(map[int]bool)
	}
	s.gone[leader] = true // the agreement did without it: failed
	s.tellLocked(s.out.Lost(s.lostLocked))
	t := spare.Tell{Kind: spare.KindDrop, Leader: leader, Tag: uint64(pair)}
	for _, p := range s.pool {
		if !s.env.Net.IsLost(p) {
			t.To = append(t.To, p)
		}
	}
	s.tellLocked(s.out.Add(t, spare.Before(t, survivors, s.env.Self), s.lostLocked))
}

// Activate sends the activations acts (one repair attempt, each to the
// spare that is the member at its rank) and waits for every answer: all
// reports that all accepted, accepted which did. A spare that fails, or
// does not answer within timeout, counts as a refusal; so do all that
// have not answered when abort or stop closes.
func (s *Spares) Activate(key uint64, acts []*Activation, timeout time.Duration, abort, stop <-chan struct{}) (all bool, accepted map[int]bool) {
	accepted = map[int]bool{}
	ch := make(chan reply, 2*len(acts))
	s.mu.Lock()
	if s.replies == nil {
		s.replies = make(map[uint64]chan reply)
	}
	s.replies[key] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.replies, key)
		s.mu.Unlock()
	}()
	net := s.env.Net
	pending := map[int]bool{}
	for _, a := range acts {
		p := a.Members[a.Rank]
		if err := net.SendControl(p, frame(spare.KindActivate, 0, key), a.Encode()); err != nil {
			return false, accepted
		}
		pending[p] = true
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	all = true
	for len(pending) > 0 {
		sig := net.FailureSignal()
		for p := range pending {
			if net.IsLost(p) {
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
		case <-abort:
			return false, accepted
		case <-stop:
			return false, accepted
		}
	}
	return all, accepted
}
