package main

import (
	"bytes"
	"strings"
	"testing"
)

// The table: medians over launches per case, np and size; the ratio
// ftmpi ÷ Open MPI with the goal marks; other lines and bad lines skipped.
func TestRenderIOTable(t *testing.T) {
	in := `{"name":"io-write","impl":"ftmpi","transport":"unix","np":4,"size":1048576,"median":200,"unit":"MB/s"}
{"name":"io-write","impl":"ftmpi","transport":"unix","np":4,"size":1048576,"median":300,"unit":"MB/s"}
{"name":"io-write","impl":"ftmpi","transport":"unix","np":4,"size":1048576,"median":100,"unit":"MB/s"}
{"name":"io-write","impl":"openmpi","transport":"shm","np":4,"size":1048576,"median":250,"unit":"MB/s"}
{"name":"io-read","impl":"ftmpi","transport":"unix","np":8,"size":65536,"median":90,"unit":"MB/s"}
{"name":"io-read","impl":"openmpi","transport":"shm","np":8,"size":65536,"median":100,"unit":"MB/s"}
{"name":"latency","impl":"ftmpi","transport":"unix","np":2,"size":1,"median":5,"unit":"us"}
not json
`
	var warn bytes.Buffer
	recs, err := Parse(strings.NewReader(in), &warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 || !strings.Contains(warn.String(), "line 8 skipped") {
		t.Fatalf("%d records, warnings %q", len(recs), warn.String())
	}
	var out bytes.Buffer
	if err := Render(&out, recs, "ftmpi/unix", "openmpi/shm", 1.0); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"| io-write | 4 | 1 MiB | 200.0 (3) | 250.0 (1) | 0.80 (**below goal**) |",
		"| io-read | 8 | 64 KiB | 90.0 (1) | 100.0 (1) | 0.90 (**below goal**) |",
	} {
		if !strings.Contains(s, want) {
			t.Fatalf("table lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "io-write") > strings.Index(s, "io-read") {
		t.Fatalf("rows out of order:\n%s", s)
	}
	if err := Render(&out, nil, "a/b", "c/d", 1); err == nil {
		t.Fatal("Render of nothing succeeded")
	}
}
