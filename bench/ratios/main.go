// Command ratios reads benchmark result lines (one JSON object per line, as
// written by bench/compare.sh, the C benchmarks in bench/c and ftmpi-bench)
// and prints markdown tables comparing ftmpi with Open MPI and MPICH.
//
// Usage:
//
//	go run ./bench/ratios [-names latency,bw] [FILE.jsonl ...]   (stdin if no file)
//
// For every benchmark name there is one table; each row is one (size, np) and
// holds the median of every impl/transport seen plus ratio columns:
//
//   - "ftmpi ÷ X (best)": ftmpi's best transport against X's best transport
//     (best = lowest time, or highest bandwidth);
//   - "ftmpi ÷ X (T)": like for like, when ftmpi and X both have transport T.
//
// For times (unit us, ms) a ratio below 1 means ftmpi is faster. For
// bandwidths (unit MB/s) the ratio is still ftmpi/other, so above 1 means
// ftmpi is faster; every table header states its direction. If the same key
// appears more than once (several files), the median of the values is used.
// Lines that are not JSON objects are skipped with a warning on stderr.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ftmpi/ftmpi/bench/internal/results"
)

// Record is one result line.
type Record struct {
	Name      string  `json:"name"`
	Impl      string  `json:"impl"`
	Transport string  `json:"transport"`
	NP        int     `json:"np"`
	Size      int64   `json:"size"`
	Median    float64 `json:"median"`
	Unit      string  `json:"unit"`
	Runs      int     `json:"runs"`
}

// ours is the implementation the ratios are computed for.
const ours = "ftmpi"

// nameOrder fixes the order of tables; unknown names follow alphabetically.
var nameOrder = []string{"latency", "bw", "bibw", "start", "barrier", "bcast", "reduce",
	"allreduce", "allgather", "alltoall"}

// implOrder fixes the order of implementation columns.
var implOrder = []string{ours, "openmpi", "mpich"}

