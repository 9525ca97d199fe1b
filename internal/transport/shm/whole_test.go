package shm

import (
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// wholeRecorder is a recorder that also takes whole frames
// (transport.WholeHandler) and counts them.
type wholeRecorder struct {
	*recorder
	wholes atomic.Int32
}

func (w *wholeRecorder) Whole(from int, h transport.Header, payload []byte) {
	w.wholes.Add(1)
	if h.Flags&transport.FlagsReserved != 0 || uint64(len(payload)) != h.N {
		w.mu.Lock()
		w.bad = append(w.bad, "a whole frame with reserved flags or a payload of another length")
		w.mu.Unlock()
	}
	w.Payload(from, h, append([]byte(nil), payload...), nil, nil)
}

// A handler that takes whole frames gets each frame that travels whole
// in a ring record through Whole, with its payload intact and in order;
// chunked frames and payloads read from the sender's memory still come
// through Frame and Payload.
func TestWholeFramesGoToWhole(t *testing.T) {
	dir := t.TempDir()
	rx := &wholeRecorder{recorder: newRecorder()}
	trs := newJob(t, dir, 2, newRecorder(), rx)
	defer closeAll(trs)
	// 64 KiB, the engine's default eager limit and a quarter of the bulk
	// ring, travels whole; one byte more than a record holds is chunked.
	largestWhole := bulkSize/4 + lineSize - transport.HeaderSize
	small := []int{0, 8, 100, 4096, 64 << 10, largestWhole}
	large := []int{largestWhole + 1, 1 << 20, 3<<20 + 13}
	seq := uint64(0)
	for _, sizes := range [][]int{small, large} {
		for _, n := range sizes {
			seq++
			b := make([]byte, n)
			fill(b, seq)
			if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: seq}, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "every frame", func() bool { return rx.count(0) == int(seq) })
	rx.check(t)
	for i, s := range rx.got[0] {
		if s != uint64(i+1) {
			t.Fatalf("frame %d arrived as number %d", s, i+1)
		}
	}
	rx.mu.Lock()
	frames := rx.frames
	rx.mu.Unlock()
	if w := int(rx.wholes.Load()); w != len(small) || frames != len(large) {
		t.Fatalf("%d frames through Whole and %d through Frame, want %d and %d", w, frames, len(small), len(large))
	}
}
