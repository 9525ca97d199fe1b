package launch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
)

// runEnv is run with extra environment for ftmpirun.
func runEnv(t *testing.T, limit time.Duration, env []string, args ...string) result {
	t.Helper()
	r := jobtest.Run(t, limit, env, ftmpirunBin, args...)
	return result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr, elapsed: r.Elapsed}
}

func expectRE(t *testing.T, what, text, re string) {
	t.Helper()
	if !regexp.MustCompile(re).MatchString(text) {
		t.Fatalf("%s does not match %s:\n%s", what, re, text)
	}
}

func expectSaw(t *testing.T, r result, survivors []int, failed ...int) {
	t.Helper()
	for _, s := range survivors {
		for _, f := range failed {
			if want := fmt.Sprintf("rank %d saw failure of %d\n", s, f); !strings.Contains(r.stdout, want) {
				t.Fatalf("stdout lacks %q:\nstdout:\n%s\nstderr:\n%s", want, r.stdout, r.stderr)
			}
		}
	}
}

func TestInjectKillAbortMode(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "-n", "3", "--inject", "kill:rank=1,at=300ms", rankprogBin, "hang")
	expectCode(t, r, 128+9)
	expectStderr(t, r, "ftmpirun: injected kill of rank 1 at 300ms\n")
	expectRE(t, "stderr", r.stderr, `ftmpirun: rank 1 \(pid \d+\) killed by signal 9 \(killed\), injected kill at 300ms\n`)
	if strings.Contains(r.stderr, "continuing") {
		t.Fatalf("abort mode continued:\n%s", r.stderr)
	}
	// A rank that never connects (a plain program) killed by injection
	// is a failure too; rank 0 can be killed; at=0 is allowed.
	for _, rank := range []string{"0", "1"} {
		r = run(t, limit, "-n", "2", "--inject", "kill:rank="+rank+",at=0s", "sleep", "20")
		expectCode(t, r, 128+9)
		expectStderr(t, r, "ftmpirun: injected kill of rank "+rank+" at 0s\n")
		if r.elapsed > 10*time.Second {
			t.Fatalf("kill took %v", r.elapsed)
		}
	}
}

func TestInjectSkipsExitedRanks(t *testing.T) {
	t.Parallel()
	// Rank 1 exits at once; the kill at 1s finds it gone and is skipped.
	r := run(t, limit, "-n", "2", "--inject", "kill:rank=1,at=1s", "sh", "-c", `if [ "$FTMPI_RANK" = 0 ]; then sleep 2; fi`)
	expectCode(t, r, 0)
	if strings.Contains(r.stderr, "injected") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	r = run(t, limit, "-n", "2", "-v", "--inject", "kill:rank=1,at=1s", "sh", "-c", `if [ "$FTMPI_RANK" = 0 ]; then sleep 2; fi`)
	expectCode(t, r, 0)
	expectStderr(t, r, "injection kill:rank=1,at=1s skipped: rank 1 is gone")
	expectStderr(t, r, "fault injection kill:rank=1,at=1s: 1 events")
}

func TestInjectKillContinueMode(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "-n", "4", "--on-failure", "continue", "--inject", "kill:rank=1,at=300ms", rankprogBin, "waitfail", "1", "10")
	expectCode(t, r, 10)
	expectStderr(t, r, "ftmpirun: injected kill of rank 1 at 300ms\n")
	expectRE(t, "stderr", r.stderr, `rank 1 \(pid \d+\) killed by signal 9 \(killed\), injected kill at 300ms; continuing`)
	expectSaw(t, r, []int{0, 2, 3}, 1)

	// Rank 0 killed: rank 1 is the lowest rank that returned from Finalize.
	r = run(t, limit, "-n", "3", "--on-failure", "continue", "--inject", "kill:rank=0,at=300ms", rankprogBin, "waitfail", "1", "10")
	expectCode(t, r, 11)
	expectSaw(t, r, []int{1, 2}, 0)

	// Two kills in one string, one of them at time 0 (before the rank can
	// connect: the survivors still get its Event).
	r = run(t, limit, "-n", "4", "--on-failure", "continue", "--inject", "kill:rank=3,at=0s;kill:rank=1,at=400ms",
		rankprogBin, "waitfail", "2", "20")
	expectCode(t, r, 20)
	expectSaw(t, r, []int{0, 2}, 1, 3)
}

