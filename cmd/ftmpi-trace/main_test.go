package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/trace"
)

// The command end to end on two per-process files: merge a directory,
// print the phases, render the page; usage errors exit 2.
func TestMergePhasesHTML(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	l := trace.New(trace.LauncherPid, "ftmpirun", trace.Limits{})
	l.InstantAt(1000, trace.CatFailure, trace.NameKill, map[string]any{"proc": 1})
	r := trace.New(0, "rank 0", trace.Limits{})
	r.InstantAt(1500, trace.CatFailure, trace.NameKnown, map[string]any{"proc": 1})
	r.InstantAt(1600, trace.CatRevoke, trace.NameRevokeTx, nil)
	for i, f := range []*trace.File{l.File(), r.File()} {
		if err := f.WriteFile(filepath.Join(in, []string{"a.json", "b.json"}[i])); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "job.json")
	var so, se bytes.Buffer
	if code := run([]string{"merge", out, in}, &so, &se); code != 0 {
		t.Fatalf("merge: exit %d: %s", code, se.String())
	}
	so.Reset()
	if code := run([]string{"phases", out}, &so, &se); code != 0 {
		t.Fatalf("phases: exit %d: %s", code, se.String())
	}
	for _, want := range []string{"failure of proc 1: kill (injected kill) -> detected by proc 0 after 0.50 ms; 1 survivors", "rank 0", "0.50", "0.60"} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("phases output lacks %q:\n%s", want, so.String())
		}
	}
	page := filepath.Join(dir, "job.html")
	if code := run([]string{"html", out, "-o", page}, &so, &se); code != 0 {
		t.Fatalf("html: exit %d: %s", code, se.String())
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), ">rank 0</text>") {
		t.Fatalf("page: %v", err)
	}
	for _, args := range [][]string{nil, {"merge", out}, {"phases"}, {"html", out}, {"frob"}} {
		se.Reset()
		if code := run(args, &so, &se); code != 2 || !strings.Contains(se.String(), "usage:") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the usage", args, code, se.String())
		}
	}
	se.Reset()
	if code := run([]string{"phases", filepath.Join(dir, "missing.json")}, &so, &se); code != 1 {
		t.Errorf("a missing file: exit %d, want 1", code)
	}
}
