package peertab

import (
	"sync"
	"testing"
)

func TestStoreLoad(t *testing.T) {
	var tab Table[int]
	if tab.Load(0) != nil || tab.Load(-1) != nil {
		t.Fatal("empty table has an entry")
	}
	vals := make([]int, 1000)
	for r := 0; r < len(vals); r += 3 {
		vals[r] = r
		tab.Store(r, &vals[r])
	}
	for r := range vals {
		got := tab.Load(r)
		if (r%3 == 0) != (got != nil) || got != nil && *got != r {
			t.Fatalf("Load(%d) = %v", r, got)
		}
	}
	big := 7
	tab.Store(Dense, &big)
	tab.Store(-5, &big)
	if tab.Load(Dense) != nil || tab.Load(-5) != nil || tab.Load(Dense+1) != nil {
		t.Fatal("a rank outside [0, Dense) was stored")
	}
	tab.Store(Dense-1, &big)
	if tab.Load(Dense-1) != &big {
		t.Fatal("the last dense rank was not stored")
	}
}

// TestConcurrentReaders: readers never see a wrong entry while one writer
// grows the table (run with -race).
func TestConcurrentReaders(t *testing.T) {
	var tab Table[int]
	const n = 5000
	vals := make([]int, n)
	for i := range vals {
		vals[i] = i
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for r := 0; r < n; r += 97 {
					if p := tab.Load(r); p != nil && *p != r {
						t.Errorf("Load(%d) = %d", r, *p)
						return
					}
				}
			}
		}()
	}
	for r := range vals {
		tab.Store(r, &vals[r])
	}
	close(stop)
	wg.Wait()
	for r := range vals {
		if p := tab.Load(r); p == nil || *p != r {
			t.Fatalf("after the stores, Load(%d) = %v", r, p)
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	var tab Table[int]
	v := 1
	for r := range 16 {
		tab.Store(r, &v)
	}
	for i := 0; b.Loop(); i++ {
		if tab.Load(i&15) == nil {
			b.Fatal("nil")
		}
	}
}
