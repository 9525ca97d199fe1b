package reincarnate

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

var (
	simSeed  = flag.Int64("seed", 0, "replay this simulator seed only")
	simTrace = flag.Bool("simtrace", false, "print the simulated rounds")
)

// Two ranks fail at once; one survivor saw 3 then 1, another 1 then 3:
// the agreed set is the same set, so is the plan: rank 1 takes the lowest
// spare, rank 3 the next, epoch 1.
func TestConcurrentFailuresAnyOrder(t *testing.T) {
	s := Initial(4, []int{5, 4})
	a, err := Decide(s, []int{3, 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decide(s, []int{1, 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []Take{{Rank: 1, Proc: 4, Incarnation: 1}, {Rank: 3, Proc: 5, Incarnation: 1}}
	if !slices.Equal(a.Takes, want) || !slices.Equal(b.Takes, want) || !a.Next.Equal(b.Next) {
		t.Fatalf("plans %+v and %+v, want takes %+v", a, b, want)
	}
	if a.Next.Epoch != 1 || !slices.Equal(a.Next.Procs, []int{0, 4, 2, 5}) || len(a.Next.Pool) != 0 {
		t.Fatalf("next state %+v", a.Next)
	}
	if s.Epoch != 0 || !slices.Equal(s.Procs, []int{0, 1, 2, 3}) || !slices.Equal(s.Pool, []int{4, 5}) {
		t.Fatalf("Decide changed its input: %+v", s)
	}
}

// A spare in the agreed set is skipped; a taken spare that dies makes its
// rank fail again (incarnation 2); a dead spare alone starts no epoch.
func TestDeadSparesAndAdoptedKilled(t *testing.T) {
	s := Initial(3, []int{3, 4, 5})
	p, err := Decide(s, []int{3, 0}) // spare 3 and rank 0's process
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Takes, []Take{{Rank: 0, Proc: 4, Incarnation: 1}}) || !slices.Equal(p.Next.Pool, []int{5}) {
		t.Fatalf("plan %+v", p)
	}
	p, err = Decide(p.Next, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Takes, []Take{{Rank: 0, Proc: 5, Incarnation: 2}}) || p.Next.Epoch != 2 {
		t.Fatalf("adopted spare killed: plan %+v", p)
	}
	q, err := Decide(Initial(2, []int{2, 3}), []int{3, 9}) // 9: not in the state
	if err != nil || len(q.Takes) != 0 || q.Next.Epoch != 0 || !slices.Equal(q.Next.Pool, []int{2}) {
		t.Fatalf("only a spare died: plan %+v, %v", q, err)
	}
}

// More failed ranks than waiting spares: one error naming the ranks and
// the spares left.
func TestNoSpareLeft(t *testing.T) {
	_, err := Decide(Initial(4, []int{4}), []int{2, 1, 4})
	if !errors.Is(err, ErrNoSpare) {
		t.Fatalf("error %v, want ErrNoSpare", err)
	}
	want := "no launcher to start processes: rank(s) [1 2] failed, 0 spare process(es) waiting ([]): not enough waiting spare processes, the job cannot continue"
	if err.Error() != want {
		t.Fatalf("error %q\nwant  %q", err, want)
	}
}

// simProc is one live process of the simulation.
type simProc struct {
	state State
	seen  map[int]bool // failures notified to it
}

// simulate runs one schedule: N ranks and K spares; processes (ranks,
// waiting spares, adopted spares) fail at random moments, even during a
// round; every failure is notified to every live process in its own
// random order; a round starts when some live rank knows of a failure its
// State still counts; the agreement (a Union, as internal/ft/agree gives
// it) decides a set holding every live participant's proposal and, for a
// participant that failed during the round, its proposal or not; every
// live participant decides; the activated spares that are alive get the
// Next state. Checked: every live participant gets the same Plan (or the
// same error), no process serves two ranks or is both a rank and a spare,
// a spare known dead is never taken, and at the end every live process
// holds the same State with no process known dead in it.
func simulate(seed int64, trace bool, decide func(State, []int) (Plan, error)) (stats simStats, err error) {
	rng := rand.New(rand.NewSource(seed))
	n := 2 + rng.Intn(5)
	k := rng.Intn(5)
	logf := func(format string, a ...any) {
		if trace {
			fmt.Printf("seed %d: "+format+"\n", append([]any{seed}, a...)...)
		}
	}
	var poolIDs []int
	for i := n; i < n+k; i++ {
		poolIDs = append(poolIDs, i)
	}
	alive := map[int]*simProc{} // every live process (ranks and waiting spares)
	for p := 0; p < n+k; p++ {
		alive[p] = &simProc{state: Initial(n, poolIDs), seen: map[int]bool{}}
	}
	dead := map[int]bool{}
	pending := map[int][]int{} // notices not yet delivered, per receiver
	kill := func(p int) {
		if dead[p] {
			return
		}
		dead[p] = true
		delete(alive, p)
		delete(pending, p)
		for q := range alive {
			pending[q] = append(pending[q], p)
			rng.Shuffle(len(pending[q]), func(i, j int) { pending[q][i], pending[q][j] = pending[q][j], pending[q][i] })
		}
		logf("process %d fails", p)
	}
	ranksOf := func() []int { // live processes serving ranks (by any live process's view)
		var ps []int
		for p, sp := range alive {
			if slices.Contains(sp.state.Procs, p) {
				ps = append(ps, p)
			}
		}
		slices.Sort(ps)
		return ps
	}
	kills := rng.Intn(k + 3)
	for step := 0; step < 200; step++ {
		if kills > 0 && rng.Intn(3) == 0 && len(alive) > 1 {
			var ps []int
			for p := range alive {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			kill(ps[rng.Intn(len(ps))])
			kills--
		}
		for q, ns := range pending { // deliver some notices
			for len(ns) > 0 && rng.Intn(2) == 0 {
				alive[q].seen[ns[0]] = true
				ns = ns[1:]
			}
			pending[q] = ns
		}
		parts := ranksOf()
		if len(parts) == 0 {
			return stats, nil // every rank failed: nothing left to decide
		}
		start := false
		for _, p := range parts {
			sp := alive[p]
			for f := range sp.seen {
				if slices.Contains(sp.state.Procs, f) || slices.Contains(sp.state.Pool, f) {
					start = true
				}
			}
		}
		if !start {
			if kills == 0 && len(pending) == 0 {
				break
			}
			continue
		}
		// A round. Proposals now; some participants may fail during it.
		agreed := map[int]bool{}
		proposals := map[int][]int{}
		for _, p := range parts {
			for f := range alive[p].seen {
				proposals[p] = append(proposals[p], f)
			}
		}
		if kills > 0 && rng.Intn(4) == 0 && len(parts) > 1 {
			kill(parts[rng.Intn(len(parts))])
			kills--
		}
		for _, p := range parts {
			if !dead[p] || rng.Intn(2) == 0 {
				for _, f := range proposals[p] {
					agreed[f] = true
				}
			}
		}
		set := make([]int, 0, len(agreed))
		for f := range agreed {
			set = append(set, f)
		}
		var first *Plan
		var firstErr error
		deciders := 0
		for _, p := range parts {
			if dead[p] {
				continue
			}
			rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] }) // any order
			plan, err := decide(alive[p].state, set)
			if deciders == 0 {
				first, firstErr = &plan, err
			} else if (err == nil) != (firstErr == nil) || (err != nil && err.Error() != firstErr.Error()) {
				return stats, fmt.Errorf("process %d decided error %v, another %v", p, err, firstErr)
			} else if err == nil && (!slices.Equal(plan.Takes, first.Takes) || !plan.Next.Equal(first.Next)) {
				return stats, fmt.Errorf("process %d decided %+v, another %+v", p, plan, *first)
			}
			deciders++
		}
		if deciders == 0 {
			return stats, nil // every participant failed during the round
		}
		if firstErr != nil {
			if !errors.Is(firstErr, ErrNoSpare) {
				return stats, fmt.Errorf("unexpected error: %v", firstErr)
			}
			logf("round %v: %v", set, firstErr)
			stats.noSpare++
			return stats, nil // every survivor reports it and exits
		}
		stats.rounds++
		logf("round %v: takes %+v, epoch %d, pool %v", set, first.Takes, first.Next.Epoch, first.Next.Pool)
		for _, tk := range first.Takes {
			if agreed[tk.Proc] {
				return stats, fmt.Errorf("spare %d taken though agreed failed", tk.Proc)
			}
		}
		for _, p := range parts {
			if !dead[p] {
				alive[p].state = first.Next.Clone()
			}
		}
		for _, tk := range first.Takes { // the activation carries the state
			if sp := alive[tk.Proc]; sp != nil {
				sp.state = first.Next.Clone()
			}
		}
		if err := distinct(first.Next); err != nil {
			return stats, err
		}
	}
	// Quiescent: every live rank and adopted spare holds the same state
	// without a process it knows dead (waiting spares never took part).
	var ref *State
	for _, p := range ranksOf() {
		sp := alive[p]
		if ref == nil {
			ref = &sp.state
		} else if !sp.state.Equal(*ref) {
			return stats, fmt.Errorf("process %d holds %+v, another %+v", p, sp.state, *ref)
		}
		for f := range sp.seen {
			if slices.Contains(sp.state.Procs, f) || slices.Contains(sp.state.Pool, f) {
				return stats, fmt.Errorf("process %d ended with the failed process %d in its state %+v", p, f, sp.state)
			}
		}
	}
	return stats, nil
}

// distinct checks that no process serves two ranks or is a rank and a
// waiting spare at once.
func distinct(s State) error {
	seen := map[int]bool{}
	for _, p := range append(slices.Clone(s.Procs), s.Pool...) {
		if seen[p] {
			return fmt.Errorf("process %d twice in %+v", p, s)
		}
		seen[p] = true
	}
	return nil
}

// TestSchedules runs seeded schedules (see simulate).
func TestSchedules(t *testing.T) {
	if *simSeed != 0 {
		if _, err := simulate(*simSeed, *simTrace, Decide); err != nil {
			t.Fatalf("seed %d: %v", *simSeed, err)
		}
		return
	}
	n := 10000
	if testing.Short() {
		n = 2000
	}
	var total simStats
	for seed := int64(1); seed <= int64(n); seed++ {
		st, err := simulate(seed, false, Decide)
		total.rounds += st.rounds
		total.noSpare += st.noSpare
		if err != nil {
			t.Fatalf("seed %d: %v (replay: go test ./internal/ft/reincarnate -run TestSchedules -seed %d -simtrace)", seed, err, seed)
		}
	}
	if total.rounds < n/4 || total.noSpare == 0 {
		t.Fatalf("the schedules decided too little: %+v", total)
	}
	t.Logf("%d schedules: %+v", n, total)
}

// simStats counts what schedules decided.
type simStats struct{ rounds, noSpare int }

// The simulator has teeth: a rule that serves the failed ranks in the
// order of the agreed set (as each survivor happens to hold it) instead of
// by rank fails within a few hundred schedules.
func TestSimulatorCatchesOrderDependence(t *testing.T) {
	byOrder := func(s State, agreed []int) (Plan, error) {
		var ranks []int
		for _, p := range agreed {
			if r := slices.Index(s.Procs, p); r >= 0 {
				ranks = append(ranks, r)
			}
		}
		slices.Reverse(ranks)
		sorted := slices.Clone(agreed)
		slices.Sort(sorted)
		p, err := Decide(s, sorted)
		for i := range p.Takes {
			p.Takes[i].Rank = ranks[i]
		}
		return p, err
	}
	for seed := int64(1); seed <= 1000; seed++ {
		if _, err := simulate(seed, false, byOrder); err != nil {
			return
		}
	}
	t.Fatal("no schedule caught the order-dependent rule")
}

// A State survives Encode/DecodeState; damaged encodings are errors.
func TestStateEncoding(t *testing.T) {
	p, err := Decide(Initial(4, []int{6, 4, 5}), []int{2, 5})
	if err != nil {
		t.Fatal(err)
	}
	b := p.Next.Encode(nil)
	got, err := DecodeState(b)
	if err != nil || !got.Equal(p.Next) {
		t.Fatalf("decoded %+v, %v; want %+v", got, err, p.Next)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"truncated", b[:len(b)-3], "exceeds its"},
		{"trailing", append(slices.Clone(b), 0), "bytes after the state"},
		{"huge count", State{Epoch: 1}.Encode(nil)[:8], "truncated"},
		{"twice", State{Procs: []int{3, 3}, Inc: []int{0, 0}}.Encode(nil), "listed twice"},
		{"pool order", State{Pool: []int{5, 4}}.Encode(nil), "not ascending"},
		{"negative", State{Epoch: -1}.Encode(nil), "out of range"},
	} {
		if _, err := DecodeState(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	big := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 0), 1<<40)
	if _, err := DecodeState(big); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a huge rank count: %v", err)
	}
}

// FuzzDecodeState: any payload is a State that encodes back to itself, or
// an error; never a panic.
func FuzzDecodeState(f *testing.F) {
	f.Add(Initial(3, []int{3, 4}).Encode(nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeState(b)
		if err != nil {
			return
		}
		if !slices.Equal(s.Encode(nil), b) {
			t.Fatalf("%+v does not encode back to its payload", s)
		}
		if _, err := Decide(s, s.Procs[:len(s.Procs)/2]); err != nil && !errors.Is(err, ErrNoSpare) {
			t.Fatalf("Decide on a decoded state: %v", err)
		}
	})
}
