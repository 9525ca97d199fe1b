package shmcoll

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The protocol over one anonymous shared mapping, a goroutine per member
// each with its own Group: results against a sequential reference, in
// place and not, across the slot size and the one-step/two-step switch of
// Allreduce, and a member that stops at every point of every call: the
// others end with the Env's error, never hang.

type env struct{ dead *atomic.Bool }

var errDead = errors.New("a member died")

// checkStopped checks a call that a member stopped in: the victim returned
// its own error (errVictim), every other member errDead.
func checkStopped(t *testing.T, errs []error, victim int, errVictim error) {
	t.Helper()
	for i, err := range errs {
		switch {
		case i == victim && err != errVictim:
			t.Errorf("victim: %v", err)
		case i != victim && err != errDead:
			t.Errorf("member %d: %v, want %v", i, err, errDead)
		}
	}
}

func (e env) Block(int) int { return 0 }
func (e env) Unblock(int)   {}

func (e env) Check() error {
	if e.dead.Load() {
		return errDead
	}
	return nil
}

func newGroups(t *testing.T, n int, crowded bool, dead *atomic.Bool) []*Group {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, Size(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	gs := make([]*Group, n)
	for i := range n {
		if gs[i], err = New(mem, n, i, crowded, env{dead}); err != nil {
			t.Fatal(err)
		}
	}
	return gs
}

// each runs fn at every member and fails the test if one does not return
// within the deadline.
func each(t *testing.T, gs []*Group, fn func(g *Group) error) []error {
	t.Helper()
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for i, g := range gs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = fn(g) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("a member did not return within 60 s")
	}
	return errs
}

// collect waits for k results on errs and fails the test at the first
// error, or if one does not come within 60 s (then it marks the members
// dead and wakes them, so that their calls return).
func collect(t *testing.T, errs <-chan error, k int, gs []*Group, dead *atomic.Bool) {
	t.Helper()
	waitResults(t, errs, k, "a member did not return within 60 s", func() { dead.Store(true); gs[0].Wake() })
}

func val(r, i int) int64 { return int64(3*r + 7*i + 1) }

func input(r, elems int) []byte {
	b := make([]byte, 8*elems)
	for i := range elems {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(val(r, i)))
	}
	return b
}

func sum(in, inout []byte) {
	for i := 0; i+8 <= len(in); i += 8 {
		binary.LittleEndian.PutUint64(inout[i:], binary.LittleEndian.Uint64(in[i:])+binary.LittleEndian.Uint64(inout[i:]))
	}
}

// affine is not commutative: elements are (a, b) pairs of int32 meaning
// x -> a*x + b; in ∘ inout is "inout, then in" composed in member order.
func affine(in, inout []byte) {
	for i := 0; i+8 <= len(in); i += 8 {
		a1, b1 := int32(binary.LittleEndian.Uint32(in[i:])), int32(binary.LittleEndian.Uint32(in[i+4:]))
		a2, b2 := int32(binary.LittleEndian.Uint32(inout[i:])), int32(binary.LittleEndian.Uint32(inout[i+4:]))
		binary.LittleEndian.PutUint32(inout[i:], uint32(a1*a2))
		binary.LittleEndian.PutUint32(inout[i+4:], uint32(a1*b2+b1))
	}
}

func reference(n, elems int, fn func(in, inout []byte)) []byte {
	out := input(n-1, elems)
	for j := n - 2; j >= 0; j-- {
		fn(input(j, elems), out)
	}
	return out
}

func sizes(n int) []int { // elements of 8 bytes
	c := Chunk(n) / 8
	if jobtest.RaceEnabled { // the race detector slows the byte loops ~50x: the switch points only
		return []int{0, 3, shortAll/8 + 1, RingMax/8 + 1, c + 1}
	}
	return []int{0, 1, 3, RingSlot / 8, RingSlot/8 + 1, shortAll / 8, shortAll/8 + 1, RingMax / 8, RingMax/8 + 1, c - 1, c, c + 1, 2*c + 5}
}

