package policy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// The relayed control protocol, simulated (issue 24: the launcher head is
// a star). Not wired into the launcher yet: this is the model the
// simulator proves before the shell is changed (docs/benchmarks.md,
// "The launcher head: relaying the collective phases through the agents").
//
// Each host's agent holds its ranks' control connections and multiplexes
// them onto its one connection to the head. Requests of the collective
// phases (hello, the start-up fence, a Reinit epoch's rejoin) are held at
// the agent until every local process that will send the same one has
// sent it (or is gone), then go up as one frame; the head feeds them to
// the policy one by one, unchanged, and sends the replies and
// notifications of one step to each agent as one frame, which the agent
// fans out. Any other request goes up at once. A held request whose
// connection closes is dropped (the rank died before its request counted,
// as if it had died before sending it); a connection whose hello never
// reached the head closes unseen by it. The agent also flushes what it
// holds after a while (a timer; here a move the scheduler may pick at any
// time): a stopped process, which only the head's Stall look can find,
// would otherwise hold its host's part of a fence forever while the head,
// seeing no waiter, never looks. The policy (Machine) is the same: these
// schedules check that holding, batching and dropping keep every one of
// its properties (checkEnd), and that the head's frames per phase are one
// a host each way (TestRelayedHeadMessages).

// relayKey names a collective request: the op and its instance.
type relayKey struct {
	op  string // ctlwire.OpHello, OpFence or OpRejoin
	seq int    // fence: the rank's fence number; rejoin: the epoch; hello: 0
}

type heldReq struct {
	p   *sproc
	ev  Event
	key relayKey
}

// relayState is the agents' part of a relayed simulation, and the head's
// frame counts.
type relayState struct {
	on   bool
	held map[int][]heldReq // host -> requests held at its agent, in arrival order
	// hosts that a frame of the current head step goes to (nil: no step
	// open; a message outside one is a frame of its own).
	hosts map[int]bool

	reqs, upFrames     int // requests the ranks sent; frames the head received for them
	msgs, downFrames   int // replies and notifications; frames the head sent for them
	flushes, dropped   int // timer flushes; held requests dropped with their connection
	maxBatch, batches2 int // the largest batch; batches of 2 or more
}

func (r *relayState) begin() { r.hosts = map[int]bool{} }

func (r *relayState) end() {
	if r.on {
		r.downFrames += len(r.hosts)
	}
	r.hosts = nil
}

// target counts a reply or notification to p.
func (r *relayState) target(p *sproc) {
	if p == nil {
		return
	}
	r.msgs++
	if !r.on {
		r.downFrames++
		return
	}
	if r.hosts == nil {
		r.downFrames++
		return
	}
	r.hosts[p.host] = true
}

// closed: p's connection to its agent closed. Its held requests are
// dropped; it reports whether the head knew the connection.
func (r *relayState) closed(p *sproc) bool {
	q := r.held[p.host][:0]
	for _, h := range r.held[p.host] {
		if h.p == p {
			r.dropped++
			continue
		}
		q = append(q, h)
	}
	r.held[p.host] = q
	return p.fwdHello
}

func (r *relayState) account(st *stats) {
	st.relayReqs += r.reqs
	st.relayUp += r.upFrames
	st.relayMsgs += r.msgs
	st.relayDown += r.downFrames
	st.relayFlushes += r.flushes
	st.relayDropped += r.dropped
	st.relayMaxBatch = max(st.relayMaxBatch, r.maxBatch)
	st.relayBatches2 += r.batches2
}

// request: p sends a collective request (ev) on its control connection.
func (s *sim) request(p *sproc, ev Event) {
	s.relay.reqs++
	if !s.relay.on {
		if _, ok := ev.(Hello); ok {
			p.fwdHello = true
		}
		s.relay.upFrames++
		s.feed(ev)
		return
	}
	var k relayKey
	switch e := ev.(type) {
	case Hello:
		k = relayKey{op: ctlwire.OpHello}
	case Fence:
		k = relayKey{op: ctlwire.OpFence, seq: p.fencesSent}
	case Rejoin:
		k = relayKey{op: ctlwire.OpRejoin, seq: e.Epoch}
	default:
		s.fail("request %T is not collective", ev)
		return
	}
	if s.relay.held == nil {
		s.relay.held = map[int][]heldReq{}
	}
	s.relay.held[p.host] = append(s.relay.held[p.host], heldReq{p, ev, k})
}

