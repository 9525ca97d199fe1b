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
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Record is one result line.
type Record struct {
	Name      string   `json:"name"`
	Impl      string   `json:"impl"`
	Transport string   `json:"transport"`
	Size      int64    `json:"size"`
	Median    float64  `json:"median"`
	Unit      string   `json:"unit"`
	Load1     *float64 `json:"load1"` // set by dtype-compare.sh; absent in plain bench output
}

// col is one implementation over one transport, written "impl/transport".
type col struct{ impl, transport string }

func (c col) String() string { return c.impl + "/" + c.transport }

func parseCol(s string) (col, error) {
	i, t, ok := strings.Cut(s, "/")
	if !ok || i == "" || t == "" {
		return col{}, fmt.Errorf("column %q: want impl/transport", s)
	}
	return col{i, t}, nil
}

// pair is one ratio column: num ÷ den.
type pair struct{ num, den col }

// ParsePairs reads "a/t:b/u,c/v:d/w".
func ParsePairs(s string) ([]pair, error) {
	var out []pair
	for _, p := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			return nil, fmt.Errorf("pair %q: want impl/transport:impl/transport", p)
		}
		num, err := parseCol(a)
		if err != nil {
			return nil, err
		}
		den, err := parseCol(b)
		if err != nil {
			return nil, err
		}
		out = append(out, pair{num, den})
	}
	return out, nil
}

// Parse reads JSON lines, keeping those whose name starts with "dtype-".
// Blank lines are ignored; malformed lines are reported to warn and skipped.
func Parse(r io.Reader, warn io.Writer) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			fmt.Fprintf(warn, "dtypecmp: line %d skipped: %v\n", n, err)
			continue
		}
		if strings.HasPrefix(rec.Name, "dtype-") {
			out = append(out, rec)
		}
	}
	return out, sc.Err()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// caseOrder fixes the row order; other dtype-* names follow alphabetically.
var caseOrder = []string{"dtype-contig", "dtype-vector", "dtype-struct", "dtype-structdt"}

// colOrder fixes the column order; other columns follow alphabetically.
var colOrder = []col{{"ftmpi", "tcp"}, {"openmpi", "tcp"}, {"ftmpi", "unix"}, {"openmpi", "shm"}, {"mpich", "shm"}}

func orderIndex[T comparable](list []T, v T) int {
	if i := slices.Index(list, v); i >= 0 {
		return i
	}
	return len(list)
}

func formatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// Render writes the table of recs to w. goal is the bound every ratio is
// checked against (0: no check).
func Render(w io.Writer, recs []Record, pairs []pair, goal float64) error {
	if len(recs) == 0 {
		return errors.New("no dtype-* result lines")
	}
	type row struct {
		name string
		size int64
	}
	vals := map[row]map[col][]float64{}
	cols := map[col]bool{}
	var loads []float64
	unit := recs[0].Unit
	for _, r := range recs {
		if r.Unit != unit {
			return fmt.Errorf("%s %s/%s %d: unit %q, other lines %q", r.Name, r.Impl, r.Transport, r.Size, r.Unit, unit)
		}
		k, c := row{r.Name, r.Size}, col{r.Impl, r.Transport}
		if vals[k] == nil {
			vals[k] = map[col][]float64{}
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
		if d := orderIndex(caseOrder, a.name) - orderIndex(caseOrder, b.name); d != 0 {
			return d
		}
		if a.name != b.name {
			return strings.Compare(a.name, b.name)
		}
		return int(a.size - b.size)
	})
	var cs []col
	for c := range cols {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b col) int {
		if d := orderIndex(colOrder, a) - orderIndex(colOrder, b); d != 0 {
			return d
		}
		return strings.Compare(a.String(), b.String())
	})

	hdr := []string{"case", "size"}
	for _, c := range cs {
		hdr = append(hdr, fmt.Sprintf("%s (%s)", c, unit))
	}
	for _, p := range pairs {
		hdr = append(hdr, fmt.Sprintf("%s ÷ %s", p.num, p.den))
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(hdr, " | "))
	fmt.Fprintf(w, "|---|---:%s|\n", strings.Repeat("|---:", len(hdr)-2))
	over := 0
	for _, k := range rows {
		cells := []string{k.name, formatSize(k.size)}
		for _, c := range cs {
			if v := vals[k][c]; len(v) > 0 {
				cells = append(cells, fmt.Sprintf("%.2f", median(v)))
			} else {
				cells = append(cells, "—")
			}
		}
		for _, p := range pairs {
			a, b := vals[k][p.num], vals[k][p.den]
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
	var recs []Record
	read := func(r io.Reader, name string) {
		rs, err := Parse(r, os.Stderr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dtypecmp: %s: %v\n", name, err)
			os.Exit(1)
		}
		recs = append(recs, rs...)
	}
	if flag.NArg() == 0 {
		read(os.Stdin, "stdin")
	}
	for _, f := range flag.Args() {
		fh, err := os.Open(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dtypecmp:", err)
			os.Exit(1)
		}
		read(fh, f)
		fh.Close()
	}
	if err := Render(os.Stdout, recs, pairs, *goal); err != nil {
		fmt.Fprintln(os.Stderr, "dtypecmp:", err)
		os.Exit(1)
	}
}
