// Package acceptloop runs a listener's accept loop so that nothing a
// client does can stop it: out of descriptors, Accept is retried with
// back-off (logged once per episode, not per connection); a connection
// that has not proved itself (authenticated) within a deadline is closed;
// and at most a bounded number of such connections are held at once, the
// oldest closed first, so a flood of idle connections cannot exhaust the
// process's descriptors or memory. RateLog keeps the per-connection log
// lines of the handlers (a refused handshake) from growing with a flood.
//
// It knows nothing of what a connection carries: the handler
// authenticates it and calls Pending.Authenticated. It must not log per
// connection, and it never returns while its listener is open.
package acceptloop

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Defaults of Config.
const (
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultMaxPending is the largest default cap; a process with few
	// descriptors gets a smaller one (see Config.MaxPending). It must
	// exceed the bursts of real clients: 64 shed the ranks of a 200-rank
	// job connecting to ftmpirun at once on an oversubscribed host.
	DefaultMaxPending = 1024
	minPending        = 4
	minBackoff        = 5 * time.Millisecond
	maxBackoff        = time.Second
)

// Config is one listener's accept policy.
type Config struct {
	// Name says which listener this is, in log lines ("tcp listener").
	Name string
	// HandshakeTimeout closes a connection not authenticated by then
	// (DefaultHandshakeTimeout if zero).
	HandshakeTimeout time.Duration
	// MaxPending bounds the connections accepted and not yet
	// authenticated; beyond it the oldest is closed. Zero: a sixteenth of
	// the process's descriptor limit (RLIMIT_NOFILE), between 4 and
	// DefaultMaxPending, so that a flood of every listener of a process
	// still leaves it most of its descriptors for the connections it
	// needs.
	MaxPending int
	// Logf logs an accept episode: descriptors exhausted, accepting
	// again, a flood being shed. Nil: no log.
	Logf func(format string, args ...any)
}

// Pending is a connection accepted and not yet authenticated.
type Pending struct {
	net.Conn
	l        *loop
	timer    *time.Timer
	done     bool // authenticated or closed by the loop; l.mu
	shed     bool // closed by the loop; l.mu
	released bool // no longer counted in l.handlers; l.mu
	prev     *Pending
	next     *Pending
}

// Authenticated takes the connection out of the pending set: the loop no
// longer closes it. It returns false if the loop has already closed it
// (deadline or flood): the handler must then drop it.
func (p *Pending) Authenticated() bool {
	p.l.mu.Lock()
	defer p.l.mu.Unlock()
	if p.done {
		return !p.shed
	}
	p.done = true
	p.timer.Stop()
	p.l.unlink(p)
	p.releaseLocked()
	return true
}

// releaseLocked ends p's handshake for Serve's accounting; l.mu held.
func (p *Pending) releaseLocked() {
	if !p.released {
		p.released = true
		p.l.handlers.Done()
	}
}

// finish runs when p's handler returns: a connection it neither
// authenticated nor closed is closed (it no longer counts against the cap).
func (p *Pending) finish() {
	p.l.mu.Lock()
	if !p.done {
		p.l.shedLocked(p)
	}
	p.releaseLocked()
	p.l.mu.Unlock()
}

type loop struct {
	cfg      Config
	handlers sync.WaitGroup // handlers not done with their handshake
	mu       sync.Mutex
	head     *Pending // oldest
	tail     *Pending
	n        int
	// shedLog logs the connections closed for the cap: the first of a
	// flood, then a count every DefaultWindow.
	shedLog RateLog
}

