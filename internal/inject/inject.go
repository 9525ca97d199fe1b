// Package inject is ftmpi's fault-injection spec language, shared by the
// launcher (ftmpirun --inject/--chaos, which signals ranks through its
// agents) and by ranks that inject faults into themselves (Self, for jobs
// started by another launcher, with the specs in FTMPI_INJECT).
//
// Grammar (one string may hold several specs separated by ';'; spaces
// around items are ignored, empty items too):
//
//	specs  = spec { ";" spec }
//	spec   = "kill:" "rank=" R "," when                SIGKILL rank R
//	       | "stop:" "rank=" R "," when                SIGSTOP rank R (a hang: only a heartbeat detector sees it)
//	       | "chaos:" "seed=" S "," "mttf=" DURATION "," "max=" K [ "," "spare=" LIST ] [ "," "stop=" F ] [ "," "from=" DURATION ]
//	when   = "at=" DURATION                            at time DURATION
//	       | "at=" PHASE                               when rank R reaches PHASE (below)
//	       | "on=" TEXT                                when a rank prints a line containing TEXT
//	LIST   = "none" | item { "," item }                 item = RANK | RANK "-" RANK
//
// Keys may come in any order within a spec; every key except spare is
// required, and a kill or stop takes exactly one of at= and on=. DURATION
// is a Go duration ("300ms", "1.5s"), never negative. Times are measured
// from time 0 of whoever executes the plan: for ftmpirun the moment every
// rank has been started, for Self the call.
//
// # Triggers: on=TEXT
//
// A fault tied to a wall-clock time lands at a different point of the
// program on a fast machine and on a loaded one: a test that kills at 900
// ms may find the job already finished. on=TEXT ties the fault to an event
// instead: it fires when any rank writes a line (stdout or stderr)
// containing TEXT, such as a progress line ("iteration 200") or a
// program's report of a recovery, so it lands at the same point of the
// program whatever the machine's speed. TEXT is everything after "on=" up
// to the next ',' or ';' with surrounding spaces removed; it cannot hold
// ',' or ';'. Each trigger fires at most once, at the first such line the
// executor sees after its time 0 (for ftmpirun with relaunches, in the
// first launch that prints it). Only ftmpirun executes triggers, since it
// reads every rank's output (see Watch); Self rejects them.
//
// # Phases: at=PHASE
//
// The end of a job has instants no output line marks and no clock can
// hit reliably, and a rank stopped or killed there is what decides
// whether the job ends (issue 27: a rank stopped after the others
// finalized hung the job). at=PHASE ties a kill or stop to one of them:
// the rank itself executes it, synchronously, when it reaches the phase,
// so the signal lands exactly there whatever the machine's speed. The
// phases (Phases), in the order a rank passes them:
//
//	reinit-return    MPI_Reinit's resilient function returned in an epoch no
//	                 failure ended: the rank is about to ask the launcher to leave
//	reinit-left      the launcher let it leave: MPI_Reinit is about to return
//	finalize         MPI_Finalize was called, nothing of it done yet (for a
//	                 program that calls it next: after its last MPI call)
//	finalize-fence   spares released: about to enter the finalize fence
//	                 (ftmpirun's, or the ranks' own without a head)
//	finalize-fenced  the fence completed (every process entered Finalize or
//	                 failed); connections still open
//	finalized        Finalize is done (connections closed): about to return
//
// Before the signal the rank writes "ftmpi: rank R (pid P): injected stop
// at PHASE" on its stderr. Each phase event fires at most once, in the
// first incarnation of the rank only (as Self: a respawned or spawned
// process does not replay the plan). ftmpirun hands the phase specs to
// its ranks (FTMPI_INJECT holds only those, see Specs.Phased) in the
// first launch of a --restart-on-failure run; a rank started by another
// launcher executes them from its FTMPI_INJECT like its timed ones. Under
// mpi.Run (ranks as goroutines) nothing is executed: a signal would hit
// the whole test process.
//
// chaos draws random SIGKILLs: inter-failure times are exponential with
// mean mttf, and each victim is drawn uniformly among the ranks that are
// neither spare nor already drawn, all from a PCG generator seeded by S.
// So a seed (with the same number of ranks) always replays the same
// schedule of (time, rank): at most K kills, each of a different rank.
// spare defaults to rank 0 — the rank that usually holds the master or
// prints the result, and the one whose exit code ftmpirun reports —
// so that random chaos keeps a job able to report; "spare=none" makes
// every rank eligible. Explicit kill/stop specs may target any rank,
// rank 0 included.
//
// stop=F (a fraction from 0 to 1, default 0) makes each chaos event a
// SIGSTOP instead of a SIGKILL with probability F, drawn from the same
// generator after the victim: a mix of crashes and hangs (a stopped rank
// is found by the heartbeat detector, not by a broken connection). With
// stop=0 nothing more is drawn, so the schedules of seeds recorded before
// stop= existed are unchanged. from=D (default 0) shifts the whole
// schedule by D: no chaos event comes before D. A rank stopped before
// every rank has finished Init hangs the job until --timeout (no rank
// heartbeats it yet, so nobody can suspect it); from= lets a chaos run
// with stops begin after start-up.
//
// The package parses specs, plans schedules and plays them on a timer
// (Play); it signals only its own process (Self, NewSelf) and must not
// signal another: the launcher does that, through its agents, with the
// events it is given.
package inject

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvVar is the environment variable holding specs for Self (ranks started
// by another launcher) and default injections for ftmpirun.
const EnvVar = "FTMPI_INJECT"

// Kind is the kind of a spec.
type Kind int

// Kinds of specs.
const (
	Kill  Kind = iota + 1 // SIGKILL one rank at a given time or event
	Stop                  // SIGSTOP one rank at a given time or event
	Chaos                 // random SIGKILLs
)

func (k Kind) String() string {
	switch k {
	case Kill:
		return "kill"
	case Stop:
		return "stop"
	case Chaos:
		return "chaos"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// defaultSpare is the spare list of a chaos spec without spare= (a
// function, not a package variable: no process-global mutable state).
func defaultSpare() []int { return []int{0} }

// Spec is one parsed fault-injection spec.
type Spec struct {
	Kind Kind

	// Kill and Stop: at time At, or when a line containing On is printed
	// (On is not empty), or when the rank reaches Phase (not empty).
	Rank  int
	At    time.Duration
	On    string
	Phase string

	// Chaos.
	Seed  uint64
	MTTF  time.Duration
	Max   int
	Spare []int         // sorted, without duplicates; nil: no rank is spared
	Stop  float64       // probability in [0, 1] that an event is a SIGSTOP rather than a SIGKILL
	From  time.Duration // no event before From
}

// Specs is a list of specs, as given in one string or several flags.
type Specs []Spec

// Event is one scheduled injection: send Signal to Rank at time At, or,
// if On is not empty, when a rank prints a line containing On, or, if
// Phase is not empty, when Rank reaches that phase.
type Event struct {
	At     time.Duration
	On     string
	Phase  string
	Rank   int
	Signal syscall.Signal // SIGKILL or SIGSTOP
}

// Verb is "kill" for SIGKILL and "stop" for SIGSTOP.
func (e Event) Verb() string {
	if e.Signal == syscall.SIGSTOP {
		return "stop"
	}
	return "kill"
}

func (e Event) String() string {
	return fmt.Sprintf("%s:rank=%d,%s", e.Verb(), e.Rank, when(e.At, e.On, e.Phase))
}

// When is "at T" for a timed event, `on "TEXT"` for a triggered one, "at
// PHASE" for one tied to a phase.
func (e Event) When() string {
	if e.On != "" {
		return fmt.Sprintf("on %q", e.On)
	}
	if e.Phase != "" {
		return "at " + e.Phase
	}
	return fmt.Sprintf("at %v", e.At)
}

// when is the at= or on= part of a kill or stop spec.
func when(at time.Duration, on, phase string) string {
	if on != "" {
		return "on=" + on
	}
	if phase != "" {
		return "at=" + phase
	}
	return fmt.Sprintf("at=%v", at)
}

// Phases of a rank (see the package comment), in the order it passes them.
const (
	PhaseReinitReturn   = "reinit-return"
	PhaseReinitLeft     = "reinit-left"
	PhaseFinalize       = "finalize"
	PhaseFinalizeFence  = "finalize-fence"
	PhaseFinalizeFenced = "finalize-fenced"
	PhaseFinalized      = "finalized"
)

// Phases lists the phase names at= accepts, in the order a rank passes
// them.
func Phases() []string {
	return []string{PhaseReinitReturn, PhaseReinitLeft, PhaseFinalize, PhaseFinalizeFence, PhaseFinalizeFenced, PhaseFinalized}
}

// ParseError is a malformed spec. Spec is the whole offending spec, Part
// the key=value (or other piece) that is wrong, if any.
type ParseError struct {
	Spec string
	Part string
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Part != "" {
		return fmt.Sprintf("bad fault-injection spec %q: %q: %s", e.Spec, e.Part, e.Msg)
	}
	return fmt.Sprintf("bad fault-injection spec %q: %s", e.Spec, e.Msg)
}

// Parse parses one string of specs separated by ';'. An empty string (or
// one holding only separators and spaces) gives no specs and no error.
func Parse(s string) (Specs, error) {
	var out Specs
	for _, item := range strings.Split(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		sp, err := parseOne(item)
		if err != nil {
			return nil, err
		}
		out = append(out, sp)
	}
	return out, nil
}

func parseOne(item string) (Spec, error) {
	bad := func(part, format string, args ...any) (Spec, error) {
		return Spec{}, &ParseError{Spec: item, Part: part, Msg: fmt.Sprintf(format, args...)}
	}
	kindStr, params, found := strings.Cut(item, ":")
	kindStr = strings.TrimSpace(kindStr)
	var sp Spec
	var keys []string
	switch kindStr {
	case "kill":
		sp.Kind, keys = Kill, []string{"rank", "at", "on"}
	case "stop":
		sp.Kind, keys = Stop, []string{"rank", "at", "on"}
	case "chaos":
		sp.Kind, keys = Chaos, []string{"seed", "mttf", "max", "spare", "stop", "from"}
	default:
		return bad(kindStr, "unknown kind: want kill, stop or chaos")
	}
	if !found {
		return bad("", "missing ':' after %q (e.g. %s)", kindStr, example(sp.Kind))
	}
	vals := make(map[string]string)
	var order []string
	last := ""
	for _, tok := range strings.Split(params, ",") {
		tok = strings.TrimSpace(tok)
		k, v, hasEq := strings.Cut(tok, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !hasEq {
			if last == "spare" && tok != "" {
				vals["spare"] += "," + tok // spare=0,1,2: the list continues
				continue
			}
			if tok == "" {
				return bad("", "empty parameter (stray ',')")
			}
			return bad(tok, "want key=value")
		}
		if !slices.Contains(keys, k) {
			return bad(tok, "unknown key %q for %s (want %s)", k, kindStr, strings.Join(keys, ", "))
		}
		if _, dup := vals[k]; dup {
			return bad(tok, "%s given twice", k)
		}
		if v == "" {
			return bad(tok, "empty value")
		}
		vals[k] = v
		order = append(order, k)
		last = k
	}
	for _, k := range keys {
		if _, ok := vals[k]; !ok && k != "spare" && k != "stop" && k != "from" && k != "at" && k != "on" {
			return bad("", "missing %s= (e.g. %s)", k, example(sp.Kind))
		}
	}
	if sp.Kind == Kill || sp.Kind == Stop {
		_, at := vals["at"]
		_, on := vals["on"]
		switch {
		case at && on:
			return bad("", "give at= or on=, not both")
		case !at && !on:
			return bad("", "missing at= or on= (e.g. %s or %s:rank=1,on=step 10)", example(sp.Kind), sp.Kind)
		}
	}
	for _, k := range order {
		v := vals[k]
		part := k + "=" + v
		switch k {
		case "rank":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad(part, "rank must be a non-negative integer")
			}
			sp.Rank = n
		case "at":
			if slices.Contains(Phases(), v) {
				sp.Phase = v
				break
			}
			d, err := time.ParseDuration(v)
			if err != nil {
				return bad(part, "at must be a duration such as 500ms or 2s, or a phase: %s", strings.Join(Phases(), ", "))
			}
			if d < 0 {
				return bad(part, "at must not be negative")
			}
			sp.At = d
		case "on":
			sp.On = v
		case "seed":
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return bad(part, "seed must be a non-negative integer below 2^64")
			}
			sp.Seed = n
		case "mttf":
			d, err := time.ParseDuration(v)
			if err != nil {
				return bad(part, "mttf must be a duration such as 500ms or 2s")
			}
			if d <= 0 {
				return bad(part, "mttf must be positive")
			}
			sp.MTTF = d
		case "max":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return bad(part, "max must be a non-negative integer")
			}
			sp.Max = n
		case "from":
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return bad(part, "from must be a non-negative duration such as 1s")
			}
			sp.From = d
		case "stop":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || !(f >= 0 && f <= 1) {
				return bad(part, "stop must be a fraction from 0 to 1 (the share of SIGSTOPs)")
			}
			sp.Stop = f
		case "spare":
			list, err := parseList(v)
			if err != nil {
				return bad(part, "%v", err)
			}
			sp.Spare = list
		}
	}
	if sp.Kind == Chaos {
		if _, ok := vals["spare"]; !ok {
			sp.Spare = defaultSpare()
		}
	}
	return sp, nil
}

