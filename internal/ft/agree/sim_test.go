package agree

import (
	"container/heap"
	"flag"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Flags for the simulator:
//
//	go test ./internal/ft/agree -run TestSimulate -seed=1234      replay one schedule
//	go test ./internal/ft/agree -run TestSimulate -seed=1234 -simtrace   ... with its event trace
//	go test ./internal/ft/agree -run TestSimulate -sims=1000000 -seedbase=7   explore more
var (
	flagSeed     = flag.String("seed", "", "replay only this simulator seed")
	flagSims     = flag.Int("sims", 0, "number of simulated schedules (default 10000, 2500 with -short)")
	flagSeedBase = flag.Uint64("seedbase", 1, "first seed of the simulated schedules")
	flagTrace    = flag.Bool("simtrace", false, "print the event trace of a replayed seed")
	flagEarly    = flag.Bool("early", false, "replay the seed with Config.EarlyReturn (as TestSimulateEarlyReturn runs it)")
)

// Crash plans.
const (
	crashNone        = iota
	crashBeforeStart // dies before calling Start: never contributes
	crashAtTime      // dies at a given time, between two steps
	crashAtStep      // dies during its k-th step, having sent only part of that step's messages
)

type crashPlan struct {
	kind int
	time int64 // crashAtTime
	step int   // crashAtStep: the step (1 = Start) during which it dies
}

// simParams is everything a schedule is made of; it is derived from the
// seed alone, so that the seed replays the schedule.
type simParams struct {
	seed       uint64
	n          int
	scenario   string
	maxDelay   int64   // message delays are uniform in [1, maxDelay] ...
	slowProb   float64 // ... except this fraction, delayed up to 20*maxDelay
	loseProb   float64 // chance that a message from a crashed sender, delivered after its crash, is lost
	notifyMax  int64   // failure notifications arrive within [1, notifyMax] after the crash
	viaStart   float64 // chance that a notification before Start is passed to Start rather than Failed
	start      []int64
	crash      []crashPlan
	contrib    []Value
	radix      int  // tree radix (Config.Radix)
	batched    bool // notifications are held and handed over in batches (Node.FailedAll)
	unitDelays bool // every delay is 1, every start 0 (for counting rounds)
	early      bool // Config.EarlyReturn: agreement among survivors, not uniform
}

func (p *simParams) summary() string {
	nc := 0
	kinds := [4]int{}
	for _, c := range p.crash {
		if c.kind != crashNone {
			nc++
		}
		kinds[c.kind]++
	}
	return fmt.Sprintf("seed=%d n=%d radix=%d early=%v scenario=%s crashes=%d (before-start %d, at-time %d, mid-step %d) maxDelay=%d slow=%.2f lose=%.2f notifyMax=%d batched=%v",
		p.seed, p.n, p.radix, p.early, p.scenario, nc, kinds[crashBeforeStart], kinds[crashAtTime], kinds[crashAtStep], p.maxDelay, p.slowProb, p.loseProb, p.notifyMax, p.batched)
}

func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// genParams draws a schedule from seed.
func genParams(seed uint64) *simParams {
	r := newRand(seed)
	p := &simParams{seed: seed}
	switch x := r.IntN(1000); {
	case x < 750:
		p.n = 1 + r.IntN(8)
	case x < 955:
		p.n = 9 + r.IntN(32)
	case x < 995:
		p.n = 41 + r.IntN(110)
	default:
		p.n = 151 + r.IntN(850)
	}
	n := p.n
	p.maxDelay = []int64{1, 2, 5, 20, 100}[r.IntN(5)]
	p.slowProb = []float64{0, 0, 0.05, 0.3}[r.IntN(4)]
	p.loseProb = []float64{0, 0.5, 1}[r.IntN(3)]
	p.notifyMax = []int64{1, 10, 100, 1000}[r.IntN(4)]
	p.viaStart = r.Float64()
	span := int64(1 + r.IntN(4))
	span = []int64{0, 5, 50, 500}[span-1]
	p.start = make([]int64, n)
	for i := range p.start {
		if span > 0 {
			p.start[i] = r.Int64N(span + 1)
		}
	}
	if r.IntN(10) == 0 { // one very late process
		p.start[r.IntN(n)] += 2000
	}
	p.contrib = make([]Value, n)
	for i := range p.contrib {
		v := Value{Flags: ^uint64(0)}
		if r.IntN(4) == 0 {
			v.Flags &^= 1 << uint(r.IntN(64))
		}
		if r.IntN(3) == 0 {
			v.Flags &^= 1 // the boolean bit
		}
		for k := r.IntN(3); k > 0; k-- {
			v.Union.Add(r.IntN(n + 5))
		}
		for j := 0; j < n+5; j++ {
			if r.IntN(8) != 0 {
				v.Inter.Add(j)
			}
		}
		p.contrib[i] = v
	}
	s := r.IntN(100)
	if n > 250 && (s >= 65 && s < 80 || s >= 90) {
		// Every process crashing costs n*n notifications: keep the
		// all-but-one and heavy schedules of large n below 250.
		p.n = 151 + r.IntN(100)
		n = p.n
		p.start, p.contrib = p.start[:n], p.contrib[:n]
	}
	p.crash = make([]crashPlan, n)
	// horizon: rough length of a failure-free run
	horizon := span + 8*int64(bits.Len(uint(n))+1)*p.maxDelay
	randomCrash := func(q int) {
		switch r.IntN(3) {
		case 0:
			p.crash[q] = crashPlan{kind: crashBeforeStart, time: r.Int64N(p.start[q] + 1)}
		case 1:
			p.crash[q] = crashPlan{kind: crashAtTime, time: r.Int64N(horizon + 1)}
		case 2:
			p.crash[q] = crashPlan{kind: crashAtStep, step: 1 + r.IntN(2+bits.Len(uint(n))*2)}
		}
	}
	switch {
	case s < 15 || n == 1 && s < 60:
		p.scenario = "failure-free"
	case s < 45:
		p.scenario = "random"
		k := 1 + r.IntN(max(1, min(n-1, 4)))
		if r.IntN(4) == 0 {
			k = 1 + r.IntN(min(n, 30))
		}
		for _, q := range r.Perm(n)[:min(k, n)] {
			randomCrash(q)
		}
	case s < 65:
		p.scenario = "coordinators" // the successive roots die, in cascade
		k := 1 + r.IntN(max(1, min(n-1, 6)))
		if r.IntN(5) == 0 && n <= 250 {
			k = n // even the last one
		}
		t := r.Int64N(horizon + 1)
		for q := 0; q < k && q < n; q++ {
			if r.IntN(2) == 0 {
				p.crash[q] = crashPlan{kind: crashAtStep, step: 1 + r.IntN(2+bits.Len(uint(n))*2)}
			} else {
				p.crash[q] = crashPlan{kind: crashAtTime, time: t}
				t += r.Int64N(4 * p.maxDelay)
			}
		}
	case s < 80:
		p.scenario = "all-but-one"
		keep := r.IntN(n)
		if r.IntN(2) == 0 {
			keep = n - 1
		}
		for q := 0; q < n; q++ {
			if q != keep {
				randomCrash(q)
			}
		}
	case s < 90:
		p.scenario = "mid-step"
		for _, q := range r.Perm(n)[:1+r.IntN(min(n, 5))] {
			p.crash[q] = crashPlan{kind: crashAtStep, step: 1 + r.IntN(3+bits.Len(uint(n))*2)}
		}
	default:
		p.scenario = "heavy"
		for q := 0; q < n; q++ {
			if r.IntN(3) == 0 {
				randomCrash(q)
			}
		}
	}
	// The tree radix comes from its own stream, so that adding it kept the
	// schedules of the seeds drawn before: binomial trees half the time,
	// flat trees (the root talks to everyone) or radix 3, 4 or 8 otherwise.
	p.radix = []int{2, 2, 2, 2, 2, 2, 3, 4, 8, n + 1}[newRand(seed^0x5bd1e9955bd1e995).IntN(10)]
	// Batched notifications too from a stream of their own (every other
	// seed): a process is told of the failures noted since its last batch
	// at once, some time later (FailedAll), as a runtime that delivers an
	// in-process kill of many ranks in one pass does.
	p.batched = newRand(seed^0x2545f4914f6cdd1d).IntN(2) == 0
	return p
}

// Events.
const (
	evStart = iota
	evDeliver
	evCrash
	evNotify
	evFlush // a batch of held notifications reaches the Node (simParams.batched)
)

type event struct {
	at    int64
	seq   uint64
	kind  int
	p     int          // process concerned (receiver, starter, crasher, notified)
	batch *notifyBatch // evNotify
	msg   Msg
	depth int // evDeliver: causal depth (Lamport) of the message
}

// qitem keeps the ordering keys inline, so that the heap does not chase
// pointers.
type qitem struct {
	at  int64
	seq uint64
	e   *event
}

type eventQueue []qitem

func (h eventQueue) Len() int { return len(h) }
func (h eventQueue) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h eventQueue) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventQueue) Push(x any)   { *h = append(*h, x.(qitem)) }
func (h *eventQueue) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// notifyBatch is the list of notifications of one crash, in time order;
// only the next one is in the event queue at any time.
type notifyBatch struct {
	failed int
	to     []int
	at     []int64
	next   int
}

