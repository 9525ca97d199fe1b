package rbcast

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/member"
)

var (
	seedFlag      = flag.Int64("seed", -1, "replay a single simulator seed (see the failure message)")
	schedulesFlag = flag.Int("schedules", 1500, "number of seeded schedules TestSimulatedSchedules runs")
)

// item is a notice. Origin -1 marks content broadcast by several ranks (as
// when several ranks detect the same failure).
type item struct{ Origin, Seq int }

type evKind int

const (
	evBcast  evKind = iota // rank broadcasts it
	evMsg                  // msg arrives at rank
	evCrash                // rank crashes
	evNotice               // rank learns that id failed
	evBatch                // batch arrives at rank (batched sims)
)

type event struct {
	at   int64
	kind evKind
	rank int
	msg  Msg[item]
	bat  Batch[item]
	it   item
	id   member.ID
}

// The event queue is a calendar of integer time steps; events at the same
// step run in the order they were scheduled, so a run is deterministic.
func (s *sim) push(e event) {
	for int64(len(s.cal)) <= e.at {
		s.cal = append(s.cal, nil)
	}
	s.cal[e.at] = append(s.cal[e.at], e)
}

func (s *sim) delay() int64  { return s.minDelay + s.rng.Int63n(s.maxDelay-s.minDelay+1) }
func (s *sim) nDelay() int64 { return s.rng.Int63n(s.noticeMax + 1) }

// sim runs n Nodes over a network with random delays (hence reordering
// even on one link: the protocol does not need FIFO links), crashes
// (including in the middle of sending a forward batch) and failure notices
// that reach every surviving rank after a random delay.
type sim struct {
	n                             int
	nodes                         []*Node[item]
	crashed                       []bool
	crashMid                      []bool // crash while sending the next non-empty batch
	deliv                         []map[item]int
	bcast                         map[item][]int // ranks whose Broadcast ran
	cal                           [][]event
	now                           int64
	rng                           *rand.Rand
	minDelay, maxDelay, noticeMax int64
	msgs, maxHops                 int
	// batched: a rank's sends of one time step go out coalesced (one
	// Batch per neighbour) at the step's end, as a burst's do.
	batched bool
	pending [][]Msg[item]
	dirty   []int
	sent    []int // messages (batches) each rank sent
}

func newSim(t testing.TB, n int, rng *rand.Rand) *sim {
	s := &sim{n: n, rng: rng, nodes: make([]*Node[item], n), crashed: make([]bool, n), crashMid: make([]bool, n),
		deliv: make([]map[item]int, n), bcast: map[item][]int{}, minDelay: 1, maxDelay: 1,
		pending: make([][]Msg[item], n), sent: make([]int, n)}
	for r := range s.nodes {
		nd, err := New[item](Config{N: n, Self: r})
		if err != nil {
			t.Fatal(err)
		}
		s.nodes[r] = nd
		s.deliv[r] = map[item]int{}
	}
	return s
}

func (s *sim) crash(r int) {
	if s.crashed[r] {
		return
	}
	s.crashed[r] = true
	for q := 0; q < s.n; q++ {
		if q != r && !s.crashed[q] {
			s.push(event{at: s.now + s.nDelay(), kind: evNotice, rank: q, id: member.ID{Rank: r}})
		}
	}
}

// emit sends r's messages; a rank armed to crash mid-forward sends a random
// subset of them and crashes.
func (s *sim) emit(r int, out []Msg[item]) {
	if len(out) == 0 {
		return
	}
	if s.batched {
		if len(s.pending[r]) == 0 {
			s.dirty = append(s.dirty, r)
		}
		s.pending[r] = append(s.pending[r], out...)
		return
	}
	if s.crashMid[r] {
		out = someOf(s.rng, out)
		defer s.crash(r)
	}
	for _, m := range out {
		s.msgs++
		s.sent[r]++
		s.push(event{at: s.now + s.delay(), kind: evMsg, rank: m.To, msg: m})
	}
}

