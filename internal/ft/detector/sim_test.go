package detector

import (
	"container/heap"
	"flag"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/member"
)

// pid is the process rank.inc.
func pid(rank, inc int) member.ID { return member.ID{Rank: rank, Inc: inc} }

var (
	seedFlag      = flag.Int64("seed", -1, "replay a single simulator seed (see the failure message)")
	schedulesFlag = flag.Int("schedules", 1500, "number of seeded schedules TestSimulatedSchedules runs")
)

const ms = time.Millisecond

type evKind int

const (
	evTick   evKind = iota // rank's timer fires
	evMsg                  // heartbeat arrives
	evNotice               // rank learns that id failed (broadcast, launcher)
	evStop                 // rank stops (SIGSTOP, crash with no launcher notice)
	evCrash                // rank crashes and the launcher tells everyone
	evRefute               // the launcher refused rank's suspicion of id (id was alive)
)

type event struct {
	at   time.Duration
	seq  uint64
	kind evKind
	rank int
	gen  uint64
	msg  Msg
	id   member.ID
}

type evq []event

func (q evq) Len() int { return len(q) }
func (q evq) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q evq) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *evq) Push(x any)   { *q = append(*q, x.(event)) }
func (q *evq) Pop() (x any) { old := *q; x = old[len(old)-1]; *q = old[:len(old)-1]; return x }
func (s *sim) push(e event) { s.seq++; e.seq = s.seq; heap.Push(&s.q, e) }
func (s *sim) rnd(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return time.Duration(s.rng.Int63n(int64(max) + 1))
}

type suspicion struct {
	by  int
	who member.ID
	at  time.Duration
}

// sim drives n detectors over a simulated network with a fake clock. Every
// rank calls Tick exactly at Next (plus up to jitter); heartbeats take a
// random delay in [0, maxDelay]; a suspicion is spread to every other rank
// within noticeMax (the reliable broadcast) and, fail-stop, stops the
// suspect if it was not stopped already (which counts as a false suspicion).
// With refute set, the launcher is modelled: a suspicion of a running rank
// is refused within noticeMax (Refuted), and only stopped ones are declared.
type sim struct {
	cfg       Config
	n         int
	dets      []*Detector
	stopped   []time.Duration // -1: running
	gen       []uint64
	q         evq
	seq       uint64
	rng       *rand.Rand
	now       time.Duration
	maxDelay  time.Duration
	noticeMax time.Duration
	jitter    time.Duration
	susp      []suspicion
	falses    []suspicion
	msgs      int
	refute    bool
	refuted   int
}

func newSim(t testing.TB, n int, cfg Config, rng *rand.Rand, maxDelay, noticeMax time.Duration) *sim {
	s := &sim{cfg: cfg, n: n, rng: rng, maxDelay: maxDelay, noticeMax: noticeMax,
		dets: make([]*Detector, n), stopped: make([]time.Duration, n), gen: make([]uint64, n)}
	for r := 0; r < n; r++ {
		c := cfg
		c.N, c.Self = n, r
		d, err := New(c, 0)
		if err != nil {
			t.Fatal(err)
		}
		s.dets[r] = d
		s.stopped[r] = -1
		s.arm(r)
	}
	return s
}

func (s *sim) arm(r int) {
	if s.stopped[r] >= 0 {
		return
	}
	if t, ok := s.dets[r].Next(); ok {
		s.gen[r]++
		if t < s.now {
			t = s.now
		}
		s.push(event{at: t + s.rnd(s.jitter), kind: evTick, rank: r, gen: s.gen[r]})
	}
}

func (s *sim) send(ms []Msg) {
	for _, m := range ms {
		s.msgs++
		s.push(event{at: s.now + s.rnd(s.maxDelay), kind: evMsg, rank: m.To.Rank, msg: m})
	}
}

func (s *sim) notifyAll(except int, id member.ID) {
	for r := 0; r < s.n; r++ {
		if r != except && s.stopped[r] < 0 {
			s.push(event{at: s.now + s.rnd(s.noticeMax), kind: evNotice, rank: r, id: id})
		}
	}
}

func (s *sim) stopAt(r int, at time.Duration) { s.push(event{at: at, kind: evStop, rank: r}) }