func example(k Kind) string {
	if k == Chaos {
		return "chaos:seed=1,mttf=2s,max=3"
	}
	return k.String() + ":rank=1,at=500ms"
}

// parseList parses "none" or "0,2,5-7" into a sorted list without duplicates.
func parseList(v string) ([]int, error) {
	if v == "none" {
		return nil, nil
	}
	const want = `spare must be "none" or a list of ranks and ranges such as 0,3-5`
	set := make(map[int]bool)
	for _, item := range strings.Split(v, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%s", want)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%s", want)
			}
			if b-a > 1<<20 {
				return nil, fmt.Errorf("spare range %s is too large", item)
			}
		}
		for r := a; r <= b; r++ {
			set[r] = true
		}
	}
	list := make([]int, 0, len(set))
	for r := range set {
		list = append(list, r)
	}
	sort.Ints(list)
	return list, nil
}

// formatList is the inverse of parseList (consecutive ranks become ranges).
func formatList(list []int) string {
	if len(list) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(list[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(list[j]))
		}
		i = j + 1
	}
	return b.String()
}

// String formats the spec so that Parse gives it back.
func (s Spec) String() string {
	switch s.Kind {
	case Kill, Stop:
		return fmt.Sprintf("%v:rank=%d,%s", s.Kind, s.Rank, when(s.At, s.On, s.Phase))
	case Chaos:
		out := fmt.Sprintf("chaos:seed=%d,mttf=%v,max=%d", s.Seed, s.MTTF, s.Max)
		if !slices.Equal(s.Spare, defaultSpare()) {
			out += ",spare=" + formatList(s.Spare)
		}
		if s.Stop != 0 {
			out += ",stop=" + strconv.FormatFloat(s.Stop, 'g', -1, 64)
		}
		if s.From != 0 {
			out += fmt.Sprintf(",from=%v", s.From)
		}
		return out
	}
	return fmt.Sprintf("invalid spec kind %d", int(s.Kind))
}

