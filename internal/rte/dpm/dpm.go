// Package dpm is the protocol of MPI's dynamic-process calls between the
// processes of one launcher (a job and the jobs it spawned) or of one
// mpi.Run: the port table of MPI_Open_port and MPI_Close_port, the
// connect/accept handshake of the two roots over ctl.Port control frames,
// the rounds each side runs within its own group (the remote group
// broadcast, the context-id AND exchanged by the roots), the
// all-or-nothing decision (Vote, Combine, Decide), MPI_Comm_join's socket
// handshake, and the key naming one MPI_Comm_spawn call.
//
// A port is a number in the table of the process that opened it; its name
// (PortName) carries that process's id, the port number, the job and,
// under ftmpirun, the process's address. The connector sends a Request
// (its group) keyed by a connection id it chooses; the port's process
// queues it for Accept or refuses it at once if the port is closed; the
// accepting root answers with its group (Step 0). Then the roots exchange
// the steps of the context-id agreement and their sides' verdicts (Final).
// A verdict that arrives while a root waits for a step means the other
// side gave up (ErrGaveUp).
//
// The package owns the protocol's state and codecs. It must not build
// communicators, map errors to MPI classes (Config.Code does, given by
// the binding), run collectives (a side's collectives come through
// Local), or reach the transport other than through Net; it must not
// block a transport goroutine (OnFrame only queues), and every wait must
// end on the peer's failure, the deadline or the job's end (Cancel). Dropped
// frames and the trace lines of Trace go to Config.Log.
package dpm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// The kinds of errors (errors.Is); each *Error also says what happened.
var (
	ErrPort       = errors.New("port")                    // a malformed port name, one of another job or process, a closed port, a refusal, a timeout
	ErrPeerFailed = errors.New("peer failed")             // the other root (or the port's process) failed
	ErrGaveUp     = errors.New("the other group gave up") // the other root sent its verdict while this one waited for a step
	ErrMalformed  = errors.New("malformed")               // a frame, group or verdict that does not decode
	ErrNoConn     = errors.New("no connection")           // the roots never found each other
	ErrRemote     = errors.New("remote")                  // another process's error, by its class code (Error.Code)
	ErrAborted    = errors.New("aborted")                 // the job ended (Cancel.Abort or Cancel.Stop)
	ErrJoin       = errors.New("join")                    // MPI_Comm_join's handshake failed
)

// Error is an error of this package: Kind is one of the Err variables,
// Code the class code of an ErrRemote error, Detail what happened.
type Error struct {
	Kind   error
	Code   int
	Detail string
}

func (e *Error) Error() string { return e.Detail }
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Net is what the protocol needs of the rank's runtime (the engine and,
// under ftmpirun, the sockets).
type Net interface {
	// SendControl sends a control frame without blocking; an error means
	// the peer is lost.
	SendControl(to int, h transport.Header, payload []byte) error
	// IsLost reports whether proc is known failed.
	IsLost(proc int) bool
	// FailureSignal is closed at the next failure (then asked again).
	FailureSignal() <-chan struct{}
	// Endpoint is proc's address, if known (ftmpirun).
	Endpoint(proc int) (boot.Endpoint, bool)
	// Endpoints is the addresses known of procs, in their order (those
	// not known left out), read in one lookup where the launcher takes
	// several: a group's, not one lookup a process.
	Endpoints(procs []int) []boot.Endpoint
	// AddEndpoints makes processes of another job reachable.
	AddEndpoints(eps []boot.Endpoint)
}

// Config is a Table's.
type Config struct {
	Self int    // this process's id
	Job  string // this process's launch: ports of another are refused
	Net  Net
	// Code is the MPI error class code of err (an *Error of this package
	// or the binding's), carried in the verdicts and withdrawals.
	Code func(err error) int
	// Log receives the trace lines (Trace) and the dropped frames; nil:
	// os.Stderr.
	Log io.Writer
}

// Table is one process's ports and connections in progress.
type Table struct {
	cfg Config

	mu       sync.Mutex
	nextPort int64
	ports    map[int64]*port
	nextConn uint32
	conns    map[uint64]*Conn
}

// port is an open port: the connection requests not yet accepted.
type port struct {
	reqs []request
	wake chan struct{} // one token: a request arrived or the port closed
}

type request struct {
	from int
	id   uint64
	g    Group
}

