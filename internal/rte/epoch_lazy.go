package rte

// Endpoints read on first use (issue 24 item 2). Under a PMI launcher that
// publishes its layout (PMI_process_mapping: Slurm's srun), the start-up
// exchange reads no peer's endpoint: the layout gives every peer's node,
// which is all that the opening of an epoch needs of every peer (the
// transport choice, the shared-memory peers, the host table of the
// host-aware algorithms), and a peer's endpoint is read from the PMI
// server (boot.PeerTable: one get) when a transport of this process must
// dial it (sock's and shm's SetResolve: on the peer's writer goroutine,
// before the dial) or when this process asks for it (Net.Endpoint). A
// peer that connected first is answered on its own connection, without a
// read, and no receiver goroutine ever waits for the server. A process
// that dials d peers of n makes d gets, not n. A peer that died after the
// start-up fence still has its endpoint in the server (every process
// published before the fence ended), so a dial to it gets its address and
// fails to reach it: the transport's failure of that peer, as for a peer
// that dies later. A get that fails (the server gone) is the failure of
// that peer too, never a hang (the get has PMI's deadline) nor a panic.

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/sock"
)

// lazyShm stands in the shared-memory address table for a peer of this
// node whose endpoint is not read yet: the table says the peer is local
// (its set-up is accepted) and the address is read before this process
// sets up the pair itself (the transport resolves before it dials).
const lazyShm = "(not read yet)"

// lazy is what a Net reads on demand.
type lazy struct {
	table *boot.PeerTable
	nodes []int         // the launcher's node of every process
	got   []atomic.Bool // the peer's endpoint is in the transports' tables
	lost  []atomic.Bool // the failed read was reported to the engine
	lost0 func(peer int, err error)
}

// nodeHost is the name of node k of the launcher's layout in the host
// table (rte.Hosts): the same at every process, which is all the
// host-aware choices need (they compare names). The transports keep the
// real host of a peer (boot.HostID), read with its endpoint.
func nodeHost(k int) string { return "pmi-node-" + strconv.Itoa(k) }

// layoutEndpoints is the endpoint list of a lazy start: every process's
// rank and node, no addresses (Net.Endpoint reads them).
func layoutEndpoints(nodes []int) []boot.Endpoint {
	eps := make([]boot.Endpoint, len(nodes))
	for p, k := range nodes {
		eps[p] = boot.Endpoint{Rank: p, Host: nodeHost(k)}
	}
	return eps
}

// layoutNodes numbers the hosts of ftmpirun's layout (the same numbers at
// every process: by the first process on each) and returns every process's
// (-1 for the dead, which published nothing).
func layoutNodes(layout []boot.Endpoint, dead []int) []int {
	nodes := make([]int, len(layout))
	index := make(map[string]int)
	for p, ep := range layout {
		k, ok := index[ep.Host]
		if !ok {
			k = len(index)
			index[ep.Host] = k
		}
		nodes[p] = k
	}
	for _, p := range dead {
		if p >= 0 && p < len(nodes) {
			nodes[p] = -1
		}
	}
	return nodes
}

// has reports whether process p's address is in the transports' tables,
// without reading it on a lazy Net.
func (n *Net) has(p int) bool {
	if z := n.lazy; z != nil && p >= 0 && p < len(z.got) && !z.got[p].Load() {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return p >= 0 && p < len(n.peers) && (n.peers[p].Unix != "" || n.peers[p].TCP != "")
}

// resolve makes sure peer p's endpoint is in the transports' tables,
// reading it (one PMI get) the first time. Nil on a Net that read every
// endpoint at start. A failed read is reported to the engine as the loss
// of p, once, and returned (the transport fails p's frames with it). The
// transports call it on p's writer goroutine before they dial p.
func (n *Net) resolve(p int) error {
	z := n.lazy
	if z == nil || p < 0 || p >= len(z.got) || z.got[p].Load() {
		return nil
	}
	ep, err := z.table.Get(p)
	if err != nil {
		err = fmt.Errorf("%w: the endpoint of process %d: %v", transport.ErrPeerLost, p, err)
		if !z.lost[p].Swap(true) && z.lost0 != nil {
			// Not from here: a send may hold the engine's lock.
			go z.lost0(p, err)
		}
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if z.got[p].Load() {
		return nil
	}
	// Copies: the transports read their tables without a lock.
	peers := append([]sock.Peer(nil), n.peers...)
	peers[p] = sock.Peer{Host: ep.Host, Unix: ep.Addrs["unix"], TCP: ep.Addrs["tcp"], Nonce: ep.Addrs["nonce"]}
	n.peers = peers
	n.sock.SetPeers(append([]sock.Peer(nil), peers...))
	if n.shm != nil && p < len(n.local) {
		local := append([]string(nil), n.local...)
		// Shared memory only with a peer that both the layout (as every
		// process reads it, so both ends agree before either read the
		// other's endpoint) and its real host put on this host.
		local[p] = ""
		if ep.Host == n.host && n.sameNode(n.self, p) {
			local[p] = ep.Addrs["shm"]
		}
		n.local = local
		n.shm.SetPeers(append([]string(nil), local...))
	}
	z.got[p].Store(true)
	return nil
}

// Prefetch reads the endpoints of ps not read yet, in one request where
// the launcher takes several (ftmpirun: up to 4,096 a lookup; one PMI get
// a process under srun), into the transports' tables: what a process that
// is about to need a known set of peers (a group whose endpoints it sends
// on) does instead of one round trip a peer. A failed read is that
// peer's loss, as resolve's. Nothing on a Net that read every endpoint at
// start. It has no MPI counterpart.
func (n *Net) Prefetch(ps []int) {
	z := n.lazy
	if z == nil {
		return
	}
	var want []int
	for _, p := range ps {
		if p >= 0 && p < len(z.got) && !z.got[p].Load() && z.nodes[p] >= 0 {
			want = append(want, p)
		}
	}
	if len(want) == 0 {
		return
	}
	z.table.Prefetch(want)
	for _, p := range want {
		n.resolve(p) // from the table now
	}
}

// fullEndpoint is process p's endpoint with what only its own read gives
// (pid and start time): read on demand on a lazy Net (ok false: it cannot
// be read), from the start-up list otherwise.
func (n *Net) fullEndpoint(p int) (boot.Endpoint, bool) {
	if n.lazy != nil {
		if p < 0 || p >= n.lazy.table.Len() {
			return boot.Endpoint{}, false
		}
		ep, err := n.lazy.table.Get(p)
		return ep, err == nil
	}
	if p < 0 || p >= len(n.Endpoints) {
		return boot.Endpoint{}, false
	}
	return n.Endpoints[p], true
}

// sameNode reports whether process p may run on this host: on a lazy Net
// whether the layout puts it on this process's node (no read), else true
// (the caller compares hosts).
func (n *Net) sameNode(self, p int) bool {
	z := n.lazy
	if z == nil {
		return true
	}
	return p >= 0 && p < len(z.nodes) && self >= 0 && self < len(z.nodes) && z.nodes[p] == z.nodes[self]
}

// Fetches is how many peers' endpoints this process read from the PMI
// server (-1: it read every one at start). For tests and measurements; it
// has no MPI counterpart.
func (n *Net) Fetches() int {
	if n.lazy == nil {
		return -1
	}
	return n.lazy.table.Fetches()
}
