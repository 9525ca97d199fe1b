// Command iocmp reads the result lines of bench/io-compare.sh (the io-*
// lines of `ftmpi-bench -bench io` and bench/c/io, one JSON object per
// line, each tagged by the script with the launch's round and the 1-minute
// load before it) and prints one markdown table: per case, process count
// and size, the median bandwidth (MB/s) over the launches of every
// impl/transport, and the ratio ftmpi ÷ Open MPI (-num, -den), checked
// against -goal (1.0: issue 16's "file bandwidth at least Open MPI's";
// higher is better).
//
// Usage:
//
//	go run ./bench/iocmp [-goal 1.0] [-num ftmpi/unix] [-den openmpi/shm] [FILE.jsonl ...]   (stdin if no file)
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

// Parse reads JSON lines, keeping those whose name starts with "io-".
// Blank lines are ignored; malformed lines are reported to warn and skipped.
func Parse(r io.Reader, warn io.Writer) ([]Record, error) {
	return results.ReadLines(r, warn, "iocmp", func(rec Record) bool { return strings.HasPrefix(rec.Name, "io-") })
}

var median = results.Median

var caseOrder = []string{"io-write", "io-read", "io-strided-write"}

var colOrder = []string{"ftmpi/unix", "ftmpi/tcp", "openmpi/shm", "mpich/shm"}

// Render writes the table of recs to w: the ratio num ÷ den checked against
// goal (0: no check).
func Render(w io.Writer, recs []Record, num, den string, goal float64) error {
	if len(recs) == 0 {
		return errors.New("no io-* result lines")
	}
	type row struct {
		name string
		np   int
		size int64
	}
	vals := map[row]map[string][]float64{}
	cols := map[string]bool{}
	for _, r := range recs {
		if r.Unit != "MB/s" {
			return fmt.Errorf("%s %s/%s np %d %d: unit %q, want MB/s", r.Name, r.Impl, r.Transport, r.NP, r.Size, r.Unit)
		}
		k, c := row{r.Name, r.NP, r.Size}, r.Impl+"/"+r.Transport
		if vals[k] == nil {
			vals[k] = map[string][]float64{}
		}
		vals[k][c] = append(vals[k][c], r.Median)
		cols[c] = true
	}
	var rows []row
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
		if a.np != b.np {
			return a.np - b.np
		}
		return int(a.size - b.size)
	})
	var cs []string
	for c := range cols {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b string) int {
		if d := results.OrderIndex(colOrder, a) - results.OrderIndex(colOrder, b); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	fmt.Fprintf(w, "| case | np | size per rank |")
	for _, c := range cs {
		fmt.Fprintf(w, " %s (MB/s) |", c)
	}
	fmt.Fprintf(w, " %s ÷ %s |\n|---|---|---|", num, den)
	for range cs {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintln(w, "---|")
	for _, k := range rows {
		fmt.Fprintf(w, "| %s | %d | %s |", k.name, k.np, results.FormatSize(k.size))
		for _, c := range cs {
			if v := vals[k][c]; len(v) > 0 {
				fmt.Fprintf(w, " %.1f (%d) |", median(v), len(v))
			} else {
				fmt.Fprintf(w, " - |")
			}
		}
		a, b := vals[k][num], vals[k][den]
		switch {
		case len(a) == 0 || len(b) == 0 || median(b) == 0:
			fmt.Fprintln(w, " - |")
		default:
			r := median(a) / median(b)
			mark := ""
			if goal > 0 {
				mark = " (goal met)"
				if r < goal {
					mark = " (**below goal**)"
				}
			}
			fmt.Fprintf(w, " %.2f%s |\n", r, mark)
		}
	}
	fmt.Fprintf(w, "\nCells: median over launches (number of launches). Ratio: higher is better; goal %.2f.\n", goal)
	return nil
}

func main() {
	goal := flag.Float64("goal", 1.0, "the bound every ratio is checked against (0: none)")
	num := flag.String("num", "ftmpi/unix", "numerator column impl/transport")
	den := flag.String("den", "openmpi/shm", "denominator column impl/transport")
	flag.Parse()
	var recs []Record
	if err := results.EachInput(flag.Args(), func(r io.Reader, _ string) error {
		rs, err := Parse(r, os.Stderr)
		recs = append(recs, rs...)
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "iocmp:", err)
		os.Exit(1)
	}
	if err := Render(os.Stdout, recs, *num, *den, *goal); err != nil {
		fmt.Fprintln(os.Stderr, "iocmp:", err)
		os.Exit(1)
	}
}
