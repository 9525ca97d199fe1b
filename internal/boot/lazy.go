package boot

// ftmpirun's lazy start (issue 24 item 2): the start-up fence (and a Reinit
// epoch's rejoin) answers with the job's layout (every process's host and
// incarnation: ctlwire.Layout, whose size grows with the hosts, not the
// processes) instead of every endpoint, and a peer's endpoint is asked of
// the launcher (ctlwire.OpEndpoints, one round trip on the control
// connection) when it is first needed: the PeerTable's fetch, as under
// PMI; the fence's answer also carries the endpoints of the O(log n) peers
// the rank is sure to dial first (the launcher's policy: near), read from
// there without a round trip. The launcher answers a lookup of a process that is gone, or that
// published nothing, as failed: the fetch fails, which the caller takes as
// the loss of that peer. FTMPI_ENDPOINTS=all makes the fence return every
// endpoint, as before.

import (
	"fmt"
	"os"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// EnvEndpoints chooses how a rank started by ftmpirun reads its peers'
// endpoints: "lazy" (the default: each when first needed) or "all"
// (every endpoint at start-up). No MPI counterpart.
const EnvEndpoints = "FTMPI_ENDPOINTS"

// Lazy reports whether this rank reads its peers' endpoints on demand
// (ExchangeLazy, RejoinLazy) rather than at the fence; an EnvEndpoints
// value other than "lazy", "all" or unset is an error that names it. It
// has no MPI counterpart.
func (c *Client) Lazy() (bool, error) {
	switch v := os.Getenv(EnvEndpoints); v {
	case "", "lazy":
		return true, nil
	case "all":
		return false, nil
	default:
		return false, fmt.Errorf("boot: %s=%q must be lazy or all", EnvEndpoints, v)
	}
}

// ExchangeLazy is Exchange for a rank that reads endpoints on demand: it
// publishes self and returns, once every rank has, the table of every
// process id below Universe, each entry asked of the launcher on its first
// Get, and the layout (every process's Rank, Host, Cores and Inc; no
// addresses). The layout is nil when the launcher answered with every
// endpoint instead (the table then holds them). Processes of this world
// gone before publishing make the error a *FailedError, as Exchange's.
func (c *Client) ExchangeLazy(self Endpoint) (*PeerTable, []Endpoint, error) {
	self.Rank = c.info.Proc
	c.fillHost(&self)
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpFence, Rank: c.info.Rank, Kind: ctlwire.FenceLayout, Host: self.Host, Cores: self.Cores, Incarnation: self.Inc,
		KV: map[string]string{ctlwire.EndpointKey(c.info.Proc): encodeEndpoint(self)}})
	if err != nil {
		return nil, nil, err
	}
	v, ok := reply.KV[ctlwire.LayoutKey]
	if !ok {
		t, err := c.tableOf(reply.KV)
		return t, nil, err
	}
	eps, none, err := layoutEndpoints(v, c.info.Universe)
	if err != nil {
		return nil, nil, err
	}
	var missing []int
	base := c.info.Proc - c.info.Rank
	for _, p := range none {
		if p >= base && p < base+c.info.Size {
			missing = append(missing, p)
		}
	}
	t := c.lookupTable(len(eps), reply.KV, 0)
	if len(missing) > 0 {
		return t, eps, &FailedError{Ranks: missing}
	}
	return t, eps, nil
}

// RejoinLazy is Rejoin for a rank that reads endpoints on demand: the
// table of the WorldSize ranks' endpoints of epoch, each asked of the
// launcher on its first Get, and the epoch's layout (nil when the launcher
// answered with every endpoint: the table holds them). A newer epoch is a
// *SupersededError, as Rejoin's.
func (c *Client) RejoinLazy(epoch int, self Endpoint) (*PeerTable, []Endpoint, error) {
	self.Rank = c.info.Rank
	c.fillHost(&self)
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpRejoin, Rank: c.info.Rank, Epoch: epoch, Kind: ctlwire.FenceLayout, Host: self.Host, Cores: self.Cores, Incarnation: self.Inc,
		KV: map[string]string{ctlwire.EpochEndpointKey(epoch, c.info.Rank): encodeEndpoint(self)}})
	if err != nil {
		return nil, nil, err
	}
	if reply.Epoch != epoch {
		return nil, nil, &SupersededError{Requested: epoch, Epoch: reply.Epoch}
	}
	n := c.info.WorldSize()
	v, ok := reply.KV[ctlwire.LayoutKey]
	if !ok {
		eps, err := rejoinEndpoints(epoch, n, reply.KV)
		if err != nil {
			return nil, nil, err
		}
		return newPeerTable(n, func(p int) (Endpoint, error) { return eps[p], nil }), nil, nil
	}
	eps, none, err := layoutEndpoints(v, n)
	if err != nil {
		return nil, nil, err
	}
	if len(none) > 0 {
		return nil, nil, fmt.Errorf("boot: epoch %d: no endpoint for rank %d", epoch, none[0])
	}
	return c.lookupTable(n, reply.KV, epoch), eps, nil
}

