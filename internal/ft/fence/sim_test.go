package fence

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// sim is a seeded simulation of a job's fence: messages are delivered in
// any order, processes enter at any time, crash at any step (their
// in-flight messages are lost or still delivered), learn of crashes in
// any order and leave (exit) once done, after which they answer nothing.
type sim struct {
	t       *testing.T
	rng     *rand.Rand
	nodes   []*simNode
	flight  []Msg
	notes   [][2]int // {to, failed}
	crashes int      // left to inject
	noExit  bool     // processes stay once done (no departures to notify)
}

type simNode struct {
	n       *Node
	lost    map[int]bool
	crashed bool
	predead bool // dead from the start, unknown to some: a frame to it always fails
	exited  bool
	sent    int
	got     int
}

func newSim(t *testing.T, seed uint64, n int) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))}
	for i := 0; i < n; i++ {
		sn := &simNode{lost: map[int]bool{}}
		sn.n = New(Config{Self: i, N: n, Lost: func(p int) bool { return sn.lost[p] }})
		s.nodes = append(s.nodes, sn)
	}
	return s
}

// alive is a process that neither crashed nor left.
func (s *sim) alive(p int) bool { return !s.nodes[p].crashed && !s.nodes[p].exited }

// send moves out from the network's view: a frame to a process that is
// gone may fail at once (the dial is refused: the sender counts it lost),
// else it is in flight.
func (s *sim) send(out []Msg) {
	for len(out) > 0 {
		m := out[0]
		out = out[1:]
		from := s.nodes[m.From]
		from.sent++
		if m.To == m.From {
			s.t.Fatalf("process %d sent %v to itself", m.From, m.Kind)
		}
		to := s.nodes[m.To]
		if to.exited || to.predead || to.crashed && s.rng.IntN(2) == 0 {
			if !from.lost[m.To] {
				from.lost[m.To] = true
				out = append(out, s.step(m.From, from.n.Refresh)...)
			}
			continue
		}
		s.flight = append(s.flight, m)
	}
}

// step runs f at p and checks the fence's safety when p becomes done:
// every process that did not crash has entered.
func (s *sim) step(p int, f func() []Msg) []Msg {
	sn := s.nodes[p]
	if sn.crashed || sn.exited {
		return nil
	}
	was := sn.n.Done()
	out := f()
	if !was && sn.n.Done() {
		for q, o := range s.nodes {
			if !o.crashed && !o.n.Entered() {
				s.t.Fatalf("process %d done while process %d is alive and has not entered", p, q)
			}
		}
	}
	return out
}

func (s *sim) crash(p int) {
	s.nodes[p].crashed = true
	for q := range s.nodes {
		if q != p && s.alive(q) {
			s.notes = append(s.notes, [2]int{q, p})
		}
	}
}

