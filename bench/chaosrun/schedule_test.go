package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/inject"
)

func TestParseWindow(t *testing.T) {
	if w, err := parseWindow("0.1:0.9"); err != nil || w != (window{0.1, 0.9}) {
		t.Fatalf("parseWindow = %v, %v", w, err)
	}
	for _, bad := range []string{"", "0.5", "0.9:0.1", "0.5:0.5", "-0.1:0.5", "0:1.5", "a:b", "NaN:1"} {
		if _, err := parseWindow(bad); err == nil || !strings.Contains(err.Error(), "bad -window") {
			t.Errorf("parseWindow(%q) = %v", bad, err)
		}
	}
}

// The faults of a run fall inside the window scaled to its length (a
// 0.95 s jacobi gets them before 0.95 s), hit distinct ranks other than
// 0, parse as --inject specs, and replay by seed.
func TestScaledFaults(t *testing.T) {
	length := 950 * time.Millisecond
	w := window{0.1, 0.9}
	for seed := uint64(1); seed <= 200; seed++ {
		fs := scaledFaults(seed, 8, 3, length, w, 0.5)
		if len(fs) != 3 {
			t.Fatalf("seed %d: %d faults, want 3", seed, len(fs))
		}
		specs, err := inject.Parse(strings.Join(fs, ";"))
		if err != nil {
			t.Fatalf("seed %d: %q: %v", seed, fs, err)
		}
		ranks := map[int]bool{}
		var last time.Duration
		for _, sp := range specs {
			if sp.At < 95*time.Millisecond || sp.At > 855*time.Millisecond || sp.At < last {
				t.Fatalf("seed %d: %q: a fault outside [95ms, 855ms] or out of order", seed, fs)
			}
			last = sp.At
			if sp.Rank < 1 || sp.Rank > 7 || ranks[sp.Rank] {
				t.Fatalf("seed %d: %q: rank 0, out of range or repeated", seed, fs)
			}
			ranks[sp.Rank] = true
		}
		if again := scaledFaults(seed, 8, 3, length, w, 0.5); !reflect.DeepEqual(again, fs) {
			t.Fatalf("seed %d: %q then %q: not replayable", seed, fs, again)
		}
	}
	if fs := scaledFaults(1, 2, 3, time.Second, w, 0); len(fs) != 1 || !strings.HasPrefix(fs[0], "kill:rank=1,") {
		t.Errorf("np 2, k 3, no stops: %q, want one kill of rank 1", fs)
	}
	if fs := scaledFaults(1, 4, 3, time.Second, w, 1); strings.Count(strings.Join(fs, ";"), "stop:") != 3 {
		t.Errorf("stop=1: %q, want stops only", fs)
	}
	if a, b := scaledFaults(1, 8, 3, time.Second, w, 0.5), scaledFaults(2, 8, 3, time.Second, w, 0.5); reflect.DeepEqual(a, b) {
		t.Errorf("seeds 1 and 2 give the same schedule %q", a)
	}
}

// A run that does not end keeps every rank's goroutine stacks, a stopped
// rank's included, and the /proc snapshot, in its evidence directory.
func TestHangKeepsEvidence(t *testing.T) {
	if testing.Short() {
		t.Skip("builds ftmpirun")
	}
	bin := t.TempDir()
	for _, b := range [][2]string{{"ftmpirun", "../../cmd/ftmpirun"}, {"hangprog", "./testdata/hangprog"}} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, b[0]), b[1]).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b[1], err, out)
		}
	}
	keep := t.TempDir()
	r := &runner{bin: bin, timeout: 10 * time.Second, keep: keep, tmp: t.TempDir(),
		want: map[string]string{"hangprog/2": "result: never"}}
	run := r.run(example{name: "hangprog"}, 2, 7, "", nil, 0)
	if run.Outcome != "hang" || run.Evidence == "" {
		t.Fatalf("run %+v, want a hang with evidence", run)
	}
	if run.Stacks != 2 {
		t.Errorf("%d ranks printed stacks, want 2 (the stopped one too)", run.Stacks)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(run.Evidence, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	procs := read("procs.txt")
	if !strings.Contains(procs, "== rank 1 pid ") || !strings.Contains(procs, " state T ") || !strings.Contains(procs, "== ftmpirun pid ") {
		t.Errorf("procs.txt lacks ftmpirun, rank 1 or its stopped state:\n%s", procs)
	}
	for _, rank := range []string{"0", "1"} {
		body := read("rank-" + rank + ".txt")
		if !hasStacks(body) || !strings.Contains(body, "main.main()") {
			t.Errorf("rank-%s.txt has no goroutine stacks of main:\n%s", rank, body)
		}
	}
	if _, err := os.Stat(filepath.Join(keep, "hangprog-np2-seed7.err")); err != nil {
		t.Errorf("the run's stderr file: %v", err)
	}
	if len(run.Orphans) > 0 {
		t.Errorf("orphans: %v", run.Orphans)
	}
}

// The length faults are scaled to is the shortest failure-free run seen: a
// calibration under load is corrected by a later run without faults.
func TestShorterKeepsTheShortest(t *testing.T) {
	r := &runner{length: map[string]time.Duration{"jacobi/4": 2900 * time.Millisecond}}
	e := example{name: "jacobi"}
	r.shorter(e, 4, 1019*time.Millisecond)
	r.shorter(e, 4, 1201*time.Millisecond)
	r.shorter(e, 4, 0)
	r.shorter(e, 8, time.Millisecond) // not calibrated: ignored
	if got := r.length["jacobi/4"]; got != 1019*time.Millisecond {
		t.Errorf("length %v, want the shortest, 1.019s", got)
	}
	if _, ok := r.length["jacobi/8"]; ok {
		t.Error("an uncalibrated np got a length")
	}
}
