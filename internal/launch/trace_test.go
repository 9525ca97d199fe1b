package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/trace"
)

// --trace FILE: the ranks get a directory, the head records its events,
// and the end of the job merges every file into FILE and removes the
// directory.
func TestTraceGathersTheRanksFilesAndTheLaunchers(t *testing.T) {
	cfg, err := ParseArgs([]string{"-n", "2", "--trace", filepath.Join(t.TempDir(), "job.json"), "prog"})
	if err != nil || cfg.Trace == "" {
		t.Fatalf("ParseArgs: %+v, %v", cfg.Trace, err)
	}
	done, err := startTrace(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(cfg.trDir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Fatalf("the ranks' directory %s: %v %v", cfg.trDir, st, err)
	}
	// The head's view: an injected kill of rank 0 and its end.
	h := &head{size: 2}
	h.trc.Store(cfg.trc)
	h.traceEvent(policy.Inject{Rank: 0, Signal: 9})
	h.traceEvent(policy.Exited{Exit: policy.Exit{Rank: 0, Signal: 9}})
	h.traceActions([]policy.Action{{Kind: policy.Log, Text: "rank 0 killed"}})
	// Then a rank's file, as mpi writes it under FTMPI_TRACE.
	r := trace.New(1, "rank 1", trace.Limits{})
	r.Instant(trace.CatFailure, trace.NameKnown, map[string]any{"proc": 0})
	if err := r.File().WriteFile(trace.FileName(cfg.trDir, 1, 0, 0, 42)); err != nil {
		t.Fatal(err)
	}
	var errOut bytes.Buffer
	done(&output{stdout: &errOut, stderr: &errOut})
	if !strings.Contains(errOut.String(), "trace of 1 processes and the launcher written to "+cfg.Trace) {
		t.Fatalf("launcher's line: %q", errOut.String())
	}
	if _, err := os.Stat(cfg.trDir); !os.IsNotExist(err) {
		t.Fatalf("the ranks' directory is left: %v", err)
	}
	f, err := trace.ReadFile(cfg.Trace)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, ev := range f.TraceEvents {
		got[ev.Name+"@"+map[bool]string{true: "launcher", false: "rank"}[ev.Pid == trace.LauncherPid]] = true
	}
	for _, want := range []string{"kill@launcher", "exit@launcher", "log@launcher", "died@rank", trace.NameKnown + "@rank"} {
		if !got[want] {
			t.Errorf("merged file lacks %s: %v", want, got)
		}
	}
	fs := trace.Phases(f)
	if len(fs) != 1 || fs[0].Proc != 0 || fs[0].KillSource != "injected kill" || len(fs[0].Ranks) != 1 {
		t.Fatalf("phases %+v", fs)
	}
}
