// Command shmcmp reads the result lines of bench/shm-compare.sh (issue 15's
// goals for the shared-memory transport) and prints one markdown table per
// part, each row with its goal met or not:
//
//   - stab: 1 B latency over LAUNCHES launches per impl, quiet and with a
//     busy process: median and slowest launch, slowest ÷ median (goal: at
//     most 1.5 for ftmpi), and ftmpi's median ÷ Open MPI's (goal: at most
//     1.5, from the quiet launches);
//   - coll: Barrier and Allreduce 8 B (goal: ftmpi ÷ Open MPI at most
//     1.5) and Bcast and Allreduce 1 MiB (at most 1.0) per process count,
//     medians over rounds, MPICH for reference;
//   - ftcost: 1 B latency and Allreduce 8 B with the failure detector on
//     and off (interleaved launches): on ÷ off at most 1.02;
//   - mem: proportional set size (PSS: private memory plus each rank's
//     share of shared memory) and resident set size per rank, ftmpi against
//     Open MPI (no numeric goal: the ratio is shown).
//
// Usage:
//
//	go run ./bench/shmcmp [FILE.jsonl ...]   (stdin if no file)
//
// It only formats; it measures nothing and launches nothing.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ftmpi/ftmpi/bench/internal/results"
)

// Record is one result line as bench/shm-compare.sh tags it.
type Record struct {
	Name      string   `json:"name"`
	Impl      string   `json:"impl"`
	Transport string   `json:"transport"`
	NP        int      `json:"np"`
	Size      int64    `json:"size"`
	Median    float64  `json:"median"`
	Unit      string   `json:"unit"`
	Part      string   `json:"part"`
	Variant   string   `json:"variant"`
	Round     int      `json:"round"`
	Load1     *float64 `json:"load1"`
	PSSKiB    float64  `json:"pss_kib"` // mem: per rank
	RSSKiB    float64  `json:"rss_kib"` // mem: per rank
}

// Goals (issue 15).
const (
	goalStable   = 1.5  // slowest launch ÷ median launch, 1 B latency
	goalLatency  = 1.5  // ftmpi ÷ Open MPI, 1 B latency
	goalSmall    = 1.5  // ftmpi ÷ Open MPI, Barrier and Allreduce 8 B
	goalLarge    = 1.0  // ftmpi ÷ Open MPI, Bcast and Allreduce 1 MiB
	goalFTCost   = 1.02 // detector on ÷ off
	refImpl      = "openmpi"
	ftImpl       = "ftmpi"
	largeCollMsg = 1 << 20
)

// Parse reads the tagged lines (those with a part).
func Parse(r io.Reader, warn io.Writer) ([]Record, error) {
	return results.ReadLines(r, warn, "shmcmp", func(rec Record) bool { return rec.Part != "" })
}

var median = results.Median

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

func ratio(a, b float64) (float64, bool) {
	if a <= 0 || b <= 0 {
		return 0, false
	}
	return a / b, true
}

func fmtRatio(r float64, ok bool, goal float64) (string, string) {
	if !ok {
		return "–", "–"
	}
	return fmt.Sprintf("%.2f", r), met(r <= goal)
}

func fmtVal(v []float64) string {
	if len(v) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3g", median(v))
}

// Render writes the tables of recs to w.
func Render(w io.Writer, recs []Record) error {
	if len(recs) == 0 {
		return errors.New("no result lines tagged with a part")
	}
	by := map[string][]Record{}
	for _, r := range recs {
		by[r.Part] = append(by[r.Part], r)
	}
	var loads []float64
	for _, r := range recs {
		if r.Load1 != nil {
			loads = append(loads, *r.Load1)
		}
	}
	if len(loads) > 0 {
		fmt.Fprintf(w, "Load (1-minute average before each launch): median %.2f, max %.2f over %d result lines.\n\n",
			median(loads), slices.Max(loads), len(loads))
	}
	if rs := by["stab"]; len(rs) > 0 {
		renderStab(w, rs)
	}
	if rs := by["coll"]; len(rs) > 0 {
		renderColl(w, rs)
	}
	if rs := by["ftcost"]; len(rs) > 0 {
		renderFTCost(w, rs)
	}
	if rs := by["mem"]; len(rs) > 0 {
		renderMem(w, rs)
	}
	return nil
}

