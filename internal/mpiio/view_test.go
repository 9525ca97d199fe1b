package mpiio

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
)

func runsOf(r ...int64) func(func(int64, int64) bool) {
	return func(yield func(int64, int64) bool) {
		for i := 0; i+1 < len(r); i += 2 {
			if !yield(r[i], r[i+1]) {
				return
			}
		}
	}
}

// TestCheckLayout checks each rule of a view's typemap: a negative
// displacement, a decrease (a run starting before the start of the one
// before), an overlap (only on a writable file; a run overlapping the end
// of the one before but not its start is an overlap, not a decrease), and
// that a good typemap passes.
func TestCheckLayout(t *testing.T) {
	for _, c := range []struct {
		name     string
		runs     []int64
		writable bool
		want     LayoutKind
		off      int64
		prev     int64
	}{
		{"ascending", []int64{0, 4, 8, 4}, true, 0, 0, 0},
		{"negative", []int64{-4, 4}, false, Negative, -4, 0},
		{"decreasing", []int64{8, 4, 0, 4}, false, Decreasing, 0, 8},
		{"overlap written", []int64{0, 8, 4, 8}, true, Overlapping, 4, 8},
		{"overlap read only", []int64{0, 8, 4, 8}, false, 0, 0, 0},
	} {
		e := CheckLayout(runsOf(c.runs...), c.writable)
		if c.want == 0 {
			if e != nil {
				t.Errorf("%s: %v, want none", c.name, e)
			}
			continue
		}
		if e == nil || e.Kind != c.want || e.Off != c.off || e.Prev != c.prev {
			t.Errorf("%s: %+v, want kind %d at %d (prev %d)", c.name, e, c.want, c.off, c.prev)
		}
	}
}

