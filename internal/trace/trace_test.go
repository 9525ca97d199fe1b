package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNilRecorderRecordsNothingAndDoesNotAllocate(t *testing.T) {
	var r *Recorder
	allocs := testing.AllocsPerRun(1000, func() {
		r.Call("MPI_Recv", "MPI_COMM_WORLD", 1, -2, 5, -2, 10, 20, 1)
		r.Instant(CatRevoke, NameRevokeRx, nil)
		r.Span(CatAgree, NameAgree, r.Begin(), nil)
	})
	if allocs != 0 {
		t.Fatalf("a nil Recorder allocates %v times per call", allocs)
	}
	if r.Events() != nil || r.File() != nil || r.Begin() != 0 {
		t.Fatal("a nil Recorder returned something")
	}
}

func TestCallBudgetWindowAndMinimum(t *testing.T) {
	r := New(3, "rank 3", Limits{Calls: 3, Window: 2, MinCall: 5})
	var flips []bool
	r.SetFullHook(func(full bool) { flips = append(flips, full) })
	for i := range 5 {
		r.Call("MPI_Send", "c", 0, -2, 0, -2, int64(100*i), int64(100*i+10), 1)
	}
	r.Call("MPI_Send", "c", 0, -2, 0, -2, 600, 601, 1) // shorter than MinCall: not kept
	if n := len(r.Events()); n != 3 {
		t.Fatalf("kept %d call spans, want the budget of 3", n)
	}
	r.Instant(CatFailure, NameKnown, map[string]any{"proc": 1}) // opens a window of 2
	for i := range 4 {
		r.Call("MPI_Recv", "c", 1, -2, 0, -2, int64(1000+100*i), int64(1000+100*i+10), 1)
	}
	evs := r.Events()
	if len(evs) != 3+1+2 {
		t.Fatalf("kept %d events, want 3 calls + 1 failure + a window of 2 calls", len(evs))
	}
	if evs[3].Name != NameKnown || evs[4].Name != "MPI_Recv" || evs[5].TS != 1100 {
		t.Fatalf("unexpected events after the failure: %+v", evs[3:])
	}
	calls, short, ft := r.Dropped()
	if calls != 2+2 || short != 1 || ft != 0 {
		t.Fatalf("dropped calls=%d short=%d ft=%d, want 4, 1, 0", calls, short, ft)
	}
	if fmt.Sprint(flips) != "[true false true]" {
		t.Fatalf("full hook told %v, want full, a window, full again", flips)
	}
}

func TestFileMergeAndParse(t *testing.T) {
	a := New(0, "rank 0", Limits{})
	a.InstantAt(200, CatFailure, NameKnown, map[string]any{"proc": 1})
	a.Call("MPI_Recv", "MPI_COMM_WORLD", 1, -2, 7, -2, 100, 150, 2)
	l := New(LauncherPid, "ftmpirun", Limits{})
	l.InstantAt(50, CatFailure, NameKill, map[string]any{"proc": 1})
	dir := t.TempDir()
	pa, pl := FileName(dir, 0, 0, 0, 11), FileName(dir, LauncherPid, 0, 0, 12)
	if err := a.File().WriteFile(pa); err != nil {
		t.Fatal(err)
	}
	if err := l.File().WriteFile(pl); err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(pa) != dir || !strings.HasSuffix(pa, ".json") {
		t.Fatalf("file name %s not in %s", pa, dir)
	}
	if got := FileName(filepath.Join(dir, "job"), 2, 1, 3, 9); got != filepath.Join(dir, "job")+".proc2.inc1.epoch3.pid9.json" {
		t.Fatalf("prefix file name: %s", got)
	}
	// Merging the same file twice keeps its metadata once.
	m, names, err := MergeDir(dir)
	if err != nil || len(names) != 2 {
		t.Fatalf("MergeDir: %v, %v", names, err)
	}
	m = Merge(m, a.File())
	var buf bytes.Buffer
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	// What Perfetto reads: an object with a traceEvents array of events
	// with name, ph, ts, pid, tid; metadata first, then by time.
	var raw struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	meta, last := 0, -1.0
	names0 := map[string]int{}
	for _, ev := range raw.TraceEvents {
		for _, k := range []string{"name", "ph", "pid", "tid"} {
			if _, ok := ev[k]; !ok {
				t.Fatalf("event without %s: %v", k, ev)
			}
		}
		if ev["ph"] == "M" {
			meta++
			if ev["name"] == "process_name" {
				names0[ev["args"].(map[string]any)["name"].(string)]++
			}
			continue
		}
		ts := ev["ts"].(float64)
		if ts < last {
			t.Fatalf("events out of time order: %v after %v", ts, last)
		}
		last = ts
	}
	if names0["rank 0"] != 1 || names0["ftmpirun"] != 1 {
		t.Fatalf("process names %v, want rank 0 and ftmpirun once each", names0)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.TraceEvents) - meta; n != 2+1+2 {
		t.Fatalf("%d events after merging, want 5 (rank 0's twice, the launcher's once)", n)
	}
	if _, err := Parse([]byte(`{"foo": 1}`)); err == nil {
		t.Fatal("a file without traceEvents parsed")
	}
	if f, err := Parse([]byte(`[{"name":"x","ph":"i","ts":1,"pid":0,"tid":0}]`)); err != nil || len(f.TraceEvents) != 1 {
		t.Fatalf("array format: %v %v", f, err)
	}
}

