package rte

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
)

// The kinds of agreement. Agreements on a communicator match by their
// order: the k-th agreement a member makes meets the k-th of every other
// member. A program whose members make a different number of agreement
// calls, or different ones, before some point (last session's halo.c:
// one rank agreed once before MPI_Comm_shrink, the others twice) would
// have one member's MPI_Comm_shrink combine its failed set with another's
// MPI_Comm_agree flag, and each go on with what it made of it: different
// results, then a hang. So every agreement instance carries its kind, the
// API call and which of its agreements it is (AgreeKind), as part of the
// agreed value (agree.Value's KindMin/KindMax): the decision says whether
// the contributors' kinds differed, the same at every member, and every
// member's call then fails with the same AgreeMismatch instead of going on.

// AgreeStep is which of an API call's agreements an instance is (no MPI
// counterpart).
type AgreeStep uint8

// The steps.
const (
	// StepCall is the call's own agreement (MPI_Comm_agree's flag, a
	// file's open or close verdict, MPI_Comm_disconnect's).
	StepCall AgreeStep = iota
	// StepFailed decides who failed (and the free context-id pairs):
	// MPI_Comm_shrink's, MPIX_Comm_replace's, MPI_Comm_validate's, a
	// Reinit round's.
	StepFailed
	// StepFlags is an AND of flags checking a context-id claim.
	StepFlags
	// StepAnd is a bitmap AND of the general context-id agreement.
	StepAnd
	// StepVote and StepVerdict are connect/accept's two agreements.
	StepVote
	StepVerdict
	// StepRepair is a Replace attempt's spare-side agreement.
	StepRepair
	numSteps
)

var stepNames = [...]string{
	StepCall:    "",
	StepFailed:  "its failed-set agreement",
	StepFlags:   "its context-id claim agreement",
	StepAnd:     "its context-id bitmap agreement",
	StepVote:    "its vote agreement",
	StepVerdict: "its verdict agreement",
	StepRepair:  "its spare agreement",
}

// agreeCalls are the API calls known to run agreements, by their
// canonical name (agreeCanon), in a fixed order: a kind's code is the
// position + 1, so the code stays small (the value's wire form), and
// every process of a job (one build) numbers them alike. A call not
// listed gets a code from its name's hash (AgreeKindOf).
var agreeCalls = [...]string{
	"MPI_Comm_agree", "MPI_Comm_shrink", "MPIX_Comm_replace", "MPI_Comm_validate", "MPI_Reinit",
	"MPI_Comm_connect", "MPI_Comm_disconnect", "MPI_Comm_join",
	"MPI_File_open", "MPI_File_close",
	"MPI_Comm_dup", "MPI_Comm_dup_with_info", "MPI_Comm_split", "MPI_Comm_split_type", "MPI_Comm_create",
	"MPI_Comm_create_group", "MPI_Comm_create_from_group", "MPI_Intercomm_create", "MPI_Intercomm_create_from_groups",
	"MPI_Intercomm_merge", "MPI_Comm_spawn", "MPI_Comm_spawn_multiple", "MPI_Cart_create", "MPI_Cart_sub",
	"MPI_Graph_create", "MPI_Dist_graph_create", "MPI_Dist_graph_create_adjacent",
	"MPI_Win_create", "MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_create_dynamic", "MPI_Win_free",
	"MPI_Comm_remote_group_failed",
}

// hashedCall marks a code made from a call's name's hash.
const hashedCall = 1 << 15

