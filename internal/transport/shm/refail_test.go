package shm

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// A rank whose own set-up of a pair failed (its dial found nobody, its
// endpoint lookup or handshake failed) and that then accepted the peer's
// set-up sends on that pair: the failure of the attempt ends the frames
// sent during it, not the pair. Before, the attempt's error stayed the
// pair's sending error, so every later frame to the peer failed while its
// frames still arrived: the clear to send of a rendezvous, heartbeats and
// hang queries were lost, the peer's loss only a suspicion the launcher
// refuted, and a 2 GiB Send/Recv hung (bench/results/
// e2e-bigxfer-hang-20261129.txt: the receiver never answered the hang
// query).
func TestSendAfterFailedSetupAndPeersSetup(t *testing.T) {
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := listenTwo(t, recs, nil)
	defer closeAll(trs)
	// Rank 0's first set-up of the pair fails: the address it has for
	// rank 1 leads nowhere.
	bad := addrs(trs[0].cfg.Dir, 2)
	bad[1] = filepath.Join(trs[0].cfg.Dir, "nobody.sock")
	trs[0].SetPeers(bad)
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, nil); err == nil {
		t.Fatal("a send over a set-up that cannot succeed succeeded")
	}
	select {
	case <-recs[0].lost:
	case <-time.After(30 * time.Second):
		t.Fatal("the failed set-up was not reported")
	}
	// Rank 1 sets the pair up; its frame arrives.
	if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: 2}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rank 1's frame at rank 0", func() bool { return recs[0].count(1) == 1 })
	// Rank 0 sends on the pair rank 1 set up: inline, posted, chunked and
	// read from its memory.
	for i, n := range []int{0, 100, 200 << 10, 2 << 20} {
		seq := uint64(10 + i)
		b := make([]byte, n)
		fill(b, seq)
		d := make(doneCh, 1)
		trs[0].Post(1, transport.Header{Kind: 1, Seq: seq}, b, d)
		select {
		case err := <-d:
			if err != nil {
				t.Fatalf("frame of %d bytes on the pair rank 1 set up: %v", n, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("frame of %d bytes: not written in 30 s", n)
		}
	}
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 20}, nil); err != nil {
		t.Fatalf("send on the pair rank 1 set up: %v", err)
	}
	waitFor(t, "rank 0's frames at rank 1", func() bool { return recs[1].count(0) == 5 })
	recs[1].check(t)
	select {
	case p := <-recs[1].lost:
		t.Fatalf("rank 1 lost rank %d", p)
	default:
	}
}