// demo is a job of three ranks whose rank 1 is killed at 1000 µs and a
// replacement (proc 3) that starts after the kill.
func demo() *File {
	var files []*File
	l := New(LauncherPid, "ftmpirun", Limits{})
	l.InstantAt(1000, CatFailure, NameKill, map[string]any{"proc": 1})
	l.InstantAt(1400, CatFailure, NameExit, map[string]any{"proc": 1})
	files = append(files, l.File())
	for _, p := range []int{0, 2} {
		d := int64(p * 100) // rank 2 lags 200 µs
		r := New(p, "rank "+string(rune('0'+p)), Limits{})
		r.SetMeta("start_us", 10)
		r.Call("MPI_Recv", "MPI_COMM_WORLD", 1, -2, 0, -2, 900, 1500+d, 1)
		r.InstantAt(1500+d, CatFailure, NameKnown, map[string]any{"proc": 1})
		r.InstantAt(1550+d, CatRevoke, NameRevokeTx, nil)
		r.events = append(r.events,
			Event{Name: NameShrink, Cat: CatRepair, Ph: 'X', TS: 1600 + d, Dur: 400},
			Event{Name: NameAgree, Cat: CatAgree, Ph: 'X', TS: 1610 + d, Dur: 200},
			Event{Name: "MPI_Comm_split", Cat: CatMPI, Ph: 'X', TS: 2100 + d, Dur: 100, Peer: -2, Root: -2, Tag: -2, Seq: -2},
			Event{Name: "MPI_Allreduce", Cat: CatMPI, Ph: 'X', TS: 2300 + d, Dur: 50, Peer: -2, Root: -2, Tag: -2, Seq: -2},
			Event{Name: "MPI_Allreduce", Cat: CatMPI, Ph: 'X', TS: 2400 + d, Dur: 50, Peer: -2, Root: -2, Tag: -2, Seq: -2})
		files = append(files, r.File())
	}
	rep := New(3, "proc 3 (spawned)", Limits{})
	rep.SetMeta("start_us", 1900)
	rep.InstantAt(2000, CatFailure, NameKnown, map[string]any{"proc": 1})
	files = append(files, rep.File())
	return Merge(files...)
}

