package mpi

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ftmpi/ftmpi/internal/rte"
)

// Establishing communication (MPI-4.1 11.8.3-11.8.6; seed 002 5.2.1 and
// A.2.3; seed 003 17.10.1): ports, Accept and Connect, the name service,
// Disconnect and Join, between processes of one launcher (a job and the
// jobs it spawned) or of one mpi.Run. This file holds the typed bindings
// (argument checks, the communicators, the errors); the protocol (port
// names, the port table, the ctl.Port frames between the two roots, the
// rounds within a side, the decision) is the runtime's, driven by
// rte.Connection (internal/rte/connect.go over internal/rte/dpm).
//
// A connector's root sends its group to the port's process, whose
// accepting root answers with its own. Each root broadcasts the remote
// group within its own group; both groups agree on the context ids of the
// intercommunicator (rounds of a local AND and an exchange of the roots).
// Then the outcome is decided all-or-nothing: a fault-tolerant agreement
// on each side on whether every process of the side got that far, an
// exchange of the two sides' verdicts by the roots, and a second agreement
// on each side on the root's combined verdict (a root that failed is
// counted as a failure). Every process of both sides then holds the new
// intercommunicator, or every one returns an error of the same class.

// ErrName is MPI_ERR_NAME: LookupName of a service name that is not
// published.
var ErrName = &Class{"MPI_ERR_NAME: service name not published", 38}

// ErrPort is MPI_ERR_PORT: a port name that is malformed, of another job,
// or names a closed port.
var ErrPort = &Class{"MPI_ERR_PORT: invalid port name", 43}

// ErrService is MPI_ERR_SERVICE: PublishName of a published name, or
// UnpublishName of a name not published with that port.
var ErrService = &Class{"MPI_ERR_SERVICE: name service error", 48}

// tagDPMLocal is the internal tag of Accept's and Connect's collectives
// within a group (on its collective context; see coll_util.go).
const tagDPMLocal int32 = -6

// dpmState is a World's part in connect/accept beside the runtime's (its
// port table, rte.Connection): a singleton's name service and the tests'
// hook.
type dpmState struct {
	names rte.Names          // a singleton's name service (the zero value: its own table)
	hook  func(stage string) // tests: called when a root found the other root (in package tests only)
}

// portDelegate is what the runtime's port table needs of the World.
func (w *World) portDelegate() rte.PortDelegate {
	return rte.PortDelegate{Job: w.jobID, Code: w.dpmCode, Net: func() *rte.Net { return w.net }}
}

// dpmErr is err as this package's error: the runtime's rte.DPMError gets
// the class of its fault; any other is returned as it is.
func (w *World) dpmErr(op string, c *Comm, err error) error {
	var e *rte.DPMError
	if !errors.As(err, &e) {
		return err
	}
	cls := ErrOther // rte.FaultOther: the other group gave up, Join's handshake
	switch e.Fault {
	case rte.FaultAborted:
		return w.abortedErr(op, c)
	case rte.FaultPort:
		cls = ErrPort
	case rte.FaultPeerFailed:
		cls = ErrProcFailed
	case rte.FaultRemote:
		cls = classOf(e.Code)
	case rte.FaultInternal:
		cls = ErrIntern
	case rte.FaultNameUnknown:
		cls = ErrName
	case rte.FaultService:
		cls = ErrService
	}
	return newErr(cls, op, c, NoPeer, "%s", e.Detail)
}

// dpmCode is the class code of err carried in verdicts
// (rte.PortDelegate.Code).
func (w *World) dpmCode(err error) int { return classCode(w.dpmErr("", nil, err)) }

// jobID names this process's launch: ports of another launch are refused.
func (w *World) jobID() string {
	switch {
	case w.proc != nil:
		return w.proc.Job()
	case w.run != nil:
		return fmt.Sprintf("run-%p", w.run)
	}
	return fmt.Sprintf("singleton-%p", w)
}