func renderStab(w io.Writer, rs []Record) {
	type key struct{ impl, variant string }
	vals := map[key][]float64{}
	var keys []key
	for _, r := range rs {
		if r.Name != "latency" {
			continue
		}
		k := key{r.Impl + "/" + r.Transport, r.Variant}
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = append(vals[k], r.Median)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.variant, b.variant); c != 0 {
			return -c // quiet before busy
		}
		return strings.Compare(a.impl, b.impl)
	})
	fmt.Fprintf(w, "## 1 B latency over launches (µs; goal: slowest ≤ %.1f× median for ftmpi)\n\n", goalStable)
	fmt.Fprintln(w, "| impl | machine | launches | median | fastest | slowest | slowest ÷ median | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		v := vals[k]
		m := median(v)
		r, ok := ratio(slices.Max(v), m)
		rs, g := fmtRatio(r, ok, goalStable)
		if !strings.HasPrefix(k.impl, ftImpl+"/") {
			g = "(reference)"
		}
		fmt.Fprintf(w, "| %s | %s | %d | %.3g | %.3g | %.3g | %s | %s |\n", k.impl, k.variant, len(v), m, slices.Min(v), slices.Max(v), rs, g)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "## 1 B latency against Open MPI's shared memory (goal: ftmpi ≤ %.1f×)\n\n", goalLatency)
	fmt.Fprintln(w, "| machine | ftmpi (µs) | Open MPI (µs) | ftmpi ÷ Open MPI | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, variant := range []string{"quiet", "busy"} {
		var ft, ref []float64
		for _, k := range keys {
			if k.variant != variant {
				continue
			}
			switch {
			case strings.HasPrefix(k.impl, ftImpl+"/"):
				ft = append(ft, vals[k]...)
			case strings.HasPrefix(k.impl, refImpl+"/"):
				ref = append(ref, vals[k]...)
			}
		}
		if len(ft) == 0 && len(ref) == 0 {
			continue
		}
		var r float64
		ok := len(ft) > 0 && len(ref) > 0
		if ok {
			r, ok = ratio(median(ft), median(ref))
		}
		rs, g := fmtRatio(r, ok, goalLatency)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", variant, fmtVal(ft), fmtVal(ref), rs, g)
	}
	fmt.Fprintln(w)
}

func renderColl(w io.Writer, rs []Record) {
	type key struct {
		name string
		size int64
		np   int
	}
	vals := map[key]map[string][]float64{}
	for _, r := range rs {
		small := r.Size <= 8 && (r.Name == "barrier" || r.Name == "allreduce")
		large := r.Size == largeCollMsg && (r.Name == "bcast" || r.Name == "allreduce")
		if !small && !large {
			continue
		}
		k := key{r.Name, r.Size, r.NP}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		vals[k][r.Impl] = append(vals[k][r.Impl], r.Median)
	}
	keys := make([]key, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	order := []string{"barrier", "allreduce", "bcast"}
	slices.SortFunc(keys, func(a, b key) int {
		if a.size != b.size {
			return int(a.size - b.size)
		}
		if a.name != b.name {
			return slices.Index(order, a.name) - slices.Index(order, b.name)
		}
		return a.np - b.np
	})
	fmt.Fprintf(w, "## Collectives over shared memory (µs per call, medians over rounds; goal: ftmpi ÷ Open MPI ≤ %.1f at 8 B, ≤ %.1f at 1 MiB)\n\n", goalSmall, goalLarge)
	fmt.Fprintln(w, "| operation | size | np | ftmpi/shm | Open MPI (vader) | MPICH | ftmpi ÷ Open MPI | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		v := vals[k]
		goal := goalSmall
		if k.size == largeCollMsg {
			goal = goalLarge
		}
		var r float64
		ok := len(v[ftImpl]) > 0 && len(v[refImpl]) > 0
		if ok {
			r, ok = ratio(median(v[ftImpl]), median(v[refImpl]))
		}
		rs, g := fmtRatio(r, ok, goal)
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", k.name, results.FormatSize(k.size), k.np,
			fmtVal(v[ftImpl]), fmtVal(v[refImpl]), fmtVal(v["mpich"]), rs, g)
	}
	fmt.Fprintln(w)
}

