package rte

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Members that call different kinds of agreement on the same instance
// (one MPI_Comm_agree where the others run MPI_Comm_shrink's failed-set
// agreement) all get an *AgreeMismatch naming both kinds, within a
// deadline; the next instance, of one kind everywhere, decides as usual.
func TestCommFTAgreeMismatch(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 4
	c := newCommFTJob(t, n, -1)
	defer c.j.close()
	abort := make(chan struct{})
	defer close(abort)
	agreeK, shrinkK := AgreeKindOf("MPI_Comm_agree", StepCall), AgreeKindOf("MPI_Comm_shrink", StepFailed)
	errs := make([]error, n)
	done := make(chan struct{})
	go func() {
		c.each(func(i int, f *CommFT) {
			if i == 2 {
				_, errs[i] = f.Agree(AgreeCall{Flags: 1, Kind: agreeK}, abort)
			} else {
				_, errs[i] = f.AgreeFailed(shrinkK, nil, nil, abort)
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the mismatched agreement did not end within 60 s")
	}
	for i, err := range errs {
		var mm *AgreeMismatch
		if !errors.As(err, &mm) {
			t.Fatalf("process %d: %v, want an *AgreeMismatch", i, err)
		}
		mine, other := shrinkK, agreeK
		if i == 2 {
			mine, other = agreeK, shrinkK
		}
		if mm.Mine != mine || mm.Other != other || mm.Seq != 0 {
			t.Fatalf("process %d: %+v, want mine %v other %v at #0", i, mm, mine, other)
		}
		msg := err.Error()
		if !strings.Contains(msg, "this rank called "+mine.String()+" where another member called "+other.String()) {
			t.Fatalf("process %d: message %q", i, msg)
		}
	}
	// The same kind everywhere again: decided.
	flags := make([]uint64, n)
	c.each(func(i int, f *CommFT) {
		var err error
		if flags[i], err = f.AgreeFlags(AgreeKindOf("MPI_Comm_shrink", StepFlags), 3, abort); err != nil {
			t.Errorf("process %d: %v", i, err)
		}
	})
	for i, v := range flags {
		if v != 3 {
			t.Fatalf("process %d: AgreeFlags = %d after the mismatch, want 3", i, v)
		}
	}
}

// Kinds name the call and the step; nonblocking and MPIX_ forms are their
// blocking MPI_ form's; a call not in the list still gets a kind of its
// own.
func TestAgreeKindNames(t *testing.T) {
	for _, tc := range []struct {
		op   string
		step AgreeStep
		want string
	}{
		{"MPI_Comm_agree", StepCall, "MPI_Comm_agree"},
		{"MPI_Comm_iagree", StepCall, "MPI_Comm_agree"},
		{"MPIX_Comm_agree", StepCall, "MPI_Comm_agree"},
		{"MPIX_Comm_iagree", StepCall, "MPI_Comm_agree"},
		{"MPI_Comm_shrink", StepFailed, "MPI_Comm_shrink (its failed-set agreement)"},
		{"MPI_Comm_ishrink", StepAnd, "MPI_Comm_shrink (its context-id bitmap agreement)"},
		{"MPI_Icomm_validate", StepFailed, "MPI_Comm_validate (its failed-set agreement)"},
		{"MPIX_Comm_replace", StepRepair, "MPIX_Comm_replace (its spare agreement)"},
		{"MPI_Comm_idup", StepFlags, "MPI_Comm_dup (its context-id claim agreement)"},
		{"MPI_Iwin_validate", StepFailed, "MPI_Comm_validate (its failed-set agreement)"},
		{"MPI_Win_validate", StepFailed, "MPI_Comm_validate (its failed-set agreement)"},
		{"MPI_File_ivalidate", StepFailed, "MPI_Comm_validate (its failed-set agreement)"},
		{"MPI_Comm_accept", StepFailed, "MPI_Comm_connect/MPI_Comm_accept (its failed-set agreement)"},
		{"MPI_Comm_connect", StepVote, "MPI_Comm_connect/MPI_Comm_accept (its vote agreement)"},
	} {
		if got := AgreeKindOf(tc.op, tc.step).String(); got != tc.want {
			t.Errorf("AgreeKindOf(%s, %d) = %q, want %q", tc.op, tc.step, got, tc.want)
		}
	}
	a, b := AgreeKindOf("MPI_Made_up", StepCall), AgreeKindOf("MPI_Other_made_up", StepCall)
	if a == b || a == 0 || !strings.Contains(a.String(), "agreement code") {
		t.Fatalf("unlisted calls: %v, %v", a, b)
	}
	if AgreeKindOf("MPI_Comm_agree", StepCall) == AgreeKindOf("MPI_Comm_shrink", StepCall) {
		t.Fatal("two calls share a kind")
	}
}
