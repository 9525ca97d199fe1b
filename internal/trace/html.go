package trace

import (
	"bytes"
	"fmt"
	"html"
	"sort"
	"strings"
)

// PhaseColors are the colours of the recovery phases in the HTML page.
var PhaseColors = map[string]string{
	"kill": "#d62728", "detected": "#ff7f0e", "told": "#e5ae38", "revoked": "#1f77b4",
	"agreed": "#9467bd", "repaired": "#2ca02c", "resumed": "#17becf",
}

// catColors are the colours of spans and instants by category.
var catColors = map[string]string{
	CatMPI: "#b8b8b8", CatAgree: "#c5b0d5", CatRepair: "#98df8a", CatCheckpoint: "#dbdb8d",
	CatReinit: "#c49c94", CatRevoke: "#1f77b4", CatFailure: "#d62728", CatLauncher: "#7f7f7f",
}

var catLegend = []struct{ cat, text string }{
	{CatMPI, "MPI call (a blocking wait)"}, {CatAgree, "agreement"}, {CatRepair, "shrink, spawn, merge, replace"},
	{CatRevoke, "revocation"}, {CatFailure, "failure (kill, exit, notice)"}, {CatReinit, "Reinit epoch, rollback"},
	{CatCheckpoint, "checkpoint write/read"}, {CatLauncher, "launcher decision"},
}

type lane struct {
	pid   int
	label string
	evs   []JEvent
}

