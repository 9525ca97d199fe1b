package launch

// The relay of the ranks' control connections through their host's agent
// (FTMPI_RELAY=1; docs/benchmarks.md, "The launcher head: the star
// counted, the relay through the agents designed"). A rank on a remote
// host dials its agent's Unix control socket instead of the head; the
// agent runs the wireauth handshake, and multiplexes its ranks' control
// lines onto its one connection to the head (agentwire CtlUp frames). The
// requests of the collective phases (hello, the start-up fence, a Reinit
// epoch's rejoin) are held until every local process that will send the
// same one has sent it or is gone (relayGate), then go up as one frame;
// a timer (half of policy.StallEvery) forwards whatever is held. The head
// makes each multiplexed connection a connection of the policy behind
// ctlConn's send path, and sends what one batch of steps produced for an
// agent's ranks as one CtlDown frame. The policy does not change: its
// simulator proves the model (policy's relay_sim_test.go).

import (
	"bufio"
	"cmp"
	"encoding/json"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/wireauth"
	"golang.org/x/sys/unix"
)

// EnvRelay, set to 1, makes ftmpirun relay the control connections of the
// ranks on remote hosts through their agents (Config.Relay); unset or 0,
// every rank holds its own connection to the head (the star).
const EnvRelay = "FTMPI_RELAY"

// EnvRelayHold, a duration, replaces relayFlush at an agent (tests: a
// host lost while its agent holds requests).
const EnvRelayHold = "FTMPI_RELAY_HOLD"

// relayFlush is how long an agent holds a request of a collective phase
// at most: half of the head's stall check period, so that a process
// stopped before the start-up fence (which no rank can suspect yet) is
// still found by the head's Stall look.
const relayFlush = policy.StallEvery / 2

// relayKey names a collective request: its op and instance (a fence: the
// connection's fence number; a rejoin: the epoch; a hello: 0).
type relayKey struct {
	op  string
	seq int
}

// gateProc is a process the agent started (its current incarnation).
type gateProc struct {
	inc  int
	gone bool      // exited
	conn *gateConn // the connection whose hello named it, nil before
}

// gateConn is a rank's control connection at the agent.
type gateConn struct {
	id       uint32
	proc     int // the process id its handshake proved (-1: none)
	hello    bool
	fwd      bool // its open went up: the head knows it
	fences   int  // fence requests it sent
	rejoined int  // the latest epoch it rejoined (0: none)
	left     bool // it left MPI_Reinit
	fin      bool // it asked to finalize
	closed   bool
}

type gateHeld struct {
	c    *gateConn
	key  relayKey
	line string
}

// relayGate is the agent's holding rule: which of its ranks' requests go
// up when, as frames (each a list of CtlUp entries). It does no I/O.
type relayGate struct {
	procs map[int]*gateProc // by process id
	conns map[uint32]*gateConn
	held  []gateHeld // in arrival order
}

func newRelayGate() *relayGate {
	return &relayGate{procs: map[int]*gateProc{}, conns: map[uint32]*gateConn{}}
}

// entry is the CtlUp entry of a line of c; the first of c opens it.
func (g *relayGate) entry(c *gateConn, line string) agentwire.CtlLine {
	e := agentwire.CtlLine{Conn: c.id, Line: line}
	if !c.fwd {
		c.fwd, e.Open, e.Proc = true, true, c.proc
	}
	return e
}

// started: incarnation inc of process rank was started here.
func (g *relayGate) started(rank, inc int) [][]agentwire.CtlLine {
	g.procs[rank] = &gateProc{inc: inc}
	return g.release()
}

// exited: incarnation inc of process rank ended.
func (g *relayGate) exited(rank, inc int) [][]agentwire.CtlLine {
	if p := g.procs[rank]; p != nil && p.inc == inc {
		p.gone = true
	}
	return g.release()
}

// open: connection id proved process proc (-1: no secret).
func (g *relayGate) open(id uint32, proc int) {
	g.conns[id] = &gateConn{id: id, proc: proc}
}

