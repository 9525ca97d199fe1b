package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `{"name":"rma-put-lat-lock","impl":"ftmpi","transport":"tcp","np":2,"size":8,"median":30,"unit":"us","runs":5,"round":1,"load1":0.10}
{"name":"rma-put-lat-lock","impl":"ftmpi","transport":"tcp","np":2,"size":8,"median":10,"unit":"us","runs":5,"round":2,"load1":0.30}
{"name":"rma-put-lat-lock","impl":"ftmpi","transport":"tcp","np":2,"size":8,"median":20,"unit":"us","runs":5,"round":3,"load1":0.20}
{"name":"rma-put-lat-lock","impl":"openmpi","transport":"tcp","np":2,"size":8,"median":10,"unit":"us","runs":5,"round":1,"load1":0.10}
{"name":"rma-put-lat-fence","impl":"ftmpi","transport":"tcp","np":2,"size":8,"median":14,"unit":"us","runs":5}
{"name":"rma-put-lat-fence","impl":"openmpi","transport":"tcp","np":2,"size":8,"median":10,"unit":"us","runs":5}
{"name":"rma-put-bw-fence","impl":"ftmpi","transport":"unix","np":2,"size":1048576,"median":500,"unit":"MB/s","runs":5}
{"name":"rma-put-bw-fence","impl":"openmpi","transport":"shm","np":2,"size":1048576,"median":1000,"unit":"MB/s","runs":5}
not json
{"name":"latency","impl":"ftmpi","transport":"tcp","np":2,"size":1,"median":5,"unit":"us","runs":5}
`

func rows(t *testing.T, in string) ([]Row, []Col, []Pair) {
	t.Helper()
	var warn bytes.Buffer
	recs, err := Parse(strings.NewReader(in), &warn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn.String(), "line 9 skipped") {
		t.Errorf("no warning for the malformed line: %q", warn.String())
	}
	pairs, err := ParsePairs("ftmpi/tcp:openmpi/tcp,ftmpi/unix:openmpi/shm")
	if err != nil {
		t.Fatal(err)
	}
	rs, cs, err := Rows(recs, pairs, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	return rs, cs, pairs
}

// Medians over launches, latency ratios checked against the goal,
// bandwidth ratios inverted (a time ratio) and never marked; the rows in
// the fixed case order, other benchmarks' lines ignored.
func TestRowsMediansRatiosGoal(t *testing.T) {
	rs, cs, pairs := rows(t, sample)
	if len(rs) != 3 || rs[0].Name != "rma-put-lat-fence" || rs[1].Name != "rma-put-lat-lock" || rs[2].Name != "rma-put-bw-fence" {
		t.Fatalf("rows %+v", rs)
	}
	if r := rs[1]; r.Medians["ftmpi/tcp"] != 20 || r.Launches["ftmpi/tcp"] != 3 || r.Ratios["ftmpi/tcp ÷ openmpi/tcp"] != 2 || len(r.Over) != 1 {
		t.Fatalf("lock row %+v", r)
	}
	if r := rs[0]; r.Ratios["ftmpi/tcp ÷ openmpi/tcp"] != 1.4 || len(r.Over) != 0 {
		t.Fatalf("fence row %+v", r)
	}
	if r := rs[2]; r.Ratios["ftmpi/unix ÷ openmpi/shm"] != 2 || len(r.Over) != 0 {
		t.Fatalf("bandwidth row %+v", r)
	}
	var out bytes.Buffer
	Render(&out, rs, cs, pairs, 1.5, []float64{0.1, 0.3})
	s := out.String()
	for _, want := range []string{
		"| rma-put-lat-lock | 8 B | us | 20.00 | 10.00 | — | — | 2.00 **over** | — |",
		"| rma-put-bw-fence | 1 MiB | MB/s | — | — | 500.00 | 1000.00 | — | 2.00 |",
		"1 latency ratios exceed the goal of 1.50",
		"min 0.10, median 0.20, max 0.30",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := ParsePairs("ftmpi/tcp"); err == nil || !strings.Contains(err.Error(), "want impl/transport:impl/transport") {
		t.Fatalf("pair without a colon: %v", err)
	}
	if _, err := ParsePairs("ftmpi:openmpi/tcp"); err == nil || !strings.Contains(err.Error(), `column "ftmpi"`) {
		t.Fatalf("column without a transport: %v", err)
	}
	if _, _, err := Rows(nil, nil, 1.5); err == nil || !strings.Contains(err.Error(), "no rma-* result lines") {
		t.Fatalf("no lines: %v", err)
	}
	recs, _ := Parse(strings.NewReader(`{"name":"rma-x","impl":"a","transport":"b","size":1,"median":1,"unit":"us"}
{"name":"rma-x","impl":"a","transport":"b","size":2,"median":1,"unit":"MB/s"}`), &bytes.Buffer{})
	if _, _, err := Rows(recs, nil, 1.5); err == nil || !strings.Contains(err.Error(), "rma-x: unit") {
		t.Fatalf("mixed units: %v", err)
	}
}
