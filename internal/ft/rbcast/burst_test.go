package rbcast

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/member"
)

var burstsFlag = flag.Int("bursts", 300, "number of seeded schedules TestSimulatedBursts runs (a fifth under -race)")

// runBurst is a schedule in which a burst of items (as when 1% of the ranks
// fail together and each observer broadcasts its notice) is broadcast from
// many origins within a short window, some items by several origins, with
// every rank's sends of a time step coalesced into one Batch per neighbour;
// crashes, random delays and slow failure notices as in runSchedule.
func runBurst(t testing.TB, seed int64) (s *sim, failureFree bool, err error) {
	rng := rand.New(rand.NewSource(seed))
	n := randN(rng)
	s = newSim(t, n, rng)
	s.batched = true
	s.maxDelay = 1 + rng.Int63n(1+rng.Int63n(20))
	s.noticeMax = rng.Int63n(1 + 4*s.maxDelay*int64(rng.Intn(4)))
	window := rng.Int63n(1 + 2*s.maxDelay)
	f := 1 + rng.Intn(min(n, 8))
	if rng.Intn(8) == 0 {
		f = 1 + rng.Intn(min(n, 64))
	}
	var origins []int
	for i := 0; i < f; i++ {
		o := rng.Intn(n)
		origins = append(origins, o)
		s.push(event{at: rng.Int63n(window + 1), kind: evBcast, rank: o, it: item{o, i}})
		if rng.Intn(8) == 0 { // another observer of the same failure
			o2 := rng.Intn(n)
			s.push(event{at: rng.Int63n(window + 1), kind: evBcast, rank: o2, it: item{o, i}})
		}
	}
	var nCrash int
	switch p := rng.Intn(10); {
	case p < 3 || n == 1:
	case p < 7:
		nCrash = 1 + rng.Intn(min(n-1, 4))
	default:
		nCrash = 1 + rng.Intn(min(n-1, 48))
	}
	failureFree = nCrash == 0
	victims := rng.Perm(n)[:nCrash]
	if nCrash > 0 && rng.Intn(3) == 0 {
		victims[0] = origins[0]
	}
	for _, v := range victims {
		if rng.Intn(3) == 0 {
			s.crashMid[v] = true
		}
		s.push(event{at: rng.Int63n(2*window + 2*s.maxDelay + 1), kind: evCrash, rank: v})
	}
	s.run()
	return s, failureFree, s.check()
}

// Hundreds of seeded bursts (thousands with -bursts; 10,000 were run), batched: every live rank delivers every item
// a live rank broadcast and every item any live rank delivered (validity,
// agreement), each once and only items broadcast (integrity), and the run
// ends (the calendar drains: no message begets messages for ever). A
// failure-free burst sends at most one batch per neighbour per time step
// at which a rank learnt something, so with unit delays and one instant a
// rank sends at most degree*(ceil(log2 n)+1) messages whatever the number
// of items; without batching it sent degree-1 per item.
func TestSimulatedBursts(t *testing.T) {
	seeds := *burstsFlag
	if testing.Short() {
		seeds /= 10
	}
	if raceOn {
		seeds /= 5
	}
	first := int64(1)
	if *seedFlag >= 0 {
		first, seeds = *seedFlag, 1
	}
	start := time.Now()
	var ff, msgs int
	for seed := first; seed < first+int64(seeds); seed++ {
		s, failureFree, err := runBurst(t, seed)
		if err != nil {
			t.Fatalf("seed %d (n=%d): %v\nreplay: go test ./internal/ft/rbcast -run TestSimulatedBursts -seed=%d -v", seed, s.n, err, seed)
		}
		msgs += s.msgs
		if !failureFree {
			continue
		}
		ff++
		for r := 0; r < s.n; r++ {
			if len(s.deliv[r]) != len(s.bcast) {
				t.Fatalf("seed %d: failure-free rank %d delivered %d of %d items", seed, r, len(s.deliv[r]), len(s.bcast))
			}
		}
	}
	t.Logf("%d bursts (%d failure-free), %d messages, %v", seeds, ff, msgs, time.Since(start))
}

