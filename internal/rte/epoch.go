package rte

import (
	"errors"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/shm"
	"github.com/ftmpi/ftmpi/internal/transport/sock"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// autoShm makes "auto" use shared memory between the processes of one
// host (sockets to other hosts); otherwise "auto" means sockets only.
const autoShm = true

// NetConfig is how the processes of an epoch communicate (validated by
// the caller: mpi.Config).
type NetConfig struct {
	Transport      string        // "auto", "unix", "tcp" or "shm"
	EagerLimit     int           // p2p.Config.EagerLimit
	WaitSpin       time.Duration // p2p.Config.Spin
	ReaderSpin     time.Duration // socket readers' spin; negative: chosen from ranks per host and cores
	SpinYield      bool          // spinning readers yield to other processes
	ConnectTimeout time.Duration // sock.Config.ConnectTimeout
	Untyped        bool          // p2p.Config.Untyped
}

// EngineConfig is the engine configuration of process self.
func (nc NetConfig) EngineConfig(self int) p2p.Config {
	return p2p.Config{Self: self, EagerLimit: nc.EagerLimit, Spin: nc.WaitSpin, Untyped: nc.Untyped}
}

// readerSpin is how long a socket reader spins before parking: a short
// spin buys latency when every rank on the host has a core, and costs
// throughput when ranks are oversubscribed, so it is off then (unless the
// configuration fixes it). hostCores is the host's core count as the
// launcher reported it (boot.Info.HostCores, the same for every rank of the
// host); this process's own CPU count (which affinity or a container may
// shrink) is used only when the launcher did not tell (0).
func (nc NetConfig) readerSpin(ranksOnHost, hostCores int) time.Duration {
	if nc.ReaderSpin >= 0 {
		return nc.ReaderSpin
	}
	if hostCores <= 0 {
		hostCores = runtime.NumCPU()
	}
	if ranksOnHost <= hostCores {
		return 50 * time.Microsecond
	}
	return 0
}

// Net is the communication of one process in one epoch: an engine and a
// transport of its own (sockets, and shared memory in front of them when
// chosen), connected to the processes of the epoch.
type Net struct {
	Epoch     int                 // the epoch joined (newer than asked if one superseded it)
	Eng       *p2p.Engine         // its transport is set
	Tr        transport.Transport // listening, its peers set
	Mode      string              // the transport as resolved: "unix" (every peer on this host), "shm" (every peer on this host, shared memory), "tcp", or "auto"
	Endpoints []boot.Endpoint     // every process's, by process id; on a lazy Net (PMI with a layout) only Rank and Host (the launcher's node, nodeHost), Endpoint reads the rest
	PeerInc   []int               // the incarnation of every process, by process id
	Dead      []int               // processes that died before publishing their endpoint (first epoch only)

	sock *sock.Transport
	shm  *shm.Transport // nil unless shared memory is used
	host string
	self int

	mu    sync.Mutex
	peers []sock.Peer // every process id's address, as given to the transport
	local []string    // every process id's shared-memory address ("" for other hosts)

	lazy *lazy // nil: every endpoint was read at start

	client *boot.Client // the launcher connection of the process (nil without a head)
}

// useShm reports whether transport (as configured) puts shared memory in
// front of the sockets.
func useShm(transport string) bool {
	return transport == boot.TransportShm || (autoShm && (transport == "" || transport == boot.TransportAuto))
}

// OpenEpoch builds this process's communication for a Reinit epoch (0:
// the first start): a fresh engine and transport listening on a fresh
// address, exchanged with every process through the launcher (without a
// head: through PMI for the first epoch, by the function SetRejoin
// installed for the later ones). Nothing of
// an older epoch (connections, queued messages) survives into it, so a
// message of an old epoch can never be delivered in a new one. If a newer
// epoch starts meanwhile (another failure), it joins that one.
func (p *Process[W]) OpenEpoch(epoch int, nc NetConfig) (*Net, error) {
	info := p.Info()
	for {
		eng := p2p.New(nc.EngineConfig(info.Proc))
		mode := sock.Mode(nc.Transport)
		withShm := useShm(nc.Transport) && info.TmpDir != ""
		if mode == boot.TransportShm {
			mode = sock.ModeAuto // sockets to the other hosts
		}
		spin := &atomicDuration{}
		name := "r" + strconv.Itoa(info.Proc) + "." + strconv.Itoa(info.Incarnation)
		if epoch > 0 {
			name += ".e" + strconv.Itoa(epoch)
		}
		tr, err := sock.Listen(sock.Config{
			Self: info.Proc, Host: info.Host, Mode: mode, Dir: info.TmpDir, Name: name, TCPAddr: listenAddr(info.Listen),
			Handler: eng, SpinFn: spin.Load, Yield: nc.SpinYield, ConnectTimeout: nc.ConnectTimeout,
			Auth: info.Auth, // every connection proves the job's secret (nil: none was handed over)
			// Without a head the secret comes with the first exchange below.
			AuthLater: p.pmi != nil && info.Auth == nil,
			Peers:     max(info.Size, info.Universe),
		})
		if err != nil {
			return nil, err
		}
		var top transport.Transport = tr
		var sh *shm.Transport
		if withShm {
			sh, err = shm.Listen(shm.Config{
				Self: info.Proc, Dir: info.TmpDir, Name: name + ".shm", Handler: eng, Fallback: tr,
				SpinFn: spin.Load, Yield: nc.SpinYield, ConnectTimeout: nc.ConnectTimeout,
				Auth: info.Auth, AuthLater: p.pmi != nil && info.Auth == nil, // every pair set-up proves the job's secret, as the sockets do
				Peers: max(info.Size, info.Universe),
			})
			if err != nil {
				tr.Close()
				eng.Close()
				return nil, err
			}
			top = sh
		}
		self := tr.Self()
		addrs := map[string]string{}
		if sh != nil {
			addrs["shm"] = sh.Addr()
		}
		if self.Unix != "" {
			addrs["unix"] = self.Unix
		}
		if self.TCP != "" {
			addrs["tcp"] = self.TCP
		}
		if self.Nonce != "" {
			addrs["nonce"] = self.Nonce // one-round-trip handshakes (wireauth)
		}
		ep := boot.Endpoint{Rank: info.Proc, Inc: info.Incarnation, Host: info.Host, Addrs: addrs}
		if p.pmi != nil {
			ep.Pid, ep.Start = ProcIdentity() // no launcher looks at this process: its host's others do
		}
		var eps []boot.Endpoint
		var dead []int
		var table *boot.PeerTable  // a start with the launcher's layout: endpoints read on first use
		var nodes []int            // a PMI layout: the node of every process
		var layout []boot.Endpoint // ftmpirun's layout: every process's host and incarnation, no addresses
		if p.pmi != nil && epoch > 0 {
			// No head, a later Reinit epoch: the processes exchange their
			// new endpoints themselves, over the old epoch's connections.
			p.mu.Lock()
			rejoin := p.rejoin
			p.mu.Unlock()
			if rejoin == nil {
				err = boot.NoHeadError("a Reinit epoch", p.pmi.Launcher())
			} else {
				eps, dead, err = rejoin(epoch, ep)
			}
		} else if p.pmi != nil {
			// No head: one PMI fence, the job's secret with it; every
			// process of the PMI job must publish (a failure before or
			// during the fence is an error within its deadline).
			var key *wireauth.Key
			if nodes, err = p.pmi.Nodes(); err == nil && nodes != nil {
				table, key, err = p.pmi.Publish(ep)
			} else if err == nil {
				eps, key, err = p.pmi.Exchange(ep)
			}
			if err == nil {
				err = tr.SetAuth(key)
				if err == nil && sh != nil {
					err = sh.SetAuth(key)
				}
				p.mu.Lock()
				p.info.Auth = key
				p.mu.Unlock()
			}
			// The closing fence (Settle) comes once this process takes
			// connections: its secret and its peers installed, below.
		} else if lazyOn, lerr := p.client.Lazy(); lerr != nil {
			err = lerr
		} else if epoch == 0 {
			if lazyOn {
				// The layout, no endpoint: a peer's is asked of the
				// launcher when a transport must dial it.
				table, layout, err = p.client.ExchangeLazy(ep)
			} else {
				eps, err = p.client.Exchange(ep)
			}
			// Ranks that died before publishing their endpoint are failures
			// like any other: the job starts without them (a fault-tolerant
			// program goes on; the default error handler aborts at the first
			// operation with them).
			var fe *boot.FailedError
			if errors.As(err, &fe) {
				dead, err = fe.Ranks, nil
			}
		} else {
			if lazyOn {
				table, layout, err = p.client.RejoinLazy(epoch, ep)
			} else {
				eps, err = p.client.Rejoin(epoch, ep)
			}
			var se *boot.SupersededError
			if errors.As(err, &se) {
				top.Close()
				eng.Close()
				epoch = se.Epoch
				continue
			}
		}
		if err != nil {
			top.Close()
			eng.Close()
			return nil, err
		}
		if table != nil && layout == nil && nodes == nil {
			// The launcher answered with every endpoint (FTMPI_ENDPOINTS
			// is read by the rank; an older launcher ignores the ask).
			eps, err = table.All()
			table = nil
			if err != nil {
				top.Close()
				eng.Close()
				return nil, err
			}
		}
		var z *lazy
		if table != nil {
			// Every peer's node from the layout, no endpoint read: a
			// peer's addresses are read when a transport of this process
			// must dial it (Net.resolve). Every process of a PMI job
			// starts as incarnation 0.
			if layout == nil {
				layout = layoutEndpoints(nodes)
			} else {
				nodes = layoutNodes(layout, dead)
			}
			eps = layout
			z = &lazy{table: table, nodes: nodes, got: make([]atomic.Bool, len(nodes)), lost: make([]atomic.Bool, len(nodes)), lost0: eng.PeerLost}
		}
		peers := make([]sock.Peer, len(eps))
		local := make([]string, len(eps))
		incs := make([]int, len(eps))
		onHost := 0
		for i, ep := range eps {
			incs[i] = ep.Inc
			switch {
			case z == nil:
				peers[i] = sock.Peer{Host: ep.Host, Unix: ep.Addrs["unix"], TCP: ep.Addrs["tcp"], Nonce: ep.Addrs["nonce"]}
				if ep.Host == info.Host {
					onHost++
					local[i] = ep.Addrs["shm"]
				}
			case i == info.Proc: // its own endpoint, known
				peers[i] = sock.Peer{Host: info.Host, Unix: addrs["unix"], TCP: addrs["tcp"], Nonce: addrs["nonce"]}
				local[i] = addrs["shm"]
				onHost++
				z.got[i].Store(true)
			case nodes[i] == nodes[info.Proc]:
				onHost++
				if sh != nil {
					local[i] = lazyShm // accepted as local; read before this process sets the pair up
				}
			}
		}
		spin.Store(nc.readerSpin(onHost, info.HostCores))
		tr.SetPeers(peers)
		if mode == "" || mode == sock.ModeAuto {
			mode = sock.ModeAuto
			if onHost == len(eps) {
				mode = sock.ModeUnix // every peer is local: auto means Unix sockets
				if sh != nil {
					mode = boot.TransportShm
				}
			}
		}
		if sh != nil {
			sh.SetPeers(local)
		}
		// A goroutine blocked in a wait polls the rings (or, when no other
		// process of the job is on this host, the sockets) itself for as
		// long as a reader would spin (only when ranks have a core each):
		// no hand-over from the receiver goroutine.
		if sh != nil && onHost > 1 {
			eng.SetPoller(sh, spin.Load())
		} else {
			eng.SetPoller(tr, spin.Load())
		}
		n := &Net{Epoch: epoch, Eng: eng, Tr: top, Mode: string(mode), Endpoints: eps, PeerInc: incs, Dead: dead,
			sock: tr, shm: sh, host: info.Host, self: info.Proc, peers: peers, local: local, lazy: z, client: p.client}
		if z != nil {
			// A peer's endpoint is read when a transport must dial it,
			// on that peer's writer goroutine: never for a peer that
			// connected first, never on a receiver goroutine.
			tr.SetResolve(n.resolve)
			if sh != nil {
				sh.SetResolve(n.resolve)
			}
		}
		eng.SetTransport(n.Tr)
		if p.pmi != nil && epoch == 0 {
			// The PMI start's closing fence: every process's secret and
			// peers are installed before any process leaves it, so no
			// process released from it dials a peer that would hold the
			// handshake (a peer released later, on a loaded host).
			if err := p.pmi.Settle(); err != nil {
				n.Close()
				return nil, err
			}
		}
		return n, nil
	}
}

// AddPeers makes new processes (spawned ones) reachable.
func (n *Net) AddPeers(eps []boot.Endpoint) {
	n.mu.Lock()
	defer n.mu.Unlock()
	peers, local := n.peers, n.local
	for _, ep := range eps {
		if z := n.lazy; z != nil && ep.Rank >= 0 && ep.Rank < len(z.got) {
			z.got[ep.Rank].Store(true) // not to be read again
		}
		for len(peers) <= ep.Rank {
			peers = append(peers, sock.Peer{})
		}
		for len(local) <= ep.Rank {
			local = append(local, "")
		}
		peers[ep.Rank] = sock.Peer{Host: ep.Host, Unix: ep.Addrs["unix"], TCP: ep.Addrs["tcp"], Nonce: ep.Addrs["nonce"]}
		if ep.Host == n.host {
			local[ep.Rank] = ep.Addrs["shm"]
		}
	}
	n.peers, n.local = peers, local
	n.sock.SetPeers(append([]sock.Peer(nil), peers...))
	if n.shm != nil {
		n.shm.SetPeers(append([]string(nil), local...))
	}
}

// Known reports whether process p is a process of this epoch that this
// process can reach (Endpoint would find it), without reading its
// endpoint on a lazy Net (every process of the PMI job is one).
func (n *Net) Known(p int) bool {
	if z := n.lazy; z != nil && p >= 0 && p < len(z.got) {
		return z.nodes[p] >= 0 // not one that died before publishing
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return p >= 0 && p < len(n.peers) && (n.peers[p].Unix != "" || n.peers[p].TCP != "")
}

// Endpoint returns where process p can be reached, as far as this process
// knows (ok false: not known), reading it on a lazy Net if it was not
// read yet (one PMI get).
func (n *Net) Endpoint(p int) (ep boot.Endpoint, ok bool) {
	if n.resolve(p) != nil {
		return boot.Endpoint{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if p < 0 || p >= len(n.peers) || (n.peers[p].Unix == "" && n.peers[p].TCP == "") {
		return boot.Endpoint{}, false
	}
	pe := n.peers[p]
	addrs := map[string]string{}
	if pe.Unix != "" {
		addrs["unix"] = pe.Unix
	}
	if pe.TCP != "" {
		addrs["tcp"] = pe.TCP
	}
	if pe.Nonce != "" {
		addrs["nonce"] = pe.Nonce
	}
	if p < len(n.local) && n.local[p] != "" {
		addrs["shm"] = n.local[p]
	}
	return boot.Endpoint{Rank: p, Host: pe.Host, Addrs: addrs}, true
}

// Close closes the transport (shared memory and sockets) and then the
// engine.
func (n *Net) Close() {
	n.Tr.Close()
	n.Eng.Close()
}

// listenAddr is the TCP listen address for the host address ip ("":
// the transport's default, loopback).
func listenAddr(ip string) string {
	if ip == "" {
		return ""
	}
	return net.JoinHostPort(ip, "0")
}

type atomicDuration struct{ v atomic.Int64 }

func (a *atomicDuration) Load() time.Duration   { return time.Duration(a.v.Load()) }
func (a *atomicDuration) Store(d time.Duration) { a.v.Store(int64(d)) }
