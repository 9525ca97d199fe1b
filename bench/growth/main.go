// Command growth measures how the cost of one operation of each of
// ftmpi's fault-tolerance protocols grows with the number of processes, in
// the protocols' simulators (internal/ft/growth: the real state machines,
// unit message delays), at n = 16, 64, ..., 1,048,576 as far as each
// simulator goes in reasonable time and memory, and fits each curve
// against a+b*log2(n) and against a+b*n (issue 24, items 1 and 5).
//
// Output (stdout), JSON lines: one object per measurement (protocol, op,
// n, failures, rounds, msgs_total, msgs_max_per_proc, ...; see
// growth.Row), then one per fitted curve ("fit": the curve's protocol, op
// and metric, both fits, the better one, growth_vs_log, faster_than_log,
// proj_1e5: the better fit's value at 100,000 processes). With -tsv, a
// tab-separated table of the same. A size a simulator does not reach is
// reported on stderr with the reason ("stop" lines).
//
//	go run ./bench/growth                   # every protocol, default limits (8 minutes at load 10-30, 7 GB at most)
//	go run ./bench/growth -max 4096         # quick look
//	go run ./bench/growth -only agree,rbcast/revoke -max 16384 -tsv
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
)

type op struct {
	protocol, op string
	// limit is the largest n run by default, and why it stops there.
	limit int
	why   string
	run   func(n int, seed uint64) (growth.Row, error)
}

