// Package inproc is the in-memory transport: ranks are goroutines of one
// process and a frame is delivered by calling the receiver's handler
// directly from the sender's goroutine (one copy, sender buffer to receiver
// buffer). It must not be used across processes.
package inproc

import (
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

// Endpoint is one rank's view of the fabric; it implements transport.Transport.
type Endpoint struct {
	f      *Fabric
	self   int
	h      atomic.Pointer[transport.Handler]
	closed atomic.Bool
	dead   atomic.Bool
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
	dst := e.f.eps[to]
	if dst.dead.Load() {
		return transport.ErrPeerLost
	}
	hp := dst.h.Load()
	if hp == nil {
		return transport.ErrPeerLost
	}
	hd := *hp
	buf, cookie := hd.Frame(e.self, h)
	if len(buf) > 0 {
		copy(buf, payload)
	}
	hd.Payload(e.self, h, buf, cookie)
	return nil
}

// Close implements transport.Transport.
func (e *Endpoint) Close() error {
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
