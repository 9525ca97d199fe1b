package shm

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// A receiver that does not spin (ranks outnumber cores) gives its core
// away with kernel yields, polling between them, before it sleeps in the
// futex: frames still arrive, and the yields happen.
func TestReceiverYieldsBeforeSleeping(t *testing.T) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder()}
	var yields atomic.Int64
	trs := make([]*Transport, 2)
	for i := range trs {
		tr, err := Listen(Config{Self: i, Dir: dir, Name: sockName(i), Handler: recs[i], Auth: testKey,
			SpinFn: func() time.Duration { return 0 }, kernelYield: func() { yields.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
	}
	for _, tr := range trs {
		tr.SetPeers(addrs(dir, 2))
	}
	defer closeAll(trs)
	for seq := uint64(1); seq <= 20; seq++ {
		b := make([]byte, 16)
		fill(b, seq)
		if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: seq}, b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "every frame", func() bool { return recs[1].count(0) == 20 })
	recs[1].check(t)
	waitFor(t, "a kernel yield of an idle receiver", func() bool { return yields.Load() > 0 })
	waitFor(t, "the receiver's futex sleep after its yields", func() bool { return trs[1].bellSleep.Load() != 0 })
}

// A polling loop that finds a long gap between two of its clock reads
// (its thread lost the core) counts the host as crowded for crowdedFor;
// short gaps do not.
func TestGapMakesTheHostCrowded(t *testing.T) {
	var tr Transport
	t0 := time.Unix(1000, 0)
	if tr.noteGap(10*time.Microsecond, t0) {
		t.Fatal("a short gap made the host crowded")
	}
	if !tr.noteGap(crowdedGap, t0) {
		t.Fatal("a gap of a lost time slice did not make the host crowded")
	}
	if !tr.noteGap(time.Microsecond, t0.Add(crowdedFor/2)) {
		t.Fatal("the host stopped being crowded before crowdedFor")
	}
	if tr.noteGap(time.Microsecond, t0.Add(crowdedFor)) {
		t.Fatal("the host is still crowded after crowdedFor")
	}
}

// A caller polling on a crowded host gives the core away with kernel
// yields between its polls (without Config.Yield).
func TestCrowdedPollerYieldsTheCore(t *testing.T) {
	h0, h1 := newStackHandler(), newStackHandler()
	trs := newPollJob(t, 2, sleepMax, h0, h1)
	defer closeAll(trs)
	var yields atomic.Int64
	trs[1].cfg.kernelYield = func() { yields.Add(1) }
	trs[1].crowdedUntil.Store(time.Now().Add(time.Hour).UnixNano())
	if trs[1].PollUntil(doneFn(func() bool { return false }), time.Millisecond) {
		t.Fatal("PollUntil reported a request done that never is")
	}
	if yields.Load() == 0 {
		t.Fatal("a caller polling on a crowded host never yielded the core")
	}
}