func (s *sim) run(until time.Duration) {
	for s.q.Len() > 0 && s.q[0].at <= until {
		e := heap.Pop(&s.q).(event)
		s.now = e.at
		r := e.rank
		if s.stopped[r] >= 0 {
			continue
		}
		d := s.dets[r]
		switch e.kind {
		case evStop:
			s.stopped[r] = s.now
		case evCrash:
			s.stopped[r] = s.now
			s.notifyAll(r, d.id(r))
		case evTick:
			if e.gen != s.gen[r] {
				continue
			}
			out, sus := d.Tick(s.now)
			s.send(out)
			for _, p := range sus {
				if s.refute && s.stopped[p.Rank] < 0 {
					// The launcher sees it running: refused.
					s.push(event{at: s.now + s.rnd(s.noticeMax), kind: evRefute, rank: r, id: p})
					continue
				}
				sp := suspicion{by: r, who: p, at: s.now}
				s.susp = append(s.susp, sp)
				if s.stopped[p.Rank] < 0 {
					s.falses = append(s.falses, sp)
					s.stopped[p.Rank] = s.now // fail-stop enforcement
				}
				s.send(d.Failed(s.now, p)) // the runtime declares it
				s.notifyAll(r, p)
			}
			s.arm(r)
		case evRefute:
			s.refuted++
			d.Refuted(s.now, e.id)
			s.arm(r)
		case evMsg:
			d.Step(s.now, e.msg)
		case evNotice:
			s.send(d.Failed(s.now, e.id))
			s.arm(r)
		}
	}
	if until > s.now {
		s.now = until
	}
}

func (s *sim) suspicionsOf(rank int) []suspicion {
	var out []suspicion
	for _, sp := range s.susp {
		if sp.who.Rank == rank {
			out = append(out, sp)
		}
	}
	return out
}

// checkComplete: every live rank knows every stopped rank failed, and the
// live ranks form one ring.
func (s *sim) checkComplete() error {
	var live []int
	for r := 0; r < s.n; r++ {
		if s.stopped[r] < 0 {
			live = append(live, r)
		}
	}
	for _, r := range live {
		for p := 0; p < s.n; p++ {
			if s.stopped[p] >= 0 && !s.dets[r].IsFailed(member.ID{Rank: p}) {
				return fmt.Errorf("rank %d does not know that rank %d (stopped at %v) failed, at %v", r, p, s.stopped[p], s.now)
			}
		}
	}
	for i, r := range live {
		obs, ok := s.dets[r].Observer()
		if len(live) == 1 {
			if ok {
				return fmt.Errorf("lone rank %d still has observer %v", r, obs)
			}
			continue
		}
		if want := live[(i+1)%len(live)]; !ok || obs.Rank != want {
			return fmt.Errorf("rank %d: observer %v (ok=%v), want %d", r, obs, ok, want)
		}
	}
	return nil
}

func testCfg() Config {
	c := DefaultConfig()
	return c
}

func TestConfig(t *testing.T) {
	c := DefaultConfig()
	if c.Period != 100*ms || c.Timeout != time.Second || c.Validate() != nil {
		t.Fatalf("DefaultConfig = %+v, Validate %v", c, c.Validate())
	}
	bad := []func(*Config){
		func(c *Config) { c.N = 0 },
		func(c *Config) { c.Self = 4; c.N = 4 },
		func(c *Config) { c.Self = -1 },
		func(c *Config) { c.Incarnation = -1 },
		func(c *Config) { c.Period = 0 },
		func(c *Config) { c.Timeout = c.Period },
		func(c *Config) { c.Timeout = 50 * ms },
	}
	for i, f := range bad {
		c := DefaultConfig()
		c.N = 4
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: %+v validated", i, c)
		} else if _, err2 := New(c, 0); err2 == nil {
			t.Errorf("case %d: New accepted %+v", i, c)
		}
	}
	if _, err := New(Config{}, 0); err != ErrNoConfig {
		t.Errorf("New(zero) = %v", err)
	}
}

