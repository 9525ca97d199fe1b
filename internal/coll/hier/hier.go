// Package hier composes hierarchical collectives for a communicator whose
// members span several hosts (issue 28 item 3): one step among the members
// of each host, one step among one representative per host (the network
// step), and one fan-out step within each host. It knows nothing of
// transports, communicators or errors: the caller (internal/coll,
// hierpath.go) gives it the members' host layout and a way to run a
// collective over any subset of the members (Member.Sub), and returns the
// steps' errors as they are. It must not import internal/coll (which
// imports it) or package mpi.
//
// Every decision here (the layout, the representatives, the steps) is a
// function of the layout and the call's arguments alone, which every
// member holds alike, so the members run matching steps. It must not read
// anything local to one process (CPU count, timing), start goroutines or
// keep state between calls.
//
// Failures are the subsets' business: the caller's subsets must end every
// wait of a step when any member of the whole communicator fails, not only
// a member of the subset (a member waiting in its host's fan-out for a
// leader that waits for another host's leader, whose host lost a member,
// would otherwise wait for ever).
package hier

// Layout is where the N members of a communicator run.
type Layout struct {
	N     int
	Host  []int   // host index of each member; hosts are numbered in order of their lowest member
	Index []int   // each member's index within its host's members
	Hosts [][]int // members of each host, ascending; Hosts[h][0] is the host's leader
}

// NewLayout groups n members by host name (host(i) of member i). Members
// with equal names share a host.
func NewLayout(n int, host func(i int) string) *Layout {
	l := &Layout{N: n, Host: make([]int, n), Index: make([]int, n)}
	idx := make(map[string]int)
	for i := range n {
		h, ok := idx[host(i)]
		if !ok {
			h = len(l.Hosts)
			idx[host(i)] = h
			l.Hosts = append(l.Hosts, nil)
		}
		l.Host[i], l.Index[i] = h, len(l.Hosts[h])
		l.Hosts[h] = append(l.Hosts[h], i)
	}
	return l
}

// Spans reports whether the layout has more than one host and more than
// one member on some host: the only layouts where a hierarchy has steps
// of both kinds.
func (l *Layout) Spans() bool { return len(l.Hosts) > 1 && len(l.Hosts) < l.N }

// Group is a collective over a subset of the members, addressed by their
// index in the subset (the order Member.Sub was given). Reductions use the
// call's operation, which the caller binds; it must be commutative and
// associative (hosts combine their members' contributions first).
type Group interface {
	Barrier() error
	Bcast(buf []byte, root int) error
	Reduce(send, recv []byte, root int) error // recv: at root only; send may alias recv there
	Allreduce(send, recv []byte) error        // send may alias recv
	Gather(send, recv []byte, root int) error // recv: at root only
	Allgatherv(send, recv []byte, counts, displs []int) error
}

// Member is one member's view of a hierarchical call: the layout, its own
// index, and Sub, which returns the Group over the given members (indices
// into the layout, in the order they get in the subset). Sub is called
// only with subsets of two or more members that contain Me, and every
// member of a subset calls it with the same list.
type Member struct {
	L   *Layout
	Me  int
	Sub func(members []int) Group
}

func (m *Member) host() []int { return m.L.Hosts[m.L.Host[m.Me]] }

// local is the Group of m's host, nil if m is alone there.
func (m *Member) local() Group {
	if h := m.host(); len(h) > 1 {
		return m.Sub(h)
	}
	return nil
}

// reps are the representatives of the hosts in host order: each host's
// leader, but root for root's host (root < 0: no root).
func (m *Member) reps(root int) []int {
	r := make([]int, len(m.L.Hosts))
	for h, ms := range m.L.Hosts {
		r[h] = ms[0]
	}
	if root >= 0 {
		r[m.L.Host[root]] = root
	}
	return r
}

// network is the Group of the representatives reps, nil if m is not one
// of them.
func (m *Member) network(reps []int) Group {
	if reps[m.L.Host[m.Me]] != m.Me {
		return nil
	}
	return m.Sub(reps)
}

// Barrier: each host's members report to its leader (a one-byte gather),
// the leaders run a barrier, each leader releases its members (a one-byte
// broadcast).
func (m *Member) Barrier() error {
	local := m.local()
	var tok [1]byte
	if local != nil {
		var all []byte
		if m.L.Index[m.Me] == 0 {
			all = make([]byte, len(m.host()))
		}
		if err := local.Gather(tok[:], all, 0); err != nil {
			return err
		}
	}
	if net := m.network(m.reps(-1)); net != nil {
		if err := net.Barrier(); err != nil {
			return err
		}
	}
	if local != nil {
		return local.Bcast(tok[:], 0)
	}
	return nil
}