// flush sends the coalesced messages of every rank that sent in this time
// step; a rank armed to crash mid-forward sends a random subset of its
// batches and crashes.
func (s *sim) flush() {
	for _, r := range s.dirty {
		out := Coalesce(s.pending[r])
		s.pending[r] = nil
		if s.crashed[r] {
			continue // crashed later in the step: never sent
		}
		if s.crashMid[r] {
			out = someOf(s.rng, out)
			defer s.crash(r)
		}
		for _, b := range out {
			s.msgs++
			s.sent[r]++
			s.push(event{at: s.now + s.delay(), kind: evBatch, rank: b.To, bat: b})
		}
	}
	s.dirty = s.dirty[:0]
}

// someOf is what a rank crashing mid-send sends of out: a random subset,
// possibly none (one Intn and one Shuffle of rng, so that a seed replays
// the same schedule).
func someOf[T any](rng *rand.Rand, out []T) []T {
	k := rng.Intn(len(out))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out[:k]
}

func (s *sim) deliver(r int, x item, hops int) {
	s.deliv[r][x]++
	if hops > s.maxHops {
		s.maxHops = hops
	}
}

func (s *sim) run() {
	for t := int64(0); t < int64(len(s.cal)); t++ {
		s.now = t
		// A flush's crash may schedule notices at this very step: they
		// run before the step ends.
		for i := 0; i < len(s.cal[t]); {
			for ; i < len(s.cal[t]); i++ {
				s.step(s.cal[t][i])
			}
			s.flush()
		}
		s.cal[t] = nil
	}
}

func (s *sim) step(e event) {
	s.now = e.at
	r := e.rank
	if s.crashed[r] {
		return
	}
	nd := s.nodes[r]
	switch e.kind {
	case evBcast:
		out, fresh := nd.Broadcast(e.it)
		s.bcast[e.it] = append(s.bcast[e.it], r)
		if fresh {
			s.deliver(r, e.it, 0)
		}
		s.emit(r, out)
	case evMsg:
		out, del := nd.Step(e.msg)
		for _, x := range del {
			s.deliver(r, x, e.msg.Hops)
		}
		s.emit(r, out)
	case evBatch:
		out, del := nd.StepBatch(e.bat)
		for _, x := range del {
			s.deliver(r, x, e.bat.Hops[slices.Index(e.bat.Items, x)])
		}
		s.emit(r, out)
	case evCrash:
		s.crash(r)
	case evNotice:
		s.emit(r, nd.Failed(e.id))
	}
}

// check verifies integrity, agreement and validity.
func (s *sim) check() error {
	for r := 0; r < s.n; r++ {
		for x, c := range s.deliv[r] {
			if c != 1 {
				return fmt.Errorf("rank %d delivered %v %d times", r, x, c)
			}
			if _, ok := s.bcast[x]; !ok {
				return fmt.Errorf("rank %d delivered %v, never broadcast", r, x)
			}
		}
	}
	var live []int
	for r := 0; r < s.n; r++ {
		if !s.crashed[r] {
			live = append(live, r)
		}
	}
	// Agreement: every item some live rank delivered (the first to, for
	// the message) is delivered by every live rank.
	by := map[item]int{}
	for _, a := range live {
		for x := range s.deliv[a] {
			if _, ok := by[x]; !ok {
				by[x] = a
			}
		}
	}
	for x, a := range by {
		for _, b := range live {
			if s.deliv[b][x] == 0 {
				return fmt.Errorf("agreement: live rank %d delivered %v, live rank %d did not", a, x, b)
			}
		}
	}
	for x, by := range s.bcast {
		for _, o := range by {
			if s.crashed[o] {
				continue
			}
			for _, b := range live {
				if s.deliv[b][x] == 0 {
					return fmt.Errorf("validity: %v broadcast by live rank %d not delivered by live rank %d", x, o, b)
				}
			}
		}
	}
	return nil
}