func renderFTCost(w io.Writer, rs []Record) {
	type key struct {
		name string
		size int64
		np   int
	}
	vals := map[key]map[string][]float64{}
	for _, r := range rs {
		if r.Name != "latency" && !(r.Name == "allreduce" && r.Size <= 8) {
			continue
		}
		k := key{r.Name, r.Size, r.NP}
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		vals[k][r.Variant] = append(vals[k][r.Variant], r.Median)
	}
	keys := make([]key, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.name != b.name {
			return -strings.Compare(a.name, b.name) // latency first
		}
		return a.np - b.np
	})
	fmt.Fprintf(w, "## Cost of fault tolerance: failure detector on vs off (µs, medians over interleaved launches; goal: on ÷ off ≤ %.2f)\n\n", goalFTCost)
	fmt.Fprintln(w, "| benchmark | size | np | launches | detector on | detector off | on ÷ off | goal |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, k := range keys {
		v := vals[k]
		var r float64
		ok := len(v["ft-on"]) > 0 && len(v["ft-off"]) > 0
		if ok {
			r, ok = ratio(median(v["ft-on"]), median(v["ft-off"]))
		}
		rs, g := fmtRatio(r, ok, goalFTCost)
		fmt.Fprintf(w, "| %s | %s | %d | %d+%d | %s | %s | %s | %s |\n", k.name, results.FormatSize(k.size), k.np,
			len(v["ft-on"]), len(v["ft-off"]), fmtVal(v["ft-on"]), fmtVal(v["ft-off"]), rs, g)
	}
	fmt.Fprintln(w)
}

func renderMem(w io.Writer, rs []Record) {
	type key struct {
		np   int
		impl string
	}
	pss, rss := map[key][]float64{}, map[key][]float64{}
	nps := map[int]bool{}
	for _, r := range rs {
		if r.Name != "mem" {
			continue
		}
		k := key{r.NP, r.Impl}
		pss[k] = append(pss[k], r.PSSKiB)
		rss[k] = append(rss[k], r.RSSKiB)
		nps[r.NP] = true
	}
	npl := make([]int, 0, len(nps))
	for np := range nps {
		npl = append(npl, np)
	}
	slices.Sort(npl)
	mib := func(v []float64) string {
		if len(v) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", median(v)/1024)
	}
	rat := func(a, b []float64) string {
		if len(a) == 0 || len(b) == 0 {
			return "–"
		}
		r, ok := ratio(median(a), median(b))
		if !ok {
			return "–"
		}
		return fmt.Sprintf("%.2f", r)
	}
	fmt.Fprintln(w, "## Memory per rank (MiB; PSS = private memory + the rank's share of shared memory, RSS = resident; largest sample during an all-pairs run)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| np | ftmpi PSS | Open MPI PSS | PSS ftmpi ÷ Open MPI | ftmpi RSS | Open MPI RSS | RSS ftmpi ÷ Open MPI |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, np := range npl {
		f, o := key{np, ftImpl}, key{np, refImpl}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s |\n", np, mib(pss[f]), mib(pss[o]), rat(pss[f], pss[o]), mib(rss[f]), mib(rss[o]), rat(rss[f], rss[o]))
	}
	fmt.Fprintln(w)
}

func main() {
	recs, err := results.ReadAll(os.Args[1:], Parse)
	if err == nil {
		err = Render(os.Stdout, recs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "shmcmp:", err)
		os.Exit(1)
	}
}
