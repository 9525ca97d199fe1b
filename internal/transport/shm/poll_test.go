package shm

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// stackHandler counts frames and records, per frame, whether it was
// delivered from a goroutine inside PollUntil (caller-driven progress) or
// from the receiver goroutine.
type stackHandler struct {
	mu      sync.Mutex
	n       atomic.Int64 // whole frames delivered
	inline  int          // of them, from PollUntil
	urgentI int          // urgent frames delivered from PollUntil (never allowed)
	bad     []string
	arrived chan struct{}
}

func newStackHandler() *stackHandler { return &stackHandler{arrived: make(chan struct{}, 1)} }

func (h *stackHandler) Frame(from int, hd transport.Header) ([]byte, any) {
	if hd.N == 0 {
		return nil, nil
	}
	return make([]byte, hd.N), nil
}

func (h *stackHandler) Payload(from int, hd transport.Header, dst []byte, _ any, err error) {
	var buf [8 << 10]byte
	inPoll := strings.Contains(string(buf[:runtime.Stack(buf[:], false)]), ").PollUntil(")
	h.mu.Lock()
	if err != nil {
		h.bad = append(h.bad, err.Error())
	} else if len(dst) >= 8 {
		want := make([]byte, len(dst))
		fill(want, hd.Seq)
		if !bytes.Equal(dst, want) {
			h.bad = append(h.bad, fmt.Sprintf("frame %d: %d bytes altered", hd.Seq, len(dst)))
		}
	}
	if inPoll {
		h.inline++
		if hd.Flags&transport.FlagUrgent != 0 {
			h.urgentI++
		}
	}
	h.mu.Unlock()
	h.n.Add(1)
	select {
	case h.arrived <- struct{}{}:
	default:
	}
}

func (h *stackHandler) PeerLost(int, error) {}

// receiverIdle reports whether t's receiver goroutine sleeps on the
// doorbell or is parked while callers poll.
func (t *Transport) receiverIdle() bool { return t.bellSleep.Load() != 0 || t.rxParked.Load() != 0 }

type doneFn func() bool

func (f doneFn) Done() bool { return f() }

// newPollJob is newJob with handlers of the caller's choice and the
// receivers' futex sleeps lasting sleep (long: a lost wake-up hangs).
func newPollJob(t *testing.T, n int, sleep time.Duration, hs ...transport.Handler) []*Transport {
	t.Helper()
	dir := t.TempDir()
	trs := make([]*Transport, n)
	for i := range trs {
		tr, err := Listen(Config{Self: i, Dir: dir, Name: sockName(i), Handler: hs[i], sleepMax: sleep, Auth: testKey,
			SpinFn: func() time.Duration { return 10 * time.Microsecond }})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
	}
	for _, tr := range trs {
		tr.SetPeers(addrs(dir, n))
	}
	return trs
}

