package dpm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// TestDPMDecisionSchedules runs the all-or-nothing decision of Accept and
// Connect (Vote, EncodeVerdict/DecodeVerdict, Combine, Decide, the
// functions the binding and Side.Verdict use) through thousands of seeded schedules of
// crashes: two groups of 1 to 4 processes, each process possibly crashing
// before any phase of the call (building the intercommunicator, the first
// agreement of its group, the root's sending and receiving of verdicts,
// the second agreement) or during an agreement (counted or not, the same
// for everyone: the agreement is uniform). The agreements are modelled by
// their guarantee (one result for every survivor of the group: the AND
// and union of the contributions), the roots' exchange by a perfect
// failure detector. Checked, for every schedule:
//
//   - the survivors of a group all decide alike (intercommunicator or the
//     same error class);
//   - a group that decides yes has the intercommunicator at every survivor;
//   - both groups decide alike, except in the documented window: the
//     failing group's root crashed after sending its group's yes to the
//     other root and before its own group's second agreement counted it;
//   - two surviving roots that fail report the same class (seed 002
//     A.2.3 (1)); without crashes both groups succeed.
//
// A failing schedule prints its seed.
func TestDPMDecisionSchedules(t *testing.T) {
	var stats simStats
	for seed := uint64(0); seed < 20000; seed++ {
		if err := dpmSchedule(seed, &stats); err != "" {
			t.Fatalf("seed %d: %s", seed, err)
		}
	}
	// The schedules must exercise every outcome, the window included.
	if stats.ok == 0 || stats.fail == 0 || stats.window == 0 || stats.mixedBuild == 0 {
		t.Fatalf("schedules did not cover the cases: %+v", stats)
	}
}

// Class codes of the simulation (MPI's are the binding's), and the
// binding's rule: the first of a precedence list that was seen.
const (
	codeProcFailed = 75
	codePort       = 43
	codeIntern     = 16
	codeOther      = 15
)

func pick(codes agree.Set) int {
	for _, c := range []int{codeProcFailed, codePort, codeIntern} {
		if codes.Has(c) {
			return c
		}
	}
	if codes.Empty() {
		return 0
	}
	return codeOther
}

type simStats struct{ ok, fail, window, mixedBuild int }

// Crash points: a process crashes before the phase (it does not do it),
// or during an agreement (counted or not).
const (
	simBuild = iota
	simA1
	simA1During
	simSend
	simRecv
	simA2
	simA2During
	simNever
)

type simProc struct {
	crash   int  // crash point; simNever: survives
	counted bool // crashed during an agreement: its contribution counted
	built   bool
}

func (p *simProc) aliveAt(phase int) bool { return p.crash > phase }

func dpmSchedule(seed uint64, stats *simStats) string {
	rng := rand.New(rand.NewPCG(seed, 0xd9a))
	var groups [2][]*simProc
	anyCrash := false
	for g := range groups {
		n := 1 + rng.IntN(4)
		for range n {
			p := &simProc{crash: simNever, counted: rng.IntN(2) == 0}
			if rng.IntN(4) == 0 {
				p.crash = rng.IntN(simNever)
				anyCrash = true
			}
			groups[g] = append(groups[g], p)
		}
	}
	// Building: without a crash before it ended, everyone succeeds; with
	// one (anywhere), each surviving process may or may not have failed
	// (a poisoned collective, the other root's death), ErrProcFailed.
	crashedEarly := false
	for _, gr := range groups {
		for _, p := range gr {
			if p.crash == simBuild {
				crashedEarly = true
			}
		}
	}
	for _, gr := range groups {
		for _, p := range gr {
			p.built = p.aliveAt(simBuild) && (!crashedEarly || rng.IntN(2) == 0)
		}
	}
	if crashedEarly {
		stats.mixedBuild++
	}

	// The first agreement of each group.
	var side [2]agree.Value
	for g, gr := range groups {
		v := agree.Value{Flags: ^uint64(0)}
		for _, p := range gr {
			if p.aliveAt(simA1) || (p.crash == simA1During && p.counted) {
				code := 0
				if !p.built {
					code = codeProcFailed
				}
				c := Vote(code)
				v = v.Combine(c)
			}
		}
		side[g] = v
	}
	// The roots (position 0) exchange verdicts through the wire format.
	var sent [2][]byte
	for g, gr := range groups {
		if gr[0].aliveAt(simSend) {
			sent[g] = EncodeVerdict(side[g])
		}
	}
	var verdict [2]agree.Value
	for g, gr := range groups {
		if !gr[0].aliveAt(simRecv) {
			continue
		}
		if b := sent[1-g]; b != nil {
			other, err := DecodeVerdict(b)
			if err != nil {
				return "a verdict did not decode: " + err.Error()
			}
			verdict[g] = Combine(side[g], &other, 0)
		} else {
			verdict[g] = Combine(side[g], nil, codeProcFailed) // the detector reports its death
		}
	}
	// The second agreement of each group, and the decisions.
	type outcome struct {
		ok  bool
		cls int
	}
	var dec [2]*outcome
	var window [2]bool
	for g, gr := range groups {
		v := agree.Value{Flags: ^uint64(0)}
		var contrib agree.Set
		for i, p := range gr {
			if p.aliveAt(simA2) || (p.crash == simA2During && p.counted) {
				contrib.Add(i)
				if i == 0 {
					v = v.Combine(verdict[g])
				} else {
					v = v.Combine(agree.Value{Flags: 1})
				}
			}
		}
		root := gr[0]
		window[g] = root.aliveAt(simSend) && !contrib.Has(0)
		for i, p := range gr {
			if !p.aliveAt(simA2During) {
				continue
			}
			ok, codes := Decide(v, contrib, 0, codeProcFailed)
			cls := pick(codes)
			if ok && !p.built {
				return fmt.Sprintf("group %d process %d decided yes without the intercommunicator", g, i)
			}
			if dec[g] == nil {
				dec[g] = &outcome{ok, cls}
			} else if dec[g].ok != ok || dec[g].cls != cls {
				return fmt.Sprintf("group %d: processes decided %v/%v and %v/%v", g, dec[g].ok, dec[g].cls, ok, cls)
			}
		}
	}
	if !anyCrash && (dec[0] == nil || dec[1] == nil || !dec[0].ok || !dec[1].ok) {
		return "no crash, but the connection failed"
	}
	if dec[0] != nil && dec[1] != nil {
		if dec[0].ok != dec[1].ok {
			failing := 0
			if dec[0].ok {
				failing = 1
			}
			if !window[failing] {
				return fmt.Sprintf("group 0 decided %v, group 1 %v, outside the documented window", dec[0].ok, dec[1].ok)
			}
			stats.window++
		}
		r0, r1 := groups[0][0], groups[1][0]
		if r0.crash == simNever && r1.crash == simNever && !dec[0].ok && dec[0].cls != dec[1].cls {
			return fmt.Sprintf("the surviving roots report %v and %v", dec[0].cls, dec[1].cls)
		}
	}
	for _, d := range dec {
		if d != nil && d.ok {
			stats.ok++
		} else if d != nil {
			stats.fail++
		}
	}
	return ""
}
