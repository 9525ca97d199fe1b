package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/trace"
)

// Issue 23 item 4: the README's demo (examples/jacobi -ft, rank 2
// SIGKILLed, replaced by a spawned process) run with --trace gives one
// Chrome trace-event file with every process and, for the kill, every
// recovery phase at every survivor in order; ftmpi-trace prints them and
// renders a page with every rank's lane and every phase.
func TestTraceOfTheDemoHasEveryRankAndPhase(t *testing.T) {
	b := collExamples(t)
	tool := buildOnce(t, "ftmpi-trace")
	dir := t.TempDir()
	file := filepath.Join(dir, "demo.json")
	// The kill is tied to rank 0's checkpoint line (-progress), not to a
	// time: the README's demo kills at 500 ms, after the fifth checkpoint
	// on this machine.
	r := reinitRun(t, "-n", "4", "--on-failure", "continue", "--timeout", "60s", "--trace", file,
		"--inject", "kill:rank=2,on=iteration 5000 committed", b["jacobi"], "-ft", "-progress")
	if r.Code != 0 || !strings.Contains(r.Stdout, "jacobi: recovered: ranks [2] replaced") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if got, want := resultLine(t, r), "result: jacobi n=128 iters=35800 residual=9.982813e-09 checksum=6.019268740680901e+03"; got != want {
		t.Fatalf("result %q, want the README's %q", got, want)
	}
	if !strings.Contains(r.Stderr, "trace of 4 processes and the launcher written to "+file) {
		t.Fatalf("no line about the trace (3 survivors and the replacement)\nstderr:\n%s", r.Stderr)
	}
	f, err := trace.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Valid trace events: the phases Perfetto knows, a pid, a time.
	names := map[int]string{}
	for _, ev := range f.TraceEvents {
		switch ev.Ph {
		case "M":
			if ev.Name == "process_name" {
				names[ev.Pid], _ = ev.Args["name"].(string)
			}
		case "X", "i":
			if ev.TS <= 0 || ev.Dur < 0 || ev.Name == "" {
				t.Fatalf("malformed event %+v", ev)
			}
		default:
			t.Fatalf("event of phase %q: %+v", ev.Ph, ev)
		}
	}
	for pid, want := range map[int]string{0: "rank 0", 1: "rank 1", 2: "rank 2", 3: "rank 3", trace.LauncherPid: "ftmpirun"} {
		if names[pid] != want {
			t.Errorf("process %d is named %q, want %q (names %v)", pid, names[pid], want, names)
		}
	}
	if !strings.HasPrefix(names[4], "proc 4 (spawned") {
		t.Errorf("the replacement is named %q (names %v)", names[4], names)
	}
	fails := trace.Phases(f)
	if len(fails) != 1 || fails[0].Proc != 2 || fails[0].KillSource != "injected kill" {
		t.Fatalf("failures %+v, want one: proc 2's injected kill", fails)
	}
	fl := fails[0]
	if len(fl.Ranks) != 3 {
		t.Fatalf("survivors %+v, want ranks 0, 1, 3", fl.Ranks)
	}
	if fl.Detected < fl.Kill {
		t.Errorf("detected at %d, before the kill at %d", fl.Detected, fl.Kill)
	}
	for _, rp := range fl.Ranks {
		for _, ph := range trace.PhaseNames {
			if _, ok := rp.At[ph]; !ok && ph != "detected" { // detected: once per failure, not per survivor
				t.Errorf("%s has no %s phase: %v", rp.Label, ph, rp.At)
			}
		}
	}
	if err := fl.Ordered(); err != nil {
		t.Error(err)
	}
	out, err := exec.Command(tool, "phases", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ftmpi-trace phases: %v\n%s", err, out)
	}
	for _, want := range []string{"failure of proc 2: kill (injected kill) -> detected by proc", "3 survivors", "rank 0 ", "rank 1 ", "rank 3 ", "median", "max"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("phases output lacks %q:\n%s", want, out)
		}
	}
	t.Logf("ftmpi-trace phases:\n%s", out)
	page := filepath.Join(dir, "demo.html")
	if out, err := exec.Command(tool, "html", file, "-o", page).CombinedOutput(); err != nil {
		t.Fatalf("ftmpi-trace html: %v\n%s", err, out)
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, lbl := range []string{"ftmpirun", "rank 0", "rank 1", "rank 2", "rank 3", "proc 4 (spawned"} {
		if !strings.Contains(string(h), `<text class="lbl" x="6"`) || !strings.Contains(string(h), ">"+lbl) {
			t.Errorf("the page has no lane %q", lbl)
		}
	}
	for _, ph := range trace.PhaseNames {
		if !strings.Contains(string(h), `class="phase" data-phase="`+ph+`"`) {
			t.Errorf("the page's picture has no %s phase", ph)
		}
	}
}