// line: connection id sent line (m, its decoding; a line that does not
// decode goes up at once, for the head to refuse).
func (g *relayGate) line(id uint32, line string, m ctlwire.Msg) [][]agentwire.CtlLine {
	c := g.conns[id]
	if c == nil || c.closed {
		return nil
	}
	var key relayKey
	switch m.Op {
	case ctlwire.OpHello:
		if !c.hello {
			c.hello = true
			if p := g.procs[m.Rank]; p != nil && p.inc == m.Incarnation && (c.proc < 0 || c.proc == m.Rank) {
				p.conn = c
			}
			key = relayKey{op: ctlwire.OpHello}
		}
	case ctlwire.OpFence:
		c.fences++
		key = relayKey{op: ctlwire.OpFence, seq: c.fences}
	case ctlwire.OpRejoin:
		if m.Epoch > 0 {
			c.rejoined = max(c.rejoined, m.Epoch)
			key = relayKey{op: ctlwire.OpRejoin, seq: m.Epoch}
		}
	case ctlwire.OpReinit:
		if m.Kind == ctlwire.ReinitLeave {
			c.left = true
		}
	case ctlwire.OpFinalize:
		c.fin = true
	}
	if key.op != "" && (key.op == ctlwire.OpHello || c.fwd) {
		g.held = append(g.held, gateHeld{c: c, key: key, line: line})
		return g.release()
	}
	// Not held: at once, after anything of its connection still held (a
	// connection's lines reach the head in order, its hello first).
	var frame []agentwire.CtlLine
	if c.fwd && !g.holds(c) {
		frame = []agentwire.CtlLine{g.entry(c, line)}
	} else {
		frame = append(g.takeAll(), g.entry(c, line))
	}
	return append([][]agentwire.CtlLine{frame}, g.release()...)
}

// holds tells whether a request of c is held.
func (g *relayGate) holds(c *gateConn) bool {
	for _, h := range g.held {
		if h.c == c {
			return true
		}
	}
	return false
}

// closed: connection id closed. Its held requests are dropped (as if the
// rank had died before sending them); the head hears of the close only if
// it knew the connection.
func (g *relayGate) closed(id uint32) [][]agentwire.CtlLine {
	c := g.conns[id]
	if c == nil {
		return nil
	}
	delete(g.conns, id)
	c.closed = true
	q := g.held[:0]
	for _, h := range g.held {
		if h.c != c {
			q = append(q, h)
		}
	}
	clear(g.held[len(q):])
	g.held = q
	var out [][]agentwire.CtlLine
	if c.fwd {
		out = append(out, []agentwire.CtlLine{{Conn: id, Close: true}})
	}
	return append(out, g.release()...)
}

// wants: the agent expects process p to send request k (it has not, and
// will unless it dies). Holding longer or shorter than this only changes
// the frames, never the outcome: the timer forwards what is held, and the
// model checks any release order (TestSimulateRelayed).
func (g *relayGate) wants(p *gateProc, k relayKey) bool {
	c := p.conn
	if p.gone || c != nil && c.closed {
		return false
	}
	switch k.op {
	case ctlwire.OpHello:
		return c == nil
	case ctlwire.OpFence:
		sent := 0
		if c != nil {
			sent = c.fences
		}
		return p.inc == 0 && sent < k.seq // a respawned process rejoins instead
	case ctlwire.OpRejoin:
		if c == nil {
			return p.inc > 0 // respawned for the epoch, not connected yet
		}
		return c.rejoined < k.seq && !c.left && !c.fin
	}
	return false
}

// release forwards, one frame each, the held requests of every key no
// process here is still expected to send.
func (g *relayGate) release() [][]agentwire.CtlLine {
	var out [][]agentwire.CtlLine
	for {
		var ready *relayKey
	look:
		for _, h := range g.held {
			for _, p := range g.procs {
				if g.wants(p, h.key) {
					continue look
				}
			}
			k := h.key
			ready = &k
			break
		}
		if ready == nil {
			return out
		}
		var frame []agentwire.CtlLine
		q := g.held[:0]
		for _, h := range g.held {
			if h.key == *ready {
				frame = append(frame, g.entry(h.c, h.line))
			} else {
				q = append(q, h)
			}
		}
		clear(g.held[len(q):])
		g.held = q
		out = append(out, frame)
	}
}