func (b *notifyBatch) Len() int { return len(b.to) }
func (b *notifyBatch) Less(i, j int) bool {
	return b.at[i] < b.at[j] || b.at[i] == b.at[j] && b.to[i] < b.to[j]
}
func (b *notifyBatch) Swap(i, j int) {
	b.to[i], b.to[j] = b.to[j], b.to[i]
	b.at[i], b.at[j] = b.at[j], b.at[i]
}

type simResult struct {
	msgs      int   // messages sent
	delivered int   // messages delivered
	maxDepth  int   // largest causal depth at which a process decided
	endTime   int64 // time of the last event
	errs      []string
	trace     []string
}

type decisionRec struct {
	val     Value
	contrib Set
	at      int64
}

// simulate runs one schedule to quiescence and checks the properties.
func simulate(p *simParams, trace bool) *simResult {
	n := p.n
	r := newRand(p.seed ^ 0xa5a5a5a5a5a5a5a5)
	res := &simResult{}
	fail := func(format string, args ...any) {
		if len(res.errs) < 10 {
			res.errs = append(res.errs, fmt.Sprintf(format, args...))
		}
	}
	logf := func(format string, args ...any) {
		if trace {
			res.trace = append(res.trace, fmt.Sprintf(format, args...))
		}
	}
	const instance = 42
	nodes := make([]*Node, n)
	for i := range nodes {
		nodes[i] = New(Config{Self: i, N: n, Instance: instance, Radix: p.radix, EarlyReturn: p.early})
	}
	dead := make([]bool, n)
	deadAt := make([]int64, n)
	started := make([]bool, n)
	steps := make([]int, n)
	clock := make([]int, n) // causal depth seen by each process
	known := make([]Set, n) // failures notified to each process
	decs := make([]*decisionRec, n)
	held := make([][]int, n)                   // notifications not yet handed to the Node (batched)
	rb := newRand(p.seed ^ 0x9e3779b97f4a7c15) // the batches' times, off r's stream
	var q eventQueue
	var seq uint64
	push := func(e *event) {
		seq++
		e.seq = seq
		heap.Push(&q, qitem{at: e.at, seq: seq, e: e})
	}
	for i := 0; i < n; i++ {
		c := p.crash[i]
		switch c.kind {
		case crashBeforeStart, crashAtTime:
			push(&event{at: c.time, kind: evCrash, p: i})
		}
		push(&event{at: p.start[i], kind: evStart, p: i})
	}
	var now int64
	crash := func(i int) {
		if dead[i] {
			return
		}
		dead[i] = true
		deadAt[i] = now
		logf("t=%d CRASH %d", now, i)
		b := &notifyBatch{failed: i}
		for j := 0; j < n; j++ {
			if j != i && !dead[j] {
				b.to = append(b.to, j)
				b.at = append(b.at, now+1+r.Int64N(p.notifyMax))
			}
		}
		sort.Sort(b)
		if len(b.to) > 0 {
			push(&event{at: b.at[0], kind: evNotify, p: b.to[0], batch: b})
		}
	}
	delay := func() int64 {
		if p.unitDelays {
			return 1
		}
		d := 1 + r.Int64N(p.maxDelay)
		if p.slowProb > 0 && r.Float64() < p.slowProb {
			d += r.Int64N(20 * p.maxDelay)
		}
		return d
	}
	// after runs after each step of process i: records its decision, sends
	// its messages (only some if it dies during this step).
	after := func(i int, out []Msg) {
		steps[i]++
		if v, c, ok := nodes[i].Decision(); ok {
			if decs[i] == nil {
				decs[i] = &decisionRec{val: v, contrib: c, at: now}
				if clock[i] > res.maxDepth {
					res.maxDepth = clock[i]
				}
				logf("t=%d DECIDE %d %v contrib=%v", now, i, v, c)
			} else if !decs[i].val.Equal(v) || !decs[i].contrib.Equal(c) {
				fail("process %d changed its decision", i)
			}
		} else if decs[i] != nil {
			fail("process %d un-decided", i)
		}
		cp := p.crash[i]
		dying := cp.kind == crashAtStep && steps[i] == cp.step
		if dying && len(out) > 0 {
			r.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
			out = out[:r.IntN(len(out)+1)]
		}
		for _, m := range out {
			if m.From != i || m.To < 0 || m.To >= n || m.To == i || m.Instance != instance {
				fail("process %d sent a malformed message %v", i, m)
				continue
			}
			res.msgs++
			// Every message travels in its wire form, as the runtime
			// sends it: the codec must give back the same message (sets
			// in either form) and the receiver gets the decoded one.
			wm, err := DecodeMsg(EncodeMsg(m))
			if err != nil || !sameMsg(wm, m) {
				fail("process %d's message %v came back from its wire form as %v (%v)", i, m, wm, err)
				continue
			}
			push(&event{at: now + delay(), kind: evDeliver, p: m.To, msg: wm, depth: clock[i] + 1})
		}
		if dying {
			crash(i)
		}
	}
	limit := 400*n*n + 100000
	if limit > 20000000 {
		limit = 20000000
	}
	events := 0
	for q.Len() > 0 {
		e := heap.Pop(&q).(qitem).e
		now = e.at
		res.endTime = now
		events++
		if events > limit {
			fail("no quiescence after %d events (livelock?)", limit)
			break
		}
		i := e.p
		if dead[i] && e.kind != evCrash && e.kind != evNotify {
			continue
		}
		switch e.kind {
		case evCrash:
			crash(i)
		case evStart:
			started[i] = true
			logf("t=%d START %d known=%v", now, i, known[i])
			after(i, nodes[i].Start(p.contrib[i], known[i].Clone()))
		case evNotify:
			b := e.batch
			if b.next++; b.next < len(b.to) {
				push(&event{at: b.at[b.next], kind: evNotify, p: b.to[b.next], batch: b})
			}
			if dead[i] {
				continue
			}
			known[i].Add(b.failed)
			if !started[i] && r.Float64() < p.viaStart {
				logf("t=%d NOTE %d of %d (for Start)", now, i, b.failed)
				continue // the runtime will pass it to Start
			}
			if p.batched {
				if len(held[i]) == 0 {
					push(&event{at: now + 1 + rb.Int64N(p.notifyMax), kind: evFlush, p: i})
				}
				held[i] = append(held[i], b.failed)
				logf("t=%d HOLD %d of %d", now, i, b.failed)
				continue
			}
			logf("t=%d NOTIFY %d of %d", now, i, b.failed)
			after(i, nodes[i].Failed(b.failed))
		case evFlush:
			batch := held[i]
			held[i] = nil
			logf("t=%d NOTIFY %d of %v", now, i, batch)
			after(i, nodes[i].FailedAll(batch))
		case evDeliver:
			s := e.msg.From
			if dead[s] && deadAt[s] < now && r.Float64() < p.loseProb {
				logf("t=%d LOST %v", now, e.msg)
				continue
			}
			res.delivered++
			if e.depth > clock[i] {
				clock[i] = e.depth
			}
			logf("t=%d DELIVER %v", now, e.msg)
			after(i, nodes[i].Step(e.msg))
		}
	}
	// Termination: every process that never crashed decided.
	var alive Set
	for i := 0; i < n; i++ {
		if !dead[i] {
			alive.Add(i)
			if decs[i] == nil {
				fail("termination: live process %d did not decide (root in its view %d, ballot %d)", i, nodes[i].Root(), nodes[i].ballot)
			}
		}
	}
	// Agreement: every decision, of live and crashed processes alike, is
	// the same (uniform agreement); with EarlyReturn, every decision of a
	// process that never crashed (a process that decided and then crashed
	// may have decided otherwise).
	var first *decisionRec
	firstAt := -1
	for i, d := range decs {
		if d == nil || (p.early && dead[i]) {
			continue
		}
		if first == nil {
			first, firstAt = d, i
			continue
		}
		if !d.val.Equal(first.val) || !d.contrib.Equal(first.contrib) {
			fail("agreement: process %d decided %v contrib=%v but process %d decided %v contrib=%v",
				firstAt, first.val, first.contrib, i, d.val, d.contrib)
		}
	}
	// Validity, of every distinct decision (crashed deciders' too).
	var checked []*decisionRec
	for i, d := range decs {
		if d == nil || slices.ContainsFunc(checked, func(c *decisionRec) bool { return c.val.Equal(d.val) && c.contrib.Equal(d.contrib) }) {
			continue
		}
		checked = append(checked, d)
		if !alive.SubsetOf(d.contrib) {
			fail("validity: process %d's contributors %v miss live processes %v", i, d.contrib, alive)
		}
		var want Value
		for k, c := range d.contrib.Members() {
			if c >= n || !started[c] {
				fail("validity: contributor %d never started (no decision from nothing)", c)
				continue
			}
			if k == 0 {
				want = p.contrib[c].Clone()
			} else {
				want = want.Combine(p.contrib[c])
			}
		}
		if d.contrib.Empty() {
			fail("validity: process %d: empty contributor set", i)
		} else if !want.Equal(d.val) {
			fail("validity: process %d decided %v but the contributions of %v combine to %v", i, d.val, d.contrib, want)
		}
	}
	return res
}