func TestCollectives(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8} {
		for _, crowded := range []bool{false, true} {
			if crowded && n < 3 {
				continue
			}
			t.Run(fmt.Sprintf("n%d/crowded=%v", n, crowded), func(t *testing.T) {
				var dead atomic.Bool
				gs := newGroups(t, n, crowded, &dead)
				c := Call{Sig: 42, DT: 1}
				for _, e := range each(t, gs, func(g *Group) error { return g.Barrier(c) }) {
					if e != nil {
						t.Fatal(e)
					}
				}
				for _, elems := range sizes(n) {
					for _, fn := range []func(in, inout []byte){sum, affine} {
						want := reference(n, elems, fn)
						for _, inPlace := range []bool{false, true} {
							errs := each(t, gs, func(g *Group) error {
								send := input(g.Me, elems)
								recv := make([]byte, len(send))
								if inPlace {
									recv = send
								}
								if err := g.Allreduce(c, send, recv, 8, fn, nil); err != nil {
									return err
								}
								if !bytes.Equal(recv, want) {
									return fmt.Errorf("allreduce of %d elements: member %d differs", elems, g.Me)
								}
								return nil
							})
							check(t, errs)
						}
						for _, root := range []int{0, n - 1, n / 2} {
							errs := each(t, gs, func(g *Group) error {
								send := input(g.Me, elems)
								recv := make([]byte, len(send))
								if err := g.Reduce(c, send, recv, root, 8, fn); err != nil {
									return err
								}
								if g.Me == root && !bytes.Equal(recv, want) {
									return fmt.Errorf("reduce of %d elements to %d differs", elems, root)
								}
								return nil
							})
							check(t, errs)
						}
					}
					for _, root := range []int{0, n - 1, n / 2} {
						errs := each(t, gs, func(g *Group) error {
							buf := make([]byte, 8*elems)
							if g.Me == root {
								buf = input(root, elems)
							}
							if err := g.Bcast(c, buf, root); err != nil {
								return err
							}
							if !bytes.Equal(buf, input(root, elems)) {
								return fmt.Errorf("bcast of %d elements from %d: member %d differs", elems, root, g.Me)
							}
							return nil
						})
						check(t, errs)
					}
					for _, root := range []int{0, n - 1, n / 2} {
						for _, inPlace := range []bool{false, true} {
							errs := each(t, gs, func(g *Group) error {
								b := 8 * elems
								recv := make([]byte, b*n)
								send := input(g.Me, elems)
								if g.Me == root && inPlace {
									copy(recv[root*b:], send)
									send = recv[root*b : (root+1)*b]
								}
								if g.Me != root {
									recv = nil // not used
								}
								if err := g.Gather(c, send, recv, root); err != nil {
									return err
								}
								for j := range n {
									if g.Me == root && !bytes.Equal(recv[j*b:(j+1)*b], input(j, elems)) {
										return fmt.Errorf("gather of %d elements to %d (in place %v): block %d differs", elems, root, inPlace, j)
									}
								}
								return nil
							})
							check(t, errs)
						}
					}
					for _, inPlace := range []bool{false, true} {
						// Uneven counts: member i sends (i*elems)%(elems+3) elements,
						// blocks in reverse member order with a gap of one element.
						counts, displs := make([]int, n), make([]int, n)
						at := 8
						for i := n - 1; i >= 0; i-- {
							counts[i] = 8 * ((i*elems + i) % (elems + 3))
							displs[i] = at
							at += counts[i] + 8
						}
						errs := each(t, gs, func(g *Group) error {
							recv := make([]byte, at)
							send := input(g.Me, counts[g.Me]/8)
							if inPlace {
								copy(recv[displs[g.Me]:], send)
								send = recv[displs[g.Me] : displs[g.Me]+counts[g.Me]]
							}
							if err := g.Allgatherv(c, send, recv, counts, displs); err != nil {
								return err
							}
							for j := range n {
								if !bytes.Equal(recv[displs[j]:displs[j]+counts[j]], input(j, counts[j]/8)) {
									return fmt.Errorf("allgatherv of counts %v (in place %v): member %d's block %d differs", counts, inPlace, g.Me, j)
								}
							}
							return nil
						})
						check(t, errs)
					}
					errs := each(t, gs, func(g *Group) error {
						recv := make([]byte, 8*elems*n)
						if err := g.Allgather(c, input(g.Me, elems), recv); err != nil {
							return err
						}
						for j := range n {
							if !bytes.Equal(recv[j*8*elems:(j+1)*8*elems], input(j, elems)) {
								return fmt.Errorf("allgather of %d elements: member %d's block %d differs", elems, g.Me, j)
							}
						}
						return nil
					})
					check(t, errs)
				}
			})
		}
	}
}

