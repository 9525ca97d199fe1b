package boot

// A job's endpoint table read on demand (issue 24 item 2): under PMI a
// peer's endpoint is one KVS get, made the first time the peer is asked
// for; from ftmpirun's fence the table is kept as the launcher sent it
// (each entry in its wire form) and an entry is decoded the first time it
// is asked for. A process that talks to d peers of n then pays d gets or
// decodes, not n. Each entry is fetched at most once (concurrent askers of
// one entry wait for the one fetch); a failed fetch is remembered and
// returned again, not retried (the KVS and the launcher's table do not
// change after the fence).

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// PeerTable is the endpoints of a job's processes, by process id, each
// fetched when it is first asked for (Get). Safe for concurrent use. It
// has no MPI counterpart.
type PeerTable struct {
	fetch   func(p int) (Endpoint, error) // the one fetch of entry p
	entries []peerEntry
	fetches atomic.Int64
}

type peerEntry struct {
	once sync.Once
	ep   Endpoint
	err  error
}

// newPeerTable is a table of n entries filled by fetch.
func newPeerTable(n int, fetch func(p int) (Endpoint, error)) *PeerTable {
	return &PeerTable{fetch: fetch, entries: make([]peerEntry, n)}
}

// Len is the number of process ids in the table. It has no MPI
// counterpart.
func (t *PeerTable) Len() int { return len(t.entries) }

// Get returns process p's endpoint, fetching it (a PMI get, a decode of
// the launcher's entry) if nobody asked for it before; the error of a
// failed fetch is returned to every asker. It has no MPI counterpart.
func (t *PeerTable) Get(p int) (Endpoint, error) {
	if p < 0 || p >= len(t.entries) {
		return Endpoint{}, fmt.Errorf("boot: process %d is not in the job's %d", p, len(t.entries))
	}
	e := &t.entries[p]
	e.once.Do(func() {
		t.fetches.Add(1)
		e.ep, e.err = t.fetch(p)
		if e.err == nil {
			e.ep.Rank = p
		}
	})
	return e.ep, e.err
}

// All fetches every entry (what a process that needs the whole table at
// once pays: n fetches) and returns them by process id, or the first
// error. It has no MPI counterpart.
func (t *PeerTable) All() ([]Endpoint, error) {
	eps := make([]Endpoint, len(t.entries))
	for p := range eps {
		ep, err := t.Get(p)
		if err != nil {
			return nil, err
		}
		eps[p] = ep
	}
	return eps, nil
}

// Fetches is how many entries were fetched so far (for tests and
// measurements). It has no MPI counterpart.
func (t *PeerTable) Fetches() int { return int(t.fetches.Load()) }