func TestInjectStopAndSuspect(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "-n", "3", "--on-failure", "continue", "--inject", "stop:rank=2,at=200ms", rankprogBin, "suspect", "2", "20")
	expectCode(t, r, 20)
	expectStderr(t, r, "ftmpirun: injected stop of rank 2 at 200ms\n")
	expectStderr(t, r, "ftmpirun: killing rank 2: declared failed by rank 0: no heartbeat\n")
	expectRE(t, "stderr", r.stderr, `rank 2 \(pid \d+\) killed by signal 9 \(killed\), declared failed by rank 0: no heartbeat; continuing`)
	expectSaw(t, r, []int{0, 1}, 2)
	if !strings.Contains(r.stdout, "rank 0 suspected 2\n") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}

	// Abort mode: the declared failure aborts the job.
	r = run(t, limit, "-n", "3", "--inject", "stop:rank=1,at=100ms", rankprogBin, "suspect", "1", "20")
	expectCode(t, r, 128+9)
	expectRE(t, "stderr", r.stderr, `ftmpirun: rank 1 \(pid \d+\) killed by signal 9 \(killed\), declared failed by rank 0: no heartbeat\n`)
}

func TestChaosDeterministic(t *testing.T) {
	t.Parallel()
	const n, chaos = 5, "seed=11,mttf=150ms,max=2"
	ss, err := inject.Parse("chaos:" + chaos)
	if err != nil {
		t.Fatal(err)
	}
	plan := inject.Plan(ss, n)
	if len(plan) != 2 || plan[1].At > 2*time.Second {
		t.Fatalf("the test's seed gives plan %v; pick one with 2 kills within 2s", plan)
	}
	lineRE := regexp.MustCompile(`ftmpirun: injected kill of rank (\d+) at (\S+)\n`)
	var runs [][]string
	for i := 0; i < 2; i++ {
		r := run(t, limit, "-n", fmt.Sprint(n), "--on-failure", "continue", "--chaos", chaos, rankprogBin, "waitfail", "2", "0")
		expectCode(t, r, 0) // rank 0 is spare by default, and survives
		var got []string
		for _, m := range lineRE.FindAllStringSubmatch(r.stderr, -1) {
			got = append(got, m[1]+"@"+m[2])
		}
		want := []string{
			fmt.Sprintf("%d@%v", plan[0].Rank, plan[0].At.Round(time.Microsecond)),
			fmt.Sprintf("%d@%v", plan[1].Rank, plan[1].At.Round(time.Microsecond)),
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("run %d injected %v, want %v (the plan of the seed)\nstderr:\n%s", i, got, want, r.stderr)
		}
		var survivors []int
		for rank := 0; rank < n; rank++ {
			if rank != plan[0].Rank && rank != plan[1].Rank {
				survivors = append(survivors, rank)
			}
		}
		expectSaw(t, r, survivors, plan[0].Rank, plan[1].Rank)
		for _, m := range regexp.MustCompile(`saw failure of (\d+)`).FindAllStringSubmatch(r.stdout, -1) {
			if m[1] != fmt.Sprint(plan[0].Rank) && m[1] != fmt.Sprint(plan[1].Rank) {
				t.Fatalf("failure of a rank chaos did not kill:\n%s", r.stdout)
			}
		}
		runs = append(runs, got)
	}
	if strings.Join(runs[0], " ") != strings.Join(runs[1], " ") {
		t.Fatalf("two runs with one seed differ: %v vs %v", runs[0], runs[1])
	}
}

func TestInjectUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  []string
		args []string
		msg  string
	}{
		{nil, []string{"-n", "2", "--inject", "kill:rank=x,at=1s", "true"},
			`invalid --inject: bad fault-injection spec "kill:rank=x,at=1s": "rank=x": rank must be a non-negative integer`},
		{nil, []string{"-n", "2", "--inject", "kill:rank=1,at=1s;explode:rank=1", "true"}, `"explode": unknown kind`},
		{nil, []string{"-n", "2", "--inject", "stop:rank=1", "true"}, `missing at=`},
		{nil, []string{"-n", "2", "--inject", "", "true"}, `empty fault-injection spec`},
		{nil, []string{"-n", "4", "--inject", "kill:rank=4,at=1s", "true"}, `rank 4 does not exist in a job of 4 ranks`},
		{nil, []string{"-n", "2", "--chaos", "seed=1,mttf=1s", "true"}, `missing max=`},
		{nil, []string{"-n", "2", "--chaos", "seed=1,mttf=-1s,max=1", "true"}, `"mttf=-1s": mttf must be positive`},
		{nil, []string{"-n", "2", "--inject"}, `--inject needs a value`},
		{[]string{"FTMPI_INJECT=kill:rank=1"}, []string{"-n", "2", "true"}, `invalid FTMPI_INJECT in the environment: bad fault-injection spec "kill:rank=1": missing at=`},
		{[]string{"FTMPI_INJECT=kill:rank=2,at=1s"}, []string{"-n", "2", "true"}, `rank 2 does not exist in a job of 2 ranks`},
	} {
		r := runEnv(t, limit, tc.env, tc.args...)
		if r.code != ExitUsage {
			t.Errorf("%q %q: exit code %d, want 2; stderr:\n%s", tc.env, tc.args, r.code, r.stderr)
		}
		expectUsageLine(t, tc.args, r, tc.msg)
	}
}

func TestInjectFromEnvironment(t *testing.T) {
	t.Parallel()
	env := []string{"FTMPI_INJECT=kill:rank=1,at=100ms"}
	r := runEnv(t, limit, env, "-n", "2", "sleep", "20")
	expectCode(t, r, 128+9)
	expectStderr(t, r, "injected kill of rank 1 at 100ms")
	// Flags replace the environment's specs.
	r = runEnv(t, limit, env, "-n", "2", "--inject", "kill:rank=0,at=100ms", "sleep", "20")
	expectCode(t, r, 128+9)
	expectStderr(t, r, "injected kill of rank 0 at 100ms")
	if strings.Contains(r.stderr, "rank 1") {
		t.Fatalf("the environment's spec was used despite --inject:\n%s", r.stderr)
	}
	// The ranks do not see FTMPI_INJECT (ftmpirun injects; no double faults).
	r = runEnv(t, limit, []string{"FTMPI_INJECT=kill:rank=0,at=1h"}, "-n", "2", "sh", "-c", `test -z "$FTMPI_INJECT"`)
	expectCode(t, r, 0)
}

// Self-injection as under another launcher: each rank gets FTMPI_INJECT
// (re-added by env(1), since ftmpirun strips it) and calls inject.Self.
func TestSelfInjection(t *testing.T) {
	t.Parallel()
	r := run(t, limit, "-n", "3", "--on-failure", "continue", "env", "FTMPI_INJECT=kill:rank=1,at=300ms", rankprogBin, "waitfail", "1", "10")
	expectCode(t, r, 10)
	expectSaw(t, r, []int{0, 2}, 1)
	expectRE(t, "stderr", r.stderr, `rank 1 \(pid \d+\) killed by signal 9 \(killed\); continuing`)
	if strings.Contains(r.stderr, "injected") {
		t.Fatalf("the launcher injected, not the rank:\n%s", r.stderr)
	}
	// A self-stopped rank, caught by a suspecting peer.
	r = run(t, limit, "-n", "3", "--on-failure", "continue", "env", "FTMPI_INJECT=stop:rank=2,at=200ms", rankprogBin, "suspect", "2", "30")
	expectCode(t, r, 30)
	expectSaw(t, r, []int{0, 1}, 2)
	expectStderr(t, r, "declared failed by rank 0: no heartbeat; continuing")
	// Chaos through FTMPI_INJECT: every rank computes the same plan and
	// the victim kills itself.
	ss, _ := inject.Parse("chaos:seed=3,mttf=200ms,max=1")
	victim := inject.Plan(ss, 3)[0].Rank
	r = run(t, limit, "-n", "3", "--on-failure", "continue", "env", "FTMPI_INJECT="+ss.String(), rankprogBin, "waitfail", "1", "0")
	expectCode(t, r, 0)
	var survivors []int
	for rank := 0; rank < 3; rank++ {
		if rank != victim {
			survivors = append(survivors, rank)
		}
	}
	expectSaw(t, r, survivors, victim)
}

