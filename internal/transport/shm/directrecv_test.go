package shm

import (
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// lostFlag is a recorder that also says, without a channel read, that a
// peer was reported lost.
type lostFlag struct {
	*recorder
	lost atomic.Bool
}

func (l *lostFlag) PeerLost(peer int, err error) {
	l.lost.Store(true)
	l.recorder.PeerLost(peer, err)
}

// takeWaiter is a direct receive (transport.DirectWaiter) of peer's frames
// of one kind: it takes the first, and is done then or once the peer is
// reported lost. Only the polling goroutine touches it.
type takeWaiter struct {
	polling atomic.Bool // its wait began (Done was asked)
	peer    int
	kind    uint8
	lost    *atomic.Bool
	took    bool
	seq     uint64
	data    []byte
	offs    int // frames it was offered
	// handled, if set, counts the frames the handler got; handledAt is
	// its count when the waiter took its frame.
	handled   func() int
	handledAt int
}

func (w *takeWaiter) Done() bool {
	w.polling.Store(true)
	if w.handled != nil && w.handled() == 4 {
		return true // TestPollDirectOffersFramesInOrder: all through the handler
	}
	return w.took || w.lost.Load()
}

func (w *takeWaiter) DirectPeer() int {
	if w.took {
		return -1
	}
	return w.peer
}

func (w *takeWaiter) TakeWhole(h *transport.Header, payload []byte) bool {
	w.offs++
	if w.took || h.Kind != w.kind {
		return false
	}
	w.took, w.seq, w.data = true, h.Seq, append([]byte(nil), payload...)
	if w.handled != nil {
		w.handledAt = w.handled()
	}
	return true
}

// A sender killed at every step of its fast send while this process
// waits direct (PollDirect) for that frame: the waiter takes the frame
// whole once it is published (or the receiver goroutine delivers it, if it
// polled first), never a part of it, and the wait ends on the peer's loss
// otherwise; the frame before it comes through the handler, the loss is
// reported once, nothing hangs.
func TestCrashSenderKilledWhileWaitingDirect(t *testing.T) {
	for _, step := range fastSteps {
		t.Run("step="+step, func(t *testing.T) {
			dir := t.TempDir()
			lf := &lostFlag{recorder: newRecorder()}
			tr := parent(t, dir, 2, lf)
			defer tr.Close()
			c := startChild(t, "fast-sender-b"+step, dir)
			waitFor(t, "the first frame", func() bool { return lf.count(1) >= 1 })
			c.expect(t, "step")
			w := &takeWaiter{peer: 1, kind: 7, lost: &lf.lost}
			polled := make(chan bool, 1)
			go func() { polled <- tr.PollDirect(w, time.Minute) }()
			waitFor(t, "the direct wait to poll", w.polling.Load)
			c.kill(t, syscall.SIGKILL)
			var done bool
			select {
			case done = <-polled:
			case <-time.After(60 * time.Second):
				t.Fatal("the direct wait did not end")
			}
			if !done {
				t.Fatal("PollDirect returned before its waiter was done")
			}
			ev := untilLost(t, lf.recorder)
			published := step == "3" || step == "4"
			viaHandler := strings.Contains(strings.Join(ev, ","), "frame 7")
			if w.took == viaHandler && published || !published && (w.took || viaHandler) {
				t.Fatalf("step %s: taken direct %v, through the handler %v (events %v)", step, w.took, viaHandler, ev)
			}
			if w.took {
				want := make([]byte, 100)
				fill(want, 7)
				if w.seq != 7 || string(w.data) != string(want) {
					t.Fatalf("took frame %d with %d bytes, want frame 7 whole", w.seq, len(w.data))
				}
			}
			lf.check(t)
		})
	}
}

// A direct waiter is offered its peer's frames in order and only whole
// ones: the frames it does not take reach the handler in order, before
// and after the one it takes. (The receiver goroutine may poll first and
// deliver every frame to the handler; then the order is checked there.)
func TestPollDirectOffersFramesInOrder(t *testing.T) {
	dir := t.TempDir()
	lf := &lostFlag{recorder: newRecorder()}
	trs := newJob(t, dir, 2, lf, newRecorder())
	defer closeAll(trs)
	t1 := trs[1]
	b := make([]byte, 40)
	fill(b, 1)
	if err := t1.Send(0, transport.Header{Kind: 5, Seq: 1}, b); err != nil { // sets the pair up
		t.Fatal(err)
	}
	waitFor(t, "the first frame", func() bool { return lf.count(1) == 1 })
	w := &takeWaiter{peer: 1, kind: 7, lost: &lf.lost, handled: func() int { return lf.count(1) }}
	polled := make(chan bool, 1)
	go func() { polled <- trs[0].PollDirect(w, time.Minute) }()
	waitFor(t, "the direct wait to poll", w.polling.Load)
	for seq := uint64(2); seq <= 4; seq++ {
		fill(b, seq)
		kind := uint8(5)
		if seq == 3 {
			kind = 7
		}
		if err := t1.Send(0, transport.Header{Kind: kind, Seq: seq}, b); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-polled:
	case <-time.After(60 * time.Second):
		t.Fatal("the direct wait did not end")
	}
	want := []uint64{1, 2, 3, 4}
	t.Logf("taken direct: %v", w.took)
	if w.took {
		want = []uint64{1, 2, 4}
		if w.seq != 3 || w.handledAt != 2 {
			t.Fatalf("took frame %d after %d frames reached the handler, want frame 3 after 2", w.seq, w.handledAt)
		}
	}
	waitFor(t, "the frames around it", func() bool { return lf.count(1) == len(want) })
	lf.mu.Lock()
	got := append([]uint64(nil), lf.got[1]...)
	lf.mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the handler got frames %v, want %v (taken direct: %v)", got, want, w.took)
	}
	lf.check(t)
}