func ops() []op {
	pct := func(n int, seed uint64) []int { return growth.Failed(n, growth.OnePercent(n), seed) }
	notifyAt := func(n int) int { return 4*int(math.Ceil(growth.Log2(n))) + 8 }
	return []op{
		{"agree", "failure-free", 1048576, "",
			func(n int, _ uint64) (growth.Row, error) { return growth.Agree(growth.AgreeCase{N: n}) }},
		{"agree", "1-failure-root-during", 1048576, "",
			func(n int, _ uint64) (growth.Row, error) {
				return growth.Agree(growth.AgreeCase{N: n, Failed: []int{0}, NotifyAt: notifyAt(n)})
			}},
		{"agree", "1pct-failures-during", 65536, "every survivor is notified of every failure on its own, as a detector does: n*n/100 notifications, each a set of its own at every process (4.3e7 at 65,536, 1.1e10 at 1,048,576); 1pct-known goes further",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Agree(growth.AgreeCase{N: n, Failed: pct(n, seed), NotifyAt: notifyAt(n)})
			}},
		{"agree", "1pct-known", 1048576, "",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Agree(growth.AgreeCase{N: n, Failed: pct(n, seed), Known: true})
			}},
		{"rbcast", "revoke", 1048576, "",
			func(n int, _ uint64) (growth.Row, error) { return growth.Rbcast(growth.RbcastCase{N: n}) }},
		{"rbcast", "revoke-1pct-failed", 1048576, "",
			func(n int, seed uint64) (growth.Row, error) {
				f := pct(n, seed)
				origin := 0
				for len(f) > 0 && f[0] == origin {
					origin++
					f = f[1:]
				}
				return growth.Rbcast(growth.RbcastCase{N: n, Origin: origin, Failed: f})
			}},
		{"detector+rbcast", "detect+notify-1", 262144, "every rank's heartbeats are simulated, one per 100 ms period for 14 periods: 1,048,576 ranks take minutes",
			func(n int, _ uint64) (growth.Row, error) {
				return growth.Detect(growth.DetectCase{N: n, Failed: []int{n / 2}})
			}},
		{"detector+rbcast", "detect+notify-1pct", 16384, "every failure's notice reaches every rank: n/100 * n * 2log2(n) items (batched: a rank's notices of one hop are one message a neighbour)",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Detect(growth.DetectCase{N: n, Failed: pct(n, seed)})
			}},
		{"detector+rbcast", "detect+notify-1pct-forward-each", 16384, "as detect+notify-1pct, but each notice message received is forwarded at once, not merged with the others of its hop (the runtime's forwarding, internal/rte/ftdrive)",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Detect(growth.DetectCase{N: n, Failed: pct(n, seed), ForwardEach: true})
			}},
		{"detector+rbcast", "detect+notify-1pct-unbatched", 16384, "every failure is its own broadcast to every rank (before 2026-11-29): n/100 * n * 2log2(n) messages (1.4 billion at 65,536)",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Detect(growth.DetectCase{N: n, Failed: pct(n, seed), Unbatched: true})
			}},
		{"fence", "finalize", 1048576, "the headless Finalize fence (internal/ft/fence): every process's state, one message queue of a round",
			func(n int, _ uint64) (growth.Row, error) {
				return growth.Fence(growth.FenceCase{N: n})
			}},
		{"fence", "finalize-1pct", 1048576, "the headless Finalize fence, 1% of the processes failed before it and known failed at every survivor",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Fence(growth.FenceCase{N: n, Failed: pct(n, seed)})
			}},
		{"spare", "replace-1", 1048576, "",
			func(n int, _ uint64) (growth.Row, error) {
				return growth.Spare(growth.SpareCase{N: n, Failed: []int{n / 2}, Tellers: spareTellers(n, 0)})
			}},
		{"spare", "replace-1pct", 262144, "each of the k spares' spare.Machine keeps its Activate's survivor list (n ids): k*n ids, 5.4 GB at 262,144",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Spare(growth.SpareCase{N: n, Failed: pct(n, seed), Tellers: spareTellers(n, 0)})
			}},
		{"spare", "replace-1pct-2-tellers-fail", 262144, "as replace-1pct; the leader and the next survivor fail after their Commit",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Spare(growth.SpareCase{N: n, Failed: pct(n, seed), TellersFail: 2, Tellers: spareTellers(n, 2)})
			}},
		{"spare", "replace-1pct-commit-from-every", 65536, "every survivor commits every spare (before 2026-11-29): n-k Commits at a spare",
			func(n int, seed uint64) (growth.Row, error) {
				return growth.Spare(growth.SpareCase{N: n, Failed: pct(n, seed), CommitFromEvery: true})
			}},
		{"policy", "reinit-epoch-1", 1048576, "",
			func(n int, _ uint64) (growth.Row, error) { return growth.ReinitLauncher(n, []int{n / 2}) }},
		{"policy", "reinit-epoch-1pct", 65536, "one epoch per failure, each noticed to every rank and followed by a look at every process: n^2/100 steps of the head (minutes at 262,144)",
			func(n int, seed uint64) (growth.Row, error) { return growth.ReinitLauncher(n, pct(n, seed)) }},
		{"policy", "startup-fence", 1048576, "FTMPI_ENDPOINTS=all: every endpoint to every rank",
			func(n int, _ uint64) (growth.Row, error) { return growth.StartupFence(n) }},
		{"policy", "startup-fence-lazy", 1048576, "the default: the layout and O(log n) endpoints a rank, the rest looked up on first dial",
			func(n int, _ uint64) (growth.Row, error) { return growth.StartupFenceLazy(n) }},
		{"policy", "spawn-replacement", 4096, "the head decodes every parent's request, each listing the n-1 parents: n^2 bytes of JSON (1.4 GB and minutes of the head at 16,384)",
			func(n int, _ uint64) (growth.Row, error) { return growth.SpawnLauncher(n, 1) }},
		{"reincarnate", "reinit-epoch-no-launcher-1", 1048576, "",
			func(n int, _ uint64) (growth.Row, error) { return growth.ReinitNoLauncher(n, []int{n / 2}) }},
		{"reincarnate", "reinit-epoch-no-launcher-1pct", 1048576, "",
			func(n int, seed uint64) (growth.Row, error) { return growth.ReinitNoLauncher(n, pct(n, seed)) }},
	}
}

// spareTellers is growth.SpareCase.Tellers at n: every survivor's Outbox
// (0) up to 65,536, beyond only those that speak in the run (each
// survivor's spans of the survivors before it are O(n): n^2 in all).
func spareTellers(n, fail int) int {
	if n <= 65536 {
		return 0
	}
	return fail + 1
}

// metrics fitted per curve: rounds (periods for detection) and the
// busiest process's messages.
func metrics(o op) []string {
	m := []string{"rounds", "msgs_max_per_proc", "msgs_per_proc_avg"}
	if o.protocol == "detector+rbcast" {
		m = append([]string{"periods"}, m...)
	}
	return m
}

func value(r growth.Row, metric string) float64 {
	switch metric {
	case "rounds":
		return float64(r.Rounds)
	case "periods":
		return r.Periods
	case "msgs_max_per_proc":
		return float64(r.MsgsMaxPerProc)
	case "msgs_per_proc_avg":
		return float64(r.MsgsTotal) / float64(r.N)
	}
	panic(metric)
}

type fitLine struct {
	Fit      bool       `json:"fit"`
	Protocol string     `json:"protocol"`
	Op       string     `json:"op"`
	Metric   string     `json:"metric"`
	Ns       []int      `json:"ns"`
	Ys       []float64  `json:"ys"`
	F        growth.Fit `json:"fits"`
	Proj1e5  float64    `json:"proj_1e5"`
	Flag     string     `json:"flag,omitempty"`
}