// run drives the job to its end and returns the number of delivery
// rounds (meaningful with s.order).
func (s *sim) run(enterP int) {
	n := len(s.nodes)
	for steps := 0; ; steps++ {
		if steps > 1_000_000 {
			s.t.Fatal("no end after a million steps")
		}
		var acts []int // 0 deliver, 1 notice, 2 enter, 3 crash, 4 exit
		if len(s.flight) > 0 {
			acts = append(acts, 0, 0, 0, 0)
		}
		if len(s.notes) > 0 {
			acts = append(acts, 1, 1)
		}
		var out, done []int
		for p, sn := range s.nodes {
			if s.alive(p) && !sn.n.Entered() {
				out = append(out, p)
			}
			if s.alive(p) && sn.n.Done() {
				done = append(done, p)
			}
		}
		if len(out) > 0 {
			for range enterP {
				acts = append(acts, 2)
			}
		}
		if s.crashes > 0 {
			acts = append(acts, 3)
		}
		if len(done) > 0 && !s.noExit {
			acts = append(acts, 4)
		}
		if len(acts) == 0 || (len(s.flight) == 0 && len(s.notes) == 0 && len(out) == 0) {
			break
		}
		switch acts[s.rng.IntN(len(acts))] {
		case 0:
			i := s.rng.IntN(len(s.flight))
			m := s.flight[i]
			s.flight[i] = s.flight[len(s.flight)-1]
			s.flight = s.flight[:len(s.flight)-1]
			if s.alive(m.To) {
				s.nodes[m.To].got++
				s.send(s.step(m.To, func() []Msg { return s.nodes[m.To].n.Step(m) }))
			}
		case 1:
			i := s.rng.IntN(len(s.notes))
			nt := s.notes[i]
			s.notes[i] = s.notes[len(s.notes)-1]
			s.notes = s.notes[:len(s.notes)-1]
			sn := s.nodes[nt[0]]
			if s.alive(nt[0]) && !sn.lost[nt[1]] {
				sn.lost[nt[1]] = true
				s.send(s.step(nt[0], sn.n.Refresh))
			}
		case 2:
			p := out[s.rng.IntN(len(out))]
			s.send(s.step(p, s.nodes[p].n.Enter))
		case 3:
			s.crashes--
			var live []int
			for p := range n {
				if !s.nodes[p].crashed {
					live = append(live, p)
				}
			}
			if len(live) > 0 {
				s.crash(live[s.rng.IntN(len(live))])
			}
		case 4:
			// A process that left: frames still in flight to it are lost,
			// and the survivors' detectors declare it failed in time (its
			// heartbeats stopped), as they do a crashed one.
			p := done[s.rng.IntN(len(done))]
			s.nodes[p].exited = true
			for q := range s.nodes {
				if q != p && s.alive(q) {
					s.notes = append(s.notes, [2]int{q, p})
				}
			}
		}
	}
	// The end: every process entered or crashed, nothing is in flight and
	// every failure is known: each process still there is done.
	for p, sn := range s.nodes {
		if s.alive(p) && !sn.n.Done() {
			for q, o := range s.nodes {
				s.t.Logf("process %d: crashed %v predead %v exited %v entered %v done %v lost %v up %v probed %v upTo %d parent %d children %v",
					q, o.crashed, o.predead, o.exited, o.n.Entered(), o.n.Done(), o.lost, o.n.up, o.n.probed, o.n.upTo, o.n.parent(), o.n.children())
			}
			s.t.Fatalf("process %d never done (entered %v, lost %v)", p, sn.n.Entered(), sn.lost)
		}
	}
}

// Thousands of seeded schedules: any delivery order, entries, crashes at
// any step (before entering, inside the fence, after it), crashes some
// processes never hear of but cannot write to (a spare activated after
// them), processes leaving once done. Safety is checked at every step
// (no process is done while a live one has not entered) and termination
// at the end (every survivor is done, nobody waits for ever).
func TestSimSeeds(t *testing.T) {
	seeds := 4000
	if testing.Short() || raceEnabled {
		seeds = 500
	}
	if v, err := strconv.Atoi(os.Getenv("FTMPI_FENCE_SEEDS")); err == nil {
		seeds = v
	}
	for seed := range uint64(seeds) {
		s := newSim(t, seed, 0)
		n := 1 + s.rng.IntN(40)
		s = newSim(t, seed, n)
		s.crashes = s.rng.IntN(1 + n/2)
		// Processes dead from the start, known to only some of the others
		// (the others find them by a refused frame).
		for range s.rng.IntN(3) {
			p := s.rng.IntN(n)
			s.nodes[p].crashed = true
			s.nodes[p].predead = true
			for q := range n {
				if q != p && s.rng.IntN(2) == 0 {
					s.nodes[q].lost[p] = true
				}
			}
		}
		t.Run(fmt.Sprintf("seed%d-n%d", seed, n), func(t *testing.T) {
			s.t = t
			s.run(1 + s.rng.IntN(4))
		})
		if t.Failed() {
			return
		}
	}
}

