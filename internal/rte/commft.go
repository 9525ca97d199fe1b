package rte

import (
	"fmt"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/ftdrive"
	"github.com/ftmpi/ftmpi/internal/trace"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// CommFT is the fault-tolerance state of one communicator in one process,
// made by the runtime (Rank.NewCommFT): the overlay of its members (both
// groups of an intercommunicator, sorted), the reliable broadcast of its
// revocation and its agreement instances (internal/rte/ftdrive), and the
// agreements the API's fault-tolerance calls are made of, each in the
// API's terms (flags, process ids, bitmap words): MPI_Comm_agree's
// (Agree), the decision of who failed behind MPI_Comm_shrink, Replace and
// Validate (AgreeFailed), the ANDs of a flag or a bitmap (AgreeFlags,
// AgreeAnd), connect/accept's all-or-nothing verdicts (AgreeVote,
// AgreeVerdict) and a Replace attempt's spare side (Repair). The API keeps
// the argument checks, the error classes, the index of its communicators
// by context and the order in which failures became known.
//
// An agreement call returns ErrAgreeStopped when abort (the caller's) or
// the epoch's stop closed before the decision. Every member must make the
// same calls in the same order: each instance carries its kind
// (AgreeKind, agreekind.go), and an instance whose members' kinds differ
// fails at every member with the same *AgreeMismatch.
type CommFT struct {
	r     *Rank
	cfg   CommFTConfig
	procs ftdrive.Procs
	rv    *ftdrive.Revocation
	ag    *ftdrive.Agreements

	// For the hang report (AgreeState): the agreements begun here, and
	// the instance (+1; 0: none) and kind of the one waited in.
	begun, waitSeq, waitKind atomic.Uint64
}

// CommFTConfig is what Rank.NewCommFT makes a communicator's
// fault-tolerance state from.
type CommFTConfig struct {
	// Ctx is the communicator's context id (its frames carry it).
	Ctx uint32
	// Members is the process ids of every member (both groups of an
	// intercommunicator), sorted, without repeats; kept, not copied, and
	// never changed. nil: the processes 0..N-1.
	Members []int
	N       int
	// Known lists the processes known failed when the state is made.
	Known []int
	// Order returns the processes known failed, in the order their
	// failure became known (read when an agreement instance is created).
	Order func() []int
	// Failed returns the members known failed here (read at the start of
	// each agreement).
	Failed func() []int
	// Apply revokes the communicator in this process (a revocation's
	// first arrival).
	Apply func()
	// Segment returns the rendezvous name of the agreements' shared
	// segment (shmagree.Open), "" for none (asked once, before the first
	// agreement, and only for a communicator whose size a segment fits:
	// ftdrive.SegmentFits).
	Segment func() string
	// Parked, if set, is called before each agreement with the step of
	// agreement frames, for those that arrived before the communicator
	// was known here.
	Parked func(step func(from int, h transport.Header, payload []byte))
	// Name returns the communicator's name (the recovery timeline's
	// revocations and agreements carry it; nil: "").
	Name func() string
}

// NewCommFT makes the fault-tolerance state of one communicator (no MPI
// counterpart: the runtime's half of a communicator).
func (r *Rank) NewCommFT(c CommFTConfig) (*CommFT, error) {
	procs := ftdrive.IdentityProcs(c.N)
	if c.Members != nil {
		procs = ftdrive.SortedProcs(c.Members)
	}
	ov := ftdrive.NewOverlay(r.Eng, c.Ctx, r.Proc, procs)
	rv, err := ftdrive.NewRevocation(ov, c.Known, c.Apply)
	if err != nil {
		return nil, fmt.Errorf("revocation of context %d: %w", c.Ctx, err)
	}
	return &CommFT{r: r, cfg: c, procs: procs, rv: rv, ag: ftdrive.NewAgreements(ov, c.Order)}, nil
}

// Has reports whether process p is a member.
func (f *CommFT) Has(p int) bool {
	_, ok := f.procs.Index(p)
	return ok
}

// Revoke broadcasts the communicator's revocation (the caller applied it
// here already). It sends: not from a transport callback.
func (f *CommFT) Revoke() { f.rv.Revoke() }

// RevokeCall is MPI_Comm_revoke's part in the runtime: the revocation
// sent is recorded in the recovery timeline (with whether the
// communicator was revoked here already), applied here (Apply) and
// broadcast. It sends: not from a transport callback.
func (f *CommFT) RevokeCall() {
	if t := f.r.rec(); t != nil {
		t.Instant(trace.CatRevoke, trace.NameRevokeTx, map[string]any{"comm": f.name(), "ctx": f.cfg.Ctx, "already": f.r.Eng.IsRevoked(f.cfg.Ctx)})
	}
	f.cfg.Apply()
	f.rv.Revoke()
}

// name is the communicator's name (CommFTConfig.Name).
func (f *CommFT) name() string {
	if f.cfg.Name == nil {
		return ""
	}
	return f.cfg.Name()
}

// OnRevoke handles a ctl.Revoke frame for the communicator from process
// from (a transport callback).
func (f *CommFT) OnRevoke(from int, h transport.Header) { f.rv.OnRevoke(from, h) }

// Step handles a ctl.Agree frame for the communicator from process from.
func (f *CommFT) Step(from int, h transport.Header, payload []byte) { f.ag.Step(from, h, payload) }

// LostAll tells the revocation's broadcast and every agreement instance
// that peers failed, learnt together (the engine's lost hook).
func (f *CommFT) LostAll(peers []int) {
	f.rv.LostAll(peers)
	f.ag.LostAll(peers)
}

// OpenSegment maps the agreements' shared segment now rather than in the
// first agreement.
func (f *CommFT) OpenSegment() {
	f.useSegment()
	f.ag.OpenSegment()
}

// Close releases the agreements' shared segment, if any (the
// communicator is freed).
func (f *CommFT) Close() { f.ag.Close() }

func (f *CommFT) useSegment() {
	if f.ag.SegmentSet() {
		return
	}
	f.ag.UseSegment(func() string {
		if f.cfg.Segment == nil || !ftdrive.SegmentFits(f.procs.Len()) {
			return ""
		}
		return f.cfg.Segment()
	})
}

// run runs one agreement instance of kind kind with contribution v. The
// error is ErrAgreeStopped (abort or the epoch's stop closed first) or,
// when the members' kinds differed on this instance, an *AgreeMismatch,
// the same at every member (the kinds are part of the decided value).
func (f *CommFT) run(kind AgreeKind, v agree.Value, abort <-chan struct{}) (agree.Value, agree.Set, error) {
	f.useSegment()
	seq := f.ag.Begin()
	if f.cfg.Parked != nil {
		f.cfg.Parked(f.ag.Step)
	}
	t := f.r.rec() // the recovery timeline: the agreement's span, from the wait's start
	start := t.Begin()
	f.begun.Store(seq + 1)
	f.waitKind.Store(uint64(kind))
	f.waitSeq.Store(seq + 1)
	val, contrib, ok := f.ag.Await(seq, v.OfKind(uint32(kind)), f.cfg.Failed, abort, f.r.stop)
	f.waitSeq.Store(0)
	if t != nil {
		t.Span(trace.CatAgree, trace.NameAgree, start, map[string]any{"comm": f.name(), "ctx": f.cfg.Ctx, "result": val.Flags, "decided": ok, "seq": seq, "kind": kind.String()})
	}
	if !ok {
		return val, contrib, ErrAgreeStopped
	}
	if val.Mismatched() {
		other := AgreeKind(val.KindMin)
		if other == kind {
			other = AgreeKind(val.KindMax)
		}
		return val, contrib, &AgreeMismatch{Mine: kind, Other: other, Seq: seq}
	}
	return val, contrib, nil
}

// AgreeState is what a hang answer says of a communicator's agreements
// at one member (no MPI counterpart).
type AgreeState struct {
	// Begun is how many agreements this member began on it (instances
	// 0..Begun-1).
	Begun uint64
	// Waiting: it waits in instance Seq, of kind Kind.
	Waiting bool
	Seq     uint64
	Kind    AgreeKind
}

// AgreeState returns the communicator's agreements at this member, for a
// hang answer (agreements out of step are named by the report).
func (f *CommFT) AgreeState() AgreeState {
	st := AgreeState{Begun: f.begun.Load()}
	if s := f.waitSeq.Load(); s != 0 {
		st.Waiting, st.Seq, st.Kind = true, s-1, AgreeKind(f.waitKind.Load())
	}
	return st
}

// addAll adds the overlay positions of the members among procs to s.
func (f *CommFT) addAll(s *agree.Set, procs []int) {
	for _, p := range procs {
		if i, ok := f.procs.Index(p); ok {
			s.Add(i)
		}
	}
}

// AgreeCall is a member's part in MPI_Comm_agree (CommFT.Agree).
type AgreeCall struct {
	// Flags is the member's contribution.
	Flags uint64
	// Failed and Acked are the process ids of the members known failed
	// here and of those whose failure counts as acknowledged here.
	Failed, Acked []int
	// Local is this member's group of an intercommunicator (process ids;
	// each group learns the AND of the other group's flags); nil for an
	// intracommunicator.
	Local []int
	// Kind is the agreement's kind (AgreeKindOf: MPI_Comm_agree's, or a
	// file's open or close verdict).
	Kind AgreeKind
}

// AgreeOutcome is MPI_Comm_agree's decision at one member.
type AgreeOutcome struct {
	// Flags is the AND of the contributions (of the other group's, on
	// an intercommunicator).
	Flags uint64
	// Missing is the members that did not contribute (they failed; the
	// engine knows it once Agree returns).
	Missing []int
	// Unacked is the first of Missing whose failure not every
	// contributor acknowledged, -1 if none.
	Unacked int
}

// Agree runs MPI_Comm_agree's agreement (MPIX_Comm_agree): the AND of the
// members' flags, the failures seen and whether they were acknowledged
// (Inter, intersected over the contributors, holds a failure only if
// every contributor acknowledged it). On an intercommunicator each
// group's flags travel in their own 64 positions of Inter above the
// members' (seed 002 A.3.1), the other group's set to 1, so intersecting
// gives each group's AND.
//
// The error is ErrAgreeStopped or an *AgreeMismatch (see run).
func (f *CommFT) Agree(a AgreeCall, abort <-chan struct{}) (AgreeOutcome, error) {
	var v agree.Value
	v.Flags = a.Flags
	f.addAll(&v.Union, a.Failed)
	f.addAll(&v.Inter, a.Acked)
	n := f.procs.Len()
	inter := a.Local != nil
	var mine, remote int
	if inter {
		mine, remote = n, n+64
		if !containsProc(a.Local, f.procs.At(0)) {
			mine, remote = remote, mine
		}
		for b := 0; b < 64; b++ {
			if a.Flags&(1<<b) != 0 {
				v.Inter.Add(mine + b)
			}
			v.Inter.Add(remote + b)
		}
		v.Flags = ^uint64(0)
	}
	val, contrib, err := f.run(a.Kind, v, abort)
	if err != nil {
		return AgreeOutcome{}, err
	}
	out := AgreeOutcome{Flags: val.Flags, Unacked: -1}
	if inter {
		out.Flags = 0
		for b := 0; b < 64; b++ {
			if val.Inter.Has(remote + b) {
				out.Flags |= 1 << b
			}
		}
	}
	// A process that did not contribute failed (the agreement excludes
	// only failed processes), though this process may not have heard of
	// it yet: the engine learns it here, so that the caller's error names
	// a failure the engine knows.
	for _, i := range contrib.Missing(n).Members() { // (not a look at every member)
		p := f.procs.At(i)
		if !f.r.Eng.IsLost(p) {
			f.r.Eng.FailPeer(p, fmt.Errorf("rank %d failed (excluded from an agreement)", p))
		}
		out.Missing = append(out.Missing, p)
		if out.Unacked < 0 && !val.Inter.Has(i) {
			out.Unacked = p
		}
	}
	return out, nil
}

func containsProc(procs []int, p int) bool {
	for _, q := range procs {
		if q == p {
			return true
		}
	}
	return false
}

// AgreeFlags runs an agreement of kind kind on the AND of the members'
// flags (the error as run's).
func (f *CommFT) AgreeFlags(kind AgreeKind, flags uint64, abort <-chan struct{}) (uint64, error) {
	val, _, err := f.run(kind, agree.Value{Flags: flags}, abort)
	return val.Flags, err
}

// AgreeAnd runs an agreement of kind kind on the AND of the members'
// bitmaps: words is this member's, replaced by the result (the error as
// run's).
func (f *CommFT) AgreeAnd(kind AgreeKind, words []uint64, abort <-chan struct{}) error {
	val, _, err := f.run(kind, agree.Value{Flags: 1, Inter: agree.SetFromWords(words)}, abort)
	if err != nil {
		return err
	}
	copy(words, val.Inter.Words(len(words)))
	return nil
}

// AgreeFailed runs the agreement that decides who failed (Shrink's,
// Replace's and Validate's): the members known failed at some contributor
// (known: here) and those that failed before contributing, as sorted
// process ids; window, if not nil, is this member's bitmap, replaced by
// the AND of the contributors' (the context-id pairs free at every one).
// kind is the calling API's (AgreeKindOf(op, StepFailed)); the error as
// run's.
func (f *CommFT) AgreeFailed(kind AgreeKind, known []int, window []uint64, abort <-chan struct{}) ([]int, error) {
	v := agree.Value{Flags: 1, Inter: agree.SetFromWords(window)}
	f.addAll(&v.Union, known)
	val, contrib, err := f.run(kind, v, abort)
	if err != nil {
		return nil, err
	}
	if window != nil {
		copy(window, val.Inter.Words(len(window)))
	}
	// From the positions decided failed or missing from the contributors
	// (in time of those sets' runs, not of the members).
	var failed []int
	n := f.procs.Len()
	for _, i := range val.Union.Union(contrib.Missing(n)).Members() {
		if i >= n {
			break
		}
		failed = append(failed, f.procs.At(i))
	}
	return failed, nil
}