func TestPhases(t *testing.T) {
	fs := Phases(demo())
	if len(fs) != 1 {
		t.Fatalf("%d failures, want 1", len(fs))
	}
	f := fs[0]
	if f.Proc != 1 || f.Kill != 1000 || f.KillSource != "injected kill" || f.Detected != 1500 || f.DetectedBy != 0 {
		t.Fatalf("failure %+v", f)
	}
	if len(f.Ranks) != 2 || f.Ranks[0].Pid != 0 || f.Ranks[1].Pid != 2 {
		t.Fatalf("survivors %+v, want ranks 0 and 2 (not the replacement)", f.Ranks)
	}
	want := map[string]int64{"kill": 1000, "told": 1500, "revoked": 1550, "agreed": 1810, "repaired": 2200, "resumed": 2350}
	for ph, at := range want {
		if got := f.Ranks[0].At[ph]; got != at {
			t.Errorf("rank 0 %s at %d, want %d", ph, got, at)
		}
		if got := f.Ranks[1].At[ph]; ph != "kill" && got != at+200 {
			t.Errorf("rank 2 %s at %d, want %d", ph, got, at+200)
		}
	}
	if err := f.Ordered(); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if s := st["told"]; s.N != 2 || s.Median != 0.6 || s.Max != 0.7 {
		t.Fatalf("told stats %+v, want median 0.6 ms (of 0.5 and 0.7), max 0.7", s)
	}
	var out strings.Builder
	FormatPhases(&out, fs)
	for _, s := range []string{"failure of proc 1: kill (injected kill) -> detected by proc 0 after 0.50 ms; 2 survivors",
		"rank 0", "rank 2", "median", "max", "1.35", "resumed"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("phases output lacks %q:\n%s", s, out.String())
		}
	}
	// Out of order: an agreement that ended before the rank was told.
	bad := f
	bad.Ranks = append([]RankPhases(nil), f.Ranks...)
	bad.Ranks[0].At = map[string]int64{"told": 1500, "agreed": 1400}
	if err := bad.Ordered(); err == nil || !strings.Contains(err.Error(), "agreed") {
		t.Fatalf("Ordered on agreed < told: %v", err)
	}
}

func TestPhasesWithoutLauncherUseTheExitOrTheFirstDetection(t *testing.T) {
	r := New(0, "rank 0", Limits{})
	r.InstantAt(500, CatFailure, NameKnown, map[string]any{"proc": 1})
	fs := Phases(r.File())
	if len(fs) != 1 || fs[0].KillSource != "first detection" || fs[0].Kill != 500 {
		t.Fatalf("%+v", fs)
	}
	// A kill the program recorded itself (ftmpi-bench) is the kill.
	r.events = append(r.events, Event{Name: NameKill, Cat: CatFailure, Ph: 'X', TS: 300, Dur: 10, Args: map[string]any{"proc": 1}})
	if fs := Phases(r.File()); len(fs) != 1 || fs[0].Kill != 300 || fs[0].KillSource != "recorded by proc 0" {
		t.Fatalf("%+v", fs)
	}
	var out strings.Builder
	FormatPhases(&out, Phases(New(0, "x", Limits{}).File()))
	if !strings.Contains(out.String(), "no failure") {
		t.Fatalf("empty trace: %q", out.String())
	}
}

