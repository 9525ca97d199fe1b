package ftdrive

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

type rank struct {
	eng  *p2p.Engine
	f    *Failures
	ep   *inproc.Endpoint
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
	// notices counts the failure-notice frames (single or batched) this
	// rank posted.
	notices atomic.Int64
}

// counted is a rank's transport that counts the failure-notice frames it
// posts.
type counted struct {
	transport.Transport
	r *rank
}

func (c counted) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	if t := ctl.Type(h.Tag); t == ctl.FailNotice || t == ctl.FailNotices {
		c.r.notices.Add(1)
	}
	c.Transport.Post(to, h, payload, done)
}

func (r *rank) halt() { r.once.Do(func() { close(r.stop); r.wg.Wait() }) }

// job starts n ranks over the in-process transport, each with a running
// detector configured by cfg (N, Self filled in).
func job(t *testing.T, n int, cfg detector.Config) []*rank {
	t.Helper()
	return jobConfirm(t, n, cfg, nil)
}

// jobConfirm is job with confirm as every rank's launcher (nil: none).
func jobConfirm(t *testing.T, n int, cfg detector.Config, confirm func(self, rank, inc int, reason string) error) []*rank {
	t.Helper()
	fab := inproc.NewFabric(n)
	rs := make([]*rank, n)
	for i := range rs {
		r := &rank{eng: p2p.New(p2p.Config{Self: i}), stop: make(chan struct{})}
		r.ep = fab.Attach(i, r.eng)
		r.eng.SetTransport(counted{r.ep, r})
		env := Env{Eng: r.eng, Self: i, N: n, Stop: r.stop, WG: &r.wg}
		if confirm != nil {
			env.Confirm = func(rank, inc int, reason string) error { return confirm(i, rank, inc, reason) }
		}
		r.f = New(env)
		var tb ctl.Table
		tb.MustRegister(ctl.Heartbeat, r.f.OnHeartbeat)
		tb.MustRegister(ctl.FailNotice, r.f.OnNotice)
		tb.MustRegister(ctl.FailNotices, r.f.OnNotices)
		r.eng.SetControlHandler(func(from int, h transport.Header, p []byte) {
			if err := tb.Dispatch(from, h, p); err != nil {
				t.Errorf("rank %d: %v", i, err)
			}
		})
		r.eng.SubscribeLost(func(peer int, _ error) { r.f.Lost(peer, 0) })
		rs[i] = r
	}
	ring := make([]int, n)
	for i := range ring {
		ring[i] = i
	}
	for i, r := range rs {
		c := cfg
		c.N, c.Self = n, i
		if err := r.f.StartDetector(c, ring, nil, true, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, r := range rs {
			r.halt()
		}
		for _, r := range rs {
			r.ep.Close()
		}
		for _, r := range rs {
			r.eng.Close()
		}
		goleak.VerifyNone(t)
	})
	return rs
}

// waitLost waits (bounded) until every rank but victim knows that victim
// failed.
func waitLost(t *testing.T, rs []*rank, victim int) {
	t.Helper()
	waitLostBut(t, rs, victim, []int{victim})
}

// waitLostBut waits (bounded) until every rank not in skip knows that
// victim failed.
func waitLostBut(t *testing.T, rs []*rank, victim int, skip []int) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for i, r := range rs {
		if slices.Contains(skip, i) {
			continue
		}
		for !r.eng.IsLost(victim) {
			select {
			case <-r.eng.FailureSignal():
			case <-deadline:
				t.Fatalf("rank %d never learnt that rank %d failed", i, victim)
			}
		}
	}
}

// A process that stops sending heartbeats (hung, not crashed: its
// transport is fine) is suspected by its observer after the configured
// timeout, declared failed (no launcher here) and made known to every
// other rank by the notice broadcast; never before Timeout-Period.
func TestStoppedProcessDeclaredFailedEverywhere(t *testing.T) {
	cfg := detector.DefaultConfig()
	cfg.Period, cfg.Timeout = 20*time.Millisecond, 300*time.Millisecond
	rs := job(t, 5, cfg)
	for i, r := range rs {
		if got := r.f.Detection().Config(); got.Period != cfg.Period || got.Timeout != cfg.Timeout || got.Self != i {
			t.Fatalf("rank %d runs with %+v", i, got)
		}
	}
	const victim = 3
	stopped := time.Now()
	rs[victim].halt()
	waitLost(t, rs, victim)
	if d := time.Since(stopped); d < cfg.Timeout-cfg.Period {
		t.Fatalf("rank %d declared failed %v after it stopped: before the timeout %v", victim, d, cfg.Timeout)
	}
	if rs[0].eng.IsLost(1) || rs[1].eng.IsLost(0) {
		t.Fatal("a live rank was declared failed")
	}
}

// A second detector on the same Failures is refused.
func TestStartDetectorTwice(t *testing.T) {
	cfg := detector.DefaultConfig()
	rs := job(t, 2, cfg)
	c := cfg
	c.N, c.Self = 2, 0
	if err := rs[0].f.StartDetector(c, []int{0, 1}, nil, false, nil); err == nil {
		t.Fatal("second StartDetector accepted")
	}
}