// A stopped rank is suspected by exactly its observer, between
// Timeout-Period and Timeout+Period after it stops, and everybody re-links.
func TestStoppedRankSuspectedByObserver(t *testing.T) {
	cfg := testCfg()
	for _, n := range []int{2, 3, 4, 7, 16} {
		for p := 0; p < n; p++ {
			for _, delay := range []time.Duration{0, 1 * ms, 50 * ms} {
				s := newSim(t, n, cfg, rand.New(rand.NewSource(int64(n*1000+p))), delay, 5*ms)
				stop := 3*time.Second + time.Duration(p)*7*ms
				s.stopAt(p, stop)
				s.run(stop + 5*time.Second)
				sus := s.suspicionsOf(p)
				if len(s.susp) != 1 || len(sus) != 1 {
					t.Fatalf("n=%d stop %d delay %v: suspicions %+v, want exactly one", n, p, delay, s.susp)
				}
				if want := (p + 1) % n; sus[0].by != want {
					t.Fatalf("n=%d: rank %d suspected by %d, want its observer %d", n, p, sus[0].by, want)
				}
				lat := sus[0].at - stop
				if lat < cfg.Timeout-cfg.Period || lat > cfg.Timeout+cfg.Period {
					t.Fatalf("n=%d stop %d: detection latency %v outside [%v, %v]", n, p, lat, cfg.Timeout-cfg.Period, cfg.Timeout+cfg.Period)
				}
				if delay <= 1*ms && lat > cfg.Timeout+cfg.Timeout/10 {
					t.Fatalf("latency %v exceeds Timeout+10%%", lat)
				}
				if err := s.checkComplete(); err != nil {
					t.Fatalf("n=%d stop %d: %v", n, p, err)
				}
			}
		}
	}
}