// Serve accepts connections on ln and calls handle for each in a new
// goroutine, until ln is closed; then it closes the connections still
// pending, waits until each of their handlers has returned (a handler
// must return soon after its connection is closed) and returns nil.
// Handlers that authenticated their connection may run on. Any other
// Accept error is retried with back-off.
func Serve(ln net.Listener, cfg Config, handle func(*Pending)) error {
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = defaultMaxPending()
	}
	l := &loop{cfg: cfg}
	l.shedLog = RateLog{Burst: 1, Logf: func(msg string) { l.logf("%s", msg) }}
	defer func() {
		l.closeAll()
		l.handlers.Wait()
		l.shedLog.Stop()
	}()
	backoff := time.Duration(0)
	failures := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			if failures == 0 {
				l.logf("%s: accept failed (%v); retrying with back-off", cfg.Name, err)
			}
			failures++
			if backoff == 0 {
				backoff = minBackoff
			} else if backoff *= 2; backoff > maxBackoff {
				backoff = maxBackoff
			}
			// A pending connection is a descriptor: under exhaustion,
			// give the oldest back so the next Accept can succeed.
			l.shedOldest()
			time.Sleep(backoff)
			continue
		}
		if failures > 0 {
			l.logf("%s: accepting again after %d failed attempts", cfg.Name, failures)
			failures, backoff = 0, 0
		}
		p := l.add(c)
		go func() {
			defer p.finish()
			handle(p)
		}()
		// Let the handler read what its client sent with the connection
		// (a hello) before more are accepted: under a flood the loop would
		// otherwise accept a cap's worth of connections, closing a real
		// client's, before its handler ran.
		runtime.Gosched()
	}
}

// DefaultCap is Config.MaxPending's default for this process, for a
// caller that knows how many real clients may connect at once and takes
// the larger of the two (CapFor).
func DefaultCap() int { return defaultMaxPending() }

// CapFor is the cap of a listener that up to clients real clients (the
// processes of a job) may dial at once: clients plus the default cap (the
// margin a flood may take, which follows the descriptor limit), so that a
// job of more processes than the default cap does not shed its own
// members' connections while they authenticate. clients <= 0: the
// default.
func CapFor(clients int) int {
	d := defaultMaxPending()
	if clients <= 0 {
		return d
	}
	return clients + d
}

// defaultMaxPending is Config.MaxPending's default for this process.
func defaultMaxPending() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return DefaultMaxPending
	}
	return maxPendingFor(r.Cur)
}

// maxPendingFor is the default cap of a process that may open limit
// descriptors.
func maxPendingFor(limit uint64) int {
	return int(max(minPending, min(DefaultMaxPending, limit/16)))
}

func (l *loop) logf(format string, args ...any) {
	if l.cfg.Logf != nil {
		l.cfg.Logf(format, args...)
	}
}

func (l *loop) add(c net.Conn) *Pending {
	p := &Pending{Conn: c, l: l}
	l.handlers.Add(1)
	l.mu.Lock()
	shed := l.n >= l.cfg.MaxPending
	if shed {
		l.shedLocked(l.head)
	}
	p.prev = l.tail
	if l.tail != nil {
		l.tail.next = p
	} else {
		l.head = p
	}
	l.tail = p
	l.n++
	p.timer = time.AfterFunc(l.cfg.HandshakeTimeout, func() {
		l.mu.Lock()
		if !p.done {
			l.shedLocked(p)
		}
		l.mu.Unlock()
	})
	l.mu.Unlock()
	if shed {
		l.shedLog.Printf("%s: more than %d connections have not authenticated; closing the oldest", l.cfg.Name, l.cfg.MaxPending)
	}
	return p
}

func (l *loop) shedOldest() {
	l.mu.Lock()
	if l.head != nil {
		l.shedLocked(l.head)
	}
	l.mu.Unlock()
}

// shedLocked closes p, which is pending; l.mu held.
func (l *loop) shedLocked(p *Pending) {
	if p == nil || p.done {
		return
	}
	p.done, p.shed = true, true
	if p.timer != nil {
		p.timer.Stop()
	}
	l.unlink(p)
	p.Conn.Close()
}

// unlink removes p from the pending list; l.mu held.
func (l *loop) unlink(p *Pending) {
	if p.prev != nil {
		p.prev.next = p.next
	} else if l.head == p {
		l.head = p.next
	} else {
		return // not linked
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		l.tail = p.prev
	}
	p.prev, p.next = nil, nil
	l.n--
}

// closeAll closes the connections still pending when the listener closes.
func (l *loop) closeAll() {
	l.mu.Lock()
	for l.head != nil {
		l.shedLocked(l.head)
	}
	l.mu.Unlock()
}
