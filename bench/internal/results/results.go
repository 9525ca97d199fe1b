// Package results holds what the benchmark table tools in bench/ (rmacmp,
// iocmp, dtypecmp, ratios) share: the result-line record, reading
// JSON-lines result files (stdin or named files), medians, impl/transport
// columns and ratio pairs, row and column ordering, and size labels.
//
// It only reads and formats what the bench scripts wrote. It must not
// measure, launch or write anything, and it must not decide a tool's output
// format (table layout, captions, goal checks stay in each tool), so that
// changing it never changes a tool's output.
package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Record is one result line of the bench programs (ftmpi-bench and
// bench/c), as the compare scripts tag it: NP only where the case has a
// process count, Load1 only in lines a script tagged.
type Record struct {
	Name      string   `json:"name"`
	Impl      string   `json:"impl"`
	Transport string   `json:"transport"`
	NP        int      `json:"np"`
	Size      int64    `json:"size"`
	Median    float64  `json:"median"`
	Unit      string   `json:"unit"`
	Load1     *float64 `json:"load1"`
}

// ReadLines decodes r's JSON lines into T and keeps those keep accepts (all
// if keep is nil). Blank lines are ignored; malformed lines are reported to
// warn (if not nil) as "tool: line N skipped: ..." and skipped.
func ReadLines[T any](r io.Reader, warn io.Writer, tool string, keep func(T) bool) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec T
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			if warn != nil {
				fmt.Fprintf(warn, "%s: line %d skipped: %v\n", tool, n, err)
			}
			continue
		}
		if keep == nil || keep(rec) {
			out = append(out, rec)
		}
	}
	return out, sc.Err()
}

// EachInput calls read on stdin (named "stdin") if files is empty, else on
// each named file in turn, and stops at the first error: a failed open's
// error as is, read's error as read returned it.
func EachInput(files []string, read func(r io.Reader, name string) error) error {
	if len(files) == 0 {
		return read(os.Stdin, "stdin")
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = read(f, name)
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadAll reads the records of files (stdin if none) with parse, which
// reports malformed lines to os.Stderr; a read error is returned with the
// input's name in front.
func ReadAll[T any](files []string, parse func(io.Reader, io.Writer) ([]T, error)) ([]T, error) {
	var recs []T
	err := EachInput(files, func(r io.Reader, name string) error {
		rs, err := parse(r, os.Stderr)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		recs = append(recs, rs...)
		return nil
	})
	return recs, err
}

// Median is the median of v (v is not changed; NaN-free input expected).
// It panics on an empty v.
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// OrderIndex is v's index in list, or len(list) if v is not there: a sort
// key that puts listed values first, in list order.
func OrderIndex[T comparable](list []T, v T) int {
	if i := slices.Index(list, v); i >= 0 {
		return i
	}
	return len(list)
}

// FormatSize labels a byte count: "N MiB", "N KiB" when exact, else "N B".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// Col is an implementation over a transport, written "impl/transport".
type Col struct{ Impl, Transport string }

func (c Col) String() string { return c.Impl + "/" + c.Transport }

// ParseCol reads "impl/transport".
func ParseCol(s string) (Col, error) {
	i, t, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || i == "" || t == "" {
		return Col{}, fmt.Errorf("column %q: want impl/transport", s)
	}
	return Col{i, t}, nil
}

// SortCols sorts cs: those in order first, in that order, then the others
// alphabetically.
func SortCols(cs []Col, order []Col) {
	slices.SortFunc(cs, func(a, b Col) int {
		if d := OrderIndex(order, a) - OrderIndex(order, b); d != 0 {
			return d
		}
		return strings.Compare(a.String(), b.String())
	})
}

// Pair is one ratio column: Num against Den.
type Pair struct{ Num, Den Col }

func (p Pair) String() string { return p.Num.String() + " ÷ " + p.Den.String() }

// ParsePairs reads "a/t:b/u,c/v:d/w".
func ParsePairs(s string) ([]Pair, error) {
	var out []Pair
	for _, p := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(p), ":")
		if !ok {
			return nil, fmt.Errorf("pair %q: want impl/transport:impl/transport", p)
		}
		num, err := ParseCol(a)
		if err != nil {
			return nil, err
		}
		den, err := ParseCol(b)
		if err != nil {
			return nil, err
		}
		out = append(out, Pair{num, den})
	}
	return out, nil
}

// Cols parses fixed "impl/transport" names (an order list); it panics on a
// malformed one.
func Cols(names ...string) []Col {
	out := make([]Col, len(names))
	for i, n := range names {
		c, err := ParseCol(n)
		if err != nil {
			panic(err)
		}
		out[i] = c
	}
	return out
}