// String joins the specs with ';'.
func (ss Specs) String() string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.String()
	}
	return strings.Join(parts, ";")
}

// Phased returns the kill and stop specs tied to a phase (at=PHASE): the
// part of a job's specs that only its ranks can execute, which ftmpirun
// hands to them in FTMPI_INJECT.
func (ss Specs) Phased() Specs {
	var out Specs
	for _, s := range ss {
		if (s.Kind == Kill || s.Kind == Stop) && s.Phase != "" {
			out = append(out, s)
		}
	}
	return out
}

// Validate checks the specs against a job of n ranks: kill and stop must
// name an existing rank. (Spare ranks beyond n are allowed and ignored.)
func (ss Specs) Validate(n int) error {
	for _, s := range ss {
		if (s.Kind == Kill || s.Kind == Stop) && s.Rank >= n {
			return fmt.Errorf("fault-injection spec %q: rank %d does not exist in a job of %d ranks", s.String(), s.Rank, n)
		}
	}
	return nil
}

// chaosStream is the second PCG word; it only has to be fixed forever.
const chaosStream = 0x66746d7069636861 // "ftmpicha"

// Plan returns the timed schedule of the specs for a job of n ranks,
// sorted by time (ties keep the order of the specs); the triggered events
// (on=) are Watch's, those tied to a phase (at=PHASE) the ranks' own
// (NewSelf). It is a pure function of its arguments. Events naming
// ranks outside 0..n-1 are dropped. Several chaos specs are drawn
// independently; an explicit kill and a chaos kill may hit the same rank
// (the executor skips events for ranks already gone).
func Plan(specs Specs, n int) []Event {
	var evs []Event
	for _, s := range specs {
		switch s.Kind {
		case Kill, Stop:
			if ev, ok := s.event(n); ok && ev.On == "" && ev.Phase == "" {
				evs = append(evs, ev)
			}
		case Chaos:
			evs = append(evs, chaosPlan(s, n)...)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At < evs[j].At })
	return evs
}

