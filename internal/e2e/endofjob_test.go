package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The end of a job (issue 27): a rank stopped (SIGSTOP) or killed at each
// phase of its end must never hang the job. A chaos run of reinit-sync
// (np 8, seed 5008) printed its failure-free result and then hung until
// --timeout: a rank stopped after the finalize fence completed was watched
// by nobody (every detector ends with the fence, the others exit), and
// the launcher waited for its exit forever.
//
// Each fault is tied to a phase, not a time: ftmpirun --inject
// stop:rank=R,at=PHASE has the rank stop or kill itself exactly when it
// reaches PHASE (internal/inject: reinit-return, reinit-left, finalize,
// finalize-fence, finalize-fenced, finalized; at=finalize is right after
// the program's last collective). Every run must end by the event its
// case names (the launcher's kill of the stopped rank, the failure's
// report, the policy's message), not by --timeout (exit 124), with either
// the failure-free result and exit 0, or the failure reported with the
// exit code of the job's policy, and leave no process behind. The time a
// run took past its failure-free run is logged, not bounded: the ends
// that need no failure handling are told by their messages, and a bound
// in seconds on a shared 2-core machine only measures the load.

// eojCase is one fault at one phase of the end of a job.
type eojCase struct {
	prog   string // "endofjob" (testdata: plain) or "reinit-sync" (the example)
	policy string // ftmpirun --on-failure; "" for the default (abort)
	sig    string // "stop" or "kill"
	rank   int
	phase  string
}

func (c eojCase) name() string {
	pol := c.policy
	if pol == "" {
		pol = "default"
	}
	return fmt.Sprintf("%s/%s/%s-rank%d-at-%s", c.prog, pol, c.sig, c.rank, c.phase)
}

// afterFence reports whether the fault comes after the rank's finalize
// fence completed (every rank had entered Finalize): its death or stop is
// then no failure of the job.
func (c eojCase) afterFence() bool { return c.phase == "finalize-fenced" || c.phase == "finalized" }

// eojOutcome is an acceptable end of a run: its exit code and a text its
// stderr must hold.
type eojOutcome struct {
	code int
	says string
}

// want lists the acceptable ends of c's run.
func (c eojCase) want() []eojOutcome {
	r := fmt.Sprintf("rank %d", c.rank)
	switch {
	case c.afterFence() && c.sig == "stop":
		// The launcher finds it stopped (after two looks without progress,
		// or a late suspicion) and kills it: the normal end of a rank.
		return []eojOutcome{{0, "killing " + r}}
	case c.afterFence():
		// A rank that finalized and then died of a signal: no failure, but
		// like mpirun the job's code says a process ended badly.
		return []eojOutcome{{128 + 9, ""}}
	}
	// Before the fence: a failure of the job, found by the detector (a
	// stopped rank) or the broken connections (a killed one).
	switch c.policy {
	case "":
		return []eojOutcome{{128 + 9, r}}
	case "continue":
		// The rank dies after its part of the last collective, but another
		// rank may still be inside it: ULFM lets that rank's collective
		// report the failure (the killed rank's last frames may not have
		// left it), and under MPI_ERRORS_ARE_FATAL (endofjob) or Reinit
		// without respawns (reinit-sync) that rank aborts the job. Seen in
		// CI: rank 3's Allreduce failed after rank 1 died at finalize.
		// The job's code is then the root cause's (the kill's 137, or a
		// stopped rank the launcher killed), not the abort's 1.
		return []eojOutcome{{0, "continuing (--on-failure continue)"}, {128 + 9, "aborted the job"}}
	default: // reinit
		// Fatal once a live rank left MPI_Reinit (seed 000 1.4.2); if every
		// live rank was still inside it, the rank is respawned and the job
		// rolls back and ends with its result.
		return []eojOutcome{{128 + 9, "no rollback location"}, {0, "respawning it"}}
	}
}

