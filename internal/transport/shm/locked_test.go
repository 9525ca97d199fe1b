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
func TestPollUntilLockedCallerYieldsLate(t *testing.T) {
	trs := lockedJob(t)
	var yields atomic.Int64
	defer func(f func()) { goYield = f }(goYield)
	goYield = func() { yields.Add(1); runtime.Gosched() }
	const budget = 40 * time.Millisecond

	t0 := time.Now()
	short := doneFn(func() bool { return time.Since(t0) > budget/lockedYieldAfter/2 })
	if !trs[0].PollUntil(short, budget) {
		t.Fatal("PollUntil gave up on a request done within its budget")
	}
	if n := yields.Load(); n != 0 {
		t.Errorf("a wait of %v (budget %v) yielded %d times", time.Since(t0), budget, n)
	}
	if trs[0].PollUntil(doneFn(func() bool { return false }), budget) {
		t.Fatal("PollUntil reported a request that never completes done")
	}
	if yields.Load() == 0 {
		t.Errorf("a wait that spun out its budget of %v never yielded", budget)
	}
}
