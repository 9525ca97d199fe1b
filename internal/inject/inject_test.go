package inject

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperVar makes the test binary act as a process that calls Self (see
// TestMain); its value is "RANK SIZE".
const helperVar = "FTMPI_INJECT_TEST_HELPER"

func TestMain(m *testing.M) {
	if v := os.Getenv(helperVar); v != "" {
		helper(v)
		return
	}
	goleak.VerifyTestMain(m)
}

// helper calls Self with FTMPI_INJECT, says "armed", and exits 3 after
// 20s unless injected. With FTMPI_INJECT_TEST_CANCEL it cancels at once and
// exits 0 after 500ms.
func helper(v string) {
	var rank, size int
	if _, err := fmt.Sscan(v, &rank, &size); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(98)
	}
	in, err := NewSelf(rank, size, os.Getenv(EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(97)
	}
	stop := in.Stop
	fmt.Println("armed")
	if phase := os.Getenv("FTMPI_INJECT_TEST_PHASE"); phase != "" {
		// The phase is reached on another thread than the main one (which
		// this goroutine keeps): a signal to the process, not to that
		// thread, would let it run on for a while (the kernel wakes the
		// main thread to take it).
		runtime.LockOSThread()
		var s string
		fmt.Scanln(&s) // the test's go-ahead
		done := make(chan struct{})
		go func() {
			in.Phase(phase)
			fmt.Println("after the phase")
			close(done)
		}()
		<-done
	}
	if os.Getenv("FTMPI_INJECT_TEST_CANCEL") != "" {
		stop()
		time.Sleep(500 * time.Millisecond)
		os.Exit(0)
	}
	time.Sleep(20 * time.Second)
	os.Exit(3)
}

func TestParseValid(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Specs
		str  string // canonical String(); "" means in itself
	}{
		{"", nil, ""},
		{" ; ;", nil, ""},
		{"kill:rank=1,at=300ms", Specs{{Kind: Kill, Rank: 1, At: 300 * time.Millisecond}}, ""},
		{"stop:at=2s,rank=0", Specs{{Kind: Stop, Rank: 0, At: 2 * time.Second}}, "stop:rank=0,at=2s"},
		{"kill:rank=0,at=0s", Specs{{Kind: Kill, Rank: 0, At: 0}}, ""},
		{" kill : rank = 3 , at = 1.5s ; stop:rank=2,at=1m ;", Specs{
			{Kind: Kill, Rank: 3, At: 1500 * time.Millisecond},
			{Kind: Stop, Rank: 2, At: time.Minute},
		}, "kill:rank=3,at=1.5s;stop:rank=2,at=1m0s"},
		{"chaos:seed=7,mttf=100ms,max=2", Specs{{Kind: Chaos, Seed: 7, MTTF: 100 * time.Millisecond, Max: 2, Spare: []int{0}}}, ""},
		{"chaos:seed=18446744073709551615,mttf=1s,max=0,spare=none", Specs{{Kind: Chaos, Seed: 1<<64 - 1, MTTF: time.Second, Max: 0}}, ""},
		{"chaos:spare=5,0,2-3,3,max=4,seed=1,mttf=2s", Specs{{Kind: Chaos, Seed: 1, MTTF: 2 * time.Second, Max: 4, Spare: []int{0, 2, 3, 5}}},
			"chaos:seed=1,mttf=2s,max=4,spare=0,2-3,5"},
		{"chaos:seed=1,mttf=2s,max=4,spare=0", Specs{{Kind: Chaos, Seed: 1, MTTF: 2 * time.Second, Max: 4, Spare: []int{0}}},
			"chaos:seed=1,mttf=2s,max=4"},
		{"chaos:seed=1,mttf=2s,max=4,stop=0.25", Specs{{Kind: Chaos, Seed: 1, MTTF: 2 * time.Second, Max: 4, Spare: []int{0}, Stop: 0.25}}, ""},
		{"chaos:stop=1,seed=1,spare=0-1,mttf=2s,max=4", Specs{{Kind: Chaos, Seed: 1, MTTF: 2 * time.Second, Max: 4, Spare: []int{0, 1}, Stop: 1}},
			"chaos:seed=1,mttf=2s,max=4,spare=0-1,stop=1"},
		{"chaos:seed=1,mttf=2s,max=4,from=1.5s,stop=0.5", Specs{{Kind: Chaos, Seed: 1, MTTF: 2 * time.Second, Max: 4, Spare: []int{0}, Stop: 0.5, From: 1500 * time.Millisecond}},
			"chaos:seed=1,mttf=2s,max=4,stop=0.5,from=1.5s"},
		{"chaos:seed=1,mttf=2s,max=4,stop=0", Specs{{Kind: Chaos, Seed: 1, MTTF: 2 * time.Second, Max: 4, Spare: []int{0}}},
			"chaos:seed=1,mttf=2s,max=4"},
		{"kill:rank=2,on=jacobi: iteration 200", Specs{{Kind: Kill, Rank: 2, On: "jacobi: iteration 200"}}, ""},
		{" stop : on = recovered: ranks [1] = ok , rank=0", Specs{{Kind: Stop, Rank: 0, On: "recovered: ranks [1] = ok"}},
			"stop:rank=0,on=recovered: ranks [1] = ok"},
		{"stop:rank=2,at=finalize-fenced", Specs{{Kind: Stop, Rank: 2, Phase: "finalize-fenced"}}, ""},
		{"kill: at = reinit-return , rank=0", Specs{{Kind: Kill, Rank: 0, Phase: "reinit-return"}}, "kill:rank=0,at=reinit-return"},
		{"kill:rank=1,at=1s;chaos:seed=3,mttf=1s,max=1,spare=1-2", Specs{
			{Kind: Kill, Rank: 1, At: time.Second},
			{Kind: Chaos, Seed: 3, MTTF: time.Second, Max: 1, Spare: []int{1, 2}},
		}, ""},
	} {
		got, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Parse(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
		str := tc.str
		if str == "" && tc.want != nil {
			str = tc.in
		}
		if got.String() != str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.in, got.String(), str)
		}
		again, err := Parse(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("round trip of %q: %#v, %v", got.String(), again, err)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range []struct {
		in, spec, part, msg string
	}{
		{"kil:rank=1,at=1s", "kil:rank=1,at=1s", "kil", "unknown kind: want kill, stop or chaos"},
		{"kill", "kill", "", "missing ':' after \"kill\""},
		{"kill:rank=1", "kill:rank=1", "", "missing at="},
		{"stop:at=1s", "stop:at=1s", "", "missing rank="},
		{"kill:rank=x,at=1s", "kill:rank=x,at=1s", "rank=x", "rank must be a non-negative integer"},
		{"kill:rank=-1,at=1s", "kill:rank=-1,at=1s", "rank=-1", "non-negative"},
		{"kill:rank=1,at=soon", "kill:rank=1,at=soon", "at=soon", "at must be a duration"},
		{"kill:rank=1,at=-1s", "kill:rank=1,at=-1s", "at=-1s", "must not be negative"},
		{"stop:rank=1,at=finalise", "stop:rank=1,at=finalise", "at=finalise",
			"at must be a duration such as 500ms or 2s, or a phase: reinit-return, reinit-left, finalize, finalize-fence, finalize-fenced, finalized"},
		{"stop:rank=1,at=finalize,on=x", "stop:rank=1,at=finalize,on=x", "", "give at= or on=, not both"},
		{"kill:rank=1,at=1s,rank=2", "kill:rank=1,at=1s,rank=2", "rank=2", "rank given twice"},
		{"kill:rank=1,at=1s,seed=3", "kill:rank=1,at=1s,seed=3", "seed=3", `unknown key "seed" for kill (want rank, at, on)`},
		{"kill:rank=1,at=1s,on=step 3", "kill:rank=1,at=1s,on=step 3", "", "give at= or on=, not both"},
		{"stop:rank=1,on=", "stop:rank=1,on=", "on=", "empty value"},
		{"stop:rank=1", "stop:rank=1", "", "missing at= or on="},
		{"kill:rank=1,,at=1s", "kill:rank=1,,at=1s", "", "empty parameter"},
		{"kill:rank=,at=1s", "kill:rank=,at=1s", "rank=", "empty value"},
		{"kill:rank=1,at=1s;kill:1", "kill:1", "1", "want key=value"},
		{"chaos:seed=1,mttf=1s", "chaos:seed=1,mttf=1s", "", "missing max="},
		{"chaos:seed=-1,mttf=1s,max=1", "chaos:seed=-1,mttf=1s,max=1", "seed=-1", "seed must be"},
		{"chaos:seed=1,mttf=0s,max=1", "chaos:seed=1,mttf=0s,max=1", "mttf=0s", "mttf must be positive"},
		{"chaos:seed=1,mttf=1s,max=two", "chaos:seed=1,mttf=1s,max=two", "max=two", "max must be"},
		{"chaos:seed=1,mttf=1s,max=1,spare=a", "chaos:seed=1,mttf=1s,max=1,spare=a", "spare=a", "spare must be"},
		{"chaos:seed=1,mttf=1s,max=1,spare=3-1", "chaos:seed=1,mttf=1s,max=1,spare=3-1", "spare=3-1", "spare must be"},
		{"chaos:seed=1,mttf=1s,max=1,stop=1.5", "chaos:seed=1,mttf=1s,max=1,stop=1.5", "stop=1.5", "stop must be a fraction from 0 to 1"},
		{"chaos:seed=1,mttf=1s,max=1,stop=-0.1", "chaos:seed=1,mttf=1s,max=1,stop=-0.1", "stop=-0.1", "stop must be"},
		{"chaos:seed=1,mttf=1s,max=1,stop=NaN", "chaos:seed=1,mttf=1s,max=1,stop=NaN", "stop=NaN", "stop must be"},
		{"chaos:seed=1,mttf=1s,max=1,from=-1s", "chaos:seed=1,mttf=1s,max=1,from=-1s", "from=-1s", "from must be a non-negative duration"},
		{"chaos:seed=1,mttf=1s,max=1,from=soon", "chaos:seed=1,mttf=1s,max=1,from=soon", "from=soon", "from must be"},
		{"chaos:seed=1,mttf=1s,max=1,stop=half", "chaos:seed=1,mttf=1s,max=1,stop=half", "stop=half", "stop must be"},
		{"kill:rank=1,at=1s,stop=0.5", "kill:rank=1,at=1s,stop=0.5", "stop=0.5", "unknown key"},
	} {
		_, err := Parse(tc.in)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q): %v, want a *ParseError", tc.in, err)
			continue
		}
		if pe.Spec != tc.spec || pe.Part != tc.part || !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("Parse(%q): %#v, want spec %q part %q msg ~%q", tc.in, pe, tc.spec, tc.part, tc.msg)
		}
		if !strings.Contains(err.Error(), tc.spec) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%q): message %q names neither spec nor problem", tc.in, err)
		}
	}
}