// Bcast: the root sends to the other hosts' leaders (the network step)
// and then to its own host's members; every other leader then sends to
// its host's members.
func (m *Member) Bcast(buf []byte, root int) error {
	if len(buf) == 0 {
		return nil
	}
	rh := m.L.Host[root]
	local := m.local()
	if m.L.Host[m.Me] == rh && m.Me != root {
		return local.Bcast(buf, m.L.Index[root])
	}
	if net := m.network(m.reps(root)); net != nil {
		if err := net.Bcast(buf, rh); err != nil {
			return err
		}
	}
	if local == nil {
		return nil
	}
	if m.Me == root {
		return local.Bcast(buf, m.L.Index[root])
	}
	return local.Bcast(buf, 0)
}

// Reduce: each host reduces to its representative (the root on the
// root's host, the leader elsewhere), then the representatives reduce to
// the root. recv (len(send) bytes or more) is used at the root only and
// may alias send there.
func (m *Member) Reduce(send, recv []byte, root int) error {
	n := len(send)
	if n == 0 {
		return nil
	}
	reps := m.reps(root)
	rep := reps[m.L.Host[m.Me]]
	part := send
	if local := m.local(); local != nil {
		var w []byte
		if m.Me == root {
			w = recv[:n]
		} else if m.Me == rep {
			w = make([]byte, n)
		}
		if err := local.Reduce(send, w, m.L.Index[rep]); err != nil {
			return err
		}
		if w != nil {
			part = w
		}
	}
	net := m.network(reps)
	if net == nil {
		return nil
	}
	var out []byte
	if m.Me == root {
		out = recv[:n]
	}
	return net.Reduce(part, out, m.L.Host[root])
}

// Allreduce: each host reduces into its leader's recv, the leaders
// all-reduce in place, each leader broadcasts to its host. send may alias
// recv.
func (m *Member) Allreduce(send, recv []byte) error {
	n := len(send)
	if n == 0 {
		return nil
	}
	recv = recv[:n]
	local := m.local()
	part := send
	if local != nil {
		if err := local.Reduce(send, recv, 0); err != nil {
			return err
		}
		part = recv
	}
	if net := m.network(m.reps(-1)); net != nil {
		if err := net.Allreduce(part, recv); err != nil {
			return err
		}
	}
	if local != nil {
		return local.Bcast(recv, 0)
	}
	return nil
}

// Allgather collects len(send) bytes of every member into recv, member
// i's block at i*len(send): each host gathers at its leader, the leaders
// exchange their hosts' blocks, each leader broadcasts the whole to its
// host. send may be this member's block of recv.
func (m *Member) Allgather(send, recv []byte) error {
	b := len(send)
	if b == 0 {
		return nil
	}
	recv = recv[:b*m.L.N]
	hosts := m.L.Hosts
	// Host order: host h's blocks at off[h], its members' in their order.
	off := make([]int, len(hosts)+1)
	counts := make([]int, len(hosts))
	for h, ms := range hosts {
		counts[h] = b * len(ms)
		off[h+1] = off[h] + counts[h]
	}
	contig := true // host order is rank order
	for i := range m.L.N {
		if off[m.L.Host[i]]+b*m.L.Index[i] != b*i {
			contig = false
			break
		}
	}
	me, mh := m.Me, m.L.Host[m.Me]
	buf := recv
	if !contig && m.L.Index[me] == 0 {
		buf = make([]byte, len(recv))
	}
	local := m.local()
	if local != nil {
		var w []byte
		if m.L.Index[me] == 0 {
			w = buf[off[mh]:off[mh+1]]
		}
		if err := local.Gather(send, w, 0); err != nil {
			return err
		}
	} else {
		copy(buf[off[mh]:off[mh]+b], send)
	}
	if net := m.network(m.reps(-1)); net != nil {
		if err := net.Allgatherv(buf[off[mh]:off[mh+1]], buf, counts, off[:len(hosts)]); err != nil {
			return err
		}
		if !contig {
			for i := range m.L.N {
				o := off[m.L.Host[i]] + b*m.L.Index[i]
				copy(recv[b*i:b*(i+1)], buf[o:o+b])
			}
		}
	}
	if local != nil {
		return local.Bcast(recv, 0)
	}
	return nil
}
