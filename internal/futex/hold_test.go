package futex

import "testing"

// Hold's verdicts: no while another member's process id is this member's
// (decided for good), the caller's choice while some id is not known (not
// decided: asked again), yes once every id is known and differs (decided).
func TestHoldOnlyAsSoleProcess(t *testing.T) {
	for _, unknownHolds := range []bool{false, true} {
		pids := []uint32{100, 0, 0}
		pid := func(j int) uint32 { return pids[j] }
		var h Hold
		if got := h.OK(3, 0, pid, unknownHolds); got != unknownHolds || h.v != 0 {
			t.Fatalf("unknownHolds %v, no other id known: OK %v, state %d, want %v undecided", unknownHolds, got, h.v, unknownHolds)
		}
		pids[1] = 101 // another process
		if got := h.OK(3, 0, pid, unknownHolds); got != unknownHolds || h.v != 0 {
			t.Fatalf("unknownHolds %v, member 2 unknown: OK %v, state %d, want %v undecided", unknownHolds, got, h.v, unknownHolds)
		}
		pids[2] = 102
		if !h.OK(3, 0, pid, unknownHolds) || h.v != 1 {
			t.Fatalf("unknownHolds %v, every other member in another process: OK false or undecided (state %d)", unknownHolds, h.v)
		}
		pids[2] = 100 // ignored: decided
		if !h.OK(3, 0, pid, unknownHolds) {
			t.Fatalf("unknownHolds %v: a decided yes changed", unknownHolds)
		}

		// Another member in this process: no at once, even with an id
		// still unknown, and for good.
		pids = []uint32{0, 100, 100}
		var g Hold
		if g.OK(3, 1, pid, unknownHolds) || g.v != -1 {
			t.Fatalf("unknownHolds %v, member 2 in this process: OK true or undecided (state %d)", unknownHolds, g.v)
		}
		pids[2] = 102
		pids[0] = 103
		if g.OK(3, 1, pid, unknownHolds) {
			t.Fatalf("unknownHolds %v: a decided no changed", unknownHolds)
		}
	}
}

// A sole member (n 1) holds: there is no other member to need the
// processor.
func TestHoldSoleMember(t *testing.T) {
	var h Hold
	if !h.OK(1, 0, func(int) uint32 { return 7 }, false) || h.v != 1 {
		t.Fatal("a group of one does not hold")
	}
}
