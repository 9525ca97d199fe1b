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

var modes = []string{"reinit", "ulfm", "relaunch"}

// summarizeFile prints markdown tables of the medians of the report lines
// in path (other lines are ignored) and the ratios to Reinit.
func summarizeFile(path string, out io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var reps []report
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r report
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Name != "recovery" || r.Mode == "" {
			continue
		}
		reps = append(reps, r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(reps) == 0 {
		return fmt.Errorf("%s: no recovery result lines", path)
	}
	summarize(reps, out)
	return nil
}

type modeNP struct {
	mode string
	np   int
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

func median(v []float64) (float64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2], true
	}
	return (v[n/2-1] + v[n/2]) / 2, true
}

// summarize writes the tables for reps.
func summarize(reps []report, out io.Writer) {
	groups := map[modeNP][]report{}
	var nps []int
	for _, r := range reps {
		k := modeNP{r.Mode, r.NP}
		groups[k] = append(groups[k], r)
		if !slices.Contains(nps, r.NP) {
			nps = append(nps, r.NP)
		}
	}
	slices.Sort(nps)
	med := func(k modeNP, get func(report) *float64) (float64, bool) {
		var v []float64
		for _, r := range groups[k] {
			if p := get(r); p != nil {
				v = append(v, *p)
			}
		}
		return median(v)
	}
	total := func(r report) *float64 { return &r.Recovery }
	cell := func(v float64, ok bool) string {
		if !ok {
			return "-"
		}
		return fmt.Sprintf("%.1f", v)
	}
	ratio := func(a, b float64, okA, okB bool) string {
		if !okA || !okB || b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}

	fmt.Fprintln(out, "Kill -> every rank resumed (ms), median over runs (in parentheses: runs, min-max):")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| np | (a) Reinit | (b) ULFM replacement | (c) relaunch | (b)/(a) | (c)/(a) |")
	fmt.Fprintln(out, "|---:|---:|---:|---:|---:|---:|")
	for _, np := range nps {
		a, okA := med(modeNP{"reinit", np}, total)
		b, okB := med(modeNP{"ulfm", np}, total)
		c, okC := med(modeNP{"relaunch", np}, total)
		rng := func(m string) string {
			g := groups[modeNP{m, np}]
			if len(g) == 0 {
				return "(0)"
			}
			lo, hi := g[0].Recovery, g[0].Recovery
			for _, r := range g {
				lo, hi = min(lo, r.Recovery), max(hi, r.Recovery)
			}
			return fmt.Sprintf("(%d: %.1f-%.1f)", len(g), lo, hi)
		}
		fmt.Fprintf(out, "| %d | %s %s | %s %s | %s %s | %s | %s |\n", np,
			cell(a, okA), rng("reinit"), cell(b, okB), rng("ulfm"), cell(c, okC), rng("relaunch"),
			ratio(b, a, okB, okA), ratio(c, a, okC, okA))
	}
	for _, np := range nps {
		if np != 16 {
			continue
		}
		a, okA := med(modeNP{"reinit", np}, total)
		b, okB := med(modeNP{"ulfm", np}, total)
		c, okC := med(modeNP{"relaunch", np}, total)
		if okA && okB && okC && a > 0 {
			fmt.Fprintf(out, "\nGoal at np 16 (issue 5): (c)/(a) = %.2f, goal >= 6: %s; (b)/(a) = %.2f, goal >= 3: %s.\n",
				c/a, met(c/a >= 6), b/a, met(b/a >= 3))
		}
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Phases (ms, medians; each from the end of the previous one, see bench/README.md):")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| mode | np | (first survivor knew) | detect | shrink | respawn | rebuild | load | first iter | total |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	cols := []func(report) *float64{
		func(r report) *float64 { return r.DetectFirst },
		func(r report) *float64 { return r.Detect },
		func(r report) *float64 { return r.Shrink },
		func(r report) *float64 { return r.Respawn },
		func(r report) *float64 { return r.Rebuild },
		func(r report) *float64 { return r.Load },
		func(r report) *float64 { return r.Iter },
		total,
	}
	for _, m := range modes {
		for _, np := range nps {
			k := modeNP{m, np}
			if len(groups[k]) == 0 {
				continue
			}
			cells := make([]string, len(cols))
			for i, get := range cols {
				cells[i] = cell(med(k, get))
			}
			fmt.Fprintf(out, "| %s | %d | %s |\n", m, np, strings.Join(cells, " | "))
		}
	}
}
