// Command beforeafter reads the output of bench/beforeafter.sh (result
// lines prefixed "old " or "new ", '#' comment lines) and prints a markdown
// table: per measurement (name, np, size) the median over rounds of each
// build's per-launch medians, and new/old (below 1 is faster for times,
// above 1 better for bandwidth, which the unit column tells apart).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

type result struct {
	Name   string  `json:"name"`
	NP     int     `json:"np"`
	Size   int     `json:"size"`
	Median float64 `json:"median"`
	Unit   string  `json:"unit"`
}

type key struct {
	name     string
	np, size int
	unit     string
}

type table struct {
	order []key
	vals  map[key]map[string][]float64
	loads []string
}

func parse(r io.Reader) (*table, error) {
	t := &table{vals: map[key]map[string][]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " load "); strings.HasPrefix(line, "# round") && i > 0 {
			t.loads = append(t.loads, strings.TrimSpace(line[i+6:]))
			continue
		}
		build, js, ok := strings.Cut(line, " ")
		if !ok || (build != "old" && build != "new") {
			continue
		}
		var res result
		if err := json.Unmarshal([]byte(js), &res); err != nil {
			return nil, fmt.Errorf("bad result line %q: %v", line, err)
		}
		k := key{res.Name, res.NP, res.Size, res.Unit}
		if t.vals[k] == nil {
			t.vals[k] = map[string][]float64{}
			t.order = append(t.order, k)
		}
		t.vals[k][build] = append(t.vals[k][build], res.Median)
	}
	return t, sc.Err()
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (t *table) write(w io.Writer) {
	if len(t.loads) > 0 {
		fmt.Fprintf(w, "1-minute load average before the launches: %s .. %s (%d samples)\n\n", minS(t.loads), maxS(t.loads), len(t.loads))
	}
	fmt.Fprintln(w, "| measurement | np | size | unit | old | new | new/old | launches |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, k := range t.order {
		o, n := median(t.vals[k]["old"]), median(t.vals[k]["new"])
		ratio := "-"
		if o > 0 && n > 0 {
			ratio = fmt.Sprintf("%.2f", n/o)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %s | %.4g | %.4g | %s | %d+%d |\n", k.name, k.np, k.size, k.unit, o, n, ratio, len(t.vals[k]["old"]), len(t.vals[k]["new"]))
	}
}

func minS(s []string) string { return slices.MinFunc(s, cmpNum) }
func maxS(s []string) string { return slices.MaxFunc(s, cmpNum) }
func cmpNum(a, b string) int {
	var x, y float64
	fmt.Sscan(a, &x)
	fmt.Sscan(b, &y)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

func main() {
	t, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "beforeafter:", err)
		os.Exit(1)
	}
	t.write(os.Stdout)
}