// takeAll is every held request, in order, as one frame's entries.
func (g *relayGate) takeAll() []agentwire.CtlLine {
	var frame []agentwire.CtlLine
	for _, h := range g.held {
		frame = append(frame, g.entry(h.c, h.line))
	}
	clear(g.held)
	g.held = g.held[:0]
	return frame
}

// flush is the timer's: everything held, as one frame.
func (g *relayGate) flush() [][]agentwire.CtlLine {
	if f := g.takeAll(); len(f) > 0 {
		return [][]agentwire.CtlLine{f}
	}
	return nil
}

// agentRelay is an agent's side of the relay: its Unix control socket, its
// ranks' connections, the gate and its timer, the frames it sends up.
type agentRelay struct {
	w       *frameWriter
	key     *wireauth.Key
	ln      net.Listener
	path    string
	timeout time.Duration // a handshake's bound
	wait    time.Duration // the flush timer
	logf    func(format string, args ...any)

	mu     sync.Mutex
	g      *relayGate
	conns  map[uint32]*ctlConn
	hs     map[net.Conn]bool // connections in their handshake (closed by stop)
	ev     map[uint32]string // a connection's event socket (its hello's boot.HelloEventAddr)
	evFD   int               // the datagram socket events are sent from (-1: none)
	next   uint32
	timer  *time.Timer
	events int // events sent as datagrams
	closed bool
	wg     sync.WaitGroup
}

// listenRelay opens the agent's control socket in dir.
func listenRelay(dir string, w *frameWriter, key *wireauth.Key, logf func(string, ...any)) (*agentRelay, error) {
	path := dir + "/control"
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	wait := relayFlush
	if d, err := time.ParseDuration(os.Getenv(EnvRelayHold)); err == nil && d > 0 {
		wait = d
	}
	r := &agentRelay{w: w, key: key, ln: ln, path: path, timeout: controlTimeout, wait: wait, logf: logf,
		g: newRelayGate(), conns: map[uint32]*ctlConn{}, hs: map[net.Conn]bool{}, ev: map[uint32]string{}, evFD: -1}
	if fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0); err == nil {
		r.evFD = fd
	}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// control is the ranks' FTMPI_CONTROL.
func (r *agentRelay) control() string { return "unix:" + r.path }

func (r *agentRelay) serve() {
	defer r.wg.Done()
	for {
		nc, err := r.ln.Accept()
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			return
		}
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.handle(nc) }()
	}
}

// sendLocked sends frames up, in order; r.mu held. It arms or stops the
// timer after the gate's change.
func (r *agentRelay) sendLocked(frames [][]agentwire.CtlLine) {
	for _, f := range frames {
		if len(f) > 0 {
			r.w.send(agentwire.Msg{Type: agentwire.TCtlUp, Ctl: f})
		}
	}
	switch {
	case len(r.g.held) > 0 && r.timer == nil && !r.closed:
		r.timer = time.AfterFunc(r.wait, r.flush)
	case len(r.g.held) == 0 && r.timer != nil:
		r.timer.Stop()
		r.timer = nil
	}
}

func (r *agentRelay) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer = nil
	r.sendLocked(r.g.flush())
}

// handle runs the handshake of a rank's connection and relays its lines.
func (r *agentRelay) handle(nc net.Conn) {
	proc := -1
	if r.key != nil {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			nc.Close()
			return
		}
		r.hs[nc] = true
		r.mu.Unlock()
		hello, err := acceptControl(nc, r.key, r.timeout)
		r.mu.Lock()
		delete(r.hs, nc)
		r.mu.Unlock()
		if err != nil {
			r.logf("refused a control connection: %v", err)
			nc.Close()
			return
		}
		proc = int(hello.From)
	}
	c := newCtlConn(nc)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		nc.Close()
		return
	}
	r.next++
	id := r.next
	r.conns[id] = c
	r.g.open(id, proc)
	r.mu.Unlock()
	r.wg.Add(1)
	go func() { defer r.wg.Done(); c.writeLoop() }()
	defer func() {
		c.close()
		r.mu.Lock()
		delete(r.conns, id)
		delete(r.ev, id)
		r.sendLocked(r.g.closed(id))
		r.mu.Unlock()
	}()
	rd := bufio.NewReaderSize(nc, 64<<10)
	for {
		line, err := readLine(rd)
		if err != nil {
			return // closed, or a line over the limit: the head hears of the close
		}
		var m ctlwire.Msg
		_ = json.Unmarshal(line, &m) // undecodable: up at once, the head refuses it
		r.mu.Lock()
		if m.Op == ctlwire.OpHello && eventAddr(m.KV[boot.HelloEventAddr]) != nil {
			r.ev[id] = m.KV[boot.HelloEventAddr]
		}
		r.sendLocked(r.g.line(id, string(line), m))
		r.mu.Unlock()
	}
}

