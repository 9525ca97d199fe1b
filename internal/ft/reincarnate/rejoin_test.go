package reincarnate

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// Members and Role: ranks' processes in rank order, then the pool.
func TestMembersAndRole(t *testing.T) {
	s := State{Epoch: 1, Procs: []int{0, 4, 2, 3}, Inc: []int{0, 1, 0, 0}, Pool: []int{5}}
	if got := s.Members(); !slices.Equal(got, []int{0, 4, 2, 3, 5}) {
		t.Fatalf("Members %v", got)
	}
	for _, tc := range []struct {
		proc, rank int
		spare      bool
	}{{4, 1, false}, {0, 0, false}, {5, -1, true}, {1, -1, false}} {
		if r, sp := s.Role(tc.proc); r != tc.rank || sp != tc.spare {
			t.Fatalf("Role(%d) = %d, %v; want %d, %v", tc.proc, r, sp, tc.rank, tc.spare)
		}
	}
}

// Rejoined waits for every other member, not for a process that is no
// member (the dead of older epochs), and ends without the lost or, at the
// deadline, the silent ones.
func TestRejoined(t *testing.T) {
	s := State{Epoch: 1, Procs: []int{0, 4, 2, 3}, Inc: []int{0, 1, 0, 0}, Pool: []int{5}}
	none := func(int) bool { return false }
	set := func(ps ...int) func(int) bool { return func(p int) bool { return slices.Contains(ps, p) } }
	if done, _ := Rejoined(s, 6, 0, set(2, 3, 4), none, false); done {
		t.Fatal("done without spare 5's endpoint")
	}
	done, dead := Rejoined(s, 6, 0, set(2, 3, 4, 5), none, false)
	if !done || !slices.Equal(dead, []int{1}) {
		t.Fatalf("all in: done %v, dead %v; want true, [1]", done, dead)
	}
	done, dead = Rejoined(s, 6, 2, set(0, 4), set(3, 5), false)
	if !done || !slices.Equal(dead, []int{1, 3, 5}) {
		t.Fatalf("3 and 5 lost: done %v, dead %v; want true, [1 3 5]", done, dead)
	}
	// Lost after its endpoint arrived: it is in the epoch (its failure is
	// one of the new epoch).
	done, dead = Rejoined(s, 6, 2, set(0, 3, 4, 5), set(3), false)
	if !done || !slices.Equal(dead, []int{1}) {
		t.Fatalf("3 lost after sending: done %v, dead %v; want true, [1]", done, dead)
	}
	done, dead = Rejoined(s, 6, 5, set(0), none, true)
	if !done || !slices.Equal(dead, []int{1, 2, 3, 4}) {
		t.Fatalf("timed out: done %v, dead %v; want true, [1 2 3 4]", done, dead)
	}
}

