package rma

import (
	"slices"
	"testing"
)

// TestMarkersFence checks a fence epoch's completion at one member of
// four: not done while a live member's marker is missing; a marker of the
// next epoch arriving early counts for that epoch only; done once the
// missing member is known failed, naming it; the epoch is then forgotten
// (its markers do not complete a later wait for the same number).
func TestMarkersFence(t *testing.T) {
	m := NewMarkers(4)
	failed := map[int]bool{}
	isFailed := func(r int) bool { return failed[r] }
	for _, r := range []int{0, 1, 3} {
		m.Fence(1, r)
	}
	m.Fence(2, 2) // member 2 is already in epoch 2
	if _, done := m.FenceDone(1, isFailed, nil); done {
		t.Fatal("epoch 1 done without member 2's marker")
	}
	failed[2] = true
	missing, done := m.FenceDone(1, isFailed, []int{9, 9})
	if !done || !slices.Equal(missing, []int{2}) {
		t.Fatalf("epoch 1: done %v, missing %v; want done, [2]", done, missing)
	}
	failed[2] = false
	if _, done := m.FenceDone(1, isFailed, nil); done {
		t.Fatal("a forgotten epoch completed again")
	}
	for _, r := range []int{0, 1, 3} {
		m.Fence(2, r)
	}
	if missing, done := m.FenceDone(2, isFailed, nil); !done || len(missing) != 0 {
		t.Fatalf("epoch 2: done %v, missing %v; want done, none", done, missing)
	}
	m.Fence(3, -1) // out of range: ignored, no panic
	m.Fence(3, 4)
	m.Post(7)
	m.Complete(-2)
}

// TestMarkersPostComplete checks the generalized active target's counts:
// a post is consumed once (two posts, two Starts); a Wait's completes are
// consumed only when every member of the group completed or failed
// (nothing is taken by a wait that is not done), one per member, and the
// failed ones without a complete are named.
func TestMarkersPostComplete(t *testing.T) {
	m := NewMarkers(3)
	if m.TakePost(1) {
		t.Fatal("a post taken before any arrived")
	}
	m.Post(1)
	m.Post(1)
	if !m.TakePost(1) || !m.TakePost(1) || m.TakePost(1) {
		t.Fatal("two posts are not taken exactly twice")
	}
	if m.TakePost(5) {
		t.Fatal("a post of a member out of range")
	}
	failed := map[int]bool{}
	isFailed := func(r int) bool { return failed[r] }
	group := []int{0, 2}
	m.Complete(0)
	m.Complete(0)
	if _, done := m.TakeCompletes(group, isFailed, nil); done {
		t.Fatal("done without member 2's complete")
	}
	m.Complete(2)
	if dead, done := m.TakeCompletes(group, isFailed, nil); !done || len(dead) != 0 {
		t.Fatalf("first wait: done %v dead %v", done, dead)
	}
	// Member 0's second complete is left; member 2 has none and fails.
	if _, done := m.TakeCompletes(group, isFailed, nil); done {
		t.Fatal("second wait done without member 2")
	}
	failed[2] = true
	dead, done := m.TakeCompletes(group, isFailed, nil)
	if !done || !slices.Equal(dead, []int{2}) {
		t.Fatalf("second wait: done %v dead %v; want done, [2]", done, dead)
	}
	if _, done := m.TakeCompletes([]int{0}, func(int) bool { return false }, nil); done {
		t.Fatal("member 0's complete was consumed twice")
	}
}
