package mpi

import (
	"errors"
	"fmt"
	"strings"
)

// Class is an MPI error class (MPI_ERR_BUFFER ...; MPI_Error_class maps an
// error to it). Every error returned by this package
// satisfies errors.Is against exactly one Class value (ErrRankFailStop and
// ErrProcFailed are the same class under two names).
type Class struct {
	name string
	code int
}

func (c *Class) Error() string { return c.name }

// Code is the numeric MPI error class value (as in Open MPI's mpi.h where
// the class exists there): the int that MPI_Error_class returns.
func (c *Class) Code() int { return c.code }

// The MPI error classes.
var (
	ErrBuffer     = &Class{"MPI_ERR_BUFFER: invalid buffer", 1}         // MPI_ERR_BUFFER
	ErrCount      = &Class{"MPI_ERR_COUNT: invalid count", 2}           // MPI_ERR_COUNT
	ErrType       = &Class{"MPI_ERR_TYPE: datatype mismatch", 3}        // MPI_ERR_TYPE
	ErrTag        = &Class{"MPI_ERR_TAG: invalid tag", 4}               // MPI_ERR_TAG
	ErrComm       = &Class{"MPI_ERR_COMM: invalid communicator", 5}     // MPI_ERR_COMM
	ErrRank       = &Class{"MPI_ERR_RANK: invalid rank", 6}             // MPI_ERR_RANK
	ErrRequest    = &Class{"MPI_ERR_REQUEST: invalid request", 7}       // MPI_ERR_REQUEST
	ErrRoot       = &Class{"MPI_ERR_ROOT: invalid root", 8}             // MPI_ERR_ROOT
	ErrGroup      = &Class{"MPI_ERR_GROUP: invalid group", 9}           // MPI_ERR_GROUP
	ErrOp         = &Class{"MPI_ERR_OP: invalid operation", 10}         // MPI_ERR_OP
	ErrTopology   = &Class{"MPI_ERR_TOPOLOGY: invalid topology", 11}    // MPI_ERR_TOPOLOGY
	ErrDims       = &Class{"MPI_ERR_DIMS: invalid dimensions", 12}      // MPI_ERR_DIMS
	ErrArg        = &Class{"MPI_ERR_ARG: invalid argument", 13}         // MPI_ERR_ARG
	ErrUnknown    = &Class{"MPI_ERR_UNKNOWN: unknown error", 14}        // MPI_ERR_UNKNOWN
	ErrTruncate   = &Class{"MPI_ERR_TRUNCATE: message truncated", 15}   // MPI_ERR_TRUNCATE
	ErrOther      = &Class{"MPI_ERR_OTHER: other error", 16}            // MPI_ERR_OTHER
	ErrIntern     = &Class{"MPI_ERR_INTERN: internal error", 17}        // MPI_ERR_INTERN
	ErrInStatus   = &Class{"MPI_ERR_IN_STATUS: error in status", 18}    // MPI_ERR_IN_STATUS
	ErrPending    = &Class{"MPI_ERR_PENDING: pending request", 19}      // MPI_ERR_PENDING
	ErrProcFailed = &Class{"MPI_ERR_PROC_FAILED: process failed", 75}   // MPI_ERR_PROC_FAILED (ULFM)
	ErrRevoked    = &Class{"MPI_ERR_REVOKED: communicator revoked", 77} // MPI_ERR_REVOKED (ULFM)
)

// ErrRankFailStop is MPI_ERR_RANK_FAIL_STOP, the error class of the
// run-through stabilization chapter (seed 003, 17.5.1): "a process in the
// operation is failed (a fail-stop failure)". It is the same class as
// ULFM's ErrProcFailed under its seed-003 name (one *Class value), so
// errors.Is(err, ErrRankFailStop) and errors.Is(err, ErrProcFailed) always
// agree, ErrorClass returns the same value for both, and a program written
// against either model recognises the other's failures.
var ErrRankFailStop = ErrProcFailed

// Error is the error type returned by ftmpi calls: an MPI error class with
// the operation, communicator and peer it happened on. It stands for an
// MPI error code; Error() is its MPI_Error_string.
type Error struct {
	Class  *Class // the MPI error class
	Op     string // the MPI operation, e.g. "MPI_Recv"
	Comm   string // communicator name, "" if none
	Peer   int    // peer rank in Comm, or NoPeer
	Detail string // what exactly was wrong

	cause error // a call cut by its context: the context's error (ctx.go)
	sys   error // a file operation: the operating system's error (file.go)
	first error // ErrInStatus: the first failed request's error (inStatus)
}

