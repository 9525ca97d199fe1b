package mpi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Establishing communication (MPI-4.1 11.8.3-11.8.6; seed 002 5.2.1 and
// A.2.3; seed 003 17.10.1): ports, Accept and Connect, the name service,
// Disconnect and Join, between processes of one launcher (a job and the
// jobs it spawned) or of one mpi.Run.
//
// A port is a number in the table of the process that opened it; its name
// carries that process's id, the port number, the job and, under
// ftmpirun, the process's address, so a connector of any job of the
// launcher can reach it. The two roots speak by control frames (ctl.Port)
// keyed by a connection id the connector chooses: the request (the
// connecting group and its addresses) goes to the port's process, which
// queues it for Accept (or refuses it at once if the port is closed); the
// accepting root answers with its group. Each root broadcasts the remote
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

// portPrefix starts every port name.
const portPrefix = "ftmpi-port:"

// portName is what a port name carries (JSON after portPrefix).
type portName struct {
	Job  string         `json:"job"`
	Proc int            `json:"proc"`
	Port int64          `json:"port"`
	Ep   *boot.Endpoint `json:"ep,omitempty"`
}

// dpmGroup is what a root sends the other: its group (process ids in rank
// order), their addresses (under ftmpirun) and the recognised failed ones.
type dpmGroup struct {
	Procs []int           `json:"procs"`
	Eps   []boot.Endpoint `json:"eps,omitempty"`
	Rec   []int           `json:"rec,omitempty"`
}

// Kinds of ctl.Port frames (Header.B).
const (
	dpmRequest = 1 // connector -> port's process: A = port number, payload a dpmGroup
	dpmRefuse  = 2 // -> connector: the port is closed; payload the reason
	dpmStep    = 3 // root -> root: A = step, payload the step's data
	dpmFinal   = 4 // root -> root: the side's verdict; payload flags, codes
)

// tagDPMLocal is the internal tag of Accept's and Connect's collectives
// within a group (on its collective context; see coll_util.go).
const tagDPMLocal int32 = -6

// dpmState is a World's ports and connections in progress.
type dpmState struct {
	mu       sync.Mutex
	nextPort int64
	ports    map[int64]*openPort
	nextConn uint32
	conns    map[uint64]*dpmConn
	names    boot.NameTable     // a singleton's name service
	hook     func(stage string) // tests: called at a root's stages (in package tests only)
}

// dpmStage reports that a root reached stage: a line on stderr if the
// call's info has "ftmpi_trace" = "true" (an event to tie a fault
// injection to), and the tests' hook.
func (w *World) dpmStage(op string, info *Info, stage string) {
	if v, _ := info.Get("ftmpi_trace"); v == "true" {
		fmt.Fprintf(os.Stderr, "ftmpi-trace: process %d: %s: %s\n", w.rank, op, stage)
	}
	if h := w.dpm.hook; h != nil {
		h(stage)
	}
}

// openPort is an open port: the connection requests not yet accepted.
type openPort struct {
	reqs []dpmReq
	wake chan struct{} // one token: a request arrived or the port closed
}

type dpmReq struct {
	from int
	id   uint64
	body []byte
}

// dpmConn is one connection being established, at a root.
type dpmConn struct {
	peer  int // the other root's process id
	id    uint64
	ch    chan dpmMsg
	final *dpmMsg // the other root's verdict, met while waiting for a step
}

type dpmMsg struct {
	kind uint64
	step uint64
	body []byte
}

// jobID names this process's launch: ports of another launch are refused.
func (w *World) jobID() string {
	switch {
	case w.proc != nil:
		return w.proc.Info().Job
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
	w.dpm.mu.Lock()
	w.dpm.nextPort++
	n := w.dpm.nextPort
	if w.dpm.ports == nil {
		w.dpm.ports = make(map[int64]*openPort)
	}
	w.dpm.ports[n] = &openPort{wake: make(chan struct{}, 1)}
	w.dpm.mu.Unlock()
	pn := portName{Job: w.jobID(), Proc: w.rank, Port: n}
	if w.net != nil {
		if ep, ok := w.net.Endpoint(w.rank); ok {
			pn.Ep = &ep
		}
	}
	b, _ := json.Marshal(pn)
	return portPrefix + string(b), nil
}

// ClosePort closes a port this process opened (MPI_Close_port): a pending
// Accept on it fails with ErrPort, and the connectors it has not accepted
// are refused (their Connect fails with ErrPort).
func (w *World) ClosePort(port string) error {
	const op = "MPI_Close_port"
	pn, err := parsePort(op, port)
	if err != nil {
		return err
	}
	if pn.Job != w.jobID() || pn.Proc != w.rank {
		return newErr(ErrPort, op, nil, NoPeer, "port %s was not opened by this process", port)
	}
	w.dpm.mu.Lock()
	p := w.dpm.ports[pn.Port]
	delete(w.dpm.ports, pn.Port)
	w.dpm.mu.Unlock()
	if p == nil {
		return newErr(ErrPort, op, nil, NoPeer, "port %d is not open", pn.Port)
	}
	for _, r := range p.reqs {
		w.dpmRefuse(r.from, r.id, "the port was closed")
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

func parsePort(op, port string) (portName, error) {
	var pn portName
	body, ok := strings.CutPrefix(port, portPrefix)
	if !ok {
		return pn, newErr(ErrPort, op, nil, NoPeer, "%q is not a port name (it does not start with %q)", port, portPrefix)
	}
	if err := json.Unmarshal([]byte(body), &pn); err != nil || pn.Port < 1 || pn.Proc < 0 {
		return pn, newErr(ErrPort, op, nil, NoPeer, "malformed port name %q", port)
	}
	return pn, nil
}

// dpmRefuse tells connector from that its request id is refused.
func (w *World) dpmRefuse(from int, id uint64, reason string) {
	_ = w.eng.SendControl(from, transport.Header{Tag: int32(ctl.Port), B: dpmRefuse, Seq: id}, []byte(reason))
}

// onPort handles a ctl.Port frame (on a transport goroutine: it does not
// block).
func (w *World) onPort(from int, h transport.Header, payload []byte) {
	switch h.B {
	case dpmRequest:
		var g dpmGroup
		if err := json.Unmarshal(payload, &g); err != nil {
			w.dpmRefuse(from, h.Seq, "malformed connection request")
			return
		}
		w.addEndpoints(g.Eps) // so that the answer reaches the connector
		w.dpm.mu.Lock()
		p := w.dpm.ports[int64(h.A)]
		if p != nil {
			p.reqs = append(p.reqs, dpmReq{from: from, id: h.Seq, body: slices.Clone(payload)})
		}
		w.dpm.mu.Unlock()
		if p == nil {
			w.dpmRefuse(from, h.Seq, fmt.Sprintf("port %d of process %d is not open", h.A, w.rank))
			return
		}
		select {
		case p.wake <- struct{}{}:
		default:
		}
	case dpmRefuse, dpmStep, dpmFinal:
		w.dpm.mu.Lock()
		c := w.dpm.conns[h.Seq]
		if c == nil && h.B == dpmFinal {
			// A connector that gave up before its request was accepted:
			// withdraw the request.
			for _, p := range w.dpm.ports {
				p.reqs = slices.DeleteFunc(p.reqs, func(r dpmReq) bool { return r.id == h.Seq && r.from == from })
			}
		}
		w.dpm.mu.Unlock()
		if c == nil || c.peer != from {
			return // a connection that ended here
		}
		select {
		case c.ch <- dpmMsg{kind: h.B, step: h.A, body: slices.Clone(payload)}:
		default:
			// The exchanges alternate, so at most a few frames are pending.
		}
	}
}

// addEndpoints makes processes of another job reachable (under ftmpirun).
func (w *World) addEndpoints(eps []boot.Endpoint) {
	if w.net == nil || len(eps) == 0 {
		return
	}
	var add []boot.Endpoint
	for _, ep := range eps {
		if ep.Rank == w.rank || len(ep.Addrs) == 0 {
			continue
		}
		if _, ok := w.net.Endpoint(ep.Rank); !ok {
			add = append(add, ep)
		}
	}
	if len(add) > 0 {
		w.net.AddPeers(add)
		w.hosts.add(add)
	}
}

// myGroup is what a root tells the other root of group procs.
func (w *World) myGroup(procs []int, rec []int) dpmGroup {
	g := dpmGroup{Procs: procs, Rec: rec}
	if w.net != nil {
		for _, p := range procs {
			if ep, ok := w.net.Endpoint(p); ok {
				g.Eps = append(g.Eps, ep)
			}
		}
	}
	return g
}

func (w *World) newConn(id uint64, peer int) *dpmConn {
	c := &dpmConn{peer: peer, id: id, ch: make(chan dpmMsg, 16)}
	w.dpm.mu.Lock()
	if w.dpm.conns == nil {
		w.dpm.conns = make(map[uint64]*dpmConn)
	}
	w.dpm.conns[id] = c
	w.dpm.mu.Unlock()
	return c
}

func (w *World) endConn(c *dpmConn) {
	w.dpm.mu.Lock()
	delete(w.dpm.conns, c.id)
	w.dpm.mu.Unlock()
}

func (w *World) sendStep(c *dpmConn, kind, step uint64, body []byte) error {
	return w.eng.SendControl(c.peer, transport.Header{Tag: int32(ctl.Port), B: kind, A: step, Seq: c.id}, body)
}

// errGaveUp: the other root sent its verdict while this one waited for a
// step (its side failed).
var errGaveUp = errors.New("the other group gave up")

// wait returns the other root's message of kind (dpmStep with step, or
// dpmFinal), or an error: the other root failed (ErrProcFailed), refused
// (ErrPort), gave up, the deadline passed, or the job ended.
func (w *World) wait(c *dpmConn, kind, step uint64, op string, comm *Comm, deadline <-chan time.Time) (dpmMsg, error) {
	if kind == dpmFinal && c.final != nil {
		return *c.final, nil
	}
	take := func(m dpmMsg) (dpmMsg, bool, error) {
		switch {
		case m.kind == dpmRefuse:
			return m, true, newErr(ErrPort, op, comm, NoPeer, "refused by process %d: %s", c.peer, m.body)
		case m.kind == kind && (kind == dpmFinal || m.step == step):
			return m, true, nil
		case m.kind == dpmFinal:
			c.final = &m
			return m, true, errGaveUp
		}
		return m, false, nil // a stale step: dropped
	}
	for {
		sig := w.eng.FailureSignal()
		select {
		case m := <-c.ch:
			if m, ok, err := take(m); ok {
				return m, err
			}
			continue
		default:
		}
		if w.eng.IsLost(c.peer) {
			return dpmMsg{}, newErr(ErrProcFailed, op, comm, NoPeer, "the other root (process %d) failed", c.peer)
		}
		select {
		case m := <-c.ch:
			if m, ok, err := take(m); ok {
				return m, err
			}
		case <-sig:
		case <-deadline:
			return dpmMsg{}, newErr(ErrPort, op, comm, NoPeer, "timed out waiting for process %d", c.peer)
		case <-w.abort:
			return dpmMsg{}, w.abortedErr(op, comm)
		case <-w.stop:
			return dpmMsg{}, w.abortedErr(op, comm)
		}
	}
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
	ic, err := c.establish("MPI_Comm_accept", true, port, info, root)
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
	ic, err := c.establish("MPI_Comm_connect", false, port, info, root)
	return ic, c.handle(err)
}

func (c *Comm) establish(op string, accept bool, port string, info *Info, root int) (*Comm, error) {
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
		return c.establishInTurn(op, accept, port, info, root)
	})
}

// dpmCall is one process's part of one Accept or Connect.
type dpmCall struct {
	c      *Comm
	w      *World
	op     string
	root   int
	me     bool
	conn   *dpmConn // at the root, once the other root is known
	err    error    // this process's first error
	steps  uint64
	remote dpmGroup
}

// fail records err as this process's error (the first one counts).
func (d *dpmCall) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (c *Comm) establishInTurn(op string, accept bool, port string, info *Info, root int) (*Comm, error) {
	w := c.w
	d := &dpmCall{c: c, w: w, op: op, root: root, me: c.rank == root}
	procs := c.groupProcs()
	rootProc := procs[root]

	// The local group the internal collectives run on: c, or the view of
	// its alive members; none if c is collectively inactive here.
	lc, lroot := c, root
	v, fail, _ := c.route(op)
	switch {
	case fail != nil:
		d.fail(fail())
		lc = nil
	case v != nil:
		lc = v.comm
		lroot = slices.Index(lc.groupProcs(), rootProc)
	}

	// The roots find each other.
	var id uint64
	if d.me && d.err == nil {
		if accept {
			d.fail(d.acceptRoot(port, info, procs))
		} else {
			d.fail(d.connectRoot(port, info, procs))
		}
		if d.conn != nil {
			id = d.conn.id
			if d.err == nil {
				w.dpmStage(op, info, fmt.Sprintf("connected to process %d", d.conn.peer))
			}
		}
	}

	var ic *Comm
	if lc != nil {
		loc := collSet(lc, op, tagDPMLocal)
		ic = d.build(lc, loc, lroot, id)
	}

	// All or nothing: the verdict of each side, exchanged by the roots.
	f := w.ftOf(c)
	pos := f.pos(rootProc)
	side, _, err := c.agreeOn(op, dpmVote(d.err))
	if err != nil {
		d.fail(err)
	}
	verdict := agree.Value{Flags: 1}
	if d.me {
		verdict = d.exchangeVerdict(side)
	}
	res, contrib, err := c.agreeOn(op, verdict)
	if err != nil {
		d.fail(err)
	}
	if d.conn != nil {
		w.endConn(d.conn)
	}
	ok, cls := dpmDecide(res, contrib, pos)
	if err == nil && !contrib.Has(pos) {
		d.fail(newErr(ErrProcFailed, op, c, root, "the root failed during the call"))
	}
	if err == nil && ok && ic != nil {
		if len(d.remote.Rec) > 0 || len(c.ftm().recognized()) > 0 {
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
		cls = ErrorClass(d.err)
	}
	if d.err != nil && ErrorClass(d.err) == cls {
		return nil, d.err
	}
	if e, ok := d.err.(*Error); ok {
		return nil, newErr(cls, op, c, NoPeer, "the connection failed (here: %s: %s)", e.Class, e.Detail)
	}
	if d.err != nil {
		return nil, newErr(cls, op, c, NoPeer, "the connection failed (here: %v)", d.err)
	}
	return nil, newErr(cls, op, c, NoPeer, "the connection failed at another process")
}

// build broadcasts the other group within lc and agrees on the context
// ids of the intercommunicator with the other group; it returns the
// intercommunicator, or nil with d.err set.
func (d *dpmCall) build(lc *Comm, loc interface {
	ReduceAND([]uint64, int) error
	BcastTree([]byte, int) error
}, lroot int, id uint64) *Comm {
	c, op := d.c, d.op
	n := lc.size
	var body []byte
	hdr := make([]byte, 24) // error class code (0: ok), length of the group, connection id
	if d.me {
		if d.err != nil {
			binary.LittleEndian.PutUint64(hdr, uint64(classCode(d.err)))
		} else {
			body, _ = json.Marshal(d.remote)
			binary.LittleEndian.PutUint64(hdr[8:], uint64(len(body)))
			binary.LittleEndian.PutUint64(hdr[16:], id)
		}
	}
	if n > 1 {
		if err := loc.BcastTree(hdr, lroot); err != nil {
			d.fail(err)
			return nil
		}
	}
	if code := int(binary.LittleEndian.Uint64(hdr)); code != 0 {
		d.fail(newErr(classOf(code), op, c, NoPeer, "the root could not reach the other group"))
		return nil
	}
	id = binary.LittleEndian.Uint64(hdr[16:])
	if !d.me {
		body = make([]byte, binary.LittleEndian.Uint64(hdr[8:]))
	}
	if n > 1 {
		if err := loc.BcastTree(body, lroot); err != nil {
			d.fail(err)
			return nil
		}
	}
	if !d.me {
		if err := json.Unmarshal(body, &d.remote); err != nil {
			d.fail(newErr(ErrIntern, op, c, NoPeer, "bad group from the root: %v", err))
			return nil
		}
	}
	mine := c.groupProcs()
	for _, p := range d.remote.Procs {
		if slices.Contains(mine, p) {
			d.fail(newErr(ErrGroup, op, c, NoPeer, "process %d is in both groups: the groups must be disjoint", p))
			return nil
		}
	}
	if len(d.remote.Procs) == 0 {
		d.fail(newErr(ErrIntern, op, c, NoPeer, "empty remote group"))
		return nil
	}
	d.w.addEndpoints(d.remote.Eps)

	// The context ids: rounds of an AND within the group and between the
	// roots. A status word (all ones: ok) carries a failure's class.
	and := func(words []uint64) error {
		ext := append(slices.Clone(words), ^uint64(0))
		last := len(words)
		if err := loc.ReduceAND(ext, lroot); err != nil {
			return err
		}
		var ferr error
		if d.me {
			d.steps++
			if ferr = d.w.sendStep(d.conn, dpmStep, d.steps, slices.Clone(asBytes(ext[:last]))); ferr == nil {
				var m dpmMsg
				if m, ferr = d.w.wait(d.conn, dpmStep, d.steps, op, c, nil); ferr == nil && len(m.body) == 8*last {
					for i := range last {
						ext[i] &= binary.LittleEndian.Uint64(m.body[8*i:])
					}
				} else if ferr == nil {
					ferr = newErr(ErrIntern, op, c, NoPeer, "the other root sent %d bytes, expected %d", len(m.body), 8*last)
				}
			} else {
				ferr = newErr(ErrProcFailed, op, c, NoPeer, "the other root (process %d) failed", d.conn.peer)
			}
			if ferr != nil {
				ext[last] = uint64(classCode(ferr))
			}
		}
		if n > 1 {
			if err := loc.BcastTree(asBytes(ext), lroot); err != nil {
				return err
			}
		}
		if ferr != nil {
			return ferr
		}
		if ext[last] != ^uint64(0) {
			return newErr(classOf(int(ext[last])), op, c, NoPeer, "the exchange between the roots failed")
		}
		copy(words, ext)
		return nil
	}
	pairs, err := ctxAgreement(d.w, c, op, 2, id|1<<59, true, and)
	if err != nil {
		d.fail(err)
		return nil
	}
	kind := "connect"
	if d.op == "MPI_Comm_accept" {
		kind = "accept"
	}
	return newInter(c, derivedName(kind, c), pairs, mine, d.remote.Procs, c.rank)
}

// exchangeVerdict sends this side's verdict to the other root and
// combines it with the other's (the root only).
func (d *dpmCall) exchangeVerdict(side agree.Value) agree.Value {
	if d.conn == nil { // the roots never found each other: this side failed
		return dpmCombine(side, nil, ErrIntern.code)
	}
	if err := d.w.sendStep(d.conn, dpmFinal, 0, dpmEncode(side)); err != nil {
		return dpmCombine(side, nil, ErrProcFailed.code)
	}
	m, err := d.w.wait(d.conn, dpmFinal, 0, d.op, d.c, nil)
	if err != nil {
		return dpmCombine(side, nil, classCode(err))
	}
	other, ok := dpmDecode(m.body)
	if !ok {
		return dpmCombine(side, nil, ErrIntern.code)
	}
	return dpmCombine(side, &other, 0)
}

// connectRoot sends the connection request and waits for the answer.
func (d *dpmCall) connectRoot(port string, info *Info, procs []int) error {
	w, op, c := d.w, d.op, d.c
	pn, err := parsePort(op, port)
	if err != nil {
		return err
	}
	if pn.Job != w.jobID() {
		return newErr(ErrPort, op, c, NoPeer, "port %q belongs to another job (ports reach the processes of one launcher or one mpi.Run)", port)
	}
	if pn.Proc == w.rank {
		return newErr(ErrPort, op, c, NoPeer, "port %q is this process's own: Accept and Connect need two processes", port)
	}
	deadline, stop, err := dpmDeadline(op, c, info)
	if err != nil {
		return err
	}
	defer stop()
	if pn.Ep != nil {
		w.addEndpoints([]boot.Endpoint{*pn.Ep})
	}
	w.dpm.mu.Lock()
	w.dpm.nextConn++
	id := uint64(w.rank)<<32 | uint64(w.dpm.nextConn)
	w.dpm.mu.Unlock()
	d.conn = w.newConn(id, pn.Proc)
	body, _ := json.Marshal(w.myGroup(procs, c.ftm().recognized()))
	if err := w.eng.SendControl(pn.Proc, transport.Header{Tag: int32(ctl.Port), B: dpmRequest, A: uint64(pn.Port), Seq: id}, body); err != nil {
		return newErr(ErrProcFailed, op, c, NoPeer, "the process that opened the port (%d) failed", pn.Proc)
	}
	m, err := w.wait(d.conn, dpmStep, 0, op, c, deadline)
	if err == nil {
		err = json.Unmarshal(m.body, &d.remote)
	}
	if err != nil && !errors.Is(err, errGaveUp) {
		// Withdraw: the accepting root, if it took the request, ends its
		// side of the connection on this verdict.
		_ = w.sendStep(d.conn, dpmFinal, 0, putInts(0, int64(classCode(err))))
		w.endConn(d.conn)
		d.conn = nil
	}
	return err
}

// acceptRoot waits for a connection request on port and answers it.
func (d *dpmCall) acceptRoot(port string, info *Info, procs []int) error {
	w, op, c := d.w, d.op, d.c
	pn, err := parsePort(op, port)
	if err != nil {
		return err
	}
	if pn.Job != w.jobID() || pn.Proc != w.rank {
		return newErr(ErrPort, op, c, NoPeer, "port %q was not opened by this process (the root)", port)
	}
	deadline, stop, err := dpmDeadline(op, c, info)
	if err != nil {
		return err
	}
	defer stop()
	for {
		w.dpm.mu.Lock()
		p := w.dpm.ports[pn.Port]
		if p == nil {
			w.dpm.mu.Unlock()
			return newErr(ErrPort, op, c, NoPeer, "port %d is not open", pn.Port)
		}
		if len(p.reqs) > 0 {
			r := p.reqs[0]
			p.reqs = p.reqs[1:]
			if w.dpm.conns == nil {
				w.dpm.conns = make(map[uint64]*dpmConn)
			}
			d.conn = &dpmConn{peer: r.from, id: r.id, ch: make(chan dpmMsg, 16)}
			w.dpm.conns[r.id] = d.conn
			w.dpm.mu.Unlock()
			var g dpmGroup
			if err := json.Unmarshal(r.body, &g); err != nil {
				return newErr(ErrIntern, op, c, NoPeer, "bad connection request: %v", err)
			}
			d.remote = g
			body, _ := json.Marshal(w.myGroup(procs, c.ftm().recognized()))
			if err := w.sendStep(d.conn, dpmStep, 0, body); err != nil {
				return newErr(ErrProcFailed, op, c, NoPeer, "the connecting root (process %d) failed", r.from)
			}
			return nil
		}
		wake := p.wake
		w.dpm.mu.Unlock()
		select {
		case <-wake:
		case <-deadline:
			return newErr(ErrPort, op, c, NoPeer, "no connection on port %d before the timeout", pn.Port)
		case <-w.abort:
			return w.abortedErr(op, c)
		case <-w.stop:
			return w.abortedErr(op, c)
		}
	}
}

// dpmDeadline reads the info key "timeout" (seconds).
func dpmDeadline(op string, c *Comm, info *Info) (<-chan time.Time, func(), error) {
	s, ok := info.Get("timeout")
	if !ok {
		return nil, func() {}, nil
	}
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil || sec <= 0 {
		return nil, nil, newErr(ErrInfoValue, op, c, NoPeer, "info timeout %q: want a positive number of seconds", s)
	}
	t := time.NewTimer(time.Duration(sec * float64(time.Second)))
	return t.C, func() { t.Stop() }, nil
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
func decideClass(codes agree.Set) *Class {
	for _, c := range dpmClasses {
		if codes.Has(c.code) {
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
	if _, err := inTurn(b.takeTurn(), op, func() (agree.Value, error) {
		v, _, err := b.agreeOn(op, agree.Value{Flags: 1})
		return v, err
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
