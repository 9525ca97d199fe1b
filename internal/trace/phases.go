package trace

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// The recovery phases of one failure, in order. For a failure of process
// P killed at K:
//
//	kill      the launcher sent the signal (an injected kill), else saw P end
//	          (its exit), else (no launcher events) the first detection
//	detected  the first process to learn of P's failure learnt it
//	told      each survivor learnt it (the launcher's notice, a failure
//	          notice, a broken connection, an operation's error)
//	revoked   each survivor's first revocation (sent or received) after K
//	agreed    the end of each survivor's first agreement after its
//	          revocation (without one, after it was told; a Shrink's
//	          agreement counts)
//	repaired  the end of its last repair operation (shrink, spawn, merge,
//	          replace, communicator creation, Reinit rollback, checkpoint
//	          read) before it resumed
//	resumed   the end of its first MPI call after the repair that is not
//	          itself part of a repair (point-to-point, a collective)
//
// A survivor's recovery starts at the first of told and revoked: one
// whose blocked call ended with ErrRevoked may be told which process
// failed only later, even after its repair.
//
// A phase a survivor never went through (no revocation under Reinit, no
// MPI call spans in the trace) is absent at it.
var PhaseNames = []string{"kill", "detected", "told", "revoked", "agreed", "repaired", "resumed"}

// RankPhases is one survivor's phases of one failure: At[name] is the
// time (µs, the trace's clock) of each phase it went through.
type RankPhases struct {
	Pid   int
	Label string
	At    map[string]int64
}

// Failure is the recovery of one failed process.
type Failure struct {
	Proc       int    // the failed process
	Kill       int64  // µs
	KillSource string // "injected kill", "exit", "first detection"
	Detected   int64
	DetectedBy int
	Ranks      []RankPhases // the survivors, by pid
}

// Stat is a phase's figure over the survivors, in ms after the kill.
type Stat struct {
	N           int // survivors that went through the phase
	Median, Max float64
}

// Stats returns, for every phase after kill, its median and maximum over
// the survivors (ms after the kill); detected is one figure.
func (f Failure) Stats() map[string]Stat {
	out := map[string]Stat{}
	for _, ph := range PhaseNames[1:] {
		var xs []float64
		if ph == "detected" {
			if f.Detected > 0 {
				xs = append(xs, ms(f.Detected-f.Kill))
			}
		} else {
			for _, r := range f.Ranks {
				if t, ok := r.At[ph]; ok {
					xs = append(xs, ms(t-f.Kill))
				}
			}
		}
		if len(xs) == 0 {
			continue
		}
		slices.Sort(xs)
		med := xs[len(xs)/2]
		if len(xs)%2 == 0 {
			med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
		}
		out[ph] = Stat{N: len(xs), Median: med, Max: xs[len(xs)-1]}
	}
	return out
}

func ms(us int64) float64 { return float64(us) / 1000 }

// argInt reads an integer argument (JSON numbers decode as float64).
func argInt(a map[string]any, k string) (int, bool) {
	switch v := a[k].(type) {
	case float64:
		return int(v), true
	case int:
		return v, true
	case int64:
		return int(v), true
	case int32:
		return int(v), true
	}
	return 0, false
}

// repairCalls are MPI calls that belong to a repair, not to the resumed
// computation.
var repairCalls = map[string]bool{
	"MPI_Comm_split": true, "MPI_Comm_split_type": true, "MPI_Comm_dup": true, "MPI_Comm_idup": true,
	"MPI_Comm_create": true, "MPI_Comm_create_group": true, "MPI_Intercomm_merge": true,
	"MPI_Intercomm_create": true, "MPI_Comm_spawn": true, "MPI_Comm_spawn_multiple": true, "MPI_Comm_free": true,
	"MPIX_Comm_shrink": true, "MPI_Comm_shrink": true, "MPIX_Comm_agree": true, "MPI_Comm_agree": true,
	"MPIX_Comm_revoke": true, "MPI_Comm_revoke": true, "MPIX_Comm_replace": true, "MPI_Comm_accept": true,
	"MPI_Comm_connect": true, "MPIX_Comm_failure_ack": true, "MPIX_Comm_iagree": true, "MPIX_Comm_ishrink": true,
}

func isRepair(ev JEvent) bool {
	switch ev.Cat {
	case CatRepair:
		return ev.Ph == "X" || ev.Name == NameSpare
	case CatReinit:
		return true
	case CatCheckpoint:
		return ev.Name == NameCkptR
	case CatMPI:
		return repairCalls[ev.Name]
	}
	return false
}

