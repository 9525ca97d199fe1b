package mpi

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/coll"
)

// The measured choice (FTMPI_COLL_HIER unset): only uncrowded layouts,
// only the kinds and sizes measured faster; the modes override it.
func TestHierUseChoice(t *testing.T) {
	old := hierMode.Swap(0)
	defer hierMode.Store(old)
	cases := []struct {
		kind    int
		crowded bool
		n       int
		want    bool
	}{
		{coll.KBarrier, false, 0, true},
		{coll.KBarrier, true, 0, false},
		{coll.KAllreduce, false, 8, true},
		{coll.KAllreduce, false, 64 << 10, true},
		{coll.KAllreduce, true, 8, false},
		{coll.KBcast, false, 8, false},
		{coll.KBcast, false, 64 << 10, true},
		{coll.KReduce, false, 8, true},
		{coll.KReduce, false, 64 << 10, false},
		{coll.KAllgather, false, 8, true},
		{coll.KAllgather, false, 64 << 10, false},
		{coll.KGather, false, 8, false},
	}
	for _, tc := range cases {
		if got := hierUse(tc.kind, tc.crowded, tc.n); got != tc.want {
			t.Errorf("hierUse(kind %d, crowded %v, %d B) = %v, want %v", tc.kind, tc.crowded, tc.n, got, tc.want)
		}
	}
	for mode, want := range map[int32]bool{-1: false, 1: true} {
		hierMode.Store(mode)
		if got := hierUse(coll.KGather, true, 1<<20); got != want {
			t.Errorf("mode %d: %v, want %v", mode, got, want)
		}
	}
}