// eojCases is the matrix: both programs, every phase, the default policy
// and --on-failure continue (and reinit for the Reinit example), stops
// and kills. With -short: the stops under the first policy only.
func eojCases(short bool) []eojCase {
	var cs []eojCase
	plain := []string{"finalize", "finalize-fence", "finalize-fenced", "finalized"}
	reinit := append([]string{"reinit-return", "reinit-left"}, plain...)
	for _, pol := range []string{"", "continue"} {
		for _, sig := range []string{"stop", "kill"} {
			for _, ph := range plain {
				cs = append(cs, eojCase{"endofjob", pol, sig, 1, ph})
			}
		}
		// Rank 0's exit code is the job's: stopped after the fence it is
		// killed, and the job still ends with 0.
		cs = append(cs, eojCase{"endofjob", pol, "stop", 0, "finalized"})
	}
	for _, pol := range []string{"reinit", "", "continue"} {
		for _, ph := range reinit {
			cs = append(cs, eojCase{"reinit-sync", pol, "stop", 1, ph})
			if pol == "reinit" {
				cs = append(cs, eojCase{"reinit-sync", pol, "kill", 1, ph})
			}
		}
	}
	if short {
		var keep []eojCase
		for _, c := range cs {
			if c.sig == "stop" && (c.policy == "reinit" || c.prog == "endofjob" && c.policy == "") {
				keep = append(keep, c)
			}
		}
		cs = keep
	}
	return cs
}

// eojRun runs prog under ftmpirun with extra flags and checks that no
// process of the job is left.
func eojRun(t *testing.T, np int, flags []string, prog string, args ...string) jobtest.Result {
	t.Helper()
	a := append([]string{"-n", fmt.Sprint(np), "--timeout", "60s"}, flags...)
	a = append(append(a, prog), args...)
	env := []string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
	return jobtest.Run(t, 90*time.Second, env, bin["ftmpirun"], a...)
}

func TestEndOfJobFaultAtEachPhase(t *testing.T) {
	progs := map[string]string{
		"endofjob":    buildOnce(t, "endofjob"),
		"reinit-sync": buildOnce(t, "reinit-sync"),
	}
	args := map[string][]string{"reinit-sync": {"-steps", "400", "-every", "100"}}
	const np = 4
	type ref struct {
		result  string
		elapsed time.Duration
	}
	refs := map[string]ref{}
	for name, p := range progs {
		flags := []string(nil)
		if name == "reinit-sync" {
			flags = []string{"--on-failure", "reinit"}
		}
		r := eojRun(t, np, flags, p, args[name]...)
		if r.Code != 0 {
			t.Fatalf("failure-free %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, r.Code, r.Stdout, r.Stderr)
		}
		refs[name] = ref{resultLine(t, r), r.Elapsed}
		t.Logf("failure-free %s np %d: %v", name, np, r.Elapsed.Round(time.Millisecond))
	}
	for _, c := range eojCases(testing.Short()) {
		t.Run(c.name(), func(t *testing.T) {
			// Independent jobs (each its own launcher, mark and
			// sockets), mostly waiting on the detector's timeout or
			// the launcher's looks: -parallel (GOMAXPROCS) at a time.
			t.Parallel()
			var flags []string
			if c.policy != "" {
				flags = append(flags, "--on-failure", c.policy)
			}
			flags = append(flags, "--inject", fmt.Sprintf("%s:rank=%d,at=%s", c.sig, c.rank, c.phase))
			r := eojRun(t, np, flags, progs[c.prog], args[c.prog]...)
			ref := refs[c.prog]
			show := fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.Code, r.Elapsed, r.Stdout, r.Stderr)
			if r.Code == 124 {
				t.Fatalf("the job hung until --timeout: %s", show)
			}
			// The fault happened where it was meant to.
			if !strings.Contains(r.Stderr, fmt.Sprintf("ftmpi: rank %d (pid ", c.rank)) ||
				!strings.Contains(r.Stderr, fmt.Sprintf("injected %s at %s\n", c.sig, c.phase)) {
				t.Fatalf("no injected %s of rank %d at %s: %s", c.sig, c.rank, c.phase, show)
			}
			ok := false
			for _, w := range c.want() {
				ok = ok || r.Code == w.code && strings.Contains(r.Stderr, w.says)
			}
			if !ok {
				t.Fatalf("want one of %+v: %s", c.want(), show)
			}
			// Never a wrong result; the failure-free one when the job
			// succeeded. (Rank 0 prints it before Finalize.)
			for _, l := range strings.Split(r.Stdout, "\n") {
				if strings.HasPrefix(l, "result:") && l != ref.result {
					t.Fatalf("wrong result %q, want %q: %s", l, ref.result, show)
				}
			}
			if r.Code == 0 && !strings.Contains(r.Stdout, ref.result+"\n") {
				t.Fatalf("exit 0 without the result %q: %s", ref.result, show)
			}
			if c.prog == "endofjob" {
				// The faulted rank never returned from Finalize to say so;
				// after the fence every other rank did and exited: the
				// faulted one was the last.
				if strings.Contains(r.Stdout, fmt.Sprintf("rank %d: finalized", c.rank)) {
					t.Fatalf("rank %d went on after its %s at %s: %s", c.rank, c.sig, c.phase, show)
				}
				for q := 0; q < np && c.afterFence(); q++ {
					if q != c.rank && !strings.Contains(r.Stdout, fmt.Sprintf("rank %d: finalized", q)) {
						t.Fatalf("rank %d did not finalize: %s", q, show)
					}
				}
			}
			t.Logf("exit %d after %v (failure-free %v)", r.Code, r.Elapsed.Round(time.Millisecond), ref.elapsed.Round(time.Millisecond))
		})
	}
}

