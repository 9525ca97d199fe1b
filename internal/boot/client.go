package boot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/exitbell"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/rankenv"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// Endpoint is where a rank can be reached.
type Endpoint struct {
	Rank  int
	Inc   int `json:",omitempty"` // incarnation of the process behind the endpoint
	Host  string
	Cores int               `json:",omitempty"` // cores of Host as the launcher counts them (Info.HostCores; 0: not told)
	Addrs map[string]string // keys "unix" (socket path), "tcp" ("127.0.0.1:port")
	// Pid and Start (the process's start time in clock ticks since boot,
	// /proc/PID/stat) identify the process to the others of its host when
	// there is no launcher to look at it (a PMI start); 0: not told.
	Pid   int    `json:",omitempty"`
	Start uint64 `json:",omitempty"`
}

// Event is a notification from the launcher.
type Event struct {
	Kind        string // EventFailed or EventReinit
	Rank        int
	Incarnation int
	Epoch       int // EventReinit: the epoch every process rolls back to
	Reason      string
}

// ErrLost is returned by calls made after (or interrupted by) the loss of
// the control connection: the launcher died or tore the job down.
var ErrLost = errors.New("boot: connection to the launcher lost")

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("boot: client closed")

// FailedError is returned by Exchange when some ranks died (or exited)
// before publishing their endpoint. The slice returned along with it is
// still valid for every rank not listed in Ranks.
type FailedError struct {
	Ranks []int // process ids (the ranks, unless the world was spawned), sorted
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("boot: ranks %v are gone and did not publish an endpoint", e.Ranks)
}

// fillHost completes an endpoint with the host as the launcher told it.
func (c *Client) fillHost(ep *Endpoint) {
	if ep.Host == "" {
		ep.Host = c.info.Host
	}
	if ep.Cores == 0 && ep.Host == c.info.Host {
		ep.Cores = c.info.HostCores
	}
}

// dialTimeout bounds Connect's dial and hello round trip on an unloaded
// host; connectTimeout scales it.
const dialTimeout = 30 * time.Second

// connectTimeout is Connect's bound: dialTimeout, or the connection
// set-up bound the launcher gave the ranks (FTMPI_CONNECT_TIMEOUT, which
// ftmpirun scales with the ranks per core) when that is longer: at -n 2000
// on 2 cores the launcher answered some ranks' hellos after more than 30 s.
func connectTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(rankenv.ConnectTimeout)); err == nil && d > dialTimeout {
		return min(d, rankenv.MaxConnectTimeout)
	}
	return dialTimeout
}

// Client is a rank's connection to the launcher. Its methods are safe for
// concurrent use.
type Client struct {
	info Info
	conn net.Conn

	wmu sync.Mutex // serializes writes
	enc *json.Encoder

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan ctlwire.Msg
	dead    error // non-nil once the connection is gone (ErrLost or ErrClosed)
	closing bool

	queue  []Event                          // events not yet handed to the consumer
	direct atomic.Pointer[func(Event) bool] // Deliver's delegate (nil: none)
	qcond  *sync.Cond                       // signalled on queue append / close
	events chan Event

	lost    chan struct{}
	stop    chan struct{} // closed by Close
	wg      sync.WaitGroup
	closeMu sync.Once

	// evConn receives events as datagrams (nil if none): with every rank
	// on its host, the launcher can wake all the survivors of a failure
	// with one system call instead of one write per control connection.
	evConn *net.UnixConn
	evPath string

	bell *exitbell.Armed // the launcher's exit bell (nil: none)

	lookups    atomic.Int64 // endpoints asked of the launcher (lookup)
	lookupReqs atomic.Int64 // requests that asked for them (one holds up to ctlwire.MaxLookup)
}

// HelloEventAddr is the key, in the hello request's KV, of the address of
// the rank's event socket: a unix datagram socket in the job's directory
// (Info.TmpDir, which only the job's user can enter, so only that user can
// send to it) on which the launcher may send events (each datagram one
// JSON ctlwire.Msg) instead of on the control connection.
const HelloEventAddr = "events"