// wants: the agent of q's host expects q to send request k (it has not
// sent it, and will unless it dies). What an agent can know: what q sent,
// its incarnation, whether it said hello, waits as a spare, left Reinit
// or finalizes.
func (s *sim) wants(q *sproc, k relayKey) bool {
	if q.state != stRunning && q.state != stStopped {
		return false // gone: its connection closes at once
	}
	switch k.op {
	case ctlwire.OpHello:
		return q.conn == 0
	case ctlwire.OpFence:
		return q.inc == 0 && q.fencesSent < k.seq // a respawned process rejoins instead
	case ctlwire.OpRejoin:
		return s.mode == ModeReinit && q.rejoinSent < k.seq && !q.spare && !q.left && !q.finSent && !q.child &&
			(q.helloOK || q.conn == 0 && q.inc > 0)
	}
	return false
}

// release forwards every batch whose host has no process left that its
// agent waits for.
func (s *sim) release() {
	if !s.relay.on {
		return
	}
	for h := 0; h < s.nhosts; h++ {
		for {
			var ready *relayKey
			for _, hr := range s.relay.held[h] {
				k := hr.key
				if !slices.ContainsFunc(s.procs, func(q *sproc) bool { return q.host == h && s.wants(q, k) }) {
					ready = &k
					break
				}
			}
			if ready == nil {
				break
			}
			s.forward(h, func(k relayKey) bool { return k == *ready })
		}
	}
}

// forward sends the held requests of host h that sel selects to the head
// as one frame; the head feeds them to the policy in order.
func (s *sim) forward(h int, sel func(relayKey) bool) {
	var batch, rest []heldReq
	for _, hr := range s.relay.held[h] {
		if sel(hr.key) {
			batch = append(batch, hr)
		} else {
			rest = append(rest, hr)
		}
	}
	if len(batch) == 0 {
		return
	}
	s.relay.held[h] = rest
	s.relay.upFrames++
	s.relay.maxBatch = max(s.relay.maxBatch, len(batch))
	if len(batch) > 1 {
		s.relay.batches2++
	}
	own := s.relay.hosts == nil // a step of its own, else part of the current move's
	if own {
		s.relay.begin()
	}
	for _, hr := range batch {
		if !hr.p.connOpen || hr.p.state == stReaped {
			s.fail("rank %d.%d's %s forwarded after its connection closed", hr.p.rank, hr.p.inc, hr.key.op)
			continue
		}
		if _, ok := hr.ev.(Hello); ok {
			hr.p.fwdHello = true
		} else if !hr.p.fwdHello {
			s.fail("rank %d.%d's %s forwarded before its hello", hr.p.rank, hr.p.inc, hr.key.op)
		}
		s.feed(hr.ev)
	}
	if own {
		s.relay.end()
	}
}

// flushMoves adds each agent's timer: it forwards all it holds.
func (s *sim) flushMoves(add func(int, func())) {
	if !s.relay.on {
		return
	}
	for h := 0; h < s.nhosts; h++ {
		if len(s.relay.held[h]) > 0 {
			add(1, func() {
				s.relay.flushes++
				s.forward(h, func(relayKey) bool { return true })
			})
		}
	}
}