func TestParseArgsInject(t *testing.T) {
	t.Setenv(inject.EnvVar, "stop:rank=3,at=1s")
	cfg, err := ParseArgs([]string{"-n", "4", "--inject", "kill:rank=1,at=1s", "--inject", "stop:rank=0,at=2s;kill:rank=2,at=3s",
		"--chaos", "seed=1,mttf=1s,max=1,spare=none", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	want := "kill:rank=1,at=1s;stop:rank=0,at=2s;kill:rank=2,at=3s;chaos:seed=1,mttf=1s,max=1,spare=none"
	if got := cfg.Inject.String(); got != want {
		t.Fatalf("Inject = %q, want %q", got, want)
	}
	cfg, err = ParseArgs([]string{"-n", "4", "prog"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Inject.String(); got != "stop:rank=3,at=1s" {
		t.Fatalf("Inject from the environment = %q", got)
	}
}

// In-process Run with injections: the injector goroutine ends (goleak in
// TestMain), also with events left over.
func TestRunInProcessInject(t *testing.T) {
	var stdout, stderr bytes.Buffer
	ss, _ := inject.Parse("kill:rank=1,at=50ms;kill:rank=0,at=1h")
	code := Run(Config{N: 2, Program: "sleep", Args: []string{"20"}, Inject: ss, ControlNet: "tcp",
		Stdout: &stdout, Stderr: &stderr, Env: append(os.Environ(), "FTMPI_TESTMARK="+newMark(t))})
	if code != 128+9 {
		t.Fatalf("code %d, want 137\nstderr:\n%s", code, &stderr)
	}
	if !strings.Contains(stderr.String(), "injected kill of rank 1 at 50ms") || strings.Contains(stderr.String(), "rank 0 at") {
		t.Fatalf("stderr:\n%s", &stderr)
	}
}

// An on= injection fires when a rank prints a line holding its text: here
// rank 0 prints "step 2 done" and rank 1, which would sleep for 20 s, is
// killed at once. A text nobody prints fires nothing.
func TestInjectOnOutputTrigger(t *testing.T) {
	t.Parallel()
	const prog = `if [ "$FTMPI_RANK" = 0 ]; then echo step 1 done; echo step 2 done >&2; echo step 3 done; exit 0; fi; exec sleep 20`
	r := run(t, limit, "-n", "2", "--inject", "kill:rank=1,on=step 2 done", "sh", "-c", prog)
	expectCode(t, r, 128+9)
	expectStderr(t, r, "step 2 done\nftmpirun: injected kill of rank 1 on \"step 2 done\"\n")
	expectRE(t, "stderr", r.stderr, `rank 1 \(pid \d+\) killed by signal 9 \(killed\), injected kill on "step 2 done"`)
	if r.elapsed > 15*time.Second {
		t.Fatalf("the trigger did not fire at the line: the job took %v", r.elapsed)
	}

	// A line printed before the victim was even started: the trigger waits
	// for every rank to be started (rank 0 prints at once, rank 15 starts
	// last).
	const early = `if [ "$FTMPI_RANK" = 0 ]; then echo ready; fi; if [ "$FTMPI_RANK" = 15 ]; then exec sleep 20; fi`
	r = run(t, limit, "-n", "16", "--inject", "kill:rank=15,on=ready", "sh", "-c", early)
	expectCode(t, r, 128+9)
	expectRE(t, "stderr", r.stderr, `rank 15 \(pid \d+\) killed by signal 9 \(killed\), injected kill on "ready"`)

	const quick = `echo step 1 done; echo step 3 done`
	r = run(t, limit, "-n", "2", "-v", "--inject", "kill:rank=1,on=step 2 done", "sh", "-c", quick)
	expectCode(t, r, 0)
	expectStderr(t, r, `fault injection triggers: [kill:rank=1,on=step 2 done]`)
	if strings.Contains(r.stderr, "injected") {
		t.Fatalf("a trigger fired without its line:\n%s", r.stderr)
	}
}

// A trigger fires at most once over all launches: after --restart-on-failure
// relaunches the job, rank 0 prints the line again and rank 1 lives.
func TestInjectTriggerFiresOnceAcrossRelaunches(t *testing.T) {
	t.Parallel()
	const prog = `echo "rank $FTMPI_RANK launch $FTMPI_RESTART"
if [ "$FTMPI_RANK" = 0 ]; then echo ready; exit 0; fi
if [ "$FTMPI_RESTART" = 0 ]; then exec sleep 20; fi
sleep 1`
	r := run(t, limit, "-n", "2", "--restart-on-failure=1", "--inject", "kill:rank=1,on=ready", "sh", "-c", prog)
	expectCode(t, r, 0)
	if n := strings.Count(r.stderr, "injected kill of rank 1"); n != 1 {
		t.Fatalf("%d injected kills, want 1\nstdout:\n%s\nstderr:\n%s", n, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "rank 1 launch 1") {
		t.Fatalf("no relaunch\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// signalLog is a hostagent.Agent that only records the signals it is asked to send.
type signalLog struct {
	mu   sync.Mutex
	sigs []string
}

func (a *signalLog) Host() string               { return "test" }
func (a *signalLog) Start([]hostagent.RankSpec) {}
func (a *signalLog) Signal(int, syscall.Signal) {}
func (a *signalLog) SignalAll(syscall.Signal)   {}
func (a *signalLog) Wait()                      {}
func (a *signalLog) SignalIncarnation(rank, inc int, sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sigs = append(a.sigs, fmt.Sprintf("%d.%d %v", rank, inc, sig))
}

func (a *signalLog) got() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.sigs, ", ")
}

// A line printed before every rank of the launch was started (the victim
// may not exist yet) fires its trigger only once they all are; later lines
// fire at once; a relaunch disarms the run's triggers until its own ranks
// are started.
func TestTriggersWaitForEveryRankStarted(t *testing.T) {
	ss, err := inject.Parse("kill:rank=2,on=ready;stop:rank=1,on=later;kill:rank=0,on=relaunched")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	h := newHead("job", 3, OnFailureContinue, &output{stdout: io.Discard, stderr: &stderr}, false)
	defer h.close()
	ag := &signalLog{}
	h.addAgent(ag)
	st := &launchState{}
	h.triggers = st.watch(ss, 3)

	h.Output(0, false, []byte("ready\n"))
	if s := ag.got(); s != "" {
		t.Fatalf("a trigger fired before every rank was started: %s", s)
	}
	h.armTriggers()
	if s := ag.got(); s != "2.0 killed" {
		t.Fatalf("after arming: %q, want the early kill of rank 2", s)
	}
	h.Output(1, true, []byte("later\n"))
	h.Output(0, false, []byte("ready\n")) // fired already
	if s := ag.got(); s != "2.0 killed, 1.0 stopped (signal)" {
		t.Fatalf("after the second line: %q", s)
	}
	if !strings.Contains(stderr.String(), `ftmpirun: injected kill of rank 2 on "ready"`) {
		t.Fatalf("stderr:\n%s", stderr.String())
	}

	next := &launchState{restart: 1, triggers: st.triggers}
	if tr := next.watch(ss, 3); tr != st.triggers || tr.armed {
		t.Fatalf("the relaunch got triggers %p (armed %v), want the run's %p disarmed", tr, tr.armed, st.triggers)
	}
}
