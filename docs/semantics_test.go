// Package docs holds the project's documents; its test keeps
// docs/semantics.md honest: every test a row names exists, and the counts at
// the top match the rows.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// row is one row of a table of semantics.md.
type row struct {
	line  int
	seed  string // "000", "002", "003", or "" for the base MPI table
	cells []string
}

func readRows(t *testing.T) (string, []row) {
	t.Helper()
	b, err := os.ReadFile("semantics.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	var rows []row
	seed, inSeeds := "", false
	for i, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "## Seed 003"):
			seed, inSeeds = "003", true
		case strings.HasPrefix(l, "## Seed 002"):
			seed, inSeeds = "002", true
		case strings.HasPrefix(l, "## Seed 000"):
			seed, inSeeds = "000", true
		case strings.HasPrefix(l, "## "):
			seed, inSeeds = "", false
		}
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| section") || strings.HasPrefix(l, "| statement") || strings.HasPrefix(l, "| |") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), " | ")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		if !inSeeds {
			seed = ""
		}
		rows = append(rows, row{line: i + 1, seed: seed, cells: cells})
	}
	return text, rows
}

// Every test named in a table's test column is a test function of the
// module.
func TestSemanticsNamesOnlyExistingTests(t *testing.T) {
	_, rows := readRows(t)
	have := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			have[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile("`[^`]*`")
	test := regexp.MustCompile(`\bTest[A-Z]\w*`)
	n := 0
	for _, r := range rows {
		col := r.cells[len(r.cells)-1]
		for _, code := range name.FindAllString(col, -1) {
			for _, tn := range test.FindAllString(code, -1) {
				n++
				if !have[tn] {
					t.Errorf("semantics.md:%d names %s, which is no test function of the module", r.line, tn)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d test names found in semantics.md: is the table format still the one this test reads?", n)
	}
}

// The markers of the ftmpi column (semantics.md's list), lower case.
var markers = []string{"deviation", "contradicted (bug)", "not implemented", "no obligation"}

var (
	boldRE  = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	proseRE = regexp.MustCompile(`(?i)deviat|adapt(ation|ed)|contradict|differs? from the seed|unlike the seed`)
)

// classify returns the marker of a seed row's ftmpi cell ("" for a row
// implemented as stated). A marker is bold, in any case, and must open the
// cell, so a reader sees it first; a cell holds at most one; a cell without
// one must not describe a deviation in prose ("Deviation", "adaptation",
// "contradicts" ...), which would count a deviation as implemented.
func classify(cell string) (string, error) {
	var found []string
	for _, m := range boldRE.FindAllStringSubmatchIndex(cell, -1) {
		word := strings.ToLower(cell[m[2]:m[3]])
		for _, k := range markers {
			if word == k {
				if m[0] != 0 {
					return k, fmt.Errorf("the marker **%s** must open the ftmpi cell", cell[m[2]:m[3]])
				}
				found = append(found, k)
			}
		}
	}
	switch {
	case len(found) > 1:
		return found[0], fmt.Errorf("more than one marker in the ftmpi cell: %v", found)
	case len(found) == 1:
		return found[0], nil
	}
	if w := proseRE.FindString(cell); w != "" {
		return "", fmt.Errorf("the ftmpi cell says %q but carries no marker: mark it **deviation** (or reword it)", w)
	}
	return "", nil
}

// The classification of a row cannot count a deviation as implemented.
func TestSemanticsClassifyMarkers(t *testing.T) {
	for _, tc := range []struct {
		cell, kind string
		bad        bool
	}{
		{"as stated", "", false},
		{"**deviation** (argued below): allowed", "deviation", false},
		{"**Deviation**: ftmpirun follows mpirun", "deviation", false},
		{"**DEVIATION** in both halves", "deviation", false},
		{"**no obligation**: ftmpi has no sessions", "no obligation", false},
		{"**not implemented** (no profiling interface)", "not implemented", false},
		{"**contradicted (bug)**: open item", "contradicted (bug)", false},
		{"**deviation** (second half): a lock is **released**", "deviation", false},
		{"Implemented in continue mode. **Deviation** without failures", "deviation", true},
		{"the interface as written. Adaptation: re-creating a library is its repair", "", true},
		{"resumes at once (see deviations)", "", true},
		{"this deviates from the seed's letter", "", true},
		{"**deviation** and **no obligation**", "no obligation", true},
	} {
		kind, err := classify(tc.cell)
		if kind != tc.kind || (err != nil) != tc.bad {
			t.Errorf("classify(%q) = %q, %v; want %q, error %v", tc.cell, kind, err, tc.kind, tc.bad)
		}
	}
}

// The counts at the top of semantics.md are those of the seed rows (rows
// whose section names an issue are project decisions and not counted).
func TestSemanticsCountsMatchRows(t *testing.T) {
	text, rows := readRows(t)
	type counts struct{ impl, dev, bug, notImpl, noObl, rows int }
	per := map[string]*counts{"003": {}, "002": {}, "000": {}}
	for _, r := range rows {
		if r.seed == "" || len(r.cells) != 4 || strings.Contains(r.cells[0], "issue") {
			continue
		}
		c := per[r.seed]
		c.rows++
		kind, err := classify(r.cells[2])
		if err != nil {
			t.Errorf("semantics.md:%d: %v", r.line, err)
		}
		switch kind {
		case "contradicted (bug)":
			c.bug++
		case "deviation":
			c.dev++
			if r.cells[3] == "" {
				t.Errorf("semantics.md:%d: a deviation without a test", r.line)
			}
		case "not implemented":
			c.notImpl++
		case "no obligation":
			c.noObl++
		default:
			c.impl++
			if tc := r.cells[3]; tc == "" || strings.HasPrefix(tc, "untested") {
				t.Errorf("semantics.md:%d: an implemented statement without a test", r.line)
			}
		}
	}
	row := func(label string, f func(*counts) int) string {
		a, b, c := f(per["003"]), f(per["002"]), f(per["000"])
		return fmt.Sprintf("| %s | %d | %d | %d | %d |", label, a, b, c, a+b+c)
	}
	want := []string{
		fmt.Sprintf("**Count: %d statements** (seed 003: %d, seed 002: %d, seed 000: %d)",
			per["003"].rows+per["002"].rows+per["000"].rows, per["003"].rows, per["002"].rows, per["000"].rows),
		row("implemented as stated, with a test", func(c *counts) int { return c.impl }),
		row("deviations (argued), with a test", func(c *counts) int { return c.dev }),
		row("contradicted (bug)", func(c *counts) int { return c.bug }),
		row("not implemented", func(c *counts) int { return c.notImpl }),
		row("no obligation", func(c *counts) int { return c.noObl }),
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("semantics.md does not say %q (the rows count so)", w)
		}
	}
}