// NoPeer is Error.Peer when no single peer is involved. It has no MPI
// counterpart (Error).
const NoPeer = -1 << 31

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Comm != "" {
		b.WriteString(" on ")
		b.WriteString(e.Comm)
	}
	if e.Peer != NoPeer {
		fmt.Fprintf(&b, " (peer %s)", rankName(e.Peer))
	}
	b.WriteString(": ")
	b.WriteString(e.Class.name)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func rankName(r int) string {
	switch r {
	case AnySource:
		return "MPI_ANY_SOURCE"
	case ProcNull:
		return "MPI_PROC_NULL"
	}
	return fmt.Sprint(r)
}

// Unwrap returns the error class, so errors.Is(err, mpi.ErrTruncate) works,
// and for a call cut by its context (Comm.WithContext) the context's error
// too, so errors.Is(err, context.DeadlineExceeded) works, and for a file
// operation the operating system's error (errors.Is(err, fs.ErrNotExist)).
func (e *Error) Unwrap() []error {
	out := []error{e.Class}
	if e.cause != nil {
		out = append(out, e.cause)
	}
	if e.sys != nil {
		out = append(out, e.sys)
	}
	return out
}

// ErrorClass returns the MPI error class of err (MPI_Error_class), or nil
// for a nil error and ErrUnknown for errors not produced by ftmpi.
func ErrorClass(err error) *Class {
	if err == nil {
		return nil
	}
	var c *Class
	if errors.As(err, &c) {
		return c
	}
	return ErrUnknown
}

func newErr(class *Class, op string, c *Comm, peer int, format string, args ...any) *Error {
	e := &Error{Class: class, Op: op, Peer: peer, Detail: fmt.Sprintf(format, args...)}
	if c != nil {
		e.Comm = c.name
	}
	return e
}

// inStatus is the ErrInStatus error of op (a Wait or Test of several
// requests) whose first failed request failed with first; the statuses
// tell the rest. It keeps first, so that Reinit's error handlers see a
// process failure behind it (reinit.go).
func inStatus(op string, c *Comm, first error) *Error {
	e := newErr(ErrInStatus, op, c, NoPeer, "first failure: %v", first)
	e.first = first
	return e
}

// Errhandler decides what happens when an MPI call on a communicator fails
// (MPI_Errhandler).
type Errhandler struct {
	name string
	fn   func(*Comm, error)
	win  func(*Win, error)  // a window handler (WinCreateErrhandler)
	file func(*File, error) // a file handler (FileCreateErrhandler, cbind_file.go)
}

func (h *Errhandler) String() string { return h.name }

var (
	// ErrorsAreFatal reports the error and aborts the whole job
	// (MPI_ERRORS_ARE_FATAL). It is the default on CommWorld.
	ErrorsAreFatal = &Errhandler{name: "MPI_ERRORS_ARE_FATAL"}
	// ErrorsReturn returns the error to the caller (MPI_ERRORS_RETURN).
	ErrorsReturn = &Errhandler{name: "MPI_ERRORS_RETURN"}
)

// NewErrhandler returns a handler that calls fn with the communicator and
// the error; the call then returns the error (MPI_Comm_create_errhandler).
func NewErrhandler(fn func(c *Comm, err error)) *Errhandler {
	return &Errhandler{name: "user", fn: fn}
}

// handle applies c's error handler to err and returns err.
func (c *Comm) handle(err error) error {
	if err == nil {
		return nil
	}
	if isCut(err) {
		return err // the caller's own request (WithContext): not a failure
	}
	h := c.errh.Load()
	switch {
	case h == ErrorsReturn:
		return err
	case h == nil || h == ErrorsAreFatal:
		c.w.fatal(err)
		return err
	case isReinitHandler(h):
		return c.reinitHandle(h, err)
	default:
		h.fn(c, err)
		return err
	}
}

// CallErrhandler invokes c's error handler on err as if a call on c had
// failed with it (MPI_Comm_call_errhandler): MPI_ERRORS_ARE_FATAL aborts,
// a user handler is called; err is returned. The C library uses it for the
// errors it finds in a call's arguments before the call reaches c.
func (c *Comm) CallErrhandler(err error) error {
	if c == nil {
		return err
	}
	return c.handle(err)
}

// fatal implements MPI_ERRORS_ARE_FATAL: report and abort the job.
func (w *World) fatal(err error) {
	w.logf("rank %d: fatal error (MPI_ERRORS_ARE_FATAL): %v", w.rank, err)
	// The program did not call MPI_Abort: the launcher says why the job
	// ended (issue 26: it said "MPI_Abort called").
	w.abortJob(1, "a fatal error under MPI_ERRORS_ARE_FATAL (printed above by the rank)", true)
}