// New returns the table of process cfg.Self.
func New(cfg Config) (*Table, error) {
	switch {
	case cfg.Net == nil:
		return nil, errors.New("dpm: no Net")
	case cfg.Code == nil:
		return nil, errors.New("dpm: no Code")
	case cfg.Self < 0:
		return nil, fmt.Errorf("dpm: process id %d", cfg.Self)
	case cfg.Job == "":
		return nil, errors.New("dpm: no job")
	}
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	return &Table{cfg: cfg, ports: make(map[int64]*port), conns: make(map[uint64]*Conn)}, nil
}

// Trace writes op's stage as a trace line ("ftmpi-trace: process P: OP:
// STAGE"), an event a fault injection ties to (ftmpirun --inject
// kill:...,on=TEXT).
func (t *Table) Trace(op, stage string) {
	fmt.Fprintf(t.cfg.Log, "ftmpi-trace: process %d: %s: %s\n", t.cfg.Self, op, stage)
}

// Open opens a port and returns its name.
func (t *Table) Open() string {
	t.mu.Lock()
	t.nextPort++
	n := t.nextPort
	t.ports[n] = &port{wake: make(chan struct{}, 1)}
	t.mu.Unlock()
	pn := PortName{Job: t.cfg.Job, Proc: t.cfg.Self, Port: n}
	if ep, ok := t.cfg.Net.Endpoint(t.cfg.Self); ok {
		pn.Ep = &ep
	}
	return pn.String()
}

// own parses name, a port of this process.
func (t *Table) own(name string) (PortName, error) {
	pn, err := ParsePort(name)
	if err != nil {
		return pn, err
	}
	if pn.Job != t.cfg.Job || pn.Proc != t.cfg.Self {
		return pn, errorf(ErrPort, "port %s was not opened by this process", truncate(name, 80))
	}
	return pn, nil
}