// event is the event of a kill or stop spec; ok is false if its rank is
// not in 0..n-1.
func (s Spec) event(n int) (ev Event, ok bool) {
	if s.Rank < 0 || s.Rank >= n {
		return Event{}, false
	}
	sig := syscall.SIGKILL
	if s.Kind == Stop {
		sig = syscall.SIGSTOP
	}
	return Event{At: s.At, On: s.On, Phase: s.Phase, Rank: s.Rank, Signal: sig}, true
}

// Watch holds the triggered events (on=TEXT) of a job's specs that have
// not fired yet. The executor feeds it every line a rank prints; Line
// returns the events that line fires. A Watch is a pure state machine (no
// I/O, no clock) and is not safe for concurrent use; the zero Watch, and a
// nil one, holds nothing.
type Watch struct {
	pending []Event
}

// NewWatch returns the watch of the triggered events of specs in a job of
// n ranks (events naming ranks outside 0..n-1 are dropped), or nil if
// there are none.
func NewWatch(specs Specs, n int) *Watch {
	var w Watch
	for _, s := range specs {
		if s.Kind == Kill || s.Kind == Stop {
			if ev, ok := s.event(n); ok && ev.On != "" {
				w.pending = append(w.pending, ev)
			}
		}
	}
	if len(w.pending) == 0 {
		return nil
	}
	return &w
}