func TestRingOfOne(t *testing.T) {
	c := testCfg()
	d, err := New(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Next(); ok {
		t.Fatal("ring of one has a deadline")
	}
	for now := time.Duration(0); now < 10*time.Second; now += 100 * ms {
		if m, sus := d.Tick(now); len(m)+len(sus) != 0 {
			t.Fatalf("ring of one produced %v %v", m, sus)
		}
	}
	if _, ok := d.Observer(); ok {
		t.Fatal("observer in ring of one")
	}
}

// A rank that never sends a heartbeat is suspected within Timeout+Period of
// start-up (no long start-up grace).
func TestStartupSilentRank(t *testing.T) {
	cfg := testCfg()
	for _, n := range []int{2, 3, 9} {
		s := newSim(t, n, cfg, rand.New(rand.NewSource(1)), 1*ms, 1*ms)
		s.stopAt(1, 0) // before its first Tick
		s.run(10 * time.Second)
		sus := s.suspicionsOf(1)
		if len(sus) != 1 || sus[0].by != 2%n || sus[0].at > cfg.Timeout+cfg.Period || sus[0].at < cfg.Timeout {
			t.Fatalf("n=%d: suspicions %+v, want one by %d within %v", n, s.susp, 2%n, cfg.Timeout+cfg.Period)
		}
		if len(s.falses) != 0 {
			t.Fatalf("false suspicions %+v", s.falses)
		}
	}
}

// Several consecutive ranks stopping together are detected one after the
// other by the first live rank after them, each within Timeout+Period of the
// previous re-link.
func TestConsecutiveStops(t *testing.T) {
	cfg := testCfg()
	for _, tc := range []struct{ n, first, k int }{{8, 2, 3}, {5, 4, 2}, {3, 0, 2}, {16, 15, 5}} {
		s := newSim(t, tc.n, cfg, rand.New(rand.NewSource(2)), 2*ms, 2*ms)
		stop := 2 * time.Second
		for i := 0; i < tc.k; i++ {
			s.stopAt((tc.first+i)%tc.n, stop)
		}
		s.run(stop + time.Duration(tc.k+2)*(cfg.Timeout+cfg.Period))
		if len(s.falses) != 0 {
			t.Fatalf("%+v: false suspicions %+v", tc, s.falses)
		}
		obs := (tc.first + tc.k) % tc.n
		for i := 0; i < tc.k; i++ {
			p := (tc.first + tc.k - 1 - i) % tc.n
			sus := s.suspicionsOf(p)
			if len(sus) != 1 || sus[0].by != obs {
				t.Fatalf("%+v: suspicions of %d: %+v, want one by %d", tc, p, sus, obs)
			}
			if bound := stop + time.Duration(i+1)*(cfg.Timeout+cfg.Period); sus[0].at > bound {
				t.Fatalf("%+v: %d suspected at %v, after %v", tc, p, sus[0].at, bound)
			}
		}
		if err := s.checkComplete(); err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
	}
}

// Everyone but one rank fails, by stops and by launcher-announced crashes.
func TestAllButOne(t *testing.T) {
	cfg := testCfg()
	for _, n := range []int{2, 3, 6, 12} {
		for survivor := 0; survivor < n; survivor++ {
			s := newSim(t, n, cfg, rand.New(rand.NewSource(int64(n+survivor))), 3*ms, 3*ms)
			k := 0
			for r := 0; r < n; r++ {
				if r == survivor {
					continue
				}
				at := time.Second + time.Duration(k)*400*ms
				if r%2 == 0 {
					s.push(event{at: at, kind: evCrash, rank: r})
				} else {
					s.stopAt(r, at)
				}
				k++
			}
			s.run(time.Second + time.Duration(n+2)*(cfg.Timeout+cfg.Period))
			if len(s.falses) != 0 {
				t.Fatalf("false suspicions %+v", s.falses)
			}
			if err := s.checkComplete(); err != nil {
				t.Fatalf("n=%d survivor %d: %v", n, survivor, err)
			}
			if _, ok := s.dets[survivor].Next(); ok {
				t.Fatalf("lone survivor still has a deadline")
			}
		}
	}
}

// A crash announced by the launcher re-links the ring without any
// suspicion, and the new link gets its grace.
func TestRelinkOnNotice(t *testing.T) {
	cfg := testCfg()
	s := newSim(t, 6, cfg, rand.New(rand.NewSource(3)), 5*ms, 40*ms)
	s.push(event{at: 2 * time.Second, kind: evCrash, rank: 3})
	s.push(event{at: 4 * time.Second, kind: evCrash, rank: 4})
	s.run(10 * time.Second)
	if len(s.susp) != 0 {
		t.Fatalf("suspicions %+v", s.susp)
	}
	if o, _ := s.dets[5].Observed(); o.Rank != 2 {
		t.Fatalf("rank 5 observes %v, want 2", o)
	}
	if o, _ := s.dets[2].Observer(); o.Rank != 5 {
		t.Fatalf("rank 2 sends to %v, want 5", o)
	}
	// Then 2 stops: 5 must catch it.
	s.stopAt(2, 11*time.Second)
	s.run(14 * time.Second)
	if sus := s.suspicionsOf(2); len(sus) != 1 || sus[0].by != 5 || sus[0].at > 11*time.Second+cfg.Timeout+cfg.Period {
		t.Fatalf("suspicions %+v", s.susp)
	}
	if err := s.checkComplete(); err != nil {
		t.Fatal(err)
	}
}

func TestIncarnations(t *testing.T) {
	c := testCfg()
	c.N, c.Self = 3, 2 // observes rank 1
	d, _ := New(c, 0)
	hb := func(now time.Duration, inc int) { d.Step(now, Msg{From: pid(1, inc), To: pid(2, 0)}) }
	// A heartbeat from a newer, unannounced incarnation does not count.
	hb(900*ms, 1)
	if _, sus := d.Tick(c.Timeout); len(sus) != 1 || sus[0] != pid(1, 0) {
		t.Fatalf("want suspicion of 1.0, got %v", sus)
	}
	if d.IsFailed(pid(1, 0)) || !d.Suspecting() {
		t.Fatal("a suspicion is a failure before the runtime's verdict")
	}
	if _, sus := d.Tick(10 * c.Timeout); len(sus) != 0 {
		t.Fatalf("suspected again while pending: %v", sus)
	}
	d.Failed(c.Timeout, pid(1, 0)) // the runtime declared it
	if !d.IsFailed(pid(1, 0)) || d.IsFailed(pid(1, 1)) || d.Epoch() != 1 {
		t.Fatal("failed set wrong")
	}
	if o, _ := d.Observed(); o.Rank != 0 {
		t.Fatalf("observes %v after suspicion", o)
	}
	// Failed is monotone: repeated or older notices change nothing.
	if m := d.Failed(c.Timeout, pid(1, 0)); m != nil || d.Epoch() != 1 {
		t.Fatal("duplicate notice changed state")
	}
	// A failed incarnation cannot come back.
	if d.Joined(c.Timeout, pid(1, 0)); d.view.Live(1) {
		t.Fatal("failed incarnation re-joined")
	}
	// Rank 1 respawned as incarnation 1: it is observed again with a fresh grace.
	t0 := 2 * time.Second
	d.Joined(t0, pid(1, 1))
	if o, _ := d.Observed(); o != pid(1, 1) {
		t.Fatalf("observes %v after join", o)
	}
	hb(t0+500*ms, 0) // stale incarnation: ignored
	if _, sus := d.Tick(t0 + c.Timeout - 1); len(sus) != 0 {
		t.Fatal("suspected during grace")
	}
	hb(t0+c.Timeout-1, 1) // the new incarnation's heartbeat counts
	if _, sus := d.Tick(t0 + c.Timeout + 500*ms); len(sus) != 0 {
		t.Fatal("suspected although the new incarnation sent")
	}
	// A notice about incarnation 2 (a respawn we missed, which then died)
	// fails 1.1 too.
	d.Failed(t0+c.Timeout+600*ms, pid(1, 2))
	if !d.IsFailed(pid(1, 1)) || d.Epoch() != 3 {
		t.Fatalf("epoch %d", d.Epoch())
	}
	if d.Joined(t0+2*c.Timeout, pid(1, 2)); d.view.Live(1) {
		t.Fatal("failed incarnation 2 re-joined")
	}
	// Being declared failed silences the detector.
	d.Failed(t0+3*c.Timeout, pid(2, 0))
	if m, sus := d.Tick(t0 + 10*c.Timeout); !d.SelfFailed() || m != nil || sus != nil {
		t.Fatal("declared-failed detector still active")
	}
	if _, ok := d.Next(); ok {
		t.Fatal("declared-failed detector has a deadline")
	}
}

// Epoch hint: a live sender that knows more failures is reported.
func TestEpochHint(t *testing.T) {
	c := testCfg()
	c.N, c.Self = 4, 0
	d, _ := New(c, 0)
	if ahead := d.Step(10*ms, Msg{From: pid(3, 0), To: pid(0, 0), Epoch: 1}); !ahead {
		t.Fatal("ahead not reported")
	}
	d.Failed(20*ms, pid(2, 0))
	if ahead := d.Step(30*ms, Msg{From: pid(3, 0), To: pid(0, 0), Epoch: 1}); ahead {
		t.Fatal("ahead reported for equal epoch")
	}
}

// Thousands of seeded schedules: random ring sizes, timing parameters,
// heartbeat delays below Timeout-Period, stops (spaced out or in bursts) and
// launcher-announced crashes. Checks accuracy (no live process is ever
// suspected), completeness (at the end every survivor knows every failure
// and the survivors form one ring) and, for spaced-out stops, latency within
// Timeout+maxDelay by exactly the observer.
func TestSimulatedSchedules(t *testing.T) {
	seeds := *schedulesFlag
	if testing.Short() {
		seeds = 300
	}
	first := int64(1)
	if *seedFlag >= 0 {
		first, seeds = *seedFlag, 1
	}
	start := time.Now()
	var msgs int
	for seed := first; seed < first+int64(seeds); seed++ {
		m, err := runSchedule(t, seed)
		msgs += m
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./internal/ft/detector -run TestSimulatedSchedules -seed=%d -v", seed, err, seed)
		}
	}
	t.Logf("%d schedules, %d heartbeats, %v", seeds, msgs, time.Since(start))
}

