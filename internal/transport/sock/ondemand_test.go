package sock

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// A rank that talks to its two ring neighbours out of 64 holds two
// connections and two peer states, not 63 (issue 24): the address table
// is all a rank has of the others until it first sends to one, and a
// connection is opened on first use, one per pair whichever side dials.
func TestConnectionsOnFirstUseRingOf64(t *testing.T) {
	const n = 64
	trs, recs := newJob(t, n, ModeUnix)
	defer func() {
		for _, tr := range trs {
			tr.Close()
		}
	}()
	nbrs := func(i int) []int { return []int{(i + 1) % n, (i + n - 1) % n} }
	for i, tr := range trs {
		for _, j := range nbrs(i) {
			if err := tr.Send(j, transport.Header{Kind: 1, Seq: uint64(i)}, nil); err != nil {
				t.Fatalf("%d -> %d: %v", i, j, err)
			}
		}
	}
	for i, rec := range recs {
		for _, j := range nbrs(i) {
			waitFor(t, fmt.Sprintf("the frame %d -> %d", j, i), func() bool { return rec.count(j) == 1 })
		}
	}
	for i, tr := range trs {
		// Two ranks that dial each other at once keep one connection: the
		// other is closed once the handshake settles.
		conns := func() (int, int) {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return len(tr.conns), len(tr.sendTo)
		}
		waitFor(t, fmt.Sprintf("rank %d down to 2 connections", i), func() bool { c, _ := conns(); return c <= 2 })
		if c, p := conns(); c != 2 || p > 2 {
			t.Errorf("rank %d holds %d connections and %d peer states, want 2 and at most 2 (its ring neighbours)", i, c, p)
		}
	}
}