func end(ev JEvent) int64 { return ev.TS + ev.Dur }

// Phases computes the recovery phases of every failure in f (a merged
// trace of a job: the launcher's events and every rank's).
func Phases(f *File) []Failure {
	byPid := map[int][]JEvent{}
	labels := map[int]string{}
	started := map[int]int64{}
	var launcher []JEvent
	for _, ev := range f.TraceEvents {
		if ev.Ph == "M" {
			if ev.Name == "process_name" {
				if s, ok := ev.Args["name"].(string); ok {
					labels[ev.Pid] = s
				}
				if t, ok := argInt(ev.Args, "start_us"); ok {
					started[ev.Pid] = int64(t)
				}
			}
			continue
		}
		if ev.Pid == LauncherPid {
			launcher = append(launcher, ev)
		} else {
			byPid[ev.Pid] = append(byPid[ev.Pid], ev)
		}
	}
	for p := range byPid {
		sort.SliceStable(byPid[p], func(i, j int) bool { return byPid[p][i].TS < byPid[p][j].TS })
	}
	sort.SliceStable(launcher, func(i, j int) bool { return launcher[i].TS < launcher[j].TS })

	// The failures: every process some rank learnt failed, with the
	// launcher's kill or exit of it.
	type key struct{ proc int }
	first := map[int]int64{}
	firstBy := map[int]int{}
	for pid, evs := range byPid {
		for _, ev := range evs {
			if ev.Cat != CatFailure || (ev.Name != NameKnown && ev.Name != NameDeclared) {
				continue
			}
			p, ok := argInt(ev.Args, "proc")
			if !ok {
				continue
			}
			if t, seen := first[p]; !seen || ev.TS < t || (ev.TS == t && pid < firstBy[p]) {
				first[p], firstBy[p] = ev.TS, pid
			}
		}
	}
	var out []Failure
	for p, det := range first {
		fl := Failure{Proc: p, Detected: det, DetectedBy: firstBy[p], Kill: det, KillSource: "first detection"}
		var exit int64
		for _, ev := range launcher {
			q, ok := argInt(ev.Args, "proc")
			if !ok || q != p || ev.TS > det {
				continue
			}
			switch ev.Name {
			case NameKill:
				fl.Kill, fl.KillSource = ev.TS, "injected kill"
			case NameExit:
				if exit == 0 {
					exit = ev.TS
				}
			}
		}
		// A kill a program recorded itself (ftmpi-bench's agreed instant
		// at which its victim SIGKILLs itself).
		for pid, evs := range byPid {
			for _, ev := range evs {
				if q, ok := argInt(ev.Args, "proc"); ok && q == p && ev.Cat == CatFailure && ev.Name == NameKill && ev.TS <= det && fl.KillSource != "injected kill" {
					fl.Kill, fl.KillSource = ev.TS, fmt.Sprintf("recorded by proc %d", pid)
				}
			}
		}
		if fl.KillSource == "first detection" && exit > 0 {
			fl.Kill, fl.KillSource = exit, "exit"
		}
		out = append(out, fl)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kill < out[j].Kill })
	for i := range out {
		fl := &out[i]
		limit := int64(math.MaxInt64)
		if i+1 < len(out) {
			limit = out[i+1].Kill
		}
		pids := make([]int, 0, len(byPid))
		for pid := range byPid {
			pids = append(pids, pid)
		}
		sort.Ints(pids)
		for _, pid := range pids {
			if pid == fl.Proc || started[pid] > fl.Kill {
				continue // the failed process; one started after the kill (a replacement)
			}
			rp := rankPhases(byPid[pid], fl.Proc, fl.Kill, limit)
			if rp == nil {
				continue
			}
			rp.Pid, rp.Label = pid, labels[pid]
			rp.At["kill"] = fl.Kill
			fl.Ranks = append(fl.Ranks, *rp)
		}
	}
	return out
}