// A burst of f items from f origins at one instant, unit delays,
// failure-free: batched, the busiest rank sends at most
// degree*(ceil(log2 n)+1) messages, whatever f; unbatched, f*(degree-1) at
// least (the bound is checked to fail for it, so that it tells them apart).
func TestBurstMessagesDoNotGrowWithFailures(t *testing.T) {
	for _, n := range []int{16, 100, 256, 1024} {
		deg := len(Neighbors(n, 0))
		bound := deg * (Log2Ceil(n) + 1)
		for _, f := range []int{1, n / 100, n / 10, n / 2} {
			if f == 0 || n > 256 && (f > n/100 || raceOn) {
				continue // a tenth of 1024: seconds
			}
			var worst [2]int
			for bi, batched := range []bool{false, true} {
				if !batched && f > 64 {
					worst[0] = -1 // unbatched: f*(degree-1) at least, too slow to simulate
					continue
				}
				rng := rand.New(rand.NewSource(int64(n*1000 + f)))
				s := newSim(t, n, rng)
				s.batched = batched
				for i, o := range rng.Perm(n)[:f] {
					s.push(event{at: 0, kind: evBcast, rank: o, it: item{o, i}})
				}
				s.run()
				if err := s.check(); err != nil {
					t.Fatalf("n=%d f=%d batched=%v: %v", n, f, batched, err)
				}
				for r := range s.n {
					if len(s.deliv[r]) != f {
						t.Fatalf("n=%d f=%d batched=%v: rank %d delivered %d", n, f, batched, r, len(s.deliv[r]))
					}
				}
				worst[bi] = slices.Max(s.sent)
			}
			if worst[1] > bound {
				t.Errorf("n=%d f=%d: batched, the busiest rank sent %d > degree*(ceil(log2 n)+1) = %d", n, f, worst[1], bound)
			}
			if f*(deg-1) > bound && worst[0] >= 0 && worst[0] <= bound {
				t.Errorf("n=%d f=%d: unbatched sent %d <= %d: the bound does not tell them apart", n, f, worst[0], bound)
			}
			t.Logf("n=%d f=%d: busiest rank sends %d unbatched, %d batched (bound %d)", n, f, worst[0], worst[1], bound)
		}
	}
}

// Coalesce groups per (From, To), each item once with its fewest hops; a
// batch repeating an item or carrying a known one delivers only the new.
func TestCoalesceAndStepBatch(t *testing.T) {
	if Coalesce[item](nil) != nil {
		t.Fatal("nil in, not nil out")
	}
	got := Coalesce([]Msg[item]{
		{From: 0, To: 1, Item: item{1, 0}, Hops: 3},
		{From: 0, To: 2, Item: item{1, 0}, Hops: 3},
		{From: 0, To: 1, Item: item{2, 0}, Hops: 1},
		{From: 0, To: 1, Item: item{1, 0}, Hops: 2},
	})
	want := []Batch[item]{{From: 0, To: 1, Items: []item{{1, 0}, {2, 0}}, Hops: []int{2, 1}}, {From: 0, To: 2, Items: []item{{1, 0}}, Hops: []int{3}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Coalesce: %v, want %v", got, want)
	}
	b, _ := New[item](Config{N: 8, Self: 0})
	b.Broadcast(item{5, 5})
	out, del := b.StepBatch(Batch[item]{From: 1, To: 0, Items: []item{{5, 5}, {6, 6}, {6, 6}, {7, 7}}, Hops: []int{1, 1, 1, 1}})
	if fmt.Sprint(del) != fmt.Sprint([]item{{6, 6}, {7, 7}}) {
		t.Fatalf("delivered %v", del)
	}
	bs := Coalesce(out)
	if len(bs) != len(Neighbors(8, 0))-1 {
		t.Fatalf("%d batches for %d neighbours but the sender", len(bs), len(Neighbors(8, 0))-1)
	}
	for _, x := range bs {
		if x.To == 1 || len(x.Items) != 2 || fmt.Sprint(x.Hops) != "[2 2]" {
			t.Fatalf("forward %+v", x)
		}
	}
	b.Failed(member.ID{Rank: 0})
	if out, del := b.StepBatch(Batch[item]{From: 1, To: 0, Items: []item{{9, 9}}}); out != nil || del != nil {
		t.Fatal("failed node stepped a batch")
	}
}
