package main

import (
	"strings"
	"testing"
)

func TestTableMediansAndRatio(t *testing.T) {
	in := `# old = a, new = b
# round 1 p2p old load 0.50
old {"name":"latency","np":2,"size":1,"median":4,"unit":"us"}
# round 1 p2p new load 1.50
new {"name":"latency","np":2,"size":1,"median":5,"unit":"us"}
old {"name":"latency","np":2,"size":1,"median":6,"unit":"us"}
new {"name":"latency","np":2,"size":1,"median":3,"unit":"us"}
old {"name":"latency","np":2,"size":1,"median":2,"unit":"us"}
new {"name":"latency","np":2,"size":1,"median":4,"unit":"us"}
# old FAILED: -n 2 x
`
	tab, err := parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	tab.write(&b)
	out := b.String()
	if !strings.Contains(out, "| latency | 2 | 1 | us | 4 | 4 | 1.00 | 3+3 |") {
		t.Fatalf("table:\n%s", out)
	}
	if !strings.Contains(out, "0.50 .. 1.50 (2 samples)") {
		t.Fatalf("load line missing:\n%s", out)
	}
}

func TestBadLineIsAnError(t *testing.T) {
	if _, err := parse(strings.NewReader("new {not json\n")); err == nil || !strings.Contains(err.Error(), "bad result line") {
		t.Fatalf("err = %v", err)
	}
}
