// Command rmacmp reads the result lines of bench/rma-compare.sh (the rma-*
// lines of `ftmpi-bench -bench rma` and bench/c/osc, one JSON object per
// line, tagged by the script with the launch's round and the 1-minute load
// before it) and prints, per case and size, the median over launches of
// every impl/transport and the ratios of the pairs named by -pairs
// (default ftmpi/tcp ÷ openmpi/tcp, ftmpi/unix ÷ openmpi/shm and ftmpi/shm ÷ openmpi/shm).
//
// Every ratio is a time ratio, how many times longer ftmpi takes: for
// latencies (µs) ftmpi's ÷ the other's, for bandwidths (MB/s) the other's
// ÷ ftmpi's. Latency ratios are checked against -goal (1.5: issue 16's
// bound); bandwidth ratios are shown only. With -json it prints one JSON
// object per row instead of the markdown table.
//
// Usage:
//
//	go run ./bench/rmacmp [-goal 1.5] [-pairs a/t:b/u,...] [-json] [FILE.jsonl ...]   (stdin if no file)
//
// It only formats; it measures nothing and launches nothing.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ftmpi/ftmpi/bench/internal/results"
)

// Record is one result line.
type Record = results.Record

// Col is an implementation over a transport, "impl/transport".
type Col = results.Col

// Pair is one ratio: Num against Den.
type Pair = results.Pair

// ParsePairs reads "a/t:b/u,c/v:d/w".
var ParsePairs = results.ParsePairs

// Parse reads JSON lines and keeps the rma-* ones; malformed lines are
// reported to warn and skipped, blank lines ignored.
func Parse(r io.Reader, warn io.Writer) ([]Record, error) {
	return results.ReadLines(r, warn, "rmacmp", func(rec Record) bool { return strings.HasPrefix(rec.Name, "rma-") })
}

var median = results.Median

// Row is one case and size with its medians and ratios (the -json form).
type Row struct {
	Name     string             `json:"name"`
	Size     int64              `json:"size"`
	Unit     string             `json:"unit"`
	Launches map[string]int     `json:"launches"`
	Medians  map[string]float64 `json:"medians"`
	Ratios   map[string]float64 `json:"ratios"` // time ratios (see the package comment)
	Over     []string           `json:"over,omitempty"`
}

// caseOrder fixes the row order; other rma-* names follow alphabetically.
var caseOrder = []string{"rma-put-lat-fence", "rma-put-lat-lock", "rma-get-lat-fence", "rma-get-lat-lock",
	"rma-acc-lat-fence", "rma-acc-lat-lock", "rma-put-bw-fence", "rma-put-bw-lock"}

// colOrder fixes the column order; others follow alphabetically.
var colOrder = results.Cols("ftmpi/tcp", "openmpi/tcp", "ftmpi/unix", "ftmpi/shm", "openmpi/shm", "openmpi/osc-sm", "mpich/shm")

// Rows groups recs into rows, with ratios for pairs and goal checks on
// latency rows (goal 0: none).
func Rows(recs []Record, pairs []Pair, goal float64) ([]Row, []Col, error) {
	if len(recs) == 0 {
		return nil, nil, errors.New("no rma-* result lines")
	}
	type key struct {
		name string
		size int64
	}
	vals := map[key]map[Col][]float64{}
	units := map[string]string{}
	cols := map[Col]bool{}
	for _, r := range recs {
		if u, ok := units[r.Name]; ok && u != r.Unit {
			return nil, nil, fmt.Errorf("%s: unit %q in one line, %q in another", r.Name, r.Unit, u)
		}
		if r.Unit != "us" && r.Unit != "MB/s" {
			return nil, nil, fmt.Errorf("%s: unit %q (want us or MB/s)", r.Name, r.Unit)
		}
		units[r.Name] = r.Unit
		k, c := key{r.Name, r.Size}, Col{Impl: r.Impl, Transport: r.Transport}
		if vals[k] == nil {
			vals[k] = map[Col][]float64{}
		}
		vals[k][c] = append(vals[k][c], r.Median)
		cols[c] = true
	}
	keys := make([]key, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		if d := results.OrderIndex(caseOrder, a.name) - results.OrderIndex(caseOrder, b.name); d != 0 {
			return d
		}
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return int(a.size - b.size)
	})
	var cs []Col
	for c := range cols {
		cs = append(cs, c)
	}
	results.SortCols(cs, colOrder)
	var rows []Row
	for _, k := range keys {
		row := Row{Name: k.name, Size: k.size, Unit: units[k.name], Launches: map[string]int{}, Medians: map[string]float64{}, Ratios: map[string]float64{}}
		for c, v := range vals[k] {
			row.Medians[c.String()] = median(v)
			row.Launches[c.String()] = len(v)
		}
		for _, p := range pairs {
			a, b := vals[k][p.Num], vals[k][p.Den]
			if len(a) == 0 || len(b) == 0 {
				continue
			}
			num, den := median(a), median(b)
			if row.Unit == "MB/s" {
				num, den = den, num
			}
			if den == 0 {
				continue
			}
			r := num / den
			row.Ratios[p.String()] = r
			if goal > 0 && row.Unit == "us" && r > goal {
				row.Over = append(row.Over, p.String())
			}
		}
		rows = append(rows, row)
	}
	return rows, cs, nil
}

