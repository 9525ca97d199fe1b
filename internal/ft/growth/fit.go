package growth

import (
	"fmt"
)

// Line is a least-squares fit y = A + B*x, with its sum of squared
// residuals and R^2 (1 for a perfect fit; 1 too for a constant series
// fitted exactly).
type Line struct {
	A, B float64
	SSE  float64
	R2   float64
}

// fitLine fits y = A + B*x by least squares.
func fitLine(xs, ys []float64) Line {
	n := float64(len(xs))
	if len(xs) == 0 {
		return Line{}
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	var l Line
	if d := n*sxx - sx*sx; len(xs) > 1 && d != 0 {
		l.B = (n*sxy - sx*sy) / d
	}
	l.A = (sy - l.B*sx) / n
	mean := sy / n
	var sst float64
	for i := range xs {
		e := ys[i] - (l.A + l.B*xs[i])
		l.SSE += e * e
		sst += (ys[i] - mean) * (ys[i] - mean)
	}
	l.R2 = 1
	if sst > 0 {
		l.R2 = 1 - l.SSE/sst
	}
	return l
}

// Fit is a curve's two fits and the verdict.
type Fit struct {
	Log Line `json:"log"` // y = A + B*log2(n)
	Lin Line `json:"lin"` // y = A + B*n
	// Better is "log", "lin" or "const" (the curve does not grow: its
	// largest value is at most 10% above its smallest, plus one).
	Better string `json:"better"`
	// SSERatio is SSE(lin) / SSE(log): above 1 the log fit is better (a
	// perfect log fit gives 1e9, so that it stays a JSON number).
	SSERatio float64 `json:"sse_ratio"`
	// GrowthVsLog is (y(n_max)/y(n_min)) / (log2(n_max)/log2(n_min)):
	// about 1 or below for a curve in log n (or slower), far above 1 for a
	// curve in n.
	GrowthVsLog float64 `json:"growth_vs_log"`
	// FasterThanLog flags a curve that grows faster than log n: the linear
	// fit is better and the curve is not constant, or it grew more than
	// twice as fast as log2(n) over the range.
	FasterThanLog bool `json:"faster_than_log"`
}

// FitCurve fits ys (one value per size ns) against a+b*log2(n) and a+b*n.
func FitCurve(ns []int, ys []float64) Fit {
	lx := make([]float64, len(ns))
	nx := make([]float64, len(ns))
	for i, n := range ns {
		lx[i] = Log2(n)
		nx[i] = float64(n)
	}
	f := Fit{Log: fitLine(lx, ys), Lin: fitLine(nx, ys)}
	switch {
	case f.Log.SSE == 0 && f.Lin.SSE == 0:
		f.SSERatio = 1
	case f.Log.SSE == 0:
		f.SSERatio = 1e9
	default:
		f.SSERatio = f.Lin.SSE / f.Log.SSE
	}
	if len(ns) < 2 {
		f.Better = "const"
		return f
	}
	lo, hi := ys[0], ys[len(ys)-1]
	minY, maxY := ys[0], ys[0]
	for _, y := range ys {
		minY, maxY = min(minY, y), max(maxY, y)
	}
	if lo > 0 && ns[0] > 1 {
		f.GrowthVsLog = (hi / lo) / (Log2(ns[len(ns)-1]) / Log2(ns[0]))
	}
	switch {
	case maxY <= 1.1*minY+1:
		f.Better = "const"
	case f.SSERatio >= 1:
		f.Better = "log"
	default:
		f.Better = "lin"
	}
	f.FasterThanLog = f.Better == "lin" || f.Better != "const" && f.GrowthVsLog > 2
	return f
}

// Bound is y <= C*log2(n) + D.
type Bound struct{ C, D float64 }

func (b Bound) String() string { return fmt.Sprintf("%g*log2(n)%+g", b.C, b.D) }

// At is the bound's value at n.
func (b Bound) At(n int) float64 { return b.C*Log2(n) + b.D }

// Check reports the first size at which ys exceeds the bound, or nil.
func (b Bound) Check(what string, ns []int, ys []float64) error {
	for i, n := range ns {
		if ys[i] > b.At(n) {
			return fmt.Errorf("%s at n=%d is %g > %v = %.1f", what, n, ys[i], b, b.At(n))
		}
	}
	return nil
}

// CatchesLinear reports the smallest slope s for which a curve s*n would
// break the bound at the largest of ns: any O(n) curve at least that steep
// fails Check, which is what makes the bound a test of O(log n) growth.
func (b Bound) CatchesLinear(ns []int) float64 {
	n := ns[len(ns)-1]
	return b.At(n) / float64(n)
}