// Connect dials the launcher's control endpoint named by info.Control and
// identifies the rank (rank, incarnation, pid). After Connect returns the
// launcher counts the rank as initialized.
func Connect(info Info) (*Client, error) {
	if info.Universe == 0 { // an Info not made by FromEnv: the process id is the rank
		info.Proc, info.Universe = info.Rank, info.Size
	}
	network, addr, err := splitControl(info.Control)
	if err != nil {
		return nil, err
	}
	timeout := connectTimeout()
	conn, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("boot: dial launcher at %s: %w", info.Control, err)
	}
	c := &Client{
		info:    info,
		conn:    conn,
		enc:     json.NewEncoder(conn),
		pending: make(map[uint64]chan ctlwire.Msg),
		events:  make(chan Event),
		lost:    make(chan struct{}),
		stop:    make(chan struct{}),
	}
	c.qcond = sync.NewCond(&c.mu)

	// Authentication and the hello round trip synchronously, before
	// starting the goroutines.
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if info.Auth != nil {
		h := wireauth.Hello{Proto: wireauth.ProtoControl, From: uint64(info.Proc), To: wireauth.Launcher}
		if err := wireauth.Dial(conn, info.Auth, h); err != nil {
			conn.Close()
			return nil, fmt.Errorf("boot: launcher at %s: %w", info.Control, err)
		}
	}
	r := bufio.NewReader(conn)
	c.nextID = 1
	hello := ctlwire.Msg{Op: ctlwire.OpHello, ID: 1, Job: info.Job, Rank: info.Proc, Incarnation: info.Incarnation, Pid: os.Getpid(), Host: info.Host}
	if network == "unix" { // the launcher is on this host
		c.evConn, c.evPath = listenEvents(info.TmpDir)
		if c.evConn != nil {
			hello.KV = map[string]string{HelloEventAddr: c.evPath}
		}
	}
	fail := func() {
		conn.Close()
		c.closeEvents()
	}
	if err := c.enc.Encode(hello); err != nil {
		fail()
		return nil, fmt.Errorf("boot: hello to launcher: %w", err)
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		fail()
		return nil, fmt.Errorf("boot: hello to launcher: %w", err)
	}
	var m ctlwire.Msg
	if err := json.Unmarshal(line, &m); err != nil {
		fail()
		return nil, fmt.Errorf("boot: bad reply from launcher: %w", err)
	}
	if m.Op == ctlwire.OpError {
		fail()
		return nil, fmt.Errorf("boot: launcher refused rank %d: %s", info.Rank, m.Error)
	}
	if m.Op != ctlwire.OpHello || m.ID != 1 {
		fail()
		return nil, fmt.Errorf("boot: unexpected reply %q from launcher", m.Op)
	}
	_ = conn.SetDeadline(time.Time{})
	// The launcher's exit bell (ftmpirun --on-failure continue): armed
	// now that the launcher counts this process as a rank, disarmed at
	// Finalize. Without one (or if it cannot be armed) the launcher sees
	// this process's death when it reaps it.
	c.bell, _ = exitbell.ArmFromEnv()

	c.wg.Add(2)
	go c.readLoop(r)
	go c.eventPump()
	if c.evConn != nil {
		c.wg.Add(1)
		go c.eventLoop()
	}
	return c, nil
}

// listenEvents opens the rank's event socket in the job's directory dir,
// or returns nil if there is none or that fails (events then come on the
// control connection only).
func listenEvents(dir string) (*net.UnixConn, string) {
	if dir == "" {
		return nil, ""
	}
	path := filepath.Join(dir, "ev-"+strconv.Itoa(os.Getpid())+".sock")
	if len(path) >= 100 { // sun_path holds 108 bytes
		return nil, ""
	}
	_ = os.Remove(path) // a stale one of a dead process with the same pid
	uc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, ""
	}
	return uc, path
}

// closeEvents closes and removes the event socket.
func (c *Client) closeEvents() {
	if c.evConn != nil {
		c.evConn.Close()
		os.Remove(c.evPath)
	}
}