// OpenPort opens a port for Accept and returns its name (MPI_Open_port).
// The name carries what a connector of this launcher (or of this mpi.Run)
// needs to reach this process; info is ignored. The port stays open until
// ClosePort. Errors are returned (no communicator's handler applies).
func (w *World) OpenPort(info *Info) (string, error) {
	const op = "MPI_Open_port"
	if w.finalized.Load() {
		return "", newErr(ErrOther, op, nil, NoPeer, "called after MPI_Finalize")
	}
	return w.rt.OpenPort(), nil
}

// ClosePort closes a port this process opened (MPI_Close_port): a pending
// Accept on it fails with ErrPort, and the connectors it has not accepted
// are refused (their Connect fails with ErrPort).
func (w *World) ClosePort(port string) error {
	return w.dpmErr("MPI_Close_port", nil, w.rt.ClosePort(port))
}

// Accept accepts a connection on port (opened by this process with
// OpenPort) and returns an intercommunicator whose remote group is the
// connecting group (MPI_Comm_accept). It is collective over the
// intracommunicator c; port and info count at root only. It waits until
// a group connects, the port is closed (ErrPort), or the info key
// "timeout" (seconds) at root passes (ErrPort).
//
// Under failures (seed 002 A.2.3, 5.2.1; seed 003 17.10.1) the outcome is
// all-or-nothing: every process of both groups gets the intercommunicator,
// or every one gets an error, of the same class at both roots (a process
// failure anywhere in either group during the call is ErrProcFailed at
// every process). A run-through communicator that is collectively
// inactive (an unrecognised failure) fails with ErrRankFailStop; a root
// that is a recognised failed process is ErrRank; recognised failures of
// either group are recognised in the new intercommunicator (it is
// validated at its creation).
//
// The info key "ftmpi_trace" = "true" at root makes it print a line on
// stderr ("ftmpi-trace: process P: MPI_Comm_accept: connected to process
// Q") once it has found the other root: an event to tie a fault injection
// to (ftmpirun --inject kill:...,on=TEXT).
func (c *Comm) Accept(port string, info *Info, root int) (*Comm, error) {
	ic, err := c.establish("MPI_Comm_accept", true, port, info, root, -1)
	return ic, c.handle(err)
}

// Connect connects to port, on which a group accepts, and returns an
// intercommunicator whose remote group is the accepting group
// (MPI_Comm_connect). It is collective over the intracommunicator c; port
// and info count at root only. It fails with ErrPort for a malformed
// port, one of another launcher, a closed port, or when the info key
// "timeout" (seconds) at root passes before the port's group accepts;
// with ErrProcFailed when the process that opened the port failed. The
// failure rules and the info key "ftmpi_trace" are Accept's.
func (c *Comm) Connect(port string, info *Info, root int) (*Comm, error) {
	ic, err := c.establish("MPI_Comm_connect", false, port, info, root, -1)
	return ic, c.handle(err)
}

// establish is Accept (accept) or Connect; peer >= 0 (Join) is the only
// process whose connection Accept takes, and whose failure ends its wait.
func (c *Comm) establish(op string, accept bool, port string, info *Info, root, peer int) (*Comm, error) {
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	if c.IsInter() {
		return nil, newErr(ErrComm, op, c, NoPeer, "needs an intracommunicator")
	}
	if root < 0 || root >= c.size {
		return nil, newErr(ErrRoot, op, c, root, "root %d out of range [0, %d)", root, c.size)
	}
	if slices.Contains(c.ftm().recognized(), c.groupProcs()[root]) {
		// Seed 003 17.10.1: recognition is agreed, so every process of c
		// returns this, and the other group is not contacted.
		return nil, newErr(ErrRank, op, c, root, "root %d is a recognised failed process (seed 003 17.10.1)", root)
	}
	b := c.base
	return inTurn(b.takeTurn(), op, func() (*Comm, error) {
		return c.establishInTurn(op, accept, port, info, root, peer)
	})
}

