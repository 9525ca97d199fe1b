package shm

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// A polling loop that finds a long gap between two of its clock reads
// (its thread lost the core) counts the host as crowded for crowdedFor;
// short gaps do not.
func TestGapMakesTheHostCrowded(t *testing.T) {
	var tr Transport
	t0 := time.Unix(1000, 0)
	if tr.noteGap(10*time.Microsecond, t0) {
		t.Fatal("a short gap made the host crowded")
	}
	if !tr.noteGap(crowdedGap, t0) {
		t.Fatal("a gap of a lost time slice did not make the host crowded")
	}
	if !tr.noteGap(time.Microsecond, t0.Add(crowdedFor/2)) {
		t.Fatal("the host stopped being crowded before crowdedFor")
	}
	if tr.noteGap(time.Microsecond, t0.Add(crowdedFor)) {
		t.Fatal("the host is still crowded after crowdedFor")
	}
}

// A caller polling on a crowded host gives the core away with kernel
// yields between its polls (without Config.Yield).
func TestCrowdedPollerYieldsTheCore(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, sleepMax, h0, h1)
	defer closeAll(trs)
	var yields atomic.Int64
	trs[1].cfg.kernelYield = func() { yields.Add(1) }
	trs[1].crowdedUntil.Store(time.Now().Add(time.Hour).UnixNano())
	if trs[1].PollUntil(doneFn(func() bool { return false }), time.Millisecond) {
		t.Fatal("PollUntil reported a request done that never is")
	}
	if yields.Load() == 0 {
		t.Fatal("a caller polling on a crowded host never yielded the core")
	}
}

// A caller that has polled for a quarter of its budget without its
// request completing offers the core to other threads (sched_yield) at
// every check, on a host not known to be crowded too; a wait that ends
// sooner never makes that system call.
func TestLongPollYieldsTheCore(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, sleepMax, h0, h1)
	defer closeAll(trs)
	var yields atomic.Int64
	trs[1].cfg.kernelYield = func() { yields.Add(1) }
	if !trs[1].PollUntil(doneFn(func() bool { return true }), time.Hour) || yields.Load() != 0 {
		t.Fatalf("a wait already done: %d kernel yields", yields.Load())
	}
	// Whether a wait had a check past a quarter of its budget depends on
	// how the threads were scheduled (one that loses the core for the
	// whole budget between two checks has none), so each wait's checks are
	// recorded: the loop calls goYield at every check that does not end
	// the wait, after reading the clock. Check k's clock read came after
	// check k-1's goYield, and the first check's before the first goYield,
	// so a check that follows a goYield made a quarter of the budget after
	// the first one polled that long, and must have yielded. Waits with no
	// such check, and waits that saw the host crowded (which yields for
	// that reason), prove nothing and are tried again, a bounded number of
	// times.
	var checks []time.Time
	defer func(f func()) { goYield = f }(goYield)
	goYield = func() {
		checks = append(checks, time.Now())
		runtime.Gosched()
	}
	const budget = 4 * time.Millisecond
	const attempts = 200
	for i := 0; i < attempts; i++ {
		yields.Store(0)
		trs[1].crowdedUntil.Store(0)
		checks = checks[:0]
		if trs[1].PollUntil(doneFn(func() bool { return false }), budget) {
			t.Fatal("PollUntil reported a request done that never is")
		}
		late := 0 // checks that did not end the wait, a quarter of the budget after the first
		for _, c := range checks {
			if c.Sub(checks[0]) >= budget/yieldAfter {
				late++
			}
		}
		if late < 2 || trs[1].crowdedUntil.Load() != 0 {
			// No check known to have polled that long, or the host was
			// seen crowded (that yields too, for another reason).
			continue
		}
		if yields.Load() == 0 {
			t.Fatalf("a caller that polled out its budget never offered the core (%d checks, %d of them past a quarter of the budget)", len(checks), late)
		}
		return
	}
	t.Skipf("none of %d waits had two checks a quarter of the budget after its first (a loaded host): the rule could not be observed", attempts)
}

// A peer that polls (its poll word counts a caller) but has not run since
// the last look (its beat has not moved) is stalled; one that does not
// poll, or whose beat moves, is not. A caller beside a stalled peer offers
// it the core (sched_yield) and polls on to its budget: it does not stop
// early to park (issue 28 item 2, session 18: that stop put launches
// beside a busy process in a mode where every hop was a sleep and a
// wake-up).
func TestPollerBesideAStalledPeerPollsItsBudget(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, sleepMax, h0, h1)
	defer closeAll(trs)
	b := make([]byte, 8)
	fill(b, 1)
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the frame", func() bool { return h1.n.Load() == 1 })
	trs[1].peerStalled(false) // a first look reports nothing
	if trs[1].peerStalled(false) {
		t.Fatal("a peer that does not poll was taken for a stalled one")
	}

	// Rank 0 "polls" (its poll word counts a caller) but never runs.
	trs[0].bellPoll.Add(1)
	defer func() {
		trs[0].bellPoll.Add(^uint32(0))
		trs[0].unpark()
	}()
	if !trs[1].peerStalled(false) {
		t.Fatal("a peer that polls without running is not stalled")
	}
	trs[0].bellBeat.Add(1)
	if trs[1].peerStalled(false) {
		t.Fatal("a peer whose beat moved is stalled")
	}

	var yields atomic.Int64
	trs[1].cfg.kernelYield = func() { yields.Add(1) }
	never := doneFn(func() bool { return false })
	const budget = 20 * time.Millisecond
	start := time.Now()
	if trs[1].PollUntil(never, budget) {
		t.Fatal("PollUntil reported a request done that never is")
	}
	if d := time.Since(start); d < budget {
		t.Fatalf("a caller beside a stalled peer stopped polling after %v, before its budget %v", d, budget)
	}
	if yields.Load() == 0 {
		t.Fatal("a caller beside a stalled peer never offered the core")
	}
}

// blockingDone is a request for PollUntil that counts its Blocking calls.
type blockingDone struct {
	done    func() bool
	blocked int
}

func (b *blockingDone) Done() bool { return b.done() }
func (b *blockingDone) Blocking()  { b.blocked++ }

// A wait that polls past pollBrief polls tells its request once that it
// goes on (p2p.Req.Blocking), before its first check; one that ends
// sooner does not.
func TestPollTellsAWaitThatGoesOnOnce(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, sleepMax, h0, h1)
	defer closeAll(trs)
	looks := 0
	long := &blockingDone{done: func() bool { looks++; return false }}
	if trs[1].PollUntil(long, time.Millisecond) {
		t.Fatal("PollUntil reported a request done that never is")
	}
	if long.blocked != 1 {
		t.Fatalf("a wait that polled out its budget was told %d times that it goes on, want 1", long.blocked)
	}
	n := 0
	short := &blockingDone{done: func() bool { n++; return n > pollBrief/2 }}
	if !trs[1].PollUntil(short, time.Hour) || short.blocked != 0 {
		t.Fatalf("a wait done within %d polls: done %v, told %d times that it goes on", pollBrief/2, short.done(), short.blocked)
	}
}
