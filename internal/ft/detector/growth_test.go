package detector_test

import (
	"os"
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

// TestGrowthDetectNotify measures the detection of failures by the
// heartbeat ring and their notification over rbcast (internal/ft/growth:
// every rank's Detector and rbcast Node, 100 ms periods, 1 s timeout,
// 10 µs hops) at n = 16 ... 4096 with one failure and 16 ... 1024 with 1%
// (262,144 and 16,384 with FTMPI_GROWTH_FULL=1: every rank's heartbeats
// are simulated, and with 1% every failure is its own broadcast to every
// rank). It asserts: every survivor knows
// within 10 periods (the timeout) plus 2 per doubling of n (1% failures
// make runs of adjacent failures, found one after the other, longer in
// larger jobs, as log n); the notices travel at most log2(n)/2 + 1 hops;
// the busiest rank handles at most 5*log2(n) + 4 notice messages per
// failure, and with 1% failures at most log2(n)*(2*log2(n) + 8) in all,
// whatever their number: a rank's notices of one hop go as one batch a
// neighbour (rbcast.Batch), so a wave costs a rank one message a neighbour
// for each hop at which it learnt something new (at most the diameter
// plus one); each notice its own broadcast (f*4*log2(n) a rank, 362 at
// 1,024 against 159 batched) breaks that bound. A detection that visits
// the failures one after the other (10 periods each: n/10 at 1%) and a
// notice sent by the observer to every rank (n-1 messages) are checked to
// break the bounds.
func TestGrowthDetectNotify(t *testing.T) {
	periodsB := growth.Bound{C: 2, D: 10}
	roundsB := growth.Bound{C: 0.5, D: 1}
	perFailB := growth.Bound{C: 5, D: 4}
	perLogB := growth.Bound{C: 2, D: 8}
	full := os.Getenv("FTMPI_GROWTH_FULL") == "1"
	for _, pct := range []bool{false, true} {
		ns := growth.Sizes(262144)
		switch {
		case pct && full:
			ns = growth.Sizes(16384)
		case pct && (growth.Race || testing.Short()):
			ns = ns[:3] // 1% of 1024 under the race detector takes 10 s
		case pct || testing.Short():
			ns = ns[:min(4, len(ns))]
		}
		var periods, rounds, perFail, perLog []float64
		for _, n := range ns {
			f := []int{n / 2}
			if pct {
				f = growth.Failed(n, growth.OnePercent(n), uint64(n))
			}
			r, err := growth.Detect(growth.DetectCase{N: n, Failed: f})
			if err != nil {
				t.Fatal(err)
			}
			periods = append(periods, r.Periods)
			rounds = append(rounds, float64(r.Rounds))
			perFail = append(perFail, float64(r.MsgsMaxPerProc)/float64(len(f)))
			perLog = append(perLog, float64(r.MsgsMaxPerProc)/growth.Log2(n))
			if r.HeartbeatsPerPeriod > 1.01 {
				t.Errorf("n=%d: %.3f heartbeats per rank per period, want 1", n, r.HeartbeatsPerPeriod)
			}
		}
		for _, err := range []error{
			periodsB.Check("periods until every survivor knows", ns, periods),
			roundsB.Check("notice hops", ns, rounds),
			perFailB.Check("notice messages per failure at the busiest rank", ns, perFail),
			perLogB.Check("notice messages at the busiest rank over log2(n)", ns, perLog),
		} {
			if err != nil {
				t.Errorf("1%% failed %v: %v", pct, err)
			}
		}
		t.Logf("1%% failed %v: n %v, periods %v, hops %v, busiest rank per failure %v, over log2 n %v", pct, ns, periods, rounds, perFail, perLog)
	}
	ns := growth.Sizes(16384)
	seq, flat, unbatched := make([]float64, len(ns)), make([]float64, len(ns)), make([]float64, len(ns))
	for i, n := range ns {
		seq[i] = 10 * float64(growth.OnePercent(n))
		flat[i] = float64(n - 1)
		unbatched[i] = 4 * float64(growth.OnePercent(n)) // f*4*log2(n), over log2(n)
	}
	if periodsB.Check("one after the other", ns, seq) == nil || perFailB.Check("flat", ns, flat) == nil {
		t.Error("the bounds accept a sequential detection or a flat notice")
	}
	if perLogB.Check("a broadcast a failure", ns, unbatched) == nil {
		t.Error("the bound accepts a broadcast a failure")
	}
}