// Failure-free, a process sends at most 1 + 2·ceil(log2 n) frames and
// receives as many, whatever the order; the all-to-all fence sent n-1.
func TestSimFramesPerProcessLogN(t *testing.T) {
	sizes := []int{2, 3, 16, 100, 1000}
	if os.Getenv("FTMPI_FENCE_BIG") != "" {
		sizes = append(sizes, 10000)
	}
	for _, n := range sizes {
		s := newSim(t, uint64(n), n)
		s.noExit = true
		s.run(3)
		maxSent, maxGot, total := 0, 0, 0
		for _, sn := range s.nodes {
			maxSent, maxGot = max(maxSent, sn.sent), max(maxGot, sn.got)
			total += sn.sent
		}
		lim := MaxSent(n)
		t.Logf("n %d: frames per process at most %d sent, %d received (bound %d; all-to-all: %d); %d in all (all-to-all: %d)",
			n, maxSent, maxGot, lim, n-1, total, n*(n-1))
		if maxSent > lim || maxGot > lim {
			t.Errorf("n %d: a process sent %d or received %d frames, more than 1+2*log2(n) = %d", n, maxSent, maxGot, lim)
		}
		if total > 3*n {
			t.Errorf("n %d: %d frames in all, more than 3n", n, total)
		}
	}
}

// Rounds: everyone enters at once and each round delivers every frame in
// flight; the fence ends within 2·ceil(log2 n) + 1 rounds.
func TestSimRoundsLogN(t *testing.T) {
	for _, n := range []int{2, 5, 16, 64, 1000, 4096} {
		s := newSim(t, 1, n)
		var flight []Msg
		for p := range n {
			flight = append(flight, s.nodes[p].n.Enter()...)
		}
		rounds := 0
		for len(flight) > 0 {
			rounds++
			var next []Msg
			for _, m := range flight {
				next = append(next, s.nodes[m.To].n.Step(m)...)
			}
			flight = next
		}
		for p, sn := range s.nodes {
			if !sn.n.Done() {
				t.Fatalf("n %d: process %d not done after %d rounds", n, p, rounds)
			}
		}
		lim := 2*bits.Len(uint(n-1)) + 1
		t.Logf("n %d: %d rounds (bound %d)", n, rounds, lim)
		if rounds > lim {
			t.Errorf("n %d: %d rounds, more than %d", n, rounds, lim)
		}
	}
}

// Finished: a process knows of another's entry through an Up whose
// subtree holds it, or once done; not otherwise.
func TestFinished(t *testing.T) {
	const n = 8
	nd := New(Config{Self: 0, N: n})
	for p := range n {
		if nd.Finished(p) {
			t.Fatalf("process %d finished before anything was heard", p)
		}
	}
	nd.Enter()
	nd.Step(Msg{Kind: Up, From: 4, To: 0}) // 4's subtree: 4..7
	for p := range n {
		if want := p == 0 || p >= 4; nd.Finished(p) != want {
			t.Errorf("after Up from 4: Finished(%d) = %v, want %v", p, nd.Finished(p), want)
		}
	}
	nd.Step(Msg{Kind: Up, From: 1, To: 0})
	nd.Step(Msg{Kind: Up, From: 2, To: 0})
	if !nd.Done() || !nd.Finished(3) {
		t.Errorf("every child reported: done %v, Finished(3) %v", nd.Done(), nd.Finished(3))
	}
}

// With 1% of the processes crashing at random steps of the fence, a
// process still sends O(log n) frames: the repair costs frames near each
// failure only.
func TestSimFramesWithFailures(t *testing.T) {
	sizes := []int{100, 1000}
	if raceEnabled {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		worst := 0
		for seed := range uint64(100_000 / (n * n / 10)) {
			s := newSim(t, seed, n)
			s.noExit = true
			s.crashes = n / 100
			s.run(3)
			for _, sn := range s.nodes {
				worst = max(worst, sn.sent)
			}
		}
		t.Logf("n %d, %d crashes: at most %d frames sent by a process (failure-free bound %d)", n, n/100, worst, MaxSent(n))
		if worst > 2*MaxSent(n) {
			t.Errorf("n %d: a process sent %d frames, more than twice the failure-free bound %d", n, worst, MaxSent(n))
		}
	}
}
