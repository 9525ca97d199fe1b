package mpi

import (
	"encoding/binary"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
)

// The decision, as pure functions (dpm_sim_test.go runs them through
// seeded schedules of failures).

// dpmVote is a process's vote in its group's first agreement: yes, or no
// with the class of its error.
func dpmVote(err error) agree.Value {
	if err == nil {
		return agree.Value{Flags: 1}
	}
	var v agree.Value
	v.Union.Add(classCode(err))
	return v
}

// dpmEncode and dpmDecode carry a group's verdict between the roots:
// flags, then the class codes.
func dpmEncode(v agree.Value) []byte {
	codes := v.Union.Members()
	b := make([]byte, 8*(1+len(codes)))
	binary.LittleEndian.PutUint64(b, v.Flags)
	for i, x := range codes {
		binary.LittleEndian.PutUint64(b[8*(i+1):], uint64(x))
	}
	return b
}

func dpmDecode(b []byte) (agree.Value, bool) {
	var v agree.Value
	if len(b) < 8 || len(b)%8 != 0 {
		return v, false
	}
	v.Flags = binary.LittleEndian.Uint64(b)
	for i := 8; i < len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if x > 1<<16 {
			return agree.Value{}, false
		}
		v.Union.Add(int(x))
	}
	return v, true
}

// dpmCombine is the root's contribution to its group's second agreement:
// its group's verdict side ANDed with the other group's, other; nil other:
// none came (code: why, a class code).
func dpmCombine(side agree.Value, other *agree.Value, code int) agree.Value {
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

// dpmDecide is a process's outcome from its group's second agreement
// (result res, contributors contrib; the root is at position rootPos): the
// intercommunicator if the root contributed a yes, else the class to
// report.
func dpmDecide(res agree.Value, contrib agree.Set, rootPos int) (bool, *Class) {
	if !contrib.Has(rootPos) {
		res = res.Clone()
		res.Flags = 0
		res.Union.Add(ErrProcFailed.code)
	}
	if res.Flags&1 == 1 {
		return true, nil
	}
	return false, decideClass(res.Union)
}
