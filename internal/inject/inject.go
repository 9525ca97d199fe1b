// Package inject is ftmpi's fault-injection spec language, shared by the
// launcher (ftmpirun --inject/--chaos, which signals ranks through its
// agents) and by ranks that inject faults into themselves (Self, for jobs
// started by another launcher, with the specs in FTMPI_INJECT).
//
// Grammar (one string may hold several specs separated by ';'; spaces
// around items are ignored, empty items too):
//
//	specs  = spec { ";" spec }
//	spec   = "kill:" "rank=" R "," "at=" DURATION      SIGKILL rank R at time DURATION
//	       | "stop:" "rank=" R "," "at=" DURATION      SIGSTOP rank R (a hang: only a heartbeat detector sees it)
//	       | "chaos:" "seed=" S "," "mttf=" DURATION "," "max=" K [ "," "spare=" LIST ]
//	LIST   = "none" | item { "," item }                 item = RANK | RANK "-" RANK
//
// Keys may come in any order within a spec; every key except spare is
// required. DURATION is a Go duration ("300ms", "1.5s"), never negative.
// Times are measured from time 0 of whoever executes the plan: for
// ftmpirun the moment every rank has been started, for Self the call.
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
package inject

import (
	"fmt"
	"math/rand/v2"
	"os"
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
	Kill  Kind = iota + 1 // SIGKILL one rank at a given time
	Stop                  // SIGSTOP one rank at a given time
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

// DefaultSpare is the spare list of a chaos spec without spare=.
var DefaultSpare = []int{0}

// Spec is one parsed fault-injection spec.
type Spec struct {
	Kind Kind

	// Kill and Stop.
	Rank int
	At   time.Duration

	// Chaos.
	Seed  uint64
	MTTF  time.Duration
	Max   int
	Spare []int // sorted, without duplicates; nil: no rank is spared
}

// Specs is a list of specs, as given in one string or several flags.
type Specs []Spec

// Event is one scheduled injection: send Signal to Rank at time At.
type Event struct {
	At     time.Duration
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
	return fmt.Sprintf("%s:rank=%d,at=%v", e.Verb(), e.Rank, e.At)
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
		sp.Kind, keys = Kill, []string{"rank", "at"}
	case "stop":
		sp.Kind, keys = Stop, []string{"rank", "at"}
	case "chaos":
		sp.Kind, keys = Chaos, []string{"seed", "mttf", "max", "spare"}
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
		if _, ok := vals[k]; !ok && k != "spare" {
			return bad("", "missing %s= (e.g. %s)", k, example(sp.Kind))
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
			d, err := time.ParseDuration(v)
			if err != nil {
				return bad(part, "at must be a duration such as 500ms or 2s")
			}
			if d < 0 {
				return bad(part, "at must not be negative")
			}
			sp.At = d
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
			sp.Spare = slices.Clone(DefaultSpare)
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
		return fmt.Sprintf("%v:rank=%d,at=%v", s.Kind, s.Rank, s.At)
	case Chaos:
		out := fmt.Sprintf("chaos:seed=%d,mttf=%v,max=%d", s.Seed, s.MTTF, s.Max)
		if !slices.Equal(s.Spare, DefaultSpare) {
			out += ",spare=" + formatList(s.Spare)
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

// Plan returns the schedule of the specs for a job of n ranks, sorted by
// time (ties keep the order of the specs). It is a pure function of its
// arguments. Events naming ranks outside 0..n-1 are dropped. Several chaos
// specs are drawn independently; an explicit kill and a chaos kill may hit
// the same rank (the executor skips events for ranks already gone).
func Plan(specs Specs, n int) []Event {
	var evs []Event
	for _, s := range specs {
		switch s.Kind {
		case Kill, Stop:
			if s.Rank < 0 || s.Rank >= n {
				continue
			}
			sig := syscall.SIGKILL
			if s.Kind == Stop {
				sig = syscall.SIGSTOP
			}
			evs = append(evs, Event{At: s.At, Rank: s.Rank, Signal: sig})
		case Chaos:
			evs = append(evs, chaosPlan(s, n)...)
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At < evs[j].At })
	return evs
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
	var t time.Duration
	for k := 0; k < s.Max && len(eligible) > 0; k++ {
		t += time.Duration(rng.ExpFloat64() * float64(s.MTTF))
		i := rng.IntN(len(eligible))
		evs = append(evs, Event{At: t, Rank: eligible[i], Signal: syscall.SIGKILL})
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
// (ftmpirun injects faults itself and does not pass FTMPI_INJECT to its
// ranks.)
//
// stop cancels the events not yet executed and returns once the timer
// goroutine has ended; it may be called more than once. A malformed spec
// gives a *ParseError and a no-op stop.
func Self(rank, size int, specs string) (stop func(), err error) {
	ss, err := Parse(specs)
	if err != nil {
		return func() {}, err
	}
	var mine []Event
	for _, ev := range Plan(ss, size) {
		if ev.Rank == rank {
			mine = append(mine, ev)
		}
	}
	if len(mine) == 0 {
		return func() {}, nil
	}
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for _, ev := range mine {
			timer.Reset(time.Until(start.Add(ev.At)))
			select {
			case <-done:
				return
			case <-timer.C:
			}
			_ = syscall.Kill(os.Getpid(), ev.Signal)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}, nil
}