// TestSimulateRelayed plays the simulator's schedules (failures, stops,
// suspicions, kills inside fences, host losses, spares, spawns, Reinit
// epochs) through the relayed protocol: the policy must keep every
// property it has behind the star (checkEnd), no request may reach the
// head after its connection closed or before its hello, and nothing may
// stay held at the end.
func TestSimulateRelayed(t *testing.T) {
	st := simulate(t, true)
	if *flagSeed >= 0 {
		return // one schedule: the counts below are over many
	}
	if st.relayDropped == 0 || st.relayBatches2 == 0 || st.relayFlushes == 0 {
		t.Errorf("the schedules never dropped a held request (%d), batched two (%d) or flushed (%d): the relay is not exercised",
			st.relayDropped, st.relayBatches2, st.relayFlushes)
	}
	if st.relayUp >= st.relayReqs || st.relayDown >= st.relayMsgs {
		t.Errorf("%d frames up for %d requests, %d down for %d replies: no aggregation", st.relayUp, st.relayReqs, st.relayDown, st.relayMsgs)
	}
}

// headFrames counts what the head exchanges for one phase: every process's
// request (evs[h]: those of host h's processes, in order), fed to the
// policy, and the replies and notifications of those steps. Behind the
// star a request and a reply are a message each on a rank's connection;
// relayed, a host's requests are one frame and the messages of one host's
// frame to one host are one frame.
type headFrames struct {
	reqs, upFrames, msgs, downFrames int
}

func (f *headFrames) add(g headFrames) {
	f.reqs += g.reqs
	f.upFrames += g.upFrames
	f.msgs += g.msgs
	f.downFrames += g.downFrames
}

func playPhase(t *testing.T, m *Machine, hostOf func(Conn) int, evs [][]Event) headFrames {
	t.Helper()
	var f headFrames
	for _, hev := range evs {
		if len(hev) == 0 {
			continue
		}
		f.upFrames++
		to := map[int]bool{}
		for _, ev := range hev {
			f.reqs++
			for _, a := range m.Step(ev) {
				switch a.Kind {
				case Reply:
					if a.Msg.Error != "" {
						t.Fatalf("%T: error reply %q", ev, a.Msg.Error)
					}
					f.msgs++
					to[hostOf(a.Conn)] = true
				case Notify:
					f.msgs += len(a.To)
					for _, c := range a.To {
						to[hostOf(c)] = true
					}
				case TearDown, Done:
					t.Fatalf("%T: the job ended (%v)", ev, a)
				}
			}
		}
		f.downFrames += len(to)
	}
	return f
}

