package coll

import (
	"fmt"
	"testing"
	"unsafe"
)

func TestSigRoundTrip(t *testing.T) {
	for _, c := range []struct{ kind, op, root, count int }{
		{KBarrier, 0, 0, 0}, {KBcast, 0, 7, 4}, {KReduce, 3, SigMaxRoot, SigMaxCount}, {KExscan, 31, 0, 1},
	} {
		s := MakeSig(c.kind, c.op, c.root, c.count)
		if s == 0 || s.Kind() != c.kind || s.Op() != c.op || s.Root() != c.root || s.Count() != c.count {
			t.Errorf("%+v: %#x unpacks to %d %d %d %d", c, uint64(s), s.Kind(), s.Op(), s.Root(), s.Count())
		}
	}
	if s := MakeSig(KBcast, 0, SigMaxRoot+5, SigMaxCount+5); s.Root() != SigMaxRoot || s.Count() != SigMaxCount {
		t.Errorf("saturation: %d %d", s.Root(), s.Count())
	}
	if s := MakeSig(KGatherv, 0, 1, -1); s.Count() != 0 {
		t.Errorf("no count: %d", s.Count())
	}
	if MakeSig(KBcast, 0, 0, 4) == MakeSig(KReduce, 0, 0, 4) || MakeSig(KBcast, 0, 0, 4) == MakeSig(KBcast, 0, 1, 4) {
		t.Error("different calls, one signature")
	}
	// Every kind's tag is the sequence number's; the second phase differs.
	if TagColl(5) != Tag(KColl, 5) || PhaseTags(5)[0] == PhaseTags(5)[1] || TagColl(5) == TagColl(6) {
		t.Error("tags")
	}
	if Tag(KInter+KBarrier, 5) == TagColl(5) {
		t.Error("an intercommunicator's internal tag equals a public collective's")
	}
}

// TestCheckTags: the signature check of a call (TagCheck, both phases)
// uses tags no call, phase or intercommunicator set uses, and a failure
// of the call poisons them (PhaseTags).
func TestCheckTags(t *testing.T) {
	const seq = 7
	pt := PhaseTags(seq)
	if pt[2] != TagCheck(seq) || pt[3] != TagCheck(seq)+kPhase2<<24 {
		t.Errorf("PhaseTags %x: no check tags", pt)
	}
	if !IsCheck(pt[2]) || !IsCheck(pt[3]) || IsCheck(pt[0]) || IsCheck(pt[1]) || IsCheck(-5) || IsCheck(Tag(KInter+KBarrier, seq)) {
		t.Error("IsCheck")
	}
	used := map[int32]string{}
	add := func(tag int32, what string) {
		if prev, ok := used[tag]; ok {
			t.Errorf("tag %x: %s and %s", tag, prev, what)
		}
		used[tag] = what
	}
	for i, tag := range pt {
		add(tag, fmt.Sprintf("PhaseTags[%d]", i))
	}
	for k := KBarrier; k <= KNeighborAlltoallv; k++ {
		add(Tag(KInter+k, seq), fmt.Sprintf("inter kind %d", k))
		add(Tag(KInter+k, seq)+kPhase2<<24, fmt.Sprintf("inter kind %d phase 2", k))
	}
}

func TestSetSize(t *testing.T) {
	// A Set is allocated twice per collective call (Call): the signature
	// must not make it larger than the 96 bytes it was before.
	if n := unsafe.Sizeof(Set{}); n > 96 {
		t.Errorf("Set is %d bytes", n)
	}
}