// simulateRejoin runs one seeded schedule of the exchange among the
// members of a random State: each member sends its endpoint to every
// other; some members crash at random points (their frames not yet sent
// are lost); every live process learns a crash at a random later step;
// frames are delivered in random order. It checks, for every member alive
// at the end: the exchange ends (no hang without a deadline: only
// failures stop endpoints, and every failure is detected); the epoch
// starts without exactly the non-members and the crashed members whose
// endpoint did not arrive; and a member whose endpoint arrived everywhere
// before it crashed is in every survivor's epoch.
func simulateRejoin(seed int64) error {
	rng := rand.New(rand.NewSource(seed))
	universe := 3 + rng.Intn(8)
	var procs, pool []int
	for p := 0; p < universe; p++ {
		switch rng.Intn(4) {
		case 0: // an old failure: in no role
		case 1:
			pool = append(pool, p)
		default:
			procs = append(procs, p)
		}
	}
	if len(procs) == 0 {
		return nil
	}
	s := State{Epoch: 1, Procs: procs, Inc: make([]int, len(procs)), Pool: pool}
	members := s.Members()
	type frame struct{ from, to int }
	var inflight []frame
	unsent := map[int][]int{} // member -> receivers not sent to yet
	for _, m := range members {
		for _, q := range members {
			if q != m {
				unsent[m] = append(unsent[m], q)
			}
		}
		rng.Shuffle(len(unsent[m]), func(i, j int) { unsent[m][i], unsent[m][j] = unsent[m][j], unsent[m][i] })
	}
	crashed := map[int]bool{}
	knows := map[int]map[int]bool{} // receiver -> crashes it detected
	have := map[int]map[int]bool{}  // receiver -> endpoints received
	var pendingDetect []frame       // (crashed, observer)
	done := map[int]bool{}
	result := map[int][]int{}
	for _, m := range members {
		knows[m], have[m] = map[int]bool{}, map[int]bool{}
	}
	for step := 0; step < 10000; step++ {
		// Check every live member that is not done.
		allDone := true
		for _, m := range members {
			if crashed[m] || done[m] {
				continue
			}
			d, dead := Rejoined(s, universe, m, func(p int) bool { return have[m][p] }, func(p int) bool { return knows[m][p] }, false)
			if d {
				done[m], result[m] = true, dead
			} else {
				allDone = false
			}
		}
		if allDone {
			break
		}
		switch r := rng.Intn(10); {
		case r < 4: // a member sends one frame
			m := members[rng.Intn(len(members))]
			if !crashed[m] && len(unsent[m]) > 0 {
				inflight = append(inflight, frame{m, unsent[m][0]})
				unsent[m] = unsent[m][1:]
			}
		case r < 8 && len(inflight) > 0: // one frame delivered
			i := rng.Intn(len(inflight))
			f := inflight[i]
			inflight = slices.Delete(inflight, i, i+1)
			if !crashed[f.to] && !done[f.to] { // after its end a member reads no more
				have[f.to][f.from] = true
			}
		case r == 8 && rng.Intn(6) == 0: // a crash
			m := members[rng.Intn(len(members))]
			if !crashed[m] && !done[m] {
				crashed[m] = true
				unsent[m] = nil
				for _, q := range members {
					if q != m {
						pendingDetect = append(pendingDetect, frame{m, q})
					}
				}
			}
		case len(pendingDetect) > 0: // one detection
			i := rng.Intn(len(pendingDetect))
			d := pendingDetect[i]
			pendingDetect = slices.Delete(pendingDetect, i, i+1)
			knows[d.to][d.from] = true
		}
	}
	for _, m := range members {
		if crashed[m] {
			continue
		}
		if !done[m] {
			return fmt.Errorf("member %d of %v never ended its exchange (crashed %v)", m, members, crashed)
		}
		var want []int
		for p := 0; p < universe; p++ {
			if p == m {
				continue
			}
			if !slices.Contains(members, p) || (crashed[p] && !have[m][p]) {
				want = append(want, p)
			}
		}
		got := result[m]
		for _, p := range got {
			if slices.Contains(members, p) && have[m][p] {
				return fmt.Errorf("member %d starts without %d, whose endpoint it has", m, p)
			}
			if slices.Contains(members, p) && !crashed[p] {
				return fmt.Errorf("member %d starts without %d, which is alive (no deadline in this schedule)", m, p)
			}
		}
		for _, p := range want {
			if !slices.Contains(got, p) && !have[m][p] {
				return fmt.Errorf("member %d starts with %d, which it has no endpoint of", m, p)
			}
		}
	}
	return nil
}

// TestRejoinSchedules runs seeded schedules of the exchange (see
// simulateRejoin).
func TestRejoinSchedules(t *testing.T) {
	if *simSeed != 0 {
		if err := simulateRejoin(*simSeed); err != nil {
			t.Fatalf("seed %d: %v", *simSeed, err)
		}
		return
	}
	n := 5000
	if testing.Short() {
		n = 1000
	}
	for seed := int64(1); seed <= int64(n); seed++ {
		if err := simulateRejoin(seed); err != nil {
			t.Fatalf("seed %d: %v (replay: go test ./internal/ft/reincarnate -run TestRejoinSchedules -seed %d)", seed, err, seed)
		}
	}
}
