package rte

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/boot"
)

// The algorithm choice input comes from the endpoints every process
// received alike: ranks on a host against the cores the launcher told
// (the largest published for the host), never the local CPU count.
func TestHostsCrowded(t *testing.T) {
	eps := []boot.Endpoint{
		{Rank: 0, Host: "a", Cores: 1}, // a rank started with a lower count: the largest wins
		{Rank: 1, Host: "a", Cores: 2},
		{Rank: 2, Host: "a", Cores: 2},
		{Rank: 3, Host: "b", Cores: 2},
		{Rank: 4, Host: "b"}, // did not publish cores
		{Rank: 5, Host: "c"}, // nobody on c told its cores
		{Rank: 6, Host: "c"},
		{Rank: 7, Host: "c"},
	}
	var h Hosts
	h.Add(eps)
	procs := func(p ...int) func(int) int { return func(i int) int { return p[i] } }
	for _, tc := range []struct {
		procs []int
		want  bool
	}{
		{[]int{0, 1}, false},
		{[]int{0, 1, 2}, true}, // 3 ranks on a 2-core host
		{[]int{0, 3, 4}, false},
		{[]int{1, 2, 3, 4}, false},
		{[]int{5, 6, 7}, false}, // unknown cores: never crowded
		{[]int{0, 9}, false},    // unknown process
	} {
		if got := h.Crowded(len(tc.procs), procs(tc.procs...)); got != tc.want {
			t.Errorf("crowded(%v) = %v, want %v", tc.procs, got, tc.want)
		}
	}
	// Spawned processes join the table.
	h.Add([]boot.Endpoint{{Rank: 8, Host: "b", Cores: 2}})
	if !h.Crowded(3, procs(3, 4, 8)) {
		t.Error("3 ranks on 2-core host b after a spawn: not crowded")
	}
	// The test override wins.
	h.Force.Store(-1)
	if h.Crowded(3, procs(0, 1, 2)) {
		t.Error("override -1 ignored")
	}
	var run Hosts
	run.OneHost(2)
	if run.Crowded(2, procs(0, 1)) || !run.Crowded(3, procs(0, 1, 2)) {
		t.Error("Run: want crowded exactly above 2 ranks on 2 cores")
	}
	if h.Name(8) != "b" || h.Name(4) != "b" || h.Name(9) != "" || h.Name(-1) != "" {
		t.Errorf("Name: %q %q %q %q, want b b and two unknown", h.Name(8), h.Name(4), h.Name(9), h.Name(-1))
	}
}

// Same: one host for every member, from the same table; under Run every
// process shares the host without a lookup per member.
func TestHostsSame(t *testing.T) {
	var h Hosts
	h.Add([]boot.Endpoint{{Rank: 0, Host: "a"}, {Rank: 1, Host: "a"}, {Rank: 2, Host: "b"}})
	procs := func(p ...int) func(int) int { return func(i int) int { return p[i] } }
	for _, tc := range []struct {
		procs []int
		want  bool
	}{
		{[]int{0, 1}, true},
		{[]int{0, 1, 2}, false},
		{[]int{2}, true},
		{[]int{1, 9}, false}, // unknown process: another host as far as we know
	} {
		if got := h.Same(len(tc.procs), procs(tc.procs...)); got != tc.want {
			t.Errorf("Same(%v) = %v, want %v", tc.procs, got, tc.want)
		}
	}
	var run Hosts
	run.OneHost(2)
	calls := 0
	if !run.Same(10000, func(i int) int { calls++; return i }) || calls != 0 {
		t.Errorf("Run: Same must be true without looking up the %d members (looked up %d)", 10000, calls)
	}
}
