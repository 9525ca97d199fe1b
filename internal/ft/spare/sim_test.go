package spare

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

var (
	simSeed  = flag.Int64("seed", 0, "replay this simulator seed only")
	simTrace = flag.Bool("simtrace", false, "print the simulated messages")
)

// simMsg is one message in flight, or a survivor's own event (decide).
type simMsg struct {
	from, to int // process ids: spares are 0..S-1, survivors 100+
	kind     Kind
	key      uint64
	lost     int // kind 0: a failure notice about lost
	leader   int // KindDrop: the failed leader
	tag      uint64
	decide   bool // to == from: the survivor learns repair key's outcome (its second agreement returned)
}

type simRepair struct {
	key       uint64
	tag       uint64 // what every survivor knows of the attempt (mpi: the agreed context pair)
	survivors []int  // survivors[0] is the leader
	picked    []int
	replies   map[int]Kind
	after     *simRepair   // a later attempt of the same leader reusing after's tag: starts once after decided at its survivors
	started   bool         // its leader sent the activations (or it could not)
	seen      map[int]bool // survivors that processed their decide event
	decided   bool
	told      bool // the leader's word was in the agreement
	committed bool
}

// simStats is what one schedule exercised.
type simStats struct {
	handovers int // outcomes told by a survivor other than the first (its predecessors failed)
	flushed   int // outcomes told before a Drop by a survivor that did not owe them yet
	commits   int // repairs that committed
}