// Parse reads JSON lines. Blank lines are ignored; malformed lines are
// reported to warn (if not nil) and skipped.
func Parse(r io.Reader, warn io.Writer) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec Record
		if !strings.HasPrefix(text, "{") || json.Unmarshal([]byte(text), &rec) != nil ||
			rec.Name == "" || rec.Impl == "" {
			if warn != nil {
				fmt.Fprintf(warn, "ratios: skipping line %d: %.80s\n", line, text)
			}
			continue
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// higherIsBetter reports whether larger values of unit are better.
func higherIsBetter(unit string) bool {
	u := strings.ToLower(unit)
	return strings.HasSuffix(u, "/s") || u == "mbps" || u == "gbps"
}

type column struct{ impl, transport string }

func (c column) String() string { return c.impl + "/" + c.transport }

type rowKey struct {
	size int64
	np   int
}

var rank = results.OrderIndex[string]

var median = results.Median

// FormatSize prints a byte count as B, KiB or MiB.
var FormatSize = results.FormatSize

// FormatValue prints a measurement with about three significant digits.
func FormatValue(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// table holds one benchmark name's data.
type table struct {
	name string
	unit string
	cols []column
	rows []rowKey
	vals map[rowKey]map[column]float64
}

func build(recs []Record) []*table {
	type key struct {
		name string
		row  rowKey
		col  column
	}
	samples := map[key][]float64{}
	units := map[string]string{}
	colsByName := map[string]map[column]bool{}
	rowsByName := map[string]map[rowKey]bool{}
	for _, r := range recs {
		k := key{r.Name, rowKey{r.Size, r.NP}, column{r.Impl, r.Transport}}
		samples[k] = append(samples[k], r.Median)
		if _, ok := units[r.Name]; !ok {
			units[r.Name] = r.Unit
			colsByName[r.Name] = map[column]bool{}
			rowsByName[r.Name] = map[rowKey]bool{}
		}
		colsByName[r.Name][k.col] = true
		rowsByName[r.Name][k.row] = true
	}
	var names []string
	for n := range units {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		ri, rj := rank(nameOrder, names[i]), rank(nameOrder, names[j])
		if ri != rj {
			return ri < rj
		}
		return names[i] < names[j]
	})
	var out []*table
	for _, n := range names {
		t := &table{name: n, unit: units[n], vals: map[rowKey]map[column]float64{}}
		for c := range colsByName[n] {
			t.cols = append(t.cols, c)
		}
		sort.Slice(t.cols, func(i, j int) bool {
			a, b := t.cols[i], t.cols[j]
			ra, rb := rank(implOrder, a.impl), rank(implOrder, b.impl)
			if ra != rb {
				return ra < rb
			}
			if a.impl != b.impl {
				return a.impl < b.impl
			}
			return a.transport < b.transport
		})
		for rk := range rowsByName[n] {
			t.rows = append(t.rows, rk)
		}
		sort.Slice(t.rows, func(i, j int) bool {
			if t.rows[i].size != t.rows[j].size {
				return t.rows[i].size < t.rows[j].size
			}
			return t.rows[i].np < t.rows[j].np
		})
		for k, v := range samples {
			if k.name != n {
				continue
			}
			if t.vals[k.row] == nil {
				t.vals[k.row] = map[column]float64{}
			}
			t.vals[k.row][k.col] = median(v)
		}
		out = append(out, t)
	}
	return out
}

// ratioCol describes one ratio column: ftmpi against other, restricted to
// transport (empty = best of each).
type ratioCol struct{ other, transport string }

func (t *table) ratioCols() []ratioCol {
	ourT := map[string]bool{}
	others := map[string]map[string]bool{}
	for _, c := range t.cols {
		if c.impl == ours {
			ourT[c.transport] = true
			continue
		}
		if others[c.impl] == nil {
			others[c.impl] = map[string]bool{}
		}
		others[c.impl][c.transport] = true
	}
	var impls []string
	for i := range others {
		impls = append(impls, i)
	}
	sort.Slice(impls, func(i, j int) bool {
		ri, rj := rank(implOrder, impls[i]), rank(implOrder, impls[j])
		if ri != rj {
			return ri < rj
		}
		return impls[i] < impls[j]
	})
	var out []ratioCol
	for _, impl := range impls {
		out = append(out, ratioCol{impl, ""})
		var ts []string
		for tr := range others[impl] {
			if ourT[tr] {
				ts = append(ts, tr)
			}
		}
		sort.Strings(ts)
		// A like-for-like column only adds information when there is a choice.
		if len(ts) > 0 && (len(others[impl]) > 1 || len(ourT) > 1) {
			for _, tr := range ts {
				out = append(out, ratioCol{impl, tr})
			}
		}
	}
	return out
}

// best returns impl's best value in a row (restricted to transport if set).
func (t *table) best(row rowKey, impl, transport string) (float64, bool) {
	hib := higherIsBetter(t.unit)
	var v float64
	found := false
	for c, x := range t.vals[row] {
		if c.impl != impl || (transport != "" && c.transport != transport) {
			continue
		}
		if !found || (hib && x > v) || (!hib && x < v) {
			v, found = x, true
		}
	}
	return v, found
}

// Render writes the markdown tables.
func Render(w io.Writer, recs []Record) {
	for _, t := range build(recs) {
		dir := "ftmpi ÷ other: lower is better for ftmpi"
		if higherIsBetter(t.unit) {
			dir = "ftmpi / other: higher is better for ftmpi"
		}
		fmt.Fprintf(w, "### %s (%s; ratios: %s)\n\n", t.name, t.unit, dir)
		rcs := t.ratioCols()
		hdr := []string{"size", "np"}
		for _, c := range t.cols {
			hdr = append(hdr, c.String())
		}
		for _, rc := range rcs {
			label := "best"
			if rc.transport != "" {
				label = rc.transport
			}
			hdr = append(hdr, fmt.Sprintf("ftmpi/%s (%s)", rc.other, label))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(hdr, " | "))
		seps := make([]string, len(hdr))
		for i := range seps {
			seps[i] = "---:"
		}
		fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
		for _, row := range t.rows {
			cells := []string{FormatSize(row.size), fmt.Sprint(row.np)}
			for _, c := range t.cols {
				if v, ok := t.vals[row][c]; ok {
					cells = append(cells, FormatValue(v))
				} else {
					cells = append(cells, "—")
				}
			}
			for _, rc := range rcs {
				a, okA := t.best(row, ours, rc.transport)
				b, okB := t.best(row, rc.other, rc.transport)
				if okA && okB && b != 0 {
					cells = append(cells, fmt.Sprintf("%.2f", a/b))
				} else {
					cells = append(cells, "—")
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		fmt.Fprintln(w)
	}
}

func main() {
	names := flag.String("names", "", "comma-separated benchmark names to show (default all)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: ratios [-names a,b] [FILE.jsonl ...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	var recs []Record
	if err := results.EachInput(flag.Args(), func(r io.Reader, _ string) error {
		got, err := Parse(r, os.Stderr)
		recs = append(recs, got...)
		return err
	}); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
	if *names != "" {
		keep := map[string]bool{}
		for _, n := range strings.Split(*names, ",") {
			keep[strings.TrimSpace(n)] = true
		}
		var f []Record
		for _, r := range recs {
			if keep[r.Name] {
				f = append(f, r)
			}
		}
		recs = f
	}
	if len(recs) == 0 {
		fmt.Fprintln(os.Stderr, "ratios: no results")
		os.Exit(1)
	}
	Render(os.Stdout, recs)
}
