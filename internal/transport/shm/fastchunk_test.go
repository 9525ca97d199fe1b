package shm

import (
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Small frames sent without the pair's lock (sendFast) while chunked frames
// are written from the caller (directLocked: part of a frame in the ring,
// the rest queued) never land between a chunked frame's chunks. Before,
// the window between the partial write and the queueing let a fast sender
// put a record inside the chunked payload, and the receiver closed the
// pair ("a frame inside a chunked payload"; e2e TestP2PCheckAllTransports
// under -race).
func TestFastFramesStayOutOfChunkedFrames(t *testing.T) {
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := listenTwo(t, recs, nil)
	defer closeAll(trs)
	const bigs, smalls = 100, 4000
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		b := make([]byte, 300<<10) // above a record, below the single copy: chunked
		for i := range bigs {
			seq := uint64(1 + 2*i)
			fill(b, seq)
			if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: seq}, b); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		b := make([]byte, 64)
		for i := range smalls {
			seq := uint64(2 + 2*i)
			fill(b, seq)
			if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: seq}, b); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("send: %v", err)
	}
	waitFor(t, "every frame at rank 1", func() bool { return recs[1].count(0) == bigs+smalls })
	recs[1].check(t)
	select {
	case p := <-recs[1].lost:
		t.Fatalf("rank 1 lost rank %d", p)
	default:
	}
}

// The same window, deterministic: once directLocked has let the token go
// with part of a chunked frame in the ring (the rest not queued yet), a
// fast send must refuse (false: the locked path queues it behind).
func TestFastSendRefusedBetweenChunks(t *testing.T) {
	recs := []*recorder{newRecorder(), newRecorder()}
	fast := make(chan bool, 1)
	var once sync.Once
	small := make([]byte, 64)
	fill(small, 99)
	trs := listenTwo(t, recs, func(c *Config) {
		if c.Self == 0 {
			c.afterPartial = func(p *pair) {
				once.Do(func() { fast <- p.sendFast(&transport.Header{Kind: 1, Seq: 99}, small) })
			}
		}
	})
	defer closeAll(trs)
	// Set the pair up first, so the big frame takes directLocked.
	first := make([]byte, 8)
	fill(first, 2)
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 2}, first); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 300<<10)
	fill(b, 3)
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 3}, b); err != nil {
		t.Fatal(err)
	}
	select {
	case ok := <-fast:
		if ok {
			t.Fatal("a fast send wrote its record between a chunked frame's chunks")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the big frame never took the partial direct write")
	}
	waitFor(t, "both frames at rank 1", func() bool { return recs[1].count(0) == 2 })
	recs[1].check(t)
}

// listenTwo starts ranks 0 and 1 in one directory with recs as their
// handlers (edit, if not nil, changes each one's Config first) and gives
// both the same address table.
func listenTwo(t *testing.T, recs []*recorder, edit func(*Config)) []*Transport {
	t.Helper()
	dir := t.TempDir()
	trs := make([]*Transport, 2)
	for i := range trs {
		cfg := Config{Self: i, Dir: dir, Name: sockName(i), Handler: recs[i], Auth: testKey,
			SpinFn: func() time.Duration { return 10 * time.Microsecond }}
		if edit != nil {
			edit(&cfg)
		}
		tr, err := Listen(cfg)
		if err != nil {
			closeAll(trs[:i])
			t.Fatal(err)
		}
		trs[i] = tr
		tr.SetPeers(addrs(dir, 2))
	}
	return trs
}