// A launcher that refuses a suspicion (it sees the process alive, starved
// of CPU) declares nothing: the suspect stays a member everywhere, its
// observer asks again only after a doubled grace, and once the launcher
// accepts, the failure is known everywhere.
func TestRefusedSuspicionDeclaresNothing(t *testing.T) {
	cfg := detector.DefaultConfig()
	cfg.Period, cfg.Timeout = 10*time.Millisecond, 100*time.Millisecond
	type ask struct {
		by, rank int
		at       time.Time
	}
	asks := make(chan ask, 64)
	var mu sync.Mutex
	accept := false
	const victim = 2
	rs := jobConfirm(t, 4, cfg, func(self, rank, _ int, _ string) error {
		if rank != victim {
			// A live rank starved of CPU on a loaded machine (the race
			// detector, a CPU hog) can be suspected too: refused, as the
			// launcher refuses a running process.
			return errors.New("suspect: alive; not killed")
		}
		select {
		case asks <- ask{self, rank, time.Now()}:
		default: // the test has seen enough
		}
		mu.Lock()
		defer mu.Unlock()
		if accept {
			return nil
		}
		return errors.New("suspect: alive; not killed")
	})
	rs[victim].halt() // silent but not gone: a starved process
	var got []ask
	deadline := time.After(30 * time.Second)
	for len(got) < 3 {
		select {
		case a := <-asks:
			if a.by != victim+1 {
				t.Fatalf("rank %d suspected rank %d; only rank %d's observer should suspect it", a.by, a.rank, victim)
			}
			got = append(got, a)
		case <-deadline:
			t.Fatalf("only %d suspicions of the silent rank within 30s", len(got))
		}
	}
	for i, r := range rs {
		if i != victim && r.eng.IsLost(victim) {
			t.Fatalf("rank %d declared the refused suspect failed", i)
		}
	}
	// Each refusal doubles the grace: 2, then 4 Timeouts at least.
	if gap := got[1].at.Sub(got[0].at); gap < 2*cfg.Timeout {
		t.Errorf("second suspicion %v after the first refused one, want at least %v", gap, 2*cfg.Timeout)
	}
	if gap := got[2].at.Sub(got[1].at); gap < 4*cfg.Timeout {
		t.Errorf("third suspicion %v after the second refused one, want at least %v", gap, 4*cfg.Timeout)
	}
	mu.Lock()
	accept = true
	mu.Unlock()
	waitLost(t, rs, victim)
}

// posts records the (from, to) pairs of the heartbeat frames of epoch 0
// (the warm-ups: claim nothing) that ranks posted.
type posts struct {
	transport.Transport
	self int
	seen *sync.Map
	more chan struct{} // signalled (without blocking) after each record
}

func (p posts) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	if ctl.Type(h.Tag) == ctl.Heartbeat && h.A == 0 {
		p.seen.Store([2]int{p.self, to}, true)
		select {
		case p.more <- struct{}{}:
		default:
		}
	}
	p.Transport.Post(to, h, payload, done)
}

// With warm and the world's members, each member's link to its parent in
// the tree of the world's agreements (agree.TreeParent, radix AgreeRadix)
// is set up at the start, by the child, unless the notice overlay's
// warm-up sets it up (binomial-graph neighbours: the lower one dials). At
// 20 processes rank 9's parent is 0, which is no neighbour of 9; rank 17's
// is 16, a neighbour (16 dials it).
func TestWarmAgreeTree(t *testing.T) {
	const n = 20
	fab := inproc.NewFabric(n)
	var seen sync.Map
	more := make(chan struct{}, 1)
	var stops []func()
	world := make([]int, n)
	for i := range world {
		world[i] = i
	}
	for i := range n {
		r := &rank{eng: p2p.New(p2p.Config{Self: i}), stop: make(chan struct{})}
		r.ep = fab.Attach(i, r.eng)
		r.eng.SetTransport(posts{r.ep, i, &seen, more})
		r.f = New(Env{Eng: r.eng, Self: i, N: n, Stop: r.stop, WG: &r.wg})
		r.eng.SetControlHandler(func(int, transport.Header, []byte) {})
		c := detector.DefaultConfig()
		c.N, c.Self, c.Period, c.Timeout = n, i, time.Hour, 2*time.Hour
		if err := r.f.StartDetector(c, world, nil, true, world); err != nil {
			t.Fatal(err)
		}
		stops = append(stops, func() { r.halt(); r.ep.Close(); r.eng.Close() })
	}
	defer func() {
		for _, s := range stops {
			s()
		}
		goleak.VerifyNone(t)
	}()
	dialed := func(a, b int) bool {
		_, ok1 := seen.Load([2]int{a, b})
		_, ok2 := seen.Load([2]int{b, a})
		return ok1 || ok2
	}
	deadline := time.After(30 * time.Second)
	for p := 1; p < n; p++ {
		q := agree.TreeParent(p, AgreeRadix)
		for !dialed(p, q) {
			select {
			case <-more:
			case <-deadline:
				t.Fatalf("no warm-up between rank %d and its agreement parent %d", p, q)
			}
		}
	}
	if _, ok := seen.Load([2]int{9, 0}); !ok {
		t.Error("rank 9 did not dial its parent 0 (no overlay neighbour)")
	}
	if _, ok := seen.Load([2]int{17, 16}); ok {
		t.Error("rank 17 dialed its parent 16, which the overlay's warm-up dials")
	}
}
