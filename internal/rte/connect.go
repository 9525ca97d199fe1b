package rte

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/dpm"
)

// The driver of the dynamic-process calls' protocol (internal/rte/dpm)
// for the API: the ports (OpenPort, ClosePort), one process's part of one
// MPI_Comm_accept or MPI_Comm_connect (Connection: the root's handshake
// with the other root, the rounds within its side, the exchange of the
// sides' verdicts inside the side's agreements), MPI_Comm_join's socket
// handshake (JoinPort) and the name service (names.go). The API keeps the
// argument checks, the error classes (it maps a DPMError's Fault to one)
// and the communicators: it runs the context-id agreement over
// Connection.AND and builds the intercommunicator from Connection.Remote.

// DPMFault is what went wrong in a dynamic-process call, in the terms the
// API maps to its error classes.
type DPMFault uint8

const (
	// FaultOther: the other group gave up, or Join's socket handshake
	// failed (the socket, or the other end is not Join of this job).
	FaultOther DPMFault = iota
	// FaultPort: a malformed port name, one of another job or of this
	// process, a closed port, a refusal, the call's timeout.
	FaultPort
	// FaultPeerFailed: the other root, or the port's process, failed.
	FaultPeerFailed
	// FaultRemote: another process's error, by its class code
	// (DPMError.Code).
	FaultRemote
	// FaultInternal: a frame, group or verdict that does not decode, or
	// the roots never found each other although the root said they had.
	FaultInternal
	// FaultAborted: the job ended (the call's abort or the epoch's stop).
	FaultAborted
	// FaultNameUnknown: the name service has no such service name.
	FaultNameUnknown
	// FaultService: the name service refused the request, or is not
	// available (no head under a PMI launcher, the head unreachable).
	FaultService
)

// DPMError is an error of the dynamic-process calls: its Fault, the class
// code of a FaultRemote one, and what happened.
type DPMError struct {
	Fault  DPMFault
	Code   int
	Detail string
}

func (e *DPMError) Error() string { return e.Detail }

// dpmError is err, an error of internal/rte/dpm, as a DPMError; any other
// (nil, the API's own errors from a side's collectives) is returned as it
// is.
func dpmError(err error) error {
	var e *dpm.Error
	if !errors.As(err, &e) {
		return err
	}
	f := FaultOther // dpm.ErrGaveUp, dpm.ErrJoin
	switch {
	case errors.Is(e, dpm.ErrAborted):
		f = FaultAborted
	case errors.Is(e, dpm.ErrPort):
		f = FaultPort
	case errors.Is(e, dpm.ErrPeerFailed):
		f = FaultPeerFailed
	case errors.Is(e, dpm.ErrRemote):
		f = FaultRemote
	case errors.Is(e, dpm.ErrMalformed), errors.Is(e, dpm.ErrNoConn):
		f = FaultInternal
	}
	return &DPMError{Fault: f, Code: e.Code, Detail: e.Detail}
}

// OpenPort opens a port of this process and returns its name, which
// carries what a connector of this launcher (or of this mpi.Run) needs to
// reach it (MPI_Open_port's protocol).
func (r *Rank) OpenPort() string { return r.portTable().Open() }

// ClosePort closes a port of this process: a pending Accept on it fails,
// and the connectors not yet accepted are refused (MPI_Close_port's
// protocol). A port name that is not an open port of this process is a
// FaultPort error.
func (r *Rank) ClosePort(port string) error { return dpmError(r.portTable().Close(port)) }

// Connection is one process's part of one MPI_Comm_accept or
// MPI_Comm_connect (no MPI counterpart): the root finds the other group's
// root through a port (Reach); within the side the root's outcome and the
// other group are shared (Share) and rounds of a local AND are exchanged
// by the roots (AND: the API's context-id agreement); the roots exchange
// their sides' verdicts inside the side's second agreement
// (CommFT.AgreeVerdict); End ends it. The protocol's frames are
// ctl.Port's (internal/rte/dpm); every wait ends on the peer's failure,
// the call's timeout, its abort or the epoch's stop.
type Connection struct {
	r *Rank
	s dpm.Side
}

// NewConnection begins this process's part of a call whose side's root is
// at rank root among the processes taking part (Within); isRoot: this
// process is it. abort (the API's: the job ended) and the epoch's stop end
// the roots' waits.
func (r *Rank) NewConnection(root int, isRoot bool, abort <-chan struct{}) *Connection {
	return &Connection{r: r, s: dpm.Side{T: r.portTable(), Root: root, Me: isRoot, Cancel: dpm.Cancel{Abort: abort, Stop: r.stop}}}
}

// RootCall is the root's handshake with the other root (Connection.Reach).
type RootCall struct {
	// Op is the MPI call, named in the trace line.
	Op string
	// Port is the port name: Accept's, of this process; Connect's, of
	// another process of this launcher.
	Port   string
	Accept bool
	// Procs are the process ids of the root's group, Recognized its
	// recognised failed processes: sent to the other root.
	Procs, Recognized []int
	// Peer >= 0 (Accept): the only process whose connection is taken, and
	// whose failure ends the wait (Join); -1: any, in arrival order.
	Peer int
	// Timeout ends the wait for the other root (a FaultPort error); 0:
	// none.
	Timeout time.Duration
	// Trace writes the line "ftmpi-trace: process P: OP: connected to
	// process Q" to the runtime's diagnostics once the roots found each
	// other: an event a fault injection ties to (ftmpirun --inject
	// kill:...,on=TEXT).
	Trace bool
}

