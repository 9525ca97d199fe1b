package growth

import (
	"math"
	"os"
	"reflect"
	"testing"
)

// TestFitCurve checks the verdicts on curves of known shape: one in log n,
// one in n (flagged), one constant, one in n log n (flagged).
func TestFitCurve(t *testing.T) {
	ns := []int{16, 64, 256, 1024, 4096, 16384}
	curve := func(f func(n float64) float64) []float64 {
		ys := make([]float64, len(ns))
		for i, n := range ns {
			ys[i] = f(float64(n))
		}
		return ys
	}
	for _, c := range []struct {
		name   string
		ys     []float64
		better string
		faster bool
	}{
		{"4log2n", curve(func(n float64) float64 { return 4 * math.Log2(n) }), "log", false},
		{"3+0.5log2n", curve(func(n float64) float64 { return 3 + 0.5*math.Log2(n) }), "log", false},
		{"n/16", curve(func(n float64) float64 { return n / 16 }), "lin", true},
		{"n-1", curve(func(n float64) float64 { return n - 1 }), "lin", true},
		{"nlog2n/100", curve(func(n float64) float64 { return n * math.Log2(n) / 100 }), "lin", true},
		{"const", curve(func(n float64) float64 { return 5 }), "const", false},
	} {
		f := FitCurve(ns, c.ys)
		if f.Better != c.better || f.FasterThanLog != c.faster {
			t.Errorf("%s: better %q faster %v, want %q %v (%+v)", c.name, f.Better, f.FasterThanLog, c.better, c.faster, f)
		}
	}
	f := FitCurve(ns, curve(func(n float64) float64 { return 2 + 4*math.Log2(n) }))
	if math.Abs(f.Log.A-2) > 1e-9 || math.Abs(f.Log.B-4) > 1e-9 || f.Log.R2 < 0.999999 {
		t.Errorf("log fit of 2+4log2(n): %+v", f.Log)
	}
}

// TestBound checks that a bound accepts a curve below it, rejects one that
// crosses it, and that CatchesLinear is the slope at which n crosses it.
func TestBound(t *testing.T) {
	ns := []int{16, 64, 256, 1024, 4096}
	b := Bound{C: 4, D: 8}
	log := []float64{16, 24, 32, 40, 48}
	if err := b.Check("log", ns, log); err != nil {
		t.Error(err)
	}
	s := b.CatchesLinear(ns) // (4*12+8)/4096
	if math.Abs(s-56.0/4096) > 1e-12 {
		t.Errorf("CatchesLinear = %g, want %g", s, 56.0/4096)
	}
	lin := make([]float64, len(ns))
	for i, n := range ns {
		lin[i] = 1.01 * s * float64(n)
	}
	if err := b.Check("lin", ns, lin); err == nil {
		t.Errorf("a curve %g*n passed %v up to 4096", 1.01*s, b)
	}
}

// TestFailed checks that the failed processes are distinct, sorted, in
// range and the same for the same seed.
func TestFailed(t *testing.T) {
	a, b := Failed(1000, 10, 7), Failed(1000, 10, 7)
	if len(a) != 10 {
		t.Fatalf("%d failed, want 10", len(a))
	}
	for i := range a {
		if a[i] != b[i] || a[i] < 0 || a[i] >= 1000 || i > 0 && a[i] <= a[i-1] {
			t.Fatalf("Failed: %v then %v", a, b)
		}
	}
	if Failed(10, 0, 1) != nil || OnePercent(50) != 1 || OnePercent(4096) != 40 {
		t.Error("Failed(…, 0) or OnePercent wrong")
	}
}

// TestDriversReportErrors checks that a driver refuses a run it cannot
// measure, with an error rather than a panic.
func TestDriversReportErrors(t *testing.T) {
	if _, err := Rbcast(RbcastCase{N: 16, Origin: 3, Failed: []int{3}}); err == nil {
		t.Error("Rbcast from a failed origin: no error")
	}
	if _, err := Spare(SpareCase{N: 16}); err == nil {
		t.Error("Spare without a failure: no error")
	}
}

// The headless Finalize fence (a tree) grows as log n: rounds at most
// 2·log2 n + 1 and at most 6·log2 n + 4 messages sent plus received at
// the busiest process (3·log2 n failure-free; a survivor adopts a failed
// child's children), failure-free and with 1% failed (known at entry);
// an all-to-all fence (2(n-1) a process) fails the bound.
func TestGrowthFence(t *testing.T) {
	rounds, busiest := Bound{C: 2, D: 1}, Bound{C: 6, D: 4}
	ns := Sizes(1 << 20)
	var rs, bs []float64
	for _, failed := range []bool{false, true} {
		rs, bs = rs[:0], bs[:0]
		for _, n := range ns {
			var f []int
			if failed {
				f = Failed(n, OnePercent(n), 3)
			}
			row, err := Fence(FenceCase{N: n, Failed: f})
			if err != nil {
				t.Fatal(err)
			}
			rs, bs = append(rs, float64(row.Rounds)), append(bs, float64(row.MsgsMaxPerProc))
		}
		if err := rounds.Check("fence rounds", ns, rs); err != nil {
			t.Errorf("failed %v: %v", failed, err)
		}
		if err := busiest.Check("fence busiest", ns, bs); err != nil {
			t.Errorf("failed %v: %v", failed, err)
		}
	}
	flat := make([]float64, len(ns))
	for i, n := range ns {
		flat[i] = float64(2 * (n - 1))
	}
	if busiest.Check("all-to-all", ns, flat) == nil {
		t.Fatal("the bound lets an all-to-all fence through")
	}
}