// agreeCanon is op's canonical name: calls that every member may make
// for the same agreements are one kind. The nonblocking form of a call
// agrees as its blocking form (MPI_Comm_iagree as MPI_Comm_agree,
// MPI_Icomm_validate as MPI_Comm_validate), MPIX_ names as their MPI_
// names where those are listed, a window's or a file's validate as the
// communicator's (it runs on their communicator: Win.Validate calls
// Comm.Validate), and MPI_Comm_accept as MPI_Comm_connect (the two sides
// validate the intercommunicator together).
func agreeCanon(op string) string {
	if callIndex(op) >= 0 {
		return op
	}
	c := op
	if rest, ok := strings.CutPrefix(c, "MPIX_"); ok && callIndex(c) < 0 {
		c = "MPI_" + rest
	}
	for _, obj := range []string{"Comm", "Win", "File"} {
		if rest, ok := strings.CutPrefix(c, "MPI_I"+strings.ToLower(obj)+"_"); ok {
			c = "MPI_" + obj + "_" + rest // MPI_Icomm_validate
		}
		if rest, ok := strings.CutPrefix(c, "MPI_"+obj+"_i"); ok && callIndex("MPI_"+obj+"_"+rest) >= 0 {
			c = "MPI_" + obj + "_" + rest // MPI_Comm_iagree, MPI_Comm_idup
		}
	}
	switch c {
	case "MPI_Win_validate", "MPI_File_validate", "MPI_Win_ivalidate", "MPI_File_ivalidate":
		c = "MPI_Comm_validate"
	case "MPI_Comm_accept":
		c = "MPI_Comm_connect"
	}
	return c
}

func callIndex(op string) int {
	for i, c := range agreeCalls {
		if c == op {
			return i
		}
	}
	return -1
}

// AgreeKind is the kind of one agreement instance: the API call that runs
// it (by code) and the step (no MPI counterpart). Its zero value is no
// kind. Members' kinds must be equal on every instance (see above).
type AgreeKind uint32

// AgreeKindOf returns the kind of op's agreement step (no MPI
// counterpart).
func AgreeKindOf(op string, step AgreeStep) AgreeKind {
	canon := agreeCanon(op)
	code := uint32(callIndex(canon) + 1)
	if code == 0 {
		h := fnv.New32a()
		h.Write([]byte(canon))
		code = hashedCall | h.Sum32()&(hashedCall-1)
	}
	return AgreeKind(code<<4 | uint32(step&0xf))
}

// Step returns k's step.
func (k AgreeKind) Step() AgreeStep { return AgreeStep(k & 0xf) }

// Call returns the name of k's API call ("" for no kind; a call not in
// the list is named by its code).
func (k AgreeKind) Call() string {
	code := uint32(k) >> 4
	switch {
	case code == 0:
		return ""
	case code&hashedCall == 0 && int(code) <= len(agreeCalls):
		if c := agreeCalls[code-1]; c != "MPI_Comm_connect" {
			return c
		}
		return "MPI_Comm_connect/MPI_Comm_accept"
	}
	return fmt.Sprintf("another call (agreement code %#x)", uint32(k))
}

// String names k as an error message does: "MPI_Comm_agree",
// "MPI_Comm_shrink (its failed-set agreement)".
func (k AgreeKind) String() string {
	if k == 0 {
		return "an agreement of no kind"
	}
	s := k.Call()
	if st := k.Step(); st != StepCall && st < numSteps {
		s += " (" + stepNames[st] + ")"
	}
	return s
}

// ErrAgreeStopped is the error of an agreement call whose abort channel
// or the epoch's stop closed before the decision (no MPI counterpart).
var ErrAgreeStopped = errors.New("the agreement was stopped before it decided")

// AgreeMismatch is the error of every member of an agreement instance
// whose members called different kinds of agreement (no MPI counterpart;
// the API reports it as MPI_ERR_OTHER): Mine is this member's, Other
// another member's kind. It is decided by the agreement itself, so every
// member that decides gets one.
type AgreeMismatch struct {
	Mine, Other AgreeKind
	Seq         uint64 // the instance: this communicator's agreement number
}

func (e *AgreeMismatch) Error() string {
	return fmt.Sprintf("mismatched agreement #%d: this rank called %v where another member called %v "+
		"(agreements on a communicator match by their order: every member must make the same agreement calls in the same order)",
		e.Seq, e.Mine, e.Other)
}
