package shmagree

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// files are the memory files of the tests' segments, by name: members
// opening one name map one file (each its own mapping, as processes do).
var files = struct {
	sync.Mutex
	fd map[string]int
}{fd: map[string]int{}}

// open maps member me's view of the segment of n members named name
// (made at its first open).
func open(t *testing.T, name string, n, me int) *Seg {
	t.Helper()
	files.Lock()
	fd, ok := files.fd[name]
	if !ok {
		var err error
		if fd, err = unix.MemfdCreate("test", unix.MFD_CLOEXEC); err != nil {
			files.Unlock()
			t.Fatal(err)
		}
		if err := unix.Ftruncate(fd, int64(Size(n))); err != nil {
			files.Unlock()
			t.Fatal(err)
		}
		files.fd[name] = fd
		t.Cleanup(func() {
			files.Lock()
			delete(files.fd, name)
			files.Unlock()
			unix.Close(fd)
		})
	}
	files.Unlock()
	s, err := Map(fd, n, me)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
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

// A member's first sleeps hold the processor only as the sole process
// among the members (futex.Hold), and, this package's choice, while a
// member has not opened the segment yet (it counts as another process).
func TestSegSleepHoldsOnlyAlone(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, filepath.Join(dir, "one"), 2, 0), open(t, filepath.Join(dir, "one"), 2, 1)
	if a.holdOK() || b.holdOK() {
		t.Fatal("members in one process hold the processor")
	}
	c := open(t, filepath.Join(dir, "two"), 3, 0)
	if !c.holdOK() {
		t.Fatal("not held before the other members opened the segment")
	}
	c.u32(offPids + 4).Store(uint32(os.Getpid()) + 1) // member 1 in another process
	if !c.holdOK() {
		t.Fatal("not held with member 2's process id unknown")
	}
	open(t, filepath.Join(dir, "two"), 3, 2) // member 2 in this process
	if c.holdOK() || c.holdOK() {
		t.Fatal("held with another member in this process")
	}
	d := open(t, filepath.Join(dir, "three"), 2, 0)
	d.u32(offPids + 4).Store(uint32(os.Getpid()) + 1)
	if !d.holdOK() {
		t.Fatal("not held with every other member in another process")
	}
}

// Crowded (more members than cores), a waiter sleeps at once, its first
// sleep holding the processor, and is woken by the last publisher.
func TestSegCrowdedSleepIsHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	a, b := open(t, path, 2, 0), open(t, path, 2, 1)
	a.crowded, a.yields = true, 0
	a.u32(offPids + 4).Store(uint32(os.Getpid()) + 1) // b as if in another process
	done := make(chan agree.Value, 1)
	go func() {
		v, o, err := a.Agree(0, agree.Value{Flags: 3}, never, nil, nil)
		if err != nil || o != Decided {
			v = agree.Value{Flags: 1 << 63}
		}
		done <- v
	}()
	waitSleepers(t, a, 1)
	v, o, err := b.Agree(0, agree.Value{Flags: 6}, never, nil, nil)
	if err != nil || o != Decided || v.Flags != 2 {
		t.Fatalf("b: %v %v %v, want flags 2 Decided", v, o, err)
	}
	select {
	case v := <-done:
		if v.Flags != 2 {
			t.Fatalf("a decided %v, want flags 2", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the sleeper was not woken")
	}
	if h := a.held.Load(); h == 0 {
		t.Fatal("no held sleep")
	}
}

// One ring an instance: only a member that decides at its first pass
// (the last publisher is one) rings; a member that waited (spinning here)
// for an entry does not, though another member still sleeps.
func TestSegOneRingAnInstance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "seg")
	const n = 3
	segs := make([]*Seg, n)
	for i := range n {
		segs[i] = open(t, path, n, i)
	}
	segs[0].crowded, segs[0].yields = true, 0 // sleeps at once (not held: one process)
	segs[1].crowded = false
	spin := Spin
	Spin = 1 << 40 // member 1 spins until it decides
	t.Cleanup(func() { Spin = spin })
	var wg sync.WaitGroup
	out := make([]Outcome, n)
	agreeAt := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, out[i], _ = segs[i].Agree(0, agree.Value{Flags: 1}, never, nil, nil)
		}()
	}
	agreeAt(0)
	waitSleepers(t, segs[0], 1)
	agreeAt(1)
	deadline := time.Now().Add(10 * time.Second)
	for segs[2].Load(1, 0) != word(1, kindWritten) {
		if time.Now().After(deadline) {
			t.Fatal("member 1 did not publish")
		}
		time.Sleep(time.Millisecond)
	}
	if _, o, _ := segs[2].Agree(0, agree.Value{Flags: 1}, never, nil, nil); o != Decided {
		t.Fatalf("member 2: %v", o)
	}
	wg.Wait()
	var rings uint64
	for i := range n {
		if out[i] != Decided && i < 2 {
			t.Fatalf("member %d: %v", i, out[i])
		}
		rings += segs[i].rings.Load()
	}
	if rings != 1 {
		t.Fatalf("%d rings for one instance, want 1 (the last publisher's)", rings)
	}
}

// Combine of equal contributions (decoded once) is the fold of them, as
// of different ones.
func TestCombineEqualValues(t *testing.T) {
	v := agree.Value{Flags: 0xf0f0, Union: agree.SetOf(1, 5, 6, 7), Inter: agree.SetOf(0, 2, 9), KindMin: 3, KindMax: 3}
	w := agree.Value{Flags: 0x0ff0, Union: agree.SetOf(2), Inter: agree.SetOf(0, 9), KindMin: 4, KindMax: 4}
	b, c := agree.EncodeValue(v), agree.EncodeValue(w)
	for _, vals := range [][][]byte{{b, b, b}, {b, c, b}, {c, c}} {
		want, _ := agree.DecodeValue(vals[0])
		for _, x := range vals[1:] {
			y, _ := agree.DecodeValue(x)
			want = want.Combine(y)
		}
		got, err := Combine(vals)
		if err != nil || !got.Equal(want) {
			t.Fatalf("Combine: %v %v, want %v", got, err, want)
		}
	}
}