// sameMsg reports whether a and b are the same message.
func sameMsg(a, b Msg) bool {
	return a.From == b.From && a.To == b.To && a.Instance == b.Instance && a.Kind == b.Kind &&
		a.Ballot == b.Ballot && a.Value.Equal(b.Value) && a.Contrib.Equal(b.Contrib) &&
		a.AccBallot == b.AccBallot && a.AccValue.Equal(b.AccValue) && a.AccContrib.Equal(b.AccContrib) &&
		a.Acked.Equal(b.Acked)
}

func replayLine(seed uint64, early bool) string {
	if early {
		return fmt.Sprintf("go test ./internal/ft/agree -run 'TestSimulateEarlyReturn$' -seed=%d -early -simtrace", seed)
	}
	return fmt.Sprintf("go test ./internal/ft/agree -run 'TestSimulate$' -seed=%d -simtrace", seed)
}

// TestSimulate runs thousands of seeded schedules (crashes before Start, at
// any time and in the middle of a step; cascading root crashes; all but one
// process failing; random delays, reordering and staggered starts) and
// checks termination, uniform agreement and validity for each.
func TestSimulate(t *testing.T) {
	if *flagSeed != "" && *flagEarly {
		t.Skip("-early replays with TestSimulateEarlyReturn")
	}
	runSims(t, false, 10000)
}

