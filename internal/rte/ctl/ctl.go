// Package ctl is the one table of the runtime's control frames: the
// p2p.KindControl frames that carry fault-tolerance protocols (revocation,
// agreement, heartbeats, failure notices) beside the user's messages. It
// declares every control type with its name, and a Table per rank maps
// each type to the handler the rank registered for it; a frame of any
// other type, or of a type with no handler, is rejected with an error that
// names it, its sender and its header.
//
// The package only dispatches: it must not decode payloads, send frames or
// block (Dispatch runs on the transport's goroutines), and it holds no
// process-global state (a Table belongs to one World).
package ctl

import (
	"fmt"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Type is a control frame's type: transport.Header.Tag of a
// p2p.KindControl frame.
type Type int32

// The control frame types. Header fields beyond Tag are each type's own.
const (
	Revoke     Type = 1  // A = hops; Ctx = the revoked communicator's context
	Agree      Type = 2  // Ctx = communicator context, Seq = agreement instance; payload agree.EncodeMsg
	CollFail   Type = 3  // Ctx = collective context, A = call sequence | sender's rank<<32, B = error class code; payload the reason
	Port       Type = 4  // connect/accept between two roots: B = kind, A = port or step, Seq = connection id; payload the kind's
	Spare      Type = 12 // spare processes (MPIX_Comm_replace, reinit): B = kind, Seq = activation key; payload the kind's
	Reinit     Type = 13 // MPI_Reinit without a head: B = kind, A = the next epoch; payload the kind's
	Heartbeat  Type = 16 // A = detector epoch, B = sender incarnation, Seq = receiver incarnation
	FailNotice Type = 17 // A = failed process, B = its incarnation, Seq = hops
	Finalize   Type = 18 // the Finalize fence without a head: B = kind (internal/ft/fence: up, down, probe)
	Hang       Type = 19 // the hang report: B = 0 a query, 1 an answer; Seq = the query's id; an answer's payload the calls the sender waits in
	// FailNotices is a batch of failure notices (internal/ft/rbcast.Batch:
	// a rank's notices of one step to one neighbour); payload the
	// versioned encoding of internal/rte/ftdrive (version, count, then
	// process, incarnation, hops each).
	FailNotices Type = 20
)

// max bounds the types (the table is an array indexed by type).
const max = 32

// names is the declaration table: a type is known if it has a name.
var names = [max]string{
	Revoke:      "revoke",
	Agree:       "agree",
	CollFail:    "collective failure",
	Port:        "port",
	Spare:       "spare",
	Reinit:      "reinit",
	Heartbeat:   "heartbeat",
	FailNotice:  "failure notice",
	Finalize:    "finalize",
	Hang:        "hang report",
	FailNotices: "failure notices",
}

// carries says which types have a payload; the others carry everything
// in their header, and a payload on them is a malformed frame.
var carries = [max]bool{Agree: true, CollFail: true, Port: true, Spare: true, Reinit: true, Hang: true, FailNotices: true}

// Known reports whether t is a declared control type.
func (t Type) Known() bool { return t >= 0 && t < max && names[t] != "" }

func (t Type) String() string {
	if t.Known() {
		return names[t]
	}
	return fmt.Sprintf("control type %d", int32(t))
}

// Handler handles one control frame from process from. It is called on a
// transport goroutine: it must not block nor send (hand sends to another
// goroutine). payload is valid during the call only.
type Handler func(from int, h transport.Header, payload []byte)

// Table maps control types to the handlers of one rank. Register the
// handlers before frames are dispatched or while they are (a frame of a
// type whose handler is not registered yet is rejected); Dispatch is safe
// for concurrent use.
type Table struct {
	h [max]atomic.Pointer[Handler]
}

// Register sets the handler of type t. It fails for an undeclared type, a
// nil handler, or a type that already has one.
func (tb *Table) Register(t Type, fn Handler) error {
	switch {
	case !t.Known():
		return fmt.Errorf("ctl: register %v: not a declared control type", t)
	case fn == nil:
		return fmt.Errorf("ctl: register %v: nil handler", t)
	case !tb.h[t].CompareAndSwap(nil, &fn):
		return fmt.Errorf("ctl: register %v: it has a handler already", t)
	}
	return nil
}

// MustRegister is Register for handlers a runtime registers at start,
// where an error is a programming error: it panics.
func (tb *Table) MustRegister(t Type, fn Handler) {
	if err := tb.Register(t, fn); err != nil {
		panic(err)
	}
}

// RejectError reports a control frame that was not handled.
type RejectError struct {
	From   int
	Header transport.Header
	Reason string
}

func (e *RejectError) Error() string {
	h := e.Header
	return fmt.Sprintf("ctl: control frame from process %d rejected (%s): tag %d, context %d, A %d, B %d, seq %d, %d payload bytes",
		e.From, e.Reason, h.Tag, h.Ctx, h.A, h.B, h.Seq, h.N)
}

// Check validates a control frame's header before its payload is read (the
// engine's control check): a declared type, and a payload only on the
// types that carry one. The error names the defect.
func Check(h transport.Header) error {
	t := Type(h.Tag)
	if !t.Known() {
		return fmt.Errorf("unknown control type %d", h.Tag)
	}
	if !carries[t] && h.N != 0 {
		return fmt.Errorf("a %v carries no payload, this one %d bytes", t, h.N)
	}
	return nil
}

// Dispatch hands a frame to the handler of its type, or returns a
// *RejectError for an undeclared type or one without a handler.
func (tb *Table) Dispatch(from int, h transport.Header, payload []byte) error {
	t := Type(h.Tag)
	if !t.Known() {
		return &RejectError{From: from, Header: h, Reason: "unknown type"}
	}
	if !carries[t] && (h.N != 0 || len(payload) != 0) {
		return &RejectError{From: from, Header: h, Reason: fmt.Sprintf("a %v carries no payload", t)}
	}
	fn := tb.h[t].Load()
	if fn == nil {
		return &RejectError{From: from, Header: h, Reason: "no handler for " + t.String()}
	}
	(*fn)(from, h, payload)
	return nil
}