// Close closes a port of this process: a pending Accept on it fails, and
// the connectors not accepted are refused.
func (t *Table) Close(name string) error {
	pn, err := t.own(name)
	if err != nil {
		return err
	}
	t.mu.Lock()
	p := t.ports[pn.Port]
	delete(t.ports, pn.Port)
	t.mu.Unlock()
	if p == nil {
		return errorf(ErrPort, "port %d is not open", pn.Port)
	}
	for _, r := range p.reqs {
		t.refuse(r.from, r.id, "the port was closed")
	}
	wake(p.wake)
	return nil
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Pending is the number of connection requests queued on the port number
// n, or -1 if it is not open (tests).
func (t *Table) Pending(n int64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.ports[n]; p != nil {
		return len(p.reqs)
	}
	return -1
}

// refuse tells connector from that its request id is refused.
func (t *Table) refuse(from int, id uint64, reason string) {
	f := Frame{Kind: Refuse, ID: id, Body: []byte(reason)}
	_ = t.cfg.Net.SendControl(from, f.Header(), f.Body)
}

// Handle is OnFrame for the control table: a frame it drops is written to
// Config.Log.
func (t *Table) Handle(from int, h transport.Header, payload []byte) {
	if err := t.OnFrame(from, h, payload); err != nil {
		fmt.Fprintf(t.cfg.Log, "ftmpi: process %d: port frame from process %d dropped: %v\n", t.cfg.Self, from, err)
	}
}

// OnFrame handles a ctl.Port frame from process from (on a transport
// goroutine: it queues, sends at most a refusal, never blocks). A frame
// that does not decode is an error (and dropped); a malformed connection
// request is refused; a frame of a connection that ended here is dropped
// silently.
func (t *Table) OnFrame(from int, h transport.Header, payload []byte) error {
	f, err := DecodeFrame(h, payload)
	if err != nil {
		return err
	}
	switch f.Kind {
	case Request:
		g, err := DecodeGroup(f.Body)
		if err != nil {
			t.refuse(from, f.ID, "malformed connection request: "+err.Error())
			return nil
		}
		if !slices.Contains(g.Procs, from) {
			t.refuse(from, f.ID, fmt.Sprintf("malformed connection request: the sender, process %d, is not in its group", from))
			return nil
		}
		t.cfg.Net.AddEndpoints(g.Eps) // so that the answer reaches the connector
		t.mu.Lock()
		p := t.ports[int64(f.A)]
		if p != nil {
			p.reqs = append(p.reqs, request{from: from, id: f.ID, g: g})
		}
		t.mu.Unlock()
		if p == nil {
			t.refuse(from, f.ID, fmt.Sprintf("port %d of process %d is not open", f.A, t.cfg.Self))
			return nil
		}
		wake(p.wake)
	default:
		t.mu.Lock()
		c := t.conns[f.ID]
		if c == nil && f.Kind == Final {
			// A connector that gave up before its request was accepted:
			// withdraw the request.
			for _, p := range t.ports {
				p.reqs = slices.DeleteFunc(p.reqs, func(r request) bool { return r.id == f.ID && r.from == from })
			}
		}
		t.mu.Unlock()
		if c == nil || c.peer != from {
			return nil // a connection that ended here
		}
		select {
		case c.ch <- msg{kind: f.Kind, step: f.A, body: slices.Clone(f.Body)}:
		default:
			// The exchanges alternate, so at most a few frames are pending;
			// a peer flooding them is ignored.
		}
	}
	return nil
}

// Unopened handles a ctl.Port frame at process self that has no Table
// (it opened no port and started no connection): a request is refused
// ("not open"), any other frame dropped; an undecodable one is an error.
func Unopened(net Net, self, from int, h transport.Header, payload []byte) error {
	f, err := DecodeFrame(h, payload)
	if err != nil {
		return err
	}
	if f.Kind == Request {
		r := Frame{Kind: Refuse, ID: f.ID, Body: []byte(fmt.Sprintf("port %d of process %d is not open", f.A, self))}
		_ = net.SendControl(from, r.Header(), r.Body)
	}
	return nil
}

// Conn is one connection being established, at a root.
type Conn struct {
	t     *Table
	peer  int // the other root's process id
	id    uint64
	ch    chan msg
	final *msg // the other root's verdict, met while waiting for a step
	steps uint64
}

type msg struct {
	kind Kind
	step uint64
	body []byte
}

// Peer is the other root's process id.
func (c *Conn) Peer() int { return c.peer }

// ID is the connection id (the same at both roots).
func (c *Conn) ID() uint64 { return c.id }

func (t *Table) register(peer int, id uint64) *Conn {
	c := &Conn{t: t, peer: peer, id: id, ch: make(chan msg, 16)}
	t.conns[id] = c
	return c
}

// End forgets the connection: later frames of it are dropped.
func (c *Conn) End() {
	c.t.mu.Lock()
	if c.t.conns[c.id] == c {
		delete(c.t.conns, c.id)
	}
	c.t.mu.Unlock()
}

func (c *Conn) send(kind Kind, step uint64, body []byte) error {
	f := Frame{Kind: kind, A: step, ID: c.id, Body: body}
	if err := c.t.cfg.Net.SendControl(c.peer, f.Header(), f.Body); err != nil {
		return errorf(ErrPeerFailed, "the other root (process %d) failed", c.peer)
	}
	return nil
}

// Cancel is what ends a wait besides the protocol: the deadline (nil:
// none) and the channels closed when the job ends (nil: never).
type Cancel struct {
	Deadline    <-chan time.Time
	Abort, Stop <-chan struct{}
}

// wait returns the other root's message of kind (Step with step, or
// Final), or an error: the other root failed (ErrPeerFailed), refused
// (ErrPort), gave up (ErrGaveUp), the deadline passed (ErrPort), or the
// job ended (ErrAborted).
func (c *Conn) wait(kind Kind, step uint64, cn Cancel) (msg, error) {
	if kind == Final && c.final != nil {
		return *c.final, nil
	}
	take := func(m msg) (msg, bool, error) {
		switch {
		case m.kind == Refuse:
			return m, true, errorf(ErrPort, "refused by process %d: %s", c.peer, truncate(string(m.body), maxRefuse))
		case m.kind == kind && (kind == Final || m.step == step):
			return m, true, nil
		case m.kind == Final:
			c.final = &m
			return m, true, errorf(ErrGaveUp, "the other group (process %d) gave up", c.peer)
		}
		return m, false, nil // a stale step: dropped
	}
	net := c.t.cfg.Net
	for {
		sig := net.FailureSignal()
		select {
		case m := <-c.ch:
			if m, ok, err := take(m); ok {
				return m, err
			}
			continue
		default:
		}
		if net.IsLost(c.peer) {
			return msg{}, errorf(ErrPeerFailed, "the other root (process %d) failed", c.peer)
		}
		select {
		case m := <-c.ch:
			if m, ok, err := take(m); ok {
				return m, err
			}
		case <-sig:
		case <-cn.Deadline:
			return msg{}, errorf(ErrPort, "timed out waiting for process %d", c.peer)
		case <-cn.Abort:
			return msg{}, errorf(ErrAborted, "the job ended")
		case <-cn.Stop:
			return msg{}, errorf(ErrAborted, "the job ended")
		}
	}
}

// Connect is the connecting root's part: it sends the request for port
// (a port name of another process of this job) with its group mine and
// waits for the accepting root's group. On success it returns the
// connection and the remote group. On ErrGaveUp it returns the
// connection too (its verdict is kept for Verdict); on any other error no
// connection, and the request is withdrawn.
func (t *Table) Connect(name string, mine Group, cn Cancel) (*Conn, Group, error) {
	pn, err := ParsePort(name)
	if err != nil {
		return nil, Group{}, err
	}
	if pn.Job != t.cfg.Job {
		return nil, Group{}, errorf(ErrPort, "port %s belongs to another job (ports reach the processes of one launcher or one mpi.Run)", truncate(name, 80))
	}
	if pn.Proc == t.cfg.Self {
		return nil, Group{}, errorf(ErrPort, "port %s is this process's own: Accept and Connect need two processes", truncate(name, 80))
	}
	if pn.Ep != nil {
		t.cfg.Net.AddEndpoints([]boot.Endpoint{*pn.Ep})
	}
	t.mu.Lock()
	t.nextConn++
	id := uint64(t.cfg.Self)<<32 | uint64(t.nextConn)
	c := t.register(pn.Proc, id)
	t.mu.Unlock()
	req := Frame{Kind: Request, A: uint64(pn.Port), ID: id, Body: EncodeGroup(mine)}
	if err := t.cfg.Net.SendControl(pn.Proc, req.Header(), req.Body); err != nil {
		c.End()
		return nil, Group{}, errorf(ErrPeerFailed, "the process that opened the port (%d) failed", pn.Proc)
	}
	m, err := c.wait(Step, 0, cn)
	var g Group
	if err == nil {
		g, err = DecodeGroup(m.body)
	}
	if errors.Is(err, ErrGaveUp) {
		return c, Group{}, err
	}
	if err != nil {
		// Withdraw: the accepting root, if it took the request, ends its
		// side of the connection on this verdict.
		_ = c.send(Final, 0, EncodeVerdict(Combine(yes(), nil, t.cfg.Code(err))))
		c.End()
		return nil, Group{}, err
	}
	return c, g, nil
}

// Accept is the accepting root's part: it waits for a connection request
// on port (a port name of this process), answers it with its group mine,
// and returns the connection and the connecting group. from >= 0 takes
// only a request of process from and ends the wait with ErrPeerFailed if
// it fails (Join, which knows its peer); from < 0 takes any, in arrival
// order.
func (t *Table) Accept(name string, mine Group, from int, cn Cancel) (*Conn, Group, error) {
	pn, err := t.own(name)
	if err != nil {
		return nil, Group{}, err
	}
	net := t.cfg.Net
	for {
		var sig <-chan struct{}
		if from >= 0 {
			sig = net.FailureSignal()
		}
		t.mu.Lock()
		p := t.ports[pn.Port]
		if p == nil {
			t.mu.Unlock()
			return nil, Group{}, errorf(ErrPort, "port %d is not open", pn.Port)
		}
		if i := slices.IndexFunc(p.reqs, func(r request) bool { return from < 0 || r.from == from }); i >= 0 {
			r := p.reqs[i]
			p.reqs = slices.Delete(p.reqs, i, i+1)
			c := t.register(r.from, r.id)
			t.mu.Unlock()
			if err := c.send(Step, 0, EncodeGroup(mine)); err != nil {
				return c, Group{}, errorf(ErrPeerFailed, "the connecting root (process %d) failed", r.from)
			}
			return c, r.g, nil
		}
		w := p.wake
		t.mu.Unlock()
		if from >= 0 && net.IsLost(from) {
			return nil, Group{}, errorf(ErrPeerFailed, "process %d, the only one to accept, failed", from)
		}
		select {
		case <-w:
		case <-sig:
		case <-cn.Deadline:
			return nil, Group{}, errorf(ErrPort, "no connection on port %d before the timeout", pn.Port)
		case <-cn.Abort:
			return nil, Group{}, errorf(ErrAborted, "the job ended")
		case <-cn.Stop:
			return nil, Group{}, errorf(ErrAborted, "the job ended")
		}
	}
}

// Mine is the Group a root of procs (rank order) tells the other root:
// with the addresses known here and the recognised failed processes rec.
// The addresses are read in one lookup (Net.Endpoints).
func (t *Table) Mine(procs, rec []int) Group {
	return Group{Procs: procs, Rec: rec, Eps: t.cfg.Net.Endpoints(procs)}
}