// lookupTable is the table of n processes' endpoints of epoch, each read
// from kv (the fence's answer) if the launcher sent it there, else asked
// of the launcher: one at a time on Get, together on Prefetch.
func (c *Client) lookupTable(n int, kv map[string]string, epoch int) *PeerTable {
	t := newPeerTable(n, func(p int) (Endpoint, error) {
		eps, errs := c.lookupIn(kv, epoch, []int{p})
		return eps[0], errs[0]
	})
	t.many = func(ps []int) ([]Endpoint, []error) { return c.lookupIn(kv, epoch, ps) }
	return t
}

// layoutEndpoints reads the first n processes of a layout as endpoints
// without addresses, and the processes that published nothing (sorted).
func layoutEndpoints(v string, n int) (eps []Endpoint, none []int, err error) {
	l, err := ctlwire.ParseLayout(v, n)
	if err != nil {
		return nil, nil, fmt.Errorf("boot: the launcher's layout: %w", err)
	}
	eps = make([]Endpoint, n)
	for p := range eps {
		eps[p] = Endpoint{Rank: p, Inc: l.Inc[p]}
		if h := l.Host[p]; h >= 0 {
			eps[p].Host, eps[p].Cores = l.Hosts[h].Name, l.Hosts[h].Cores
		} else {
			none = append(none, p)
		}
	}
	return eps, none, nil
}

// lookupIn is the endpoints of epoch of the processes ps (each one's
// error beside it): from kv, the fence's answer, for those the launcher
// sent there (the peers a rank dials first), the others asked of the
// launcher (lookup).
func (c *Client) lookupIn(kv map[string]string, epoch int, ps []int) ([]Endpoint, []error) {
	eps, errs := make([]Endpoint, len(ps)), make([]error, len(ps))
	var ask []int
	var at []int // ask[i] is ps[at[i]]
	for i, p := range ps {
		if v, ok := kv[endpointKey(epoch, p)]; ok {
			if err := decodeEndpoint(v, &eps[i]); err != nil {
				errs[i] = fmt.Errorf("boot: bad endpoint for process %d: %w", p, err)
			}
			continue
		}
		ask, at = append(ask, p), append(at, i)
	}
	for len(ask) > 0 {
		k := min(len(ask), ctlwire.MaxLookup)
		got, gerrs := c.lookup(epoch, ask[:k])
		for j := range k {
			eps[at[j]], errs[at[j]] = got[j], gerrs[j]
		}
		ask, at = ask[k:], at[k:]
	}
	return eps, errs
}

// endpointKey is the launcher's key of process p's endpoint of epoch.
func endpointKey(epoch, p int) string {
	if epoch > 0 {
		return ctlwire.EpochEndpointKey(epoch, p)
	}
	return ctlwire.EndpointKey(p)
}

// Lookups is how many endpoints this rank asked the launcher for (for
// tests and measurements). It has no MPI counterpart.
func (c *Client) Lookups() int { return int(c.lookups.Load()) }

// LookupRequests is how many requests those lookups took (one asks for up
// to ctlwire.MaxLookup endpoints; for tests and measurements). It has no
// MPI counterpart.
func (c *Client) LookupRequests() int { return int(c.lookupReqs.Load()) }

// lookup asks the launcher for the endpoints of epoch of the processes ps
// (at most ctlwire.MaxLookup): one round trip on the control connection.
// A process the launcher reports failed (gone, or it published nothing),
// a superseded epoch, or an answer without a process's endpoint is that
// process's error.
func (c *Client) lookup(epoch int, ps []int) ([]Endpoint, []error) {
	c.lookups.Add(int64(len(ps)))
	c.lookupReqs.Add(1)
	eps, errs := make([]Endpoint, len(ps)), make([]error, len(ps))
	fail := func(err error) ([]Endpoint, []error) {
		for i := range errs {
			errs[i] = err
		}
		return eps, errs
	}
	reply, err := c.call(ctlwire.Msg{Op: ctlwire.OpEndpoints, Rank: c.info.Rank, Epoch: epoch, Procs: ps})
	if err != nil {
		return fail(err)
	}
	if reply.Epoch != epoch {
		return fail(&SupersededError{Requested: epoch, Epoch: reply.Epoch})
	}
	failed := make(map[int]bool, len(reply.Failed))
	for _, q := range reply.Failed {
		failed[q] = true
	}
	for i, p := range ps {
		v, ok := reply.KV[endpointKey(epoch, p)]
		switch {
		case ok:
			if err := decodeEndpoint(v, &eps[i]); err != nil {
				errs[i] = fmt.Errorf("boot: bad endpoint for process %d: %w", p, err)
			}
		case failed[p]:
			errs[i] = fmt.Errorf("boot: process %d failed (the launcher has no endpoint of it)", p)
		default:
			errs[i] = fmt.Errorf("boot: the launcher's answer has no endpoint of process %d", p)
		}
	}
	return eps, errs
}