// HTML renders f as a self-contained page (inline SVG and CSS, no script
// and nothing fetched): the recovery phases table, then for every failure
// a picture of its recovery (one lane per process, the launcher on top;
// MPI calls, fault-tolerance spans and events coloured by kind; each
// survivor's phases as coloured ticks), then the whole job, and a legend.
// Hovering an element shows its details (SVG titles).
func HTML(f *File, title string) ([]byte, error) {
	lanes := lanesOf(f)
	if len(lanes) == 0 {
		return nil, fmt.Errorf("trace: no events")
	}
	fails := Phases(f)
	var b bytes.Buffer
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ftmpi recovery timeline: %s</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:16px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 6px} h2{font-size:16px;margin:18px 0 6px}
pre{background:#f6f6f6;padding:8px;font-size:12px;overflow-x:auto}
.legend span{display:inline-block;margin:2px 12px 2px 0;font-size:13px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #888}
svg text{font-size:12px;font-family:system-ui,sans-serif}
svg .lbl{font-size:12px} svg .axis{font-size:10px;fill:#555}
</style></head><body>
<h1>ftmpi recovery timeline</h1>
<p>%s: %d processes, %d failure(s). Times are the wall clock (CLOCK_REALTIME) of each process; processes on other hosts differ by the hosts' clock skew.</p>
`, html.EscapeString(title), html.EscapeString(title), len(lanes), len(fails))
	writeLegend(&b)
	var pt strings.Builder
	FormatPhases(&pt, fails)
	fmt.Fprintf(&b, "<h2>Recovery phases (ms after the kill)</h2>\n<pre id=\"phases\">%s</pre>\n", html.EscapeString(pt.String()))
	for i, fl := range fails {
		from, to := fl.Kill, fl.Kill
		for _, r := range fl.Ranks {
			for _, t := range r.At {
				to = max(to, t)
			}
		}
		span := max(to-from, 1000)
		from -= span / 20
		to += span / 20
		fmt.Fprintf(&b, "<h2>Failure of proc %d: its recovery</h2>\n", fl.Proc)
		writeSVG(&b, fmt.Sprintf("failure-%d", i), lanes, from, to, &fails[i])
	}
	lo, hi := bounds(lanes)
	fmt.Fprintf(&b, "<h2>The whole job</h2>\n")
	writeSVG(&b, "job", lanes, lo, hi, nil)
	b.WriteString("</body></html>\n")
	return b.Bytes(), nil
}

func writeLegend(b *bytes.Buffer) {
	b.WriteString(`<div class="legend" id="legend"><b>Phases:</b> `)
	for _, ph := range PhaseNames {
		fmt.Fprintf(b, `<span data-phase="%s"><i style="background:%s"></i>%s</span>`, ph, PhaseColors[ph], ph)
	}
	b.WriteString("<br><b>Events:</b> ")
	for _, c := range catLegend {
		fmt.Fprintf(b, `<span data-cat="%s"><i style="background:%s"></i>%s</span>`, c.cat, catColors[c.cat], html.EscapeString(c.text))
	}
	b.WriteString("</div>\n")
}

func lanesOf(f *File) []lane {
	by := map[int]*lane{}
	get := func(pid int) *lane {
		l := by[pid]
		if l == nil {
			l = &lane{pid: pid, label: fmt.Sprintf("proc %d", pid)}
			if pid == LauncherPid {
				l.label = "ftmpirun"
			}
			by[pid] = l
		}
		return l
	}
	for _, ev := range f.TraceEvents {
		if ev.Ph == "M" {
			if ev.Name == "process_name" {
				if s, ok := ev.Args["name"].(string); ok {
					get(ev.Pid).label = s
				}
			}
			continue
		}
		l := get(ev.Pid)
		l.evs = append(l.evs, ev)
	}
	var out []lane
	for _, l := range by {
		if len(l.evs) > 0 {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		ki, kj := out[i].pid, out[j].pid
		if ki == LauncherPid {
			ki = -1
		}
		if kj == LauncherPid {
			kj = -1
		}
		return ki < kj
	})
	return out
}

func bounds(lanes []lane) (lo, hi int64) {
	first := true
	for _, l := range lanes {
		for _, ev := range l.evs {
			if first || ev.TS < lo {
				lo = ev.TS
			}
			if first || end(ev) > hi {
				hi = end(ev)
			}
			first = false
		}
	}
	if hi <= lo {
		hi = lo + 1000
	}
	return lo, hi
}

const (
	svgW    = 1200
	labelW  = 250
	laneH   = 30
	topH    = 56
	bottomH = 24
)

func evTitle(ev JEvent) string {
	var parts []string
	for k, v := range ev.Args {
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	sort.Strings(parts)
	d := ""
	if ev.Ph == "X" {
		d = fmt.Sprintf(" %.3f ms", float64(ev.Dur)/1000)
	}
	return html.EscapeString(fmt.Sprintf("%s [%s]%s %s", ev.Name, ev.Cat, d, strings.Join(parts, " ")))
}

// writeSVG draws lanes between from and to (µs); fl, when not nil, adds
// its phases.
func writeSVG(b *bytes.Buffer, id string, lanes []lane, from, to int64, fl *Failure) {
	h := topH + laneH*len(lanes) + bottomH
	plotW := float64(svgW - labelW - 10)
	x := func(t int64) float64 { return float64(labelW) + plotW*float64(t-from)/float64(to-from) }
	fmt.Fprintf(b, `<svg id="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", id, svgW, h, svgW, h)
	fmt.Fprintf(b, `<rect x="0" y="0" width="%d" height="%d" fill="#fff"/>`+"\n", svgW, h)
	// The time axis: ticks in ms from the kill (or from the start).
	origin := from
	axisName := "ms from the start"
	if fl != nil {
		origin, axisName = fl.Kill, "ms after the kill"
	}
	step := niceStep(float64(to-from) / 1000 / 10)
	t0 := float64(from-origin) / 1000
	for v := step * float64(int64(t0/step)); v <= float64(to-origin)/1000; v += step {
		xx := x(origin + int64(v*1000))
		if xx < labelW {
			continue
		}
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`, xx, topH-4, xx, h-bottomH)
		fmt.Fprintf(b, `<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xx, h-8, trimFloat(v))
	}
	fmt.Fprintf(b, `<text class="axis" x="%d" y="%d">%s</text>`+"\n", 4, h-8, axisName)
	for i, l := range lanes {
		y := topH + i*laneH
		fill := "#fafafa"
		if i%2 == 1 {
			fill = "#f2f2f2"
		}
		fmt.Fprintf(b, `<g class="lane" data-pid="%d"><rect x="0" y="%d" width="%d" height="%d" fill="%s"/>`, l.pid, y, svgW, laneH, fill)
		fmt.Fprintf(b, `<text class="lbl" x="6" y="%d">%s</text>`+"\n", y+laneH/2+4, html.EscapeString(l.label))
		lastMPI := -1.0 // the right end of the last MPI span drawn in this lane
		for _, ev := range l.evs {
			if ev.Ph == "X" {
				if end(ev) < from || ev.TS > to {
					continue
				}
				x1, x2 := x(max(ev.TS, from)), x(min(end(ev), to))
				if ev.Cat == CatMPI {
					if x2 < lastMPI+1 {
						continue // within a pixel of the last one: the page stays small
					}
					lastMPI = max(x2, x1+1)
				}
				w := max(x2-x1, 1)
				yy, hh := y+6, laneH-12
				if ev.Cat == CatMPI {
					yy, hh = y+laneH-9, 6
				}
				fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" stroke="#666" stroke-width="0.3"><title>%s</title></rect>`+"\n",
					x1, yy, w, hh, colorOf(ev.Cat), evTitle(ev))
				continue
			}
			if ev.TS < from || ev.TS > to || ev.Cat == CatLauncher && ev.Name != NameRespawn && ev.Name != NameSpawn {
				continue
			}
			xx := x(ev.TS)
			fmt.Fprintf(b, `<path d="M%.1f %d l4 7 l-8 0 z" fill="%s"><title>%s</title></path>`+"\n", xx, y+3, colorOf(ev.Cat), evTitle(ev))
		}
		if fl != nil {
			var at map[string]int64
			if l.pid == LauncherPid {
				at = map[string]int64{"kill": fl.Kill}
			} else if l.pid == fl.DetectedBy {
				at = map[string]int64{"detected": fl.Detected}
			}
			for _, r := range fl.Ranks {
				if r.Pid == l.pid {
					for k, v := range r.At {
						if k != "kill" {
							if at == nil {
								at = map[string]int64{}
							}
							at[k] = v
						}
					}
				}
			}
			for _, ph := range PhaseNames {
				t, ok := at[ph]
				if !ok {
					continue
				}
				xx := x(t)
				fmt.Fprintf(b, `<line class="phase" data-phase="%s" data-pid="%d" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2.5"><title>%s at %s: %.3f ms after the kill</title></line>`+"\n",
					ph, l.pid, xx, y+2, xx, y+laneH-2, PhaseColors[ph], ph, html.EscapeString(l.label), float64(t-fl.Kill)/1000)
			}
		}
		b.WriteString("</g>\n")
	}
	// The phase names over the picture, at each phase's latest survivor.
	if fl != nil {
		st := map[string]int64{"kill": fl.Kill, "detected": fl.Detected}
		for _, r := range fl.Ranks {
			for _, ph := range PhaseNames[2:] {
				if t, ok := r.At[ph]; ok && t > st[ph] {
					st[ph] = t
				}
			}
		}
		lastOn := [4]float64{-1e9, -1e9, -1e9, -1e9} // the last name's position on each of four rows
		for _, ph := range PhaseNames {
			t, ok := st[ph]
			if !ok || t == 0 {
				continue
			}
			xx := x(t)
			row := 0 // the first row with room (names are about 60 px wide), else the emptiest
			for i := range lastOn {
				if xx-lastOn[i] >= 70 {
					row = i
					break
				}
				if lastOn[i] < lastOn[row] {
					row = i
				}
			}
			lastOn[row] = xx
			fmt.Fprintf(b, `<text class="phasename" data-phase="%s" x="%.1f" y="%d" fill="%s" text-anchor="middle" font-weight="bold">%s</text>`+"\n",
				ph, xx, 12+row*12, PhaseColors[ph], ph)
		}
	}
	b.WriteString("</svg>\n")
}

func colorOf(cat string) string {
	if c, ok := catColors[cat]; ok {
		return c
	}
	return "#999"
}

// niceStep rounds s up to 1, 2 or 5 times a power of ten.
func niceStep(s float64) float64 {
	if s <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= s {
		p *= 10
	}
	for p > s {
		p /= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if p*m >= s {
			return p * m
		}
	}
	return p * 10
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}