func TestValidate(t *testing.T) {
	ss, _ := Parse("kill:rank=3,at=1s;chaos:seed=1,mttf=1s,max=9,spare=0-10")
	if err := ss.Validate(4); err != nil {
		t.Fatal(err)
	}
	err := ss.Validate(3)
	if err == nil || !strings.Contains(err.Error(), "rank 3 does not exist in a job of 3 ranks") {
		t.Fatalf("Validate(3): %v", err)
	}
}

func TestPlanExplicit(t *testing.T) {
	ss, _ := Parse("stop:rank=2,at=2s;kill:rank=0,at=1s;kill:rank=9,at=1s;kill:rank=1,at=2s")
	got := Plan(ss, 4)
	want := []Event{
		{At: time.Second, Rank: 0, Signal: syscall.SIGKILL},
		{At: 2 * time.Second, Rank: 2, Signal: syscall.SIGSTOP},
		{At: 2 * time.Second, Rank: 1, Signal: syscall.SIGKILL},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Plan = %v, want %v", got, want)
	}
	if s := got[1].String(); s != "stop:rank=2,at=2s" {
		t.Fatalf("Event.String() = %q", s)
	}
}

// Triggered events are Watch's, never part of the timed plan, and each
// fires once, at the first line that contains its text.
func TestWatchFiresEachTriggerOnce(t *testing.T) {
	ss, err := Parse("kill:rank=1,on=step 2;kill:rank=0,at=1s;stop:rank=3,on=recovered;kill:rank=9,on=step;kill:rank=2,on=step 2")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Plan(ss, 4), []Event{{At: time.Second, Rank: 0, Signal: syscall.SIGKILL}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Plan = %v, want only the timed %v", got, want)
	}
	w := NewWatch(ss, 4)
	k1 := Event{On: "step 2", Rank: 1, Signal: syscall.SIGKILL}
	s3 := Event{On: "recovered", Rank: 3, Signal: syscall.SIGSTOP}
	k2 := Event{On: "step 2", Rank: 2, Signal: syscall.SIGKILL}
	if got := w.Pending(); !reflect.DeepEqual(got, []Event{k1, s3, k2}) {
		t.Fatalf("Pending = %v (rank 9 is outside the job)", got)
	}
	for _, tc := range []struct {
		line string
		want []Event
	}{
		{"step 1", nil},
		{"[0] step 2 of 10", []Event{k1, k2}},
		{"step 2", nil}, // fired already
		{"jacobi: recovered: ranks [1]", []Event{s3}},
		{"recovered", nil},
	} {
		if got := w.Line([]byte(tc.line)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Line(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
	if p := w.Pending(); len(p) != 0 {
		t.Errorf("Pending after every trigger fired: %v", p)
	}
	if s := k1.String(); s != "kill:rank=1,on=step 2" {
		t.Errorf("String = %q", s)
	}
	if s, s2 := k1.When(), (Event{At: time.Second}).When(); s != `on "step 2"` || s2 != "at 1s" {
		t.Errorf("When = %q, %q", s, s2)
	}
	var none *Watch // no triggers: NewWatch gives nil, which holds nothing
	if NewWatch(Specs{{Kind: Kill, Rank: 1, At: time.Second}}, 4) != nil || none.Line([]byte("x")) != nil || none.Pending() != nil {
		t.Error("a watch without triggers is not empty")
	}
}

// Phase events are the ranks' own: never in the timed plan nor in the
// watch; Phased hands exactly them on.
func TestPhasesAreNotPlannedOrWatched(t *testing.T) {
	ss, err := Parse("stop:rank=1,at=finalize;kill:rank=0,at=1s;kill:rank=2,on=step 3;kill:rank=1,at=reinit-left;chaos:seed=1,mttf=1s,max=1")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range Plan(ss, 4) {
		if ev.Phase != "" {
			t.Errorf("Plan holds the phase event %v", ev)
		}
	}
	for _, ev := range NewWatch(ss, 4).Pending() {
		if ev.Phase != "" {
			t.Errorf("Watch holds the phase event %v", ev)
		}
	}
	if got := ss.Phased().String(); got != "stop:rank=1,at=finalize;kill:rank=1,at=reinit-left" {
		t.Errorf("Phased = %q", got)
	}
	if NewWatch(ss.Phased(), 4) != nil || len(Plan(ss.Phased(), 4)) != 0 {
		t.Error("the phased specs make a watch or a plan")
	}
	ev := Event{Phase: "finalized", Rank: 3, Signal: syscall.SIGSTOP}
	if ev.String() != "stop:rank=3,at=finalized" || ev.When() != "at finalized" {
		t.Errorf("String %q When %q", ev.String(), ev.When())
	}
}

// Injector.Phase fires this rank's events of a phase, in the order of the
// specs, each once, after its line; other ranks' and other phases' events
// wait. Stop does not cancel them.
func TestInjectorPhase(t *testing.T) {
	ss, err := Parse("stop:rank=1,at=finalize-fenced;kill:rank=2,at=finalize-fenced;kill:rank=1,at=finalize-fenced;stop:rank=1,at=finalized;stop:rank=9,at=finalized")
	if err != nil {
		t.Fatal(err)
	}
	var fired []Event
	var log strings.Builder
	in := newInjector(1, ss, 4, func(ev Event) { fired = append(fired, ev) }, &log)
	in.Stop()
	in.Phase("finalize")
	if len(fired) != 0 {
		t.Fatalf("fired at another phase: %v", fired)
	}
	in.Phase("finalize-fenced")
	want := []Event{{Phase: "finalize-fenced", Rank: 1, Signal: syscall.SIGSTOP}, {Phase: "finalize-fenced", Rank: 1, Signal: syscall.SIGKILL}}
	if !reflect.DeepEqual(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	in.Phase("finalize-fenced")
	if len(fired) != 2 {
		t.Fatalf("fired twice: %v", fired)
	}
	in.Phase("finalized")
	if len(fired) != 3 || fired[2].Phase != "finalized" {
		t.Fatalf("fired %v", fired)
	}
	pid := os.Getpid()
	wantLog := fmt.Sprintf("ftmpi: rank 1 (pid %d): injected stop at finalize-fenced\nftmpi: rank 1 (pid %d): injected kill at finalize-fenced\nftmpi: rank 1 (pid %d): injected stop at finalized\n", pid, pid, pid)
	if log.String() != wantLog {
		t.Fatalf("log %q, want %q", log.String(), wantLog)
	}
	var none *Injector
	none.Phase("finalize")
	none.Stop()
	if _, err := NewSelf(0, 2, "stop:rank=0,at=finalize,rank=1"); err == nil {
		t.Fatal("NewSelf took a malformed spec")
	}
}

// A real process stops itself exactly at the phase it reports, after its
// line, and not before (the helper reports "finalize" only after saying
// "armed" and reading a line from stdin).
func TestSelfStopsAtPhase(t *testing.T) {
	t.Parallel()
	cmd := helperCmd(t, 1, 3, "stop:rank=1,at=finalize;kill:rank=1,at=5s", "FTMPI_INJECT_TEST_PHASE=finalize")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill() // a stopped process still dies of SIGKILL
	line := make([]byte, len("armed\n"))
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "armed\n" {
		t.Fatalf("helper said %q: %v", line, err)
	}
	defer out.Close()
	if st := procState(cmd.Process.Pid); st == "T" {
		t.Fatal("stopped before it reached the phase")
	}
	done := make(chan syscall.WaitStatus, 1)
	go func() {
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil)
			if err != syscall.EINTR {
				done <- ws
				return
			}
		}
	}()
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(errPipe).ReadString('\n')
		lines <- l
	}()
	fmt.Fprintln(in, "go")
	select {
	case ws := <-done:
		if !ws.Stopped() || ws.StopSignal() != syscall.SIGSTOP {
			t.Fatalf("helper status %#x, want stopped by SIGSTOP", ws)
		}
	case <-time.After(4 * time.Second): // before the timed kill at 5s
		t.Fatal("helper was not stopped at its phase")
	}
	// The line comes before the stop: it is in the pipe already.
	if l := <-lines; l != fmt.Sprintf("ftmpi: rank 1 (pid %d): injected stop at finalize\n", cmd.Process.Pid) {
		t.Fatalf("stderr %q", l)
	}
	// Nothing after the phase ran: the thread that reached it stopped at
	// once. (Killed now, the helper's end of the pipe closes: what it
	// wrote before is all there is to read.)
	cmd.Process.Kill()
	if rest, _ := io.ReadAll(out); len(rest) != 0 {
		t.Fatalf("the helper went on after its phase: %q", rest)
	}
}

// procState is the state letter of pid in /proc ("" if gone).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// Self cannot see its own output: a trigger is an error, not a silent
// no-op.
func TestSelfRejectsTriggers(t *testing.T) {
	stop, err := Self(1, 4, "kill:rank=1,on=step 3")
	stop()
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Part != "on=step 3" || !strings.Contains(err.Error(), "needs ftmpirun") {
		t.Fatalf("Self with a trigger: %v", err)
	}
}

func TestPlanChaosDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		ss := Specs{{Kind: Chaos, Seed: seed, MTTF: time.Second, Max: 3, Spare: []int{0}}}
		a, b := Plan(ss, 8), Plan(ss, 8)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two plans differ: %v vs %v", seed, a, b)
		}
		if len(a) != 3 {
			t.Fatalf("seed %d: %d events, want 3", seed, len(a))
		}
	}
	// Different seeds give different schedules (not a law, but any decent
	// generator differs on these).
	p1 := Plan(Specs{{Kind: Chaos, Seed: 1, MTTF: time.Second, Max: 3}}, 8)
	p2 := Plan(Specs{{Kind: Chaos, Seed: 2, MTTF: time.Second, Max: 3}}, 8)
	if reflect.DeepEqual(p1, p2) {
		t.Fatalf("seeds 1 and 2 give the same plan %v", p1)
	}
}

