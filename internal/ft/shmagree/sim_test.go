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
// as failed, then goes on. A member that decides here then reads the
// contributors from the segment (Contributors, as the runtime does) at a
// later step of its own, other members running in between. Checked, per
// instance: every member that decides here (a member marked failed while
// alive too) decides the same value and the same contributors
// (uniformity); the value is the combination of the contributors' values
// and is what the message protocol decides with those contributions and
// the others failed before contributing (run alongside), and every
// member left out crashed or was suspected (validity); the contributors
// read afterwards are the Machine's, or the read says it was overtaken;
// no member decides here in an instance where another falls back; a
// member excluded was marked failed in the next instance or suspected;
// every member that does not crash finishes every instance
// (termination).

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
	stProto   // fell back: waits as the protocol would
	stContrib // decided: reads the contributors next
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
	contrib   []uint64
}

// protoDecide runs the message protocol on vals, the members of failed
// (bit j) failed before contributing and known so to every other, and
// returns its decision.
func protoDecide(t *testing.T, vals []agree.Value, failed uint64) (agree.Value, agree.Set) {
	n := len(vals)
	nodes := make([]*agree.Node, n)
	var fs agree.Set
	for i := range n {
		if failed&(1<<i) != 0 {
			fs.Add(i)
		}
	}
	var q []agree.Msg
	for i := range n {
		nodes[i] = agree.New(agree.Config{Self: i, N: n, Instance: 7, Radix: 16})
	}
	live := -1
	for i := range n {
		if failed&(1<<i) == 0 {
			q = append(q, nodes[i].Start(vals[i], fs)...)
			live = i
		}
	}
	for len(q) > 0 {
		m := q[0]
		q = q[1:]
		if failed&(1<<m.To) == 0 {
			q = append(q, nodes[m.To].Step(m)...)
		}
	}
	v, c, ok := nodes[live].Decision()
	if !ok {
		t.Fatal("protocol did not decide")
	}
	return v, c
}

// setBits returns the members of c as bits (c's members below 64).
func setBits(c agree.Set) uint64 {
	var b uint64
	for _, j := range c.Members() {
		b |= 1 << j
	}
	return b
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
	for k := range K {
		vals[k] = make([]agree.Value, n)
		for p := range n {
			vals[k][p] = randValue(r, bigs && r.Intn(4) == 0)
		}
	}
	suspected := make([]bool, n) // crashed, or suspected while alive
	ps := make([]*simProc, n)
	for p := range ps {
		ps[p] = &simProc{known: make([]bool, n), outcome: make([]Outcome, K), value: make([]agree.Value, K), contrib: make([]uint64, K)}
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
		return mem.st[p][e] == word(uint64(k+2), kindFailed)
	}
	next := func(p int) {
		pr := ps[p]
		pr.k++
		if pr.k == K {
			pr.st = stDone
		} else {
			start(p)
		}
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
			pr.value[k], pr.contrib[k] = v, pr.m.Contrib()
			if pr.contrib[k] != all(n) {
				simExclusions++
			}
			if pr.contrib[k]&(1<<p) == 0 {
				simSelfExcluded++
			}
			pr.st = stContrib
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
			case stContrib:
				runnable = append(runnable, p)
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
				suspected[p] = true
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
				suspected[p] = true
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
			next(p)
			continue
		}
		if pr.st == stContrib {
			// The runtime's read of the contributors, some steps after
			// the decision.
			k := pr.k
			c, ok := Contributors(simView{mem, p}, n, uint64(k))
			switch {
			case !ok:
				logf("%d: instance %d contributors overwritten", p, k)
				pr.outcome[k] = Excluded
				if !excludedOK(p, k) {
					return fmt.Sprintf("member %d: instance %d's contributors overwritten, neither suspected nor marked failed in the next", p, k)
				}
				pr.st = stProto
			case setBits(c) != pr.contrib[k]:
				return fmt.Sprintf("member %d instance %d: contributors read %v, decided %b", p, k, c, pr.contrib[k])
			default:
				next(p)
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
	// Per instance: uniform, valid, exclusive outcomes.
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
		if len(dec) == 0 {
			continue
		}
		d := ps[dec[0]]
		for _, p := range dec[1:] {
			if !ps[p].value[k].Equal(d.value[k]) || ps[p].contrib[k] != d.contrib[k] {
				return fmt.Sprintf("instance %d: member %d decided %v from %b, member %d %v from %b", k, dec[0], d.value[k], d.contrib[k], p, ps[p].value[k], ps[p].contrib[k])
			}
		}
		c := d.contrib[k]
		for j := range n {
			if c&(1<<j) == 0 && !suspected[j] {
				return fmt.Sprintf("instance %d: member %d left out of the decision, neither crashed nor suspected", k, j)
			}
		}
		if c == 0 {
			continue // every member marked failed: nothing to compare
		}
		var comb agree.Value
		first := true
		for j := range n {
			if c&(1<<j) != 0 {
				if first {
					comb, first = vals[k][j], false
				} else {
					comb = comb.Combine(vals[k][j])
				}
			}
		}
		if !comb.Equal(d.value[k]) {
			return fmt.Sprintf("instance %d: decided %v, the contributors' combination %v", k, d.value[k], comb)
		}
		pv, pc := protoDecide(t, vals[k], all(n)&^c)
		if !pv.Equal(d.value[k]) || setBits(pc) != c {
			return fmt.Sprintf("instance %d: decided %v from %b, the protocol %v from %v", k, d.value[k], c, pv, pc)
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
	simCounts       [5]int
	simBig          int // values too large for an entry
	simExclusions   int // decisions without some member
	simSelfExcluded int // decisions by a member marked failed while alive
)

// TestSimulateCovers checks that the seeds reach every outcome: decided
// on the segment, fallen back, excluded.
func TestSimulateCovers(t *testing.T) {
	simCounts, simBig, simExclusions, simSelfExcluded = [5]int{}, 0, 0, 0
	seeds := 3000
	if testing.Short() {
		seeds = 1000
	}
	for s := range seeds {
		if f := simulate(t, int64(s)); f != "" {
			t.Fatalf("seed %d: %s", s, f)
		}
	}
	t.Logf("outcomes over %d seeds: %d decided (%d without some member, %d by a member marked failed while alive), %d fell back, %d excluded; %d oversized values",
		seeds, simCounts[Decided], simExclusions, simSelfExcluded, simCounts[Fallback], simCounts[Excluded], simBig)
	if simBig == 0 {
		t.Error("no seed had a value too large for an entry")
	}
	if simExclusions == 0 || simSelfExcluded == 0 {
		t.Error("no seed decided without a member, or none by a member marked failed while alive")
	}
	for _, o := range []Outcome{Decided, Fallback, Excluded} {
		if simCounts[o] == 0 {
			t.Errorf("no seed reached %v", o)
		}
	}
}