// rankPhases is one process's phases of the failure of proc killed at
// kill, from its events (sorted by time) before limit; nil if it was not
// told of it.
func rankPhases(evs []JEvent, proc int, kill, limit int64) *RankPhases {
	at := map[string]int64{}
	for _, ev := range evs {
		if ev.Cat == CatFailure && ev.Name == NameKnown {
			if p, ok := argInt(ev.Args, "proc"); ok && p == proc {
				at["told"] = ev.TS
				break
			}
		}
	}
	told, ok := at["told"]
	if !ok {
		return nil
	}
	for _, ev := range evs {
		if ev.TS >= kill && ev.TS < limit && ev.Cat == CatRevoke {
			at["revoked"] = ev.TS
			break
		}
	}
	// Its recovery starts when it learnt of the failure in any way: told,
	// or a revocation (a survivor whose blocked call returned ErrRevoked
	// may get the notice naming the process later, even after its repair).
	start, after := told, told
	if rv, ok := at["revoked"]; ok {
		start, after = min(told, rv), rv
	}
	for _, ev := range evs {
		if ev.Cat == CatAgree && ev.Ph == "X" && end(ev) >= after && ev.TS < limit {
			at["agreed"] = end(ev)
			break
		}
	}
	var lastRepair int64
	for _, ev := range evs {
		if ev.TS < start || ev.TS >= limit {
			continue
		}
		if isRepair(ev) {
			if e := end(ev); e > lastRepair {
				lastRepair = e
			}
			continue
		}
		if ev.Cat == CatMPI && ev.Ph == "X" && lastRepair > 0 && ev.TS >= lastRepair {
			at["resumed"] = end(ev)
			break
		}
	}
	if lastRepair > 0 {
		at["repaired"] = lastRepair
	}
	return &RankPhases{At: at}
}

// FormatPhases writes the phases of every failure: per survivor, each
// phase in ms after the kill; then the median and maximum over survivors.
func FormatPhases(w io.Writer, fs []Failure) {
	if len(fs) == 0 {
		fmt.Fprintln(w, "no failure in the trace")
		return
	}
	for i, fl := range fs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "failure of proc %d: kill (%s) -> detected by proc %d after %.2f ms; %d survivors\n",
			fl.Proc, fl.KillSource, fl.DetectedBy, ms(fl.Detected-fl.Kill), len(fl.Ranks))
		fmt.Fprintf(w, "%-22s", "ms after the kill")
		for _, ph := range PhaseNames[2:] {
			fmt.Fprintf(w, " %9s", ph)
		}
		fmt.Fprintln(w)
		for _, r := range fl.Ranks {
			name := r.Label
			if name == "" {
				name = fmt.Sprintf("proc %d", r.Pid)
			}
			fmt.Fprintf(w, "%-22s", name)
			for _, ph := range PhaseNames[2:] {
				if t, ok := r.At[ph]; ok {
					fmt.Fprintf(w, " %9.2f", ms(t-fl.Kill))
				} else {
					fmt.Fprintf(w, " %9s", "-")
				}
			}
			fmt.Fprintln(w)
		}
		st := fl.Stats()
		for _, row := range []string{"median", "max"} {
			fmt.Fprintf(w, "%-22s", row)
			for _, ph := range PhaseNames[2:] {
				s, ok := st[ph]
				switch {
				case !ok:
					fmt.Fprintf(w, " %9s", "-")
				case row == "median":
					fmt.Fprintf(w, " %9.2f", s.Median)
				default:
					fmt.Fprintf(w, " %9.2f", s.Max)
				}
			}
			fmt.Fprintln(w)
		}
	}
}

// Ordered reports whether the failure's phases are in order: kill <=
// detected <= every survivor's told and revoked, and, per survivor,
// revoked (or, without one, told) <= agreed <= repaired <= resumed; it
// names the phases out of order.
func (f Failure) Ordered() error {
	if f.Detected < f.Kill {
		return fmt.Errorf("proc %d: detected %.3f ms before the kill", f.Proc, ms(f.Kill-f.Detected))
	}
	var bad []string
	for _, r := range f.Ranks {
		if t, ok := r.At["told"]; ok && t < f.Detected {
			bad = append(bad, fmt.Sprintf("%s: told before detected", r.Label))
		}
		prev, prevName := f.Detected, "detected"
		first := "told"
		if _, ok := r.At["revoked"]; ok {
			first = "revoked"
		}
		for _, ph := range []string{first, "agreed", "repaired", "resumed"} {
			t, ok := r.At[ph]
			if !ok {
				continue
			}
			if t < prev {
				bad = append(bad, fmt.Sprintf("%s: %s %.3f ms before %s", r.Label, ph, ms(prev-t), prevName))
			}
			prev, prevName = t, ph
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("proc %d: %s", f.Proc, strings.Join(bad, "; "))
	}
	return nil
}
