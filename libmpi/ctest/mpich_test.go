package ctest

import (
	"strings"
	"testing"
)

// TestMPICHFixes holds the bugs of the core bindings that MPICH's test
// suite found (docs/conformance.md), one result line each.
func TestMPICHFixes(t *testing.T) {
	bin := Compile(t, "testdata/mpich_fixes.c")
	r := runC(t, "1", nil, bin)
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"result: errstring empty 1 len 0",
		"result: get_status flag 1 empty 1",
		"result: wait empty 1",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.Stdout)
		}
	}
}
