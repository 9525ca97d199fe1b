package shmagree

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

func open(t *testing.T, path string, n, me int) *Seg {
	t.Helper()
	s, err := Open(path, n, me)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(true) })
	return s
}

// waitSleepers waits until s has k sleepers (a deadline, not a sleep).
func waitSleepers(t *testing.T, s *Seg, k uint32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.sleepers.Load() < k {
		if time.Now().After(deadline) {
			t.Fatalf("no %d sleepers within 10 s", k)
		}
		time.Sleep(time.Millisecond)
	}
}

func never(int) bool { return false }

// Members sharing one file decide every instance on the segment, the
// combination of all values (entries reused every second instance).
func TestSegDecides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	const n, rounds = 3, 20
	segs := make([]*Seg, n)
	for i := range n {
		segs[i] = open(t, path, n, i)
	}
	val := func(seq, i int) agree.Value {
		return agree.Value{Flags: ^uint64(1 << ((seq + i) % 64)), Union: agree.SetOf(i, 10+seq), Inter: agree.SetOf(0, 1, 2, 3+i)}
	}
	got := make([][]agree.Value, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := range rounds {
				v, o, err := segs[i].Agree(uint64(seq), val(seq, i), never, nil, nil)
				if err != nil || o != Decided {
					errs <- errors.New(o.String())
					return
				}
				got[i] = append(got[i], v)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("outcome %v, want Decided", err)
	}
	for seq := range rounds {
		want := val(seq, 0).Combine(val(seq, 1)).Combine(val(seq, 2))
		for i := range n {
			if !got[i][seq].Equal(want) {
				t.Fatalf("member %d instance %d: %v, want %v", i, seq, got[i][seq], want)
			}
		}
	}
}

// A member that learns of a failure while asleep is woken by Wake, fences
// the missing member and falls back; the fenced member, arriving late,
// falls back too.
func TestSegFailureWakesAndFences(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	a, b := open(t, path, 2, 0), open(t, path, 2, 1)
	var failed atomic.Bool
	done := make(chan Outcome, 1)
	go func() {
		_, o, _ := a.Agree(0, agree.Value{Flags: 1}, func(int) bool { return failed.Load() }, nil, nil)
		done <- o
	}()
	waitSleepers(t, a, 1)
	failed.Store(true)
	a.Wake()
	select {
	case o := <-done:
		if o != Fallback {
			t.Fatalf("survivor: %v, want Fallback", o)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the survivor was not woken by Wake")
	}
	if _, o, _ := b.Agree(0, agree.Value{Flags: 1}, never, nil, nil); o != Fallback {
		t.Fatalf("fenced member: %v, want Fallback", o)
	}
}

// A value too large for an entry fences its own member: every member
// falls back.
func TestSegTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	a, b := open(t, path, 2, 0), open(t, path, 2, 1)
	var big agree.Value
	for i := range 1000 {
		big.Union.Add(40 * i)
	}
	if len(agree.EncodeValue(big)) <= maxData {
		t.Fatal("the large value fits")
	}
	if _, o, _ := a.Agree(0, big, never, nil, nil); o != Fallback {
		t.Fatalf("large value: %v, want Fallback", o)
	}
	if _, o, _ := b.Agree(0, agree.Value{}, never, nil, nil); o != Fallback {
		t.Fatalf("the other member: %v, want Fallback", o)
	}
}

// Members that map different files (they do not share the segment) fall
// back after Patience, and the segment is then off: the next instance
// falls back at once.
func TestSegSeparateFilesDisable(t *testing.T) {
	old := Patience
	Patience = 20 * time.Millisecond
	defer func() { Patience = old }()
	dir := t.TempDir()
	segs := []*Seg{open(t, filepath.Join(dir, "a"), 2, 0), open(t, filepath.Join(dir, "b"), 2, 1)}
	var wg sync.WaitGroup
	outs := make([]Outcome, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, outs[i], _ = segs[i].Agree(0, agree.Value{}, never, nil, nil)
		}()
	}
	wg.Wait()
	for i, s := range segs {
		if outs[i] != Fallback || !s.Disabled() {
			t.Fatalf("member %d: %v, disabled %v; want Fallback, disabled", i, outs[i], s.Disabled())
		}
		if _, o, _ := s.Agree(1, agree.Value{}, never, nil, nil); o != Fallback {
			t.Fatalf("member %d, next instance: %v", i, o)
		}
	}
}

// A late member does not turn the segment off: the waiter fences it after
// Patience (both fall back), and the next instance is decided here.
func TestSegLateMemberKeepsSegment(t *testing.T) {
	old := Patience
	Patience = 20 * time.Millisecond
	defer func() { Patience = old }()
	path := filepath.Join(t.TempDir(), "seg")
	a, b := open(t, path, 2, 0), open(t, path, 2, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // instance 0 on the segment, so each has seen the other write
		defer wg.Done()
		b.Agree(0, agree.Value{}, never, nil, nil)
	}()
	if _, o, _ := a.Agree(0, agree.Value{}, never, nil, nil); o != Decided {
		t.Fatalf("instance 0: %v", o)
	}
	wg.Wait()
	if _, o, _ := a.Agree(1, agree.Value{}, never, nil, nil); o != Fallback || a.Disabled() {
		t.Fatalf("instance 1 alone: %v, disabled %v; want Fallback, on", o, a.Disabled())
	}
	if _, o, _ := b.Agree(1, agree.Value{}, never, nil, nil); o != Fallback {
		t.Fatalf("instance 1, late member: %v", o)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.Agree(2, agree.Value{}, never, nil, nil)
	}()
	if _, o, _ := a.Agree(2, agree.Value{}, never, nil, nil); o != Decided {
		t.Fatalf("instance 2: %v", o)
	}
	wg.Wait()
}

// Abort ends a sleeping wait with ErrStopped.
func TestSegAbortWakes(t *testing.T) {
	a := open(t, filepath.Join(t.TempDir(), "seg"), 2, 0)
	abort := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := a.Agree(0, agree.Value{}, never, abort, nil)
		done <- err
	}()
	waitSleepers(t, a, 1)
	close(abort)
	select {
	case err := <-done:
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("%v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("abort did not end the wait")
	}
}

// Close removes the file only if its name is still this segment's.
func TestSegCloseRemovesOwnFileOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	a := open(t, path, 2, 0)
	a.Remove()
	b := open(t, path, 2, 1) // a new file under the same name
	a.Close(true)
	if _, err := Open(path, 2, 0); err != nil {
		t.Fatal(err)
	}
	b.Close(true)
}
