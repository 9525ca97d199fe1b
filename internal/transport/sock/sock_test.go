package sock

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/transport"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(floodChildEnv); mode != "" {
		os.Exit(floodChild(mode)) // flood_test.go: the flooded process
	}
	goleak.VerifyTestMain(m)
}

// recorder is a Handler that keeps every frame's payload per peer.
type recorder struct {
	mu   sync.Mutex
	got  map[int][]uint64 // per sender: the sequence numbers received
	lost chan int
}

func newRecorder() *recorder { return &recorder{got: map[int][]uint64{}, lost: make(chan int, 16)} }

func (r *recorder) Frame(from int, h transport.Header) ([]byte, any) {
	if h.N == 0 {
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func (r *recorder) Payload(from int, h transport.Header, dst []byte, _ any, err error) {
	if err != nil {
		return
	}
	if len(dst) >= 8 && binary.LittleEndian.Uint64(dst) != h.Seq {
		panic("payload does not match header")
	}
	r.mu.Lock()
	r.got[from] = append(r.got[from], h.Seq)
	r.mu.Unlock()
}

func (r *recorder) PeerLost(peer int, err error) { r.lost <- peer }

func (r *recorder) count(from int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[from])
}

func newJob(t *testing.T, n int, mode Mode) ([]*Transport, []*recorder) {
	t.Helper()
	dir := t.TempDir()
	trs := make([]*Transport, n)
	recs := make([]*recorder, n)
	peers := make([]Peer, n)
	for i := range trs {
		recs[i] = newRecorder()
		tr, err := Listen(Config{Self: i, Host: "h", Mode: mode, Dir: dir, Handler: recs[i],
			SpinFn: func() time.Duration { return 20 * time.Microsecond }})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		peers[i] = tr.Self()
	}
	for _, tr := range trs {
		tr.SetPeers(peers)
	}
	return trs, recs
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// Every rank sends to every other rank at the same moment: frames arrive in
// order, and each pair ends up with exactly one connection used both ways.
func TestSimultaneousDialsKeepOrderAndOneConnection(t *testing.T) {
	for _, mode := range []Mode{ModeUnix, ModeTCP} {
		t.Run(string(mode), func(t *testing.T) {
			const n, per = 6, 300
			trs, recs := newJob(t, n, mode)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i, tr := range trs {
				for j := range trs {
					if i == j {
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-start
						for k := 0; k < per; k++ {
							size := 8 + (k%5)*5000
							p := make([]byte, size)
							binary.LittleEndian.PutUint64(p, uint64(k))
							h := transport.Header{Kind: 1, Seq: uint64(k), N: uint64(size)}
							if err := tr.Send(j, h, p); err != nil {
								t.Error(err)
								return
							}
						}
					}()
				}
			}
			close(start)
			wg.Wait()
			for i, rec := range recs {
				for j := range trs {
					if i == j {
						continue
					}
					waitFor(t, fmt.Sprintf("frames %d->%d", j, i), func() bool { return rec.count(j) == per })
					rec.mu.Lock()
					for k, s := range rec.got[j] {
						if s != uint64(k) {
							t.Errorf("%d->%d: frame %d has seq %d", j, i, k, s)
							break
						}
					}
					rec.mu.Unlock()
				}
			}
			for i, tr := range trs {
				tr.mu.Lock()
				nc := len(tr.conns)
				tr.mu.Unlock()
				if nc != n-1 {
					t.Errorf("rank %d has %d connections, want %d (one per peer)", i, nc, n-1)
				}
			}
			for _, tr := range trs {
				tr.Close()
			}
			for i, rec := range recs {
				select {
				case p := <-rec.lost:
					t.Errorf("rank %d saw peer %d lost after an orderly close", i, p)
				default:
				}
			}
		})
	}
}

// A peer whose connection breaks without a goodbye is reported lost.
func TestBrokenConnectionReportsPeerLost(t *testing.T) {
	trs, recs := newJob(t, 2, ModeUnix)
	defer trs[0].Close()
	h := transport.Header{Kind: 1}
	if err := trs[1].Send(0, h, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "first frame", func() bool { return recs[0].count(1) == 1 })
	// Simulate a crash of rank 1: close its sockets without a goodbye.
	trs[1].mu.Lock()
	for cc := range trs[1].conns {
		cc.c.Close()
	}
	trs[1].mu.Unlock()
	select {
	case p := <-recs[0].lost:
		if p != 1 {
			t.Fatalf("lost peer %d, want 1", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("peer loss not reported")
	}
	trs[1].Close()
}

func TestUnreachablePeerIsAnError(t *testing.T) {
	trs, _ := newJob(t, 1, ModeUnix)
	defer trs[0].Close()
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/gone.sock")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	os.Remove(dir + "/gone.sock")
	trs[0].SetPeers([]Peer{trs[0].Self(), {Host: "h", Unix: dir + "/gone.sock"}})
	h := transport.Header{Kind: 1}
	if err := trs[0].Send(1, h, nil); err == nil {
		t.Fatal("send to a rank that is not listening succeeded")
	}
}

// Close releases a sender waiting for a connection that never comes (the
// peer's own dial was expected): it fails at once, not after the connect
// timeout.
func TestCloseReleasesWaitingSender(t *testing.T) {
	tr, err := Listen(Config{Self: 0, Mode: ModeUnix, Dir: t.TempDir(), Handler: &recorder{lost: make(chan int, 4)}})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetPeers([]Peer{{}, {}})
	tr.mu.Lock()
	ps := tr.peerLocked(1)
	ps.expect = true // as if our dial was refused and the peer's connection is on its way
	tr.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- tr.Send(1, transport.Header{Kind: 1}, nil) }()
	// The Send is queued once the peer's writer goroutine runs.
	waitFor(t, "the send to be queued", func() bool {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		return ps.writing
	})
	tr.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Send succeeded on a closed transport")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Send still waiting 5 s after Close")
	}
}

// A frame that completes nobody (a control frame, posted) to a rank that
// is not listening any more reports the rank lost: a listener exists
// before its address is published, so an unreachable rank is gone, and
// the frame must not vanish unnoticed (a fence waiting for it would hang).
func TestUnreachablePeerIsReportedLost(t *testing.T) {
	for _, mode := range []Mode{ModeUnix, ModeTCP} {
		t.Run(string(mode), func(t *testing.T) {
			trs, recs := newJob(t, 2, mode)
			defer trs[0].Close()
			trs[1].Close() // never connected: its listener is gone
			trs[0].Post(1, transport.Header{Kind: 1}, nil, nil)
			select {
			case p := <-recs[0].lost:
				if p != 1 {
					t.Fatalf("lost peer %d, want 1", p)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the unreachable rank was not reported lost")
			}
		})
	}
}
