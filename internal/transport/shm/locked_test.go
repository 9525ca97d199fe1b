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

// With transport.SetLockedCallers (a C program: libmpi), a goroutine
// locked to its thread that polls keeps its thread: it does not yield its
// processor, which for a locked goroutine hands the thread over and back
// through futexes (every few microseconds of polling, thousands in the
// 20 ms here; without the mode this test counts about one switch per
// yield). A few switches remain: the runtime's preemption every 10 ms and
// the garbage collector stop a locked goroutine the same way.
func TestPollUntilLockedCallerKeepsItsThread(t *testing.T) {
	trs := newPollJob(t, 2, sleepMax, newStackHandler(), newStackHandler())
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.Close()
		}
	})
	transport.SetLockedCallers(true)
	defer transport.SetLockedCallers(false)
	const budget = 20 * time.Millisecond
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
		done := trs[0].PollUntil(doneFn(func() bool { return false }), budget)
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
	if r.done {
		t.Fatal("PollUntil reported a request that never completes done")
	}
	if r.took < budget {
		t.Fatalf("PollUntil returned after %v, before its budget of %v", r.took, budget)
	}
	if r.switches > 20 {
		t.Fatalf("a locked caller's thread slept %d times in %v of polling: it yields its processor", r.switches, r.took)
	}
	t.Logf("%d voluntary switches in %v of polling", r.switches, r.took)
}

// A caller locked to its thread yields its core to the kernel only once it
// has polled for a quarter of its budget: a wait shorter than that (a
// ping-pong at its pace) does not give the core away, a longer one does
// at every clock check.
func TestPollUntilLockedCallerYieldsItsCoreLate(t *testing.T) {
	trs := newPollJob(t, 2, sleepMax, newStackHandler(), newStackHandler())
	t.Cleanup(func() {
		for _, tr := range trs {
			tr.Close()
		}
	})
	transport.SetLockedCallers(true)
	defer transport.SetLockedCallers(false)
	var yields atomic.Int64
	defer func(f func()) { kernelYield = f }(kernelYield)
	kernelYield = func() { yields.Add(1) }
	const budget = 40 * time.Millisecond

	t0 := time.Now()
	short := doneFn(func() bool { return time.Since(t0) > budget/lockedYieldAfter/2 })
	if !trs[0].PollUntil(short, budget) {
		t.Fatal("PollUntil gave up on a request done within its budget")
	}
	if n := yields.Load(); n != 0 {
		t.Errorf("a wait of %v (budget %v) yielded the core %d times", time.Since(t0), budget, n)
	}
	if trs[0].PollUntil(doneFn(func() bool { return false }), budget) {
		t.Fatal("PollUntil reported a request that never completes done")
	}
	if yields.Load() == 0 {
		t.Errorf("a wait that spun out its budget of %v never yielded the core", budget)
	}
}
