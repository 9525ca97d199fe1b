package sock

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// resolver is a SetResolve function that installs a peer's address from
// the full table into a transport's table, counting the calls; the
// peers in refuse fail instead (an address that cannot be read).
type resolver struct {
	mu     sync.Mutex
	tr     *Transport
	full   []Peer
	table  []Peer
	calls  map[int]int
	refuse map[int]bool
}

// lazyTable gives every transport of trs a table with only its own
// address, and a resolver that fills in the rest on demand.
func lazyTable(trs []*Transport, refuse map[int]bool) []*resolver {
	full := make([]Peer, len(trs))
	for i, tr := range trs {
		full[i] = tr.Self()
	}
	rs := make([]*resolver, len(trs))
	for i, tr := range trs {
		r := &resolver{tr: tr, full: full, table: make([]Peer, len(trs)), calls: map[int]int{}, refuse: refuse}
		r.table[i] = full[i]
		tr.SetPeers(append([]Peer(nil), r.table...))
		tr.SetResolve(r.resolve)
		rs[i] = r
	}
	return rs
}

func (r *resolver) resolve(to int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[to]++
	if r.refuse[to] {
		return fmt.Errorf("%w: the address of process %d cannot be read", transport.ErrPeerLost, to)
	}
	r.table[to] = r.full[to]
	r.tr.SetPeers(append([]Peer(nil), r.table...))
	return nil
}

func (r *resolver) called() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.calls)
}

// With SetResolve, a peer's address is asked for only when this process
// must dial it: once for the peer it sends to first, never for a peer
// that connected to it first (the answer goes on that connection). A
// resolver's error fails the frames to that peer with it, the handler is
// told the peer is lost, and the resolver is not asked again.
func TestResolveOnlyWhenDialling(t *testing.T) {
	for _, mode := range []Mode{ModeUnix, ModeTCP} {
		t.Run(string(mode), func(t *testing.T) {
			trs, recs := newJob(t, 3, mode)
			defer closeAll(trs)
			rs := lazyTable(trs, map[int]bool{2: true})
			h := transport.Header{Kind: 1}
			if err := trs[0].Send(1, h, nil); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "process 1 receives from 0", func() bool { return recs[1].count(0) == 1 })
			for range 2 {
				if err := trs[1].Send(0, h, nil); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, "process 0 receives from 1", func() bool { return recs[0].count(1) == 2 })
			if got := rs[0].called(); got != "map[1:1]" {
				t.Errorf("process 0, which dialled 1, resolved %s", got)
			}
			if got := rs[1].called(); got != "map[]" {
				t.Errorf("process 1, which only answered 0, resolved %s", got)
			}
			for range 2 {
				err := trs[0].Send(2, h, nil)
				if !errors.Is(err, transport.ErrPeerLost) || rs[0].called() != "map[1:1 2:1]" {
					t.Fatalf("send to a peer whose address cannot be read: %v (resolved %s)", err, rs[0].called())
				}
			}
			select {
			case p := <-recs[0].lost:
				if p != 2 {
					t.Fatalf("process %d reported lost, want 2", p)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the handler was not told that process 2 is lost")
			}
		})
	}
}
