package sock

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// heldLog records, in order, what a writer did with heldDone frames:
// "held N" when it completed frame N without its wake-up (SendDoneHeld),
// "wake N" when it made that wake-up, "done N" for a plain SendDone.
type heldLog struct {
	mu     sync.Mutex
	events []string
	woken  map[int]chan struct{}
}

func newHeldLog(n int) *heldLog {
	l := &heldLog{woken: map[int]chan struct{}{}}
	for i := 1; i <= n; i++ {
		l.woken[i] = make(chan struct{})
	}
	return l
}

func (l *heldLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *heldLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// heldDone is a rendezvous payload's Done (Deferrable) whose wake-up may
// be held (transport.Held).
type heldDone struct {
	l *heldLog
	n int
}

func (d heldDone) Deferrable() {}
func (d heldDone) SendDone(err error) {
	d.l.add(fmt.Sprintf("done %d", d.n))
	close(d.l.woken[d.n])
}
func (d heldDone) SendDoneHeld(err error) func() {
	d.l.add(fmt.Sprintf("held %d", d.n))
	return func() {
		d.l.add(fmt.Sprintf("wake %d", d.n))
		close(d.l.woken[d.n])
	}
}

// busyPeer returns rank 0's sending state to rank 1 of a TCP pair whose
// connection is up, with its write side taken (busy), so that frames
// posted now queue up; release lets the writer goroutine write them.
func busyPeer(t *testing.T, trs []*Transport, rx *laneHandler) (release func()) {
	t.Helper()
	if err := trs[0].Send(1, transport.Header{Kind: 3}, []byte("up")); err != nil {
		t.Fatal(err)
	}
	wantOrder(t, rx, 3)
	ps, err := trs[0].peer(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ps.cc.c.(*fdConn); !ok {
		t.Fatal("the TCP connection is not an fdConn")
	}
	ps.mu.Lock()
	for ps.busy {
		ps.mu.Unlock()
		time.Sleep(time.Millisecond)
		ps.mu.Lock()
	}
	ps.busy = true
	ps.mu.Unlock()
	return func() { trs[0].release(ps, nil) }
}

// A TCP writer that writes rendezvous payloads queued back to back holds
// their waiters' wake-ups while more are queued, and makes them all once
// the queue is empty (one wake-up of the waiting caller per run of
// payloads, not one per payload while the next one is written).
func TestWriterHoldsWakeUpsWhileMoreIsQueued(t *testing.T) {
	rx := newLaneHandler(false)
	trs := pairTCP(t, newLaneHandler(false), rx)
	t.Cleanup(func() { trs[0].Close(); trs[1].Close() })
	release := busyPeer(t, trs, rx)
	l := newHeldLog(3)
	for i := 1; i <= 3; i++ {
		trs[0].Post(1, transport.Header{Kind: 2}, make([]byte, 64<<10), heldDone{l, i})
	}
	release()
	for i := 1; i <= 3; i++ {
		within(t, fmt.Sprintf("the wake-up of frame %d", i), l.woken[i])
	}
	wantOrder(t, rx, 2, 2, 2)
	got := l.list()
	want := []string{"held 1", "held 2", "held 3", "wake 1", "wake 2", "wake 3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("writer's completions %v, want %v", got, want)
	}
}

// A held wake-up is made before the writer waits for room in the send
// buffer: a payload queued behind it that the peer does not read (its
// reader is stopped inside that frame) does not keep the first payload's
// waiter asleep.
func TestWriterWakesHeldBeforeAFullSendBuffer(t *testing.T) {
	rx := newLaneHandler(true) // stops in the Frame of kind 1 until rx.hold closes
	trs := pairTCP(t, newLaneHandler(false), rx)
	t.Cleanup(func() {
		select {
		case <-rx.hold:
		default:
			close(rx.hold)
		}
		trs[0].Close()
		trs[1].Close()
	})
	release := busyPeer(t, trs, rx)
	l := newHeldLog(1)
	trs[0].Post(1, transport.Header{Kind: 2}, make([]byte, 64<<10), heldDone{l, 1})
	big := make(deferDone, 1)
	trs[0].Post(1, transport.Header{Kind: 1}, make([]byte, 16<<20), big)
	release()
	within(t, "the big frame's header at the peer", rx.bigSeen)
	within(t, "the wake-up of the frame written before the blocked one", l.woken[1])
	select {
	case err := <-big:
		t.Fatalf("the 16 MiB frame completed (%v) while the peer read none of it", err)
	default:
	}
	if got := l.list(); fmt.Sprint(got) != "[held 1 wake 1]" {
		t.Fatalf("writer's completions %v, want [held 1 wake 1]", got)
	}
	close(rx.hold)
	select {
	case err := <-big:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the 16 MiB frame did not complete")
	}
}

// heldRx is a receiving handler that implements transport.HeldPayload:
// it counts which entry point completed each frame and sends the frame's
// size on done when its wake-up is made (or Payload completed it).
type heldRx struct {
	mu      sync.Mutex
	held    int
	payload int
	done    chan int // frame sizes, as their wake-ups are made
}

func (h *heldRx) Frame(from int, hd transport.Header) ([]byte, any) {
	return make([]byte, hd.N), nil
}

func (h *heldRx) Payload(from int, hd transport.Header, dst []byte, _ any, err error) {
	h.mu.Lock()
	h.payload++
	h.mu.Unlock()
	h.done <- len(dst)
}

func (h *heldRx) PayloadHeld(from int, hd transport.Header, dst []byte, _ any, err error) func() {
	h.mu.Lock()
	h.held++
	h.mu.Unlock()
	return func() { h.done <- len(dst) }
}

func (h *heldRx) PeerLost(int, error) {}

// A TCP reader completes whole payloads through PayloadHeld and makes
// every wake-up it held (the last one with nothing more coming); chunked
// payloads (above chunkSize) go through Payload.
func TestReaderHoldsWakeUpsOfWholePayloads(t *testing.T) {
	rx := &heldRx{done: make(chan int, 16)}
	trs := pairTCP(t, newLaneHandler(false), rx)
	t.Cleanup(func() { trs[0].Close(); trs[1].Close() })
	sizes := []int{512 << 10, 512 << 10, 1 << 20, 2 << 20}
	for _, n := range sizes {
		trs[0].Post(1, transport.Header{Kind: 2}, make([]byte, n), make(deferDone, 1))
	}
	// (in any order: the whole payloads' wake-ups may be held while the
	// chunked one comes in, which Payload completes at once)
	left := map[int]int{}
	for _, n := range sizes {
		left[n]++
	}
	for i := range sizes {
		select {
		case n := <-rx.done:
			if left[n] == 0 {
				t.Fatalf("an unexpected completion of %d bytes (left: %v)", n, left)
			}
			left[n]--
		case <-time.After(20 * time.Second):
			t.Fatalf("completion %d never came (left: %v)", i, left)
		}
	}
	rx.mu.Lock()
	defer rx.mu.Unlock()
	if rx.held != 3 || rx.payload != 1 {
		t.Fatalf("%d frames completed through PayloadHeld and %d through Payload, want 3 and 1 (the chunked one)", rx.held, rx.payload)
	}
}