func runSchedule(t testing.TB, seed int64) (int, error) {
	rng := rand.New(rand.NewSource(seed))
	n := 1 + rng.Intn(24)
	cfg := DefaultConfig()
	cfg.Period = time.Duration(5+rng.Intn(96)) * ms
	cfg.Timeout = cfg.Period + time.Duration(1+rng.Intn(int(8*cfg.Period/ms)))*ms
	jitter := time.Duration(0)
	if rng.Intn(2) == 0 {
		jitter = time.Duration(rng.Int63n(int64((cfg.Timeout - cfg.Period) / 4)))
	}
	// Delays strictly below Timeout-Period-jitter; notices within the rest.
	slack := cfg.Timeout - cfg.Period - jitter
	maxDelay := time.Duration(rng.Int63n(int64(slack)))
	noticeMax := time.Duration(rng.Int63n(int64(cfg.Timeout-maxDelay-jitter))) / 2
	s := newSim(t, n, cfg, rng, maxDelay, noticeMax)
	s.jitter = jitter

	burst := rng.Intn(3) == 0
	k := 0
	if n > 1 {
		k = rng.Intn(n) // up to everyone but one
		if !burst && k > 4 {
			k = rng.Intn(5)
		}
	}
	victims := rng.Perm(n)[:k]
	settle := 2*cfg.Timeout + cfg.Period + maxDelay + noticeMax + jitter
	at := time.Duration(rng.Int63n(int64(3 * cfg.Timeout)))
	type stopInfo struct {
		rank  int
		at    time.Duration
		crash bool
	}
	var stops []stopInfo
	for _, v := range victims {
		crash := rng.Intn(4) == 0
		if burst {
			at += time.Duration(rng.Int63n(int64(cfg.Period)))
		} else {
			at += settle + time.Duration(rng.Int63n(int64(cfg.Timeout)))
		}
		stops = append(stops, stopInfo{v, at, crash})
		if crash {
			s.push(event{at: at, kind: evCrash, rank: v})
		} else {
			s.stopAt(v, at)
		}
	}
	end := at + time.Duration(k+2)*settle
	s.run(end)
	if len(s.falses) != 0 {
		return s.msgs, fmt.Errorf("n=%d cfg=%v/%v delay<=%v: false suspicions %+v", n, cfg.Period, cfg.Timeout, maxDelay, s.falses)
	}
	if err := s.checkComplete(); err != nil {
		return s.msgs, fmt.Errorf("n=%d burst=%v stops=%+v: %v", n, burst, stops, err)
	}
	if !burst {
		for _, st := range stops {
			sus := s.suspicionsOf(st.rank)
			if st.crash {
				continue // the launcher notice may beat the timeout
			}
			if len(sus) != 1 {
				return s.msgs, fmt.Errorf("rank %d stopped at %v: suspicions %+v", st.rank, st.at, sus)
			}
			lat := sus[0].at - st.at
			if lat < cfg.Timeout-cfg.Period-jitter || lat > cfg.Timeout+maxDelay+jitter {
				return s.msgs, fmt.Errorf("rank %d: latency %v outside [%v, %v]", st.rank, lat, cfg.Timeout-cfg.Period-jitter, cfg.Timeout+maxDelay+jitter)
			}
		}
	}
	return s.msgs, nil
}