func randN(rng *rand.Rand) int {
	switch p := rng.Intn(100); {
	case p < 60:
		return 1 + rng.Intn(16)
	case p < 92:
		return 17 + rng.Intn(112)
	case p < 99:
		return 129 + rng.Intn(128)
	default:
		return 257 + rng.Intn(768)
	}
}

func runSchedule(t testing.TB, seed int64) (s *sim, failureFree bool, err error) {
	rng := rand.New(rand.NewSource(seed))
	n := randN(rng)
	s = newSim(t, n, rng)
	s.maxDelay = 1 + rng.Int63n(100)
	s.noticeMax = rng.Int63n(1 + 4*s.maxDelay*int64(rng.Intn(4)))
	horizon := 1 + 3*s.maxDelay

	// Broadcasts: a few per-origin items and maybe one shared item.
	nItems := 1 + rng.Intn(3)
	var origins []int
	for i := 0; i < nItems; i++ {
		o := rng.Intn(n)
		origins = append(origins, o)
		s.push(event{at: rng.Int63n(horizon), kind: evBcast, rank: o, it: item{o, i}})
	}
	if rng.Intn(3) == 0 {
		for k := 1 + rng.Intn(3); k > 0; k-- {
			o := rng.Intn(n)
			origins = append(origins, o)
			s.push(event{at: rng.Int63n(horizon), kind: evBcast, rank: o, it: item{-1, 0}})
		}
	}
	// Crashes: none, a few, or (small n) nearly everyone.
	var nCrash int
	switch p := rng.Intn(10); {
	case p < 2 || n == 1:
	case p < 7:
		nCrash = 1 + rng.Intn(min(n-1, 4))
	default:
		nCrash = 1 + rng.Intn(min(n-1, 48))
	}
	failureFree = nCrash == 0
	victims := rng.Perm(n)[:nCrash]
	if nCrash > 0 && rng.Intn(3) == 0 {
		// The origin of the first item crashes after sending to only some
		// of its neighbours.
		victims[0] = origins[0]
	}
	for _, v := range victims {
		if v == origins[0] && rng.Intn(2) == 0 || rng.Intn(3) == 0 {
			s.crashMid[v] = true // crashes mid-forward, at its next send
			// and, if it never sends, at a random time anyway
		}
		s.push(event{at: rng.Int63n(2 * horizon), kind: evCrash, rank: v})
	}
	s.run()
	return s, failureFree, s.check()
}

// Thousands of seeded schedules with random crashes (origins crashing after
// a partial send, ranks crashing mid-forward), random delays, reordering and
// slow failure notices, n from 1 to 1024.
func TestSimulatedSchedules(t *testing.T) {
	seeds := *schedulesFlag
	if testing.Short() {
		seeds /= 10
	}
	first := int64(1)
	if *seedFlag >= 0 {
		first, seeds = *seedFlag, 1
	}
	start := time.Now()
	var msgs, maxN, ff int
	for seed := first; seed < first+int64(seeds); seed++ {
		s, failureFree, err := runSchedule(t, seed)
		if err != nil {
			t.Fatalf("seed %d (n=%d): %v\nreplay: go test ./internal/ft/rbcast -run TestSimulatedSchedules -seed=%d -v", seed, s.n, err, seed)
		}
		if failureFree {
			ff++
			// Every rank delivered everything; message count as computed.
			for r := 0; r < s.n; r++ {
				if len(s.deliv[r]) != len(s.bcast) {
					t.Fatalf("seed %d: failure-free rank %d delivered %d of %d items", seed, r, len(s.deliv[r]), len(s.bcast))
				}
			}
			bound := 0
			for _, by := range s.bcast {
				bound += floodCost(s.n) + len(by) - 1 // a concurrent re-broadcast costs one more
			}
			if s.msgs > bound {
				t.Fatalf("seed %d: %d messages > %d", seed, s.msgs, bound)
			}
		}
		msgs += s.msgs
		maxN = max(maxN, s.n)
	}
	t.Logf("%d schedules (%d failure-free, n up to %d), %d messages, %v", seeds, ff, maxN, msgs, time.Since(start))
}