// Line returns, in the order of the specs, the pending events whose text
// line contains, and forgets them: each fires at most once.
func (w *Watch) Line(line []byte) []Event {
	if w == nil {
		return nil
	}
	var fired []Event
	keep := w.pending[:0]
	for _, ev := range w.pending {
		if bytes.Contains(line, []byte(ev.On)) {
			fired = append(fired, ev)
		} else {
			keep = append(keep, ev)
		}
	}
	clear(w.pending[len(keep):])
	w.pending = keep
	return fired
}

// Pending returns the events that have not fired yet, in the order of the
// specs.
func (w *Watch) Pending() []Event {
	if w == nil {
		return nil
	}
	return slices.Clone(w.pending)
}

func chaosPlan(s Spec, n int) []Event {
	var eligible []int
	for r := 0; r < n; r++ {
		if !slices.Contains(s.Spare, r) {
			eligible = append(eligible, r)
		}
	}
	rng := rand.New(rand.NewPCG(s.Seed, chaosStream))
	var evs []Event
	t := s.From
	for k := 0; k < s.Max && len(eligible) > 0; k++ {
		t += time.Duration(rng.ExpFloat64() * float64(s.MTTF))
		i := rng.IntN(len(eligible))
		sig := syscall.SIGKILL
		if s.Stop > 0 && rng.Float64() < s.Stop {
			sig = syscall.SIGSTOP
		}
		evs = append(evs, Event{At: t, Rank: eligible[i], Signal: sig})
		eligible = slices.Delete(eligible, i, i+1)
	}
	return evs
}

// Self executes, in the calling process, the events of the plan of specs
// (a string in the grammar above: mpi.Config.FaultInjection, which EnvVar
// sets) that target rank in a job of size ranks: at each event's time,
// measured from the call, the process sends SIGKILL or SIGSTOP to itself.
// It is meant for ranks started by a launcher other than ftmpirun (srun,
// hydra): every rank computes the same plan and executes its own share.
// It is NewSelf without the phases (at=PHASE), which need the program to
// report them (Injector.Phase).
//
// stop cancels the events not yet executed and returns once the timer
// goroutine has ended; it may be called more than once. A malformed spec
// gives a *ParseError and a no-op stop; so does a trigger (on=), which
// only ftmpirun can execute (a process does not read its own output).
func Self(rank, size int, specs string) (stop func(), err error) {
	in, err := NewSelf(rank, size, specs)
	return in.Stop, err
}

