package sparedrive

// LeaderWord is what the leader of a repair attempt tells the other
// survivors in the repair's second agreement (the agreement's union, to
// which nobody else contributes).
type LeaderWord struct {
	Key      uint64
	Accepted bool   // every picked spare accepted (with Spawn 0)
	Spawn    int    // failed ranks without a spare: to spawn
	Refused  uint64 // bit i: Chosen[i] refused, failed or did not answer (it does not go back to the pool)
	Chosen   []int  // the spares picked, for the failed ranks in order
}

// LeaderWordLen is the length in words of a LeaderWord for n failed
// ranks: key, flags and spawn count, refused, then the picks.
func LeaderWordLen(n int) int { return 3 + n }

// Encode returns the words (nil for the zero word: not the leader). The
// flags word: bit 0, the leader contributed (its word is there at all);
// bit 1, accepted; the spawn count from bit 8.
func (l LeaderWord) Encode() []uint64 {
	if l.Key == 0 {
		return nil
	}
	out := make([]uint64, 0, LeaderWordLen(len(l.Chosen)+l.Spawn))
	fl := uint64(1) | uint64(l.Spawn)<<8
	if l.Accepted {
		fl |= 2
	}
	out = append(out, l.Key, fl, l.Refused)
	for _, p := range l.Chosen {
		out = append(out, uint64(p)+1)
	}
	return out
}

// DecodeLeaderWord reads the agreed words for n failed ranks (at least
// LeaderWordLen(n) of them; missing words read as 0); told is false when
// the leader did not contribute.
func DecodeLeaderWord(words []uint64, n int) (l LeaderWord, told bool) {
	at := func(i int) uint64 {
		if i < len(words) {
			return words[i]
		}
		return 0
	}
	if at(1)&1 == 0 {
		return LeaderWord{}, false
	}
	l.Key, l.Accepted, l.Spawn, l.Refused = at(0), at(1)&2 != 0, int(at(1)>>8), at(2)
	if l.Spawn > n {
		l.Spawn = n // cannot happen: the leader wrote it for n
	}
	for i := range n - l.Spawn {
		l.Chosen = append(l.Chosen, int(at(3+i))-1)
	}
	return l, true
}

// Back returns the picked spares that may serve again after an abandoned
// attempt: those that accepted (they wait again) or were not asked.
func (l LeaderWord) Back() []int {
	var out []int
	for i, p := range l.Chosen {
		if i < 64 && l.Refused&(1<<i) == 0 {
			out = append(out, p)
		}
	}
	return out
}