// started and exited feed the gate the processes of this host.
func (r *agentRelay) started(rank, inc int) {
	r.mu.Lock()
	r.sendLocked(r.g.started(rank, inc))
	r.mu.Unlock()
}

func (r *agentRelay) exited(rank, inc int) {
	r.mu.Lock()
	r.sendLocked(r.g.exited(rank, inc))
	r.mu.Unlock()
}

// down executes a CtlDown frame of the head: lines written to the ranks'
// connections (never blocking), closes. An event goes to its rank's event
// socket as a datagram, sealed with the job's key, as the head sends them
// on its own host (the rank's event reader wakes at once); on the
// connection if the rank has no event socket or the kernel did not take it.
func (r *agentRelay) down(ctl []agentwire.CtlLine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range ctl {
		c := r.conns[e.Conn]
		if c == nil {
			continue // closed meanwhile: its close is on its way up
		}
		if e.Close {
			c.close() // its reader ends and sends the close up
			continue
		}
		if path := r.ev[e.Conn]; path != "" && r.evFD >= 0 && isEvent(e.Line) {
			b := []byte(e.Line)
			if r.key != nil {
				b = r.key.Seal(b)
			}
			if unix.Sendto(r.evFD, b, unix.MSG_DONTWAIT, &unix.SockaddrUnix{Name: path}) == nil {
				r.events++
				continue
			}
		}
		c.sendLine([]byte(e.Line))
	}
}

// isEvent tells whether a control line is an event (ctlwire.OpEvent, no
// request id).
func isEvent(line string) bool {
	if !strings.Contains(line, `"`+ctlwire.OpEvent+`"`) {
		return false
	}
	var m struct {
		Op string `json:"op"`
		ID uint64 `json:"id"`
	}
	return json.Unmarshal([]byte(line), &m) == nil && m.Op == ctlwire.OpEvent && m.ID == 0
}

// stop closes the socket and every connection and waits for them.
func (r *agentRelay) stop() {
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	conns := make([]*ctlConn, 0, len(r.conns))
	for _, c := range r.conns {
		conns = append(conns, c)
	}
	for nc := range r.hs {
		nc.Close() // its handshake fails at once
	}
	r.mu.Unlock()
	r.ln.Close()
	for _, c := range conns {
		c.close()
	}
	r.wg.Wait()
	os.Remove(r.path)
	r.mu.Lock()
	if r.evFD >= 0 {
		unix.Close(r.evFD)
		r.evFD = -1
	}
	r.mu.Unlock()
}

// relayLink is the head's side of one agent's relay: the policy
// connections of its ranks and the CtlDown entries not yet sent.
type relayLink struct {
	h *head
	w *frameWriter

	mu      sync.Mutex
	pending []agentwire.CtlLine
	conns   map[uint32]*ctlConn // under h.mu

	up, down atomic.Int64 // frames received, sent
	opened   atomic.Int64 // connections relayed
	upOps    sync.Map     // op -> *atomic.Int64: CtlUp frames carrying a request of op
}

// relayFrames is what the head counted of its relays: frames up and down,
// and the up frames that carried a request of each op.
type relayFrames struct {
	conns    int64
	up, down int64
	upOps    map[string]int64
}

func (h *head) newRelayLink(w *frameWriter) *relayLink {
	l := &relayLink{h: h, w: w, conns: map[uint32]*ctlConn{}}
	h.relayMu.Lock()
	h.relays = append(h.relays, l)
	h.relayMu.Unlock()
	return l
}

// add queues an entry for the next CtlDown frame.
func (l *relayLink) add(e agentwire.CtlLine) {
	l.mu.Lock()
	first := len(l.pending) == 0
	l.pending = append(l.pending, e)
	l.mu.Unlock()
	if first {
		l.h.relayMu.Lock()
		l.h.relayDirty = append(l.h.relayDirty, l)
		l.h.relayMu.Unlock()
	}
}