// queueEvent hands an event to Deliver's delegate, in the goroutine that
// read it, or else queues it for the consumer of Events (never blocks).
func (c *Client) queueEvent(m ctlwire.Msg) {
	ev := Event{Kind: m.Kind, Rank: m.Rank, Incarnation: m.Incarnation, Epoch: m.Epoch, Reason: m.Reason}
	if d := c.direct.Load(); d != nil && (*d)(ev) {
		return
	}
	c.mu.Lock()
	c.queue = append(c.queue, ev)
	c.qcond.Signal()
	c.mu.Unlock()
}

// Deliver makes f see every event from now on, in the goroutine that read
// it (the control connection's reader or the event socket's), before it
// is queued for Events: an event for which f returns true is handled and
// not queued. So an event that f handles crosses no goroutine between the
// socket and f (a failure reaches a blocked receive with one hand-off:
// f's wake-up of the receiver). f must not block, nor wait for the
// launcher (its replies come through the reader f runs in); it may be
// called from both readers at once. Events queued before Deliver stay
// queued. Deliver(nil) removes the delegate.
func (c *Client) Deliver(f func(Event) bool) {
	if f == nil {
		c.direct.Store(nil)
		return
	}
	c.direct.Store(&f)
}

// logOut is where the client's own lines go (a test's buffer).
var logOut io.Writer = os.Stderr

// eventLoop reads events sent as datagrams, until Close. A dropped
// datagram is logged rate-limited: any process of the job's user can
// reach the socket and must not flood the rank's log.
func (c *Client) eventLoop() {
	defer c.wg.Done()
	drops := &acceptloop.RateLog{Logf: func(msg string) { fmt.Fprintf(logOut, "ftmpi: rank %d: %s\n", c.info.Rank, msg) }}
	defer drops.Stop()
	buf := make([]byte, 64<<10)
	for {
		n, _, err := c.evConn.ReadFromUnix(buf)
		if err != nil {
			return // closed (Close); events come on the control connection then
		}
		m, err := decodeDatagram(c.info.Auth, buf[:n])
		if err != nil {
			drops.Printf("dropped an event datagram: %v", err)
			continue
		}
		c.queueEvent(m)
	}
}

// decodeDatagram checks and parses an event datagram: sealed with the
// job's key (when there is one) and an event.
func decodeDatagram(key *wireauth.Key, b []byte) (ctlwire.Msg, error) {
	if key != nil {
		var err error
		if b, err = key.Open(b); err != nil {
			return ctlwire.Msg{}, err
		}
	}
	var m ctlwire.Msg
	if err := json.Unmarshal(b, &m); err != nil {
		return ctlwire.Msg{}, fmt.Errorf("malformed: %v", err)
	}
	if m.Op != ctlwire.OpEvent || m.ID != 0 {
		return ctlwire.Msg{}, fmt.Errorf("%q with id %d is not an event", m.Op, m.ID)
	}
	return m, nil
}

// Info returns the Info the client was connected with.
func (c *Client) Info() Info { return c.info }

func (c *Client) readLoop(r *bufio.Reader) {
	defer c.wg.Done()
	var err error
	for {
		var line []byte
		line, err = r.ReadBytes('\n')
		if err != nil {
			break
		}
		var m ctlwire.Msg
		if json.Unmarshal(line, &m) != nil {
			continue // ignore garbage; the protocol is line-framed
		}
		if m.ID == 0 {
			if m.Op == ctlwire.OpEvent {
				c.queueEvent(m)
			}
			continue
		}
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m // buffered, capacity 1
		}
	}
	c.mu.Lock()
	if c.closing {
		c.dead = ErrClosed
	} else {
		c.dead = ErrLost
		close(c.lost)
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.qcond.Broadcast()
	c.mu.Unlock()
}

// eventPump moves queued events to the events channel so that the reader
// never blocks on a slow consumer. It closes the channel once the
// connection is gone and the queue is drained, or at Close.
func (c *Client) eventPump() {
	defer c.wg.Done()
	defer close(c.events)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && c.dead == nil && !c.closing {
			c.qcond.Wait()
		}
		if c.closing || len(c.queue) == 0 {
			c.mu.Unlock()
			return
		}
		ev := c.queue[0]
		c.queue = c.queue[1:]
		c.mu.Unlock()
		select {
		case c.events <- ev:
		case <-c.stop:
			return
		}
	}
}

