package ftdrive

import (
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/shmagree"
)

// SegmentFits answers package mpi's choice of an agreement segment: a
// communicator the segment can hold (openSegment accepts it), and never
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
		s, srv, err := openSegment(segName(t), n, 0)
		if err == nil {
			if srv != nil {
				srv.stop()
			}
			s.Close()
		}
		if SegmentFits(n) && err != nil {
			t.Errorf("SegmentFits(%d) but the segment is refused: %v", n, err)
		}
	}
}
