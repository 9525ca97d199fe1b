package sock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// The TCP path off the runtime's poller (fdconn.go) with its peer
// SIGKILLed at each step: idle with readability armed, while a caller
// polls, inside a frame coming in (read by the reader goroutine or by a
// polling caller, whole or chunked), inside a frame going out (the send
// buffer full), and in the middle of a polled ping-pong. The peer is a
// child process (this test binary re-executed: floodChildEnv=killMode,
// taken by init before TestMain) that is rank 0; the test process is
// rank 1. Every step must end with the peer reported lost once, the
// interrupted frame ended with an error (where it cannot have been
// complete), and no wait left hanging.

const (
	killMode  = "kill"
	killBig   = 64 << 20 // a chunked frame: more than both socket buffers hold
	killWhole = 1 << 20  // a whole frame (chunkSize)
	// frame kinds between the test and the child
	kPing    = 1 // answered with Seq+1
	kSendMe  = 2 // answered with a frame of A bytes, kind kSendMe
	kStalled = 3 // the child announces it ("receiving") and stops reading
)

func init() {
	if os.Getenv(floodChildEnv) == killMode {
		os.Exit(killChild())
	}
}

// killChild is the child's main: rank 0 over TCP on loopback, printing
// "listening ADDR NONCE", reading "peer ADDR NONCE", serving the kinds
// above until it is killed or its standard input closes.
func killChild() int {
	k, err := wireauth.FromBytes(bytes.Repeat([]byte{floodKeyByte}, wireauth.KeySize))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	h := &killChildHandler{}
	tr, err := Listen(Config{Self: 0, Host: "h", Mode: ModeTCP, Handler: h, Auth: k,
		Log: func(m string) { fmt.Fprintln(os.Stderr, "log:", m) }, ConnectTimeout: 20 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: listen:", err)
		return 1
	}
	defer tr.Close()
	h.tr = tr
	self := tr.Self()
	fmt.Printf("listening %s %s\n", self.TCP, self.Nonce)
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 1
	}
	var peer Peer
	if _, err := fmt.Sscanf(in.Text(), "peer %s %s", &peer.TCP, &peer.Nonce); err != nil {
		fmt.Fprintln(os.Stderr, "child: peer line:", err)
		return 1
	}
	peer.Host = "h"
	tr.SetPeers([]Peer{self, peer})
	for in.Scan() {
	}
	return 0
}

type killChildHandler struct{ tr *Transport }