// TestPlanChaosGolden pins the schedule of one seed, so that a change of
// generator (which would silently change every recorded chaos run) is seen.
func TestPlanChaosGolden(t *testing.T) {
	ss, _ := Parse("chaos:seed=42,mttf=1s,max=3")
	got := Plan(ss, 8)
	var parts []string
	for _, ev := range got {
		parts = append(parts, fmt.Sprintf("%d@%v", ev.Rank, ev.At.Round(time.Millisecond)))
	}
	if s := strings.Join(parts, " "); s != goldenSeed42 {
		t.Fatalf("seed 42 plan is %q, was %q", s, goldenSeed42)
	}
}

const goldenSeed42 = "5@1.481s 3@2.682s 6@2.945s"

func TestPlanChaosMaxAndSpare(t *testing.T) {
	counts := make([]int, 6)
	for seed := uint64(0); seed < 2000; seed++ {
		ss := Specs{{Kind: Chaos, Seed: seed, MTTF: 100 * time.Millisecond, Max: 2, Spare: []int{0, 3}}}
		evs := Plan(ss, 6)
		if len(evs) != 2 {
			t.Fatalf("seed %d: %d events, want max=2", seed, len(evs))
		}
		if evs[0].Rank == evs[1].Rank {
			t.Fatalf("seed %d: rank %d killed twice", seed, evs[0].Rank)
		}
		var prev time.Duration
		for _, ev := range evs {
			if ev.Rank == 0 || ev.Rank == 3 {
				t.Fatalf("seed %d: spare rank %d chosen", seed, ev.Rank)
			}
			if ev.Signal != syscall.SIGKILL || ev.At < prev {
				t.Fatalf("seed %d: bad event %v", seed, ev)
			}
			prev = ev.At
			counts[ev.Rank]++
		}
	}
	for _, r := range []int{1, 2, 4, 5} {
		if counts[r] < 700 || counts[r] > 1300 { // expected 1000 each
			t.Errorf("rank %d chosen %d times in 4000 draws over 4 ranks", r, counts[r])
		}
	}
	// Fewer eligible ranks than max: each eligible rank once.
	evs := Plan(Specs{{Kind: Chaos, Seed: 5, MTTF: time.Second, Max: 10}}, 3) // default spare would be [0], here none
	if len(evs) != 3 {
		t.Fatalf("max 10 over 3 ranks with no spare: %v", evs)
	}
	ss, _ := Parse("chaos:seed=5,mttf=1s,max=10")
	if evs := Plan(ss, 3); len(evs) != 2 || evs[0].Rank == 0 || evs[1].Rank == 0 {
		t.Fatalf("default spare rank 0: %v", evs)
	}
	// Mean inter-failure time is about mttf.
	var sum time.Duration
	const n = 4000
	for seed := uint64(0); seed < n; seed++ {
		sum += Plan(Specs{{Kind: Chaos, Seed: seed, MTTF: time.Second, Max: 1}}, 2)[0].At
	}
	if mean := sum / n; mean < 900*time.Millisecond || mean > 1100*time.Millisecond {
		t.Errorf("mean time to first failure %v, want about 1s", mean)
	}
}

