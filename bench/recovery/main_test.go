package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// bins builds ftmpirun and this benchmark once (with -race under -race).
func bins(t *testing.T) (ftmpirun, recovery string) {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "ftmpi-recovery-test-")
		if buildErr != nil {
			return
		}
		buildErr = jobtest.Build(
			[]string{filepath.Join(binDir, "ftmpirun"), filepath.Join(binDir, "recovery")},
			[]string{"../../cmd/ftmpirun", "."})
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "ftmpirun"), filepath.Join(binDir, "recovery")
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// run starts one job under a deadline; jobtest.Run fails the test if a
// process of it is left behind.
func run(t *testing.T, args ...string) jobtest.Result {
	t.Helper()
	ftmpirun, _ := bins(t)
	env := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	return jobtest.Run(t, 60*time.Second, env, ftmpirun, args...)
}

func lines(out, prefix string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			ls = append(ls, l)
		}
	}
	return ls
}

// Each mode at np 4 with one SIGKILL ends with the failure-free result and
// reports one recovery from the checkpoint of iteration 30.
func TestEveryModeRecoversWithTheFailureFreeResult(t *testing.T) {
	_, rec := bins(t)
	dir := t.TempDir()
	ref := run(t, "-n", "4", "--timeout", "50s", rec, "-mode", "relaunch", "-fail-at", "0", "-dir", filepath.Join(dir, "ref"))
	want := lines(ref.Stdout, "result:")
	if ref.Code != 0 || len(want) != 1 || len(lines(ref.Stdout, "{")) != 0 {
		t.Fatalf("failure-free run: exit %d\nstdout:\n%s\nstderr:\n%s", ref.Code, ref.Stdout, ref.Stderr)
	}
	launch := map[string][]string{
		"reinit":   {"--on-failure", "reinit"},
		"ulfm":     {"--on-failure", "continue"},
		"relaunch": {"--restart-on-failure=1"},
	}
	for _, mode := range modes {
		t.Run(mode, func(t *testing.T) {
			args := append([]string{"-n", "4", "--timeout", "50s"}, launch[mode]...)
			args = append(args, rec, "-mode", mode, "-fail-at", "35", "-every", "10", "-dir", filepath.Join(dir, mode))
			r := run(t, args...)
			got := lines(r.Stdout, "result:")
			reps := lines(r.Stdout, "{")
			if r.Code != 0 || len(got) != 1 || got[0] != want[0] || len(reps) != 1 {
				t.Fatalf("exit %d, want %q and one report\nstdout:\n%s\nstderr:\n%s", r.Code, want[0], r.Stdout, r.Stderr)
			}
			var rep report
			if err := json.Unmarshal([]byte(reps[0]), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Mode != mode || rep.NP != 4 || rep.Restored != 30 || rep.Recovery <= 0 ||
				rep.Detect == nil || rep.DetectFirst == nil || *rep.DetectFirst > *rep.Detect || rep.Respawn == nil || rep.Load == nil || rep.Iter == nil {
				t.Fatalf("report %s", reps[0])
			}
			if mode == "ulfm" && rep.Shrink == nil {
				t.Fatalf("ulfm report without shrink_ms: %s", reps[0])
			}
		})
	}
}

// The summary takes medians per (mode, np) and divides by Reinit's.
func TestSummarize(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	var reps []report
	for _, v := range []float64{10, 30, 20} {
		reps = append(reps, report{Name: "recovery", Mode: "reinit", NP: 16, Recovery: v, Detect: f(v / 10)})
	}
	for _, v := range []float64{40, 50} {
		reps = append(reps, report{Name: "recovery", Mode: "ulfm", NP: 16, Recovery: v})
	}
	reps = append(reps, report{Name: "recovery", Mode: "relaunch", NP: 16, Recovery: 120})
	reps = append(reps, report{Name: "recovery", Mode: "reinit", NP: 4, Recovery: 5})
	var b bytes.Buffer
	summarize(reps, &b)
	for _, want := range []string{
		"| 16 | 20.0 (3: 10.0-30.0) | 45.0 (2: 40.0-50.0) | 120.0 (1: 120.0-120.0) | 2.25 | 6.00 |",
		"| reinit | 16 | - | 2.0 | - | - | - | - | - | 20.0 |",
		"| 4 | 5.0 (1: 5.0-5.0) | - (0) | - (0) | - | - |",
		"(c)/(a) = 6.00, goal >= 6: met; (b)/(a) = 2.25, goal >= 3: not met.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
