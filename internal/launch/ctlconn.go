package launch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/rankenv"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// ctlConn is one control connection. Sends never block: a message is
// written at once if the connection is idle and the socket takes it
// without waiting, else queued and written by the connection's writer
// goroutine (a rank that does not read its control connection never
// stalls the launcher).
type ctlConn struct {
	nc  net.Conn
	raw syscall.RawConn // nil: no direct writes
	id  policy.Conn     // the policy's name of the connection

	evAddr *eventSockaddr // the rank's event socket (boot.HelloEventAddr), nil if none; under head.mu

	// A connection relayed by an agent (relay.go): nc and raw are nil;
	// what is sent is queued for the agent's next CtlDown frame as a line
	// of connection rid, and a close as its close. proc is the process id
	// the agent's handshake proved (-1: none).
	link *relayLink
	rid  uint32
	proc int

	mu     sync.Mutex
	cond   *sync.Cond
	queue  [][]byte // encoded messages (JSON lines) not yet written
	busy   bool     // the writer goroutine is writing
	closed bool
}

func newCtlConn(nc net.Conn) *ctlConn {
	c := &ctlConn{nc: nc}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.raw = rc
		}
	}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// encodeLine is the wire form of m: one JSON line.
func encodeLine(m ctlwire.Msg) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("launch: encode %+v: %v", m, err)) // plain data: cannot happen
	}
	return append(b, '\n')
}

func (c *ctlConn) send(m ctlwire.Msg) { c.sendLine(encodeLine(m)) }

// sendLine sends an encoded message; line may be shared by several
// connections and is never modified.
func (c *ctlConn) sendLine(line []byte) { c.sendParts(line) }

// sendParts sends one encoded message given in pieces (written in order,
// nothing between them); the pieces may be shared by several connections
// and are never modified.
func (c *ctlConn) sendParts(parts ...[]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.link != nil {
		if !c.closed {
			c.link.add(agentwire.CtlLine{Conn: c.rid, Line: string(bytes.Join(parts, nil))})
		}
		return
	}
	for _, line := range parts {
		if c.closed {
			return
		}
		if !c.busy && len(c.queue) == 0 {
			n, err := c.tryWriteLocked(line)
			if err != nil {
				c.closeLocked()
				return
			}
			if n == len(line) {
				continue
			}
			line = line[n:]
		}
		c.queue = append(c.queue, line)
		c.cond.Signal()
	}
}

// sharedReply encodes replies that differ only in their ID (the fence's:
// every rank gets the job's whole endpoint table, so encoding it once per
// rank cost the launcher O(n^2), 6 ms a reply at n = 2,000) once, and
// gives each its ID in a piece of its own: a reply is sent as prefix, ID,
// rest, the prefix and the rest shared by every connection.
type sharedReply struct {
	key          sharedKey
	prefix, rest []byte
}

// sharedKey names the content of a reply but its ID: the same KV map and
// Failed slice (the policy hands every waiter of a fence the same ones).
type sharedKey struct {
	op     string
	kv     unsafe.Pointer
	failed *int
	nf     int
}

// sharedMin is the smallest KV worth sharing an encoding for.
const sharedMin = 16

// parts returns the pieces of m's encoding (encodeLine's bytes), the
// encoding of an earlier m of the same content reused.
func (s *sharedReply) parts(m ctlwire.Msg) [][]byte {
	if len(m.KV) < sharedMin || m.ID == 0 {
		return [][]byte{encodeLine(m)}
	}
	k := sharedKey{op: m.Op, kv: reflect.ValueOf(m.KV).UnsafePointer(), failed: unsafe.SliceData(m.Failed), nf: len(m.Failed)}
	if s.prefix == nil || s.key != k {
		id := m.ID
		m.ID = 0
		line := encodeLine(m)
		// The ID follows the op (field order of ctlwire.Msg).
		pre, err := json.Marshal(m.Op)
		if err != nil || !bytes.HasPrefix(line, append(append([]byte(`{"op":`), pre...), ',')) {
			m.ID = id
			return [][]byte{encodeLine(m)}
		}
		n := len(`{"op":`) + len(pre) + 1
		s.key, s.prefix, s.rest = k, line[:n:n], line[n:]
		m.ID = id
	}
	return [][]byte{s.prefix, strconv.AppendUint([]byte(`"id":`), m.ID, 10), []byte{','}, s.rest}
}

// tryWriteLocked writes what the socket takes without waiting; c.mu held,
// the writer goroutine idle.
func (c *ctlConn) tryWriteLocked(b []byte) (int, error) {
	if c.raw == nil {
		return 0, nil
	}
	var n int
	var werr error
	err := c.raw.Write(func(fd uintptr) bool {
		for n < len(b) {
			k, err := syscall.Write(int(fd), b[n:])
			if err == syscall.EINTR {
				continue
			}
			if err == syscall.EAGAIN {
				break
			}
			if err != nil {
				werr = err
				break
			}
			n += k
		}
		return true // never wait: the writer goroutine does that
	})
	if werr == nil {
		werr = err
	}
	return n, werr
}