// One schedule: S spares, R concurrent repairs of survivor groups (disjoint,
// or the same processes repairing another communicator: the same leader,
// other keys and tags; or a later attempt of the same leader over some of
// the same survivors, reusing the first one's tag once the first decided
// at them, as a context pair is reused) picking overlapping spares.
// Messages are delivered in a random order that keeps each connection's
// (a message of a process that fails loses a random suffix of what it has
// in flight to each peer); survivors fail at random steps, also between
// their agreement and their word to the spares, and learn of failures by
// notices delayed like messages; a release comes at a random moment. A
// leader that fails may have told the others its pick and key before (the
// attempt decides) or not (they Drop it). Each survivor tells the outcome
// through its Outbox (commit from the leader): it sends once every
// survivor before it is known failed.
func simulate(seed int64, trace bool) (simStats, error) {
	var st simStats
	rng := rand.New(rand.NewSource(seed))
	S := 1 + rng.Intn(4)
	R := 1 + rng.Intn(3)
	spares := make([]Machine, S)
	dead := map[int]bool{}
	knows := map[int]map[int]bool{} // survivor -> failures it learnt
	box := map[int]*Outbox{}
	var q []simMsg
	send := func(m simMsg) { q = append(q, m) }
	reps := make([]*simRepair, R)
	var procs []int // every survivor, once
	for r := range reps {
		rp := &simRepair{key: uint64(r + 1), tag: uint64(1000 + r), replies: map[int]Kind{}, seen: map[int]bool{}}
		switch {
		case r > 0 && rng.Intn(3) == 0:
			rp.survivors = reps[0].survivors // the same processes repair another communicator
		case r > 0 && rng.Intn(2) == 0:
			// A later attempt of reps[0]'s leader with some of its
			// survivors, on the same tag.
			rp.survivors = []int{reps[0].survivors[0]}
			for _, p := range reps[0].survivors[1:] {
				if rng.Intn(2) == 0 {
					rp.survivors = append(rp.survivors, p)
				}
			}
			rp.tag, rp.after = reps[0].tag, reps[0]
		default:
			for i := 0; i < 1+rng.Intn(3); i++ {
				rp.survivors = append(rp.survivors, 100+10*r+i)
			}
		}
		for _, p := range rp.survivors {
			if box[p] == nil {
				box[p], knows[p] = &Outbox{}, map[int]bool{}
				procs = append(procs, p)
			}
		}
		for _, s := range rng.Perm(S)[:1+rng.Intn(min(S, 2))] {
			rp.picked = append(rp.picked, s)
		}
		reps[r] = rp
	}
	sent := map[[2]uint64]int{} // (spare, key) -> outcome copies sent
	tell := func(p int, ts []Tell, first bool) {
		for _, t := range ts {
			if t.Kind != KindDrop && !first {
				st.handovers++
			}
			if t.Kind != KindDrop {
				// Told before it was due: flushed ahead of a Drop.
				for _, x := range Before(t, reps[t.Key-1].survivors, p) {
					if !knows[p][x] {
						st.flushed++
						break
					}
				}
			}
			for _, s := range t.To {
				send(simMsg{from: p, to: s, kind: t.Kind, key: t.Key, leader: t.Leader, tag: t.Tag})
				if t.Kind != KindDrop {
					sent[[2]uint64{uint64(s), t.Key}]++
				}
			}
		}
	}
	start := func(rp *simRepair) {
		if rp.started {
			return
		}
		if a := rp.after; a != nil {
			if !a.decided {
				return
			}
			for _, p := range rp.survivors {
				if !dead[p] && !a.seen[p] {
					return
				}
			}
		}
		rp.started = true
		if leader := rp.survivors[0]; !dead[leader] {
			for _, s := range rp.picked {
				send(simMsg{from: leader, to: s, kind: KindActivate, key: rp.key})
			}
		}
	}
	decide := func(rp *simRepair) {
		if rp.decided || !rp.started {
			return
		}
		leader := rp.survivors[0]
		all := len(rp.replies) == len(rp.picked)
		if !dead[leader] && !all {
			return
		}
		rp.decided = true
		// The leader's word (pick, key, whether all accepted) is in the
		// agreement if it contributed before it failed.
		rp.told = !dead[leader] || rng.Intn(2) == 0
		ok := rp.told && all && rng.Intn(5) != 0 // else a failure during the repair
		for _, s := range rp.picked {
			ok = ok && rp.replies[s] == KindAccept
		}
		rp.committed = ok
		for _, p := range rp.survivors {
			if !dead[p] {
				send(simMsg{from: p, to: p, key: rp.key, decide: true})
			}
		}
	}
	// onDecide: survivor p's second agreement of rp returned; it hands
	// the outcome to its Outbox.
	onDecide := func(p int, rp *simRepair) {
		rp.seen[p] = true
		lost := func(x int) bool { return knows[p][x] }
		leader := rp.survivors[0]
		t := Tell{Kind: KindAbandon, Key: rp.key, Leader: leader, To: rp.picked}
		if rp.committed {
			t.Kind = KindCommit
		}
		if !rp.told {
			// The agreement did without the leader: known failed here.
			knows[p][leader] = true
			t = Tell{Kind: KindDrop, Leader: leader, Tag: rp.tag}
			for s := range spares {
				t.To = append(t.To, s)
			}
		}
		tell(p, box[p].Lost(lost), false)
		tell(p, box[p].Add(t, Before(t, rp.survivors, p), lost), p == rp.survivors[0])
	}
	// crash: p fails; what it has in flight to each peer loses a suffix,
	// and the others learn it by notices.
	crash := func(p int) {
		if dead[p] {
			return
		}
		dead[p] = true
		if trace {
			fmt.Printf("  %d fails\n", p)
		}
		cut := map[int]int{}
		n := map[int]int{}
		for _, m := range q {
			if m.from == p {
				n[m.to]++
			}
		}
		for to, k := range n {
			cut[to] = rng.Intn(k + 1)
		}
		q = slices.DeleteFunc(q, func(m simMsg) bool {
			if m.from != p {
				return false
			}
			cut[m.to]--
			return cut[m.to] < 0
		})
		for s := range spares {
			send(simMsg{from: -1, to: s, lost: p})
		}
		for _, o := range procs {
			if o != p && !dead[o] {
				send(simMsg{from: -1, to: o, lost: p})
			}
		}
	}
	released := false
	for steps := 0; steps < 100000; steps++ {
		for _, rp := range reps {
			start(rp)
			decide(rp)
		}
		if !released && rng.Intn(8) == 0 {
			released = true
			for s := range spares {
				send(simMsg{from: 0, to: s, kind: KindRelease})
			}
		}
		if rng.Intn(10) == 0 { // a survivor fails
			rp := reps[rng.Intn(R)]
			p := rp.survivors[rng.Intn(len(rp.survivors))]
			if rng.Intn(3) == 0 {
				p = rp.survivors[0] // leaders more often
			}
			crash(p)
		}
		if len(q) == 0 {
			done := true
			for _, rp := range reps {
				done = done && rp.decided
			}
			if done {
				break
			}
			continue
		}
		// A random connection's first message.
		i := rng.Intn(len(q))
		for j := range q[:i] {
			if q[j].from == q[i].from && q[j].to == q[i].to {
				i = j
				break
			}
		}
		m := q[i]
		q = append(q[:i], q[i+1:]...)
		if trace {
			fmt.Printf("  %d -> %d: kind %d key %d lost %d decide %v\n", m.from, m.to, m.kind, m.key, m.lost, m.decide)
		}
		if trace && m.kind == KindDrop {
			fmt.Printf("    (drop: leader %d tag %d)\n", m.leader, m.tag)
		}
		if m.to >= 100 { // to a survivor
			if dead[m.to] {
				continue
			}
			switch {
			case m.decide:
				onDecide(m.to, reps[m.key-1])
				if m.to == reps[m.key-1].survivors[0] && rng.Intn(4) == 0 {
					crash(m.to) // the leader fails between its agreement and its word to the spares
				}
			case m.from == -1:
				knows[m.to][m.lost] = true
				tell(m.to, box[m.to].Lost(func(x int) bool { return knows[m.to][x] }), false)
			default: // a spare's reply to a leader
				reps[m.key-1].replies[m.from] = m.kind
			}
			continue
		}
		ev := Event{Kind: m.kind, From: m.from, Key: m.key, Lost: -1}
		if m.kind == 0 {
			ev.Lost = m.lost
		}
		if m.kind == KindActivate {
			ev.Survivors = reps[m.key-1].survivors
			ev.Tag = reps[m.key-1].tag
		}
		if m.kind == KindDrop {
			ev.Leader, ev.Tag = m.leader, m.tag
		}
		if spares[m.to].Phase() == Orphaned {
			// It left as a failed process: the others learn it.
			continue
		}
		act, ok := spares[m.to].Step(ev)
		if ok && act.Reply != 0 {
			send(simMsg{from: m.to, to: act.To, kind: act.Reply, key: act.Key})
		}
		if ok && act.Return && !reps[act.Key-1].committed {
			return st, fmt.Errorf("spare %d became a rank of repair %d, which abandoned", m.to, act.Key)
		}
	}
	if len(q) != 0 {
		return st, fmt.Errorf("the schedule did not end: %d messages in flight", len(q))
	}
	for s := range spares {
		sp := &spares[s]
		if sp.Phase() == Held {
			return st, fmt.Errorf("spare %d ended held by repair %d", s, sp.Key())
		}
	}
	deadIn := func(ps []int) int {
		k := 0
		for _, p := range ps {
			if dead[p] {
				k++
			}
		}
		return k
	}
	for _, rp := range reps {
		// Commit from the leader: a spare hears the outcome from the
		// first survivor, then once more for each teller that failed;
		// and once from each Drop sender of a later attempt of the same
		// leader that flushed it (the Drop senders are a chain too).
		bound := 1 + deadIn(rp.survivors)
		for _, o := range reps {
			if o != rp && o.survivors[0] == rp.survivors[0] && o.decided && !o.told {
				bound += 1 + deadIn(o.survivors[1:])
			}
		}
		for _, s := range rp.picked {
			if got := sent[[2]uint64{uint64(s), rp.key}]; got > bound {
				return st, fmt.Errorf("spare %d was told repair %d's outcome %d times, more than %d (1 + failed tellers)", s, rp.key, got, bound)
			}
		}
		if !rp.committed {
			continue
		}
		st.commits++
		alive := slices.ContainsFunc(rp.survivors, func(p int) bool { return !dead[p] })
		for _, s := range rp.picked {
			sp := &spares[s]
			if alive && (sp.Phase() != Active || sp.Key() != rp.key) {
				return st, fmt.Errorf("repair %d committed with spare %d, which is %v (key %d)", rp.key, s, sp.Phase(), sp.Key())
			}
		}
		for _, o := range reps {
			if o != rp && o.committed {
				for _, s := range rp.picked {
					if slices.Contains(o.picked, s) {
						return st, fmt.Errorf("spare %d taken by repairs %d and %d", s, rp.key, o.key)
					}
				}
			}
		}
	}
	return st, nil
}

