package rte

import "testing"

// CheckFaultInjection (Config.Validate's check of a plan, moved from
// package mpi) accepts a valid plan and names the part of an invalid one.
func TestCheckFaultInjection(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"kill:rank=1,at=1s", ""},
		{"kill:rank=,at=1s", `"rank=": empty value`},
		{"stop:rank=1", "missing at= or on= (e.g. stop:rank=1,at=500ms or stop:rank=1,on=step 10)"}, // the whole spec is the part: not repeated
	} {
		if got := CheckFaultInjection(tc.spec); got != tc.want {
			t.Errorf("CheckFaultInjection(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}
