package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTableMediansRatiosGoals(t *testing.T) {
	var recs []rec
	add := func(name, impl string, size int64, v ...float64) {
		for _, x := range v {
			np := 2
			if name == mStart {
				np = 16
			}
			recs = append(recs, rec{Name: name, Impl: impl, NP: np, Size: size, Median: x})
		}
	}
	add(mLatency, "ftmpi", 1, 10, 12, 11)
	add(mLatency, "openmpi", 1, 10, 10, 10)
	add(mBW, "ftmpi", 1<<20, 1000, 3000)
	add(mBW, "openmpi", 1<<20, 1000)
	add(mStart, "ftmpi", 0, 100)
	add(mStart, "openmpi", 0, 500)
	add(mCrashLast, "ftmpi", 0, 20, 60, 30)
	add(mSilentLast, "ftmpi", 0, 3400)
	recs = append(recs, rec{Name: mSilentAbort, Impl: "openmpi", Median: 10000, Censored: true, Note: "no survivor's receive returned"})
	var b bytes.Buffer
	writeTable(&b, recs, 3*time.Second)
	out := b.String()
	for _, want := range []string{
		"| measure | ftmpi | Open MPI 4.1 | ftmpi / Open MPI 4.1 | goal |",
		"| latency 1 B (µs) | 11.0 (10.0–12.0, 3) | 10.0 (10.0–10.0, 3) | 1.10 | ≤ 1.1x Open MPI — met |",
		"| bandwidth 1 MiB (MB/s) | 2000 (1000–3000, 2) | 1000 | 2.00 | ≥ 1x Open MPI — met |",
		"| job start, np 16 over the hosts (ms) | 100 | 500 | 0.20 | ≤ 0.25x mpirun — met |",
		"| crashed host: every survivor knows (ms) | 30.0 (20.0–60.0, 3) | — | | ≤ 50 ms — met |",
		"≤ 3300 ms (timeout + 10%) — **not met**",
		"| silent host: the launcher aborted the job (ms) | — | > 10000 (1) | | |",
		"- Open MPI 4.1, silent host: the launcher aborted the job (ms): no survivor's receive returned",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bandwidth 16 MiB") || strings.Contains(out, "MPICH") {
		t.Errorf("rows or columns without values:\n%s", out)
	}
}

func TestParseRecsSkipsOtherLines(t *testing.T) {
	in := "# progress\n{\"name\":\"latency\",\"impl\":\"ftmpi\"}\n{\"name\":\"xhost-start\",\"impl\":\"ftmpi\",\"median\":42}\nnot json {\n{\"name\":\"xhost-bw\",\"impl\":\n"
	got := parseRecs([]byte(in))
	if len(got) != 1 || got[0].Name != mStart || got[0].Median != 42 {
		t.Fatalf("parseRecs = %+v, want the one xhost-start line", got)
	}
}

func TestOrderTurns(t *testing.T) {
	r := &runner{c: config{impls: []string{"ftmpi", "openmpi", "mpich"}}}
	firsts := map[string]bool{}
	for k := 0; k < 3; k++ {
		o := r.order(k)
		if len(o) != 3 {
			t.Fatalf("order(%d) = %v", k, o)
		}
		firsts[o[0]] = true
	}
	if len(firsts) != 3 {
		t.Fatalf("not every launcher goes first in 3 rounds: %v", firsts)
	}
}
