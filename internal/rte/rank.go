package rte

import (
	"sync"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/rte/dpm"
	"github.com/ftmpi/ftmpi/internal/rte/fencedrive"
	"github.com/ftmpi/ftmpi/internal/rte/ftdrive"
	"github.com/ftmpi/ftmpi/internal/rte/sparedrive"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Rank is the runtime of one epoch of one process, under the MPI API: the
// point-to-point engine and the transport it sends on, the launcher
// connection, the table of control frames, the failure drivers
// (suspicions, the heartbeat detector, the failure-notice broadcast), the
// table of hosts, and where diagnostics go. Package mpi's World holds one
// Rank per epoch and keeps only what the API needs.
//
// A peer's loss reaches the parts that care by subscription
// (SubscribeLost), a control frame by its type's handler (Ctl); the
// subscribers and handlers run in the goroutine that learnt of the event
// and must not block. The parts register before Start, which lets the
// control frames in.
type Rank struct {
	// Proc is this process's id (in the engine's address space).
	Proc int
	Eng  *p2p.Engine
	Tr   transport.Transport
	// Ctl is the table of control frames: each part registers its types
	// before Start.
	Ctl ctl.Table
	// Fails holds suspicions, the heartbeat detector and the failure-notice
	// broadcast (no detector runs under Run).
	Fails *ftdrive.Failures
	// Hosts is where every process runs.
	Hosts Hosts
	// Spares is this epoch's part in the spare processes (spares.go).
	Spares *sparedrive.Spares
	// Calls is the table of the calls this epoch's goroutines wait in
	// (calls.go): the API records its waits, the hang reports and the
	// trace timeline read it.
	Calls *CallTable

	client    *boot.Client                   // the launcher connection (RankConfig.Net's; nil under Run, for a singleton, under a PMI launcher)
	hang      hangState                      // hang reports (hang.go)
	spareWait spareWait                      // a spare's wait in Init (spares.go)
	fence     *fencedrive.Fence              // the Finalize fence without a head (fence.go)
	reinit    *HeadlessReinit                // RankConfig.Reinit (reinit.go)
	universe  int                            // RankConfig.Universe
	stop      <-chan struct{}                // RankConfig.Stop
	wg        *sync.WaitGroup                // RankConfig.WG
	ports     ports                          // connect/accept's port table (ports.go)
	spawns    dpm.Spawns                     // the spawn calls of each parent group this epoch, which name each call (spawn.go)
	diag      atomic.Pointer[Diag]           // SetDiag
	retired   atomic.Bool                    // Retire was called
	peerGone  atomic.Pointer[func(peer int)] // SetPeerGone
	tl        timeline                       // the recovery timeline (trace.go)
}

// RankConfig is what NewRank builds a Rank from.
type RankConfig struct {
	Proc, Universe int
	Eng            *p2p.Engine
	Tr             transport.Transport
	// Net is the process's communication in this epoch, when it was
	// launched (nil under Run and for a singleton): the hosts of its
	// endpoints are recorded, and its launcher connection confirms
	// suspicions and hears hang reports.
	Net *Net
	// PeerInc is the incarnation of each process in this epoch (nil: all
	// 0).
	PeerInc []int
	// Stop ends the drivers' goroutines, which WG counts.
	Stop <-chan struct{}
	WG   *sync.WaitGroup
	// Hang is what the hang reports need of the API (hang.go).
	Hang HangDelegate
	// Fence is what the Finalize fence without a head needs of it (fence.go).
	Fence FenceDelegate
	// Spares is this epoch's part in the spare processes (spares.go).
	Spares SpareConfig
	// Reinit is the process's driver of Reinit without a head (nil: none;
	// reinit.go).
	Reinit *HeadlessReinit
	// Frames are the API's handlers of the control frames whose protocols
	// run above the runtime.
	Frames Frames
	// Ports is what the port table needs of the API (its ctl.Port
	// frames are the runtime's: ports.go).
	Ports PortDelegate
}

// Frames are the handlers of the control frames whose protocols run above
// the runtime: the revocation, the agreement messages, a collective's
// failure. NewRank registers them beside its own (heartbeats, failure
// notices, hang reports, the Finalize fence, spares, Reinit without a
// head, connect/accept's ports); a nil one is not registered (a frame of
// its type is then reported as unhandled). Each runs on a transport
// goroutine: it must not block (ctl.Handler).
type Frames struct {
	Revoke, Agree func(from int, h transport.Header, payload []byte)
	// CollFail gets a ctl.CollFail frame decoded (a malformed one is
	// dropped with a diagnostic: collfail.go).
	CollFail func(from int, f CollFail)
}

// register registers the non-nil handlers of f in r's table.
func (f Frames) register(r *Rank) {
	var collFail func(int, transport.Header, []byte)
	if f.CollFail != nil {
		collFail = func(from int, h transport.Header, payload []byte) { r.onCollFail(from, h, payload, f.CollFail) }
	}
	t := &r.Ctl
	for _, x := range []struct {
		t ctl.Type
		h func(int, transport.Header, []byte)
	}{{ctl.Revoke, r.traceRevokes(f.Revoke)}, {ctl.Agree, f.Agree}, {ctl.CollFail, collFail}} {
		if x.h != nil {
			t.MustRegister(x.t, x.h)
		}
	}
}

// NewRank builds the runtime of one epoch around an engine and its
// transport: the engine sends on the transport, the failure drivers are
// created (a suspicion is confirmed by the launcher when there is one) and
// their heartbeat and failure-notice frames registered, and the hang
// reports', the Finalize fence's and the spares' drivers made and their
// ctl.Hang, ctl.Finalize and ctl.Spare frames registered, as are the
// ctl.Reinit frames of the headless Reinit driver, the ctl.Port frames of
// connect/accept's port table (made at its first use: portTable) and the API's
// Frames.
func NewRank(c RankConfig) *Rank {
	c.Eng.SetTransport(c.Tr)
	r := &Rank{Proc: c.Proc, Eng: c.Eng, Tr: c.Tr, Calls: new(CallTable), stop: c.Stop, wg: c.WG, universe: c.Universe}
	if c.Net != nil {
		r.client = c.Net.client
		r.Hosts.Add(c.Net.Endpoints)
	}
	env := ftdrive.Env{Eng: c.Eng, Self: c.Proc, N: c.Universe, PeerInc: c.PeerInc, Stop: c.Stop, WG: c.WG}
	if r.client != nil {
		env.Confirm = r.client.SuspectIncarnation
	}
	r.Fails = ftdrive.New(env)
	r.Ctl.MustRegister(ctl.Heartbeat, r.Fails.OnHeartbeat)
	r.Ctl.MustRegister(ctl.FailNotice, r.Fails.OnNotice)
	r.Ctl.MustRegister(ctl.FailNotices, r.Fails.OnNotices)
	r.initHang(c.Hang)
	r.Ctl.MustRegister(ctl.Hang, r.onHang)
	r.initFence(c.Fence)
	r.Ctl.MustRegister(ctl.Finalize, r.onFinalize)
	r.initSpares(c.Spares)
	r.Ctl.MustRegister(ctl.Spare, r.onSpare)
	r.reinit = c.Reinit
	r.Ctl.MustRegister(ctl.Reinit, r.onReinit)
	r.ports.d = c.Ports
	r.Ctl.MustRegister(ctl.Port, r.onPort)
	c.Frames.register(r)
	r.SubscribeLost(r.traceKnown) // the first subscriber: a failure known here before any part acts on it (trace.go)
	r.SubscribeLost(r.spareLost)  // a spare held by a repair whose survivors all failed (spares.go)
	return r
}

// SetDiag sets where the runtime's diagnostics go (nil: stderr and
// os.Exit); safe at any time.
func (r *Rank) SetDiag(d *Diag) { r.diag.Store(d) }

// Diag is where diagnostics go and how the process ends (nil: stderr and
// os.Exit; Diag's methods accept a nil *Diag).
func (r *Rank) Diag() *Diag { return r.diag.Load() }

// Start lets control frames in: from now on each is dispatched to its
// type's handler (the ones that arrived earlier first). A malformed frame
// closes its connection; a frame of an unknown type is dropped with a
// diagnostic (it comes from a peer of another version, or from something
// that is not a peer); without a head, a process declared failed is
// refused (and told); a retired epoch takes none.
func (r *Rank) Start() {
	r.Eng.SetControlCheck(ctl.Check)
	r.Eng.SetControlHandler(func(from int, h transport.Header, payload []byte) {
		if r.retired.Load() || r.Fails.Refuse(from) {
			return
		}
		if err := r.Ctl.Dispatch(from, h, payload); err != nil {
			r.Diag().Logf("rank %d: %v", r.Proc, err)
		}
	})
}

// SubscribeLost subscribes f to the engine's peer losses
// (p2p.Engine.SubscribeLost), except those that reach a retired epoch.
// The subscribers run in the order they subscribed.
func (r *Rank) SubscribeLost(f func(peer int, cause error)) {
	r.Eng.SubscribeLost(func(peer int, cause error) {
		if !r.retired.Load() {
			f(peer, cause)
		}
	})
}

// SetPeerGone installs what removes a failed process's socket directories
// when it ran on this host (without a head: Process.PeerGone), as a
// subscriber of the losses (the first call subscribes it; a later one
// replaces the function).
func (r *Rank) SetPeerGone(gone func(peer int)) {
	if r.peerGone.Swap(&gone) == nil {
		r.SubscribeLost(func(peer int, _ error) {
			if g := r.peerGone.Load(); g != nil {
				(*g)(peer)
			}
		})
	}
}

// Retire ends the epoch's exchange and keeps only its connections
// (headless Reinit): losses and control frames no longer reach its parts.
func (r *Rank) Retire() { r.retired.Store(true) }

// Retired reports whether Retire was called.
func (r *Rank) Retired() bool { return r.retired.Load() }

// Hosts is where every process runs, as the launcher told all of them
// (the endpoints exchanged at start, the spawn replies) or as Run decides:
// the same at every process, unlike the local CPU count or affinity. Its
// methods are safe for concurrent use.
type Hosts struct {
	mu    sync.Mutex
	host  []string       // by process id
	cores map[string]int // cores of each host as the launcher counted them; 0 or absent: unknown
	local int            // Run: every process on one host of this many cores (host and cores unused)
	// Force is for tests: 1 crowded, -1 not crowded, 0 from the table.
	Force atomic.Int32
}

// Add records the hosts of eps (by process id).
func (h *Hosts) Add(eps []boot.Endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cores == nil {
		h.cores = make(map[string]int)
	}
	for _, ep := range eps {
		for len(h.host) <= ep.Rank {
			h.host = append(h.host, "")
		}
		h.host[ep.Rank] = ep.Host
		if ep.Host != "" {
			h.cores[ep.Host] = max(h.cores[ep.Host], ep.Cores)
		}
	}
}

// OneHost records that every process runs on one host of the given cores
// (Run).
func (h *Hosts) OneHost(cores int) {
	h.mu.Lock()
	h.local = cores
	h.mu.Unlock()
}

// Crowded reports whether n processes, the i-th being process id proc(i),
// outnumber the cores of one of their hosts (coll.Crowded).
func (h *Hosts) Crowded(n int, proc func(int) int) bool {
	switch h.Force.Load() {
	case 1:
		return true
	case -1:
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.local > 0 {
		return n > h.local
	}
	return coll.Crowded(n, func(i int) (string, int) {
		p := proc(i)
		if p < 0 || p >= len(h.host) {
			return "", 0
		}
		return h.host[p], h.cores[h.host[p]]
	})
}

// Same reports whether the n processes, the i-th being process id
// proc(i), all run on one host (every host unknown counts as one): O(1)
// under Run, where every process shares the host (at 10,000 in-process
// ranks a loop per communicator and rank was 18% of a repair's processor
// time), else one pass under one lock.
func (h *Hosts) Same(n int, proc func(int) int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.local > 0 || n <= 1 {
		return true
	}
	name := func(p int) string {
		if p < 0 || p >= len(h.host) {
			return ""
		}
		return h.host[p]
	}
	h0 := name(proc(0))
	for i := 1; i < n; i++ {
		if name(proc(i)) != h0 {
			return false
		}
	}
	return true
}

// Name is the host process id proc runs on ("" if unknown).
func (h *Hosts) Name(proc int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if proc < 0 || proc >= len(h.host) {
		return ""
	}
	return h.host[proc]
}
