package sock

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// laneHandler records the order in which frames complete and can hold its
// reader inside the Frame of the big frame (kind 1) until released.
type laneHandler struct {
	mu      sync.Mutex
	order   []uint8 // kinds, in Payload order
	errs    []error
	bigSeen chan struct{} // closed at the Frame of the big frame
	hold    chan struct{} // the big frame's Frame waits for it (nil: no wait)
	got     chan uint8    // kinds of completed frames
	bigBuf  []byte
	once    sync.Once
}

func newLaneHandler(hold bool) *laneHandler {
	h := &laneHandler{bigSeen: make(chan struct{}), got: make(chan uint8, 64)}
	if hold {
		h.hold = make(chan struct{})
	}
	return h
}

func (l *laneHandler) Frame(from int, h transport.Header) ([]byte, any) {
	if h.Kind == 1 {
		l.once.Do(func() { close(l.bigSeen) })
		if l.hold != nil {
			<-l.hold // a stopped reader (test only: handlers must not block)
		}
		l.bigBuf = make([]byte, h.N)
		return l.bigBuf, nil
	}
	if h.N == 0 {
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func (l *laneHandler) Payload(from int, h transport.Header, dst []byte, _ any, err error) {
	l.mu.Lock()
	if h.Flags&transport.FlagsReserved != 0 {
		err = fmt.Errorf("the handler saw reserved flag bits %#x", h.Flags)
	}
	l.order = append(l.order, h.Kind)
	l.errs = append(l.errs, err)
	l.mu.Unlock()
	l.got <- h.Kind
}

func (l *laneHandler) PeerLost(int, error) {}

type doneCh chan error

func (d doneCh) SendDone(err error) { d <- err }

func pairOf(t *testing.T, hs ...transport.Handler) []*Transport {
	t.Helper()
	dir := t.TempDir()
	trs := make([]*Transport, len(hs))
	peers := make([]Peer, len(hs))
	for i, h := range hs {
		tr, err := Listen(Config{Self: i, Host: "h", Mode: ModeUnix, Dir: dir, Handler: h})
		if err != nil {
			t.Fatal(err)
		}
		trs[i], peers[i] = tr, tr.Self()
	}
	for _, tr := range trs {
		tr.SetPeers(peers)
	}
	return trs
}

func within(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// An urgent frame posted while a 16 MiB frame (16 chunks) to the same peer
// is being written arrives before that frame completes, and the big payload
// arrives intact. 16 MiB is far above what the sockets' buffers hold (208 KiB
// by default, 4 MiB at most), so the sender is blocked in the payload's first chunks when the
// urgent frame is posted; a bigger frame only costs time (256 MiB took 9.7 s
// under -race at load 21 and 36 s with ten copies on one core, against the
// 30 s bound on each frame's delivery).
func TestUrgentFrameOvertakesBulkTransfer(t *testing.T) {
	const big = 16 << 20
	rx := newLaneHandler(true)
	trs := pairOf(t, newLaneHandler(false), rx)
	defer trs[1].Close()
	defer trs[0].Close()
	payload := make([]byte, big)
	for i := range 4093 { // a period that does not divide the chunk size
		payload[i] = byte(i * 7)
	}
	for n := 4093; n < big; n *= 2 {
		copy(payload[n:], payload[:n])
	}
	sent := make(chan error, 1)
	go func() { sent <- trs[0].Send(1, transport.Header{Kind: 1}, payload) }()
	// The receiver saw the big frame's header and holds its reader there:
	// the sender is now blocked inside the payload (at most the socket
	// buffers, a few chunks, are written).
	within(t, "the big frame's header", rx.bigSeen)
	posted := make(doneCh, 1)
	trs[0].Post(1, transport.Header{Kind: 16, Flags: transport.FlagUrgent, Tag: 5}, []byte("heartbeat"), posted)
	close(rx.hold)
	for _, want := range []uint8{16, 1} {
		select {
		case k := <-rx.got:
			if k != want {
				t.Fatalf("frame of kind %d completed first, want the urgent frame (16) before the bulk one (1)", k)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("frame of kind %d not delivered", want)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rx.bigBuf, payload) {
		t.Fatal("the big payload arrived altered")
	}
	for i, err := range rx.errs {
		if err != nil {
			t.Fatalf("frame %d completed with %v", i, err)
		}
	}
}

// A peer that stops reading stalls only its own queue: frames to another
// peer, and posts to the stopped one, go on.
func TestStoppedPeerDoesNotBlockOthers(t *testing.T) {
	stopped, other := newLaneHandler(true), newLaneHandler(false)
	trs := pairOf(t, newLaneHandler(false), stopped, other)
	defer func() {
		close(stopped.hold)
		for _, tr := range trs {
			tr.Close()
		}
	}()
	// 64 MiB to the stopped peer: its reader holds in the frame's header,
	// the sockets' buffers fill and the write blocks.
	bulk := make([]byte, 64<<20)
	bulkDone := make(doneCh, 1)
	trs[0].Post(1, transport.Header{Kind: 1}, bulk, bulkDone)
	within(t, "the stopped peer to see the bulk frame", stopped.bigSeen)
	// Posting to the stopped peer returns at once (it only queues).
	postDone := make(chan struct{})
	go func() {
		trs[0].Post(1, transport.Header{Kind: 16, Flags: transport.FlagUrgent}, nil, nil)
		close(postDone)
	}()
	within(t, "a post to the stopped peer to return", postDone)
	// Frames to the other peer, blocking and posted, bulk and urgent.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := 0; i < 10; i++ {
			if err := trs[0].Send(2, transport.Header{Kind: 2}, make([]byte, 2<<20)); err != nil {
				t.Error(err)
				return
			}
		}
		trs[0].Post(2, transport.Header{Kind: 16, Flags: transport.FlagUrgent}, nil, nil)
	}()
	within(t, "sends to the other peer", sent)
	for i := 0; i < 11; i++ {
		select {
		case <-other.got:
		case <-time.After(20 * time.Second):
			t.Fatalf("only %d of 11 frames reached the other peer", i)
		}
	}
	select {
	case err := <-bulkDone:
		t.Fatalf("the bulk frame to the stopped peer completed (%v) while it does not read", err)
	default:
	}
}

// A frame posted after Close has begun but before it ends (a heartbeat
// from another goroutine during Finalize) is written, and Close returns:
// the writer that had found its queue empty and waits for Close to take
// its write side is woken by the new frame. Before the fix the frame
// stayed queued and Close waited for it forever (a rank hung in Finalize
// under load, the soak's TestOversubscribedJobHasNoSuspicion).
func TestFramePostedWhileClosingIsWritten(t *testing.T) {
	trs, recs := newJob(t, 2, ModeUnix)
	defer trs[1].Close()
	frame := func(seq uint64) (transport.Header, []byte) {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, seq)
		return transport.Header{Kind: 1, Seq: seq}, b
	}
	post := func(seq uint64) {
		h, b := frame(seq)
		done := make(doneCh, 1)
		trs[0].Post(1, h, b, done)
	}
	post(1) // starts rank 0's writer goroutine for rank 1
	waitFor(t, "the first frame", func() bool { return recs[1].count(0) == 1 })

	// Close begins: the writer, its queue empty, waits for Close to take
	// the write side (the event: its goroutine parked in that wait).
	trs[0].cancel()
	waitFor(t, "the writer to wait for Close", func() bool {
		buf := make([]byte, 1<<20)
		for _, g := range bytes.Split(buf[:runtime.Stack(buf, true)], []byte("\n\n")) {
			if bytes.Contains(g, []byte("sock.(*Transport).writeLoop")) && bytes.Contains(g, []byte("sync.(*Cond).Wait")) {
				return true
			}
		}
		return false
	})
	post(2)
	waitFor(t, "the frame posted while closing", func() bool { return recs[1].count(0) == 2 })
	closed := make(chan struct{})
	go func() { trs[0].Close(); close(closed) }()
	within(t, "Close", closed)
}
