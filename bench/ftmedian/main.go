// Command ftmedian reads ftmpi-bench JSON lines (one per launch and
// metric) and prints, per (name, np), one line with the median over the
// launches and the number of launches in "runs".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
)

type result struct {
	Name      string  `json:"name"`
	Impl      string  `json:"impl"`
	Transport string  `json:"transport"`
	NP        int     `json:"np"`
	Size      int     `json:"size"`
	Median    float64 `json:"median"`
	Unit      string  `json:"unit"`
	Runs      int     `json:"runs"`
}

func main() {
	type key struct {
		name string
		np   int
	}
	groups := map[key][]result{}
	var order []key
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var r result
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Name == "" {
			continue
		}
		k := key{r.Name, r.NP}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, k := range order {
		g := groups[k]
		vals := make([]float64, len(g))
		for i, r := range g {
			vals[i] = r.Median
		}
		slices.Sort(vals)
		out := g[0]
		out.Median, out.Runs = vals[len(vals)/2], len(vals)
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
