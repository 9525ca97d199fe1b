// Command fttable reads the raw JSON lines of bench/ft-compare.sh (one line
// per launch and metric, from ftmpi-bench and from bench/c/ulfm_ft.c) and
// prints markdown: ftmpi next to Open MPI 5 ULFM with the ratio, per metric
// and process count (failure-free, one failure, replacement by spawn), and
// the issue 4 goals as met or not.
//
// Medians are taken over launches the way bench/ftmedian takes them (the
// upper middle of the sorted values); the range (min to max over launches)
// and the number of launches are shown next to them.
//
//	go run ./bench/ompi5/fttable [-ftmpi ftmpi] [-other openmpi5-ulfm] < raw.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

type result struct {
	Name   string  `json:"name"`
	Impl   string  `json:"impl"`
	NP     int     `json:"np"`
	Median float64 `json:"median"`
	Unit   string  `json:"unit"`
}

type key struct {
	name, impl string
	np         int
}

type stat struct {
	med, lo, hi float64
	n           int
	unit        string
}

func summarize(r io.Reader) (map[key]stat, []int, error) {
	vals := map[key][]float64{}
	units := map[key]string{}
	nps := map[int]bool{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var x result
		if json.Unmarshal(sc.Bytes(), &x) != nil || x.Name == "" {
			continue
		}
		k := key{x.Name, x.Impl, x.NP}
		vals[k] = append(vals[k], x.Median)
		units[k] = x.Unit
		nps[x.NP] = true
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	out := map[key]stat{}
	for k, v := range vals {
		slices.Sort(v)
		out[k] = stat{med: v[len(v)/2], lo: v[0], hi: v[len(v)-1], n: len(v), unit: units[k]}
	}
	var npList []int
	for np := range nps {
		npList = append(npList, np)
	}
	slices.Sort(npList)
	return out, npList, nil
}

// num prints a value with about three significant digits.
func num(v float64) string {
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

func cell(s stat, ok bool) string {
	if !ok {
		return "—"
	}
	if s.n == 1 {
		return num(s.med)
	}
	return fmt.Sprintf("%s (%s–%s, %d)", num(s.med), num(s.lo), num(s.hi), s.n)
}

var metrics = []struct{ name, label string }{
	{"ft_detect_max", "kill → every survivor's blocked Recv returns (ms)"},
	{"ft_revoke_shrink_max", "revoke + shrink after a failure (ms)"},
	{"ft_agree_after_failure_max", "agree after a failure, comm with the dead rank (ms)"},
	{"ft_agree_new_comm_max", "agree after a failure, shrunken comm (ms)"},
	{"ft_shrink", "shrink, no failure (µs)"},
	{"ft_agree", "agree, no failure (µs)"},
	{"ft_allreduce8", "allreduce 8 B, no failure (µs)"},
	{"ft_replace_total_max", "replacement: kill → restored communicator (ms)"},
	{"ft_replace_shrink_max", "replacement: revoke + shrink (ms)"},
	{"ft_replace_spawn_max", "replacement: spawn 1, incl. the child's init (ms)"},
	{"ft_replace_merge_max", "replacement: merge (ms)"},
	{"ft_replace_split_max", "replacement: split back to the old ranks (ms)"},
	{"ft_replace_detect_max", "replacement launches: kill → survivors know (ms)"},
}

func main() {
	ft := flag.String("ftmpi", "ftmpi", "impl label of ftmpi's lines")
	other := flag.String("other", "openmpi5-ulfm", "impl label of Open MPI 5's lines")
	flag.Parse()
	st, nps, err := summarize(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fttable:", err)
		os.Exit(1)
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	get := func(name, impl string, np int) (stat, bool) {
		s, ok := st[key{name, impl, np}]
		return s, ok
	}
	ratio := func(name string, np int) (float64, bool) {
		a, ok1 := get(name, *ft, np)
		b, ok2 := get(name, *other, np)
		if !ok1 || !ok2 || b.med == 0 {
			return 0, false
		}
		return a.med / b.med, true
	}

	fmt.Fprintf(w, "Medians over launches (range min–max, launches). Ratio = ftmpi / Open MPI 5: below 1, ftmpi is faster.\n\n")
	fmt.Fprintf(w, "| metric | np | ftmpi | Open MPI 5 ULFM | ftmpi / Open MPI 5 |\n|---|---:|---:|---:|---:|\n")
	for _, m := range metrics {
		for _, np := range nps {
			a, ok1 := get(m.name, *ft, np)
			b, ok2 := get(m.name, *other, np)
			if !ok1 && !ok2 {
				continue
			}
			r := "—"
			if x, ok := ratio(m.name, np); ok {
				r = fmt.Sprintf("%.2f", x)
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s |\n", m.label, np, cell(a, ok1), cell(b, ok2), r)
		}
	}

	// Goals of issue 4, item 8.
	fmt.Fprintf(w, "\nGoals (issue 4, item 8), on the medians above:\n\n")
	fmt.Fprintf(w, "| np | every survivor knows ≤ 5 ms | revoke + shrink ≤ ½ Open MPI 5 | agree after failure ≤ Open MPI 5 | agree ≤ 2× own allreduce 8 B | kill → replaced ≤ 50 ms (anchors' goal, np 16) |\n|---:|---|---|---|---|---|\n")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**not met**"
	}
	for _, np := range nps {
		var cols []string
		if d, ok := get("ft_detect_max", *ft, np); ok {
			cols = append(cols, fmt.Sprintf("%s ms: %s", num(d.med), verdict(d.med <= 5)))
		} else {
			cols = append(cols, "—")
		}
		if x, ok := ratio("ft_revoke_shrink_max", np); ok {
			cols = append(cols, fmt.Sprintf("%.2fx: %s", x, verdict(x <= 0.5)))
		} else {
			cols = append(cols, "—")
		}
		if x, ok := ratio("ft_agree_after_failure_max", np); ok {
			cols = append(cols, fmt.Sprintf("%.2fx: %s", x, verdict(x <= 1)))
		} else {
			cols = append(cols, "—")
		}
		ag, ok1 := get("ft_agree", *ft, np)
		ar, ok2 := get("ft_allreduce8", *ft, np)
		if ok1 && ok2 && ar.med > 0 {
			x := ag.med / ar.med
			cols = append(cols, fmt.Sprintf("%.2fx: %s", x, verdict(x <= 2)))
		} else {
			cols = append(cols, "—")
		}
		if r, ok := get("ft_replace_total_max", *ft, np); ok {
			cols = append(cols, fmt.Sprintf("%s ms: %s", num(r.med), verdict(r.med <= 50)))
		} else {
			cols = append(cols, "—")
		}
		fmt.Fprintf(w, "| %d | %s |\n", np, strings.Join(cols, " | "))
	}
}
