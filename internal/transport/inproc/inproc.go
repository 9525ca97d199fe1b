// Package inproc is the in-memory transport: ranks are goroutines of one
// process and a frame is delivered by calling the receiver's handler
// directly from the sender's goroutine (one copy, sender buffer to receiver
// buffer). Posted frames (Post) are delivered the same way by one poster
// goroutine per endpoint, started on the first Post and ended by Close, so
// a handler may Post without calling another handler from inside its own
// callback. It must not be used across processes.
package inproc

import (
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// Fabric connects n in-process ranks.
type Fabric struct {
	eps []*Endpoint
}

// NewFabric returns a fabric for n ranks. Attach every rank before sending.
func NewFabric(n int) *Fabric {
	f := &Fabric{eps: make([]*Endpoint, n)}
	for i := range f.eps {
		f.eps[i] = &Endpoint{f: f, self: i}
	}
	return f
}

// Frames returns how many frames rank has sent so far (delivered to a live
// peer): the message counts of the growth measurements (issue 24).
func (f *Fabric) Frames(rank int) int64 { return f.eps[rank].frames.Load() }

// Received returns how many frames rank has been delivered so far: what
// a process hears (a spare's Commits, issue 24).
func (f *Fabric) Received(rank int) int64 { return f.eps[rank].got.Load() }

// Endpoint is one rank's view of the fabric; it implements transport.Transport.
type Endpoint struct {
	f      *Fabric
	self   int
	h      atomic.Pointer[transport.Handler]
	closed atomic.Bool
	dead   atomic.Bool
	frames atomic.Int64 // frames this rank delivered (sent) so far
	got    atomic.Int64 // frames delivered to this rank so far

	mu      sync.Mutex // guards the posted frames
	cond    sync.Cond
	posted  []posted
	spare   []posted // the other buffer, reused
	poster  bool     // the poster goroutine runs
	stopped bool     // Close began: no more posts
	wg      sync.WaitGroup
}

type posted struct {
	to      int
	h       transport.Header
	payload []byte
	done    transport.Done
}

// Attach sets the handler of rank and returns its transport.
func (f *Fabric) Attach(rank int, h transport.Handler) *Endpoint {
	ep := f.eps[rank]
	ep.h.Store(&h)
	return ep
}

// Send implements transport.Transport.
func (e *Endpoint) Send(to int, h transport.Header, payload []byte) error {
	if e.closed.Load() {
		return transport.ErrClosed
	}
	if to < 0 || to >= len(e.f.eps) {
		return transport.ErrPeerLost
	}
	return e.deliver(to, h, payload)
}

func (e *Endpoint) deliver(to int, h transport.Header, payload []byte) error {
	dst := e.f.eps[to]
	if dst.dead.Load() {
		return transport.ErrPeerLost
	}
	hp := dst.h.Load()
	if hp == nil {
		return transport.ErrPeerLost
	}
	hd := *hp
	e.frames.Add(1)
	dst.got.Add(1)
	buf, cookie := hd.Frame(e.self, h)
	if len(buf) > 0 {
		copy(buf, payload)
	}
	hd.Payload(e.self, h, buf, cookie, nil)
	return nil
}

// Post implements transport.Transport.
func (e *Endpoint) Post(to int, h transport.Header, payload []byte, done transport.Done) {
	e.mu.Lock()
	if e.stopped || e.closed.Load() {
		e.mu.Unlock()
		if done != nil {
			done.SendDone(transport.ErrClosed)
		}
		return
	}
	e.posted = append(e.posted, posted{to, h, payload, done})
	if !e.poster {
		e.poster = true
		e.cond.L = &e.mu
		e.wg.Add(1)
		go e.post()
	}
	e.cond.Signal()
	e.mu.Unlock()
}

// post delivers the posted frames in order until Close.
func (e *Endpoint) post() {
	defer e.wg.Done()
	e.mu.Lock()
	for {
		for len(e.posted) == 0 && !e.stopped {
			e.cond.Wait()
		}
		if len(e.posted) == 0 {
			e.mu.Unlock()
			return
		}
		q := e.posted
		e.posted, e.spare = e.spare[:0], nil
		e.mu.Unlock()
		for i := range q {
			p := &q[i]
			err := transport.ErrClosed
			if !e.closed.Load() {
				err = e.deliver(p.to, p.h, p.payload)
			}
			if p.done != nil {
				p.done.SendDone(err)
			}
			q[i] = posted{}
		}
		e.mu.Lock()
		if e.spare == nil {
			e.spare = q[:0]
		}
	}
}

// Close implements transport.Transport: posted frames are delivered first.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	e.stopped = true
	if e.poster {
		e.cond.Signal()
	}
	e.mu.Unlock()
	e.wg.Wait()
	e.closed.Store(true)
	return nil
}

// Kill simulates the crash of rank: every other rank's handler is told the
// peer is lost and later sends to it fail. Used by fault-injection tests.
func (f *Fabric) Kill(rank int, err error) {
	ep := f.eps[rank]
	if ep.dead.Swap(true) {
		return
	}
	ep.closed.Store(true)
	for i, o := range f.eps {
		if i == rank {
			continue
		}
		if hp := o.h.Load(); hp != nil {
			(*hp).PeerLost(rank, err)
		}
	}
}