// TestSimulateEarlyReturn runs the same seeded schedules with
// Config.EarlyReturn and checks termination, agreement among the processes
// that never crash, validity of every decision (crashed deciders' too) and
// that no decision changes.
func TestSimulateEarlyReturn(t *testing.T) {
	if *flagSeed != "" && !*flagEarly {
		t.Skip("replaying a seed without -early: TestSimulate")
	}
	runSims(t, true, 10000)
}

func runSims(t *testing.T, early bool, defSims int) {
	if *flagSeed != "" {
		seed, err := strconv.ParseUint(*flagSeed, 10, 64)
		if err != nil {
			t.Fatalf("bad -seed: %v", err)
		}
		p := genParams(seed)
		p.early = early
		res := simulate(p, *flagTrace)
		if *flagTrace {
			t.Log("trace:\n" + strings.Join(res.trace, "\n"))
		}
		t.Logf("%s: %d messages, %d events until t=%d", p.summary(), res.msgs, res.delivered, res.endTime)
		for _, e := range res.errs {
			t.Error(e)
		}
		return
	}
	sims := *flagSims
	if sims == 0 {
		sims = defSims
		if testing.Short() {
			sims = defSims / 4
		}
	}
	const workers = 2
	stats := make([]struct{ runs, big, msgs int }, workers)
	t.Run("group", func(t *testing.T) {
		for w := 0; w < workers; w++ {
			t.Run(strconv.Itoa(w), func(t *testing.T) {
				t.Parallel()
				bad := 0
				for k := w; k < sims; k += workers {
					seed := *flagSeedBase + uint64(k)
					p := genParams(seed)
					p.early = early
					res := simulate(p, false)
					stats[w].runs++
					stats[w].msgs += res.msgs
					if p.n >= 100 {
						stats[w].big++
					}
					if len(res.errs) > 0 {
						bad++
						t.Errorf("schedule failed: %s\n  %s\n  replay: %s", p.summary(), strings.Join(res.errs, "\n  "), replayLine(seed, early))
						if bad >= 5 {
							return
						}
					}
				}
			})
		}
	})
	runs, big, msgs := 0, 0, 0
	for _, s := range stats {
		runs += s.runs
		big += s.big
		msgs += s.msgs
	}
	t.Logf("%d schedules (%d with n >= 100), %d messages", runs, big, msgs)
}

func TestSimulatorDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		p := genParams(seed)
		a := simulate(p, true)
		b := simulate(genParams(seed), true)
		if strings.Join(a.trace, "\n") != strings.Join(b.trace, "\n") {
			t.Fatalf("seed %d: two runs differ", seed)
		}
	}
}

// TestFailureFreeCost counts messages and rounds (causal depth) of
// failure-free agreements with unit delays and simultaneous starts.
func TestFailureFreeCost(t *testing.T) {
	sizes := []int{}
	for n := 1; n <= 256; n++ {
		sizes = append(sizes, n)
	}
	for n := 257; n <= 1024; n += 37 {
		sizes = append(sizes, n)
	}
	for n := 512; n <= 1024; n *= 2 {
		sizes = append(sizes, n-1, n, n+1)
	}
	sizes = append(sizes, 999, 1000)
	for _, early := range []bool{false, true} {
		phases := 4 // Report, Propose, Ack, Decide
		if early {
			phases = 2 // Report, Propose (deciding)
		}
		for _, k := range []int{2, 3, 4, 8, 16, 2000} {
			for _, n := range sizes {
				p := &simParams{seed: uint64(n), n: n, scenario: "cost", maxDelay: 1, notifyMax: 1, radix: k, early: early,
					start: make([]int64, n), crash: make([]crashPlan, n), contrib: make([]Value, n), unitDelays: true}
				for i := range p.contrib {
					p.contrib[i] = Value{Flags: 1}
				}
				res := simulate(p, false)
				for _, e := range res.errs {
					t.Errorf("k=%d n=%d: %s", k, n, e)
				}
				logn := 0 // ceil(log_k n): the tree's depth
				for m := 1; m < n; m *= k {
					logn++
				}
				if res.msgs != phases*(n-1) {
					t.Errorf("early=%v k=%d n=%d: %d messages, want %d(n-1) = %d", early, k, n, res.msgs, phases, phases*(n-1))
				}
				if res.maxDepth > phases*logn {
					t.Errorf("early=%v k=%d n=%d: %d rounds > %d*ceil(log_k n) = %d", early, k, n, res.maxDepth, phases, phases*logn)
				}
				if n == 2 || n == 16 || n == 1000 || n == 1024 || n == 1025 {
					t.Logf("early=%v k=%d n=%d: %d messages (%d(n-1)=%d), %d rounds (%d*ceil(log_k n)=%d)", early, k, n, res.msgs, phases, phases*(n-1), res.maxDepth, phases, phases*logn)
				}
			}
		}
	}
}
