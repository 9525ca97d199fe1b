package policy

import (
	"maps"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

// A lazy start (issue 24 item 2): a rank that reads its peers' endpoints
// on demand enters the start-up fence (and a Reinit epoch's rejoin) with
// its facts (ctlwire.FenceLayout: host, cores, incarnation) and is answered
// with the layout (ctlwire.Layout: every process's host and incarnation,
// in a size that grows with the hosts, not the processes) and the
// endpoints of O(log n) peers it is sure to dial first (near) instead of
// every endpoint; it then asks for a peer's endpoint when it first dials
// it (ctlwire.OpEndpoints), answered from the same table. A process that
// is gone, or published nothing, is answered as failed: the asker's dial
// fails as the loss of that peer, at once. The fence's other waiters
// (FTMPI_ENDPOINTS=all) still get every endpoint.

// noteFacts records that the rank on c (process id r) reads endpoints on
// demand and its facts, in facts (the start-up fence's or the epoch's).
func (m *Machine) noteFacts(c Conn, facts map[int]Facts, r int, f Facts) {
	if !f.Lazy {
		return
	}
	m.lazy[c] = true
	facts[r] = f
}

// near is the process ids whose endpoints a lazy fence's answer to
// process r carries with the layout, O(log n) of them: the peers the
// world's first collectives and the failure detector reach first (its
// ring neighbours among the all processes of the start set, and among the
// world's ranks r ± 2^k and r xor 2^k: dissemination, binomial trees,
// recursive doubling). Without them every rank's first Barrier waited
// for a lookup at the head, all ranks at once (a second at n = 500, four
// at 1,000 on 2 cores). Nil for a process outside the start set.
func near(r, world, all int) []int {
	if r < 0 || r >= all {
		return nil
	}
	seen := map[int]bool{r: true}
	var out []int
	add := func(q int) {
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	add((r + 1) % all)
	add((r - 1 + all) % all)
	if r < world {
		for k := 1; k < world; k <<= 1 {
			add((r + k) % world)
			add((r - k + world) % world)
			if x := r ^ k; x < world {
				add(x)
			}
		}
	}
	return out
}

// nearKV is the lazy answer kv (the layout) with the endpoints of the
// processes near the rank on conn (near) that table holds under key and
// that are not gone.
func (m *Machine) nearKV(layout map[string]string, conn Conn, table map[string]string, key func(int) string) map[string]string {
	r, ok := m.conns[conn]
	if !ok {
		return layout
	}
	kv := maps.Clone(layout)
	for _, q := range near(r, m.cfg.Size-m.cfg.Spares, m.cfg.Size) {
		if q < len(m.procs) && !m.procs[q].gone {
			if v, ok := table[key(q)]; ok {
				kv[key(q)] = v
			}
		}
	}
	return kv
}

// layoutKV is a lazy fence's reply: the layout of every process id, from
// facts (a process without facts published nothing).
func (m *Machine) layoutKV(facts map[int]Facts) map[string]string {
	n := len(m.procs)
	l := ctlwire.Layout{Host: make([]int, n), Inc: make([]int, n)}
	index := make(map[string]int)
	for p := range n {
		f, ok := facts[p]
		if !ok {
			l.Host[p] = -1
			continue
		}
		h, ok := index[f.Host]
		if !ok {
			h = len(l.Hosts)
			index[f.Host] = h
			l.Hosts = append(l.Hosts, ctlwire.LayoutHost{Name: f.Host, Cores: f.Cores})
		}
		l.Hosts[h].Cores = max(l.Hosts[h].Cores, f.Cores)
		l.Host[p], l.Inc[p] = h, f.Inc
	}
	return map[string]string{ctlwire.LayoutKey: ctlwire.FormatLayout(l)}
}

// endpoints answers a lookup: the endpoints of e.Procs published for
// e.Epoch (the start-up fence's for epoch 0), each process that is gone
// or published nothing in Failed; a request for another epoch than the
// current one is answered with the current epoch alone (superseded).
func (m *Machine) endpoints(e Endpoints) {
	if len(e.Procs) == 0 || len(e.Procs) > ctlwire.MaxLookup {
		m.replyErr(e.Conn, e.ID, "endpoints: %d process ids, want 1 to %d", len(e.Procs), ctlwire.MaxLookup)
		return
	}
	for _, p := range e.Procs {
		if p < 0 || p >= len(m.procs) {
			m.replyErr(e.Conn, e.ID, "endpoints: process %d is not one of the job's %d", p, len(m.procs))
			return
		}
	}
	if e.Epoch != m.epoch {
		m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpEndpoints, ID: e.ID, Epoch: m.epoch})
		return
	}
	kv := make(map[string]string, len(e.Procs))
	var failed []int
	for _, p := range e.Procs {
		key := ctlwire.EndpointKey(p)
		table := m.kv
		if e.Epoch > 0 {
			key, table = ctlwire.EpochEndpointKey(e.Epoch, p), m.epochKV
		}
		v, ok := table[key]
		if !ok || m.procs[p].gone {
			failed = append(failed, p)
			continue
		}
		kv[key] = v
	}
	m.reply(e.Conn, ctlwire.Msg{Op: ctlwire.OpEndpoints, ID: e.ID, Epoch: m.epoch, KV: kv, Failed: failed})
}
