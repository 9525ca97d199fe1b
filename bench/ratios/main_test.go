package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func render(t *testing.T) (string, *bytes.Buffer) {
	t.Helper()
	f, err := os.Open("testdata/sample.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var warn bytes.Buffer
	recs, err := Parse(f, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 16 {
		t.Fatalf("parsed %d records, want 16", len(recs))
	}
	var out bytes.Buffer
	Render(&out, recs)
	return out.String(), &warn
}

// row returns the table row of section name whose first cells are prefix.
func row(t *testing.T, out, name, prefix string) string {
	t.Helper()
	sec := strings.Index(out, "### "+name+" ")
	if sec < 0 {
		t.Fatalf("no table %q in:\n%s", name, out)
	}
	rest := out[sec:]
	if end := strings.Index(rest[4:], "### "); end >= 0 {
		rest = rest[:end+4]
	}
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "| "+prefix+" |") {
			return l
		}
	}
	t.Fatalf("no row %q in table %q:\n%s", prefix, name, rest)
	return ""
}

func TestSkipsNoise(t *testing.T) {
	_, warn := render(t)
	if !strings.Contains(warn.String(), "line 7") {
		t.Errorf("expected a warning about line 7, got %q", warn.String())
	}
}

func TestLatencyRatios(t *testing.T) {
	out, _ := render(t)
	hdr := row(t, out, "latency", "size")
	want := "| size | np | ftmpi/tcp | ftmpi/unix | openmpi/shm | openmpi/tcp | mpich/shm | mpich/tcp | " +
		"ftmpi/openmpi (best) | ftmpi/openmpi (tcp) | ftmpi/mpich (best) | ftmpi/mpich (tcp) |"
	if hdr != want {
		t.Errorf("header\n got %s\nwant %s", hdr, want)
	}
	// best: 4 / 0.4 = 10; tcp: 5 / 10 = 0.5; mpich best 4 / 0.5 = 8; tcp 5 / 8.
	got := row(t, out, "latency", "1 B | 2")
	want = "| 1 B | 2 | 5.00 | 4.00 | 0.400 | 10.0 | 0.500 | 8.00 | 10.00 | 0.50 | 8.00 | 0.62 |"
	if got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(out, "### latency (us; ratios: ftmpi ÷ other: lower is better for ftmpi)") {
		t.Errorf("missing latency direction note:\n%s", out)
	}
}

func TestBandwidthDirection(t *testing.T) {
	out, _ := render(t)
	if !strings.Contains(out, "### bw (MB/s; ratios: ftmpi / other: higher is better for ftmpi)") {
		t.Errorf("missing bandwidth direction note:\n%s", out)
	}
	// best ftmpi 6000 (tcp beats unix) / best openmpi 9000 = 0.67; tcp 6000/4000.
	// No MPICH bw results: no MPICH ratio columns.
	got := row(t, out, "bw", "1 MiB | 2")
	want := "| 1 MiB | 2 | 6000 | 3000 | 9000 | 4000 | 0.67 | 1.50 |"
	if got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
}

func TestDuplicatesAndMissing(t *testing.T) {
	out, _ := render(t)
	// Duplicate ftmpi lines (30, 50) collapse to their median 40.
	got := row(t, out, "allreduce", "8 B | 4")
	want := "| 8 B | 4 | 40.0 | 20.0 | 4000 | 2.00 | 0.01 |"
	if got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
	// np 2 has only Open MPI: dashes for the rest.
	got = row(t, out, "allreduce", "8 B | 2")
	want = "| 8 B | 2 | — | 0.500 | — | — | — |"
	if got != want {
		t.Errorf("row\n got %s\nwant %s", got, want)
	}
	// A table with no ftmpi data at all still renders.
	got = row(t, out, "start", "0 B | 16")
	if got != "| 0 B | 16 | 1269 | — |" {
		t.Errorf("start row: %s", got)
	}
}

func TestTableOrder(t *testing.T) {
	out, _ := render(t)
	order := []string{"### latency", "### bw", "### start", "### allreduce"}
	last := -1
	for _, h := range order {
		i := strings.Index(out, h)
		if i <= last {
			t.Fatalf("table %q out of order:\n%s", h, out)
		}
		last = i
	}
}

func TestFormat(t *testing.T) {
	cases := map[int64]string{1: "1 B", 1024: "1 KiB", 65536: "64 KiB", 1 << 20: "1 MiB", 16 << 20: "16 MiB", 1500: "1500 B"}
	for n, want := range cases {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	if !higherIsBetter("MB/s") || higherIsBetter("us") || higherIsBetter("ms") {
		t.Error("higherIsBetter direction wrong")
	}
}
