package dpm

import "github.com/ftmpi/ftmpi/internal/ft/agree"

// The all-or-nothing decision of Accept and Connect, as pure functions
// (sim_test.go runs them through seeded schedules of failures). Each side
// agrees (a fault-tolerant agreement of the binding) on Vote of every
// process; the roots exchange those verdicts (Side.Verdict, Combine); each
// side agrees again on its root's combined verdict, and every process
// decides from that agreement (Decide). Codes are MPI error class codes;
// 0 is success.

func yes() agree.Value { return agree.Value{Flags: 1} }

// Vote is a process's vote in its side's first agreement: yes (code 0),
// or no with the class code of its error.
func Vote(code int) agree.Value {
	if code == 0 {
		return yes()
	}
	var v agree.Value
	v.Union.Add(code)
	return v
}

// Combine is the root's contribution to its side's second agreement: its
// side's verdict side ANDed with the other side's, other; nil other: none
// came (code: why, a class code).
func Combine(side agree.Value, other *agree.Value, code int) agree.Value {
	out := side.Clone()
	if other == nil {
		out.Flags = 0
		out.Union.Add(code)
		return out
	}
	out.Flags &= other.Flags
	out.Union.UnionWith(other.Union)
	return out
}

// Decide is a process's outcome from its side's second agreement (result
// res, contributors contrib; the root at position rootPos): ok if the
// root contributed a yes, else the class codes seen, among which the
// binding picks the one to report (the same at every process). A root
// that did not contribute adds failed (the class of a process failure).
func Decide(res agree.Value, contrib agree.Set, rootPos, failed int) (ok bool, codes agree.Set) {
	if !contrib.Has(rootPos) {
		res = res.Clone()
		res.Flags = 0
		res.Union.Add(failed)
	}
	if res.Flags&1 == 1 {
		return true, agree.Set{}
	}
	return false, res.Union
}
