package launch

import (
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
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
func encodeLine(m boot.Msg) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("launch: encode %+v: %v", m, err)) // plain data: cannot happen
	}
	return append(b, '\n')
}

func (c *ctlConn) send(m boot.Msg) { c.sendLine(encodeLine(m)) }

// sendLine sends an encoded message; line may be shared by several
// connections and is never modified.
func (c *ctlConn) sendLine(line []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
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
			return
		}
		line = line[n:]
	}
	c.queue = append(c.queue, line)
	c.cond.Signal()
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
	if !c.closed {
		c.closed = true
		c.nc.Close()
		c.cond.Broadcast()
	}
}
