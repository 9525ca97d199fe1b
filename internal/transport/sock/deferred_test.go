package sock

import (
	"bytes"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// deferDone is a transport.Deferrable Done (a rendezvous payload's).
type deferDone chan error

func (d deferDone) SendDone(err error) { d <- err }
func (d deferDone) Deferrable()        {}

// holdBig makes rank 0 of a pair busy writing a 16 MiB frame (kind 1) that
// rank 1's reader holds in its Frame: far above what the sockets' buffers
// hold, so rank 0's writer is blocked inside the payload until rx.hold is
// closed. It returns the frame's outcome.
func holdBig(t *testing.T, trs []*Transport, rx *laneHandler, deferrable bool) (payload []byte, done <-chan error) {
	t.Helper()
	payload = make([]byte, 16<<20)
	for i := range payload {
		payload[i] = byte(i*13 + 1)
	}
	if deferrable {
		d := make(deferDone, 1)
		trs[0].Post(1, transport.Header{Kind: 1}, payload, d)
		done = d
	} else {
		d := make(doneCh, 1)
		trs[0].Post(1, transport.Header{Kind: 1}, payload, d)
		done = d
	}
	within(t, "the big frame's header", rx.bigSeen)
	return payload, done
}

// heldPair is a connected pair whose receiver rx holds the frames it gets
// until release; when the test ends, rx is released if it was not and both
// ends are closed.
func heldPair(t *testing.T) (trs []*Transport, rx *laneHandler, release func()) {
	rx = newLaneHandler(true)
	trs = pairOf(t, newLaneHandler(false), rx)
	released := false
	release = func() {
		if !released {
			released = true
			close(rx.hold)
		}
	}
	t.Cleanup(func() {
		release()
		trs[0].Close()
		trs[1].Close()
	})
	return trs, rx, release
}

// wantOrder checks that rx completes frames of the given kinds in that
// order (each within a deadline).
func wantOrder(t *testing.T, rx *laneHandler, kinds ...uint8) {
	t.Helper()
	for _, want := range kinds {
		select {
		case k := <-rx.got:
			if k != want {
				t.Fatalf("frame of kind %d completed, want %d (order %v)", k, want, kinds)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("frame of kind %d not delivered", want)
		}
	}
}

// A Send without payload (a request to send) returns while the peer's
// connection is busy with a payload the peer does not read yet: it is
// queued, not waited for. Before, it waited for the whole payload ahead of
// it, so each request of a window of rendezvous sends went out only after
// the previous message's data (the 1 MiB bandwidth gap between hosts).
func TestSendWithoutPayloadDoesNotWaitForQueuedPayload(t *testing.T) {
	trs, rx, release := heldPair(t)
	payload, bigDone := holdBig(t, trs, rx, true)
	sent := make(chan error, 1)
	go func() { sent <- trs[0].Send(1, transport.Header{Kind: 2}, nil) }()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a Send without payload waited for the payload queued before it")
	}
	release()
	wantOrder(t, rx, 1, 2)
	if err := <-bigDone; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rx.bigBuf, payload) {
		t.Fatal("the big payload arrived altered")
	}
}

// Frames Posted with a Deferrable Done go after the bulk frames sent or
// posted to the same peer after them, and keep their own order; the bulk
// frames keep theirs: with the connection busy, a deferrable payload (3),
// then a Send (2, with a payload: it waits) and a Post (4) are queued; they
// arrive 2, 4, 3, and a second deferrable frame (5) after 3.
func TestDeferrableFramesGoAfterLaterBulkFrames(t *testing.T) {
	trs, rx, release := heldPair(t)
	_, bigDone := holdBig(t, trs, rx, false)
	d3, d5 := make(deferDone, 1), make(deferDone, 1)
	trs[0].Post(1, transport.Header{Kind: 3}, []byte("payload three"), d3)
	trs[0].Post(1, transport.Header{Kind: 5}, []byte("payload five"), d5)
	sent := make(chan error, 1)
	go func() { sent <- trs[0].Send(1, transport.Header{Kind: 2}, []byte("sent")) }()
	// The Send is queued once its goroutine holds the peer's lock after
	// the posts: wait for it in the queue (the event), then post 4.
	waitFor(t, "the Send to be queued", func() bool {
		ps, err := trs[0].peer(1)
		if err != nil {
			return false
		}
		ps.mu.Lock()
		defer ps.mu.Unlock()
		return ps.bulk.len() == 1
	})
	d4 := make(doneCh, 1)
	trs[0].Post(1, transport.Header{Kind: 4}, []byte("posted"), d4)
	release()
	wantOrder(t, rx, 1, 2, 4, 3, 5)
	for _, c := range []<-chan error{bigDone, sent, d4, d3, d5} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
}
