package rte

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// commFTJob is n Ranks of one in-process job with one communicator's
// fault-tolerance state each (context 10, every process a member);
// process dead takes no part (-1: none) and the others know it failed.
type commFTJob struct {
	j     *testJob
	fts   []*CommFT
	dead  int
	apply []chan struct{} // closed by the first revocation at each
}

func newCommFTJob(t *testing.T, n, dead int) *commFTJob {
	t.Helper()
	c := &commFTJob{j: newTestJob(n), fts: make([]*CommFT, n), dead: dead, apply: make([]chan struct{}, n)}
	ranks := make([]*Rank, n)
	for i := range n {
		if i == dead {
			continue
		}
		cfg := c.j.config(i)
		cfg.Frames = Frames{
			Agree:  func(from int, h transport.Header, p []byte) { c.fts[i].Step(from, h, p) },
			Revoke: func(from int, h transport.Header, _ []byte) { c.fts[i].OnRevoke(from, h) },
		}
		ranks[i] = NewRank(cfg)
		var known []int
		if dead >= 0 {
			known = []int{dead}
		}
		ch := make(chan struct{})
		c.apply[i] = ch
		var once sync.Once
		f, err := ranks[i].NewCommFT(CommFTConfig{Ctx: 10, N: n, Known: known,
			Order:  func() []int { return known },
			Failed: func() []int { return known },
			Apply:  func() { once.Do(func() { close(ch) }) }})
		if err != nil {
			t.Fatal(err)
		}
		c.fts[i] = f
	}
	for i, r := range ranks {
		if r == nil {
			continue
		}
		r.Start()
		if dead >= 0 {
			c.j.engs[i].FailPeer(dead, errors.New("killed by the test"))
			c.fts[i].LostAll([]int{dead})
		}
	}
	return c
}

// each runs fn at every live process concurrently and waits for all.
func (c *commFTJob) each(fn func(i int, f *CommFT)) {
	var wg sync.WaitGroup
	for i, f := range c.fts {
		if f == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); fn(i, f) }()
	}
	wg.Wait()
}

// The agreements a communicator's API calls are made of decide the same
// at every survivor, in the API's terms: who failed (the known failure
// and a process that never contributed) with the free window ANDed; the
// AND of flags; Agree's non-contributors and whether they were
// acknowledged; an intercommunicator's per-group AND; and a revocation
// reaches every member.
func TestCommFTAgreements(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 5
	c := newCommFTJob(t, n, 3)
	defer c.j.close()
	abort := make(chan struct{})

	// AgreeFailed: process 3 is known failed everywhere; the windows' AND.
	type failedOut struct {
		failed []int
		window []uint64
		ok     bool
	}
	outs := make([]failedOut, n)
	c.each(func(i int, f *CommFT) {
		window := []uint64{^uint64(0) &^ (1 << i), 0xff}
		failed, err := f.AgreeFailed(AgreeKindOf("MPI_Comm_shrink", StepFailed), nil, window, abort)
		outs[i] = failedOut{failed, window, err == nil}
	})
	for i, o := range outs {
		if i == 3 {
			continue
		}
		if !o.ok || !slices.Equal(o.failed, []int{3}) || !slices.Equal(o.window, []uint64{^uint64(0) &^ 0b10111, 0xff}) {
			t.Fatalf("process %d: AgreeFailed = %v, window %x, ok %v; want [3], [%x ff]", i, o.failed, o.window, o.ok, ^uint64(0)&^0b10111)
		}
	}

	// AgreeFlags: the AND.
	flags := make([]uint64, n)
	c.each(func(i int, f *CommFT) {
		v, err := f.AgreeFlags(AgreeKindOf("MPI_Comm_shrink", StepFlags), 0b110|uint64(i&1), abort)
		if err != nil {
			v = 99
		}
		flags[i] = v
	})
	for i, v := range flags {
		if i != 3 && v != 0b110 {
			t.Fatalf("process %d: AgreeFlags = %b, want 110", i, v)
		}
	}

	// Agree: process 3 did not contribute; unacknowledged, then
	// acknowledged everywhere.
	for _, acked := range []bool{false, true} {
		agreed := make([]AgreeOutcome, n)
		c.each(func(i int, f *CommFT) {
			call := AgreeCall{Flags: 1, Failed: []int{3}}
			if acked {
				call.Acked = []int{3}
			}
			agreed[i], _ = f.Agree(call, abort)
		})
		want := 3
		if acked {
			want = -1
		}
		for i, o := range agreed {
			if i != 3 && (o.Flags != 1 || !slices.Equal(o.Missing, []int{3}) || o.Unacked != want) {
				t.Fatalf("acknowledged %v: process %d: Agree = %+v, want flags 1, missing [3], unacked %d", acked, i, o, want)
			}
		}
	}

	// Agree on an intercommunicator {0,1} | {2,4}: each group learns the
	// AND of the other's flags.
	agreed := make([]AgreeOutcome, n)
	c.each(func(i int, f *CommFT) {
		local, fl := []int{0, 1}, uint64(0b1100|i) // 1100 & 1101 = 1100
		if i >= 2 {
			local, fl = []int{2, 4}, 0b0011 // the other group's AND: 0011
		}
		agreed[i], _ = f.Agree(AgreeCall{Flags: fl, Failed: []int{3}, Acked: []int{3}, Local: local}, abort)
	})
	for i, o := range agreed {
		want := uint64(0b0011)
		if i >= 2 {
			want = 0b1100
		}
		if i != 3 && o.Flags != want {
			t.Fatalf("intercommunicator: process %d: Agree flags %b, want %b", i, o.Flags, want)
		}
	}

	// Revoke reaches every live member.
	c.fts[0].Revoke()
	for i, ch := range c.apply {
		if ch == nil || i == 0 {
			continue
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("process %d: the revocation did not arrive", i)
		}
	}
}

// An agreement ends with abort (ok false) when a member never takes part.
func TestCommFTAgreeAborted(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := newCommFTJob(t, 2, -1)
	defer c.j.close()
	abort := make(chan struct{})
	done := make(chan bool)
	go func() {
		_, err := c.fts[0].AgreeFlags(AgreeKindOf("MPI_Comm_shrink", StepFlags), 1, abort)
		done <- err == nil
	}()
	close(abort)
	select {
	case ok := <-done:
		if ok {
			t.Fatal("AgreeFlags decided without process 1")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("AgreeFlags did not end with abort")
	}
}
