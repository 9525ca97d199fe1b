package rte

import (
	"fmt"
	"sync"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/dpm"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// PortDelegate is what connect/accept's port table (internal/rte/dpm:
// ports, the ctl.Port frames, the roots' handshake) needs of the API
// above the runtime, asked when the first call that needs the table makes
// it (the World is initialised by then).
type PortDelegate struct {
	// Job names this process's launch: ports of another are refused.
	Job func() string
	// Code is the class code of an error (a DPMError, or the API's own
	// from a side's collectives), carried in verdicts.
	Code func(err error) int
	// Net is the epoch's sockets (nil under Run and for a singleton: no
	// endpoints to add or read).
	Net func() *Net
}

// ports is r's port table, made by the first call that needs it (portTable).
type ports struct {
	d    PortDelegate
	once sync.Once
	t    *dpm.Table
	mu   sync.Mutex // guards t's publication to onPort
}

// portTable returns this process's port table (connect/accept/join's
// protocol: connect.go), made at the first call from RankConfig.Ports.
func (r *Rank) portTable() *dpm.Table {
	p := &r.ports
	p.once.Do(func() {
		var code func(error) int
		if c := p.d.Code; c != nil { // the API's classes of the errors as it sees them
			code = func(err error) int { return c(dpmError(err)) }
		}
		t, err := dpm.New(dpm.Config{Self: r.Proc, Job: r.portJob(), Net: portNet{r}, Code: code, Log: r.Diag().Writer()})
		if err != nil {
			panic(fmt.Sprintf("rte: the port table of process %d: %v", r.Proc, err)) // a programming error: the config is the runtime's
		}
		p.mu.Lock()
		p.t = t
		p.mu.Unlock()
	})
	return p.t
}

// portJob names this process's launch in its port names and Join's
// handshake (PortDelegate.Job): ports of another launch are refused.
func (r *Rank) portJob() string {
	if f := r.ports.d.Job; f != nil {
		return f()
	}
	return fmt.Sprintf("rank-%p", r) // no delegate: ports of this runtime only
}

// onPort handles a ctl.Port frame (on a transport goroutine: it does not
// block). Before a port was opened or a connection started here a request
// is refused and anything else dropped (undecodable ones too: the
// diagnostics may not be set yet).
func (r *Rank) onPort(from int, h transport.Header, payload []byte) {
	r.ports.mu.Lock()
	t := r.ports.t
	r.ports.mu.Unlock()
	if t != nil {
		t.Handle(from, h, payload)
		return
	}
	_ = dpm.Unopened(portNet{r}, r.Proc, from, h, payload)
}

// AddEndpoints makes processes of another job reachable over the epoch's
// sockets n (under ftmpirun; nil n: nothing to add) and records their
// hosts.
func (r *Rank) AddEndpoints(n *Net, eps []boot.Endpoint) {
	if n == nil || len(eps) == 0 {
		return
	}
	var add []boot.Endpoint
	for _, ep := range eps {
		if ep.Rank == r.Proc || len(ep.Addrs) == 0 {
			continue
		}
		if !n.has(ep.Rank) { // no read of an endpoint the caller brings
			add = append(add, ep)
		}
	}
	if len(add) > 0 {
		n.AddPeers(add)
		r.Hosts.Add(add)
	}
}

// portNet is the runtime as the protocol's dpm.Net.
type portNet struct{ r *Rank }

var _ dpm.Net = portNet{}

func (n portNet) eng() *p2p.Engine { return n.r.Eng }
func (n portNet) SendControl(to int, h transport.Header, payload []byte) error {
	return n.eng().SendControl(to, h, payload)
}
func (n portNet) IsLost(p int) bool              { return n.eng().IsLost(p) }
func (n portNet) FailureSignal() <-chan struct{} { return n.eng().FailureSignal() }
func (n portNet) net() *Net {
	if f := n.r.ports.d.Net; f != nil {
		return f()
	}
	return nil
}
func (n portNet) AddEndpoints(eps []boot.Endpoint)      { n.r.AddEndpoints(n.net(), eps) }
func (n portNet) Endpoints(procs []int) []boot.Endpoint { return n.net().endpointsOf(procs) }
func (n portNet) Endpoint(p int) (boot.Endpoint, bool) {
	if net := n.net(); net != nil {
		return net.Endpoint(p)
	}
	return boot.Endpoint{}, false
}

// EndpointsOf returns the endpoints of procs known on the epoch's sockets
// n, encoded (dpm.EncodeEndpoints): what IntercommCreate's leader sends
// the other group's (nil n: none known).
func EndpointsOf(n *Net, procs []int) []byte {
	return dpm.EncodeEndpoints(n.endpointsOf(procs))
}

// endpointsOf returns the endpoints of procs known on n (nil n: none),
// in their order, those it cannot read left out: one lookup for the
// group, not one a process (Prefetch).
func (n *Net) endpointsOf(procs []int) []boot.Endpoint {
	if n == nil {
		return nil
	}
	n.Prefetch(procs)
	var eps []boot.Endpoint
	for _, p := range procs {
		if ep, ok := n.Endpoint(p); ok {
			eps = append(eps, ep)
		}
	}
	return eps
}

// AddEncodedEndpoints decodes endpoints that EndpointsOf encoded at
// another process and adds those n lacks (AddEndpoints); a malformed
// encoding is an error that says so, and adds none.
func (r *Rank) AddEncodedEndpoints(n *Net, raw []byte) error {
	eps, err := dpm.DecodeEndpoints(raw)
	if err != nil {
		return err
	}
	r.AddEndpoints(n, eps)
	return nil
}