func check(t *testing.T, errs []error) {
	t.Helper()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// A member that stops at each point of each call (publishing nothing
// more) leaves the others waiting until the Env reports its death: they
// all end with that error. A member that stopped after publishing its
// data may let others finish the call; the next call then fails.
func TestMemberStopsAtEveryPoint(t *testing.T) {
	defer func() { Hook = nil }()
	const n = 4
	big := 2 * Chunk(n) / 8
	calls := map[string]func(g *Group) error{
		"barrier": func(g *Group) error { return g.Barrier(Call{Sig: 1}) },
		"bcast":   func(g *Group) error { return g.Bcast(Call{Sig: 2}, make([]byte, 8*big), 0) },
		"bcast-ring": func(g *Group) error {
			return g.Bcast(Call{Sig: 10}, make([]byte, 3*RingSlot), 2)
		},
		"reduce-ring": func(g *Group) error {
			return g.Reduce(Call{Sig: 11}, input(g.Me, 3*RingSlot/8), make([]byte, 3*RingSlot), 0, 8, sum)
		},
		"reduce-big": func(g *Group) error {
			return g.Reduce(Call{Sig: 12}, input(g.Me, big), make([]byte, 8*big), 1, 8, sum)
		},
		"allreduce": func(g *Group) error {
			return g.Allreduce(Call{Sig: 3}, input(g.Me, 1), make([]byte, 8), 8, sum, nil)
		},
		"allreduce-big": func(g *Group) error {
			return g.Allreduce(Call{Sig: 4}, input(g.Me, big), make([]byte, 8*big), 8, sum, nil)
		},
		"reduce":    func(g *Group) error { return g.Reduce(Call{Sig: 5}, input(g.Me, 1), make([]byte, 8), 1, 8, sum) },
		"allgather": func(g *Group) error { return g.Allgather(Call{Sig: 6}, input(g.Me, 1), make([]byte, 8*n)) },
		"gather":    func(g *Group) error { return g.Gather(Call{Sig: 7}, input(g.Me, big), make([]byte, 8*big*n), 1) },
		"allgatherv": func(g *Group) error {
			counts, displs := []int{8, 0, 8 * big, 16}, []int{0, 8, 8, 8 + 8*big}
			return g.Allgatherv(Call{Sig: 8}, input(g.Me, counts[g.Me]/8), make([]byte, 24+8*big), counts, displs)
		},
	}
	for name, call := range calls {
		kind, _, _ := strings.Cut(name, "-")
		for _, point := range []string{"enter", "published", "read", "reduced"} {
			for _, victim := range []int{0, 1, n - 1} {
				t.Run(fmt.Sprintf("%s/%s/victim%d", name, point, victim), func(t *testing.T) {
					var dead atomic.Bool
					gs := newGroups(t, n, false, &dead)
					errVictim := errors.New("victim stopped")
					Hook = func(me int, k, p string) error {
						if me == victim && k == kind && p == point {
							dead.Store(true)
							gs[0].Wake() // as the Env's owner does on an event
							return errVictim
						}
						return nil
					}
					errs := each(t, gs, func(g *Group) error {
						err := call(g)
						if err == nil { // the victim may have published its part: the next call fails
							err = g.Barrier(Call{Sig: 9})
						}
						return err
					})
					Hook = nil
					if !dead.Load() {
						return // this call has no such point at this member
					}
					checkStopped(t, errs, victim, errVictim)
				})
			}
		}
	}
}

// Calls that differ are found by a waiter that sees the other's step: it
// gets a MismatchError, the others ErrPoisoned or the Env's error, none
// hangs.
func TestMismatchPoisons(t *testing.T) {
	const n = 3
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	errs := each(t, gs, func(g *Group) error {
		if g.Me == 2 {
			return g.Bcast(Call{Sig: 7}, make([]byte, 8), 0)
		}
		return g.Barrier(Call{Sig: 8})
	})
	var mm *MismatchError
	found := false
	for i, err := range errs {
		switch {
		case errors.As(err, &mm):
			found = true
		case err == nil && i != 0: // rank 0 is the broadcast's root for member 2: it may pass
			t.Errorf("member %d: no error", i)
		case err != nil && !errors.Is(err, ErrPoisoned):
			t.Errorf("member %d: %v", i, err)
		}
	}
	if !found || !gs[0].Poisoned() {
		t.Fatalf("no mismatch found: %v", errs)
	}
}

func TestNewRefusesBadArguments(t *testing.T) {
	mem := make([]byte, Size(2))
	for _, c := range []struct{ n, me, size int }{{0, 0, Size(2)}, {2, 2, Size(2)}, {2, -1, Size(2)}, {MaxMembers + 1, 0, Size(2)}, {2, 0, Size(2) - 1}} {
		if _, err := New(mem[:c.size], c.n, c.me, false, nil); err == nil {
			t.Errorf("New(n=%d, me=%d, %d bytes) accepted", c.n, c.me, c.size)
		}
	}
}

// A member that rejected its call ends the others' waits for it with a
// RejectedError naming it.
func TestRejectEndsWaits(t *testing.T) {
	const n = 3
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	errs := each(t, gs, func(g *Group) error {
		if g.Me == 1 {
			g.Reject()
			return nil
		}
		return g.Allreduce(Call{Sig: 3}, input(g.Me, 1), make([]byte, 8), 8, sum, nil)
	})
	for _, i := range []int{0, 2} {
		var re *RejectedError
		if !errors.As(errs[i], &re) || re.Peer != 1 {
			t.Errorf("member %d: %v, want member 1 rejected", i, errs[i])
		}
	}
}

// Calls of different kinds back to back: a member that reads another's
// step while that one publishes its next call's step never sees the old
// step with the new call (a false mismatch: the step and the call's digest
// are one word; seen at np 8 in ftmpi-bench before).
func TestBackToBackCallsNoFalseMismatch(t *testing.T) {
	const n = 8
	rounds := 3000
	if jobtest.RaceEnabled {
		rounds = 300
	}
	var dead atomic.Bool
	gs := newGroups(t, n, true, &dead)
	check(t, each(t, gs, func(g *Group) error {
		buf := make([]byte, 8)
		for range rounds {
			if err := g.Barrier(Call{Sig: 1}); err != nil {
				return err
			}
			if err := g.Allreduce(Call{Sig: 2, DT: 3}, input(g.Me, 1), buf, 8, sum, nil); err != nil {
				return err
			}
			if err := g.Bcast(Call{Sig: 4}, buf, 0); err != nil {
				return err
			}
		}
		return nil
	}))
}

// waitSleepers waits (within the deadline) until n members sleep on the
// doorbell of g.
func waitSleepers(t *testing.T, g *Group, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for g.Sleepers() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d members asleep, want %d", g.Sleepers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A member blocked in a Barrier for a long time (200 ms here) sleeps on
// the doorbell until something happens: a few wake-ups, not one per
// millisecond (the bound of each sleep before: 1 ms, about 200 wake-ups).
func TestBlockedMemberSleepsUntilRung(t *testing.T) {
	const n = 2
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	errs := make(chan error, 1)
	go func() { errs <- gs[0].Barrier(Call{Sig: 1}) }()
	waitSleepers(t, gs[0], 1)
	start := time.Now()
	time.Sleep(200 * time.Millisecond) // the time member 0 stays blocked (what is measured, not a synchronisation)
	if err := gs[1].Barrier(Call{Sig: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("member 0 was not released by member 1's barrier")
	}
	blocked := time.Since(start)
	// One wake-up for member 1's publication, one per 50 ms blocked (the
	// safety net: SleepBound, 100 ms, is meant to be no shorter), and a
	// few spurious ones.
	if w, most := gs[0].Wakes(), 3+uint64(blocked/(50*time.Millisecond)); w > most {
		t.Fatalf("member 0 woke %d times in %v blocked, want at most %d", w, blocked, most)
	}
}

// A member asleep in a Barrier returns with its Env's error as soon as
// the Env's owner rings the doorbell (Wake), not at the end of its sleep
// (set to an hour here: without the ring the test's deadline fails it).
func TestWakeEndsSleepWithEnvError(t *testing.T) {
	defer func(d time.Duration) { SleepBound = d }(SleepBound)
	SleepBound = time.Hour
	const n = 3
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	errs := make(chan error, 2)
	for _, g := range gs[:2] {
		go func() { errs <- g.Barrier(Call{Sig: 1}) }()
	}
	waitSleepers(t, gs[0], 2)
	dead.Store(true) // member 2 died (it never calls)
	gs[2].Wake()     // the Env's owner rings: any view of the segment wakes every sleeper
	for range 2 {
		select {
		case err := <-errs:
			if err != errDead {
				t.Fatalf("%v, want %v", err, errDead)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a sleeping member was not woken by Wake")
		}
	}
}

// A Bcast root and Reduce contributors run up to RingDepth calls ahead of
// the members that read their ring slots: the root makes RingDepth
// small Bcasts and the contributors RingDepth small Reduces before any
// reader calls (with the two data slots they waited at the second), then
// the readers take every call's data in order.
func TestRingRunsAhead(t *testing.T) {
	const n = 4
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	ahead := func(fast func(g *Group) error, slow []int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, g := range gs {
			if !slices.Contains(slow, i) {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = fast(g) }()
			}
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			dead.Store(true) // release them (the readers never called)
			gs[0].Wake()
			<-done
			t.Fatal("the writers did not finish their calls before the readers called (within 60 s)")
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("member %d: %v", i, err)
			}
		}
	}
	const root = 1
	msg := func(k int) []byte { return input(k, 3) }
	ahead(func(g *Group) error {
		for k := range RingDepth {
			if err := g.Bcast(Call{Sig: 2}, msg(k), root); err != nil {
				return err
			}
		}
		return nil
	}, []int{0, 2, 3})
	ahead(func(g *Group) error { // the readers, in order
		for k := range RingDepth {
			buf := make([]byte, 24)
			if err := g.Bcast(Call{Sig: 2}, buf, root); err != nil {
				return err
			}
			if !bytes.Equal(buf, msg(k)) {
				return fmt.Errorf("bcast %d: %v, want %v", k, buf, msg(k))
			}
		}
		return nil
	}, []int{root})
	// Reduce: every member but the root contributes RingDepth calls first.
	contrib := func(g *Group) error {
		for k := range RingDepth {
			if err := g.Reduce(Call{Sig: 5}, input(g.Me+k, 2), nil, root, 8, sum); err != nil {
				return err
			}
		}
		return nil
	}
	ahead(contrib, []int{root})
	ahead(func(g *Group) error {
		for k := range RingDepth {
			recv := make([]byte, 16)
			if err := g.Reduce(Call{Sig: 5}, input(g.Me+k, 2), recv, root, 8, sum); err != nil {
				return err
			}
			want := input(k, 2)
			for j := 1; j < n; j++ {
				sum(input(j+k, 2), want)
			}
			if !bytes.Equal(recv, want) {
				return fmt.Errorf("reduce %d: %v, want %v", k, recv, want)
			}
		}
		return nil
	}, []int{0, 2, 3})
}

// A mismatch after repeated calls reports each member's current call:
// publish stores the call's words only when they change, so they must
// change with the call.
func TestMismatchAfterRepeatedCallsReportsCurrentCall(t *testing.T) {
	var dead atomic.Bool
	gs := newGroups(t, 2, false, &dead)
	errs := each(t, gs, func(g *Group) error {
		same := Call{Sig: 5, DT: 1}
		for range 3 {
			if err := g.Barrier(same); err != nil {
				return err
			}
		}
		if g.Me == 1 {
			return g.Barrier(Call{Sig: 9, DT: 2})
		}
		return g.Barrier(same)
	})
	want := []Call{{Sig: 9, DT: 2}, {Sig: 5, DT: 1}} // what each member sees of the other
	for i, err := range errs {
		var mm *MismatchError
		if !errors.As(err, &mm) {
			t.Fatalf("member %d: %v, want a mismatch", i, err)
		}
		if got := (Call{Sig: mm.Sig, DT: mm.DT}); mm.Peer != 1-i || got != want[i] {
			t.Errorf("member %d: mismatch with member %d's call %+v, want member %d's %+v", i, mm.Peer, got, 1-i, want[i])
		}
	}
}

// sum4 is sum's four-input form (Fn4): inout = a + (b + (c + (d + inout))).
func sum4(a, b, c, d, inout []byte) {
	sum(d, inout)
	sum(c, inout)
	sum(b, inout)
	sum(a, inout)
}

// fsum adds float64s; fsum4 is its four-input form, one pass.
func fsum(in, inout []byte) {
	for i := 0; i+8 <= len(in); i += 8 {
		v := math.Float64frombits(binary.LittleEndian.Uint64(in[i:])) + math.Float64frombits(binary.LittleEndian.Uint64(inout[i:]))
		binary.LittleEndian.PutUint64(inout[i:], math.Float64bits(v))
	}
}

func fsum4(a, b, c, d, inout []byte) {
	f := func(x []byte, i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(x[i:])) }
	for i := 0; i+8 <= len(inout); i += 8 {
		binary.LittleEndian.PutUint64(inout[i:], math.Float64bits(f(a, i)+(f(b, i)+(f(c, i)+(f(d, i)+f(inout, i))))))
	}
}

// finput is member r's float64s of magnitudes 1e-15 to 1e15: their sums
// depend on the order of the additions.
func finput(r, elems, round int) []byte {
	b := make([]byte, 8*elems)
	for i := range elems {
		v := float64(r+1) * math.Pow(10, float64((7*i+3*r+round)%31-15))
		if (i+r)%3 == 0 {
			v = -v / 3
		}
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// The large Allreduce (a reduce-scatter and an allgather on the segment)
// across its pieces: results against the sequential reduction in member
// order, bit for bit for float64 sums whose value depends on the order, with
// and without the four-input form, for a non-commutative operation, in
// place and not; then many calls back to back of changing data between
// other calls, each result checked (the slots are rewritten without a
// wait: a slot rewritten too early shows as a wrong sum).
func TestLargeAllreducePieces(t *testing.T) {
	defer func(b int) { bigMax = b }(bigMax)
	bigMax = 2 * page // pieces of 1024 float64s
	piece := BigSlot(16) / 8
	elems := []int{shortAll/8 + 1, piece - 1, piece, piece + 1, 2*piece + 5, 3 * piece}
	ns := []int{1, 2, 3, 5, 8, 16}
	if jobtest.RaceEnabled { // the byte loops under the race detector: the piece boundaries only
		elems, ns = []int{shortAll/8 + 1, piece + 1, 2*piece + 5}, []int{2, 5, 16}
	}
	for _, n := range ns {
		for _, crowded := range []bool{false, true} {
			if crowded && n < 3 || !crowded && n > 8 {
				continue // 16 goroutines on a few cores spin long: crowded as processes would be
			}
			t.Run(fmt.Sprintf("n%d/crowded=%v", n, crowded), func(t *testing.T) {
				var dead atomic.Bool
				gs := newGroups(t, n, crowded, &dead)
				c := Call{Sig: 42, DT: 1}
				for _, el := range elems {
					for _, op := range []struct {
						name  string
						fn    func(in, inout []byte)
						fn4   Fn4
						input func(r, elems int) []byte
					}{
						{"float64 sum", fsum, nil, func(r, e int) []byte { return finput(r, e, 0) }},
						{"float64 sum, four at a time", fsum, fsum4, func(r, e int) []byte { return finput(r, e, 0) }},
						{"int64 sum, four at a time", sum, sum4, input},
						{"affine", affine, nil, input},
					} {
						want := op.input(n-1, el)
						for j := n - 2; j >= 0; j-- {
							op.fn(op.input(j, el), want)
						}
						for _, inPlace := range []bool{false, true} {
							check(t, each(t, gs, func(g *Group) error {
								send := op.input(g.Me, el)
								recv := make([]byte, len(send))
								if inPlace {
									recv = send
								}
								if err := g.Allreduce(c, send, recv, 8, op.fn, op.fn4); err != nil {
									return err
								}
								if !bytes.Equal(recv, want) {
									return fmt.Errorf("%s of %d elements (in place %v): member %d differs", op.name, el, inPlace, g.Me)
								}
								return nil
							}))
						}
					}
				}
				rounds := 200
				if jobtest.RaceEnabled {
					rounds = 10
				}
				el := 2*piece + 5
				wants := make([][]byte, rounds)
				for r := range rounds {
					wants[r] = finput(n-1, el, r)
					for j := n - 2; j >= 0; j-- {
						fsum(finput(j, el, r), wants[r])
					}
				}
				check(t, each(t, gs, func(g *Group) error {
					recv := make([]byte, 8*el)
					for r := range rounds {
						if err := g.Allreduce(c, finput(g.Me, el, r), recv, 8, fsum, fsum4); err != nil {
							return err
						}
						if !bytes.Equal(recv, wants[r]) {
							return fmt.Errorf("round %d: member %d differs", r, g.Me)
						}
						if r%3 == 0 {
							if err := g.Barrier(Call{Sig: 5}); err != nil {
								return err
							}
						}
					}
					return nil
				}))
			})
		}
	}
}

// gateFrom makes the groups the test makes from now on gate their
// Barrier and small Allreduce from n members up (GateMin; by default only
// above two members a core on 2 cores), until the test ends.
func gateFrom(t *testing.T, n int) {
	old := GateMin
	GateMin = n
	t.Cleanup(func() { GateMin = old })
}

// A gated call (Barrier, Allreduce up to shortAll from GateMin members)
// has one wait a member: over K calls the members waited K·(N-1) times
// in all (the last arrival of each call does not wait), where waiting for
// each member in turn is up to K·N·(N-1); and the results are those of
// the reference, crowded or not.
func TestGatedCallsWaitOnce(t *testing.T) {
	gateFrom(t, 3)
	const n, calls = 8, 200
	for _, crowded := range []bool{false, true} {
		var dead atomic.Bool
		gs := newGroups(t, n, crowded, &dead)
		want := reference(n, 3, sum)
		errs := each(t, gs, func(g *Group) error {
			for k := range calls {
				if k%2 == 0 {
					if err := g.Barrier(Call{Sig: 1}); err != nil {
						return err
					}
					continue
				}
				got := make([]byte, len(want))
				if err := g.Allreduce(Call{Sig: 2}, input(g.Me, 3), got, 8, sum, nil); err != nil {
					return err
				}
				if !bytes.Equal(got, want) {
					return fmt.Errorf("call %d: allreduce %x, want %x", k, got, want)
				}
			}
			return nil
		})
		var waits uint64
		for i, g := range gs {
			if errs[i] != nil {
				t.Fatalf("crowded %v: member %d: %v", crowded, i, errs[i])
			}
			waits += g.waits
		}
		if waits != calls*(n-1) {
			t.Errorf("crowded %v: %d waits in %d calls of %d members, want %d (one a member and call, none at the last arrival)", crowded, waits, calls, n, calls*(n-1))
		}
	}
}

// A gated waiter holds the processor only as the sole process among the
// members (futex.Hold), and not while another member's process id is not
// known yet (this package's choice: the member may be a goroutine of this
// process that needs the processor to arrive).
func TestGatedSleepHoldsOnlyAlone(t *testing.T) {
	gateFrom(t, 3)
	const n = 3
	var dead atomic.Bool
	gs := newGroups(t, n, true, &dead)
	if gs[0].holdOK() {
		t.Fatal("members of one process hold the processor")
	}
	mem, err := unix.Mmap(-1, 0, Size(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	g, err := New(mem, n, 0, true, env{&dead})
	if err != nil {
		t.Fatal(err)
	}
	if g.holdOK() {
		t.Fatal("held with the other members not known yet")
	}
	g.pids[1].Store(g.pids[0].Load() + 1) // as other processes' New stores them
	g.pids[2].Store(g.pids[0].Load() + 2)
	if !g.holdOK() {
		t.Fatal("members of other processes: no hold")
	}
}

// Mismatched gated calls (a Barrier where the others call Allreduce) are
// found by the last arrival (or a sleeper's look at the members' steps):
// it gets a MismatchError, the others a MismatchError or ErrPoisoned;
// none returns a result or hangs.
func TestGatedMismatchPoisons(t *testing.T) {
	gateFrom(t, 3)
	const n = 4
	for odd := range n {
		var dead atomic.Bool
		gs := newGroups(t, n, false, &dead)
		errs := each(t, gs, func(g *Group) error {
			if g.Me == odd {
				return g.Barrier(Call{Sig: 8})
			}
			return g.Allreduce(Call{Sig: 3}, input(g.Me, 1), make([]byte, 8), 8, sum, nil)
		})
		mismatches := 0
		for i, err := range errs {
			var mm *MismatchError
			switch {
			case errors.As(err, &mm):
				mismatches++
			case !errors.Is(err, ErrPoisoned):
				t.Errorf("odd member %d: member %d: %v, want a mismatch or ErrPoisoned", odd, i, err)
			}
		}
		if mismatches == 0 || !gs[0].Poisoned() {
			t.Errorf("odd member %d: no mismatch found, poisoned %v: %v", odd, gs[0].Poisoned(), errs)
		}
	}
}

// A member that stops at every point of a gated Barrier and Allreduce
// (before it counts itself, counted, as the last arrival before its
// release, after the release): every other member ends with the Env's
// error, from that call or from its next one, never with a result of the
// stopped call it did not release, and never hangs. For "last" the victim
// counts itself only once the others did, so it is the last arrival; for
// "arrived" the others count themselves only once it stopped.
func TestGatedMemberStopsAtEveryPoint(t *testing.T) {
	gateFrom(t, 3)
	defer func() { Hook = nil }()
	const n = 4
	calls := map[string]func(g *Group) error{
		"barrier": func(g *Group) error { return g.Barrier(Call{Sig: 1}) },
		"allreduce": func(g *Group) error {
			got := make([]byte, 8)
			if err := g.Allreduce(Call{Sig: 3}, input(g.Me, 1), got, 8, sum, nil); err != nil {
				return err
			}
			if want := reference(n, 1, sum); !bytes.Equal(got, want) {
				return fmt.Errorf("allreduce %x, want %x", got, want)
			}
			return nil
		},
	}
	for _, kind := range []string{"barrier", "allreduce"} {
		for _, point := range []string{"enter", "published", "arrived", "last", "read"} {
			if kind == "barrier" && point == "read" {
				continue
			}
			for _, victim := range []int{0, 1, n - 1} {
				for _, crowded := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/victim%d/crowded%v", kind, point, victim, crowded), func(t *testing.T) {
						var dead atomic.Bool
						gs := newGroups(t, n, crowded, &dead)
						errVictim := errors.New("victim stopped")
						var lastFailed atomic.Bool
						Hook = func(me int, k, p string) error {
							if k != kind {
								return nil
							}
							if me != victim {
								if point == "arrived" && p == "published" {
									deadline := time.Now().Add(60 * time.Second)
									for !dead.Load() && time.Now().Before(deadline) {
										time.Sleep(time.Millisecond)
									}
								}
								return nil
							}
							if point == "last" && p == "published" {
								// Count in last: wait until the others counted themselves.
								deadline := time.Now().Add(60 * time.Second)
								for gs[me].arrivals.Load()%n != n-1 {
									if time.Now().After(deadline) {
										lastFailed.Store(true)
										return errVictim
									}
									time.Sleep(time.Millisecond)
								}
							}
							if p == point {
								dead.Store(true)
								gs[0].Wake() // as the Env's owner does on an event
								return errVictim
							}
							return nil
						}
						errs := each(t, gs, func(g *Group) error {
							err := calls[kind](g)
							if err == nil { // the victim may have counted itself or released: the next call fails
								err = g.Barrier(Call{Sig: 9})
							}
							return err
						})
						Hook = nil
						if lastFailed.Load() || !dead.Load() {
							t.Fatalf("the victim did not stop at %s", point)
						}
						checkStopped(t, errs, victim, errVictim)
					})
				}
			}
		}
	}
}

// start runs fn at member g in a goroutine and waits (within the
// deadline) until it is counted asleep, so that sleepers more members
// are asleep in all; the result goes to errs.
func startAsleep(t *testing.T, g *Group, sleepers int, errs chan<- error, fn func(g *Group) error) {
	t.Helper()
	go func() { errs <- fn(g) }()
	waitSleepers(t, g, sleepers)
}

// waitStarted waits (within the deadline) for k results of members
// started by startAsleep and fails the test with the first error, or with
// stuck when one does not come.
func waitStarted(t *testing.T, errs <-chan error, k int, stuck string) {
	t.Helper()
	waitResults(t, errs, k, stuck, func() {})
}

// waitResults waits for k results on errs, each within 60 s, and fails
// the test with the first error, or runs onStuck and fails with stuck
// when one does not come.
func waitResults(t *testing.T, errs <-chan error, k int, stuck string, onStuck func()) {
	t.Helper()
	for range k {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			onStuck()
			t.Fatal(stuck)
		}
	}
}

// A publication wakes only the members that wait for its publisher
// (issue 28, session 17). Bcast readers asleep waiting for the root are
// not woken by the other readers' publications, and members asleep in a
// gated Barrier by the Reduce contributions of the step before: each
// sleeper wakes about once, where one doorbell for every publication woke
// it once for each member that came after it (after a gated Barrier at
// np 16 on 2 cores: 290-390 voluntary switches a Barrier and a Bcast or
// Reduce, against 20-73 with a doorbell a member).
func TestPublicationWakesOnlyItsWaiters(t *testing.T) {
	defer func(d time.Duration) { SleepBound = d }(SleepBound)
	SleepBound = time.Hour // events, not the bound, end the sleeps
	const n = 8
	t.Run("bcast", func(t *testing.T) {
		var dead atomic.Bool
		gs := newGroups(t, n, false, &dead)
		errs := make(chan error, n)
		want := input(0, 1)
		bufs := make([][]byte, n)
		for i := 1; i < n; i++ {
			bufs[i] = make([]byte, len(want))
			startAsleep(t, gs[i], i, errs, func(g *Group) error { return g.Bcast(Call{Sig: 5}, bufs[g.Me], 0) })
		}
		if err := gs[0].Bcast(Call{Sig: 5}, slices.Clone(want), 0); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, errs, n-1, "a reader was not woken by the root's publication")
		for i := 1; i < n; i++ {
			if !bytes.Equal(bufs[i], want) {
				t.Errorf("reader %d: %x, want %x", i, bufs[i], want)
			}
			if w := gs[i].Wakes(); w > 2 {
				t.Errorf("reader %d woke %d times, want at most 2 (the root's publication and a spurious one)", i, w)
			}
		}
	})
	t.Run("gate after reduce", func(t *testing.T) {
		gateFrom(t, 3)
		var dead atomic.Bool
		gs := newGroups(t, n, false, &dead)
		errs := make(chan error, n)
		for i := 1; i < n; i++ {
			startAsleep(t, gs[i], i, errs, func(g *Group) error {
				if err := g.Reduce(Call{Sig: 6}, input(g.Me, 1), nil, 0, 8, sum); err != nil {
					return err
				}
				return g.Barrier(Call{Sig: 7})
			})
		}
		got := make([]byte, 8)
		if err := gs[0].Reduce(Call{Sig: 6}, input(0, 1), got, 0, 8, sum); err != nil {
			t.Fatal(err)
		}
		if want := reference(n, 1, sum); !bytes.Equal(got, want) {
			t.Errorf("reduce %x, want %x", got, want)
		}
		if err := gs[0].Barrier(Call{Sig: 7}); err != nil {
			t.Fatal(err)
		}
		waitStarted(t, errs, n-1, "a member was not released from the gate")
		for i := 1; i < n; i++ {
			if w := gs[i].Wakes(); w > 2 {
				t.Errorf("member %d woke %d times in the gate, want at most 2 (the release and a spurious one)", i, w)
			}
		}
	})
}

