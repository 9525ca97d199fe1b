package ftdrive

import (
	"fmt"
	"github.com/ftmpi/ftmpi/internal/ft/member"
	"sync"

	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Revocation drives the reliable broadcast (internal/ft/rbcast, over a
// binomial graph of the members, repaired around failures) of one
// communicator's revocation: Revoke starts it, OnRevoke relays ctl.Revoke
// frames and applies the revocation the first time it arrives, Lost
// repairs the graph around a failed member.
type Revocation struct {
	*Overlay
	apply func() // applies the revocation in this process

	mu sync.Mutex
	rb *rbcast.Node[uint32]
}

// NewRevocation returns the revocation driver of the communicator ov;
// known lists the members known failed already; apply revokes the
// communicator in this process.
func NewRevocation(ov *Overlay, known []int, apply func()) (*Revocation, error) {
	rb, err := rbcast.New[uint32](rbcast.Config{N: ov.procs.Len(), Self: ov.self})
	if err != nil {
		return nil, fmt.Errorf("ftdrive: revocation of context %d: %w", ov.ctx, err)
	}
	for _, p := range known {
		if i, ok := ov.procs.Index(p); ok {
			rb.Failed(member.ID{Rank: i})
		}
	}
	return &Revocation{Overlay: ov, apply: apply, rb: rb}, nil
}

// Revoke broadcasts the revocation (the caller applied it here already).
// It sends: not from a transport callback.
func (r *Revocation) Revoke() {
	r.mu.Lock()
	msgs, _ := r.rb.Broadcast(r.ctx)
	r.mu.Unlock()
	r.send(msgs)
}

func (r *Revocation) send(msgs []rbcast.Msg[uint32]) {
	for _, m := range msgs {
		h := transport.Header{Tag: int32(ctl.Revoke), Ctx: m.Item, A: uint64(m.Hops)}
		// A failed send means the neighbour is gone; the broadcast's other
		// paths (and its ring repair on the failure notice) cover it.
		_ = r.eng.SendControl(r.procs.At(m.To), h, nil)
	}
}

// OnRevoke handles a ctl.Revoke frame for this communicator from process
// from (a transport callback): the first delivery applies the revocation,
// and the frames to relay are posted (control frames never block).
func (r *Revocation) OnRevoke(from int, h transport.Header) {
	fi, ok := r.procs.Index(from)
	if !ok {
		return
	}
	r.mu.Lock()
	out, delivered := r.rb.Step(rbcast.Msg[uint32]{From: fi, To: r.self, Item: r.ctx, Hops: int(h.A)})
	r.mu.Unlock()
	if len(delivered) > 0 {
		r.apply()
	}
	if len(out) > 0 {
		r.send(out)
	}
}

// Lost repairs the broadcast around the failure of process peer (the
// engine's lost hook: a transport callback).
func (r *Revocation) Lost(peer int) { r.LostAll([]int{peer}) }

// LostAll is Lost for several processes whose failures became known at
// once (p2p.Engine.FailPeers): one lock, one send of what the repairs
// produce.
func (r *Revocation) LostAll(peers []int) {
	var msgs []rbcast.Msg[uint32]
	locked := false
	for _, p := range peers {
		i, ok := r.procs.Index(p)
		if !ok {
			continue
		}
		if !locked {
			r.mu.Lock()
			locked = true
		}
		msgs = append(msgs, r.rb.Failed(member.ID{Rank: i})...)
	}
	if locked {
		r.mu.Unlock()
	}
	if len(msgs) > 0 {
		r.send(msgs)
	}
}