func TestHTMLShowsEveryLaneAndPhaseAndIsSelfContained(t *testing.T) {
	page, err := HTML(demo(), "demo.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, want := range []string{">ftmpirun</text>", ">rank 0</text>", ">rank 2</text>", ">proc 3 (spawned)</text>", `id="legend"`, `id="phases"`} {
		if !strings.Contains(s, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	for _, ph := range PhaseNames {
		if !strings.Contains(s, `class="phase" data-phase="`+ph+`"`) || !strings.Contains(s, `class="phasename" data-phase="`+ph+`"`) {
			t.Errorf("the picture lacks phase %s", ph)
		}
	}
	for _, ext := range []string{"<script src", "<link", "<img", "@import", "url("} {
		if strings.Contains(s, ext) {
			t.Errorf("the page fetches something (%s)", ext)
		}
	}
	if _, err := HTML(&File{}, "x"); err == nil {
		t.Fatal("an empty trace rendered")
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.json")
	if err := New(0, "r", Limits{}).File().WriteFile(p); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left %d files, want 1", len(ents))
	}
}

func TestInstantInNamesALaneUnlessTheProcessNamesItself(t *testing.T) {
	l := New(LauncherPid, "ftmpirun", Limits{})
	l.InstantIn(2, "rank 2", CatFailure, "died", map[string]any{"proc": 2})
	l.InstantIn(4, "proc 4", CatFailure, "died", map[string]any{"proc": 4})
	own := New(4, "proc 4 (spawned)", Limits{})
	own.InstantAt(5, CatFailure, NameKnown, map[string]any{"proc": 2})
	for _, order := range [][]*File{{l.File(), own.File()}, {own.File(), l.File()}} {
		names := map[int]string{}
		pids := map[int]int{}
		for _, ev := range Merge(order...).TraceEvents {
			if ev.Ph == "M" && ev.Name == "process_name" {
				names[ev.Pid] = ev.Args["name"].(string)
			} else if ev.Ph != "M" {
				pids[ev.Pid]++
			}
		}
		if names[2] != "rank 2" || names[4] != "proc 4 (spawned)" || names[LauncherPid] != "ftmpirun" {
			t.Fatalf("names %v: want rank 2 from the launcher, proc 4's own name", names)
		}
		if pids[2] != 1 || pids[4] != 2 || pids[LauncherPid] != 0 {
			t.Fatalf("events per process %v: want the deaths in the processes' lanes", pids)
		}
	}
}

// The recording cost per MPI call span: off (a nil Recorder), kept
// (within the budget), and dropped (the budget used up: one atomic load).
func BenchmarkCall(b *testing.B) {
	b.Run("off", func(b *testing.B) {
		var r *Recorder
		for i := range b.N {
			r.Call("MPI_Recv", "MPI_COMM_WORLD", 1, -2, 5, -2, int64(i), int64(i+1), 1)
		}
	})
	b.Run("kept", func(b *testing.B) {
		r := New(0, "r", Limits{Calls: b.N + 1})
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			r.Call("MPI_Recv", "MPI_COMM_WORLD", 1, -2, 5, -2, int64(i), int64(i+1), 1)
		}
	})
	b.Run("dropped", func(b *testing.B) {
		r := New(0, "r", Limits{Calls: 1, Window: 1})
		for range 3 {
			r.Call("MPI_Recv", "c", 1, -2, 5, -2, 0, 1, 1)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			r.Call("MPI_Recv", "MPI_COMM_WORLD", 1, -2, 5, -2, int64(i), int64(i+1), 1)
		}
	})
	b.Run("clock", func(b *testing.B) { // what the observer adds per wait: two clock reads
		for range b.N {
			_ = Now()
		}
	})
}

// A survivor whose blocked call ended with a revocation starts its
// recovery then; the notice naming the failed process may come after its
// repair, and the phases are still found and in order.
func TestRecoveryStartsAtTheFirstOfToldAndRevoked(t *testing.T) {
	l := New(LauncherPid, "ftmpirun", Limits{})
	l.InstantAt(1000, CatFailure, NameKill, map[string]any{"proc": 1})
	a := New(0, "rank 0", Limits{})
	a.SetMeta("start_us", 1)
	a.InstantAt(1200, CatFailure, NameKnown, map[string]any{"proc": 1})
	b := New(2, "rank 2", Limits{})
	b.SetMeta("start_us", 1)
	b.InstantAt(1300, CatRevoke, NameRevokeRx, nil)
	b.events = append(b.events,
		Event{Name: NameShrink, Cat: CatRepair, Ph: 'X', TS: 1350, Dur: 300},
		Event{Name: NameAgree, Cat: CatAgree, Ph: 'X', TS: 1360, Dur: 100})
	b.InstantAt(1700, CatFailure, NameKnown, map[string]any{"proc": 1}) // the notice, after the repair
	b.events = append(b.events, Event{Name: "MPI_Recv", Cat: CatMPI, Ph: 'X', TS: 1750, Dur: 20, Peer: 0, Root: -2, Tag: 1, Seq: -2})
	fs := Phases(Merge(l.File(), a.File(), b.File()))
	if len(fs) != 1 || len(fs[0].Ranks) != 2 {
		t.Fatalf("%+v", fs)
	}
	r2 := fs[0].Ranks[1]
	want := map[string]int64{"told": 1700, "revoked": 1300, "agreed": 1460, "repaired": 1650, "resumed": 1770}
	for ph, at := range want {
		if r2.At[ph] != at {
			t.Errorf("rank 2 %s at %d, want %d (%v)", ph, r2.At[ph], at, r2.At)
		}
	}
	if err := fs[0].Ordered(); err != nil {
		t.Fatal(err)
	}
}
