package shm

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// voluntarySwitches is the calling thread's count of voluntary context
// switches (it slept: a futex, a blocking system call), -1 if unknown.
func voluntarySwitches() int {
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return -1
}

// lockedJob is a job of two transports whose callers are locked to their
// threads (transport.SetLockedCallers) for the test.
func lockedJob(t *testing.T) []*Transport {
	trs := newPollJob(t, 2, sleepMax, newStackHandler(), newStackHandler())
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.Close()
		}
	})
	transport.SetLockedCallers(true)
	t.Cleanup(func() { transport.SetLockedCallers(false) })
	return trs
}

// With transport.SetLockedCallers (a C program: libmpi), a goroutine
// locked to its thread that polls for less than a quarter of its budget
// keeps its thread: it does not yield its processor, which for a locked
// goroutine hands the thread over and back through futexes (without the
// mode, every few polls: tens to thousands of sleeps of the thread in the
// 20 ms here, the fewer the more loaded the host).
// A switch or two may remain: the runtime's preemption every 10 ms and the
// garbage collector stop a locked goroutine the same way.
func TestPollUntilLockedCallerKeepsItsThread(t *testing.T) {
	trs := lockedJob(t)
	const budget, wait = 160 * time.Millisecond, 20 * time.Millisecond
	type result struct {
		switches int
		took     time.Duration
		done     bool
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		v0 := voluntarySwitches()
		t0 := time.Now()
		done := trs[0].PollUntil(doneFn(func() bool { return time.Since(t0) > wait }), budget)
		took := time.Since(t0)
		v1 := voluntarySwitches()
		if v0 < 0 || v1 < 0 {
			res <- result{-1, took, done}
			return
		}
		res <- result{v1 - v0, took, done}
	}()
	r := <-res
	if r.switches < 0 {
		t.Skip("no voluntary_ctxt_switches in /proc/thread-self/status")
	}
	if !r.done {
		t.Fatalf("PollUntil gave up after %v on a request done after %v (budget %v)", r.took, wait, budget)
	}
	if r.switches > 4 {
		t.Fatalf("a locked caller's thread slept %d times in %v of polling: it yields its processor", r.switches, r.took)
	}
	t.Logf("%d voluntary switches in %v of polling", r.switches, r.took)
}

// A caller locked to its thread yields its processor only once it has
// polled for a quarter of its budget: a wait shorter than that (a
// ping-pong at its pace) never does, a longer one (the peer is not
// running) at every clock check, as other callers do from the start.
//
// The loop reads the clock only every pollCheck polls; a thread that
// loses its core between two reads for most of the budget (a loaded host:
// CI failed 6 of 100 runs at load 24 with a 40 ms budget) can spin its
// budget out without a read inside the window where it yields, or see a
// short wait end only after a quarter of the budget. Such a try shows
// nothing and is repeated with twice the budget: it is told by the gaps
// between the condition's own polls (a gap of budget/8 or more voids it).
func TestPollUntilLockedCallerYieldsLate(t *testing.T) {
	trs := lockedJob(t)
	var yields atomic.Int64
	defer func(f func()) { goYield = f }(goYield)
	goYield = func() { yields.Add(1); runtime.Gosched() }
	// polled is a condition that records the longest gap between two of
	// its polls.
	polled := func(done func() bool) (doneFn, *time.Duration) {
		var gap time.Duration
		var last time.Time
		return doneFn(func() bool {
			now := time.Now()
			if !last.IsZero() && now.Sub(last) > gap {
				gap = now.Sub(last)
			}
			last = now
			return done()
		}), &gap
	}
	for budget := 40 * time.Millisecond; ; budget *= 2 {
		if budget > 5*time.Second {
			t.Fatal("every try lost its core for an eighth of its budget (up to 5s): the host is too loaded to show anything")
		}
		yields.Store(0)
		t0 := time.Now()
		short, gap := polled(func() bool { return time.Since(t0) > budget/lockedYieldAfter/2 })
		if !trs[0].PollUntil(short, budget) {
			t.Fatal("PollUntil gave up on a request done within its budget")
		}
		if *gap >= budget/8 {
			t.Logf("budget %v: the short wait lost its core for %v; again with twice the budget", budget, *gap)
			continue
		}
		if n := yields.Load(); n != 0 {
			t.Fatalf("a wait of %v (budget %v) yielded %d times", time.Since(t0), budget, n)
		}
		never, gap := polled(func() bool { return false })
		if trs[0].PollUntil(never, budget) {
			t.Fatal("PollUntil reported a request that never completes done")
		}
		if *gap >= budget/8 {
			t.Logf("budget %v: the long wait lost its core for %v; again with twice the budget", budget, *gap)
			continue
		}
		if yields.Load() == 0 {
			t.Fatalf("a wait that spun out its budget of %v never yielded", budget)
		}
		return
	}
}
