package rma

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/rma/segment/segtest"
)

// shareAll runs ShareWindow at every member of cfgs (Rank, Size and
// Allgather are filled in).
func shareAll(cfgs []SharedConfig) ([]*SharedMem, []error) {
	g := &segtest.Gather{N: len(cfgs)}
	segs, errs := make([]*SharedMem, len(cfgs)), make([]error, len(cfgs))
	var wg sync.WaitGroup
	for r := range cfgs {
		c := cfgs[r]
		c.Rank, c.Size, c.Allgather = r, len(cfgs), g.Member(r)
		wg.Go(func() { segs[r], errs[r] = ShareWindow(c) })
	}
	wg.Wait()
	return segs, errs
}

func unmapAll(segs []*SharedMem) {
	for _, s := range segs {
		if s != nil {
			s.Unmap()
		}
	}
}

// Every member maps one segment: the parts are contiguous in rank order
// when rank 0 does not ask otherwise (the others' Noncontig is ignored), a
// store through one member's mapping is seen through another's, and the
// query answers each part, MPI_PROC_NULL's lowest non-empty one, and
// refuses a rank beyond the members.
func TestShareWindowContiguous(t *testing.T) {
	t.Setenv("FTMPI_TMPDIR", t.TempDir())
	segs, errs := shareAll([]SharedConfig{{Bytes: 0, Unit: 4}, {Bytes: 24, Unit: 8, Noncontig: true}, {Bytes: 10, Unit: 1}})
	defer unmapAll(segs)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	for r, s := range segs {
		if got := s.Units(); len(got) != 3 || got[0] != 4 || got[1] != 8 || got[2] != 1 {
			t.Fatalf("rank %d: units %v, want [4 8 1]", r, got)
		}
		if s.Members() != 3 {
			t.Fatalf("rank %d: %d members, want 3", r, s.Members())
		}
		if p := s.Part(0); p != nil {
			t.Fatalf("rank %d: rank 0's empty part is %d bytes, want nil", r, len(p))
		}
		p1, p2 := s.Part(1), s.Part(2)
		if len(p1) != 24 || len(p2) != 10 || &p1[:25][24] != &p2[0] {
			t.Fatalf("rank %d: parts of %d and %d bytes, not contiguous", r, len(p1), len(p2))
		}
		size, unit, part, ok := s.Query(-1)
		if !ok || size != 24 || unit != 8 || &part[0] != &p1[0] {
			t.Fatalf("rank %d: Query(PROC_NULL) = %d, %d, ok %v; want rank 1's part", r, size, unit, ok)
		}
		if _, _, _, ok := s.Query(3); ok {
			t.Fatalf("rank %d: Query(3) ok among 3 members", r)
		}
	}
	segs[2].Part(1)[5] = 42
	if got := segs[0].Part(1)[5]; got != 42 {
		t.Fatalf("rank 0 reads %d where rank 2 stored 42 in rank 1's part", got)
	}
}

// Rank 0's Noncontig lays the segment out: each part begins on a page; an
// all-empty segment answers MPI_PROC_NULL with size 0 and rank 0's unit.
func TestShareWindowNoncontigAndEmpty(t *testing.T) {
	t.Setenv("FTMPI_TMPDIR", t.TempDir())
	segs, errs := shareAll([]SharedConfig{{Bytes: 8, Unit: 8, Noncontig: true}, {Bytes: 8, Unit: 8}})
	defer unmapAll(segs)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	p0, p1 := segs[1].Part(0), segs[1].Part(1)
	if d := int(uintptrOf(p1) - uintptrOf(p0)); d != os.Getpagesize() {
		t.Fatalf("rank 1's part begins %d bytes after rank 0's, want a page (%d)", d, os.Getpagesize())
	}
	empty, errs := shareAll([]SharedConfig{{Unit: 2}, {Unit: 4}})
	defer unmapAll(empty)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if size, unit, part, ok := empty[1].Query(-1); !ok || size != 0 || unit != 2 || part != nil {
		t.Fatalf("Query(PROC_NULL) of an empty segment = %d, %d, %v, %v; want 0, 2, nil, true", size, unit, part, ok)
	}
}

// A member's refusal is its own error there and a CodeArgs Error naming it
// elsewhere; a segment rank 0 cannot create is a CodeSegment Error there
// and a CodeArgs Error naming rank 0 elsewhere. Nothing is left in the
// directory.
func TestShareWindowErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("FTMPI_TMPDIR", dir)
	bad := errors.New("negative size")
	segs, errs := shareAll([]SharedConfig{{Bytes: 8, Unit: 1}, {Bytes: -1, Unit: 1, Refuse: bad}, {Bytes: 8, Unit: 1}})
	unmapAll(segs)
	var e *Error
	if errs[1] != bad {
		t.Errorf("refusing rank 1: %v, want its own error", errs[1])
	}
	for _, r := range []int{0, 2} {
		if !errors.As(errs[r], &e) || e.Code != CodeArgs || e.Peer != 1 {
			t.Errorf("rank %d: %v, want a CodeArgs Error naming rank 1", r, errs[r])
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}

	// No directory to create the file in.
	t.Setenv("FTMPI_TMPDIR", "")
	t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
	segs, errs = shareAll([]SharedConfig{{Bytes: 8, Unit: 1}, {Bytes: 8, Unit: 1}})
	unmapAll(segs)
	if !errors.As(errs[0], &e) || e.Code != CodeSegment {
		t.Errorf("rank 0: %v, want a CodeSegment Error", errs[0])
	}
	if !errors.As(errs[1], &e) || e.Code != CodeArgs || e.Peer != 0 {
		t.Errorf("rank 1: %v, want a CodeArgs Error naming rank 0", errs[1])
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
