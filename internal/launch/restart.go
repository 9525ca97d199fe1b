package launch

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
)

// Checkpoint-on-Failure (seed 002 chapter 4): with Config.RestartOnFailure
// = N > 0 (ftmpirun --restart-on-failure=N), a failed rank is reported to
// the survivors as with --on-failure continue (unless --on-failure abort
// was asked for explicitly, which kills them); they are expected to
// checkpoint and exit. Once every rank has exited, if a rank had failed and
// fewer than N relaunches were done, the whole job is started again: a new
// job id, a new job directory, new ranks, with boot.EnvRestart set to the
// number of relaunches so far (mpi's World.Restarted). The application's
// own checkpoint directory is its business and survives the relaunch.
//
// Fault injection (Config.Inject) spans the launches: the plan's clock runs
// only while a launch runs (time 0 is when every rank of the first launch
// has been started; it stops when a launch's ranks are all gone and goes
// on once every rank of the next launch has been started), and each event
// belongs to the launch during which its time falls. So
// "--inject kill:rank=2,at=500ms" kills once, not in every launch, and
// "--inject 'kill:rank=2,at=300ms;kill:rank=1,at=600ms'" may hit the
// first launch and its relaunch.
//
// No relaunch happens after an Abort that no failure preceded, a start-up
// error, --timeout (which bounds all launches together) or SIGINT/SIGTERM.
// When the relaunches are used up, ftmpirun ends with the exit code of the
// last launch's failure and says so. The failure is the first rank of that
// launch reported dead by a signal (128+S), else the first rank reported
// failed (its exit status, 1 if that was 0): survivors that exit without
// finalizing after their checkpoint are failures too, and may be reaped
// before the rank whose death they noticed.

// launchState carries what one launch (runOnce) learned to the relaunch
// loop, and the relaunch's timing to the launch that follows it.
type launchState struct {
	restart int    // relaunches before this launch (boot.EnvRestart)
	path    string // the resolved program, once known

	// Set by the relaunch loop for the launch that follows a failure.
	prevFailure time.Time // when the previous launch's first failure was reported
	prevEnd     time.Time // when its last rank was gone
	max         int
	timeout     time.Duration  // --timeout over all launches (0: none)
	carry       []inject.Event // fault-injection events no earlier launch reached (restart > 0)
	triggers    *triggers      // fault-injection triggers (on=) of the whole run, nil: none yet

	planStart time.Time      // the plan's time 0 in this launch
	rest      []inject.Event // events this launch did not reach, times shifted for the next
	elapsed   time.Duration  // the plan's clock when this launch started (earlier launches' time)
	ran       time.Duration  // how long this launch ran on the plan's clock
	unfired   []inject.Event // events this launch did not reach, at their times in the plan

	// Filled in by the launch.
	mu          sync.Mutex
	failureAt   time.Time    // when the first failure was reported
	failure     *policy.Exit // the failure of this launch (see above)
	failureCode int
	relaunch    bool  // a failure ended this launch and nothing forbids a relaunch
	lostHosts   []int // indexes (in Config.Hosts) of the hosts this launch lost
}

// timedOut is the --timeout to report when this launch is killed by it: the
// one over all launches.
func (st *launchState) timedOut(launch time.Duration) time.Duration {
	if st.timeout > 0 {
		return st.timeout
	}
	return launch
}

// plan is the fault-injection schedule of this launch, given the whole
// run's.
func (st *launchState) plan(full []inject.Event) []inject.Event {
	if st.restart == 0 {
		st.rest = full
		return full
	}
	st.rest = st.carry
	return st.carry
}

// watch is the run's fault-injection triggers (on=TEXT): made at the first
// launch, carried to the next, so that each fires at most once over all
// launches. nil if there are none.
func (st *launchState) watch(specs inject.Specs, n int) *triggers {
	if st.restart == 0 {
		if w := inject.NewWatch(specs, n); w != nil {
			st.triggers = &triggers{w: w}
		}
	} else if st.triggers != nil {
		st.triggers.mu.Lock()
		st.triggers.armed = false // until this launch's ranks are started
		st.triggers.mu.Unlock()
	}
	return st.triggers
}

// started is called by runOnce once every rank of the launch has been
// started (the fault-injection plan's time 0): after a relaunch it prints
// how long the relaunch took.
func (st *launchState) started(out *output, verbose bool, n int) {
	now := time.Now()
	st.planStart = now
	if st.restart == 0 || st.prevFailure.IsZero() {
		return
	}
	out.logf("relaunched the job (relaunch %d of %d): every rank had exited %v after the failure, %d new ranks started %v after it",
		st.restart, st.max, st.prevEnd.Sub(st.prevFailure).Round(time.Microsecond), n, now.Sub(st.prevFailure).Round(time.Microsecond))
	if verbose {
		out.logf("relaunch %d: %v from the end of the previous job to the new ranks' start", st.restart, now.Sub(st.prevEnd).Round(time.Microsecond))
	}
}

