package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `{"name":"dtype-vector","impl":"ftmpi","transport":"tcp","np":2,"size":1024,"median":30,"unit":"us","runs":5,"round":1,"load1":0.10}
{"name":"dtype-vector","impl":"ftmpi","transport":"tcp","np":2,"size":1024,"median":10,"unit":"us","runs":5,"round":2,"load1":0.30}
{"name":"dtype-vector","impl":"ftmpi","transport":"tcp","np":2,"size":1024,"median":20,"unit":"us","runs":5,"round":3,"load1":0.20}
{"name":"dtype-vector","impl":"openmpi","transport":"tcp","np":2,"size":1024,"median":10,"unit":"us","runs":5,"round":1,"load1":0.10}
{"name":"dtype-contig","impl":"ftmpi","transport":"unix","np":2,"size":1048576,"median":110,"unit":"us","runs":5}
{"name":"dtype-contig","impl":"openmpi","transport":"shm","np":2,"size":1048576,"median":100,"unit":"us","runs":5}
not json
{"name":"latency","impl":"ftmpi","transport":"tcp","np":2,"size":1,"median":5,"unit":"us","runs":5}
`

func render(t *testing.T, in string) string {
	t.Helper()
	var warn bytes.Buffer
	recs, err := Parse(strings.NewReader(in), &warn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn.String(), "line 7 skipped") {
		t.Errorf("warning for the malformed line missing: %q", warn.String())
	}
	pairs, err := ParsePairs("ftmpi/tcp:openmpi/tcp,ftmpi/unix:openmpi/shm")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(&out, recs, pairs, 1.2); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestRenderMediansRatiosAndGoal(t *testing.T) {
	out := render(t, sample)
	want := []string{
		"| case | size | ftmpi/tcp (us) | openmpi/tcp (us) | ftmpi/unix (us) | openmpi/shm (us) | ftmpi/tcp ÷ openmpi/tcp | ftmpi/unix ÷ openmpi/shm |",
		// contig before vector; ftmpi/tcp's median of 30, 10, 20 is 20: ratio 2.00, over the goal.
		"| dtype-contig | 1 MiB | — | — | 110.00 | 100.00 | — | 1.10 |",
		"| dtype-vector | 1 KiB | 20.00 | 10.00 | — | — | 2.00 **over** | — |",
		"Medians over up to 3 launches per column",
		"min 0.10, median 0.15, max 0.30",
		"1 ratios exceed the goal of 1.20",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "latency") {
		t.Errorf("non-dtype line in the table:\n%s", out)
	}
}

func TestRenderRejectsEmptyAndMixedUnits(t *testing.T) {
	var out bytes.Buffer
	if err := Render(&out, nil, nil, 1.2); err == nil || !strings.Contains(err.Error(), "no dtype-* result lines") {
		t.Errorf("empty input: err %v", err)
	}
	recs := []Record{{Name: "dtype-contig", Impl: "a", Transport: "t", Size: 1, Unit: "us"},
		{Name: "dtype-contig", Impl: "b", Transport: "t", Size: 1, Unit: "ms"}}
	if err := Render(&out, recs, nil, 1.2); err == nil || !strings.Contains(err.Error(), `unit "ms"`) {
		t.Errorf("mixed units: err %v", err)
	}
}

func TestParsePairsErrors(t *testing.T) {
	for _, s := range []string{"ftmpi/tcp", "ftmpi:openmpi/tcp", "ftmpi/tcp:/shm"} {
		if _, err := ParsePairs(s); err == nil {
			t.Errorf("ParsePairs(%q) accepted", s)
		}
	}
}