func (c *Comm) establishInTurn(op string, accept bool, port string, info *Info, root, peer int) (*Comm, error) {
	w := c.w
	var derr error // this process's first error
	fail := func(err error) {
		if derr == nil {
			derr = err
		}
	}
	procs := c.groupProcs()
	rootProc := procs[root]

	// The local group the internal collectives run on: c, or the view of
	// its alive members; none if c is collectively inactive here.
	lc, lroot := c, root
	v, inactive, _ := c.route(op)
	switch {
	case inactive != nil:
		fail(inactive())
		lc = nil
	case v != nil:
		lc = v.comm
		lroot = slices.Index(lc.groupProcs(), rootProc)
	}
	x := w.rt.NewConnection(lroot, c.rank == root, w.abort)

	// The roots find each other.
	if c.rank == root && derr == nil {
		fail(c.dpmRoot(op, accept, port, info, peer, x))
		if h := w.dpm.hook; h != nil && derr == nil {
			h("connected")
		}
	}

	var ic *Comm
	if lc != nil {
		x.Within(collSet(lc, op, tagDPMLocal))
		var err error
		if ic, err = c.dpmBuild(op, x, derr); err != nil {
			fail(err)
		}
	}

	// All or nothing: the verdict of each side, exchanged by the roots.
	// Two agreements over c (the runtime's: rte.CommFT.AgreeVote,
	// AgreeVerdict), the root exchanging its side's with the other root's.
	f := w.ftOf(c)
	var err error
	side, verr := f.d.AgreeVote(op, dpmCodeOf(derr), w.abort)
	var d rte.ConnectDecision
	if verr != nil {
		err = c.agreeErr(op, verr)
		fail(err)
	}
	var mm *rte.AgreeMismatch
	if !errors.As(verr, &mm) { // (a mismatch is every member's: none runs the verdict)
		d, verr = f.d.AgreeVerdict(op, x, side, rootProc, ErrProcFailed.code, w.abort)
		err = nil
		if verr != nil {
			err = c.agreeErr(op, verr)
			fail(err)
		}
	}
	x.End()
	ok := d.OK
	cls := decideClass(d.Codes)
	if err == nil && !d.RootIn {
		fail(newErr(ErrProcFailed, op, c, root, "the root failed during the call"))
	}
	if err == nil && ok && ic != nil {
		if _, rec := x.Remote(); len(rec) > 0 || len(c.ftm().recognized()) > 0 {
			// Seed 003 17.10.1: recognised failures stay recognised (both
			// sides know of the other's, so both validate).
			if _, verr := inTurn(ic.takeTurn(), op, func() (*Group, error) { return ic.validate(op) }); verr != nil {
				ic.discard()
				return nil, verr
			}
		}
		return ic, nil
	}
	if ic != nil {
		ic.discard()
	}
	if err != nil {
		cls = ErrorClass(derr)
	}
	if derr != nil && ErrorClass(derr) == cls {
		return nil, derr
	}
	if e, ok := derr.(*Error); ok {
		return nil, newErr(cls, op, c, NoPeer, "the connection failed (here: %s: %s)", e.Class, e.Detail)
	}
	if derr != nil {
		return nil, newErr(cls, op, c, NoPeer, "the connection failed (here: %v)", derr)
	}
	return nil, newErr(cls, op, c, NoPeer, "the connection failed at another process")
}

// dpmRoot is the root's part (the runtime's rte.Connection.Reach): it
// finds the other root and learns its group. The info key "timeout"
// (seconds) ends the wait; "ftmpi_trace" = "true" writes the trace line
// (to the World's diagnostics, rte.Diag: stderr unless a test replaces
// it) once the roots found each other.
func (c *Comm) dpmRoot(op string, accept bool, port string, info *Info, peer int, x *rte.Connection) error {
	timeout, err := dpmTimeout(op, c, info)
	if err != nil {
		return err
	}
	trace, _ := info.Get("ftmpi_trace")
	return c.w.dpmErr(op, c, x.Reach(rte.RootCall{Op: op, Port: port, Accept: accept, Procs: c.groupProcs(),
		Recognized: c.ftm().recognized(), Peer: peer, Timeout: timeout, Trace: trace == "true"}))
}

