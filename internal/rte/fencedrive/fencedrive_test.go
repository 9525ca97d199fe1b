package fencedrive

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/fence"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// post is one frame a fake transport holds.
type post struct {
	from, to int
	h        transport.Header
	done     transport.Done
}

// job is n fences over a transport that holds every frame until the test
// delivers it (written: the receiver handles it) or fails it.
type job struct {
	t     *testing.T
	f     []*Fence
	mu    sync.Mutex
	held  []post
	lost  map[int]bool
	kills atomic.Int32
}

func newJob(t *testing.T, n int, onStep func(self int, step string) bool) *job {
	j := &job{t: t, lost: map[int]bool{}}
	for i := range n {
		env := Env{Self: i, N: n,
			Post: func(to int, h transport.Header, _ []byte, done transport.Done) {
				j.mu.Lock()
				j.held = append(j.held, post{i, to, h, done})
				j.mu.Unlock()
			},
			IsLost: func(p int) bool { j.mu.Lock(); defer j.mu.Unlock(); return j.lost[p] },
			Kill:   func() { j.kills.Add(1) },
		}
		if onStep != nil {
			env.OnStep = func(step string) bool { return onStep(i, step) }
		}
		j.f = append(j.f, New(env))
	}
	return j
}

// deliver writes every held frame (each reaches its receiver) until none
// is left; it returns how many it delivered.
func (j *job) deliver() int {
	n := 0
	for {
		j.mu.Lock()
		if len(j.held) == 0 {
			j.mu.Unlock()
			return n
		}
		p := j.held[0]
		j.held = j.held[1:]
		lost := j.lost[p.to]
		j.mu.Unlock()
		n++
		if lost {
			p.done.SendDone(errors.New("connection refused"))
			continue
		}
		p.done.SendDone(nil)
		if err := j.f[p.to].Handle(p.from, p.h); err != nil {
			j.t.Errorf("frame %d -> %d: %v", p.from, p.to, err)
		}
	}
}

// runAll starts Run at the given processes and returns a channel closed
// when all returned.
func (j *job) runAll(procs []int, abort <-chan struct{}) chan struct{} {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); j.f[p].Run(abort, nil) }()
	}
	out := make(chan struct{})
	go func() { wg.Wait(); close(out) }()
	return out
}

// waitOrDeliver delivers frames until done closes (a deadline fails the
// test).
func (j *job) waitOrDeliver(done chan struct{}) {
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		j.deliver()
		select {
		case <-done:
			return
		case <-deadline:
			j.t.Fatal("the fence did not end within 30s")
		case <-tick.C: // frames posted by Run after the last deliver
		}
	}
}

// Every process leaves once every other entered, with O(log n) frames,
// and knows every other finished.
func TestFenceCompletes(t *testing.T) {
	const n = 8
	j := newJob(t, n, nil)
	j.waitOrDeliver(j.runAll([]int{0, 1, 2, 3, 4, 5, 6, 7}, nil))
	for i, f := range j.f {
		if !f.Done() {
			t.Fatalf("process %d left without the fence done", i)
		}
		sent, got := f.Frames()
		if sent > 1+2*3 || got > 1+2*3 {
			t.Fatalf("process %d: %d frames sent, %d received; want at most 7 (1 + 2 log2 8)", i, sent, got)
		}
		for p := range n {
			if p != i && !f.Finished(p) {
				t.Fatalf("process %d does not know %d finished", i, p)
			}
		}
	}
}

// A process whose frame is not written yet is not done; a frame that
// cannot be written counts its peer gone.
func TestFenceWaitsForItsFrames(t *testing.T) {
	j := newJob(t, 2, nil)
	if err := j.f[0].Handle(1, Header(fence.Msg{Kind: fence.Up})); err != nil {
		t.Fatal(err)
	}
	done := j.runAll([]int{0}, nil)
	for {
		j.mu.Lock()
		held := len(j.held)
		j.mu.Unlock()
		if held > 0 {
			break
		}
		select {
		case <-j.f[0].Signal(): // not yet: the post comes from Run
		case <-time.After(time.Millisecond):
		}
	}
	if j.f[0].Done() {
		t.Fatal("done while its frame is not written")
	}
	j.mu.Lock()
	j.lost[1] = true // the write fails: its peer is gone for the fence
	j.mu.Unlock()
	j.waitOrDeliver(done)
	if !j.f[0].Done() {
		t.Fatal("left without done")
	}
}

// A malformed frame is an error that names its sender and kind; abort
// ends the wait.
func TestFenceMalformedAndAbort(t *testing.T) {
	j := newJob(t, 3, nil)
	err := j.f[0].Handle(2, transport.Header{Tag: int32(ctl.Finalize), B: 77})
	if err == nil || !strings.Contains(err.Error(), "process 2 with unknown kind 77") {
		t.Fatalf("malformed: %v", err)
	}
	if _, got := j.f[0].Frames(); got != 0 {
		t.Fatalf("a malformed frame counted: %d", got)
	}
	abort := make(chan struct{})
	done := j.runAll([]int{0}, abort)
	close(abort)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of the abort")
	}
	if j.f[0].Done() {
		t.Fatal("done without the others")
	}
}

// The test hook kills a process at a step: it stops, its unposted frames
// are never written, Kill runs, and the others finish around it once it
// is known failed.
func TestFenceKilledAtStep(t *testing.T) {
	j := newJob(t, 4, func(self int, step string) bool { return self == 2 && step == "send up" })
	done := j.runAll([]int{0, 1, 3}, nil)
	victim := j.runAll([]int{2}, nil)
	j.waitOrDeliver(victim)
	if !j.f[2].Stopped() {
		t.Fatal("the victim did not stop at its step")
	}
	for j.kills.Load() == 0 {
		select {
		case <-j.f[2].Signal():
		case <-time.After(30 * time.Second):
			t.Fatal("Kill did not run within 30s")
		}
	}
	if sent, _ := j.f[2].Frames(); sent == 0 {
		t.Fatal("the victim counted no frame")
	}
	j.mu.Lock()
	j.lost[2] = true
	j.mu.Unlock()
	for _, p := range []int{0, 1, 3} {
		j.f[p].Wake()
	}
	j.waitOrDeliver(done)
	for _, p := range []int{0, 1, 3} {
		if !j.f[p].Done() {
			t.Fatalf("process %d left without done", p)
		}
	}
}