// TestPlanChaosStopMix: stop=F turns about a fraction F of the chaos
// events into SIGSTOPs, stop=1 all of them, and stop=0 keeps the schedule
// of a seed exactly as before stop= existed (the golden seed 42).
func TestPlanChaosStopMix(t *testing.T) {
	stops, total := 0, 0
	for seed := uint64(0); seed < 2000; seed++ {
		ss := Specs{{Kind: Chaos, Seed: seed, MTTF: 100 * time.Millisecond, Max: 2, Spare: []int{0}, Stop: 0.3}}
		evs := Plan(ss, 8)
		if len(evs) != 2 || evs[0].Rank == evs[1].Rank || !reflect.DeepEqual(evs, Plan(ss, 8)) {
			t.Fatalf("seed %d: plan %v (want 2 distinct ranks, replayable)", seed, evs)
		}
		for _, ev := range evs {
			switch ev.Signal {
			case syscall.SIGSTOP:
				stops++
			case syscall.SIGKILL:
			default:
				t.Fatalf("seed %d: signal %v", seed, ev.Signal)
			}
			if ev.Rank == 0 {
				t.Fatalf("seed %d: spare rank 0 chosen", seed)
			}
			total++
		}
	}
	if frac := float64(stops) / float64(total); frac < 0.25 || frac > 0.35 {
		t.Errorf("stop=0.3: %d SIGSTOPs of %d events (%.3f)", stops, total, frac)
	}
	for _, ev := range Plan(Specs{{Kind: Chaos, Seed: 3, MTTF: time.Second, Max: 5, Stop: 1}}, 8) {
		if ev.Signal != syscall.SIGSTOP || ev.Verb() != "stop" {
			t.Fatalf("stop=1: event %v is not a stop", ev)
		}
	}
	ss, _ := Parse("chaos:seed=42,mttf=1s,max=3,stop=0")
	var parts []string
	for _, ev := range Plan(ss, 8) {
		if ev.Signal != syscall.SIGKILL {
			t.Fatalf("stop=0: event %v is not a kill", ev)
		}
		parts = append(parts, fmt.Sprintf("%d@%v", ev.Rank, ev.At.Round(time.Millisecond)))
	}
	if s := strings.Join(parts, " "); s != goldenSeed42 {
		t.Fatalf("seed 42 with stop=0 plans %q, want the old %q", s, goldenSeed42)
	}
}