// finished is called by runOnce once every rank is gone, with the head of
// the launch and the resolved program.
func (st *launchState) finished(h *head, path string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.path = path
	if !st.planStart.IsZero() {
		ran := time.Since(st.planStart)
		st.ran = ran
		var rest []inject.Event
		st.unfired = nil
		for _, ev := range st.rest {
			if ev.At > ran {
				orig := ev
				orig.At += st.elapsed
				st.unfired = append(st.unfired, orig)
				ev.At -= ran
				rest = append(rest, ev)
			}
		}
		st.rest = rest
	}
	h.mu.Lock()
	st.lostHosts = h.m.LostHosts()
	h.mu.Unlock()
	o := h.outcome()
	if !o.Failed {
		return
	}
	st.failure = o.Failure
	st.failureCode = o.Code
	st.relaunch = o.Relaunch
	st.failureAt = h.mark(policy.MarkFailure)
}

// Run launches the job described by cfg, waits for it and returns
// ftmpirun's exit code (see the package comment). With
// cfg.RestartOnFailure it relaunches the job after failures (see above).
// It leaves no process, goroutine or temporary file behind.
func Run(cfg Config) int {
	if cfg.Stdout == nil {
		cfg.Stdout = os.Stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	out := &output{stdout: cfg.Stdout, stderr: cfg.Stderr, tag: cfg.TagOutput}
	if cfg.Trace != "" && cfg.trc == nil {
		done, err := startTrace(&cfg)
		if err != nil {
			out.logf("--trace: %v", err)
			return 1
		}
		defer done(out)
	}
	if cfg.RestartOnFailure <= 0 {
		st := &launchState{}
		code := runOnce(cfg, st)
		st.reportUnfired(out)
		return code
	}
	if err := cfg.validate(); err != nil {
		usageError(cfg.Stderr, err)
		return ExitUsage
	}
	var deadline time.Time
	if cfg.Timeout > 0 {
		deadline = time.Now().Add(cfg.Timeout)
	}
	total := cfg.Timeout
	st := &launchState{max: cfg.RestartOnFailure, timeout: total}
	for {
		code := runOnce(cfg, st)
		end := time.Now()
		if !st.relaunch || st.restart >= cfg.RestartOnFailure {
			st.reportUnfired(out)
		}
		if !st.relaunch {
			return code
		}
		how := "a rank failed"
		if st.failure != nil {
			how = fmt.Sprintf("rank %d %s", st.failure.Rank, st.failure)
		}
		if st.restart >= cfg.RestartOnFailure {
			out.logf("the job failed (%s) after %d relaunches (--restart-on-failure=%d); giving up with exit code %d",
				how, st.restart, cfg.RestartOnFailure, st.failureCode)
			return st.failureCode
		}
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				out.logf("job timed out after %v; not relaunching it", total)
				return ExitTimeout
			}
			cfg.Timeout = left
		}
		if cfg.Verbose {
			out.logf("the job failed (%s); every rank exited %v after the failure; relaunching it (%d of %d)",
				how, end.Sub(st.failureAt).Round(time.Microsecond), st.restart+1, cfg.RestartOnFailure)
		}
		if st.path != "" {
			cfg.Program = st.path // resolved (and built) once
		}
		if len(st.lostHosts) > 0 {
			// As SCR's relaunch loop within an allocation: without the
			// hosts that were lost, on the slots that are left (more ranks
			// than slots then is no error).
			lost := map[int]bool{}
			var names []string
			for _, i := range st.lostHosts {
				lost[i] = true
				names = append(names, cfg.Hosts[i].Name)
			}
			var left []HostSlots
			for i, hs := range cfg.Hosts {
				if !lost[i] {
					left = append(left, hs)
				}
			}
			if len(left) == 0 {
				out.logf("every host is lost; not relaunching the job")
				return st.failureCode
			}
			cfg.Hosts, cfg.Oversubscribe = left, true
			out.logf("relaunching without the lost host(s) %s", strings.Join(names, ","))
		}
		st = &launchState{max: cfg.RestartOnFailure, restart: st.restart + 1, timeout: total,
			prevFailure: st.failureAt, prevEnd: end, carry: st.rest, triggers: st.triggers, elapsed: st.elapsed + st.ran}
	}
}

// reportUnfired says, in one line, which injected faults never fired
// because the job ended first: timed events whose time the plan's clock
// never reached, and triggers (on=TEXT) no rank printed. Run calls it once
// the last launch is over.
func (st *launchState) reportUnfired(out *output) {
	if st.planStart.IsZero() {
		return // no rank was started: nothing could fire
	}
	var never []string
	for _, ev := range st.unfired {
		never = append(never, ev.String())
	}
	if tr := st.triggers; tr != nil {
		tr.mu.Lock()
		for _, ev := range tr.w.Pending() {
			never = append(never, ev.String())
		}
		tr.mu.Unlock()
	}
	if len(never) == 0 {
		return
	}
	out.logf("fault injection: %s never fired: the job ended first (after %v)",
		strings.Join(never, "; "), (st.elapsed + st.ran).Round(time.Millisecond))
}