// The chaos finding itself, tied to the phase instead of 2.02 s: reinit-sync
// at np 8 under --on-failure reinit, rank 5 stopped once its finalize
// fence completed, the others finalize and exit. It hung until --timeout;
// now the launcher kills the stopped rank and the job ends with its
// failure-free result and exit 0.
func TestEndOfJobReinitSyncStoppedAfterFenceNP8(t *testing.T) {
	prog := buildOnce(t, "reinit-sync")
	args := []string{"-steps", "400", "-every", "100"}
	base := eojRun(t, 8, []string{"--on-failure", "reinit"}, prog, args...)
	if base.Code != 0 {
		t.Fatalf("failure-free run: exit %d\nstderr:\n%s", base.Code, base.Stderr)
	}
	want := resultLine(t, base)
	r := eojRun(t, 8, []string{"--on-failure", "reinit", "--inject", "stop:rank=5,at=finalize-fenced"}, prog, args...)
	show := fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.Code, r.Elapsed, r.Stdout, r.Stderr)
	if r.Code != 0 || resultLine(t, r) != want || !strings.Contains(r.Stderr, "killing rank 5: found stopped after its finalize fence completed") {
		t.Fatalf("want exit 0, %q and the launcher's kill of rank 5: %s", want, show)
	}
	t.Logf("failure-free %v, rank 5 stopped after the fence: %v", base.Elapsed.Round(time.Millisecond), r.Elapsed.Round(time.Millisecond))
}

// Without a head (mpiexec.hydra and ftmpi-guard; the rank executes its
// FTMPI_INJECT itself): a rank stopped before the ranks' own finalize
// fence is found by its peers' detectors and killed by the suspecting
// rank of its host; one stopped after it is watched by nobody (the others
// exit) and hydra waited for it forever: its guard kills it once it has
// been stopped for twice the heartbeat timeout. The job ends with the
// result and hydra's code for a killed process.
func TestEndOfJobHydraStoppedRank(t *testing.T) {
	h := hydra(t)
	g := guard(t)
	prog := buildOnce(t, "endofjob")
	for _, ph := range []string{"finalize", "finalize-fenced", "finalized"} {
		t.Run(ph, func(t *testing.T) {
			env := hydraEnv("FTMPI_INJECT=stop:rank=1,at="+ph, "TMPDIR="+t.TempDir())
			r := jobtest.Run(t, 60*time.Second, env, h, "-disable-auto-cleanup", "-n", "3", g, prog)
			show := fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", r.Code, r.Elapsed, r.Stdout, r.Stderr)
			if !hydraKillCode(r.Code) || resultLine(t, r) != "result: endofjob np=3 sum=6" ||
				!strings.Contains(r.Stderr, "injected stop at "+ph+"\n") || !strings.Contains(r.Stderr, "(PMI rank 1) killed by signal 9") {
				t.Fatalf("want the result, rank 1 stopped at %s and killed, exit 137: %s", ph, show)
			}
			if strings.Contains(r.Stdout, "rank 1: finalized") {
				t.Fatalf("rank 1 went on after its stop: %s", show)
			}
			if ph != "finalize" && !strings.Contains(r.Stderr, "(PMI rank 1) stopped for over 2s: killing it as hung") {
				t.Fatalf("the guard did not kill rank 1 as hung: %s", show)
			}
			t.Logf("exit %d after %v", r.Code, r.Elapsed.Round(time.Millisecond))
		})
	}
}
