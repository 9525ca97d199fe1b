// Package growth measures how the cost of one operation of each of
// ftmpi's fault-tolerance protocols grows with the number of processes n
// (issue 24, item 1, simulator half): the agreement (internal/ft/agree),
// detection and notification of failures (internal/ft/detector with
// internal/ft/rbcast), revoke (internal/ft/rbcast), spare activation
// (internal/ft/spare with agree), the Reinit epoch change (the
// launcher's internal/launch/policy, and the launcher-less
// internal/ft/reincarnate decision) and the launcher's bootstrap fence.
//
// Each measurement drives the real, unmodified state machines in a
// deterministic simulator with unit message delays (one hop = one time
// step; the detector runs on a clock of heartbeat periods) and counts, for
// one operation: rounds, the critical path in message hops (the causal
// depth of the last process to finish); messages in total; and the largest
// number a single process sent plus received. Fit and Check turn a series
// of sizes into a least-squares fit against a+b*log2(n) and against a+b*n
// and a bound check, which the protocols' test suites assert
// (c*log2(n)+d) and bench/growth prints.
//
// It is measurement code: it must not be imported by the runtime, and it
// must not change what the protocols do (counting lives here, in the
// drivers, not in the state machines). Every driver checks the outcome of
// the operation it measures (every survivor decided the same value, learnt
// every failure, delivered the broadcast) and returns an error otherwise.
package growth

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
)

// Row is one measurement: one operation of one protocol at one size. It
// is what bench/growth prints, one JSON object per line.
type Row struct {
	Protocol string `json:"protocol"`
	Op       string `json:"op"`
	N        int    `json:"n"`
	Failures int    `json:"failures"`
	// Rounds is the critical path in message hops: the largest causal
	// depth (Lamport clock over messages) at which a survivor finished.
	Rounds int `json:"rounds"`
	// Periods (detection only): heartbeat periods from the crash until
	// the last survivor knew of every failure.
	Periods float64 `json:"periods,omitempty"`
	// DetectPeriods (detection only): periods from the crash until the
	// last failure was suspected by its observer.
	DetectPeriods float64 `json:"detect_periods,omitempty"`
	// MsgsTotal counts every protocol message sent (those to crashed
	// processes included; heartbeats excluded, see HeartbeatsPerPeriod).
	MsgsTotal int64 `json:"msgs_total"`
	// MsgsMaxPerProc is the largest number of messages one process sent
	// plus received; MaxProc is that process (the hot spot).
	MsgsMaxPerProc int `json:"msgs_max_per_proc"`
	MaxProc        int `json:"max_proc"`
	MsgsMaxSent    int `json:"msgs_max_sent"`
	MsgsMaxRecv    int `json:"msgs_max_recv"`
	// HeartbeatsPerPeriod (detection only): heartbeats sent per live
	// process per period (1 in a ring, whatever n).
	HeartbeatsPerPeriod float64 `json:"heartbeats_per_proc_period,omitempty"`
	// Extra holds operation-specific counts (the launcher's checks,
	// key-value entries moved, bytes of a payload that grows with n).
	Extra map[string]int64 `json:"extra,omitempty"`
}

// counter counts messages per process.
type counter struct {
	sent, recv []int32
	total      int64
}

func newCounter(n int) *counter {
	return &counter{sent: make([]int32, n), recv: make([]int32, n)}
}

func (c *counter) send(from int)  { c.sent[from]++; c.total++ }
func (c *counter) deliver(to int) { c.recv[to]++ }

func (c *counter) fill(r *Row) {
	r.MsgsTotal = c.total
	r.MaxProc = -1
	for p := range c.sent {
		s, v := int(c.sent[p]), int(c.recv[p])
		r.MsgsMaxSent = max(r.MsgsMaxSent, s)
		r.MsgsMaxRecv = max(r.MsgsMaxRecv, v)
		if s+v > r.MsgsMaxPerProc || r.MaxProc < 0 {
			r.MsgsMaxPerProc, r.MaxProc = s+v, p
		}
	}
}

// maxOver is the largest sent+received count among processes [lo, hi).
func (c *counter) maxOver(lo, hi int) int64 {
	m := int32(0)
	for p := lo; p < hi; p++ {
		m = max(m, c.sent[p]+c.recv[p])
	}
	return int64(m)
}

// Failed draws the failed processes of a run: k distinct processes out of
// n, from seed (deterministic), in increasing order. k = 0 gives none.
func Failed(n, k int, seed uint64) []int {
	if k <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := slices.Clone(r.Perm(n)[:min(k, n)])
	slices.Sort(out)
	return out
}

// OnePercent is the number of failures of a 1% failure run: n/100, at
// least 1.
func OnePercent(n int) int { return max(1, n/100) }

// Log2 is log2(n) as a float.
func Log2(n int) float64 { return math.Log2(float64(n)) }

// Sizes returns the sizes a test suite runs: 16, 64, 256, 1024 and 4096
// (a second or two; 1024 under the race detector), and with
// FTMPI_GROWTH_FULL=1 in the environment the larger ones up to full
// (16,384 ... 1,048,576, as far as the simulator goes).
func Sizes(full int) []int {
	top := 4096
	if race {
		top = 1024
	}
	if os.Getenv("FTMPI_GROWTH_FULL") == "1" {
		top = full
	}
	var out []int
	for n := 16; n <= top; n *= 4 {
		out = append(out, n)
	}
	return out
}
