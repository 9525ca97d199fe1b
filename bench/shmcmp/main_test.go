package main

import (
	"bytes"
	"strings"
	"testing"
)

const sample = `{"name":"latency","impl":"ftmpi","transport":"shm","np":2,"size":1,"median":0.2,"unit":"us","part":"stab","variant":"quiet","round":1,"load1":0.1}
{"name":"latency","impl":"ftmpi","transport":"shm","np":2,"size":1,"median":0.2,"unit":"us","part":"stab","variant":"quiet","round":2,"load1":0.1}
{"name":"latency","impl":"ftmpi","transport":"shm","np":2,"size":1,"median":0.4,"unit":"us","part":"stab","variant":"quiet","round":3,"load1":0.3}
{"name":"latency","impl":"openmpi","transport":"shm","np":2,"size":1,"median":0.1,"unit":"us","part":"stab","variant":"quiet","round":1,"load1":0.1}
{"name":"barrier","impl":"ftmpi","transport":"shm","np":4,"size":0,"median":3,"unit":"us","part":"coll","variant":"-","round":1}
{"name":"barrier","impl":"openmpi","transport":"shm","np":4,"size":0,"median":2,"unit":"us","part":"coll","variant":"-","round":1}
{"name":"bcast","impl":"ftmpi","transport":"shm","np":4,"size":1048576,"median":300,"unit":"us","part":"coll","variant":"-","round":1}
{"name":"bcast","impl":"openmpi","transport":"shm","np":4,"size":1048576,"median":200,"unit":"us","part":"coll","variant":"-","round":1}
{"name":"reduce","impl":"ftmpi","transport":"shm","np":4,"size":8,"median":9,"unit":"us","part":"coll","variant":"-","round":1}
{"name":"latency","impl":"ftmpi","transport":"shm","np":2,"size":1,"median":0.202,"unit":"us","part":"ftcost","variant":"ft-on","round":1}
{"name":"latency","impl":"ftmpi","transport":"shm","np":2,"size":1,"median":0.2,"unit":"us","part":"ftcost","variant":"ft-off","round":1}
{"name":"mem","impl":"ftmpi","transport":"shm","np":16,"pss_kib":2048,"rss_kib":4096,"unit":"KiB","part":"mem","variant":"-","round":1}
{"name":"mem","impl":"openmpi","transport":"shm","np":16,"pss_kib":1024,"rss_kib":8192,"unit":"KiB","part":"mem","variant":"-","round":1}
{"name":"latency","impl":"ftmpi","transport":"shm","np":2,"size":1,"median":9,"unit":"us"}
`

// Every part's table: the medians, the ratios and each goal as met or not;
// untagged lines and operations without a goal are left out.
func TestRenderGoals(t *testing.T) {
	recs, err := Parse(strings.NewReader(sample), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 13 {
		t.Fatalf("%d tagged records, want 13 (the untagged line is skipped)", len(recs))
	}
	var b bytes.Buffer
	if err := Render(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| ftmpi/shm | quiet | 3 | 0.2 | 0.2 | 0.4 | 2.00 | **not met** |", // slowest 2x the median
		"| openmpi/shm | quiet | 1 | 0.1 | 0.1 | 0.1 | 1.00 | (reference) |",
		"| quiet | 0.2 | 0.1 | 2.00 | **not met** |", // ftmpi 2x Open MPI
		"| barrier | 0 B | 4 | 3 | 2 | – | 1.50 | met |",
		"| bcast | 1 MiB | 4 | 300 | 200 | – | 1.50 | **not met** |", // the 1 MiB goal is 1.0
		"| latency | 1 B | 2 | 1+1 | 0.202 | 0.2 | 1.01 | met |",
		"| 16 | 2.0 | 1.0 | 2.00 | 4.0 | 8.0 | 0.50 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing row %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "| reduce |") {
		t.Errorf("reduce has no goal here but got a row:\n%s", out)
	}
}

func TestRenderRejectsNoTaggedLines(t *testing.T) {
	recs, err := Parse(strings.NewReader(`{"name":"latency","impl":"ftmpi","median":1}`+"\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := Render(&bytes.Buffer{}, recs); err == nil || !strings.Contains(err.Error(), "no result lines tagged") {
		t.Fatalf("error %v, want one about untagged lines", err)
	}
}
