package ftdrive

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/shmagree"
)

// SegmentFits answers package mpi's choice of an agreement segment: a
// communicator the segment can hold (shmagree.Open accepts it), and never
// one of fewer than 2 members (an agreement of one needs no segment).
func TestSegmentFits(t *testing.T) {
	for _, n := range []int{-1, 0, 1, 2, 3, shmagree.MaxMembers, shmagree.MaxMembers + 1, 1000} {
		want := n >= 2 && n <= shmagree.MaxMembers
		if got := SegmentFits(n); got != want {
			t.Errorf("SegmentFits(%d) = %v, want %v", n, got, want)
		}
		if n < 1 {
			continue
		}
		s, err := shmagree.Open(filepath.Join(t.TempDir(), fmt.Sprint("seg-", n)), n, 0)
		if err == nil {
			s.Close(true)
		}
		if SegmentFits(n) && err != nil {
			t.Errorf("SegmentFits(%d) but shmagree.Open refuses it: %v", n, err)
		}
	}
}
