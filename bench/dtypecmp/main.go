// Command dtypecmp reads the result lines of bench/dtype-compare.sh (the
// dtype-* lines of `ftmpi-bench -bench dtype` and bench/c/dtype, one JSON
// object per line, each tagged by the script with the launch's round and the
// 1-minute load before it) and prints one markdown table: per case and size,
// the median over launches of every impl/transport, and the ratios of the
// pairs named by -pairs (default ftmpi/tcp ÷ openmpi/tcp and ftmpi/unix ÷
// openmpi/shm), each checked against -goal (1.2: issue 12's bound).
//
// Usage:
//
//	go run ./bench/dtypecmp [-goal 1.2] [-pairs a/t:b/u,...] [FILE.jsonl ...]   (stdin if no file)
//
// It only formats; it measures nothing and launches nothing.
package main

import (
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

// ParsePairs reads "a/t:b/u,c/v:d/w".
var ParsePairs = results.ParsePairs

// Parse reads JSON lines, keeping those whose name starts with "dtype-".
// Blank lines are ignored; malformed lines are reported to warn and skipped.
func Parse(r io.Reader, warn io.Writer) ([]Record, error) {
	return results.ReadLines(r, warn, "dtypecmp", func(rec Record) bool { return strings.HasPrefix(rec.Name, "dtype-") })
}

var median = results.Median

// caseOrder fixes the row order; other dtype-* names follow alphabetically.
var caseOrder = []string{"dtype-contig", "dtype-vector", "dtype-struct", "dtype-structdt"}

// colOrder fixes the column order; other columns follow alphabetically.
var colOrder = results.Cols("ftmpi/tcp", "openmpi/tcp", "ftmpi/unix", "openmpi/shm", "mpich/shm")

// Render writes the table of recs to w. goal is the bound every ratio is
// checked against (0: no check).
func Render(w io.Writer, recs []Record, pairs []results.Pair, goal float64) error {
	if len(recs) == 0 {
		return errors.New("no dtype-* result lines")
	}
	type row struct {
		name string
		size int64
	}
	vals := map[row]map[results.Col][]float64{}
	cols := map[results.Col]bool{}
	var loads []float64
	unit := recs[0].Unit
	for _, r := range recs {
		if r.Unit != unit {
			return fmt.Errorf("%s %s/%s %d: unit %q, other lines %q", r.Name, r.Impl, r.Transport, r.Size, r.Unit, unit)
		}
		k, c := row{r.Name, r.Size}, results.Col{Impl: r.Impl, Transport: r.Transport}
		if vals[k] == nil {
			vals[k] = map[results.Col][]float64{}
		}
		vals[k][c] = append(vals[k][c], r.Median)
		cols[c] = true
		if r.Load1 != nil {
			loads = append(loads, *r.Load1)
		}
	}
	rows := make([]row, 0, len(vals))
	for k := range vals {
		rows = append(rows, k)
	}
	slices.SortFunc(rows, func(a, b row) int {
		if d := results.OrderIndex(caseOrder, a.name) - results.OrderIndex(caseOrder, b.name); d != 0 {
			return d
		}
		if a.name != b.name {
			return strings.Compare(a.name, b.name)
		}
		return int(a.size - b.size)
	})
	var cs []results.Col
	for c := range cols {
		cs = append(cs, c)
	}
	results.SortCols(cs, colOrder)

	hdr := []string{"case", "size"}
	for _, c := range cs {
		hdr = append(hdr, fmt.Sprintf("%s (%s)", c, unit))
	}
	for _, p := range pairs {
		hdr = append(hdr, p.String())
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(hdr, " | "))
	fmt.Fprintf(w, "|---|---:%s|\n", strings.Repeat("|---:", len(hdr)-2))
	over := 0
	for _, k := range rows {
		cells := []string{k.name, results.FormatSize(k.size)}
		for _, c := range cs {
			if v := vals[k][c]; len(v) > 0 {
				cells = append(cells, fmt.Sprintf("%.2f", median(v)))
			} else {
				cells = append(cells, "—")
			}
		}
		for _, p := range pairs {
			a, b := vals[k][p.Num], vals[k][p.Den]
			if len(a) == 0 || len(b) == 0 || median(b) == 0 {
				cells = append(cells, "—")
				continue
			}
			r := median(a) / median(b)
			cell := fmt.Sprintf("%.2f", r)
			if goal > 0 && r > goal {
				cell += " **over**"
				over++
			}
			cells = append(cells, cell)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
	n := 0
	for _, k := range rows {
		for _, v := range vals[k] {
			n = max(n, len(v))
		}
	}
	fmt.Fprintf(w, "Medians over up to %d launches per column (each launch reports the median of its repetitions).", n)
	if len(loads) > 0 {
		fmt.Fprintf(w, " 1-minute load before the launches: min %.2f, median %.2f, max %.2f.", slices.Min(loads), median(loads), slices.Max(loads))
	}
	if goal > 0 && len(pairs) > 0 {
		if over == 0 {
			fmt.Fprintf(w, " Every ratio is within the goal of %.2f.", goal)
		} else {
			fmt.Fprintf(w, " %d ratios exceed the goal of %.2f.", over, goal)
		}
	}
	fmt.Fprintln(w)
	return nil
}

func main() {
	goal := flag.Float64("goal", 1.2, "bound for every ratio (0: no check)")
	pairsFlag := flag.String("pairs", "ftmpi/tcp:openmpi/tcp,ftmpi/unix:openmpi/shm", "ratio columns: num:den pairs of impl/transport, comma-separated")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: dtypecmp [-goal 1.2] [-pairs a/t:b/u,...] [FILE.jsonl ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	pairs, err := ParsePairs(*pairsFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dtypecmp: -pairs:", err)
		os.Exit(2)
	}
	recs, err := results.ReadAll(flag.Args(), Parse)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dtypecmp:", err)
		os.Exit(1)
	}
	if err := Render(os.Stdout, recs, pairs, *goal); err != nil {
		fmt.Fprintln(os.Stderr, "dtypecmp:", err)
		os.Exit(1)
	}
}
