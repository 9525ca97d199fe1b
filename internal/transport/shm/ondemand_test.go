package shm

import (
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// A rank that talks to its two ring neighbours out of 64 sets up two
// pairs (rings and their memory), not 63 (issue 24): pairs are made on
// first use, one per pair of ranks whichever side starts it.
func TestPairsOnFirstUseRingOf64(t *testing.T) {
	const n = 64
	recs := make([]*recorder, n)
	hs := make([]transport.Handler, n)
	for i := range recs {
		recs[i] = newRecorder()
		hs[i] = recs[i]
	}
	trs := newJob(t, t.TempDir(), n, hs...)
	defer closeAll(trs)
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
			waitFor(t, fmt.Sprintf("the frame %d -> %d", j, i), func() bool { return rec.count(j) >= 1 })
		}
	}
	for i, tr := range trs {
		tr.mu.Lock()
		np := len(tr.pairs)
		tr.mu.Unlock()
		if np != 2 {
			t.Errorf("rank %d holds %d pairs, want 2 (its ring neighbours)", i, np)
		}
	}
}