// floodCost bounds the messages for one item over n ranks, failure-free:
// every rank but the origin forwards to all its neighbours but one.
func floodCost(n int) int {
	if n == 1 {
		return 0
	}
	deg := len(Neighbors(n, 0)) // the BMG is vertex-transitive
	return deg + (n-1)*(deg-1)
}

// Failure-free with unit delays (synchronous rounds): depth and message
// count for n = 1..1024 (all n up to 130, then samples).
func TestFailureFreeDepthAndMessages(t *testing.T) {
	sizes := []int{}
	for n := 1; n <= 130; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 200, 255, 256, 257, 333, 511, 512, 513, 700, 1000, 1023, 1024)
	rng := rand.New(rand.NewSource(7))
	var report []string
	for _, n := range sizes {
		origins := []int{0, rng.Intn(n)}
		if n <= 24 {
			origins = origins[:0]
			for o := 0; o < n; o++ {
				origins = append(origins, o)
			}
		}
		for _, o := range origins {
			s := newSim(t, n, rng)
			s.push(event{at: 0, kind: evBcast, rank: o, it: item{o, 0}})
			s.run()
			if err := s.check(); err != nil {
				t.Fatalf("n=%d origin %d: %v", n, o, err)
			}
			lg := Log2Ceil(n)
			if s.maxHops > lg+1 || (n > 1 && s.maxHops > lg) {
				t.Fatalf("n=%d origin %d: depth %d > ceil(log2 n) = %d", n, o, s.maxHops, lg)
			}
			if s.msgs != floodCost(n) || s.msgs > n*max(2*lg-1, 0)+1 {
				t.Fatalf("n=%d origin %d: %d messages, want %d <= n(2*ceil(log2 n)-1)+1 = %d", n, o, s.msgs, floodCost(n), n*(2*lg-1)+1)
			}
			if o == 0 && (n&(n-1) == 0 || n == 1000) && n >= 8 {
				report = append(report, fmt.Sprintf("n=%d depth=%d (log2=%d) msgs=%d (%.2f n*ceil(log2 n))", n, s.maxHops, lg, s.msgs, float64(s.msgs)/float64(n*lg)))
			}
		}
	}
	for _, l := range report {
		t.Log(l)
	}
}

func TestNeighbors(t *testing.T) {
	if Neighbors(1, 0) != nil {
		t.Fatal("n=1 has neighbours")
	}
	if nb := Neighbors(2, 1); len(nb) != 1 || nb[0] != 0 {
		t.Fatalf("n=2: %v", nb)
	}
	for n := 1; n <= 200; n++ {
		lg := Log2Ceil(n)
		if n > 1 && (1<<lg < n || 1<<(lg-1) >= n) {
			t.Fatalf("Log2Ceil(%d) = %d", n, lg)
		}
		for r := 0; r < n; r++ {
			nb := Neighbors(n, r)
			if len(nb) > 2*lg {
				t.Fatalf("n=%d r=%d degree %d", n, r, len(nb))
			}
			for _, v := range nb {
				if v == r || v < 0 || v >= n {
					t.Fatalf("n=%d r=%d: bad neighbour %d", n, r, v)
				}
				found := false
				for _, w := range Neighbors(n, v) {
					found = found || w == r
				}
				if !found {
					t.Fatalf("n=%d: %d->%d not symmetric", n, r, v)
				}
			}
		}
	}
}

