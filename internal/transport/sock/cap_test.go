package sock

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// TestListenerCapFollowsPeers: a listener keeps connections waiting for
// their handshake up to a cap, closing the oldest beyond it (a flood is
// shed). A job of more processes than the default cap dials one rank at
// once at start-up, so Config.Peers raises the cap to the job's size plus
// a margin: with it, the oldest of more than the default cap's waiting
// connections is still open once a later member's frame got through; with
// the default, it was shed.
func TestListenerCapFollowsPeers(t *testing.T) {
	n := acceptloop.DefaultCap() + 16
	for _, tc := range []struct {
		peers int
		shed  bool
	}{{0, true}, {n + 100, false}} {
		k := testKey(t, 1)
		dir := t.TempDir()
		rec0, rec1 := newRecorder(), newRecorder()
		tr0, err := Listen(Config{Self: 0, Host: "h", Mode: ModeUnix, Dir: dir, Handler: rec0, Auth: k,
			Log: func(string) {}, ConnectTimeout: time.Minute, Peers: tc.peers})
		if err != nil {
			t.Fatal(err)
		}
		tr1, err := Listen(Config{Self: 1, Host: "h", Mode: ModeUnix, Dir: dir, Handler: rec1, Auth: k,
			Log: func(string) {}, ConnectTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		peers := []Peer{tr0.Self(), tr1.Self()}
		tr0.SetPeers(peers)
		tr1.SetPeers(peers)
		// n connections that never say hello (a start-up burst stands
		// still, or a flood), then a member's frame: the accept loop takes
		// connections in order, so once the frame arrived every one of the
		// n was accepted.
		conns := make([]net.Conn, 0, n)
		for range n {
			c, err := net.Dial("unix", tr0.Self().Unix)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		if err := tr1.Send(0, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "rank 1's frame", func() bool { return rec0.count(1) == 1 })
		first := conns[0]
		first.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		var b [1]byte
		_, err = first.Read(b[:])
		var ne net.Error
		open := errors.As(err, &ne) && ne.Timeout()
		if open == tc.shed {
			t.Errorf("Peers %d (cap %d): the oldest of %d waiting connections open=%v, want %v (read: %v)",
				tc.peers, acceptloop.CapFor(tc.peers), n, open, !tc.shed, err)
		}
		for _, c := range conns {
			c.Close()
		}
		tr0.Close()
		tr1.Close()
	}
}
