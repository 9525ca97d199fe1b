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
	fetch func(p int) (Endpoint, error) // the one fetch of entry p
	// many fetches several entries at once (ftmpirun's launcher answers
	// up to ctlwire.MaxLookup processes a request); nil: one fetch an
	// entry (PMI: one get a key).
	many    func(ps []int) ([]Endpoint, []error)
	entries []peerEntry
	fetches atomic.Int64
}

type peerEntry struct {
	once sync.Once
	done atomic.Bool // fetched (ep and err set)
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
		ep, err := t.fetch(p)
		t.fill(p, ep, err)
	})
	return e.ep, e.err
}

// fill sets entry p to what its fetch returned (under the entry's once).
func (t *PeerTable) fill(p int, ep Endpoint, err error) {
	e := &t.entries[p]
	t.fetches.Add(1)
	e.ep, e.err = ep, err
	if err == nil {
		e.ep.Rank = p
	}
	e.done.Store(true)
}

// Prefetch fetches the entries of ps that nobody asked for yet, all in
// one request where the table can (ftmpirun's launcher: one lookup of up
// to 4,096 processes; under PMI one get a process, as Get): a process that
// knows the peers it is about to need (a group whose endpoints it sends)
// asks once, not once a peer. Errors are kept for Get, as a fetch's. It
// has no MPI counterpart.
func (t *PeerTable) Prefetch(ps []int) {
	var want []int
	seen := make(map[int]bool, len(ps))
	for _, p := range ps {
		if p >= 0 && p < len(t.entries) && !t.entries[p].done.Load() && !seen[p] {
			seen[p] = true
			want = append(want, p)
		}
	}
	if t.many == nil || len(want) < 2 {
		for _, p := range want {
			t.Get(p)
		}
		return
	}
	eps, errs := t.many(want)
	for i, p := range want {
		t.entries[p].once.Do(func() { t.fill(p, eps[i], errs[i]) })
	}
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