// A refuted suspicion (the launcher saw the process alive) leaves the
// suspect observed, with a fresh and doubled grace, until a heartbeat from
// it arrives; a verdict about anything else changes nothing.
func TestRefutedSuspicion(t *testing.T) {
	c := testCfg()
	c.N, c.Self = 3, 2 // observes rank 1
	d, _ := New(c, 0)
	if _, sus := d.Tick(c.Timeout); len(sus) != 1 || sus[0] != (pid(1, 0)) {
		t.Fatalf("want suspicion of 1.0, got %v", sus)
	}
	if next, ok := d.Next(); !ok || next > c.Timeout+c.Period {
		t.Fatalf("Next %v %v: heartbeats must go on while the suspicion is pending", next, ok)
	}
	d.Refuted(c.Timeout, pid(0, 0)) // not the suspect
	d.Refuted(c.Timeout, pid(1, 1)) // not its incarnation
	if !d.Suspecting() {
		t.Fatal("a verdict about another process ended the suspicion")
	}
	t0 := c.Timeout + 300*ms
	d.Refuted(t0, pid(1, 0))
	if d.Suspecting() || d.IsFailed(pid(1, 0)) || d.Epoch() != 0 {
		t.Fatal("refuted suspect counted as failed")
	}
	if o, _ := d.Observed(); o != (pid(1, 0)) {
		t.Fatalf("observes %v after a refutation, want 1.0", o)
	}
	// The grace doubles with every refutation, up to 8 Timeouts.
	t1 := t0
	for i, g := range []time.Duration{2, 4, 8, 8, 8} {
		g *= c.Timeout
		if _, sus := d.Tick(t1 + g - 1); len(sus) != 0 {
			t.Fatalf("refutation %d: suspected within the grace %v", i+1, g)
		}
		if _, sus := d.Tick(t1 + g); len(sus) != 1 {
			t.Fatalf("refutation %d: no suspicion after the grace %v", i+1, g)
		}
		t1 += g
		d.Refuted(t1, pid(1, 0))
	}
	// A heartbeat brings the timeout back to one Timeout.
	d.Step(t1+ms, Msg{From: pid(1, 0), To: pid(2, 0)})
	if _, sus := d.Tick(t1 + ms + c.Timeout); len(sus) != 1 {
		t.Fatal("timeout not back to one Timeout after a heartbeat")
	}
	// Confirmed: failed, and the ring re-links around it.
	d.Failed(t1+ms+c.Timeout, pid(1, 0))
	if !d.IsFailed(pid(1, 0)) || d.Epoch() != 1 {
		t.Fatal("declared suspect not failed")
	}
	if o, _ := d.Observed(); o.Rank != 0 || d.Suspecting() {
		t.Fatalf("observes %v (pending %v) after the failure", o, d.Suspecting())
	}
}