func main() {
	maxN := flag.Int("max", 0, "largest n (0: each simulator's default limit)")
	minN := flag.Int("min", 16, "smallest n")
	only := flag.String("only", "", "comma-separated protocols or protocol/op to run (default all)")
	seed := flag.Uint64("seed", 1, "seed of the failed processes' choice")
	tsv := flag.Bool("tsv", false, "tab-separated output instead of JSON lines")
	flag.Parse()
	if *minN < 2 {
		fmt.Fprintln(os.Stderr, "growth: -min must be at least 2")
		os.Exit(2)
	}
	w := os.Stdout
	if *tsv {
		fmt.Fprintln(w, "protocol\top\tn\tfailures\trounds\tperiods\tmsgs_total\tmsgs_max_per_proc\tmax_proc\tmsgs_per_proc_avg\tseconds")
	}
	ran := 0
	for _, o := range ops() {
		if !selected(*only, o) {
			continue
		}
		ran++
		limit := o.limit
		if *maxN > 0 {
			limit = *maxN
		}
		var rows []growth.Row
		for n := *minN; n <= limit; n *= 4 {
			t0 := time.Now()
			r, err := o.run(n, *seed+uint64(n))
			sec := time.Since(t0).Seconds()
			if err != nil {
				fmt.Fprintf(os.Stderr, "growth: %s/%s n=%d: %v\n", o.protocol, o.op, n, err)
				os.Exit(1)
			}
			r.Op = o.op
			rows = append(rows, r)
			if *tsv {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%.2f\t%d\t%d\t%d\t%.2f\t%.2f\n", r.Protocol, r.Op, r.N, r.Failures, r.Rounds, r.Periods,
					r.MsgsTotal, r.MsgsMaxPerProc, r.MaxProc, float64(r.MsgsTotal)/float64(r.N), sec)
			} else {
				writeJSON(w, struct {
					growth.Row
					Seconds float64 `json:"seconds"`
				}{r, math.Round(sec*1000) / 1000})
			}
			runtime.GC()
		}
		if next := limit * 4; *maxN == 0 && next <= 1<<20 {
			fmt.Fprintf(os.Stderr, "growth: stop %s/%s at n=%d: %s\n", o.protocol, o.op, limit, o.why)
		}
		if len(rows) < 2 {
			continue
		}
		ns := make([]int, len(rows))
		for i, r := range rows {
			ns[i] = r.N
		}
		for _, m := range metrics(o) {
			ys := make([]float64, len(rows))
			for i, r := range rows {
				ys[i] = value(r, m)
			}
			f := growth.FitCurve(ns, ys)
			fl := fitLine{Fit: true, Protocol: o.protocol, Op: o.op, Metric: m, Ns: ns, Ys: ys, F: f}
			switch f.Better {
			case "lin":
				fl.Proj1e5 = f.Lin.A + f.Lin.B*1e5
			case "const":
				fl.Proj1e5 = ys[len(ys)-1]
			default:
				fl.Proj1e5 = f.Log.A + f.Log.B*math.Log2(1e5)
			}
			fl.Proj1e5 = math.Round(fl.Proj1e5*10) / 10
			if f.FasterThanLog {
				fl.Flag = "FASTER THAN LOG N"
			}
			if *tsv {
				fmt.Fprintf(w, "# fit\t%s\t%s\t%s\tlog: %.3g+%.3g*log2(n) R2=%.4f\tlin: %.3g+%.3g*n R2=%.4f\tbetter=%s\tsse_lin/sse_log=%.3g\tgrowth_vs_log=%.2f\tproj_1e5=%.1f\t%s\n",
					o.protocol, o.op, m, f.Log.A, f.Log.B, f.Log.R2, f.Lin.A, f.Lin.B, f.Lin.R2, f.Better, f.SSERatio, f.GrowthVsLog, fl.Proj1e5, fl.Flag)
			} else {
				writeJSON(w, fl)
			}
		}
	}
	if ran == 0 {
		fmt.Fprintf(os.Stderr, "growth: -only %q names no protocol or protocol/op (protocols: agree, rbcast, detector+rbcast, spare, policy, reincarnate)\n", *only)
		os.Exit(2)
	}
}

func selected(only string, o op) bool {
	if only == "" {
		return true
	}
	for _, s := range strings.Split(only, ",") {
		if s == o.protocol || s == o.protocol+"/"+o.op {
			return true
		}
	}
	return false
}

func writeJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	w.Write(append(b, '\n'))
}
