package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rec is one result line of xhostcmp: one launch's value of one measure.
// Censored: the launch was ended at the cap (Value is the cap: "more
// than"). Note: what happened instead (an abort, receives that returned).
type rec struct {
	Name      string  `json:"name"`
	Impl      string  `json:"impl"`
	Transport string  `json:"transport"`
	NP        int     `json:"np"`
	Size      int64   `json:"size"`
	Median    float64 `json:"median"`
	Unit      string  `json:"unit"`
	Runs      int     `json:"runs"`
	Round     int     `json:"round"`
	Load1     float64 `json:"load1"`
	Censored  bool    `json:"censored,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// The measures (rec.Name).
const (
	mLatency      = "xhost-latency"       // µs, size 1
	mBW           = "xhost-bw"            // MB/s, 1 MiB .. 16 MiB
	mStart        = "xhost-start"         // ms, np 16 over 4 hosts
	mCrashFirst   = "xhost-crash-first"   // ms: kill → first survivor's receive failed
	mCrashLast    = "xhost-crash-last"    // ms: kill → last survivor's
	mCrashAbort   = "xhost-crash-abort"   // ms: kill → the launcher exited (no ULFM: the job is aborted)
	mSilentFirst  = "xhost-silent-first"  // as crash, the host cut off first
	mSilentLast   = "xhost-silent-last"   //
	mSilentAbort  = "xhost-silent-abort"  //
	mReplaceTotal = "xhost-replace-total" // ms: kill → restored communicator (ftmpi)
)

var implOrder = []string{"ftmpi", "openmpi", "mpich"}

var implTitle = map[string]string{"ftmpi": "ftmpi", "openmpi": "Open MPI 4.1", "mpich": "MPICH 4.0 (hydra)"}

// stat is the median over launches of one (measure, impl, size), with the
// range and how many launches were censored.
type stat struct {
	median, lo, hi float64
	n, censored    int
	notes          []string
}

func (s stat) ok() bool { return s.n > 0 }

// fmtv formats a value with 3 significant digits.
func fmtv(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// cell is "median (lo–hi, n)" or "> cap (n)" when every launch was cut
// at the cap; censored launches are counted as the cap (a lower bound).
func (s stat) cell() string {
	if !s.ok() {
		return "—"
	}
	if s.censored == s.n {
		return fmt.Sprintf("> %s (%d)", fmtv(s.median), s.n)
	}
	c := fmtv(s.median)
	if s.n > 1 {
		c += fmt.Sprintf(" (%s–%s, %d)", fmtv(s.lo), fmtv(s.hi), s.n)
	}
	if s.censored > 0 {
		c += fmt.Sprintf(", %d cut at the cap", s.censored)
	}
	return c
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// stats groups recs by (name, impl, size).
type key struct {
	name, impl string
	size       int64
}

func stats(recs []rec) map[key]stat {
	vals := map[key][]float64{}
	out := map[key]stat{}
	for _, r := range recs {
		k := key{r.Name, r.Impl, r.Size}
		vals[k] = append(vals[k], r.Median)
		s := out[k]
		if r.Censored {
			s.censored++
		}
		if r.Note != "" && !slices.Contains(s.notes, r.Note) {
			s.notes = append(s.notes, r.Note)
		}
		out[k] = s
	}
	for k, v := range vals {
		s := out[k]
		s.median, s.lo, s.hi, s.n = median(v), slices.Min(v), slices.Max(v), len(v)
		out[k] = s
	}
	return out
}

// row is one line of the table: a measure at one size, its unit, whether
// higher is better, and the goal against Open MPI (ratio) or absolute.
type row struct {
	label    string
	name     string
	size     int64
	higher   bool    // bandwidth: ratio ftmpi ÷ other, above 1 is better
	goal     float64 // ratio goal against Open MPI (0: none)
	absolute float64 // absolute goal for ftmpi's value (0: none)
	goalText string
}

// writeTable prints the markdown table of recs: ftmpi, Open MPI and MPICH
// side by side, ratios ftmpi ÷ other, the goals met or not.
func writeTable(w io.Writer, recs []rec, hbTimeout time.Duration) {
	st := stats(recs)
	have := map[string]bool{}
	for _, r := range recs {
		have[r.Impl] = true
	}
	var impls []string
	for _, i := range implOrder {
		if have[i] {
			impls = append(impls, i)
		}
	}
	silentGoal := float64(hbTimeout.Milliseconds()) * 1.1
	// The job sizes the records were taken at (the defaults: np 16 on 4
	// hosts; a test's small run differs).
	nps := map[string][]int{}
	for _, r := range recs {
		if r.NP > 0 && !slices.Contains(nps[r.Name], r.NP) {
			nps[r.Name] = append(nps[r.Name], r.NP)
		}
	}
	np := func(name string) string {
		v := slices.Clone(nps[name])
		slices.Sort(v)
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.Itoa(n)
		}
		if len(s) == 0 {
			return "np ?"
		}
		return "np " + strings.Join(s, ", ")
	}
	rows := []row{
		{label: "latency 1 B (µs)", name: mLatency, size: 1, goal: 1.1, goalText: "≤ 1.1x Open MPI"},
		{label: "bandwidth 1 MiB (MB/s)", name: mBW, size: 1 << 20, higher: true, goal: 1, goalText: "≥ 1x Open MPI"},
		{label: "bandwidth 4 MiB (MB/s)", name: mBW, size: 4 << 20, higher: true},
		{label: "bandwidth 16 MiB (MB/s)", name: mBW, size: 16 << 20, higher: true, goal: 1, goalText: "≥ 1x Open MPI"},
		{label: "job start, " + np(mStart) + " over the hosts (ms)", name: mStart, goal: 0.25, goalText: "≤ 0.25x mpirun"},
		{label: "crashed host: first survivor knows (ms)", name: mCrashFirst},
		{label: "crashed host: every survivor knows (ms)", name: mCrashLast, absolute: 50, goalText: "≤ 50 ms"},
		{label: "crashed host: the launcher aborted the job (ms)", name: mCrashAbort},
		{label: "silent host: first survivor knows (ms)", name: mSilentFirst},
		{label: fmt.Sprintf("silent host: every survivor knows (ms; heartbeat timeout %v)", hbTimeout), name: mSilentLast, absolute: silentGoal,
			goalText: fmt.Sprintf("≤ %s ms (timeout + 10%%)", fmtv(silentGoal))},
		{label: "silent host: the launcher aborted the job (ms)", name: mSilentAbort},
		{label: "kill → restored communicator, " + np(mReplaceTotal) + ", every rank of a host lost (ms)", name: mReplaceTotal},
	}
	fmt.Fprint(w, "| measure |")
	for _, i := range impls {
		fmt.Fprintf(w, " %s |", implTitle[i])
	}
	var others []string
	for _, i := range impls[min(1, len(impls)):] {
		if impls[0] == "ftmpi" {
			others = append(others, i)
			fmt.Fprintf(w, " ftmpi / %s |", implTitle[i])
		}
	}
	fmt.Fprintln(w, " goal |")
	fmt.Fprint(w, "|---|")
	for range len(impls) + len(others) {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w, "---|")
	var notes []string
	for _, r := range rows {
		any := false
		for _, i := range impls {
			any = any || st[key{r.name, i, r.size}].ok()
		}
		if !any {
			continue
		}
		fmt.Fprintf(w, "| %s |", r.label)
		for _, i := range impls {
			s := st[key{r.name, i, r.size}]
			fmt.Fprintf(w, " %s |", s.cell())
			for _, n := range s.notes {
				notes = append(notes, fmt.Sprintf("%s, %s: %s", implTitle[i], r.label, n))
			}
		}
		ft := st[key{r.name, "ftmpi", r.size}]
		for _, o := range others {
			os := st[key{r.name, o, r.size}]
			if !ft.ok() || !os.ok() || os.median == 0 || os.censored > 0 || ft.censored > 0 {
				fmt.Fprint(w, " |")
				continue
			}
			fmt.Fprintf(w, " %.2f |", ft.median/os.median)
		}
		if v := verdict(r, st); v != "" {
			fmt.Fprintf(w, " %s |\n", v)
		} else {
			fmt.Fprintln(w, " |")
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Values: median over launches (min–max, launches). Ratios ftmpi ÷ other: for times below 1 is better for ftmpi, for bandwidth above 1.")
}

// verdict is the goal column of row r: the goal and met / not met.
func verdict(r row, st map[key]stat) string {
	ft := st[key{r.name, "ftmpi", r.size}]
	switch {
	case r.goalText == "":
		return ""
	case !ft.ok():
		return r.goalText + " — no ftmpi value"
	case r.absolute > 0:
		if ft.censored == 0 && ft.median <= r.absolute {
			return r.goalText + " — met"
		}
		return r.goalText + " — **not met**"
	}
	om := st[key{r.name, "openmpi", r.size}]
	if !om.ok() || om.median == 0 {
		return r.goalText + " — no Open MPI value"
	}
	ratio := ft.median / om.median
	if (r.higher && ratio >= r.goal) || (!r.higher && ratio <= r.goal) {
		return r.goalText + " — met"
	}
	return r.goalText + " — **not met**"
}