func (c *ctlConn) writeLoop() {
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.closed {
			c.cond.Wait()
		}
		if c.closed {
			c.mu.Unlock()
			return
		}
		q := net.Buffers(c.queue)
		c.queue = nil
		c.busy = true
		c.mu.Unlock()
		_, err := q.WriteTo(c.nc)
		c.mu.Lock()
		c.busy = false
		if err != nil {
			c.closeLocked()
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// close closes the connection; queued messages not yet written are dropped.
func (c *ctlConn) close() {
	c.mu.Lock()
	c.closeLocked()
	c.mu.Unlock()
}

func (c *ctlConn) closeLocked() {
	if c.link != nil {
		if !c.closed {
			c.closed = true
			c.link.add(agentwire.CtlLine{Conn: c.rid, Close: true}) // the agent's close comes back up
		}
		return
	}
	if !c.closed {
		c.closed = true
		c.nc.Close()
		c.cond.Broadcast()
	}
}

// isClosed tells whether the connection was closed.
func (c *ctlConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// controlTimeout bounds the handshake of a control connection on an
// unloaded host; controlTimeoutFor scales it.
const controlTimeout = 30 * time.Second

// controlTimeoutFor bounds the handshake of a control connection of a job
// of ranks processes on a host of cores: controlTimeout, scaled as the
// ranks' heartbeat and connection set-up are (withHeartbeat) above
// hbFreeLoad ranks per core. Every rank connects at start, at once: at
// -n 2000 on 2 cores the head answered some after more than 30 s, and
// those ranks' MPI_Init failed (issue 24).
func controlTimeoutFor(ranks, cores int) time.Duration {
	cores = max(1, cores)
	load := (ranks + cores - 1) / cores
	if load <= hbFreeLoad {
		return controlTimeout
	}
	return scaleBound(controlTimeout, load, rankenv.MaxConnectTimeout)
}

// scaleBound is d × load / hbFreeLoad, at most most (and without
// overflowing: the load of a mistaken -n can be anything).
func scaleBound(d time.Duration, load int, most time.Duration) time.Duration {
	if time.Duration(load/hbFreeLoad) >= most/d {
		return most
	}
	return min(d*time.Duration(load)/hbFreeLoad, most)
}

// maxRequest bounds a request line from a rank (its largest is a fence
// with the rank's endpoint, or a spawn request: a few KiB).
const maxRequest = 1 << 20

// acceptControl runs the launcher's side of the wireauth handshake of a
// control connection: the rank proves it knows the job's secret and which
// process it is.
func acceptControl(nc net.Conn, key *wireauth.Key, timeout time.Duration) (wireauth.Hello, error) {
	nc.SetDeadline(time.Now().Add(timeout))
	defer nc.SetDeadline(time.Time{})
	return wireauth.Accept(nc, nc, key, func(h wireauth.Hello) error {
		switch {
		case h.Proto != wireauth.ProtoControl:
			return fmt.Errorf("protocol %d is not the control protocol", h.Proto)
		case h.To != wireauth.Launcher:
			return fmt.Errorf("addressed to process %d, not to the launcher", h.To)
		case h.From >= 1<<24:
			return fmt.Errorf("claims process id %d", h.From)
		}
		return nil
	})
}

var errLongLine = fmt.Errorf("a request line over %d bytes", maxRequest)

// readLine reads one request line of at most maxRequest bytes.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > maxRequest {
			return nil, errLongLine
		}
		if err == nil {
			if line == nil {
				return chunk, nil // valid until the next read
			}
			return append(line, chunk...), nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		line = append(line, chunk...)
	}
}

// decodeRequest parses and validates one request line of a connection
// that proved process id proc (-1: not authenticated): well-formed JSON,
// a request id, a known operation, and a hello in the name of proc.
func decodeRequest(line []byte, proc int) (ctlwire.Msg, error) {
	var m ctlwire.Msg
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("malformed message: %v", err)
	}
	if m.ID == 0 {
		return m, fmt.Errorf("request %q without id", m.Op)
	}
	switch m.Op {
	case ctlwire.OpHello:
		if proc >= 0 && m.Rank != proc {
			return m, fmt.Errorf("hello as process %d on a connection authenticated as process %d", m.Rank, proc)
		}
	case ctlwire.OpFence, ctlwire.OpFinalize, ctlwire.OpAbort, ctlwire.OpReinit, ctlwire.OpRejoin, ctlwire.OpSpawn, ctlwire.OpSuspect, ctlwire.OpName, ctlwire.OpSpare, ctlwire.OpHangDone:
	case ctlwire.OpEndpoints:
		if len(m.Procs) == 0 || len(m.Procs) > ctlwire.MaxLookup {
			return m, fmt.Errorf("endpoints request for %d processes, want 1 to %d", len(m.Procs), ctlwire.MaxLookup)
		}
		for _, p := range m.Procs {
			if p < 0 {
				return m, fmt.Errorf("endpoints request for process %d", p)
			}
		}
	default:
		return m, fmt.Errorf("unknown request %q", m.Op)
	}
	if m.Rank < -1 || m.Incarnation < 0 || m.Epoch < 0 || m.Cores < 0 {
		return m, fmt.Errorf("%s request with rank %d, incarnation %d, epoch %d", m.Op, m.Rank, m.Incarnation, m.Epoch)
	}
	return m, nil
}

// remoteAddr describes the other end of nc for a log line.
func remoteAddr(nc net.Conn) string {
	if a := nc.RemoteAddr(); a != nil && a.String() != "" && a.String() != "@" {
		return " from " + a.String()
	}
	return ""
}
