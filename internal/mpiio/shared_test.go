package mpiio

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestSharedReserveApply checks the shared pointer's protocol with two
// handles on one side file (two processes' descriptors): reservations
// move the pointer for both; a collective operation with a new key is
// applied once, by whichever handle comes first, and the other gets the
// same base instead of applying it again; an older key is not applied
// again; an error of the operation stores nothing; Close removes the side
// file.
func TestSharedReserveApply(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".f.ftmpi-shfp-x")
	a, b := NewShared(path), NewShared(path)
	if at, err := a.Reserve(10); err != nil || at != 0 {
		t.Fatalf("first reservation: %d, %v", at, err)
	}
	if at, err := b.Reserve(5); err != nil || at != 10 {
		t.Fatalf("second reservation: %d, %v, want 10", at, err)
	}
	add := func(n int64) func(int64) (int64, error) { return func(p int64) (int64, error) { return p + n, nil } }
	if base, err := b.Apply(1, add(100)); err != nil || base != 15 {
		t.Fatalf("apply key 1: base %d, %v, want 15", base, err)
	}
	if base, err := a.Apply(1, add(100)); err != nil || base != 15 {
		t.Fatalf("key 1 again at the other handle: base %d, %v, want 15 (not applied twice)", base, err)
	}
	if p, err := a.Get(); err != nil || p != 115 {
		t.Fatalf("pointer %d, %v, want 115", p, err)
	}
	if a.Key() != 1 || b.Key() != 1 {
		t.Fatalf("keys %d, %d, want 1", a.Key(), b.Key())
	}
	boom := errors.New("boom")
	if _, err := a.Apply(2, func(int64) (int64, error) { return 0, boom }); err != boom {
		t.Fatalf("failing operation: %v, want it returned as is", err)
	}
	if p, _ := b.Get(); p != 115 || a.Key() != 1 {
		t.Fatalf("a failed operation stored something: pointer %d, key %d", p, a.Key())
	}
	a.SetKey(7)
	if a.Key() != 7 {
		t.Fatalf("SetKey: key %d", a.Key())
	}
	a.Close()
	b.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("side file after Close: %v", err)
	}
}

// TestSharedConcurrentReserve checks mutual exclusion: reservations from
// 8 handles at once (the ranks of an in-process job) get disjoint ranges
// that tile the file from 0 on.
func TestSharedConcurrentReserve(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sh")
	const n, each = 8, 50
	var mu sync.Mutex
	var starts []int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	hs := make([]*Shared, n) // closed after all are done: Close removes the side file
	for i := range n {
		hs[i] = NewShared(path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := hs[i]
			for range each {
				at, err := s.Reserve(int64(i + 1))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				starts = append(starts, at, int64(i+1))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, s := range hs {
		s.Close()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	type r struct{ at, n int64 }
	var rs []r
	for i := 0; i < len(starts); i += 2 {
		rs = append(rs, r{starts[i], starts[i+1]})
	}
	slices.SortFunc(rs, func(x, y r) int { return int(x.at - y.at) })
	next := int64(0)
	for _, x := range rs {
		if x.at != next {
			t.Fatalf("reservation at %d, want %d: ranges overlap or leave a gap", x.at, next)
		}
		next += x.n
	}
	if want := int64(each * n * (n + 1) / 2); next != want {
		t.Fatalf("reserved %d, want %d", next, want)
	}
}

// TestSharedOpenError checks that a side file that cannot be made is an
// IOError naming the shared pointer, with the operating system error.
func TestSharedOpenError(t *testing.T) {
	s := NewShared(filepath.Join(t.TempDir(), "missing", "sh"))
	_, err := s.Reserve(1)
	var e *IOError
	if !errors.As(err, &e) || e.What != "the shared file pointer: " || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Reserve in a missing directory: %v", err)
	}
	if s.Path() == "" {
		t.Fatal("no path")
	}
	s.Close()
}