// TestNewView checks the flattening: adjacent runs merge (a tile of one
// segment filling its extent is contiguous), data beyond the upper bound
// and sizes that would divide by zero are refused, and the offset mapping
// of a strided view (2 bytes of every 5, from byte 3 on).
func TestNewView(t *testing.T) {
	v, err := NewView(0, 4, 8, 8, runsOf(0, 4, 4, 4))
	if err != nil || !v.Contig() || v.Segments() != 1 || v.TileBytes() != 8 || v.TileExtent() != 8 {
		t.Fatalf("two adjacent runs: %v %+v, want one contiguous segment", err, v)
	}
	var le *LayoutError
	if _, err := NewView(0, 1, 4, 4, runsOf(2, 4)); !errors.As(err, &le) || le.Kind != Beyond {
		t.Fatalf("data beyond the extent: %v, want Beyond", err)
	}
	for _, c := range [][3]int64{{-1, 1, 4}, {0, 0, 4}, {0, 1, 0}} {
		if _, err := NewView(c[0], c[1], c[2], 4, runsOf(0, 1)); !errors.As(err, &le) || le.Kind != BadSizes {
			t.Fatalf("disp %d esize %d extent %d: %v, want BadSizes", c[0], c[1], c[2], err)
		}
	}
	if _, err := NewView(0, 1, 4, 4, runsOf()); !errors.As(err, &le) || le.Kind != BadSizes {
		t.Fatalf("no data: %v, want BadSizes", err)
	}
	v, err = NewView(3, 1, 5, 5, runsOf(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	got := v.Extents(nil, 1, 4)
	want := []Ext{{5, 1}, {9, 2}, {14, 1}}
	if len(got) != len(want) {
		t.Fatalf("extents %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("extents %v, want %v", got, want)
		}
	}
	for b, n := range map[int64]int64{0: 0, 3: 0, 4: 0, 5: 1, 6: 2, 9: 2, 10: 3, 11: 4, 100: 39} {
		if got := v.BytesBefore(b); got != n {
			t.Errorf("BytesBefore(%d) = %d, want %d", b, got, n)
		}
	}
	if lo, hi := Span(want); lo != 5 || hi != 15 {
		t.Errorf("Span = %d, %d, want 5, 15", lo, hi)
	}
	if lo, hi := Span([]Ext{{8, 2}, {4, 2}}); lo != 4 || hi != 10 {
		t.Errorf("Span of an overlapping read-only view = %d, %d, want 4, 10", lo, hi)
	}
	for size, n := range map[int64]int{0: 0, 5: 0, 6: 1, 10: 2, 11: 3, 14: 3, 15: 4, 99: 4} {
		if got := ValidBytes(want, size); got != n {
			t.Errorf("ValidBytes(size %d) = %d, want %d", size, got, n)
		}
	}
}

// TestSwap checks external32's conversion: each element of a run reversed
// by its unit (a complex number's two halves each), bytes untouched,
// the pattern repeated over b, a partial element at the end left as it
// is; a pattern with no bytes returns at once (no endless loop); ToFile
// copies and leaves the caller's data as they are, FromFile converts back.
func TestSwap(t *testing.T) {
	runs := []SwapRun{{Bytes: 4, Unit: 4}, {Bytes: 1, Unit: 1}, {Bytes: 8, Unit: 4}}
	b := []byte{1, 2, 3, 4, 9, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 7, 0xa, 0xb}
	Swap(runs, b)
	want := []byte{4, 3, 2, 1, 9, 4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1, 7, 0xa, 0xb}
	if !bytes.Equal(b, want) {
		t.Fatalf("Swap = %v, want %v", b, want)
	}
	Swap(nil, b)
	Swap([]SwapRun{{0, 4}, {-3, 2}}, b)
	if !bytes.Equal(b, want) {
		t.Fatalf("an empty pattern changed the data: %v", b)
	}
	v := ByteView()
	v.Ext32, v.Conv = true, []SwapRun{{Bytes: 2, Unit: 2}}
	mem := []byte{1, 2, 3, 4}
	file := v.ToFile(mem)
	if !bytes.Equal(mem, []byte{1, 2, 3, 4}) || !bytes.Equal(file, []byte{2, 1, 4, 3}) {
		t.Fatalf("ToFile: memory %v, file %v", mem, file)
	}
	v.FromFile(file)
	if !bytes.Equal(file, mem) {
		t.Fatalf("FromFile(ToFile(b)) = %v, want %v", file, mem)
	}
	if n := ByteView(); &n.ToFile(mem)[0] != &mem[0] {
		t.Fatal("a native view copied the data")
	}
}

// TestOrderedAndKey checks the rank-order placement of an ordered access
// (ranks that take no part keep their place with nothing) and the key of
// a collective shared-pointer operation (one more than the largest live
// key).
func TestOrderedAndKey(t *testing.T) {
	rows := [][]int64{{3, 7}, {100, 9}, {5, 2}, {2, 4}}
	live := []bool{true, false, true, true}
	for rank, want := range []int64{0, 3, 3, 8} {
		p, total := Ordered(rows, live, rank)
		if p != want || total != 10 {
			t.Errorf("rank %d: prefix %d total %d, want %d, 10", rank, p, total, want)
		}
	}
	if k := AgreedKey(rows, live, 1); k != 8 {
		t.Errorf("AgreedKey = %d, want 8 (rank 1's 9 took no part)", k)
	}
}

// TestLockFile checks the atomic mode's lock: a write lock excludes a
// second descriptor's write lock until released (flock belongs to the open
// file description, so two descriptors of one process exclude each other).
func TestLockFile(t *testing.T) {
	path := t.TempDir() + "/f"
	a, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	unlock := LockFile(a, true)
	if err := syscall.Flock(int(b.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Fatalf("a read lock under a write lock: %v, want EWOULDBLOCK", err)
	}
	unlock()
	if err := syscall.Flock(int(b.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatalf("a read lock after the write lock's release: %v", err)
	}
	syscall.Flock(int(b.Fd()), syscall.LOCK_UN)
	LockFile(b, false)() // a read lock is taken and released
	if err := syscall.Flock(int(a.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the write lock after the read lock's release: %v", err)
	}
}