// call sends a request and waits for its reply.
func (c *Client) call(m ctlwire.Msg) (ctlwire.Msg, error) {
	ch := make(chan ctlwire.Msg, 1)
	c.mu.Lock()
	if c.dead != nil {
		err := c.dead
		c.mu.Unlock()
		return ctlwire.Msg{}, err
	}
	if c.closing {
		c.mu.Unlock()
		return ctlwire.Msg{}, ErrClosed
	}
	c.nextID++
	m.ID = c.nextID
	c.pending[m.ID] = ch
	c.mu.Unlock()

	c.wmu.Lock()
	err := c.enc.Encode(m)
	c.wmu.Unlock()
	if err != nil {
		c.mu.Lock()
		delete(c.pending, m.ID)
		c.mu.Unlock()
		return ctlwire.Msg{}, c.deadErr()
	}
	reply, ok := <-ch
	if !ok {
		return ctlwire.Msg{}, c.deadErr()
	}
	if reply.Op == ctlwire.OpError {
		return ctlwire.Msg{}, fmt.Errorf("boot: launcher: %s", reply.Error)
	}
	return reply, nil
}

func (c *Client) deadErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return ErrClosed
	}
	return ErrLost
}

// Exchange publishes self and returns the endpoints of every process id
// below Universe, indexed by process id (the rank, unless this world was
// spawned), a put + fence + get, PMI-style: ExchangeTable with every
// entry decoded. It returns when every
// rank has called Exchange (or is gone). If some ranks died before
// publishing, the error is a *FailedError and the returned slice holds
// the endpoints of the others (the missing entries have nil Addrs). If the
// launcher goes away or tears the job down the error is ErrLost.
func (c *Client) Exchange(self Endpoint) ([]Endpoint, error) {
	t, err := c.ExchangeTable(self)
	var fe *FailedError
	if err != nil && !errors.As(err, &fe) {
		return nil, err
	}
	eps, derr := t.All()
	if derr != nil {
		return nil, derr
	}
	return eps, err
}

// ExchangeTable is Exchange with the launcher's table kept as it came
// (each endpoint in its wire form): an entry is decoded when it is first
// asked for (PeerTable.Get), so a process that talks to d of n peers
// decodes d endpoints, not n (issue 24 item 2). The entry of a process
// that published nothing is an Endpoint with nil Addrs; a malformed entry
// is an error of its Get. The error is a *FailedError (with the table)
// when ranks of this world died before publishing, as Exchange's.
func (c *Client) ExchangeTable(self Endpoint) (*PeerTable, error) {
	self.Rank = c.info.Proc
	c.fillHost(&self)
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpFence, Rank: c.info.Rank, KV: map[string]string{ctlwire.EndpointKey(c.info.Proc): encodeEndpoint(self)}})
	if err != nil {
		return nil, err
	}
	return c.tableOf(reply.KV)
}

// tableOf is the table of a fence reply kv holding every endpoint, with a
// *FailedError naming the processes of this world that published none.
func (c *Client) tableOf(kv map[string]string) (*PeerTable, error) {
	// Every process id of the universe: this world's members and, for a
	// spawned world, the parents.
	t := newClientTable(c.info.Universe, kv)
	base := c.info.Proc - c.info.Rank
	var missing []int
	for p := base; p < base+c.info.Size && p < c.info.Universe; p++ {
		if _, ok := kv[ctlwire.EndpointKey(p)]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		sort.Ints(missing)
		return t, &FailedError{Ranks: missing}
	}
	return t, nil
}

