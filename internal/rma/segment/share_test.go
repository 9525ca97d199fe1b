package segment

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/rma/segment/segtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// gather is an in-memory allgather of n goroutine members; fail, if set,
// makes round fail's calls return segtest.ErrCut (every member's, the same
// round).
type gather struct {
	n    int
	fail int // 1-based round that fails; 0: none
	g    *segtest.Gather
}

func (g *gather) members(rank int) Members {
	return Members{Rank: rank, Size: g.n, Allgather: g.g.Member(rank)}
}

// share runs Share at n goroutine members; refuse and layout are per rank.
func share(t *testing.T, g *gather, refuse func(int) error, layout func(int, [][]int64) (*Segment, int)) ([]*Segment, []error) {
	t.Helper()
	g.g = &segtest.Gather{N: g.n, Fail: g.fail} // fresh rounds
	segs, errs := make([]*Segment, g.n), make([]error, g.n)
	var wg sync.WaitGroup
	for r := range g.n {
		wg.Go(func() {
			segs[r], errs[r] = Share(g.members(r), KindWin, []int64{int64(100 * (r + 1))}, refuse(r),
				func(all [][]int64) (*Segment, int) { return layout(r, all) })
		})
	}
	wg.Wait()
	return segs, errs
}

func sizesOf(all [][]int64) (*Segment, int) {
	sizes, units := make([]int, len(all)), make([]int, len(all))
	for r, w := range all {
		sizes[r], units[r] = int(w[0]), 1
	}
	return New(sizes, units, false)
}

func noRefusal(int) error { return nil }

// emptyDir sets the segments' directory to a new one and returns a check
// that nothing is left in it.
func emptyDir(t *testing.T) func() {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("FTMPI_TMPDIR", dir)
	return func() {
		t.Helper()
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("segment directory after Share: %v, %v; want empty", ents, err)
		}
	}
}

func TestShareMapsOneSegment(t *testing.T) {
	left := emptyDir(t)
	g := &gather{n: 3}
	segs, errs := share(t, g, noRefusal, func(_ int, all [][]int64) (*Segment, int) { return sizesOf(all) })
	left()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: Share: %v", r, err)
		}
	}
	defer func() {
		for _, s := range segs {
			s.Unmap()
		}
	}()
	// Every rank's words made the layout; every process maps the same pages.
	for r, s := range segs {
		if got := s.Size; len(got) != 3 || got[0] != 100 || got[1] != 200 || got[2] != 300 {
			t.Fatalf("rank %d: sizes %v, want [100 200 300]", r, got)
		}
		s.Part(r)[0] = byte(r + 1)
	}
	for r, s := range segs {
		for q := range 3 {
			if got := s.Part(q)[0]; got != byte(q+1) {
				t.Errorf("rank %d sees rank %d's first byte %d, want %d", r, q, got, q+1)
			}
		}
	}
}

func TestShareRefused(t *testing.T) {
	left := emptyDir(t)
	mine := errors.New("rank 1's arguments")
	g := &gather{n: 3}
	segs, errs := share(t, g, func(r int) error {
		if r == 1 {
			return mine
		}
		return nil
	}, func(r int, all [][]int64) (*Segment, int) {
		t.Errorf("rank %d: layout called after a refusal", r)
		return sizesOf(all)
	})
	left()
	for r := range 3 {
		var re *RefusedError
		switch {
		case segs[r] != nil:
			t.Errorf("rank %d: a segment after a refusal", r)
		case r == 1 && errs[r] != mine:
			t.Errorf("rank 1: Share = %v, want its own refusal", errs[r])
		case r != 1 && (!errors.As(errs[r], &re) || re.Rank != 1):
			t.Errorf("rank %d: Share = %v, want a *RefusedError naming rank 1", r, errs[r])
		}
	}
}

func TestShareCreateFails(t *testing.T) {
	t.Setenv("FTMPI_TMPDIR", "")
	t.Setenv("TMPDIR", t.TempDir()+"/missing") // os.TempDir: a directory that does not exist
	g := &gather{n: 2}
	_, errs := share(t, g, noRefusal, func(_ int, all [][]int64) (*Segment, int) { return sizesOf(all) })
	var ce *CreateError
	var re *RefusedError
	if !errors.As(errs[0], &ce) || !errors.Is(errs[0], os.ErrNotExist) {
		t.Errorf("rank 0: Share = %v, want a *CreateError (no such directory)", errs[0])
	}
	if !errors.As(errs[1], &re) || re.Rank != 0 {
		t.Errorf("rank 1: Share = %v, want a *RefusedError naming rank 0", errs[1])
	}
}

func TestShareMapFails(t *testing.T) {
	left := emptyDir(t)
	g := &gather{n: 3}
	segs, errs := share(t, g, noRefusal, func(r int, all [][]int64) (*Segment, int) {
		s, total := sizesOf(all)
		if r == 2 {
			total = 1 << 62 // more than can be mapped
		}
		return s, total
	})
	left()
	for r := range 3 {
		var me *MapError
		if segs[r] != nil || !errors.As(errs[r], &me) {
			t.Errorf("rank %d: Share = %v, %v; want a *MapError and no segment", r, segs[r], errs[r])
			continue
		}
		if r != 2 && me.Err.Error() != "rank 2 could not map it" {
			t.Errorf("rank %d: MapError %v, want rank 2 named", r, me.Err)
		}
	}
}

func TestShareAllgatherCut(t *testing.T) {
	for _, round := range []int{1, 2} {
		left := emptyDir(t)
		g := &gather{n: 2, fail: round}
		segs, errs := share(t, g, noRefusal, func(_ int, all [][]int64) (*Segment, int) { return sizesOf(all) })
		left()
		for r := range 2 {
			if segs[r] != nil || errs[r] != segtest.ErrCut {
				t.Errorf("allgather %d cut: rank %d: Share = %v, %v; want the allgather's error", round, r, segs[r], errs[r])
			}
		}
	}
}
