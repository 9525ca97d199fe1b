package coll

import "testing"

// The measured choice (mode 0, FTMPI_COLL_HIER unset): only uncrowded
// layouts, only the kinds and sizes measured faster; the modes override
// it.
func TestHierUseChoice(t *testing.T) {
	cases := []struct {
		kind    int
		crowded bool
		n       int
		want    bool
	}{
		{KBarrier, false, 0, true},
		{KBarrier, true, 0, false},
		{KAllreduce, false, 8, true},
		{KAllreduce, false, 64 << 10, true},
		{KAllreduce, true, 8, false},
		{KBcast, false, 8, false},
		{KBcast, false, 64 << 10, true},
		{KReduce, false, 8, true},
		{KReduce, false, 64 << 10, false},
		{KAllgather, false, 8, true},
		{KAllgather, false, 64 << 10, false},
		{KGather, false, 8, false},
	}
	for _, tc := range cases {
		if got := HierUse(0, tc.kind, tc.crowded, tc.n); got != tc.want {
			t.Errorf("HierUse(0, kind %d, crowded %v, %d B) = %v, want %v", tc.kind, tc.crowded, tc.n, got, tc.want)
		}
	}
	for mode, want := range map[int32]bool{-1: false, 1: true} {
		if got := HierUse(mode, KGather, true, 1<<20); got != want {
			t.Errorf("mode %d: %v, want %v", mode, got, want)
		}
	}
}

// A layout is a path only when it spans hosts and every member's host is
// known; the crowded hosts are asked once each, with their members.
func TestNewHierPath(t *testing.T) {
	layout := func(s string) func(int) string {
		return func(i int) string { return s[i : i+1] }
	}
	never := func([]int) bool { return false }
	if p := NewHierPath(4, layout("aaaa"), never); p != nil {
		t.Errorf("one host: a path")
	}
	if p := NewHierPath(3, layout("abc"), never); p != nil {
		t.Errorf("one member per host: a path")
	}
	if p := NewHierPath(4, func(i int) string { return []string{"a", "a", "", "b"}[i] }, never); p != nil {
		t.Errorf("a host unknown: a path")
	}
	var asked [][]int
	p := NewHierPath(5, layout("abbab"), func(ms []int) bool { asked = append(asked, ms); return len(ms) == 3 })
	if p == nil {
		t.Fatal("two hosts of 2 and 3 members: no path")
	}
	if len(asked) != 2 || len(asked[0]) != 2 || len(asked[1]) != 3 || asked[1][0] != 1 {
		t.Errorf("crowded asked for %v, want [[0 3] [1 2 4]]", asked)
	}
	if p.Use(0, KBarrier, 0) {
		t.Errorf("a crowded host: the measured choice takes the path")
	}
	if !p.Use(1, KBarrier, 0) {
		t.Errorf("mode 1: the path not taken")
	}
}

// NewHierPath asks for no more hosts than it needs: under mpi.Run no
// host is known, and every rank's every communicator asked all n of them
// and grouped them (O(n^2) at each of a 10,000-rank repair's
// communicators); the first unknown host ends it, and members all on one
// host are not grouped (no allocation but the names).
func TestNewHierPathStopsEarly(t *testing.T) {
	const n = 1000
	asked := 0
	if p := NewHierPath(n, func(int) string { asked++; return "" }, nil); p != nil || asked != 1 {
		t.Errorf("no host known: path %v after asking %d hosts, want nil after 1", p, asked)
	}
	allocs := testing.AllocsPerRun(10, func() {
		if p := NewHierPath(n, func(int) string { return "h" }, nil); p != nil {
			t.Errorf("one host: a path")
		}
	})
	if allocs > 1 {
		t.Errorf("one host of %d members: %v allocations, want at most 1 (the names)", n, allocs)
	}
}