// TestPlanChaosFrom: from=D shifts the schedule of a seed by D, victims
// and signals unchanged.
func TestPlanChaosFrom(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		base := Specs{{Kind: Chaos, Seed: seed, MTTF: 300 * time.Millisecond, Max: 3, Spare: []int{0}, Stop: 0.5}}
		shifted := slices.Clone(base)
		shifted[0].From = 2 * time.Second
		a, b := Plan(base, 8), Plan(shifted, 8)
		if len(a) != 3 || len(b) != 3 {
			t.Fatalf("seed %d: plans %v and %v", seed, a, b)
		}
		for i := range a {
			if b[i].At != a[i].At+2*time.Second || b[i].Rank != a[i].Rank || b[i].Signal != a[i].Signal {
				t.Fatalf("seed %d: event %d is %v, want %v shifted by 2s", seed, i, b[i], a[i])
			}
		}
	}
}

func helperCmd(t *testing.T, rank, size int, specs string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperVar+"="+strconv.Itoa(rank)+" "+strconv.Itoa(size), EnvVar+"="+specs)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func TestSelfKills(t *testing.T) {
	t.Parallel()
	cmd := helperCmd(t, 1, 3, "kill:rank=0,at=10ms;kill:rank=1,at=200ms")
	start := time.Now()
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("helper: %v, want death by SIGKILL; output %q", err, out)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want SIGKILL; output %q", ee, out)
	}
	if string(out) != "armed\n" {
		t.Fatalf("output %q", out)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 15*time.Second {
		t.Fatalf("killed after %v, want about 200ms", d)
	}
}

