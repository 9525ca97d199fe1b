package mpi

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/fence"
	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/rte/fencedrive"
	"github.com/ftmpi/ftmpi/internal/rte/reinitdrive"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// hrJob is n ranks and k spares of a headless Reinit start, as Worlds of
// one process over an in-memory fabric (no rte.Process: the round's
// agreement, decision, telling of the spares and endpoint exchange are
// what is tested here; opening sockets is the e2e tests' part).
type hrJob struct {
	fab *inproc.Fabric
	w   []*World
}

func newHRJob(t *testing.T, n, k int) *hrJob {
	t.Helper()
	total := n + k
	info := boot.Info{Size: total, Universe: total, Spares: k, Reinit: true}
	j := &hrJob{fab: inproc.NewFabric(total), w: make([]*World, total)}
	var ranks, pool []int
	for i := range total {
		if i < n {
			ranks = append(ranks, i)
		} else {
			pool = append(pool, i)
		}
	}
	cfg := DefaultConfig()
	for i := range total {
		eng := p2p.New(engineConfig(i, cfg))
		info.Proc = i
		sp := worldSpares{pool: pool, isSpare: i >= n, hr: &hreinit{d: rte.NewHeadlessReinit(info)}}
		members, wrank := ranks, i
		if sp.isSpare {
			members, wrank = []int{i}, 0
		}
		w := newWorldIn(i, total, members, wrank, eng, j.fab.Attach(i, eng), "inproc", nil, nil, sp)
		w.cfg = cfg
		w.abort = make(chan struct{})
		w.abortOnce = new(sync.Once)
		j.w[i] = w
	}
	t.Cleanup(func() {
		for _, w := range j.w {
			w.release()
		}
	})
	return j
}

// kill makes process p fail (every other process learns it).
func (j *hrJob) kill(p int) {
	j.fab.Kill(p, errors.New("killed by the test"))
	j.w[p].eng.Close()
}

// eachOf runs fn for the given processes concurrently and returns their
// results by process, failing the test at the deadline.
func eachOf[T any](t *testing.T, procs []int, fn func(p int) T) map[int]T {
	t.Helper()
	type res struct {
		p int
		v T
	}
	ch := make(chan res, len(procs))
	for _, p := range procs {
		go func() { ch <- res{p, fn(p)} }()
	}
	out := map[int]T{}
	deadline := time.After(30 * time.Second)
	for range procs {
		select {
		case r := <-ch:
			out[r.p] = r.v
		case <-deadline:
			t.Fatalf("no result from every process of %v within 30s (got %v)", procs, out)
		}
	}
	return out
}

type decided struct {
	next reincarnate.State
	err  error
}

// Two ranks of four fail at once; the survivors agree on both and take
// the two spares (rank 1 the lower), and each spare's wait returns the
// same next State; every member of the next epoch then gets every other
// member's endpoint over the old epoch's connections.
func TestHeadlessRoundDecidesAndExchanges(t *testing.T) {
	j := newHRJob(t, 4, 2)
	j.kill(1)
	j.kill(3)
	got := eachOf(t, []int{0, 2}, func(p int) decided {
		next, err := j.w[p].hr.decide(j.w[p])
		return decided{next, err}
	})
	want := reincarnate.State{Epoch: 1, Procs: []int{0, 4, 2, 5}, Inc: []int{0, 1, 0, 1}, Pool: []int{}}
	for p, d := range got {
		if d.err != nil || !d.next.Equal(want) {
			t.Fatalf("survivor %d: %+v, %v; want %+v", p, d.next, d.err, want)
		}
	}
	spares := eachOf(t, []int{4, 5}, func(p int) *launcherTake {
		take, err := j.w[p].awaitActivation()
		if err != nil {
			t.Errorf("spare %d: %v", p, err)
		}
		return take
	})
	for p, take := range spares {
		if take == nil || take.next == nil || !take.next.Equal(want) {
			t.Fatalf("spare %d was told %+v, want %+v", p, take, want)
		}
	}
	members := want.Members()
	type ex struct {
		eps  []boot.Endpoint
		dead []int
	}
	exch := eachOf(t, members, func(p int) ex {
		ep := boot.Endpoint{Rank: p, Host: "h", Addrs: map[string]string{"unix": "/sock/" + string(rune('a'+p))}}
		eps, dead, err := j.w[p].hr.d.Exchange(j.w[p].eng, j.w[p].size, want, 1, ep, 20*time.Second)
		if err != nil {
			t.Errorf("process %d: %v", p, err)
		}
		return ex{eps, dead}
	})
	for p, e := range exch {
		if !slices.Equal(e.dead, []int{1, 3}) {
			t.Fatalf("process %d starts epoch 1 without %v, want [1 3]", p, e.dead)
		}
		for _, q := range members {
			if e.eps[q].Addrs["unix"] != "/sock/"+string(rune('a'+q)) || e.eps[q].Rank != q {
				t.Fatalf("process %d has endpoint %+v for %d", p, e.eps[q], q)
			}
		}
	}
}

