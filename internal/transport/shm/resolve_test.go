package shm

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// resolver is a SetResolve function that installs a peer's address from
// the full table into a transport's table (which holds a placeholder
// until then, so that the peer's own set-up is accepted), counting the
// calls; the peers in refuse fail instead.
type resolver struct {
	mu     sync.Mutex
	tr     *Transport
	full   []string
	table  []string
	calls  map[int]int
	refuse map[int]bool
}

func lazyTable(trs []*Transport, full []string, refuse map[int]bool) []*resolver {
	rs := make([]*resolver, len(trs))
	for i, tr := range trs {
		r := &resolver{tr: tr, full: full, table: make([]string, len(trs)), calls: map[int]int{}, refuse: refuse}
		for p := range r.table {
			r.table[p] = "(not read yet)"
		}
		r.table[i] = full[i]
		tr.SetPeers(append([]string(nil), r.table...))
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
	r.tr.SetPeers(append([]string(nil), r.table...))
	return nil
}

func (r *resolver) called() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.calls)
}

// With SetResolve, a peer's address is asked for only when this process
// must set the pair up itself: once for the peer it sends to first, never
// for a peer that set the pair up first (the answer goes on that pair). A
// resolver's error fails the frames to that peer with it, and the
// resolver is not asked again.
func TestResolveOnlyWhenDialling(t *testing.T) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder(), newRecorder()}
	trs := newJob(t, dir, 3, recs[0], recs[1], recs[2])
	defer closeAll(trs)
	rs := lazyTable(trs, addrs(dir, 3), map[int]bool{2: true})
	got := func(r *recorder, from int) int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.got[from])
	}
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "process 1 receives from 0", func() bool { return got(recs[1], 0) == 1 })
	for i := range 2 {
		if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: uint64(i + 1)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "process 0 receives from 1", func() bool { return got(recs[0], 1) == 2 })
	if c := rs[0].called(); c != "map[1:1]" {
		t.Errorf("process 0, which set the pair with 1 up, resolved %s", c)
	}
	if c := rs[1].called(); c != "map[]" {
		t.Errorf("process 1, which only answered 0, resolved %s", c)
	}
	for range 2 {
		err := trs[0].Send(2, transport.Header{Kind: 1, Seq: 9}, nil)
		if !errors.Is(err, transport.ErrPeerLost) || rs[0].called() != "map[1:1 2:1]" {
			t.Fatalf("send to a peer whose address cannot be read: %v (resolved %s)", err, rs[0].called())
		}
	}
}
