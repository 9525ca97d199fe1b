package results

import (
	"bytes"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	v := []float64{3, 1, 2, 10}
	if got := Median(v); got != 2.5 {
		t.Fatalf("Median = %v, want 2.5", got)
	}
	if v[0] != 3 {
		t.Fatal("Median changed its input")
	}
	if got := Median([]float64{5, 1, 3}); got != 3 {
		t.Fatalf("Median = %v, want 3", got)
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{8: "8 B", 1024: "1 KiB", 3000: "3000 B", 1 << 20: "1 MiB", 1536 << 10: "1536 KiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestParsePairs(t *testing.T) {
	ps, err := ParsePairs("ftmpi/tcp:openmpi/tcp, ftmpi/unix:openmpi/shm")
	if err != nil || len(ps) != 2 || ps[1].String() != "ftmpi/unix ÷ openmpi/shm" {
		t.Fatalf("ParsePairs = %v, %v", ps, err)
	}
	for _, bad := range []string{"ftmpi/tcp", "ftmpi:openmpi/tcp", "/tcp:a/b"} {
		if _, err := ParsePairs(bad); err == nil {
			t.Errorf("ParsePairs(%q): no error", bad)
		}
	}
}

func TestSortCols(t *testing.T) {
	cs := Cols("z/a", "openmpi/shm", "b/c", "ftmpi/tcp")
	SortCols(cs, Cols("ftmpi/tcp", "openmpi/shm"))
	var got []string
	for _, c := range cs {
		got = append(got, c.String())
	}
	if want := "ftmpi/tcp openmpi/shm b/c z/a"; strings.Join(got, " ") != want {
		t.Fatalf("SortCols = %v, want %s", got, want)
	}
}

func TestReadLines(t *testing.T) {
	type rec struct{ Name string }
	in := "{\"name\":\"a-1\"}\n\n{bad\n{\"name\":\"b-1\"}\n{\"name\":\"a-2\"}\n"
	var warn bytes.Buffer
	got, err := ReadLines(strings.NewReader(in), &warn, "tool", func(r rec) bool { return strings.HasPrefix(r.Name, "a-") })
	if err != nil || len(got) != 2 || got[1].Name != "a-2" {
		t.Fatalf("ReadLines = %v, %v", got, err)
	}
	if !strings.HasPrefix(warn.String(), "tool: line 3 skipped: ") {
		t.Fatalf("warning %q", warn.String())
	}
}