// dpmBuild broadcasts the other group within the side and agrees on the
// context ids of the intercommunicator with the other group (rootErr: the
// root's error so far, at the root).
func (c *Comm) dpmBuild(op string, x *rte.Connection, rootErr error) (*Comm, error) {
	w := c.w
	id, err := x.Share(dpmCodeOf(rootErr))
	if err != nil {
		return nil, w.dpmErr(op, c, err)
	}
	mine := c.groupProcs()
	remote, _ := x.Remote()
	for _, p := range remote {
		if slices.Contains(mine, p) {
			return nil, newErr(ErrGroup, op, c, NoPeer, "process %d is in both groups: the groups must be disjoint", p)
		}
	}
	x.AddRemoteEndpoints()
	and := func(words []uint64) error { return w.dpmErr(op, c, x.AND(words)) }
	pairs, err := ctxAgreement(w, c, op, 2, id|1<<59, true, and)
	if err != nil {
		return nil, err
	}
	kind := "connect"
	if op == "MPI_Comm_accept" {
		kind = "accept"
	}
	return newInter(c, derivedName(kind, c), pairs, mine, remote, c.rank), nil
}

// dpmCodeOf is a process's error as a class code for the decision (0:
// none).
func dpmCodeOf(err error) int {
	if err == nil {
		return 0
	}
	return classCode(err)
}

// dpmTimeout reads the info key "timeout" (seconds; 0: none).
func dpmTimeout(op string, c *Comm, info *Info) (time.Duration, error) {
	s, ok := info.Get("timeout")
	if !ok {
		return 0, nil
	}
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil || sec <= 0 {
		return 0, newErr(ErrInfoValue, op, c, NoPeer, "info timeout %q: want a positive number of seconds", s)
	}
	return max(time.Duration(sec*float64(time.Second)), 1), nil // a positive timeout too short for a Duration: at once
}

// dpmClasses are the classes a failed Accept or Connect can report, in
// order of precedence when the processes saw different ones.
var dpmClasses = []*Class{ErrRevoked, ErrProcFailed, ErrPort, ErrRank, ErrRoot, ErrInfoValue, ErrGroup, ErrComm, ErrArg, ErrIntern, ErrOther}

func classCode(err error) int {
	if err == nil {
		return ErrOther.code
	}
	if c := ErrorClass(err); slices.Contains(dpmClasses, c) {
		return c.code
	}
	return ErrOther.code
}

func classOf(code int) *Class {
	for _, c := range dpmClasses {
		if c.code == code {
			return c
		}
	}
	return ErrOther
}

// decideClass picks the class every process reports from the codes seen.
func decideClass(codes []int) *Class {
	for _, c := range dpmClasses {
		if slices.Contains(codes, c.code) {
			return c
		}
	}
	return ErrOther
}

// Disconnect waits for the communication on c to end at every process of
// c (both groups of an intercommunicator) and frees c (MPI_Comm_disconnect).
// It is collective. It completes normally despite process failures,
// whenever they happen and whether or not they are acknowledged (seed 003
// 17.10.1): the wait is a fault-tolerant agreement, which failed processes
// do not hold up. A revoked communicator is disconnected and freed too,
// and Disconnect then returns ErrRevoked: it is a non-local operation,
// which revocation makes raise ErrRevoked (seed 002 A.3.1), as Win.Free
// and File.Close do; the local Free returns nil (docs/semantics.md, "A
// revoked object is released").
func (c *Comm) Disconnect() error {
	const op = "MPI_Comm_disconnect"
	if err := checkLive(c, op); err != nil {
		return err
	}
	if !c.owned {
		return c.handle(newErr(ErrComm, op, c, NoPeer, "%s cannot be disconnected", c.name))
	}
	b := c.base
	if _, err := inTurn(b.takeTurn(), op, func() (uint64, error) {
		return b.agreeFlags(op, rte.StepCall, 1)
	}); err != nil {
		return c.handle(err) // the job ended
	}
	revoked := c.IsRevoked()
	if err := b.Free(); err != nil {
		return err
	}
	if revoked {
		return c.handle(newErr(ErrRevoked, op, c, NoPeer, "%s was revoked; it is disconnected and freed", c.name))
	}
	return nil
}
