package sparedrive

import (
	"slices"
	"time"
)

// Repair is what every survivor of one Replace attempt knows once the
// attempt's first agreement decided it (mpi/spare.go runs the
// agreements): the repaired communicator's context pair, its members
// before the repair and which ranks failed, the survivors (the leader,
// the lowest surviving rank, first) and the communicator's name. The
// driver turns it into the leader's picks and activations, the leader's
// word the second agreement carries, and the outcome told to the spares.
type Repair struct {
	Pair      int    // the repaired communicator's context pair
	Members   []int  // process ids in rank order, before the repair
	Lost      []int  // the failed ranks, ascending
	Survivors []int  // process ids, the leader first
	Name      string // the repaired communicator's name
	// Timeout bounds the wait for a spare's answer (one that does not
	// answer in time refused); Abort and Stop end the wait (the job's
	// abort, the epoch's stop).
	Timeout     time.Duration
	Abort, Stop <-chan struct{}
}

// WordLen is the number of agreement words the leader's word takes for
// r's failed ranks (what the second agreement's union is read over).
func (r *Repair) WordLen() int { return LeaderWordLen(len(r.Lost)) }

// Repaired returns the repaired communicator's members: r.Members with
// chosen[i] at the failed rank r.Lost[i].
func (r *Repair) Repaired(chosen []int) []int {
	m := slices.Clone(r.Members)
	for i, rank := range r.Lost {
		m[rank] = chosen[i]
	}
	return m
}

func (r *Repair) leader() int { return r.Survivors[0] }

// Lead is the leader's part of attempt r, between the two agreements:
// it picks a spare for each failed rank (marked taken whatever the
// outcome: a refused spare serves another repair), and when there is one
// for each and its claim of the pair held (claimed), activates them and
// waits for their answers. It returns the leader's word encoded: the
// union it contributes to the second agreement (the others contribute
// none), read back by Heard.
func (s *Spares) Lead(r *Repair, claimed bool) []uint64 {
	l := LeaderWord{Key: s.NextKey()}
	avail := s.Available()
	n := min(len(avail), len(r.Lost))
	l.Chosen, l.Spawn = avail[:n:n], len(r.Lost)-n
	s.MarkTaken(l.Chosen)
	if l.Spawn > 0 || !claimed {
		// Spawning: the shrunk communicator's leader activates them all
		// once the rest are spawned (LeadSpawned). A failed claim:
		// nothing to ask.
		return l.Encode()
	}
	all, answered := s.activateRepair(r, l.Key, l.Chosen)
	for i, p := range l.Chosen {
		if i >= 64 || !answered[p] {
			l.Refused |= 1 << min(i, 63)
		}
	}
	l.Accepted = all
	return l.Encode()
}

// Heard reads the second agreement's union (words, at least WordLen of
// them; missing ones read as 0): the leader's word. told is false when the
// leader failed before it contributed: nobody knows whom it activated, so
// every survivor tells every spare it knows to drop the attempt (Drop),
// here (told by the first survivor after the leader not known failed).
// At a survivor other than the leader the picks are marked taken (the
// leader marked them in Lead).
func (s *Spares) Heard(r *Repair, words []uint64) (l LeaderWord, told bool) {
	l, told = DecodeLeaderWord(words, len(r.Lost))
	if !told {
		s.Drop(r.leader(), r.Pair, r.Survivors)
		return l, false
	}
	if r.leader() != s.env.Self {
		s.MarkTaken(l.Chosen)
	}
	s.mu.Lock()
	s.heardLocked(l.Key, r.Survivors)
	s.mu.Unlock()
	return l, true
}

// Settle ends an attempt that did not spawn at the spares it picked:
// Commit (they become the ranks) or Abandon (they wait again), told by
// the first survivor not known failed (Decide); abandoned, the picks that
// may serve again (Back) return to the pool.
func (s *Spares) Settle(l LeaderWord, commit bool) {
	s.Decide(l.Key, l.Chosen, commit)
	if !commit {
		s.Unmark(l.Back())
	}
}

// activateRepair sends each spare in chosen (for the failed rank
// r.Lost[i]) the activation of attempt key and waits for every answer
// (Activate).
func (s *Spares) activateRepair(r *Repair, key uint64, chosen []int) (all bool, accepted map[int]bool) {
	members := r.Repaired(chosen)
	acts := make([]*Activation, len(r.Lost))
	for i, rank := range r.Lost {
		acts[i] = &Activation{Key: key, Pair: r.Pair, Rank: rank, Members: members, Survivors: r.Survivors, Name: r.Name}
	}
	return s.Activate(key, acts, r.Timeout, r.Abort, r.Stop)
}

// SpawnedAll is what a survivor other than the shrunk communicator's
// leader contributes to the last agreement of an attempt that spawned
// (the agreement ANDs the words; LeadSpawned's word is the leader's).
const SpawnedAll = ^uint64(0)

// LeadSpawned is the shrunk communicator's leader's part of an attempt
// that spawned the missing spares: it activates chosen (the picked and
// the spawned, for r.Lost in order) and returns its word for the last
// agreement: bit 0, every one accepted; bit 1+i, chosen[i] may serve
// again if the attempt is abandoned (it answered).
func (s *Spares) LeadSpawned(r *Repair, key uint64, chosen []int) uint64 {
	bits := SpawnedAll
	all, answered := s.activateRepair(r, key, chosen)
	if !all {
		bits &^= 1
	}
	for i, p := range chosen {
		if i < 63 && !answered[p] {
			bits &^= 1 << (i + 1)
		}
	}
	return bits
}

// SettleSpawned ends an attempt that spawned, from the last agreement's
// word (agreed; known false when the agreement failed with an error other
// than a process failure, so that its value is not agreed): Commit when
// bit 0 is set and commit holds, else Abandon (told by the first survivor
// not known failed: Decide), and the chosen that may serve again return
// to the pool. It reports whether the attempt commits.
func (s *Spares) SettleSpawned(key uint64, chosen []int, agreed uint64, ok, known bool) bool {
	commit := ok && agreed&1 == 1
	s.Decide(key, chosen, commit)
	if !commit && known {
		var back []int
		for i, p := range chosen {
			if i < 63 && agreed&(1<<(i+1)) != 0 {
				back = append(back, p)
			}
		}
		s.Unmark(back)
	}
	return commit
}
