package rte

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// syncBuf is a diagnostics buffer safe for the transport's goroutines.
type syncBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // one token per write
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A Rank dispatches control frames to the handler registered for their
// type once started, reports a frame without a handler to its Diag, hands
// a loss to its subscribers in order with the socket-directory cleanup
// last, and after Retire takes neither frames nor losses.
func TestRankDispatchSubscribeRetire(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := newTestJob(3)
	defer j.close()
	engs, eps := j.engs, j.eps
	got := make(chan int, 4)
	cfg := j.config(0)
	cfg.Frames = Frames{Revoke: func(from int, h transport.Header, _ []byte) { got <- int(h.Ctx) }} // the API's handler, registered by NewRank
	r := NewRank(cfg)
	out := &syncBuf{wrote: make(chan struct{}, 16)}
	r.SetDiag(&Diag{Out: out})
	var order []string
	var mu sync.Mutex
	note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	r.SubscribeLost(func(peer int, _ error) { note("a") })
	r.SubscribeLost(func(peer int, _ error) { note("b") })
	r.SetPeerGone(func(peer int) { note("gone") })
	for i := 1; i < 3; i++ {
		engs[i].SetTransport(eps[i])
	}
	// A frame sent before Start waits for it.
	if err := engs[1].SendControl(0, transport.Header{Tag: int32(ctl.Revoke), Ctx: 7}, nil); err != nil {
		t.Fatal(err)
	}
	r.Start()
	select {
	case ctx := <-got:
		if ctx != 7 {
			t.Fatalf("handler got context %d, want 7", ctx)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the early frame was not dispatched after Start")
	}
	// A type nobody registered is reported, not dropped silently.
	if err := engs[1].SendControl(0, transport.Header{Tag: int32(ctl.Agree)}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.wrote:
		if !strings.Contains(out.String(), "no handler for") {
			t.Fatalf("diagnostic %q does not say the frame had no handler", out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no diagnostic for a frame without a handler")
	}
	engs[0].FailPeer(2, errors.New("killed"))
	mu.Lock()
	if strings.Join(order, " ") != "a b gone" {
		t.Fatalf("subscribers ran as %q, want \"a b gone\"", strings.Join(order, " "))
	}
	mu.Unlock()
	r.Retire()
	if !r.Retired() {
		t.Fatal("Retired after Retire is false")
	}
	engs[0].FailPeer(1, errors.New("killed"))
	mu.Lock()
	if len(order) != 3 {
		t.Fatalf("a retired Rank's subscribers heard a loss: %q", order)
	}
	mu.Unlock()
}