// A third failure with one spare for two failed ranks: every survivor
// gets the same ErrNoSpare, and the waiting spare is told why and leaves.
func TestHeadlessRoundNoSpareLeft(t *testing.T) {
	j := newHRJob(t, 4, 1)
	j.kill(1)
	j.kill(2)
	got := eachOf(t, []int{0, 3}, func(p int) decided {
		next, err := j.w[p].hr.decide(j.w[p])
		return decided{next, err}
	})
	const why = "no launcher to start processes: rank(s) [1 2] failed, 1 spare process(es) waiting ([4]): not enough waiting spare processes, the job cannot continue"
	for p, d := range got {
		if !errors.Is(d.err, reincarnate.ErrNoSpare) || d.err.Error() != why {
			t.Fatalf("survivor %d: %v, want %q", p, d.err, why)
		}
	}
	_, err := j.w[4].awaitActivation()
	if !errors.Is(err, errSpareEnded) || !strings.HasSuffix(err.Error(), why) {
		t.Fatalf("the spare: %v", err)
	}
}

// A member that fails before sending its endpoint is left out of the new
// epoch (not waited for); one whose endpoint arrived before it failed is
// in it (its failure is the new epoch's).
func TestHeadlessExchangeWithoutFailedMember(t *testing.T) {
	j := newHRJob(t, 3, 1)
	next := reincarnate.State{Epoch: 1, Procs: []int{0, 1, 2}, Inc: []int{0, 0, 0}, Pool: []int{3}}
	// 2 sent its endpoint, then failed; 3 failed before sending.
	for _, p := range []int{0, 1} {
		j.w[p].rt.Ctl.Dispatch(2, transport.Header{Tag: int32(ctl.Reinit), B: reinitdrive.KindEndpoint, A: 1}, []byte(`{"Host":"h","Addrs":{"unix":"/sock/2"}}`))
	}
	j.kill(2)
	j.kill(3)
	exch := eachOf(t, []int{0, 1}, func(p int) []int {
		eps, dead, err := j.w[p].hr.d.Exchange(j.w[p].eng, j.w[p].size, next, 1, boot.Endpoint{Rank: p}, 20*time.Second)
		if err != nil || eps[2].Addrs["unix"] != "/sock/2" {
			t.Errorf("process %d: %v, endpoint of 2 %+v", p, err, eps[2])
		}
		return dead
	})
	for p, dead := range exch {
		if !slices.Equal(dead, []int{3}) {
			t.Fatalf("process %d starts without %v, want [3]", p, dead)
		}
	}
}

