package ftdrive

import "testing"

// Procs finds every member's position and refuses non-members, as the
// identity and as a sorted list; a sorted list that is the identity is
// stored without a table.
func TestProcsIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Procs
		ids  []int
	}{
		{"identity", IdentityProcs(5), []int{0, 1, 2, 3, 4}},
		{"sorted", SortedProcs([]int{1, 4, 6, 9}), []int{1, 4, 6, 9}},
		{"sorted identity", SortedProcs([]int{0, 1, 2}), []int{0, 1, 2}},
		{"empty", SortedProcs(nil), nil},
	} {
		if tc.p.Len() != len(tc.ids) {
			t.Fatalf("%s: Len %d, want %d", tc.name, tc.p.Len(), len(tc.ids))
		}
		member := map[int]bool{}
		for i, id := range tc.ids {
			member[id] = true
			if got := tc.p.At(i); got != id {
				t.Errorf("%s: At(%d) = %d, want %d", tc.name, i, got, id)
			}
			if got, ok := tc.p.Index(id); !ok || got != i {
				t.Errorf("%s: Index(%d) = %d, %v, want %d, true", tc.name, id, got, ok, i)
			}
		}
		for id := -2; id < 12; id++ {
			if member[id] {
				continue
			}
			if _, ok := tc.p.Index(id); ok {
				t.Errorf("%s: Index(%d) found a non-member", tc.name, id)
			}
			if tc.p.Pos(id) != -1 {
				t.Errorf("%s: Pos(%d) = %d, want -1", tc.name, id, tc.p.Pos(id))
			}
		}
	}
	if SortedProcs([]int{0, 1, 2}).ids != nil {
		t.Error("a sorted identity list keeps a table")
	}
}