// Reach is the root's part: it finds the other root and learns its group.
// An error is a DPMError; after a FaultOther one (the other group gave
// up) the connection is kept for the verdicts' exchange.
func (x *Connection) Reach(c RootCall) error {
	cn := x.s.Cancel
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		cn.Deadline = t.C
	}
	t := x.s.T
	mine := t.Mine(c.Procs, c.Recognized)
	var err error
	if c.Accept {
		x.s.Conn, x.s.Remote, err = t.Accept(c.Port, mine, c.Peer, cn)
	} else {
		x.s.Conn, x.s.Remote, err = t.Connect(c.Port, mine, cn)
	}
	if err == nil && c.Trace {
		t.Trace(c.Op, fmt.Sprintf("connected to process %d", x.s.Conn.Peer()))
	}
	return dpmError(err)
}

// Within sets the side's collectives: local's members are the processes
// of the side taking part, the root at the rank NewConnection was given.
func (x *Connection) Within(local *coll.Set) { x.s.Local, x.s.N = local, local.N }

// Share broadcasts within the side the root's outcome so far (code: 0 when
// it found the other root, else its error's class code) and the other
// group (Remote at every process), and returns the connection's id (the
// same at both sides). A root's failure is a FaultRemote error with its
// code at every process; the collectives' errors are returned as they
// are.
func (x *Connection) Share(code int) (uint64, error) {
	id, err := x.s.Share(code)
	return id, dpmError(err)
}

// Remote is the other group after Share: its process ids and its
// recognised failed processes.
func (x *Connection) Remote() (procs, recognized []int) {
	return x.s.Remote.Procs, x.s.Remote.Rec
}

// AddRemoteEndpoints makes the other group's processes reachable (under
// ftmpirun, those of another job) after Share.
func (x *Connection) AddRemoteEndpoints() { portNet{x.r}.AddEndpoints(x.s.Remote.Eps) }

// AND is one round of the API's context-id agreement: words ANDed within
// the side and with the other side's (the roots exchange them), the
// result in words at every process. A root's failure in the exchange is a
// FaultRemote error at the other processes of its side.
func (x *Connection) AND(words []uint64) error { return dpmError(x.s.AND(words)) }

// End ends the connection (its frames are dropped from then on).
func (x *Connection) End() {
	if x.s.Conn != nil {
		x.s.Conn.End()
	}
}

// ConnectVote is a side's verdict in connect/accept's all-or-nothing
// decision, as its first agreement decided it (AgreeVote): the runtime's,
// opaque to the API.
type ConnectVote struct{ v agree.Value }

// AgreeVote runs the first agreement of connect/accept's decision over
// one side: every member's error class code (0: none). op is the API
// call (its kind: AgreeKindOf(op, StepVote)); the error as run's.
func (f *CommFT) AgreeVote(op string, code int, abort <-chan struct{}) (ConnectVote, error) {
	val, _, err := f.run(AgreeKindOf(op, StepVote), dpm.Vote(code), abort)
	return ConnectVote{val}, err
}

// ConnectDecision is a member's outcome of connect/accept's second
// agreement (AgreeVerdict).
type ConnectDecision struct {
	// OK: the root contributed a yes.
	OK bool
	// Codes are the class codes seen (sorted), of which the API reports
	// one, the same at every member.
	Codes []int
	// RootIn: the root contributed.
	RootIn bool
}

// AgreeVerdict runs the second agreement of connect/accept's decision
// over one side: x's root exchanges its side's verdict with the other
// root and contributes both; root is the root's process id, failed the
// class code of a process failure; op as AgreeVote's, the error as run's.
func (f *CommFT) AgreeVerdict(op string, x *Connection, side ConnectVote, root, failed int, abort <-chan struct{}) (ConnectDecision, error) {
	verdict := agree.Value{Flags: 1}
	if x.s.Me {
		verdict = x.s.Verdict(side.v)
	}
	res, contrib, err := f.run(AgreeKindOf(op, StepVerdict), verdict, abort)
	if err != nil {
		return ConnectDecision{}, err
	}
	pos := f.procs.Pos(root)
	yes, codes := dpm.Decide(res, contrib, pos, failed)
	return ConnectDecision{OK: yes, Codes: codes.Members(), RootIn: contrib.Has(pos)}, nil
}

// JoinPort runs MPI_Comm_join's socket handshake over conn: each end
// writes its identity (this process's job and id), then the end with the
// lower id opens a port and writes its name, and the other reads it. It
// returns the other end's process id and the port: opened by this process
// (accept true: it accepts on it, then closes it) or the other end's (it
// connects). An error is a DPMError (FaultOther); after one, the state of
// conn is undefined.
func (r *Rank) JoinPort(conn io.ReadWriter) (peer int, port string, accept bool, err error) {
	if peer, err = dpm.JoinHello(conn, r.portJob(), r.Proc); err != nil {
		return 0, "", false, dpmError(err)
	}
	if r.Proc < peer {
		port = r.OpenPort()
		if err := dpm.SendPort(conn, port); err != nil {
			_ = r.ClosePort(port)
			return 0, "", false, dpmError(err)
		}
		return peer, port, true, nil
	}
	if port, err = dpm.ReadPort(conn); err != nil {
		return 0, "", false, dpmError(err)
	}
	return peer, port, false, nil
}