// Members asleep in a gated Barrier are woken by a member that publishes
// the same step in another call (a Bcast root, which waits for nobody):
// they find the mismatch at once, not at the end of their sleep (an hour
// here: the test's deadline would fail them).
func TestGateSleepersSeeMismatchedPublication(t *testing.T) {
	defer func(d time.Duration) { SleepBound = d }(SleepBound)
	SleepBound = time.Hour
	gateFrom(t, 3)
	const n = 4
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	errs := make(chan error, n)
	for i := 1; i < n; i++ {
		startAsleep(t, gs[i], i, errs, func(g *Group) error { return g.Barrier(Call{Sig: 8}) })
	}
	if err := gs[0].Bcast(Call{Sig: 9}, input(0, 1), 0); err != nil {
		t.Fatalf("root: %v (it waits for nobody)", err)
	}
	for range n - 1 {
		select {
		case err := <-errs:
			var mm *MismatchError
			if !errors.As(err, &mm) && !errors.Is(err, ErrPoisoned) {
				t.Errorf("%v, want a mismatch or ErrPoisoned", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("a member asleep in the gate did not see the mismatched publication")
		}
	}
}

// A Bcast above RingMax goes through the root's contribution slot of the
// large Allreduce (bcastBig) and the root returns without waiting for
// its readers; before it writes that slot again (its next piece, or a
// large Allreduce) it waits for them (bigFree). Here the root makes a
// Bcast of three pieces and then a large Allreduce before any reader
// calls: it must stop at the second piece (the readers have not read the
// first), so the readers get every piece intact and the Allreduce's sum
// is right. Without the wait the root overwrites the slot and the readers
// read the wrong piece.
func TestBigBcastRootWaitsBeforeRewritingItsSlot(t *testing.T) {
	defer func(b int) { bigMax = b }(bigMax)
	bigMax = 8 * page
	const n, root = 4, 2
	piece := BigSlot(n) // 32 KiB
	for _, then := range []string{"pieces", "allreduce"} {
		t.Run(then, func(t *testing.T) {
			var dead atomic.Bool
			gs := newGroups(t, n, false, &dead)
			size := 3 * piece
			if then == "allreduce" {
				size = RingMax + 8 // one piece: the root returns, then its Allreduce writes the slot
			}
			msg := input(7, size/8)
			elems := piece / 8
			want := reference(n, elems, sum)
			errs := make(chan error, n)
			call := func(g *Group, buf []byte) {
				err := g.Bcast(Call{Sig: 2}, buf, root)
				if err == nil && !bytes.Equal(buf, msg) {
					err = fmt.Errorf("member %d: bcast differs", g.Me)
				}
				if err == nil {
					out := make([]byte, 8*elems)
					if err = g.Allreduce(Call{Sig: 3}, input(g.Me, elems), out, 8, sum, nil); err == nil && !bytes.Equal(out, want) {
						err = fmt.Errorf("member %d: allreduce differs", g.Me)
					}
				}
				errs <- err
			}
			go call(gs[root], slices.Clone(msg))
			waitSleepers(t, gs[root], 1) // the root waits for a reader (its next piece, or bigFree, or the Allreduce's steps)
			for i, g := range gs {
				if i != root {
					go call(g, make([]byte, size))
				}
			}
			collect(t, errs, n, gs, &dead)
		})
	}
}

// A root's big Bcast returns before its readers read (it does not wait
// for them), and its next one waits for them: two calls of one piece,
// the second only once every reader read the first.
func TestBigBcastRootReturnsBeforeReaders(t *testing.T) {
	const n, root = 3, 0
	var dead atomic.Bool
	gs := newGroups(t, n, false, &dead)
	msg := input(5, (RingMax+8)/8)
	if err := gs[root].Bcast(Call{Sig: 2}, msg, root); err != nil { // no reader has called
		t.Fatal(err)
	}
	errs := make(chan error, n)
	go func() { errs <- gs[root].Bcast(Call{Sig: 2}, input(6, len(msg)/8), root) }()
	waitSleepers(t, gs[root], 1) // the second waits for the readers of the first
	for _, g := range gs[1:] {
		go func() {
			for k := 5; k <= 6; k++ {
				buf := make([]byte, len(msg))
				if err := g.Bcast(Call{Sig: 2}, buf, root); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(buf, input(k, len(msg)/8)) {
					errs <- fmt.Errorf("member %d: bcast %d differs", g.Me, k)
					return
				}
			}
			errs <- nil
		}()
	}
	collect(t, errs, n, gs, &dead)
}

// With more than two members a core, the waits of a Bcast through the
// root's contribution slot sleep at once: the readers, asleep before the
// root calls, gave up the core by no sched_yield (the other waits yield
// 32 times first).
func TestBigBcastCrowdedWaitsSleepAtOnce(t *testing.T) {
	n := 2*runtime.NumCPU() + 1
	if n > MaxMembers {
		t.Skipf("%d cores: a group of more than two members a core exceeds %d members", runtime.NumCPU(), MaxMembers)
	}
	var dead atomic.Bool
	gs := newGroups(t, n, true, &dead)
	msg := input(3, (RingMax+8)/8)
	errs := make(chan error, n)
	for _, g := range gs[1:] {
		go func() {
			buf := make([]byte, len(msg))
			err := g.Bcast(Call{Sig: 2}, buf, 0)
			if err == nil && !bytes.Equal(buf, msg) {
				err = fmt.Errorf("member %d: bcast differs", g.Me)
			}
			errs <- err
		}()
	}
	waitSleepers(t, gs[0], n-1)
	if err := gs[0].Bcast(Call{Sig: 2}, msg, 0); err != nil {
		t.Fatal(err)
	}
	collect(t, errs, n-1, gs, &dead)
	for _, g := range gs[1:] {
		if g.yields != 0 {
			t.Errorf("member %d yielded %d times before it slept", g.Me, g.yields)
		}
	}
}