// Frames a spare must not act on: a decision older than its state, a
// malformed one, a decision to a rank.
func TestHeadlessDecisionFramesChecked(t *testing.T) {
	j := newHRJob(t, 2, 1)
	s := j.w[2]
	h := transport.Header{Tag: int32(ctl.Reinit), B: reinitdrive.KindDecide, A: 1}
	var diag bytes.Buffer
	s.cfg.diag = &rte.Diag{Out: &diag}
	s.rt.SetDiag(s.cfg.diag)                 // the runtime handles the frames
	s.rt.Ctl.Dispatch(0, h, []byte{1, 2, 3}) // malformed
	if want := "ftmpi: process 2: malformed Reinit decision from process 0 dropped: "; !strings.HasPrefix(diag.String(), want) {
		t.Fatalf("diagnostics %q, want %q...", diag.String(), want)
	}
	s.hr.d.SetState(reincarnate.State{Epoch: 3})
	stale := reincarnate.State{Epoch: 2, Procs: []int{0, 2}, Inc: []int{0, 1}, Pool: []int{}}
	s.rt.Ctl.Dispatch(0, h, stale.Encode(nil))
	j.w[0].rt.Ctl.Dispatch(1, h, stale.Encode(nil)) // to a rank: ignored
	select {
	case o := <-s.rt.Spares.Outcome():
		t.Fatalf("the spare acted on a stale or malformed decision: %+v", o)
	default:
	}
	fresh := reincarnate.State{Epoch: 4, Procs: []int{0, 2}, Inc: []int{0, 1}, Pool: []int{}}
	s.rt.Ctl.Dispatch(0, h, fresh.Encode(nil))
	take, err := s.awaitActivation()
	if err != nil || take == nil || take.next == nil || !take.next.Equal(fresh) {
		t.Fatalf("fresh decision: %+v, %v", take, err)
	}
}

// heldPosts is a transport whose Posts are held until the test lets them
// go (a frame waiting for its connection).
type heldPosts struct {
	transport.Transport
	posted chan heldPost
}

// heldPost is one held frame: send it, or fail it as a dial to a dead
// process would.
type heldPost struct {
	send func()
	fail func(error)
}

func (h *heldPosts) Post(to int, hd transport.Header, payload []byte, done transport.Done) {
	h.posted <- heldPost{func() { h.Transport.Post(to, hd, payload, done) }, done.SendDone}
}

// Without a head, a process leaves MPI_Finalize only once its own
// Finalize frames are written, not merely queued: Close drops a frame
// still waiting for its connection, and its peer would wait for it
// forever (a released spare under mpiexec hung one run in twelve).
func TestFinalizeFenceWaitsForItsOwnFrames(t *testing.T) {
	j := newHRJob(t, 2, 0)
	w := j.w[0]
	held := &heldPosts{Transport: w.rt.Tr, posted: make(chan heldPost, 1)}
	w.rt.Tr = held
	w.rt.Fence().Handle(1, fencedrive.Header(fence.Msg{Kind: fence.Up})) // the peer (its child) entered Finalize
	left := make(chan struct{})
	go func() { w.finalizeFence(); close(left) }()
	var release heldPost
	select {
	case release = <-held.posted:
	case <-time.After(30 * time.Second):
		t.Fatal("no Finalize frame posted within 30s")
	}
	if w.fenceDone() {
		t.Fatal("the fence is done while this process's Finalize frame is not written")
	}
	release.send()
	select {
	case <-left:
	case <-time.After(30 * time.Second):
		t.Fatal("the fence did not end within 30s of its frame being written")
	}
	w.rt.Tr = held.Transport // Cleanup releases the real one
}

// A peer this process cannot write its Finalize frame to (dead before
// this process ever talked to it, unknown to its engine: a spare taken by
// Replace never heard of the failures before) does not hold the fence.
func TestFinalizeFenceCountsUnreachablePeer(t *testing.T) {
	j := newHRJob(t, 2, 0)
	w := j.w[0]
	held := &heldPosts{Transport: w.rt.Tr, posted: make(chan heldPost, 1)}
	w.rt.Tr = held
	defer func() { w.rt.Tr = held.Transport }()
	left := make(chan struct{})
	go func() { w.finalizeFence(); close(left) }()
	select {
	case p := <-held.posted:
		if w.fenceDone() {
			t.Fatal("the fence is done before the frame's outcome is known")
		}
		p.fail(errors.New("connect to rank 1: connection refused"))
	case <-time.After(30 * time.Second):
		t.Fatal("no Finalize frame posted within 30s")
	}
	select {
	case <-left:
	case <-time.After(30 * time.Second):
		t.Fatal("the fence waits for a peer its frame could not reach")
	}
}