func (k *killChildHandler) Frame(_ int, h transport.Header) ([]byte, any) {
	if h.Kind == kStalled {
		fmt.Println("receiving")
		select {} // this connection's reads stop here until the kill
	}
	if h.N == 0 {
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func (k *killChildHandler) Payload(from int, h transport.Header, _ []byte, _ any, err error) {
	if err != nil {
		return
	}
	switch h.Kind {
	case kPing:
		go k.tr.Send(from, transport.Header{Kind: kPing, Seq: h.Seq + 1}, nil)
	case kSendMe:
		go k.tr.Send(from, transport.Header{Kind: kSendMe, Seq: h.Seq}, make([]byte, h.A))
	}
}

func (k *killChildHandler) PeerLost(int, error) {}

// killSide is the test process's handler (rank 1).
type killSide struct {
	pings    chan uint64   // answers to kPing
	payloads chan error    // ends of kSendMe frames
	started  chan struct{} // a kSendMe frame's header was read
	release  chan struct{} // closed: Frame of a kSendMe frame returns
	lostN    atomic.Int32
	lost     chan struct{} // closed at the first PeerLost
	lostOnce sync.Once
}

func newKillSide() *killSide {
	return &killSide{pings: make(chan uint64, 1024), payloads: make(chan error, 4),
		started: make(chan struct{}, 1), release: make(chan struct{}), lost: make(chan struct{})}
}

func (k *killSide) Frame(_ int, h transport.Header) ([]byte, any) {
	if h.Kind != kSendMe {
		return nil, nil
	}
	k.started <- struct{}{}
	<-k.release
	return make([]byte, h.N), nil
}

func (k *killSide) Payload(_ int, h transport.Header, dst []byte, _ any, err error) {
	switch h.Kind {
	case kPing:
		if err == nil {
			k.pings <- h.Seq
		}
	case kSendMe:
		if err == nil && len(dst) != int(h.N) {
			err = fmt.Errorf("payload of %d bytes, header says %d", len(dst), h.N)
		}
		k.payloads <- err
	}
}

func (k *killSide) PeerLost(int, error) {
	k.lostN.Add(1)
	k.lostOnce.Do(func() { close(k.lost) })
}

func (k *killSide) isLost() bool {
	select {
	case <-k.lost:
		return true
	default:
		return false
	}
}

// killRig is one child and the test's transport connected to it.
type killRig struct {
	c    *child
	tr   *Transport
	side *killSide
}

func newKillRig(t *testing.T) *killRig {
	t.Helper()
	c := startChild(t, killMode)
	side := newKillSide()
	tr, err := Listen(Config{Self: 1, Host: "h", Mode: ModeTCP, Handler: side, Auth: testKey(t, floodKeyByte),
		Log: func(string) {}, ConnectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	tr.SetPeers([]Peer{c.peer, tr.Self()})
	self := tr.Self()
	if _, err := fmt.Fprintf(c.stdin, "peer %s %s\n", self.TCP, self.Nonce); err != nil {
		t.Fatal(err)
	}
	r := &killRig{c: c, tr: tr, side: side}
	r.ping(t, 1) // connected, out of the poller
	if x := rxOf(t, tr, 0); x.fc == nil {
		t.Fatal("the TCP connection is not out of the runtime's poller")
	}
	return r
}

// ping makes one round trip, the answer read by a polling caller.
func (r *killRig) ping(t *testing.T, seq uint64) {
	t.Helper()
	if err := r.tr.Send(0, transport.Header{Kind: kPing, Seq: seq}, nil); err != nil {
		t.Fatal(err)
	}
	d := &pingDone{ch: r.side.pings}
	deadline := time.Now().Add(20 * time.Second)
	for !r.tr.PollUntil(d, 10*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no answer to a ping within 20 s")
		}
	}
	if d.seq != seq+1 {
		t.Fatalf("answer %d to ping %d", d.seq, seq)
	}
}

type pingDone struct {
	ch   chan uint64
	seq  uint64
	done bool
}

func (p *pingDone) Done() bool {
	if !p.done {
		select {
		case p.seq = <-p.ch:
			p.done = true
		default:
		}
	}
	return p.done
}

// kill SIGKILLs the child and reaps it.
func (r *killRig) kill(t *testing.T) {
	t.Helper()
	if err := r.c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := r.c.finish(t)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed", err)
	}
	r.c.err = nil // the expected end: not the cleanup's error
}

// lostOnce waits for the peer's loss and checks, after the transport is
// closed, that it was reported once.
func (r *killRig) lostOnce(t *testing.T) {
	t.Helper()
	within(t, "the peer's loss", r.side.lost)
	// Sends to the dead peer return, and fail: the first may succeed (a
	// peer that died with nothing unread sent a FIN, after which the
	// kernel takes one more write; its reset comes back for that write),
	// and one of the next few does not.
	sent := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 5 && err == nil; i++ {
			err = r.tr.Send(0, transport.Header{Kind: kPing, Seq: 99}, nil)
		}
		sent <- err
	}()
	select {
	case err := <-sent:
		if err == nil {
			t.Error("5 sends to the killed peer succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("sends to the killed peer did not return within 20 s")
	}
	r.tr.Close()
	if n := r.side.lostN.Load(); n != 1 {
		t.Fatalf("peer reported lost %d times", n)
	}
}

// pollUntilLost polls from its own goroutine until the peer is lost
// (or a kSendMe frame ended, if frame); started is closed once PollUntil
// asked for Done the first time.
func (r *killRig) pollUntilLost(frame bool) (started, done chan struct{}) {
	started, done = make(chan struct{}), make(chan struct{})
	d := &lostDone{side: r.side, started: started, frame: frame}
	go func() {
		defer close(done)
		deadline := time.Now().Add(30 * time.Second)
		for !r.tr.PollUntil(d, 10*time.Millisecond) && time.Now().Before(deadline) {
		}
	}()
	return started, done
}

type lostDone struct {
	side    *killSide
	started chan struct{}
	once    sync.Once
	frame   bool
	ended   bool
}

func (l *lostDone) Done() bool {
	l.once.Do(func() { close(l.started) })
	if l.frame && !l.ended {
		select {
		case err := <-l.side.payloads:
			l.side.payloads <- err // for the test to read
			l.ended = true
		default:
		}
	}
	return l.ended || l.side.isLost()
}

func TestTCPPeerKilledAtEveryStep(t *testing.T) {
	t.Run("idle-armed", func(t *testing.T) {
		r := newKillRig(t)
		x := rxOf(t, r.tr, 0)
		waitUntil(t, "the idle reader arms readability", func() bool {
			return x.fc.armed.Load() && !x.disarmed.Load()
		})
		r.kill(t)
		r.lostOnce(t)
	})
	t.Run("while-polling", func(t *testing.T) {
		r := newKillRig(t)
		started, done := r.pollUntilLost(false)
		within(t, "the poll's start", started)
		r.kill(t)
		within(t, "the poll", done)
		r.lostOnce(t)
	})
	for _, tc := range []struct {
		name   string
		size   uint64
		polled bool
	}{
		{"frame-in-chunked-reader", killBig, false},
		{"frame-in-chunked-polled", killBig, true},
		{"frame-in-whole-reader", killWhole, false},
		{"frame-in-whole-polled", killWhole, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newKillRig(t)
			if err := r.tr.Send(0, transport.Header{Kind: kSendMe, Seq: 5, A: tc.size}, nil); err != nil {
				t.Fatal(err)
			}
			var done chan struct{}
			if tc.polled {
				_, done = r.pollUntilLost(true)
			}
			within(t, "the frame's header", r.side.started)
			r.kill(t) // the frame's reader waits in Frame meanwhile
			close(r.side.release)
			var err error
			select {
			case err = <-r.side.payloads:
			case <-time.After(20 * time.Second):
				t.Fatal("the interrupted frame did not end within 20 s")
			}
			// A chunked frame cannot have been written whole before the
			// kill (the header was read, then the child's writes stopped
			// at the socket buffers); a whole one may have been.
			if tc.size == killBig && err == nil {
				t.Fatal("a 64 MiB frame cut by the kill ended without an error")
			}
			if done != nil {
				within(t, "the poll", done)
			}
			r.lostOnce(t)
		})
	}
	t.Run("frame-out-stalled", func(t *testing.T) {
		r := newKillRig(t)
		sent := make(chan error, 1)
		go func() { sent <- r.tr.Send(0, transport.Header{Kind: kStalled}, make([]byte, killBig)) }()
		r.c.line(t, "receiving")
		r.kill(t)
		select {
		case err := <-sent:
			if err == nil {
				t.Fatal("a 64 MiB send to a peer that stopped reading and was killed succeeded")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the send did not end within 20 s of the kill")
		}
		r.lostOnce(t)
	})
	t.Run("ping-pong", func(t *testing.T) {
		r := newKillRig(t)
		const before = 100
		rounds := make(chan int, 1)
		ended := make(chan error, 1)
		go func() {
			d := &pingDone{ch: r.side.pings}
			for i := uint64(1); ; i += 2 {
				if i == 2*before+1 {
					rounds <- before
				}
				if err := r.tr.Send(0, transport.Header{Kind: kPing, Seq: i}, nil); err != nil {
					ended <- err
					return
				}
				*d = pingDone{ch: r.side.pings}
				deadline := time.Now().Add(30 * time.Second)
				for !r.tr.PollUntil(&lostOr{d, r.side}, 10*time.Millisecond) {
					if time.Now().After(deadline) {
						ended <- errors.New("no answer and no loss within 30 s")
						return
					}
				}
				if r.side.isLost() && !d.done {
					ended <- nil
					return
				}
			}
		}()
		select {
		case <-rounds:
		case <-time.After(30 * time.Second):
			t.Fatal("no 100 round trips within 30 s")
		}
		r.kill(t)
		select {
		case err := <-ended:
			if err != nil && !errors.Is(err, transport.ErrPeerLost) {
				t.Fatalf("the ping-pong ended with %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Fatal("the ping-pong did not end within 40 s of the kill")
		}
		r.lostOnce(t)
	})
}

// lostOr is done when d is or the peer is lost.
type lostOr struct {
	d    *pingDone
	side *killSide
}

func (l *lostOr) Done() bool { return l.d.Done() || l.side.isLost() }