// A goroutine waiting in PollUntil receives the frames itself, whole or
// in chunks, intact: the receiver goroutine, asleep, is not woken and
// hands nothing over.
func TestPollUntilDeliversInline(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, sleepMax, h0, h1)
	defer closeAll(trs)
	payload, big := make([]byte, 100), make([]byte, 100<<10)
	fill(payload, 0)
	if err := trs[0].Send(1, transport.Header{Kind: 1}, payload); err != nil { // sets the pair up
		t.Fatal(err)
	}
	waitFor(t, "the first frame", func() bool { return h1.n.Load() == 1 })
	const frames = 20
	for i := 2; i <= frames+1; i++ {
		sent := make(chan error, 1)
		go func() {
			// Send once the receiver sleeps and the caller polls.
			deadline := time.Now().Add(10 * time.Second)
			for !trs[1].receiverIdle() || trs[1].bellPoll.Load() == 0 {
				if time.Now().After(deadline) {
					sent <- nil
					return
				}
				runtime.Gosched()
			}
			// Small frames whole, every third one of 100 KiB in chunks.
			b := payload
			if i%3 == 0 {
				b = big
			}
			fill(b, uint64(i))
			sent <- trs[0].Send(1, transport.Header{Kind: 1, Seq: uint64(i)}, b)
		}()
		want := int64(i)
		if !trs[1].PollUntil(doneFn(func() bool { return h1.n.Load() >= want }), 10*time.Second) {
			t.Fatalf("frame %d not delivered within the poll budget", i)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	h1.mu.Lock()
	defer h1.mu.Unlock()
	if len(h1.bad) > 0 {
		t.Fatal(h1.bad)
	}
	// The receiver's 100 ms futex timeout may let it take a frame now and
	// then; most must come through the caller.
	if h1.inline < frames/2 {
		t.Fatalf("%d of %d frames delivered by the polling caller, want most", h1.inline, frames)
	}
}

// Urgent frames (control traffic, whose handlers may take locks a waiting
// caller holds) are never delivered from PollUntil: the caller hands them
// to the receiver goroutine, which delivers them at once, not at its
// futex timeout (an hour here).
func TestPollUntilLeavesUrgentFramesToTheReceiver(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, time.Hour, h0, h1)
	defer closeAll(trs)
	if err := trs[0].Send(1, transport.Header{Kind: 1}, make([]byte, 8)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first frame", func() bool { return h1.n.Load() == 1 })
	const frames = 10
	for i := 0; i < frames; i++ {
		sent := make(chan error, 1)
		go func() {
			deadline := time.Now().Add(10 * time.Second)
			for !trs[1].receiverIdle() || trs[1].bellPoll.Load() == 0 {
				if time.Now().After(deadline) {
					break
				}
				runtime.Gosched()
			}
			// An urgent frame, then a bulk one behind it: the bulk frame
			// must not overtake it, so it is handed over too.
			if err := trs[0].Send(1, transport.Header{Kind: 2, Flags: transport.FlagUrgent}, make([]byte, 16)); err != nil {
				sent <- err
				return
			}
			sent <- trs[0].Send(1, transport.Header{Kind: 1}, make([]byte, 16))
		}()
		want := int64(3 + 2*i)
		t0 := time.Now()
		if !trs[1].PollUntil(doneFn(func() bool { return h1.n.Load() >= want }), 20*time.Second) {
			t.Fatalf("round %d: frames not delivered within 20 s", i)
		}
		if d := time.Since(t0); d > 5*time.Second {
			t.Fatalf("round %d: the receiver took %v to deliver the frames handed over", i, d)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	h1.mu.Lock()
	defer h1.mu.Unlock()
	if h1.urgentI != 0 {
		t.Fatalf("%d urgent frames delivered from PollUntil", h1.urgentI)
	}
}

// pingHandler counts frames and signals each.
type pingHandler struct {
	n  atomic.Int64
	ch chan struct{}
}

func (h *pingHandler) Frame(int, transport.Header) ([]byte, any) { return nil, nil }
func (h *pingHandler) Payload(int, transport.Header, []byte, any, error) {
	h.n.Add(1)
	select {
	case h.ch <- struct{}{}:
	default:
	}
}
func (h *pingHandler) PeerLost(int, error) {}

// No lost wake-up between callers that poll (with budgets from nothing to
// a few microseconds, so they stop polling at every moment of the
// exchange) and the receiver goroutine, which sleeps for an hour unless
// woken: every message of a ping-pong arrives within seconds.
func TestPollUntilNoLostWakeUp(t *testing.T) {
	hs := []*pingHandler{{ch: make(chan struct{}, 1)}, {ch: make(chan struct{}, 1)}}
	trs := newPollJob(t, 2, time.Hour, hs[0], hs[1])
	defer closeAll(trs)
	rounds := 3000
	if testing.Short() {
		rounds = 500
	}
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for side := 0; side < 2; side++ {
		wg.Add(1)
		go func(me int) {
			defer wg.Done()
			other := 1 - me
			recv := func(k int64) bool {
				budget := time.Duration(k%4) * time.Microsecond // 0 to 3 µs
				if trs[me].PollUntil(doneFn(func() bool { return hs[me].n.Load() >= k }), budget) {
					return true
				}
				deadline := time.After(10 * time.Second)
				for hs[me].n.Load() < k {
					select {
					case <-hs[me].ch:
					case <-deadline:
						return false
					}
				}
				return true
			}
			for i := int64(1); i <= int64(rounds); i++ {
				if me == 1 && !recv(i) {
					errc <- errLost(me, i)
					return
				}
				h := transport.Header{Kind: 1}
				if i%16 == 0 {
					h.Flags = transport.FlagUrgent
				}
				if err := trs[me].Send(other, h, nil); err != nil {
					errc <- err
					return
				}
				if me == 0 && !recv(i) {
					errc <- errLost(me, i)
					return
				}
			}
		}(side)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func errLost(rank int, msg int64) error {
	return fmt.Errorf("rank %d: message %d not delivered within 10 s (a lost wake-up)", rank, msg)
}

// A sender killed (SIGKILL, a real process) after writing a frame but
// before publishing it, while this rank's caller polls the rings in
// PollUntil: the caller delivers nothing of the frame and hands the end
// of the peer to the receiver, which reports it lost while the caller
// still polls (not at the end of its budget).
func TestCrashSenderKilledWhileCallerPolls(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	tr := parent(t, dir, 2, rec)
	defer tr.Close()
	c := startChild(t, "cut-before-publish", dir)
	c.expect(t, "written")
	var lost atomic.Bool
	go func() {
		for e := range rec.event {
			if e == "lost 1" {
				lost.Store(true)
				return
			}
		}
	}()
	polled := make(chan bool, 1)
	go func() { polled <- tr.PollUntil(doneFn(lost.Load), time.Minute) }()
	deadline := time.Now().Add(30 * time.Second)
	for tr.bellPoll.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the caller never started polling")
		}
		runtime.Gosched()
	}
	t0 := time.Now()
	c.kill(t, syscall.SIGKILL)
	select {
	case ok := <-polled:
		if !ok {
			t.Fatal("PollUntil returned without the loss")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the loss was not reported within 30 s of the kill")
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("the loss took %v to reach the polling caller", d)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.frames != 0 {
		t.Fatalf("%d frames announced from a frame never published", rec.frames)
	}
}