// The live ranks are disconnected in the BMG (0 and 5 of 16 share no edge):
// ring repair still delivers, once the failures are known, whatever their
// order relative to the broadcast.
func TestRingRepair(t *testing.T) {
	for _, before := range []bool{true, false} {
		s := newSim(t, 16, rand.New(rand.NewSource(1)))
		for r := 0; r < 16; r++ {
			if r != 0 && r != 5 {
				if before {
					s.crash(r)
				} else {
					s.push(event{at: 50, kind: evCrash, rank: r})
				}
			}
		}
		s.noticeMax = 30
		s.push(event{at: 10, kind: evBcast, rank: 0, it: item{0, 0}})
		s.push(event{at: 10, kind: evBcast, rank: 5, it: item{5, 0}})
		s.run()
		if err := s.check(); err != nil {
			t.Fatalf("before=%v: %v", before, err)
		}
		if s.deliv[5][item{0, 0}] != 1 || s.deliv[0][item{5, 0}] != 1 {
			t.Fatalf("before=%v: not delivered across the ring", before)
		}
		if succ, pred := s.nodes[0].Ring(); succ != 5 || pred != 5 {
			t.Fatalf("ring of 0: %d %d", succ, pred)
		}
	}
}

func TestDedupAndIncarnations(t *testing.T) {
	if _, err := New[item](Config{N: 0}); err == nil {
		t.Fatal("N=0 accepted")
	}
	if _, err := New[item](Config{N: 3, Self: 3}); err == nil {
		t.Fatal("Self=N accepted")
	}
	b, _ := New[item](Config{N: 8, Self: 0})
	out, fresh := b.Broadcast(item{1, 1})
	if !fresh || len(out) != len(Neighbors(8, 0)) {
		t.Fatalf("broadcast: %v %v", fresh, out)
	}
	if out, fresh := b.Broadcast(item{1, 1}); fresh || out != nil {
		t.Fatal("re-broadcast of a delivered item")
	}
	if out, del := b.Step(Msg[item]{From: 1, To: 0, Item: item{1, 1}, Hops: 1}); out != nil || del != nil {
		t.Fatal("duplicate delivered")
	}
	out, del := b.Step(Msg[item]{From: 1, To: 0, Item: item{2, 2}, Hops: 1})
	if len(del) != 1 || len(out) != len(Neighbors(8, 0))-1 {
		t.Fatalf("step: %v %v", del, out)
	}
	for _, m := range out {
		if m.To == 1 || m.Hops != 2 {
			t.Fatalf("forward %+v", m)
		}
	}
	// Failed skips the failed neighbour; monotone.
	b.Failed(member.ID{Rank: 2})
	out, _ = b.Step(Msg[item]{From: 1, To: 0, Item: item{3, 3}, Hops: 1})
	for _, m := range out {
		if m.To == 2 {
			t.Fatal("forwarded to failed rank")
		}
	}
	// Rank 2 respawns (incarnation 1); a late notice about 2.0 is ignored.
	b.Joined(member.ID{Rank: 2, Inc: 1})
	b.Failed(member.ID{Rank: 2, Inc: 0})
	if b.IsFailed(member.ID{Rank: 2, Inc: 1}) || !b.IsFailed(member.ID{Rank: 2, Inc: 0}) {
		t.Fatal("incarnations confused")
	}
	out, _ = b.Step(Msg[item]{From: 1, To: 0, Item: item{4, 4}, Hops: 1})
	var to2 bool
	for _, m := range out {
		to2 = to2 || m.To == 2
	}
	if !to2 {
		t.Fatal("joined rank not forwarded to")
	}
	if b.Joined(member.ID{Rank: 2, Inc: 0}); b.IsFailed(member.ID{Rank: 2, Inc: 1}) {
		t.Fatal("stale join")
	}
	items := append([]item(nil), b.Items()...)
	sort.Slice(items, func(i, j int) bool { return items[i].Origin < items[j].Origin })
	if len(items) != 4 || !b.Delivered(item{4, 4}) {
		t.Fatalf("items %v", items)
	}
	// Declared failed: silent.
	b.Failed(member.ID{Rank: 0})
	if out, fresh := b.Broadcast(item{9, 9}); out != nil || fresh {
		t.Fatal("failed node broadcast")
	}
	if out, del := b.Step(Msg[item]{From: 1, To: 0, Item: item{8, 8}, Hops: 1}); out != nil || del != nil {
		t.Fatal("failed node stepped")
	}
}
