package sock

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// A rank whose own dial of a peer failed, and that then accepted the
// peer's connection, sends on that connection: the failed dial ends the
// frames sent during it, not the peer. Before, the dial's error stayed the
// peer's sending error for good (and the writer that ended with it was
// never started again), so every later frame to the peer failed, or waited
// forever in its queue, while the peer's frames arrived: the bug the
// shared-memory transport had (bd9c0cc).
func TestSendAfterFailedDialAndPeersConnection(t *testing.T) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := make([]*Transport, 2)
	peers := make([]Peer, 2)
	for i := range trs {
		tr, err := Listen(Config{Self: i, Host: "h", Mode: ModeUnix, Dir: dir, Handler: recs[i],
			ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		trs[i], peers[i] = tr, tr.Self()
	}
	defer trs[1].Close()
	defer trs[0].Close()
	// Rank 0's first dial of rank 1 fails: the address it has leads nowhere.
	bad := append([]Peer(nil), peers...)
	bad[1].Unix = filepath.Join(dir, "nobody.sock")
	trs[0].SetPeers(bad)
	trs[1].SetPeers(peers)
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, nil); err == nil {
		t.Fatal("a send over a dial that cannot succeed succeeded")
	}
	// Rank 1 connects; its frame arrives.
	if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: 2}, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for recs[0].count(1) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("rank 1's frame did not reach rank 0 in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	// Rank 0 sends on rank 1's connection: posted (through the writer) and
	// direct, small and chunked.
	for i, n := range []int{0, 100, 3 << 20} {
		seq := uint64(10 + i)
		b := make([]byte, n)
		if len(b) >= 8 {
			binary.LittleEndian.PutUint64(b, seq)
		}
		d := make(doneCh, 1)
		trs[0].Post(1, transport.Header{Kind: 1, Seq: seq, N: uint64(len(b))}, b, d)
		select {
		case err := <-d:
			if err != nil {
				t.Fatalf("frame of %d bytes on rank 1's connection: %v", n, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("frame of %d bytes: not written in 30 s", n)
		}
	}
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 20}, nil); err != nil {
		t.Fatalf("send on rank 1's connection: %v", err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for recs[1].count(0) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("rank 1 got %d of rank 0's 4 frames in 30 s", recs[1].count(0))
		}
		time.Sleep(time.Millisecond)
	}
}