// Injector executes a rank's own share of a plan (NewSelf): the timed
// events from a goroutine, the phase events when the program reaches
// their phase (Phase). A nil *Injector executes nothing.
type Injector struct {
	stop   func()
	rank   int
	mu     sync.Mutex
	phased []Event // not fired yet, in the order of the specs
	fire   func(Event)
	log    io.Writer
}

// NewSelf is Self with the phases: it starts executing the timed events
// of specs that target rank in a job of size ranks, and keeps its phase
// events (at=PHASE) for Phase. A malformed spec, or a trigger (on=), gives
// a *ParseError and an Injector that executes nothing. (ftmpirun injects
// timed and triggered faults itself and hands its ranks only the phase
// specs.)
func NewSelf(rank, size int, specs string) (*Injector, error) {
	ss, err := Parse(specs)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		if s.On != "" {
			return nil, &ParseError{Spec: s.String(), Part: "on=" + s.On,
				Msg: "a trigger needs ftmpirun, which reads the ranks' output; use at= here"}
		}
	}
	var timed []Event
	for _, ev := range Plan(ss, size) {
		if ev.Rank == rank {
			timed = append(timed, ev)
		}
	}
	in := newInjector(rank, ss, size, func(ev Event) { signalThread(ev.Signal) }, os.Stderr)
	in.stop = Play(timed, func(ev Event) bool {
		_ = syscall.Kill(os.Getpid(), ev.Signal)
		return true
	})
	return in, nil
}

// newInjector holds the phase events of ss for rank, executed by fire
// after a line on log.
func newInjector(rank int, ss Specs, size int, fire func(Event), log io.Writer) *Injector {
	in := &Injector{stop: func() {}, rank: rank, fire: fire, log: log}
	for _, s := range ss.Phased() {
		if ev, ok := s.event(size); ok && ev.Rank == rank {
			in.phased = append(in.phased, ev)
		}
	}
	return in
}

// Phase executes, in the calling goroutine, the events tied to phase that
// have not fired yet, in the order of the specs: each writes its line on
// stderr, then the calling thread sends its signal to itself, which
// takes effect before the call returns (a stop returns only if the
// process is continued; a kill does not return). Each fires
// at most once. Stop does not cancel them: the phases after Finalize come
// after the injection was stopped.
func (in *Injector) Phase(phase string) {
	if in == nil {
		return
	}
	in.mu.Lock()
	var now []Event
	keep := in.phased[:0]
	for _, ev := range in.phased {
		if ev.Phase == phase {
			now = append(now, ev)
		} else {
			keep = append(keep, ev)
		}
	}
	clear(in.phased[len(keep):])
	in.phased = keep
	in.mu.Unlock()
	for _, ev := range now {
		fmt.Fprintf(in.log, "ftmpi: rank %d (pid %d): injected %s at %s\n", in.rank, os.Getpid(), ev.Verb(), phase)
		in.fire(ev)
	}
}

// signalThread sends sig to the calling thread (tgkill): the kernel acts
// on it as the system call returns, so the caller does not run one more
// instruction after a stop (the whole process stops with it) or a kill.
// A signal to the process (kill) is taken by whichever thread the kernel
// wakes, often the main one, and the caller ran on meanwhile: a "stop at
// finalize" was seen to reach the launcher's fence first.
func signalThread(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
}

// Stop cancels the timed events not yet executed and returns once the
// timer goroutine has ended; it may be called more than once.
func (in *Injector) Stop() {
	if in != nil {
		in.stop()
	}
}

// Play fires the events of plan, in order, from a goroutine: each at its
// time (Event.At) measured from the call. fire returning false ends the
// play. stop cancels the events not yet fired and returns once the
// goroutine has ended; it may be called more than once. Both the launcher
// (its head) and Self play their plans with it.
func Play(plan []Event, fire func(Event) bool) (stop func()) {
	if len(plan) == 0 {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for _, ev := range plan {
			timer.Reset(time.Until(start.Add(ev.At)))
			select {
			case <-done:
				return
			case <-timer.C:
			}
			if !fire(ev) {
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
