package shm

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// The last caller out of PollUntil polls once more (lastLookHeld) only
// when the receiver sleeps: a receiver parked while the caller polled
// polls again itself once woken, so the caller's way out of a
// ping-pong's receive does not read the rings again (issue 28). A
// sleeping receiver still gets the look, and a frame published while the
// caller polls is delivered either way.
func TestPollUntilLeavesTheLastLookToAnAwakeReceiver(t *testing.T) {
	hs := []*pingHandler{{ch: make(chan struct{}, 1)}, {ch: make(chan struct{}, 1)}}
	var looks atomic.Int64
	dir := t.TempDir()
	trs := make([]*Transport, 2)
	for i := range trs {
		cfg := Config{Self: i, Dir: dir, Name: sockName(i), Handler: hs[i], sleepMax: time.Hour, Auth: testKey,
			SpinFn: func() time.Duration { return 10 * time.Microsecond }}
		if i == 1 {
			cfg.onLastLook = func() { looks.Add(1) }
		}
		tr, err := Listen(cfg)
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
	}
	defer closeAll(trs)
	for _, tr := range trs {
		tr.SetPeers(addrs(dir, 2))
	}
	deadline := time.Now().Add(20 * time.Second)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20 s", what)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	// The pair set up by a first frame.
	if err := trs[0].Send(1, transport.Header{Kind: 1}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("the first frame", func() bool { return hs[1].n.Load() == 1 })

	// A caller polls until told to stop; the receiver, woken, parks.
	var stop atomic.Bool
	out := make(chan struct{})
	go func() {
		defer close(out)
		trs[1].PollUntil(doneFn(stop.Load), time.Hour)
	}()
	waitFor("the caller counted", func() bool { return trs[1].bellPoll.Load() == 1 })
	rung := false
	waitFor("the receiver parked", func() bool {
		if !rung && trs[1].bellSleep.Load() != 0 {
			// A receiver asleep since the first frame wakes, sees the
			// caller and parks; rung once, so that no wake-up is left
			// for its next sleep.
			ringEventfd(trs[1].evFd)
			rung = true
		}
		return trs[1].rxParked.Load() == 1
	})
	// A frame published while the caller polls: delivered.
	if err := trs[0].Send(1, transport.Header{Kind: 1}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("the second frame", func() bool { return hs[1].n.Load() == 2 })
	before := looks.Load()
	stop.Store(true)
	select {
	case <-out:
	case <-time.After(20 * time.Second):
		t.Fatal("PollUntil did not return within 20 s of its wait's end")
	}
	if n := looks.Load() - before; n != 0 {
		t.Fatalf("the caller looked again %d time(s) on its way out with the receiver parked", n)
	}

	// With the receiver asleep the caller looks again. (Its sleep's
	// bound starts short and grows, so it may wake between the test's
	// look and the caller's exit: tried until once asleep throughout.)
	for try := 0; ; try++ {
		waitFor("the receiver asleep", func() bool { return trs[1].bellSleep.Load() != 0 })
		before = looks.Load()
		calls := 0
		trs[1].PollUntil(doneFn(func() bool { calls++; return calls > 1 }), time.Hour)
		if looks.Load()-before == 1 {
			break
		}
		if try == 100 {
			t.Fatal("with the receiver asleep the caller never looked again on its way out (100 tries)")
		}
	}
	// And a frame sent then is delivered (the receiver, asleep for an
	// hour, is rung: no caller counts).
	if err := trs[0].Send(1, transport.Header{Kind: 1}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("the third frame", func() bool { return hs[1].n.Load() == 3 })
}