// TestSpareSchedules runs seeded schedules of concurrent repairs against
// the spare machine and the survivors' Outboxes: no spare is taken by two
// committed repairs, none becomes a rank of an abandoned one, none stays
// held, every committed repair with a survivor left has all its spares
// active, and a spare is told an outcome at most once more than the
// failed tellers before the one that reached it (every survivor telling
// it, n copies, fails this). The schedules must exercise the hand-over
// (a survivor tells because the ones before it failed) and the flush
// before a Drop.
func TestSpareSchedules(t *testing.T) {
	if *simSeed != 0 {
		if _, err := simulate(*simSeed, *simTrace); err != nil {
			t.Fatalf("seed %d: %v", *simSeed, err)
		}
		return
	}
	n := 10000
	if testing.Short() || raceEnabled {
		n = 2500
	}
	var sum simStats
	for seed := int64(1); seed <= int64(n); seed++ {
		st, err := simulate(seed, false)
		if err != nil {
			t.Fatalf("seed %d: %v (replay: go test ./internal/ft/spare -run TestSpareSchedules -seed %d -simtrace)", seed, err, seed)
		}
		sum.handovers += st.handovers
		sum.flushed += st.flushed
		sum.commits += st.commits
	}
	if sum.commits == 0 || sum.handovers == 0 || sum.flushed == 0 {
		t.Fatalf("%d schedules exercised %d commits, %d hand-overs, %d flushes before a Drop: want each", n, sum.commits, sum.handovers, sum.flushed)
	}
	t.Logf("%d schedules: %d commits, %d hand-overs, %d flushes before a Drop", n, sum.commits, sum.handovers, sum.flushed)
}

