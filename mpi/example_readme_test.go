package mpi_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeProgramIsExampleComm_Shrink keeps the README's fault-tolerant
// program honest: every line of its first Go block (comments aside) is a
// line of ExampleComm_Shrink, which go test runs with a rank killed.
func TestReadmeProgramIsExampleComm_Shrink(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_start_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README.md has no Go block")
	}
	block, _, _ = strings.Cut(block, "```")
	_, example, ok := strings.Cut(string(src), "func ExampleComm_Shrink() {")
	if !ok {
		t.Fatal("no ExampleComm_Shrink in example_start_test.go")
	}
	example, _, _ = strings.Cut(example, "\n}\n")
	code := func(line string) string {
		line, _, _ = strings.Cut(line, "//")
		return strings.TrimSpace(line)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(example, "\n") {
		have[code(l)] = true
	}
	n := 0
	for _, l := range strings.Split(block, "\n") {
		if c := code(l); c != "" {
			n++
			if !have[c] {
				t.Errorf("README.md's program has %q, which ExampleComm_Shrink has not", c)
			}
		}
	}
	if n < 10 {
		t.Errorf("README.md's first Go block has %d lines of code: is it still the repair recipe?", n)
	}
}
