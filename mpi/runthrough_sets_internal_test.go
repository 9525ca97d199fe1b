package mpi

import (
	"slices"
	"testing"
)

// The chapter-17 set checks the run-through model reads its state with.
func TestRunThroughUnrecognized(t *testing.T) {
	for _, tc := range []struct{ lost, rec, want []int }{
		{nil, nil, nil},
		{[]int{1, 4}, nil, []int{1, 4}},
		{[]int{1, 4}, []int{1}, []int{4}},
		{[]int{1, 4}, []int{1, 4, 6}, nil},
	} {
		if got := unrecognizedOf(tc.lost, tc.rec); !slices.Equal(got, tc.want) {
			t.Errorf("unrecognizedOf(%v, %v) = %v, want %v", tc.lost, tc.rec, got, tc.want)
		}
	}
}

func TestRunThroughWildcardsDisabled(t *testing.T) {
	for _, tc := range []struct {
		failed, reenabled []int
		want              bool
	}{
		{nil, nil, false},
		{[]int{2}, nil, true},
		{[]int{2}, []int{2}, false},
		{[]int{2, 5}, []int{2}, true},
	} {
		if got := wildcardsDisabled(tc.failed, tc.reenabled); got != tc.want {
			t.Errorf("wildcardsDisabled(%v, %v) = %v, want %v", tc.failed, tc.reenabled, got, tc.want)
		}
	}
}