// Render writes the markdown table of rows.
func Render(w io.Writer, rows []Row, cs []Col, pairs []Pair, goal float64, loads []float64) {
	hdr := []string{"case", "size", "unit"}
	for _, c := range cs {
		hdr = append(hdr, c.String())
	}
	for _, p := range pairs {
		hdr = append(hdr, p.String())
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(hdr, " | "))
	fmt.Fprintf(w, "|---|---:|---%s|\n", strings.Repeat("|---:", len(hdr)-3))
	over, maxN := 0, 0
	for _, r := range rows {
		cells := []string{r.Name, results.FormatSize(r.Size), r.Unit}
		for _, c := range cs {
			if v, ok := r.Medians[c.String()]; ok {
				cells = append(cells, fmt.Sprintf("%.2f", v))
				maxN = max(maxN, r.Launches[c.String()])
			} else {
				cells = append(cells, "—")
			}
		}
		for _, p := range pairs {
			v, ok := r.Ratios[p.String()]
			if !ok {
				cells = append(cells, "—")
				continue
			}
			cell := fmt.Sprintf("%.2f", v)
			if slices.Contains(r.Over, p.String()) {
				cell += " **over**"
				over++
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Medians over up to %d launches per column (each launch reports the median of its repetitions). Ratios are time ratios (how many times longer the first takes; for MB/s rows the second's bandwidth ÷ the first's).", maxN)
	if len(loads) > 0 {
		fmt.Fprintf(w, " 1-minute load before the launches: min %.2f, median %.2f, max %.2f.", slices.Min(loads), median(loads), slices.Max(loads))
	}
	if goal > 0 && len(pairs) > 0 {
		if over == 0 {
			fmt.Fprintf(w, " Every latency ratio is within the goal of %.2f.", goal)
		} else {
			fmt.Fprintf(w, " %d latency ratios exceed the goal of %.2f.", over, goal)
		}
	}
	fmt.Fprintln(w)
}

func main() {
	goal := flag.Float64("goal", 1.5, "bound for every latency ratio (0: no check)")
	pairsFlag := flag.String("pairs", "ftmpi/tcp:openmpi/tcp,ftmpi/unix:openmpi/shm,ftmpi/shm:openmpi/shm", "ratio columns: num:den pairs of impl/transport, comma-separated")
	asJSON := flag.Bool("json", false, "print one JSON object per row instead of the table")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: rmacmp [-goal 1.5] [-pairs a/t:b/u,...] [-json] [FILE.jsonl ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	pairs, err := ParsePairs(*pairsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rmacmp: -pairs:", err)
		os.Exit(2)
	}
	recs, err := results.ReadAll(flag.Args(), Parse)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rmacmp:", err)
		os.Exit(1)
	}
	rows, cs, err := Rows(recs, pairs, *goal)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rmacmp:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		for _, r := range rows {
			enc.Encode(r)
		}
		return
	}
	var loads []float64
	for _, r := range recs {
		if r.Load1 != nil {
			loads = append(loads, *r.Load1)
		}
	}
	Render(os.Stdout, rows, cs, pairs, *goal, loads)
}
