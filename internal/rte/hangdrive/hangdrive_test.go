package hangdrive

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/hang"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// bus connects the drivers of a job: a frame sent is handled by its
// receiver on a goroutine of its own (as a transport would), unless the
// receiver is silent or lost.
type bus struct {
	t      *testing.T
	d      map[int]*Driver
	mu     sync.Mutex
	lost   map[int]bool
	silent map[int]bool
	wg     sync.WaitGroup
	// handled, when set, is called once process to has handled a frame
	// from process from (tests tie their waits to it).
	handled func(from, to int)
}

type port struct {
	b    *bus
	self int
}

func (p port) SendControl(to int, h transport.Header, payload []byte) error {
	b := p.b
	b.mu.Lock()
	skip := b.lost[to] || b.silent[to]
	b.mu.Unlock()
	if skip {
		return nil
	}
	payload = slices.Clone(payload)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		if err := b.d[to].Handle(p.self, h, payload); err != nil {
			b.t.Errorf("process %d: %v", to, err)
		}
		if b.handled != nil {
			b.handled(p.self, to)
		}
	}()
	return nil
}

func (p port) IsLost(q int) bool {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return p.b.lost[q]
}

func newBus(t *testing.T, n int, wait time.Duration) *bus {
	b := &bus{t: t, d: map[int]*Driver{}, lost: map[int]bool{}, silent: map[int]bool{}}
	for i := range n {
		b.d[i] = New(Env{Net: port{b, i}, Self: i, Wait: wait, Answer: func() hang.Rank {
			return hang.Rank{Rank: i, Answered: true, Calls: []hang.Call{{Op: "MPI_Recv", Peer: (i + 1) % n}}}
		}})
	}
	t.Cleanup(b.wg.Wait)
	return b
}

// The reporter gets every live rank's answer; a failed rank is reported
// failed (not asked), a silent one as not answering after the wait.
func TestGather(t *testing.T) {
	b := newBus(t, 4, time.Hour)
	in := b.d[0].Gather("test", []int{0, 1, 2, 3}, nil, nil)
	if in.Reason != "test" || len(in.Ranks) != 4 {
		t.Fatalf("input %+v", in)
	}
	for i, r := range in.Ranks {
		if r.Rank != i || !r.Answered || len(r.Calls) != 1 || r.Calls[0].Peer != (i+1)%4 {
			t.Fatalf("rank %d: %+v", i, r)
		}
	}

	// The wait for the silent rank ends once the live one's answer is in
	// (an event, not a wall-clock guess of how fast rank 1 answers: a
	// 1 ms wait lost rank 1's answer on a loaded machine).
	b = newBus(t, 4, time.Hour)
	b.lost[2], b.silent[3] = true, true
	answered := make(chan struct{})
	var once sync.Once
	b.handled = func(from, to int) {
		if from == 1 && to == 0 {
			once.Do(func() { close(answered) })
		}
	}
	in = b.d[0].Gather("again", []int{0, 1, 2, 3}, func() []int { return []int{2} }, answered)
	got := in.Ranks
	if !got[1].Answered || !got[2].Failed || got[2].Answered || got[3].Answered || got[3].Failed || got[3].Rank != 3 {
		t.Fatalf("ranks %+v", got)
	}
	if !slices.Equal(in.Failed, []int{2}) {
		t.Fatalf("failed %v", in.Failed)
	}
	// stop ends the wait too.
	stop := make(chan struct{})
	close(stop)
	b.d[0].env.Wait = time.Hour
	if in := b.d[0].Gather("stopped", []int{0, 3}, nil, stop); in.Ranks[1].Answered {
		t.Fatalf("silent rank answered: %+v", in.Ranks)
	}
}

// Malformed answers and unknown kinds are errors that name them; a late
// answer and a duplicate are dropped without one.
func TestHandleChecksFrames(t *testing.T) {
	b := newBus(t, 2, time.Hour)
	d := b.d[0]
	ans := transport.Header{Tag: int32(ctl.Hang), B: KindAnswer, Seq: 5}
	err := d.Handle(1, ans, []byte("{"))
	if err == nil || !strings.Contains(err.Error(), "malformed hang answer from process 1") {
		t.Fatalf("malformed: %v", err)
	}
	err = d.Handle(1, transport.Header{Tag: int32(ctl.Hang), B: 9}, nil)
	if err == nil || !strings.Contains(err.Error(), "unknown kind 9 from process 1") {
		t.Fatalf("unknown kind: %v", err)
	}
	good, _ := json.Marshal(hang.Rank{Rank: 77})
	if err := d.Handle(1, ans, good); err != nil {
		t.Fatalf("a late answer: %v", err)
	}
	// A duplicate answer from the same rank does not complete a gather
	// that waits for two ranks.
	d.mu.Lock()
	g := &gather{ans: map[int]hang.Rank{}, want: 2, done: make(chan struct{})}
	d.pending = map[uint64]*gather{6: g}
	d.mu.Unlock()
	ans.Seq = 6
	for range 2 {
		if err := d.Handle(1, ans, good); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-g.done:
		t.Fatal("a duplicate answer completed the gather")
	default:
	}
	if r := g.ans[1]; r.Rank != 1 || !r.Answered {
		t.Fatalf("answer filed as %+v, want rank 1 (the sender), answered", r)
	}
}
