// Package reinitdrive drives MPI_Reinit without a head (srun or mpiexec
// with FTMPI_REINIT=1 and FTMPI_SPARES=K): the ranks decide the next
// epoch themselves (internal/ft/reincarnate: a waiting spare per failed
// rank) and exchange their endpoints of it over the ending epoch's
// connections. This package owns the ctl.Reinit frames (the decision to
// the spares, the end of the job to them, the endpoints), the process's
// reincarnate.State across its epochs, and the waits of the exchange.
//
// It must not know about communicators or the MPI API: the failure
// round's agreement is the caller's (it passes the agreed failed
// processes to Decide), and so are opening the next epoch and the
// process's exit; nor print or exit: a malformed or unexpected frame is
// returned as an error that names it. It holds no process-global state:
// one Driver belongs to one process (shared by its epochs' Worlds).
package reinitdrive

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/reincarnate"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Kinds of ctl.Reinit frames (Header.B); Header.A is the next epoch.
const (
	KindDecide   = 1 // to a spare: the next State (reincarnate.State.Encode)
	KindEndpoint = 2 // to a member of the next epoch: the sender's endpoint there (JSON)
	KindEnd      = 3 // to a waiting spare: no epoch follows, the payload says why
)

// maxEpoch bounds the epoch a frame may name (a defective frame must not
// make the driver keep state for an absurd epoch).
const maxEpoch = 1 << 30

// Net is what the driver needs of an epoch's engine (p2p.Engine).
type Net interface {
	// SendControl posts a control frame to process to (never blocks).
	SendControl(to int, h transport.Header, payload []byte) error
	// IsLost reports whether process p is known failed.
	IsLost(p int) bool
	// FailureSignal returns a channel closed at the next failure.
	FailureSignal() <-chan struct{}
}

// ErrDeclaredFailed is Decide's error when the others count this
// process failed (they suspected it during the round): fail-stop, it
// must not go on.
var ErrDeclaredFailed = errors.New("declared failed by the others in the Reinit failure round")

// Decision is what a waiting spare is told: the next epoch's State, or
// why no epoch follows.
type Decision struct {
	Next  *reincarnate.State
	Ended string
}

// Driver is one process's headless Reinit state across its epochs.
type Driver struct {
	self int

	mu    sync.Mutex
	state reincarnate.State
	eps   map[int]map[int]boot.Endpoint // by epoch, by process id: the endpoints received for that epoch
	wake  chan struct{}                 // signalled (capacity 1) when an endpoint arrives
}

// New returns the driver of process self, whose start is the State st.
func New(self int, st reincarnate.State) *Driver {
	return &Driver{self: self, state: st, wake: make(chan struct{}, 1)}
}

// Initial is the State of a start of size processes whose first world
// ranks are the ranks and the rest spares.
func Initial(ranks, size int) reincarnate.State {
	var pool []int
	for i := ranks; i < size; i++ {
		pool = append(pool, i)
	}
	return reincarnate.Initial(ranks, pool)
}

// State returns (a copy of) the process's State.
func (d *Driver) State() reincarnate.State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state.Clone()
}

// SetState makes st the process's State (it joined st's epoch).
func (d *Driver) SetState(st reincarnate.State) {
	d.mu.Lock()
	d.state = st.Clone()
	d.mu.Unlock()
}

// HasEndpoint reports whether process p's endpoint of epoch arrived.
func (d *Driver) HasEndpoint(epoch, p int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.eps[epoch][p]
	return ok
}

// Forget drops the endpoints received for epoch (it is open).
func (d *Driver) Forget(epoch int) {
	d.mu.Lock()
	delete(d.eps, epoch)
	d.mu.Unlock()
}

