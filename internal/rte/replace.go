package rte

import (
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/sparedrive"
)

// ReplaceCall is one Replace attempt (MPIX_Comm_replace) at one survivor
// after its first agreement (who failed, the context pairs): what
// CommFT.Replace runs the spare side and the second agreement from.
type ReplaceCall struct {
	Pair      int    // the repaired communicator's context pair
	Members   []int  // process ids in rank order, before the repair
	Lost      []int  // the failed ranks, ascending
	Survivors []int  // process ids in rank order, the leader (lowest rank) first
	Name      string // the repaired communicator's name
	// Claimed: this survivor claimed the agreed pairs (checked by the
	// second agreement, which ANDs the claims).
	Claimed bool
	// Timeout bounds the wait for a spare's answer (one that does not
	// answer in time refused).
	Timeout time.Duration
	// Activated, if set, is called between the leader's activations and
	// the second agreement, at every survivor (tests).
	Activated func()
}

// ReplaceStep is what a Replace attempt does next (CommFT.Replace).
type ReplaceStep int

const (
	// ReplaceCommit: the attempt commits; the repaired communicator is
	// built from Attempt.Members on the agreed pair.
	ReplaceCommit ReplaceStep = iota
	// ReplaceSpawn: too few spares; Attempt.Spawn processes must be
	// spawned over the survivors (then Attempt.Spawned, SettleSpawned).
	ReplaceSpawn
	// ReplaceLeaderGone: the leader failed before it contributed: the
	// attempt cannot commit, and every spare this process knows was told
	// to drop it.
	ReplaceLeaderGone
	// ReplaceAbandoned: a spare refused or a survivor failed during the
	// repair; the attempt is abandoned (its spares wait again).
	ReplaceAbandoned
)

// ReplaceAttempt is a Replace attempt's spare side past its second
// agreement (CommFT.Replace): the picks, the key, and for an attempt that
// spawns, what the spawned processes are told.
type ReplaceAttempt struct {
	s      *sparedrive.Spares
	rp     *sparedrive.Repair
	word   sparedrive.LeaderWord
	chosen []int // the spares for the failed ranks in order (picked, then spawned)
}

// Replace runs a Replace attempt's spare side and its second agreement
// over the communicator (MPIX_Comm_replace; the first agreement, who
// failed and the free pairs, is AgreeFailed). The leader picks spares
// from its pool and activates them (the others are in the agreement
// meanwhile, sparedrive.Spares.Lead); the agreement ANDs the claims and
// carries the leader's word (the key, the picks, how many must be
// spawned, whether every picked spare accepted). If every survivor
// contributed, every claim held and every spare accepted, the attempt
// commits (the spares are told: Commit); if spares were missing, the
// caller spawns the rest (ReplaceSpawn); else it is abandoned. The error
// is ErrAgreeStopped if abort or the epoch's stop closed first, or an
// *AgreeMismatch if another member's agreement was of another kind (its
// attempt abandoned: the leader settles its picks).
func (f *CommFT) Replace(c ReplaceCall, abort <-chan struct{}) (a *ReplaceAttempt, step ReplaceStep, err error) {
	s := f.r.Spares
	rp := &sparedrive.Repair{Pair: c.Pair, Members: c.Members, Lost: c.Lost, Survivors: c.Survivors,
		Name: c.Name, Timeout: c.Timeout, Abort: abort, Stop: f.r.stop}
	var word []uint64
	if c.Survivors[0] == f.r.Proc {
		word = s.Lead(rp, c.Claimed)
	}
	if c.Activated != nil {
		c.Activated()
	}
	var flags uint64
	if c.Claimed {
		flags = 1
	}
	res, contrib, err := f.run(AgreeKindOf("MPIX_Comm_replace", StepRepair), agree.Value{Flags: flags, Union: agree.SetFromWords(word)}, abort)
	if err != nil {
		if l, told := sparedrive.DecodeLeaderWord(word, len(c.Lost)); word != nil && told && err != ErrAgreeStopped {
			s.Settle(l, false) // the leader's picks are available again
		}
		return nil, 0, err
	}
	all := true
	for _, p := range c.Survivors {
		all = all && contrib.Has(f.procs.Pos(p))
	}
	got, told := s.Heard(rp, res.Union.Words(rp.WordLen()))
	if !told {
		return nil, ReplaceLeaderGone, nil
	}
	a = &ReplaceAttempt{s: s, rp: rp, word: got, chosen: got.Chosen}
	agreed := res.Flags&1 == 1 && all
	if agreed && got.Spawn > 0 {
		return a, ReplaceSpawn, nil
	}
	commit := agreed && got.Accepted
	s.Settle(got, commit)
	if !commit {
		return nil, ReplaceAbandoned, nil
	}
	return a, ReplaceCommit, nil
}

// Members returns the repaired communicator's members: the old ones with
// the chosen spares at the failed ranks.
func (a *ReplaceAttempt) Members() []int { return a.rp.Repaired(a.chosen) }

// Spawn is how many processes the attempt must spawn (ReplaceSpawn).
func (a *ReplaceAttempt) Spawn() int { return a.word.Spawn }

// SpawnFailed ends an attempt whose spawn failed: its picks, none of
// which was asked, are available again.
func (a *ReplaceAttempt) SpawnFailed() { a.s.Unmark(a.chosen) }

// Spawned takes the spawned processes (spawned, for the failed ranks
// without a spare, in order) as the attempt's spares, and returns this
// survivor's contribution to the last agreement (an AND of words, over
// the survivors): the leader (lead) activates the picked and the spawned
// ones and tells who accepted (sparedrive.Spares.LeadSpawned).
func (a *ReplaceAttempt) Spawned(spawned []int, lead bool) uint64 {
	a.s.AddToPool(spawned) // an abandoned attempt returns them; the end of the job releases them
	a.chosen = append(slices.Clone(a.chosen), spawned...)
	a.s.MarkTaken(a.chosen)
	if !lead {
		return sparedrive.SpawnedAll
	}
	return a.s.LeadSpawned(a.rp, a.word.Key, a.chosen)
}

// SettleSpawned ends an attempt that spawned, from the last agreement's
// word (agreed; ok: the agreement succeeded; known: its value is agreed,
// it failed at most with a process failure): the spares commit or
// abandon. It reports whether the attempt commits.
func (a *ReplaceAttempt) SettleSpawned(agreed uint64, ok, known bool) bool {
	return a.s.SettleSpawned(a.word.Key, a.chosen, agreed, ok, known)
}
