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

// simMsg is one message in flight.
type simMsg struct {
	from, to int // process ids: spares are 0..S-1, survivors 100+
	kind     Kind
	key      uint64
	lost     int // kind 0: a failure notice about lost
	leader   int // KindDrop: the failed leader
	tag      uint64
}

type simRepair struct {
	key       uint64
	tag       uint64 // what every survivor knows of the attempt (mpi: the agreed context pair)
	survivors []int  // survivors[0] is the leader
	picked    []int
	replies   map[int]Kind
	decided   bool
	committed bool
}

// One schedule: S spares, R concurrent repairs of survivor groups (disjoint,
// or one group running two repairs at once: the same leader, other keys
// and tags) picking overlapping spares, messages delivered in random order
// (a message of a process that fails may be lost), survivors failing at
// random, a release at a random moment. A leader that fails may have told
// the others its pick and key before (they send the outcome by key) or not
// (they send Drop to every spare).
func simulate(seed int64, trace bool) error {
	rng := rand.New(rand.NewSource(seed))
	S := 1 + rng.Intn(4)
	R := 1 + rng.Intn(3)
	spares := make([]Machine, S)
	dead := map[int]bool{}
	var q []simMsg
	send := func(m simMsg) { q = append(q, m) }
	reps := make([]*simRepair, R)
	for r := range reps {
		rp := &simRepair{key: uint64(r + 1), tag: uint64(1000 + r), replies: map[int]Kind{}}
		if r > 0 && rng.Intn(3) == 0 {
			rp.survivors = reps[0].survivors // the same processes repair another communicator
		} else {
			for i := 0; i < 1+rng.Intn(3); i++ {
				rp.survivors = append(rp.survivors, 100+10*r+i)
			}
		}
		for _, s := range rng.Perm(S)[:1+rng.Intn(min(S, 2))] {
			rp.picked = append(rp.picked, s)
			send(simMsg{from: rp.survivors[0], to: s, kind: KindActivate, key: rp.key})
		}
		reps[r] = rp
	}
	released := false
	decide := func(rp *simRepair) {
		if rp.decided {
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
		told := !dead[leader] || rng.Intn(2) == 0
		ok := told && all && rng.Intn(5) != 0 // else a failure during the repair
		for _, s := range rp.picked {
			ok = ok && rp.replies[s] == KindAccept
		}
		rp.committed = ok
		kind := KindAbandon
		if ok {
			kind = KindCommit
		}
		for _, p := range rp.survivors {
			if dead[p] {
				continue
			}
			if !told {
				for s := range spares {
					send(simMsg{from: p, to: s, kind: KindDrop, leader: leader, tag: rp.tag})
				}
				continue
			}
			for _, s := range rp.picked {
				send(simMsg{from: p, to: s, kind: kind, key: rp.key})
			}
		}
	}
	for steps := 0; steps < 10000; steps++ {
		for _, rp := range reps {
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
			if !dead[p] {
				dead[p] = true
				if trace {
					fmt.Printf("  %d fails\n", p)
				}
				for s := range spares {
					send(simMsg{from: -1, to: s, lost: p})
				}
				// Its messages in flight may be lost.
				q = slices.DeleteFunc(q, func(m simMsg) bool { return m.from == p && rng.Intn(2) == 0 })
			}
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
		i := rng.Intn(len(q))
		m := q[i]
		q = append(q[:i], q[i+1:]...)
		if trace {
			fmt.Printf("  %d -> %d: kind %d key %d lost %d\n", m.from, m.to, m.kind, m.key, m.lost)
		}
		if trace && m.kind == KindDrop {
			fmt.Printf("    (drop: leader %d tag %d)\n", m.leader, m.tag)
		}
		if m.to >= 100 { // a reply to a leader
			rp := reps[m.key-1]
			if !dead[m.to] {
				rp.replies[m.from] = m.kind
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
			return fmt.Errorf("spare %d became a rank of repair %d, which abandoned", m.to, act.Key)
		}
	}
	if len(q) != 0 {
		return fmt.Errorf("the schedule did not end: %d messages in flight", len(q))
	}
	for s := range spares {
		sp := &spares[s]
		if sp.Phase() == Held {
			return fmt.Errorf("spare %d ended held by repair %d", s, sp.Key())
		}
	}
	for _, rp := range reps {
		if !rp.committed {
			continue
		}
		alive := slices.ContainsFunc(rp.survivors, func(p int) bool { return !dead[p] })
		for _, s := range rp.picked {
			sp := &spares[s]
			if alive && (sp.Phase() != Active || sp.Key() != rp.key) {
				return fmt.Errorf("repair %d committed with spare %d, which is %v (key %d)", rp.key, s, sp.Phase(), sp.Key())
			}
		}
		for _, o := range reps {
			if o != rp && o.committed {
				for _, s := range rp.picked {
					if slices.Contains(o.picked, s) {
						return fmt.Errorf("spare %d taken by repairs %d and %d", s, rp.key, o.key)
					}
				}
			}
		}
	}
	return nil
}

// TestSpareSchedules runs seeded schedules of concurrent repairs against
// the spare machine: no spare is taken by two committed repairs, none
// becomes a rank of an abandoned one, none stays held, and every
// committed repair with a survivor left has all its spares active.
func TestSpareSchedules(t *testing.T) {
	if *simSeed != 0 {
		if err := simulate(*simSeed, *simTrace); err != nil {
			t.Fatalf("seed %d: %v", *simSeed, err)
		}
		return
	}
	n := 10000
	if testing.Short() || raceEnabled {
		n = 2500
	}
	commits := 0
	for seed := int64(1); seed <= int64(n); seed++ {
		if err := simulate(seed, false); err != nil {
			t.Fatalf("seed %d: %v (replay: go test ./internal/ft/spare -run TestSpareSchedules -seed %d -simtrace)", seed, err, seed)
		}
		commits++
	}
	if commits == 0 {
		t.Fatal("no schedule ran")
	}
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