// Seeded schedules of a starved host: heartbeats take up to several
// Timeouts, the launcher refutes every suspicion of a running rank, and
// ranks stop. No running rank is ever declared failed, every stopped one
// is, and the survivors end in one ring.
func TestStarvedSchedules(t *testing.T) {
	seeds := *schedulesFlag / 5 // each is about 5 times longer than runSchedule's
	if testing.Short() {
		seeds = 100
	}
	first := int64(1)
	if *seedFlag >= 0 {
		first, seeds = *seedFlag, 1
	}
	refuted := 0
	for seed := first; seed < first+int64(seeds); seed++ {
		r, err := runStarved(t, seed)
		refuted += r
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./internal/ft/detector -run TestStarvedSchedules -seed=%d -v", seed, err, seed)
		}
	}
	if seeds > 50 && refuted == 0 {
		t.Fatal("no suspicion was ever refuted: the schedules do not starve")
	}
	t.Logf("%d schedules, %d refuted suspicions", seeds, refuted)
}

func runStarved(t testing.TB, seed int64) (int, error) {
	rng := rand.New(rand.NewSource(seed))
	n := 2 + rng.Intn(23)
	cfg := DefaultConfig()
	cfg.Period = time.Duration(5+rng.Intn(96)) * ms
	cfg.Timeout = cfg.Period + time.Duration(1+rng.Intn(int(8*cfg.Period/ms)))*ms
	maxDelay := cfg.Timeout + time.Duration(rng.Int63n(int64(3*cfg.Timeout)))
	noticeMax := time.Duration(rng.Int63n(int64(cfg.Timeout)))
	s := newSim(t, n, cfg, rng, maxDelay, noticeMax)
	s.refute = true
	s.jitter = time.Duration(rng.Int63n(int64(cfg.Timeout)))
	k := rng.Intn(n) // up to everyone but one
	victims := rng.Perm(n)[:k]
	settle := (maxPatience+2)*cfg.Timeout + cfg.Period + maxDelay + noticeMax + s.jitter
	at := time.Duration(rng.Int63n(int64(3 * cfg.Timeout)))
	for _, v := range victims {
		at += time.Duration(rng.Int63n(int64(settle)))
		s.stopAt(v, at)
	}
	s.run(at + time.Duration(k+2)*settle)
	if len(s.falses) != 0 {
		return s.refuted, fmt.Errorf("n=%d cfg=%v/%v delay<=%v: running ranks declared failed %+v", n, cfg.Period, cfg.Timeout, maxDelay, s.falses)
	}
	if err := s.checkComplete(); err != nil {
		return s.refuted, fmt.Errorf("n=%d cfg=%v/%v delay<=%v victims %v: %v", n, cfg.Period, cfg.Timeout, maxDelay, victims, err)
	}
	return s.refuted, nil
}
