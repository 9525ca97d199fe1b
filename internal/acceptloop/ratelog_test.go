package acceptloop

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// lines is a RateLog's output, one channel send per line.
func lines() (chan string, func(string)) {
	ch := make(chan string, 1000)
	return ch, func(s string) { ch <- s }
}

func next(t *testing.T, ch chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no log line")
		return ""
	}
}

// TestRateLogFlood: 100 lines in a burst of 3: three logged as they come,
// then one summary at the end of the window naming the count and the
// last line.
func TestRateLogFlood(t *testing.T) {
	ch, logf := lines()
	r := &RateLog{Logf: logf, Burst: 3, Window: 50 * time.Millisecond}
	defer r.Stop()
	for i := range 100 {
		r.Printf("refused %d", i)
	}
	for i := range 3 {
		if got, want := next(t, ch), fmt.Sprintf("refused %d", i); got != want {
			t.Fatalf("line %d: %q, want %q", i, got, want)
		}
	}
	if got := next(t, ch); !strings.HasPrefix(got, "refused 99 (and 96 more such lines in ") {
		t.Fatalf("summary %q", got)
	}
	select {
	case s := <-ch:
		t.Fatalf("an extra line %q", s)
	default:
	}
}

// TestRateLogStop: Stop logs what was not logged yet; later lines are
// dropped.
func TestRateLogStop(t *testing.T) {
	ch, logf := lines()
	r := &RateLog{Logf: logf, Burst: 1, Window: time.Hour}
	for i := range 5 {
		r.Printf("refused %d", i)
	}
	if got := next(t, ch); got != "refused 0" {
		t.Fatal(got)
	}
	r.Stop()
	if got := next(t, ch); !strings.HasPrefix(got, "refused 4 (and 3 more such lines in ") {
		t.Fatalf("summary %q", got)
	}
	r.Printf("after stop")
	if len(ch) != 0 {
		t.Fatalf("a line after Stop: %q", <-ch)
	}
}

// TestRateLogQuiet: lines far enough apart are each logged.
func TestRateLogQuiet(t *testing.T) {
	ch, logf := lines()
	r := &RateLog{Logf: logf, Burst: 2, Window: time.Hour}
	defer r.Stop()
	r.Printf("a")
	r.Printf("b")
	if next(t, ch) != "a" || next(t, ch) != "b" {
		t.Fatal("lines within the burst were not logged")
	}
}