// flush sends what is queued as one frame.
func (l *relayLink) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return
	}
	l.w.send(agentwire.Msg{Type: agentwire.TCtlDown, Ctl: l.pending})
	l.down.Add(1)
	l.pending = nil
}

// flushRelays sends every agent's queued entries, a frame each; not while
// a batch from an agent is being fed to the policy (its end flushes).
func (h *head) flushRelays() {
	if h.relayHold.Load() > 0 {
		return
	}
	h.relayMu.Lock()
	dirty := h.relayDirty
	h.relayDirty = nil
	h.relayMu.Unlock()
	for _, l := range dirty {
		l.flush()
	}
}

// counts sums the frames of every relay.
func (h *head) relayCounts() relayFrames {
	h.relayMu.Lock()
	ls := append([]*relayLink(nil), h.relays...)
	h.relayMu.Unlock()
	f := relayFrames{upOps: map[string]int64{}}
	for _, l := range ls {
		f.conns += l.opened.Load()
		f.up += l.up.Load()
		f.down += l.down.Load()
		l.upOps.Range(func(k, v any) bool { f.upOps[k.(string)] += v.(*atomic.Int64).Load(); return true })
	}
	return f
}

// upFrame feeds a CtlUp frame to the policy, entry by entry, and sends
// what it produced for the agent's ranks as one frame to each agent.
func (l *relayLink) upFrame(ctl []agentwire.CtlLine) {
	h := l.h
	l.up.Add(1)
	h.relayHold.Add(1)
	defer func() {
		h.relayHold.Add(-1)
		h.flushRelays()
	}()
	ops := map[string]bool{}
	for _, e := range ctl {
		h.mu.Lock()
		c := l.conns[e.Conn]
		if e.Open && c == nil {
			if h.closed {
				h.mu.Unlock()
				l.add(agentwire.CtlLine{Conn: e.Conn, Close: true})
				continue
			}
			c = &ctlConn{link: l, rid: e.Conn, proc: e.Proc}
			c.cond = sync.NewCond(&c.mu)
			h.nextConn++
			c.id = h.nextConn
			h.conns[c.id] = c
			l.conns[e.Conn] = c
			l.opened.Add(1)
		}
		h.mu.Unlock()
		if c == nil {
			continue // not ours (a close after the head closed it)
		}
		if e.Close {
			l.closedConn(c)
			continue
		}
		if c.isClosed() {
			continue // the head closed it; its close is on its way up
		}
		m, err := decodeRequest([]byte(e.Line), c.proc)
		if err != nil {
			h.out.logf("closed the control connection of process %d: %v", c.proc, err)
			c.send(ctlwire.Msg{Op: ctlwire.OpError, Error: err.Error()})
			c.close()
			continue
		}
		ops[m.Op] = true
		h.request(c, m)
	}
	for op := range ops {
		v, _ := l.upOps.LoadOrStore(op, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
}

// closedConn: the agent closed the rank's connection c: the policy's
// connection closes.
func (l *relayLink) closedConn(c *ctlConn) {
	h := l.h
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	h.mu.Lock()
	if l.conns[c.rid] != c {
		h.mu.Unlock()
		return
	}
	delete(l.conns, c.rid)
	delete(h.conns, c.id)
	h.mu.Unlock()
	h.step(policy.Closed{Conn: c.id})
}

// lost: the agent is lost; every connection it relayed closes.
func (l *relayLink) lost() {
	h := l.h
	h.mu.Lock()
	cs := make([]*ctlConn, 0, len(l.conns))
	for _, c := range l.conns {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	// In the order the head made them (a map's order is not).
	slices.SortFunc(cs, func(a, b *ctlConn) int { return cmp.Compare(a.id, b.id) })
	for _, c := range cs {
		l.closedConn(c)
	}
	l.mu.Lock()
	l.pending = nil
	l.mu.Unlock()
}

// relayEnabled reads EnvRelay.
func relayEnabled() bool {
	v := strings.TrimSpace(os.Getenv(EnvRelay))
	return v != "" && v != "0"
}
