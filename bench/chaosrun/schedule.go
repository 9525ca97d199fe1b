package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"
)

// window is where a run's faults fall, as fractions of the example's
// failure-free run length at that np (measured by the calibration run):
// from Lo*T to Hi*T. A fixed from= (the issue-11 --chaos form) let short
// examples end before their first fault: jacobi at np 8 takes 0.95 s, the
// first fault came at 1 s or later, and 17 of its 17 runs injected nothing.
type window struct{ Lo, Hi float64 }

// parseWindow parses "LO:HI", 0 <= LO < HI <= 1.
func parseWindow(s string) (window, error) {
	a, b, ok := strings.Cut(s, ":")
	lo, err1 := strconv.ParseFloat(a, 64)
	hi, err2 := strconv.ParseFloat(b, 64)
	if !ok || err1 != nil || err2 != nil || !(lo >= 0 && lo < hi && hi <= 1) {
		return window{}, fmt.Errorf("bad -window %q: want LO:HI, fractions of the failure-free run, 0 <= LO < HI <= 1", s)
	}
	return window{lo, hi}, nil
}

// scaledFaults is the schedule of one run as ftmpirun --inject specs: k
// faults of distinct ranks other than 0 (rank 0 is spared, as by --chaos's
// default), at times drawn uniformly in the window of a run of length
// length, each a SIGSTOP with probability stop, else a SIGKILL. The seed
// replays it. Sorted by time.
func scaledFaults(seed uint64, np, k int, length time.Duration, w window, stop float64) []string {
	rng := rand.New(rand.NewPCG(seed, uint64(np)))
	k = min(k, np-1)
	ranks := rng.Perm(np - 1)[:k]
	type fault struct {
		at   time.Duration
		rank int
		kind string
	}
	fs := make([]fault, k)
	for i := range fs {
		frac := w.Lo + (w.Hi-w.Lo)*rng.Float64()
		fs[i] = fault{at: time.Duration(frac * float64(length)).Round(time.Millisecond), rank: ranks[i] + 1, kind: "kill"}
		if rng.Float64() < stop {
			fs[i].kind = "stop"
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].at < fs[j].at })
	out := make([]string, k)
	for i, f := range fs {
		out[i] = fmt.Sprintf("%s:rank=%d,at=%v", f.kind, f.rank, max(f.at, time.Millisecond))
	}
	return out
}
