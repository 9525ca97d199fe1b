package sock

import (
	"sync/atomic"
	"testing"
	"time"
)

// sizedDone is a chanDone that names the payload it waits for, as a
// p2p.Req does (PollBytes).
type sizedDone struct {
	chanDone
	bytes atomic.Int64
}

func (c *sizedDone) PollBytes() int64 { return c.bytes.Load() }

// pollReturns runs PollUntil(c, budget) on trs[1] in a goroutine, calls
// during (if not nil) once the caller polls, and fails unless the call
// returns false within 20 s; it returns how long the call took.
func pollReturns(t *testing.T, tr *Transport, c *sizedDone, budget time.Duration, during func()) time.Duration {
	t.Helper()
	type res struct {
		done bool
		took time.Duration
	}
	out := make(chan res, 1)
	go func() {
		start := time.Now()
		done := tr.PollUntil(c, budget)
		out <- res{done, time.Since(start)}
	}()
	if during != nil {
		waitUntil(t, "the caller polls", func() bool { return tr.polling.Load() != 0 })
		during()
	}
	select {
	case r := <-out:
		if r.done {
			t.Fatal("PollUntil reported a frame nobody sent")
		}
		return r.took
	case <-time.After(20 * time.Second):
		t.Fatalf("PollUntil with a budget of %v still polls after 20 s", budget)
	}
	return 0
}

// A caller waiting for a payload of bulkPoll bytes or more does not poll
// (it returns to block while the reader goroutine moves the payload), and
// stops polling as soon as such a payload is announced; below bulkPoll it
// polls for its budget as before. Over TCP on two cores a caller spinning
// beside the goroutines that move a 1 MiB payload took a processor from
// them. The frame the caller gave up on still arrives, through the reader
// goroutine.
func TestPollUntilLeavesBulkPayloadsToGoroutines(t *testing.T) {
	a, b := &pingHandler{got: make(chan uint64, 1)}, &pingHandler{got: make(chan uint64, 1)}
	trs := pairTCP(t, a, b)
	defer closeAll(trs)
	polledRounds(t, trs, a, b, 1, nil) // connect

	// Announced before the wait: no poll at all (a budget of an hour).
	c := &sizedDone{chanDone: chanDone{ch: b.got}}
	c.bytes.Store(bulkPoll)
	pollReturns(t, trs[1], c, time.Hour, nil)

	// Announced while the caller polls: it stops.
	c2 := &sizedDone{chanDone: chanDone{ch: b.got}}
	pollReturns(t, trs[1], c2, time.Hour, func() { c2.bytes.Store(bulkPoll + 1) })

	// Below bulkPoll the caller polls for its budget.
	const budget = 20 * time.Millisecond
	c3 := &sizedDone{chanDone: chanDone{ch: b.got}}
	c3.bytes.Store(bulkPoll - 1)
	if took := pollReturns(t, trs[1], c3, budget, nil); took < budget {
		t.Fatalf("a caller waiting for %d bytes gave up after %v, before its budget of %v", bulkPoll-1, took, budget)
	}

	// What the callers gave up on is delivered by the reader goroutine.
	sendAndExpect(t, trs[0], b.got, 7, "the reader")
}