// The machine alone: first activation wins, a duplicate is accepted again,
// commit and abandon only for the holding repair, release only when
// waiting, and a held spare whose survivors all failed waits again.
func TestSpareMachine(t *testing.T) {
	var m Machine
	a, _ := m.Step(Event{Kind: KindActivate, From: 7, Key: 1, Survivors: []int{7, 8}, Lost: -1})
	if a.Reply != KindAccept || m.Phase() != Held {
		t.Fatalf("first activation: %+v, phase %v", a, m.Phase())
	}
	if a, _ := m.Step(Event{Kind: KindActivate, From: 9, Key: 2, Survivors: []int{9}, Lost: -1}); a.Reply != KindRefuse {
		t.Fatalf("second repair's activation of a held spare: %+v, want a refusal", a)
	}
	if a, _ := m.Step(Event{Kind: KindActivate, From: 7, Key: 1, Survivors: []int{7, 8}, Lost: -1}); a.Reply != KindAccept {
		t.Fatalf("duplicate activation: %+v, want accept", a)
	}
	if _, ok := m.Step(Event{Kind: KindRelease, Lost: -1}); ok || m.Phase() != Held {
		t.Fatalf("release of a held spare must be ignored: phase %v", m.Phase())
	}
	if _, ok := m.Step(Event{Kind: KindCommit, Key: 2, Lost: -1}); ok || m.Phase() != Held {
		t.Fatalf("commit of another repair must be ignored: phase %v", m.Phase())
	}
	m.Step(Event{Lost: 7})
	if m.Phase() != Held {
		t.Fatalf("one survivor of two lost: phase %v, want held", m.Phase())
	}
	if a, ok := m.Step(Event{Lost: 8}); !ok || !a.Exit || !a.Failed || m.Phase() != Orphaned {
		t.Fatalf("every survivor lost: %+v, phase %v, want orphaned, leaving as failed", a, m.Phase())
	}
	m = Machine{}
	m.Step(Event{Kind: KindActivate, From: 7, Key: 1, Survivors: []int{7}, Lost: -1})
	m.Step(Event{Kind: KindAbandon, Key: 1, Lost: -1})
	if m.Phase() != Waiting {
		t.Fatalf("abandoned: phase %v, want waiting", m.Phase())
	}
	if a, _ := m.Step(Event{Kind: KindActivate, From: 7, Key: 1, Survivors: []int{7}, Lost: -1}); a.Reply != KindRefuse {
		t.Fatalf("a late activation of an abandoned repair: %+v, want refuse", a)
	}
	m.Step(Event{Lost: 7})
	if a, _ := m.Step(Event{Kind: KindActivate, From: 7, Key: 3, Survivors: []int{7}, Lost: -1}); a.Reply != KindRefuse {
		t.Fatalf("activation by a lost leader: %+v, want refuse", a)
	}
	m.Step(Event{Kind: KindActivate, From: 9, Key: 4, Survivors: []int{9}, Lost: -1})
	if a, ok := m.Step(Event{Kind: KindCommit, Key: 4, Lost: -1}); !ok || !a.Return || m.Phase() != Active {
		t.Fatalf("commit: %+v, phase %v", a, m.Phase())
	}
	if _, ok := m.Step(Event{Kind: KindRelease, Lost: -1}); ok || m.Phase() != Active {
		t.Fatalf("release of an active spare: phase %v", m.Phase())
	}
	// Drop: only for the holding attempt (leader and tag), only from one
	// of its survivors; the failed leader's later activations are refused.
	m = Machine{}
	m.Step(Event{Kind: KindActivate, From: 7, Key: 10, Tag: 3, Survivors: []int{7, 8}, Lost: -1})
	m.Step(Event{Kind: KindDrop, From: 8, Leader: 7, Tag: 4, Lost: -1})
	m.Step(Event{Kind: KindDrop, From: 9, Leader: 7, Tag: 3, Lost: -1})
	if m.Phase() != Held {
		t.Fatalf("a drop of another attempt, or from no survivor of it: phase %v, want held", m.Phase())
	}
	m.Step(Event{Kind: KindDrop, From: 8, Leader: 7, Tag: 3, Lost: -1})
	if m.Phase() != Waiting {
		t.Fatalf("dropped by a survivor of its attempt: phase %v, want waiting", m.Phase())
	}
	if a, _ := m.Step(Event{Kind: KindActivate, From: 7, Key: 11, Tag: 5, Survivors: []int{7, 8}, Lost: -1}); a.Reply != KindRefuse {
		t.Fatalf("activation by the dropped leader: %+v, want refuse", a)
	}
	if a, _ := m.Step(Event{Kind: KindActivate, From: 8, Key: 12, Tag: 5, Survivors: []int{8}, Lost: -1}); a.Reply != KindAccept {
		t.Fatalf("activation by another leader after a drop: %+v, want accept", a)
	}
	var w Machine
	if a, ok := w.Step(Event{Kind: KindRelease, Lost: -1}); !ok || !a.Exit || w.Phase() != Released {
		t.Fatalf("release of a waiting spare: %+v, phase %v", a, w.Phase())
	}
	if a, _ := w.Step(Event{Kind: KindActivate, From: 1, Key: 5, Survivors: []int{1}, Lost: -1}); a.Reply != KindRefuse {
		t.Fatalf("activation of a released spare: %+v", a)
	}
}
