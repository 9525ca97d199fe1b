package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/examples/runthrough/rtex"
	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// Run-through stabilization (seed 003, chapter 17) in real jobs whose
// processes die by SIGKILL: the rules (testdata/rtcheck: ranks kill
// themselves at fixed points) and examples 17.5-17.8 (examples/runthrough,
// with self-kills at the seed's points or timed kills by ftmpirun
// --inject).

// rtBins builds rtcheck and the runthrough example next to the other test
// binaries (TestMain removes that directory).
func rtBins(t *testing.T) (rtcheck, example string) {
	t.Helper()
	return buildOnce(t, "rtcheck"), buildOnce(t, "runthrough")
}

// rankLines splits "[r] text" lines of stdout by rank.
func rankLines(out string) map[int][]string {
	m := map[int][]string{}
	for _, l := range strings.Split(out, "\n") {
		var r int
		if _, err := fmt.Sscanf(l, "[%d]", &r); err != nil {
			continue
		}
		_, text, _ := strings.Cut(l, "] ")
		m[r] = append(m[r], text)
	}
	return m
}

func mustSucceed(t *testing.T, r jobtest.Result) {
	t.Helper()
	if r.Code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// Every rule: ranks 4 and then 3 SIGKILL themselves; each survivor passes
// every check (17.1-17.4 queries, 17.6 wildcards and Sendrecv, 17.7
// inactive collectives and Validate, 17.8.2 creation rules and Free, ULFM
// on another communicator of the same program).
func TestRunThroughRulesUnderSIGKILL(t *testing.T) {
	rtcheck, _ := rtBins(t)
	r := ftmpirunQuickExit(t, "-n", "5", "--timeout", "60s", "--on-failure", "continue", rtcheck)
	mustSucceed(t, r)
	if !strings.Contains(r.Stdout, "result: rtcheck passed") {
		t.Fatalf("no result line\nstdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
	}
	lines := rankLines(r.Stdout)
	steps := []string{
		"ok 17.6 point-to-point with a failed process fails with ErrRankFailStop",
		"ok 17.1 rank 4 has failed",
		"ok 17.7 inactive: collectives and creation fail",
		"ok ULFM on another communicator: ErrPending, ack, shrink",
		"ok 17.7.4 Validate; Allreduce, Exscan, Allgather skip the recognised failure",
		"ok 17.8.2 Dup keeps the recognised failure, Split drops it",
		"ok 17.2-17.3 new failure 3 detected; 17.6 barrier loop recognises it",
		"ok 17.8.2 Free despite failures; collectives over two recognised failures",
	}
	for _, rank := range []int{0, 1, 2} {
		for _, s := range steps {
			if !slices.Contains(lines[rank], s) {
				t.Errorf("rank %d did not print %q", rank, s)
			}
		}
	}
	if !slices.Contains(lines[0], "ok 17.6 wildcards disabled, pending completed, re-enabled; 17.6.2 Sendrecv ErrInStatus") {
		t.Error("rank 0 did not pass the wildcard checks")
	}
	if n := strings.Count(r.Stderr, "killed by signal 9"); n != 2 {
		t.Errorf("%d ranks killed by SIGKILL, want 2\nstderr:\n%s", n, r.Stderr)
	}
}

// Example 17.8: Exscan; rank 2 dies after the first round, rank 0 after
// the second; every rank prints what the seed's comments say.
func TestRunThroughExample17_8ExscanUnderSIGKILL(t *testing.T) {
	_, example := rtBins(t)
	r := ftmpirunQuickExit(t, "-n", "5", "--timeout", "60s", "--on-failure", "continue", example,
		"-example", "exscan", "-kill", "exscan1=2,exscan2=0")
	mustSucceed(t, r)
	lines := rankLines(r.Stdout)
	for rank := 0; rank < 5; rank++ {
		got := slices.DeleteFunc(lines[rank], func(l string) bool { return l == "Some rank failed during scan" })
		if want := rtex.ExscanWant[rank]; !slices.Equal(got, want) {
			t.Errorf("rank %d printed %q, want %q", rank, got, want)
		}
	}
	if !strings.Contains(r.Stdout, "Some rank failed during scan") {
		t.Error("no Exscan failed")
	}
	if resultLine(t, r) != "result: exscan" {
		t.Errorf("result %q", resultLine(t, r))
	}
}

// Example 17.6: Barrier until Validate finds no new failure; rank 2 dies
// after the first Validate.
func TestRunThroughExample17_6BarrierUnderSIGKILL(t *testing.T) {
	_, example := rtBins(t)
	r := ftmpirunQuickExit(t, "-n", "4", "--timeout", "60s", "--on-failure", "continue", example,
		"-example", "barrier", "-kill", "barrier=2")
	mustSucceed(t, r)
	want := []string{"Some rank failed during barrier", "Some process failed, trying again.", "Barrier succeeded; failed processes [2]"}
	lines := rankLines(r.Stdout)
	for _, rank := range []int{0, 1, 3} {
		if !slices.Equal(lines[rank], want) {
			t.Errorf("rank %d printed %q, want %q", rank, lines[rank], want)
		}
	}
}

// Example 17.7: Bcast in recovery blocks, rank 2 killed by ftmpirun while
// the blocks are running (when rank 0 reports block 20 of 60: an event,
// not a time); the interrupted block is redone once.
func TestRunThroughExample17_7BcastUnderInjectedKill(t *testing.T) {
	_, example := rtBins(t)
	r := ftmpirunQuickExit(t, "-n", "4", "--timeout", "60s", "--on-failure", "continue", "--inject", "kill:rank=2,on=reached bcast:20:0.",
		example, "-example", "bcast", "-n", "60", "-delay", "10ms", "-progress")
	mustSucceed(t, r)
	if got := resultLine(t, r); got != "result: bcast last 62" {
		t.Fatalf("result %q, want the last broadcast of the last block (59+3)\nstdout:\n%s", got, r.Stdout)
	}
	lines := rankLines(r.Stdout)
	for _, rank := range []int{0, 1, 3} {
		if n := slices.Index(lines[rank], "Some process failed, trying again."); n < 0 {
			t.Errorf("rank %d never retried a block: %q", rank, lines[rank])
		}
	}
	if !strings.Contains(r.Stderr, "injected kill of rank 2") {
		t.Errorf("no injected kill\nstderr:\n%s", r.Stderr)
	}
}

// Example 17.5: two threads of rank 0 receive with AnySource and
// re-enable wildcards under a reader-writer lock; client 2 dies after 3
// messages; every message of the live clients arrives once.
func TestRunThroughExample17_5AnySourceUnderSIGKILL(t *testing.T) {
	_, example := rtBins(t)
	r := ftmpirunQuickExit(t, "-n", "4", "--timeout", "60s", "--on-failure", "continue", example,
		"-example", "anysource", "-n", "30", "-kill", "client:3=2")
	mustSucceed(t, r)
	got := resultLine(t, r)
	var recv, re int
	var failed string
	if _, err := fmt.Sscanf(got, "result: anysource received %d re-enabled %d failed %s", &recv, &re, &failed); err != nil {
		t.Fatalf("result %q: %v", got, err)
	}
	if recv < 60 || recv > 63 || re < 1 || failed != "[2]" {
		t.Fatalf("result %q: want 60..63 messages, at least one re-enable, failed [2]", got)
	}
}