// Handle takes a ctl.Reinit frame from process from (on a transport
// goroutine: it records and signals, never blocks nor sends). spare says
// whether this process waits as a spare: a decision is for spares only
// (a rank decides itself), and is returned for the caller to hand to the
// spare's wait; a decision older than this process's State is no news
// (another survivor's copy). A malformed frame, or one of an unknown
// kind, is dropped with an error that names it.
func (d *Driver) Handle(from int, h transport.Header, payload []byte, spare bool) (*Decision, error) {
	switch h.B {
	case KindEndpoint:
		var ep boot.Endpoint
		if err := json.Unmarshal(payload, &ep); err != nil {
			return nil, fmt.Errorf("process %d: malformed endpoint from process %d dropped: %v", d.self, from, err)
		}
		if h.A > maxEpoch {
			return nil, fmt.Errorf("process %d: endpoint from process %d for epoch %d dropped: out of range", d.self, from, h.A)
		}
		ep.Rank = from
		e := int(h.A)
		d.mu.Lock()
		if d.eps == nil {
			d.eps = make(map[int]map[int]boot.Endpoint)
		}
		if d.eps[e] == nil {
			d.eps[e] = make(map[int]boot.Endpoint)
		}
		d.eps[e][from] = ep
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
		return nil, nil
	case KindEnd:
		if !spare {
			return nil, nil
		}
		return &Decision{Ended: string(payload)}, nil
	case KindDecide:
		if !spare {
			return nil, nil // a rank decides itself
		}
		st, err := reincarnate.DecodeState(payload)
		if err != nil {
			return nil, fmt.Errorf("process %d: malformed Reinit decision from process %d dropped: %v", d.self, from, err)
		}
		d.mu.Lock()
		stale := st.Epoch <= d.state.Epoch
		d.mu.Unlock()
		if stale {
			return nil, nil // another survivor's copy of a decision taken already
		}
		return &Decision{Next: &st}, nil
	}
	return nil, fmt.Errorf("process %d: Reinit frame of unknown kind %d from process %d dropped", d.self, h.B, from)
}

// Decide turns the failure round's agreed failed processes into the next
// epoch (reincarnate.Decide over this process's State: the same Plan at
// every survivor) and tells the spares over net, the ending epoch's
// engine: the next State to the taken spares and to those still waiting,
// or, when there is no spare for every failed rank, why the job cannot
// continue to every live waiting spare (and the error, ErrNoSpare, is
// returned). ErrDeclaredFailed: failed names this process.
func (d *Driver) Decide(net Net, failed []int) (reincarnate.State, error) {
	st := d.State()
	if slices.Contains(failed, d.self) {
		return reincarnate.State{}, ErrDeclaredFailed
	}
	plan, err := reincarnate.Decide(st, failed)
	if err != nil {
		for _, s := range st.Pool {
			if !slices.Contains(failed, s) {
				_ = net.SendControl(s, transport.Header{Tag: int32(ctl.Reinit), B: KindEnd, A: uint64(st.Epoch + 1)}, []byte(err.Error()))
			}
		}
		return reincarnate.State{}, err
	}
	enc := plan.Next.Encode(nil)
	h := transport.Header{Tag: int32(ctl.Reinit), B: KindDecide, A: uint64(plan.Next.Epoch)}
	for _, t := range plan.Takes {
		_ = net.SendControl(t.Proc, h, enc)
	}
	for _, s := range plan.Next.Pool {
		_ = net.SendControl(s, h, enc)
	}
	return plan.Next, nil
}

// Exchange sends this process's endpoint of the next epoch (self) to
// every other member of next over net, the ending epoch's engine, and
// collects theirs, for the n process ids of the job
// (reincarnate.Rejoined says when it is over and who the epoch starts
// without: the members known failed, and after timeout those whose
// endpoint has not come). The endpoints are indexed by process id (the
// zero Endpoint, with its Rank, for the ones left out).
func (d *Driver) Exchange(net Net, n int, next reincarnate.State, epoch int, self boot.Endpoint, timeout time.Duration) ([]boot.Endpoint, []int, error) {
	if epoch != next.Epoch {
		return nil, nil, fmt.Errorf("internal error: exchange for epoch %d, decided %d", epoch, next.Epoch)
	}
	b, err := json.Marshal(self)
	if err != nil {
		return nil, nil, fmt.Errorf("encode endpoint: %w", err)
	}
	for _, q := range next.Members() {
		if q != d.self {
			_ = net.SendControl(q, transport.Header{Tag: int32(ctl.Reinit), B: KindEndpoint, A: uint64(epoch)}, b)
		}
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	timedOut := false
	for {
		sig := net.FailureSignal()
		d.mu.Lock()
		got := d.eps[epoch]
		have := func(p int) bool { _, ok := got[p]; return ok }
		done, dead := reincarnate.Rejoined(next, n, d.self, have, net.IsLost, timedOut)
		var eps []boot.Endpoint
		if done {
			eps = make([]boot.Endpoint, n)
			for p := range eps {
				eps[p] = got[p] // the zero Endpoint for the dead
				eps[p].Rank = p
			}
			eps[d.self] = self
		}
		d.mu.Unlock()
		if done {
			return eps, dead, nil
		}
		select {
		case <-d.wake:
		case <-sig:
		case <-deadline.C:
			timedOut = true
		}
	}
}
