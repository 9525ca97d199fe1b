package shmagree

import (
	"flag"
	"fmt"
	"math/rand"
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// The simulator: members run their Machines over a simulated segment, one
// shared-memory access per step, in an order drawn from a seed, with
// crashes at any point, failures learnt late, false suspicions (a live
// member fenced), members running out of patience, values too large for
// an entry, and several instances in a row (entries reused every second
// instance). A member that falls back waits, as the message protocol
// would, until every other member finished the instance or is known to it
// as failed, then goes on. Checked: every member that decides here
// decides the combination of all n contributions, which is what the
// protocol decides with those contributions and no failure (run
// alongside); no member decides here in an instance where another falls
// back; a member excluded was fenced in the next instance or suspected;
// every member that does not crash finishes every instance.

var (
	simSeed  = flag.Int64("seed", -1, "run only this simulator seed")
	simSeeds = flag.Int("seeds", 4000, "simulator seeds (a quarter with -short)")
	simTrace = flag.Bool("simtrace", false, "print the simulator's events")
)

type simMem struct {
	n        int
	st       [][2]uint64
	data     [][2][]byte
	disabled bool
	version  int
}

type simView struct {
	s  *simMem
	me int
}

func (v simView) Load(j, e int) uint64 { return v.s.st[j][e] }
func (v simView) CAS(j, e int, old, new uint64) bool {
	if v.s.st[j][e] != old {
		return false
	}
	v.s.st[j][e] = new
	v.s.version++
	return true
}
func (v simView) Write(e int, d []byte) bool {
	if len(d) > maxData {
		simBig++
		return false
	}
	v.s.data[v.me][e] = append([]byte(nil), d...)
	v.s.version++
	return true
}
func (v simView) Read(j, e int, dst []byte) []byte { return append(dst[:0], v.s.data[j][e]...) }
func (v simView) Disabled() bool                   { return v.s.disabled }
func (v simView) Disable()                         { v.s.disabled = true; v.s.version++ }

const (
	stRun = iota
	stBlocked
	stProto // fell back: waits as the protocol would
	stDone
	stCrashed
)

type simProc struct {
	st        int
	k         int // current instance
	m         *Machine
	blockedAt int
	passVer   int
	known     []bool
	impatient bool // for the current instance
	outcome   []Outcome
	value     []agree.Value
}

// protoDecide runs the message protocol failure-free on vals and returns
// its decision.
func protoDecide(t *testing.T, vals []agree.Value) (agree.Value, agree.Set) {
	n := len(vals)
	nodes := make([]*agree.Node, n)
	var q []agree.Msg
	for i := range n {
		nodes[i] = agree.New(agree.Config{Self: i, N: n, Instance: 7, Radix: 16})
	}
	for i := range n {
		q = append(q, nodes[i].Start(vals[i], agree.Set{})...)
	}
	for len(q) > 0 {
		m := q[0]
		q = q[1:]
		q = append(q, nodes[m.To].Step(m)...)
	}
	v, c, ok := nodes[0].Decision()
	if !ok {
		t.Fatal("protocol did not decide")
	}
	return v, c
}

func randValue(r *rand.Rand, big bool) agree.Value {
	v := agree.Value{Flags: r.Uint64() | r.Uint64()}
	for range r.Intn(4) {
		v.Union.Add(r.Intn(20))
	}
	for i := range 12 {
		if r.Intn(5) != 0 {
			v.Inter.Add(i)
		}
	}
	if big {
		for i := range 400 {
			v.Union.Add(100 + 40*i) // 800 bytes of runs, 2000 of bitmap: more than an entry holds
		}
	}
	return v
}

func simulate(t *testing.T, seed int64) (fail string) {
	r := rand.New(rand.NewSource(seed))
	n := 2 + r.Intn(5)
	K := 3 + r.Intn(2)
	crashes := r.Intn(3)
	if crashes >= n {
		crashes = n - 1
	}
	falseSusp := r.Intn(4) == 0
	slow := -1 // a member scheduled an eighth as often as the others
	if r.Intn(3) == 0 {
		slow = r.Intn(n)
	}
	impatience := r.Intn(6) == 0
	bigs := r.Intn(5) == 0
	var log []string
	logf := func(f string, a ...any) {
		s := fmt.Sprintf(f, a...)
		if *simTrace {
			t.Log(s)
		}
		log = append(log, s)
	}
	mem := &simMem{n: n, st: make([][2]uint64, n), data: make([][2][]byte, n)}
	vals := make([][]agree.Value, K)
	want := make([]agree.Value, K)
	for k := range K {
		vals[k] = make([]agree.Value, n)
		for p := range n {
			vals[k][p] = randValue(r, bigs && r.Intn(4) == 0)
		}
		v, c := protoDecide(t, vals[k])
		if c.Len() != n {
			return fmt.Sprintf("protocol contributors %v", c)
		}
		want[k] = v
	}
	ps := make([]*simProc, n)
	for p := range ps {
		ps[p] = &simProc{known: make([]bool, n), outcome: make([]Outcome, K), value: make([]agree.Value, K)}
		for k := range K {
			ps[p].outcome[k] = Running
		}
	}
	start := func(p int) {
		pr := ps[p]
		shared := pr.m != nil && pr.m.Shared
		pr.m = NewMachine(n, p, uint64(pr.k), agree.EncodeValue(vals[pr.k][p]))
		pr.m.Shared = shared
		pr.st, pr.impatient = stRun, false
	}
	for p := range n {
		start(p)
	}
	type know struct{ q, p int }
	var pending []know
	excludedOK := func(p, k int) bool {
		for q := range n {
			if ps[q].known[p] {
				return true
			}
		}
		e := (k + 1) & 1
		return mem.st[p][e] == word(uint64(k+2), kindFenced)
	}
	finish := func(p int, o Outcome) string {
		pr := ps[p]
		k := pr.k
		pr.outcome[k] = o
		simCounts[o]++
		logf("%d: instance %d %v", p, k, o)
		switch o {
		case Decided:
			v, err := Combine(pr.m.Values())
			if err != nil {
				return fmt.Sprintf("member %d instance %d: %v", p, k, err)
			}
			pr.value[k] = v
			if !v.Equal(want[k]) {
				return fmt.Sprintf("member %d instance %d decided %v, the protocol %v", p, k, v, want[k])
			}
			pr.k++
			if pr.k == K {
				pr.st = stDone
			} else {
				start(p)
			}
		case Excluded:
			if !excludedOK(p, k) {
				return fmt.Sprintf("member %d excluded from instance %d, neither suspected nor fenced in the next", p, k)
			}
			pr.st = stProto
		case Fallback:
			pr.st = stProto
		}
		return ""
	}
	protoReady := func(p int) bool {
		k := ps[p].k
		for q := range n {
			if q != p && ps[q].outcome[k] == Running && !ps[p].known[q] {
				return false
			}
		}
		return true
	}
	for iter := 0; ; iter++ {
		if iter > 200000 {
			return "no end after 200000 steps"
		}
		var runnable []int
		for p, pr := range ps {
			switch pr.st {
			case stRun:
				runnable = append(runnable, p)
			case stBlocked:
				if pr.blockedAt != mem.version {
					runnable = append(runnable, p)
				}
			case stProto:
				if protoReady(p) {
					runnable = append(runnable, p)
				}
			}
		}
		// Events.
		ev := r.Intn(40)
		switch {
		case ev == 0 && crashes > 0:
			var alive []int
			for p, pr := range ps {
				if pr.st != stCrashed {
					alive = append(alive, p)
				}
			}
			if len(alive) > 1 {
				p := alive[r.Intn(len(alive))]
				ps[p].st = stCrashed
				crashes--
				logf("%d: crashes (instance %d)", p, ps[p].k)
				for q := range n {
					if q != p {
						pending = append(pending, know{q, p})
					}
				}
				mem.version++
				continue
			}
		case ev == 1 && len(pending) > 0 || len(runnable) == 0 && len(pending) > 0:
			i := r.Intn(len(pending))
			kn := pending[i]
			pending = append(pending[:i], pending[i+1:]...)
			ps[kn.q].known[kn.p] = true
			logf("%d: learns %d failed", kn.q, kn.p)
			mem.version++
			continue
		case ev == 2 && falseSusp:
			q, p := r.Intn(n), r.Intn(n)
			if q != p && ps[q].st != stCrashed && ps[p].st != stCrashed && !ps[q].known[p] {
				falseSusp = false
				ps[q].known[p] = true
				logf("%d: suspects %d (alive)", q, p)
				mem.version++
				continue
			}
		case ev == 3 && impatience:
			p := r.Intn(n)
			if ps[p].st == stRun || ps[p].st == stBlocked {
				ps[p].impatient = true
				logf("%d: out of patience (instance %d)", p, ps[p].k)
				mem.version++
				continue
			}
		}
		if len(runnable) == 0 {
			for p, pr := range ps {
				if pr.st != stDone && pr.st != stCrashed {
					return fmt.Sprintf("member %d stuck in instance %d (state %d)", p, pr.k, pr.st)
				}
			}
			break
		}
		p := runnable[r.Intn(len(runnable))]
		if p == slow && len(runnable) > 1 && r.Intn(8) != 0 {
			continue
		}
		pr := ps[p]
		if pr.st == stProto {
			pr.k++
			if pr.k == K {
				pr.st = stDone
			} else {
				start(p)
			}
			continue
		}
		pr.st = stRun
		if pr.m.phase == pScan && pr.m.j == 0 {
			pr.passVer = mem.version // (the real waiter reads the doorbell before a pass)
		}
		known := func(j int) bool { return pr.known[j] }
		o := pr.m.Step(simView{mem, p}, known, !pr.impatient)
		switch o {
		case Running:
		case Blocked:
			pr.st, pr.blockedAt = stBlocked, pr.passVer
		default:
			if f := finish(p, o); f != "" {
				return f
			}
		}
	}
	// Exclusive outcomes per instance.
	for k := range K {
		var dec, fb []int
		for p, pr := range ps {
			switch pr.outcome[k] {
			case Decided:
				dec = append(dec, p)
			case Fallback:
				fb = append(fb, p)
			}
		}
		if len(dec) > 0 && len(fb) > 0 {
			return fmt.Sprintf("instance %d: %v decided on the segment, %v fell back", k, dec, fb)
		}
	}
	_ = log
	return ""
}

func TestSimulate(t *testing.T) {
	if *simSeed >= 0 {
		if f := simulate(t, *simSeed); f != "" {
			t.Fatalf("seed %d: %s", *simSeed, f)
		}
		return
	}
	seeds := *simSeeds
	if testing.Short() {
		seeds /= 4
	}
	for s := range seeds {
		if f := simulate(t, int64(s)); f != "" {
			t.Fatalf("seed %d: %s\nreplay: go test ./internal/ft/shmagree -run 'TestSimulate$' -seed=%d -simtrace", s, f, s)
		}
	}
}

var (
	simCounts [5]int
	simBig    int // values too large for an entry
)

// TestSimulateCovers checks that the seeds reach every outcome: decided
// on the segment, fallen back, excluded.
func TestSimulateCovers(t *testing.T) {
	simCounts, simBig = [5]int{}, 0
	seeds := 3000
	if testing.Short() {
		seeds = 1000
	}
	for s := range seeds {
		if f := simulate(t, int64(s)); f != "" {
			t.Fatalf("seed %d: %s", s, f)
		}
	}
	t.Logf("outcomes over %d seeds: %d decided, %d fell back, %d excluded; %d oversized values", seeds, simCounts[Decided], simCounts[Fallback], simCounts[Excluded], simBig)
	if simBig == 0 {
		t.Error("no seed had a value too large for an entry")
	}
	for _, o := range []Outcome{Decided, Fallback, Excluded} {
		if simCounts[o] == 0 {
			t.Errorf("no seed reached %v", o)
		}
	}
}