// newClientTable is the table of n process ids read from the launcher's
// fence reply kv, each entry decoded on its first Get.
func newClientTable(n int, kv map[string]string) *PeerTable {
	return newPeerTable(n, func(p int) (Endpoint, error) {
		ep := Endpoint{Rank: p}
		v, ok := kv[ctlwire.EndpointKey(p)]
		if !ok {
			return ep, nil
		}
		if err := decodeEndpoint(v, &ep); err != nil {
			return Endpoint{}, fmt.Errorf("boot: bad endpoint for process %d: %w", p, err)
		}
		return ep, nil
	})
}

// Abort asks the launcher to kill the whole job and make ftmpirun exit
// with code (MPI_Abort). It returns once the launcher has the request; the
// launcher kills the caller too, usually soon after.
func (c *Client) Abort(code int, reason string) error {
	_, err := c.call(ctlwire.Msg{Op: ctlwire.OpAbort, Rank: c.info.Rank, Code: code, Reason: reason})
	return err
}

// HangReport tells the launcher that this rank makes the hang report its
// EventHang asked for (done false: started; true: written).
func (c *Client) HangReport(done bool) error {
	kind := ctlwire.HangStarted
	if done {
		kind = ctlwire.HangWritten
	}
	_, err := c.call(ctlwire.Msg{Op: ctlwire.OpHangDone, Rank: c.info.Rank, Kind: kind})
	return err
}

// AbortFatal is Abort for a fatal error under MPI_ERRORS_ARE_FATAL (the
// program did not call MPI_Abort): the launcher then takes the job's exit
// code from the process whose failure caused the error, if any.
func (c *Client) AbortFatal(code int, reason string) error {
	_, err := c.call(ctlwire.Msg{Op: ctlwire.OpAbort, Rank: c.info.Rank, Code: code, Reason: reason, Fatal: true})
	return err
}

// Suspect tells the launcher that this rank suspects rank of having
// failed (for example, its heartbeats stopped), with a reason for the
// logs. The launcher enforces fail-stop: it SIGKILLs rank (unless it is
// already gone or has finalized) and treats it as failed, so every
// survivor, the caller included, then gets the normal failed Event (and in
// --on-failure abort mode the job is torn down). Suspect returns once the
// launcher has accepted the request, not when the rank is dead; suspecting
// a rank out of range or oneself is an error.
func (c *Client) Suspect(rank int, reason string) error {
	return c.SuspectIncarnation(rank, 0, reason)
}

// SuspectIncarnation is Suspect of incarnation inc of rank: the launcher
// ignores it if rank has been respawned since (a late suspicion of a
// process that is already dead must not kill its replacement).
func (c *Client) SuspectIncarnation(rank, inc int, reason string) error {
	_, err := c.call(ctlwire.Msg{Op: ctlwire.OpSuspect, Rank: rank, Incarnation: inc, Reason: reason})
	return err
}

// Finalize is a fence: it tells the launcher this rank has called
// MPI_Finalize and returns when every rank has finalized or is dead.
func (c *Client) Finalize() error {
	c.bell.Disarm() // this process's exit is a normal end from now on
	_, err := c.call(ctlwire.Msg{Op: ctlwire.OpFinalize, Rank: c.info.Rank})
	return err
}

// Events delivers launcher notifications, for now
// Event{Kind: "failed", Rank: r, Incarnation: i, Reason: "..."} when a
// rank died after initializing and before finalizing. Events are queued
// without bound, so a slow consumer never stalls the control connection.
// The channel is closed when the connection is gone and every queued event
// was delivered, or at Close.
func (c *Client) Events() <-chan Event { return c.events }

// Lost is closed when the control connection is lost without Close having
// been called (the launcher died or tore the job down).
func (c *Client) Lost() <-chan struct{} { return c.lost }

// Close closes the connection and waits for the client's goroutines.
// Blocked calls return ErrClosed.
func (c *Client) Close() error {
	var err error
	c.closeMu.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.qcond.Broadcast()
		c.mu.Unlock()
		close(c.stop)
		err = c.conn.Close()
		c.closeEvents()
		c.wg.Wait()
	})
	return err
}

// String describes the client for logs.
func (c *Client) String() string {
	return "boot.Client{job " + c.info.Job + " rank " + strconv.Itoa(c.info.Rank) + "}"
}
