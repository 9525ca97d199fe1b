package growth

import (
	"math"
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