func TestSelfStops(t *testing.T) {
	t.Parallel()
	cmd := helperCmd(t, 2, 3, "stop:rank=2,at=100ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill() // a stopped process still dies of SIGKILL
	var ws syscall.WaitStatus
	done := make(chan error, 1)
	go func() {
		for {
			_, err := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WUNTRACED, nil)
			if err != syscall.EINTR {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("helper was not stopped")
	}
	if !ws.Stopped() || ws.StopSignal() != syscall.SIGSTOP {
		t.Fatalf("helper status %#x, want stopped by SIGSTOP", ws)
	}
}

func TestSelfOtherRankAndCancel(t *testing.T) {
	t.Parallel()
	// Not our rank: nothing happens (exit 3 would take 20s, so cancel mode).
	for _, tc := range []struct {
		rank  int
		specs string
	}{
		{0, "kill:rank=1,at=10ms"},           // another rank's event
		{1, "kill:rank=1,at=200ms"},          // cancelled before it fires
		{1, "chaos:seed=1,mttf=10ms,max=0"},  // no event at all
		{0, "chaos:seed=1,mttf=10ms,max=10"}, // rank 0 is spare by default
	} {
		cmd := helperCmd(t, tc.rank, 4, tc.specs, "FTMPI_INJECT_TEST_CANCEL=1")
		out, err := cmd.Output()
		if err != nil || string(out) != "armed\n" {
			t.Errorf("rank %d %q: %v, output %q", tc.rank, tc.specs, err, out)
		}
	}
}

func TestSelfChaosMatchesPlan(t *testing.T) {
	t.Parallel()
	specs := "chaos:seed=9,mttf=50ms,max=1"
	ss, _ := Parse(specs)
	victim := Plan(ss, 4)[0].Rank
	cmd := helperCmd(t, victim, 4, specs)
	_, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
		t.Fatalf("chaos victim rank %d: %v, want SIGKILL", victim, err)
	}
}

func TestSelfInProcess(t *testing.T) {
	// Far-future event: stop ends the goroutine (goleak in TestMain).
	stop, err := Self(0, 1, "stop:rank=0,at=1h")
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop()
	stop, err = Self(0, 1, "kill:rank=zero,at=1h")
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Part != "rank=zero" {
		t.Fatalf("bad spec: %v", err)
	}
	stop()
}