// relayedCounts plays a Reinit job of n ranks, perHost a host, through its
// start-up (hello, the lazy fence) and one epoch change with the failed
// ranks (the agents' exit reports, the epoch's notifications, the
// respawned ranks' hellos, every rank's rejoin).
func relayedCounts(t *testing.T, n, perHost int, failed []int) (hello, fence, epoch headFrames) {
	t.Helper()
	nh := (n + perHost - 1) / perHost
	hosts := make([]Host, nh)
	for h := range hosts {
		hosts[h] = Host{Name: fmt.Sprint("h", h), Slots: perHost}
	}
	place := make([]int, n)
	for r := range place {
		place[r] = r / perHost
	}
	m, err := New(Config{Job: "job", Size: n, Mode: ModeReinit, Hosts: hosts, Place: place})
	if err != nil {
		t.Fatal(err)
	}
	m.EnableRespawn(1 << 30)
	conn := make([]Conn, n)
	hostOfConn := map[Conn]int{}
	hostOf := func(c Conn) int { return hostOfConn[c] }
	byHost := func(ranks []int, ev func(r int) Event) [][]Event {
		evs := make([][]Event, nh)
		for _, r := range ranks {
			evs[place[r]] = append(evs[place[r]], ev(r))
		}
		return evs
	}
	all := make([]int, n)
	for r := range all {
		all[r] = r
		conn[r] = Conn(r + 1)
		hostOfConn[conn[r]] = place[r]
	}
	hello = playPhase(t, m, hostOf, byHost(all, func(r int) Event {
		return Hello{Conn: conn[r], ID: 1, Job: "job", Rank: r, Pid: 1000 + r}
	}))
	fence = playPhase(t, m, hostOf, byHost(all, func(r int) Event {
		return Fence{Conn: conn[r], ID: 2, KV: map[string]string{ctlwire.EndpointKey(r): "ep"},
			Facts: Facts{Lazy: true, Host: hosts[place[r]].Name, Cores: perHost}}
	}))
	playPhase(t, m, hostOf, byHost(all, func(r int) Event {
		return ReinitActive{Conn: conn[r], ID: 3, Kind: ctlwire.ReinitEnter}
	}))
	// The failures: each agent's exit report (a frame of the agent
	// protocol, not counted as a request), the notifications counted.
	var respawned []int
	for _, r := range failed {
		to := map[int]bool{}
		for _, a := range m.Step(Exited{Exit: Exit{Rank: r, Pid: 1000 + r, Signal: syscall.SIGKILL}}) {
			switch a.Kind {
			case Notify:
				epoch.msgs += len(a.To)
				for _, c := range a.To {
					to[hostOf(c)] = true
				}
			case Respawn:
				respawned = append(respawned, a.Rank)
			case TearDown, Done:
				t.Fatalf("failure of %d: the job ended (%v)", r, a)
			}
		}
		epoch.downFrames += len(to)
	}
	if len(respawned) != len(failed) {
		t.Fatalf("%d respawns for %d failures", len(respawned), len(failed))
	}
	for i, r := range respawned {
		conn[r] = Conn(n + 1 + i)
		hostOfConn[conn[r]] = place[r]
	}
	epoch.add(playPhase(t, m, hostOf, byHost(respawned, func(r int) Event {
		return Hello{Conn: conn[r], ID: 1, Job: "job", Rank: r, Incarnation: 1, Pid: 5000000 + r}
	})))
	e := len(failed)
	epoch.add(playPhase(t, m, hostOf, byHost(all, func(r int) Event {
		return Rejoin{Conn: conn[r], ID: 4, Epoch: e, KV: map[string]string{ctlwire.EpochEndpointKey(e, r): "ep"},
			Facts: Facts{Lazy: true, Host: hosts[place[r]].Name, Cores: perHost, Inc: btoi(slices.Contains(failed, r))}}
	})))
	return hello, fence, epoch
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRelayedHeadMessages counts what the head exchanges at start-up and
// at a Reinit epoch behind the star and relayed (the model above), at
// n = 1,024 over 16 hosts (100,000 over 1,000 with FTMPI_GROWTH_FULL=1,
// the figures of docs/benchmarks.md): relayed, the hellos and the fence
// are one frame a host each way, and an epoch with k failures k+1 frames a
// host down (each failure's notification, the rejoin answers) and 1 up
// (the rejoins) plus one each way a respawned rank's host; behind the star
// every request and reply is a message (2n a phase, 3n + 2k an epoch).
func TestRelayedHeadMessages(t *testing.T) {
	cases := []struct{ n, perHost int }{{1024, 64}}
	if os.Getenv("FTMPI_GROWTH_FULL") == "1" {
		cases = append(cases, struct{ n, perHost int }{100000, 100})
	}
	for _, c := range cases {
		nh := c.n / c.perHost
		ks := []int{1, c.n / 100}
		if c.n > 16384 {
			ks = ks[:1] // 1% at 10^5: each failure's notice and look at every survivor, 10^8 steps of the policy
		}
		for _, k := range ks {
			failed := make([]int, k)
			for i := range failed {
				failed[i] = (i*c.n/k + c.n/2) % c.n // spread over the hosts
			}
			hello, fence, epoch := relayedCounts(t, c.n, c.perHost, failed)
			t.Logf("n=%d hosts=%d k=%d: hello %+v, fence %+v, epoch %+v", c.n, nh, k, hello, fence, epoch)
			for _, ph := range []struct {
				name string
				f    headFrames
			}{{"hello", hello}, {"fence", fence}} {
				if ph.f.reqs != c.n || ph.f.msgs != c.n || ph.f.upFrames != nh || ph.f.downFrames != nh {
					t.Errorf("n=%d %s: %+v; want n requests and replies (the star), one frame a host each way relayed", c.n, ph.name, ph.f)
				}
			}
			// Star: k epochs' notifications to the survivors, k hellos and
			// answers, n rejoins and answers. Relayed: at most a frame a
			// host for each notification, the rejoins and their answers,
			// and a respawned rank's hello and answer.
			if want := k*(c.n-1) + 2*k + 2*c.n; epoch.reqs+epoch.msgs > want || epoch.reqs+epoch.msgs < 3*c.n-k {
				t.Errorf("n=%d k=%d: the star's epoch is %d messages, want between 3n-k and %d", c.n, k, epoch.reqs+epoch.msgs, want)
			}
			if max := (k+2)*nh + 2*min(k, nh); epoch.upFrames+epoch.downFrames > max {
				t.Errorf("n=%d k=%d: a relayed epoch is %d frames at the head, want at most (k+2)·hosts + 2·min(k, hosts) = %d", c.n, k, epoch.upFrames+epoch.downFrames, max)
			}
		}
	}
}

// TestRelayedStoppedRankNeedsTheTimer: why an agent flushes what it holds
// after a while. Both ranks of a one-host job said hello; rank 0 entered
// the start-up fence and rank 1 was stopped before it did (before any
// heartbeat runs, so no rank can suspect it). The agent holds rank 0's
// fence for rank 1: the head sees no waiter, so its Stall looks at nobody
// and the job would hang until --timeout. Once the agent's timer forwards
// the fence, the head has a waiter, its Stall finds rank 1 stopped and
// kills it, and the fence completes without it.
func TestRelayedStoppedRankNeedsTheTimer(t *testing.T) {
	var st stats
	m, err := New(Config{Job: "job", Size: 2, Mode: ModeContinue, Hosts: []Host{{Name: "h0", Slots: 2}}, Place: []int{0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	s := &sim{st: &st, rng: rand.New(rand.NewPCG(1, 2)), n: 2, mode: ModeContinue, m: m, cur: map[int]*sproc{}, conns: map[Conn]*sproc{},
		suspected: map[[2]int]bool{}, spawnOK: -1, nhosts: 1, lostHost: make([]bool, 1), taken: map[int]bool{}}
	s.relay.on = true
	move := func(f func()) { s.pick([]choice{{1, f}}) }
	p0, p1 := s.newProc(0, 0, false, 0), s.newProc(1, 0, false, 0)
	move(s.progress(p0))
	move(s.progress(p1)) // the agent's hello frame goes up
	if !p0.helloOK || !p1.helloOK {
		t.Fatalf("hellos not answered: %v %v", p0.helloOK, p1.helloOK)
	}
	move(s.progress(p0)) // rank 0 enters the fence
	p1.state = stStopped
	for i := 0; i < 3; i++ {
		move(func() { s.feed(Stall{}) })
	}
	if len(s.checks) != 0 || p0.phase != phInFence || len(s.relay.held[0]) != 1 {
		t.Fatalf("the head looked at %d processes with rank 0's fence held (%d held, rank 0 phase %d): the model lost the point", len(s.checks), len(s.relay.held[0]), p0.phase)
	}
	var flush func()
	s.flushMoves(func(_ int, f func()) { flush = f })
	if flush == nil {
		t.Fatal("no timer flush offered while the agent holds a request")
	}
	move(flush)
	for i := 0; i < 2 && len(s.checks) == 0; i++ {
		move(func() { s.feed(Stall{}) })
	}
	if len(s.checks) != 1 || s.checks[0].rank != 1 {
		t.Fatalf("after the flush the head looks at %+v, want rank 1", s.checks)
	}
	move(func() { s.answer(0) })
	if p1.state != stDead {
		t.Fatalf("stopped rank 1 not killed (state %d)", p1.state)
	}
	move(func() { s.reap(p1) })
	if p0.phase != phWork || len(s.errs) > 0 {
		t.Fatalf("rank 0 did not leave the fence (phase %d): %v", p0.phase, s.errs)
	}
}