// ForwardEach (the runtime's forwarding: each notice message received is
// forwarded on its own) costs the busiest rank as much as one broadcast a
// failure does, where the batched simulation merges a hop's notices:
// what holding a forward would save (docs/benchmarks.md, "What grows
// faster than log n").
func TestDetectForwardEach(t *testing.T) {
	failed := Failed(256, 8, 1)
	var rows [3]Row
	for i, c := range []DetectCase{{N: 256, Failed: failed}, {N: 256, Failed: failed, ForwardEach: true}, {N: 256, Failed: failed, Unbatched: true}} {
		row, err := Detect(c)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = row
	}
	batched, each, unbatched := rows[0].MsgsMaxPerProc, rows[1].MsgsMaxPerProc, rows[2].MsgsMaxPerProc
	t.Logf("busiest rank, 8 of 256 failed: batched %d, forward-each %d, unbatched %d", batched, each, unbatched)
	if each <= batched || each > unbatched {
		t.Fatalf("busiest rank: forward-each %d, want above batched %d and at most unbatched %d", each, batched, unbatched)
	}
}

// Giving an Outbox only to the survivors that can speak in the run (the
// first TellersFail+1: bench/growth beyond 65,536) changes no count: the
// others' Outboxes only hold their Commit, counted as owed.
func TestSpareTellersSameCounts(t *testing.T) {
	for _, n := range []int{64, 1024} {
		for _, fail := range []int{0, 2} {
			c := SpareCase{N: n, Failed: Failed(n, OnePercent(n)+1, 5), TellersFail: fail}
			all, err := Spare(c)
			if err != nil {
				t.Fatal(err)
			}
			c.Tellers = fail + 1
			few, err := Spare(c)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(all, few) {
				t.Errorf("n=%d, %d tellers failing: every survivor's Outbox %+v, the first %d's %+v", n, fail, all, fail+1, few)
			}
		}
	}
	if _, err := Spare(SpareCase{N: 64, Failed: []int{3}, TellersFail: 2, Tellers: 2}); err == nil {
		t.Error("2 tellers modelled of which 2 fail: no error")
	}
}

// TestGrowthSpawn measures the launcher's half of spawning a replacement
// after a failure (SpawnLauncher: the head's policy.Machine) at n = 16 ...
// 1,024 (256 under -race; 4,096 with FTMPI_GROWTH_FULL=1: the head's
// decoding is n^2) and
// asserts 5 rounds, 2 messages at every parent (its request and the
// answer) and 5 at the child whatever n; an O(n) variant (a parent hearing
// from every other) is refused by the parents' bound. The head is the
// star and is asserted exactly so that it shows: 2(n-1) + 5 messages,
// and its requests' bytes linear in n: only the root's lists the
// parents (before session 15 every parent's did: (n-1)^2 bytes, refused
// here by the bound of 8 bytes a parent beyond a fixed 200 a request).
func TestGrowthSpawn(t *testing.T) {
	var ns []int
	top := 1024
	if race {
		top = 256
	}
	for _, n := range Sizes(4096) {
		if n <= top || os.Getenv("FTMPI_GROWTH_FULL") == "1" {
			ns = append(ns, n)
		}
	}
	rankB := Bound{C: 0, D: 2}
	var rounds, rank, child []float64
	for _, n := range ns {
		r, err := SpawnLauncher(n, 1)
		if err != nil {
			t.Fatal(err)
		}
		rounds = append(rounds, float64(r.Rounds))
		rank = append(rank, float64(r.Extra["max_per_rank"]))
		child = append(child, float64(r.Extra["max_per_child"]))
		if got, want := r.Extra["head_msgs"], int64(2*(n-1)+5); got != want {
			t.Errorf("n=%d: %d messages at the head, want 2(n-1)+5 = %d", n, got, want)
		}
		if got, most := r.Extra["request_bytes_at_head"], int64(200*(n-1)+8*(n-1)); got > most {
			t.Errorf("n=%d: %d bytes of requests at the head, want at most 200(n-1) + 8(n-1) = %d (only the root's request lists the parents)", n, got, most)
		}
	}
	for _, err := range []error{
		(Bound{C: 0, D: 5}).Check("rounds", ns, rounds),
		rankB.Check("messages at the busiest parent", ns, rank),
		(Bound{C: 0, D: 5}).Check("messages at the child", ns, child),
	} {
		if err != nil {
			t.Error(err)
		}
	}
	flat := make([]float64, len(ns))
	for i, n := range ns {
		flat[i] = float64(n - 1)
	}
	if rankB.Check("flat", ns, flat) == nil {
		t.Error("the parents' bound accepts n-1 messages a parent")
	}
	t.Logf("n %v: rounds %v, busiest parent %v, child %v", ns, rounds, rank, child)
}
