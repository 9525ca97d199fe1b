package mpi

import (
	"fmt"
	"hash/fnv"
	"slices"
)

// Process topologies (MPI-4.1 chapter 8): Cartesian grids, graphs and
// distributed graphs attached to a communicator, their queries, and the
// neighbourhood collectives (topo_coll.go).
//
// A topology is created by a collective call on an intracommunicator that
// returns a new communicator carrying it (commState.topo, immutable, kept
// by Dup). Creation is built on the communicator creation of
// commmgmt.go: an exchange of the arguments on the parent (every member
// learns whether every other one accepted its arguments, and that the
// arguments that must be identical are), then the context-id agreement,
// both wrapped in the fault-tolerance model's create hook. So a topology
// creation fails where a Dup or Create would: under ULFM with
// ErrProcFailed when a member is known failed, under run-through with
// ErrRankFailStop on a collectively inactive communicator and
// all-or-nothing (seed 003 17.9), with recognised failed members
// recognised in the new communicator.
//
// reorder is accepted and never used: ranks keep their order (MPI allows
// an implementation to ignore it).

// Topology kinds, as MPI_Topo_test returns them.
const (
	Cart      = 1 // MPI_CART: a Cartesian topology
	Graph     = 2 // MPI_GRAPH: a graph topology
	DistGraph = 3 // MPI_DIST_GRAPH: a distributed graph topology
)

// topology is the topology attached to a communicator. It is never changed
// after creation.
type topology struct {
	kind int

	// Cartesian: dims, periods and this process's coordinates.
	dims    []int
	periods []bool
	coords  []int

	// Graph: the whole graph, as passed to GraphCreate.
	index, edges []int

	// Distributed graph: this process's neighbours and weights (nil:
	// unweighted).
	sources, dests []int
	sw, dw         []int
	weighted       bool

	// The neighbour lists of the neighbourhood collectives at this
	// process (neighbors), computed once at creation (finish).
	nin, nout, norder []int
}

// finish computes t's neighbour lists for the process of rank rank and
// returns t.
func (t *topology) finish(rank int) *topology {
	t.nin, t.nout, t.norder = t.neighbors(rank)
	return t
}

// topoOf returns c's topology or an ErrTopology error (kind 0: any kind).
func (c *Comm) topoOf(op string, kind int) (*topology, error) {
	if err := checkLive(c, op); err != nil {
		return nil, err
	}
	t := c.topo
	if t == nil || (kind != 0 && t.kind != kind) {
		want := map[int]string{0: "a process topology", Cart: "a Cartesian topology", Graph: "a graph topology", DistGraph: "a distributed graph topology"}[kind]
		return nil, c.handle(newErr(ErrTopology, op, c, NoPeer, "the communicator has no %s", want))
	}
	return t, nil
}

// Topo returns the kind of c's topology: Cart, Graph, DistGraph, or
// Undefined for none (MPI_Topo_test).
func (c *Comm) Topo() int {
	if c == nil || c.topo == nil {
		return Undefined
	}
	return c.topo.kind
}

// DimsCreate returns a balanced distribution of nnodes processes over
// len(dims) dimensions (MPI_Dims_create): the positive entries of dims are
// kept, the zero ones are filled so that the product is nnodes and the
// filled dimensions are as close to each other as possible, in
// non-increasing order. dims is not modified. It is an ErrDims error if an
// entry is negative or nnodes is not a multiple of the product of the
// positive entries, ErrArg if nnodes < 1.
func DimsCreate(nnodes int, dims []int) ([]int, error) {
	const op = "MPI_Dims_create"
	if nnodes < 1 {
		return nil, newErr(ErrArg, op, nil, NoPeer, "nnodes %d is not positive", nnodes)
	}
	out := slices.Clone(dims)
	fixed, free := 1, 0
	for i, d := range dims {
		switch {
		case d < 0:
			return nil, newErr(ErrDims, op, nil, NoPeer, "dims[%d] is %d (negative)", i, d)
		case d == 0:
			free++
		default:
			fixed *= d
		}
	}
	if nnodes%fixed != 0 {
		return nil, newErr(ErrDims, op, nil, NoPeer, "%d processes cannot fill dimensions whose fixed sizes multiply to %d", nnodes, fixed)
	}
	rest := nnodes / fixed
	if free == 0 {
		if rest != 1 {
			return nil, newErr(ErrDims, op, nil, NoPeer, "fixed dimensions multiply to %d, not %d", fixed, nnodes)
		}
		return out, nil
	}
	f := balanced(rest, free)
	k := 0
	for i := range out {
		if out[i] == 0 {
			out[i] = f[k]
			k++
		}
	}
	return out, nil
}

// balanced splits n into k factors, non-increasing, whose largest and
// smallest differ least (ties: evener): an exact branch-and-bound search over the divisors
// of n (a greedy split of the prime factors is not always best: 72 = 12x6,
// not 9x8), bounded by the greedy split and by the fact that m factors of
// a product r have a smallest factor of at most the m-th root of r.
func balanced(n, k int) []int {
	var divs []int
	for d := 1; d*d <= n; d++ {
		if n%d == 0 {
			divs = append(divs, d)
			if d*d != n {
				divs = append(divs, n/d)
			}
		}
	}
	slices.Sort(divs)
	best := greedySplit(n, k)
	bestSpread := best[0] - best[k-1]
	cur := make([]int, k)
	var search func(i, rest, hi int)
	search = func(i, rest, hi int) {
		m := k - i // factors left, of product rest, each at most hi
		if i > 0 && cur[0]-iroot(rest, m) > bestSpread {
			return // cannot beat the best (nor tie it)
		}
		if m == 1 {
			if rest <= hi {
				cur[i] = rest
				if sp := cur[0] - rest; sp < bestSpread || (sp == bestSpread && evener(cur, best)) {
					bestSpread = sp
					copy(best, cur)
				}
			}
			return
		}
		lo := iroot(rest, m) // the largest remaining factor is at least this
		if pow(lo, m) < rest {
			lo++
		}
		if i == 0 { // the largest factor, from the most balanced up
			for _, d := range divs {
				if d < lo {
					continue
				}
				cur[0] = d
				search(1, rest/d, d)
			}
			return
		}
		for j := len(divs) - 1; j >= 0 && divs[j] >= lo; j-- {
			if d := divs[j]; d <= hi && rest%d == 0 {
				cur[i] = d
				search(i+1, rest/d, d)
			}
		}
	}
	search(0, n, n)
	return best
}

// evener breaks a tie of spreads between two non-increasing splits: the
// one whose smallest factor is larger (then the next smallest, ...) wins,
// as MPICH's Dims_create does (its topo/dims5 table of 75,000 cases).
func evener(a, b []int) bool {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}

// greedySplit gives the prime factors of n, largest first, each to the
// currently smallest of k factors; sorted non-increasing.
func greedySplit(n, k int) []int {
	f := make([]int, k)
	for i := range f {
		f[i] = 1
	}
	var primes []int
	for m, p := n, 2; m > 1; {
		if p*p > m {
			primes = append(primes, m)
			break
		}
		if m%p == 0 {
			primes = append(primes, p)
			m /= p
		} else {
			p++
		}
	}
	for i := len(primes) - 1; i >= 0; i-- {
		j := 0
		for x := range f {
			if f[x] < f[j] {
				j = x
			}
		}
		f[j] *= primes[i]
	}
	slices.SortFunc(f, func(a, b int) int { return b - a })
	return f
}

// iroot is the largest r with r**m <= n (n >= 1, m >= 1).
func iroot(n, m int) int {
	if m == 1 {
		return n
	}
	lo, hi := 1, 1
	for pow(hi, m) <= n {
		hi *= 2
	}
	for lo+1 < hi { // pow(lo) <= n < pow(hi)
		mid := (lo + hi) / 2
		if pow(mid, m) <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// pow is b**e, saturated above 1<<62.
func pow(b, e int) int {
	r := 1
	for range e {
		if r > (1<<62)/b {
			return 1 << 62
		}
		r *= b
	}
	return r
}

// topoArgs is the check of a topology creation's arguments shared by every
// member (see agreeArgs): this process's verdict and a digest of the
// arguments that must be identical everywhere (0: none).
type topoArgs struct {
	err    *Error
	digest uint64
}

func digestInts(parts ...[]int) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		fmt.Fprint(h, len(p), p, ";")
	}
	return h.Sum64()>>2 | 1<<61 // never 0 (0 is a recognised failed member's slot)
}

// agreeArgs exchanges the verdicts and digests of a topology creation
// among c's members (raw errors): if some member rejected its arguments,
// every member returns an error of that class (its own reason, or naming
// the member);
// differing digests are an ErrArg error everywhere. Recognised failed
// members (run-through: slots left 0) contribute nothing.
func agreeArgs(c *Comm, op string, a topoArgs) error {
	verdict := int64(1) // accepted; 2+code: rejected with that class
	if a.err != nil {
		verdict = 2 + int64(a.err.Class.code)
	}
	all, err := allgatherInts(c, op, verdict, int64(a.digest))
	if err != nil {
		return err
	}
	if a.err != nil {
		return a.err
	}
	var first uint64
	for r := 0; r < c.size; r++ {
		if v := all[2*r]; v >= 2 {
			return newErr(classByCode(int(v-2)), op, c, r, "rank %d rejected its arguments", r)
		}
		d := uint64(all[2*r+1])
		if d == 0 || all[2*r] == 0 {
			continue
		}
		if first == 0 {
			first = d
		} else if d != first {
			return newErr(ErrArg, op, c, r, "the topology arguments differ between ranks (they must be the same at every process)")
		}
	}
	return nil
}

// intraCreate checks that c can create a topology (a live
// intracommunicator).
func intraCreate(c *Comm, op string) error {
	if err := checkLive(c, op); err != nil {
		return err
	}
	if c.IsInter() {
		return c.handle(newErr(ErrComm, op, c, NoPeer, "not supported on intercommunicators"))
	}
	return nil
}

// createTopo creates the communicator of a topology from c: after the
// exchange of the arguments, over c's first n ranks (all of c if n ==
// c.size), ranks kept, with t attached. Processes of c beyond n get nil.
func createTopo(c *Comm, op, kind string, n int, a topoArgs, t func(rank int) *topology) (*Comm, error) {
	fn := func() (*Comm, error) {
		if err := agreeArgs(c, op, a); err != nil {
			return nil, err
		}
		join := c.rank < n
		pairs, err := agreeOnParent(c, op, 1, join)
		if err != nil {
			return nil, err
		}
		if !join {
			return nil, nil
		}
		nc := newDerived(c, derivedName(kind, c), pairs[0], slices.Clone(c.groupProcs()[:n]), c.rank)
		nc.topo = t(c.rank).finish(c.rank)
		return nc, nil
	}
	nc, err := c.ftm().create(c, op, fn)
	return nc, c.handle(err)
}

// CartCreate returns a communicator of c's first prod(dims) processes with
// a Cartesian topology of len(dims) dimensions of sizes dims, periodic
// where periods says so (MPI_Cart_create). It is collective over c and
// every process passes the same arguments. reorder is accepted but ranks
// keep their order (rank r of the new communicator is rank r of c, so the
// grid is laid out in row-major order of c's ranks). Processes of c beyond
// the grid get a nil communicator (MPI_COMM_NULL) and a nil error. A
// dimension < 1 or a grid larger than c is an ErrDims error, periods of
// another length an ErrArg error, at every process.
func (c *Comm) CartCreate(dims []int, periods []bool, reorder bool) (*Comm, error) {
	const op = "MPI_Cart_create"
	if err := intraCreate(c, op); err != nil {
		return nil, err
	}
	var a topoArgs
	n := 1
	for i, d := range dims {
		if d < 1 {
			a.err = newErr(ErrDims, op, c, NoPeer, "dims[%d] is %d (dimensions are >= 1)", i, d)
			break
		}
		n *= d
		if n > c.size {
			a.err = newErr(ErrDims, op, c, NoPeer, "a grid of %v has more processes than the communicator's %d", dims, c.size)
			break
		}
	}
	if a.err == nil && len(periods) != len(dims) {
		a.err = newErr(ErrArg, op, c, NoPeer, "%d periods for %d dimensions", len(periods), len(dims))
	}
	per := make([]int, len(periods))
	for i, p := range periods {
		if p {
			per[i] = 1
		}
	}
	a.digest = digestInts(dims, per)
	dims, periods = slices.Clone(dims), slices.Clone(periods)
	return createTopo(c, op, "cart", n, a, func(rank int) *topology {
		t := &topology{kind: Cart, dims: dims, periods: periods}
		t.coords = t.cartCoords(rank)
		return t
	})
}

// cartCoords are the coordinates of rank in the grid (row-major).
func (t *topology) cartCoords(rank int) []int {
	co := make([]int, len(t.dims))
	for i := len(t.dims) - 1; i >= 0; i-- {
		co[i] = rank % t.dims[i]
		rank /= t.dims[i]
	}
	return co
}

// cartRank is the rank at coords (periodic dimensions wrapped), -1 when a
// coordinate is outside a non-periodic dimension, ProcNull never.
func (t *topology) cartRank(coords []int) int {
	r := 0
	for i, x := range coords {
		d := t.dims[i]
		if x < 0 || x >= d {
			if !t.periods[i] {
				return -1
			}
			x = ((x % d) + d) % d
		}
		r = r*d + x
	}
	return r
}

// CartdimGet returns the number of dimensions of c's Cartesian topology
// (MPI_Cartdim_get); ErrTopology if c has none.
func (c *Comm) CartdimGet() (int, error) {
	t, err := c.topoOf("MPI_Cartdim_get", Cart)
	if err != nil {
		return 0, err
	}
	return len(t.dims), nil
}

// CartGet returns the dimensions and periodicity of c's Cartesian topology
// and the calling process's coordinates (MPI_Cart_get), as new slices.
func (c *Comm) CartGet() (dims []int, periods []bool, coords []int, err error) {
	t, err := c.topoOf("MPI_Cart_get", Cart)
	if err != nil {
		return nil, nil, nil, err
	}
	return slices.Clone(t.dims), slices.Clone(t.periods), slices.Clone(t.coords), nil
}

// CartRank returns the rank of the process at coords (MPI_Cart_rank).
// Coordinates outside a periodic dimension wrap around; outside a
// non-periodic one they are an ErrArg error, as is a wrong number of
// coordinates.
func (c *Comm) CartRank(coords []int) (int, error) {
	const op = "MPI_Cart_rank"
	t, err := c.topoOf(op, Cart)
	if err != nil {
		return 0, err
	}
	if len(coords) != len(t.dims) {
		return 0, c.handle(newErr(ErrArg, op, c, NoPeer, "%d coordinates for %d dimensions", len(coords), len(t.dims)))
	}
	r := t.cartRank(coords)
	if r < 0 {
		return 0, c.handle(newErr(ErrArg, op, c, NoPeer, "coordinates %v are outside the non-periodic grid %v", coords, t.dims))
	}
	return r, nil
}

// CartCoords returns the coordinates of rank in c's Cartesian topology
// (MPI_Cart_coords); a rank out of range is an ErrRank error.
func (c *Comm) CartCoords(rank int) ([]int, error) {
	const op = "MPI_Cart_coords"
	t, err := c.topoOf(op, Cart)
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= c.size {
		return nil, c.handle(newErr(ErrRank, op, c, NoPeer, "rank %d out of range [0, %d)", rank, c.size))
	}
	return t.cartCoords(rank), nil
}

// CartShift returns the ranks that a shift by disp along dimension
// direction of c's Cartesian topology reaches (MPI_Cart_shift): source is
// the process at coordinate -disp from the caller, dest at +disp. Past the
// edge of a non-periodic dimension the rank is ProcNull. A direction out
// of range is an ErrArg error.
func (c *Comm) CartShift(direction, disp int) (source, dest int, err error) {
	const op = "MPI_Cart_shift"
	t, err := c.topoOf(op, Cart)
	if err != nil {
		return 0, 0, err
	}
	if direction < 0 || direction >= len(t.dims) {
		return 0, 0, c.handle(newErr(ErrArg, op, c, NoPeer, "direction %d out of range [0, %d)", direction, len(t.dims)))
	}
	source, dest = t.shift(direction, disp)
	return source, dest, nil
}

// shift is CartShift for the caller.
func (t *topology) shift(dim, disp int) (source, dest int) {
	at := func(delta int) int {
		co := slices.Clone(t.coords)
		co[dim] += delta
		if r := t.cartRank(co); r >= 0 {
			return r
		}
		return ProcNull
	}
	return at(-disp), at(disp)
}

// CartSub partitions c's Cartesian grid into subgrids of the dimensions
// where remain is true (MPI_Cart_sub): every process gets the communicator
// of its subgrid, with the Cartesian topology of the remaining dimensions
// (none remaining: a zero-dimensional grid of the caller alone). It is
// collective over c. Each process computes its subgrid from the topology,
// so a recognised failed process (run-through) contributes nothing; it is
// still a member of its subgrid, recognised failed there.
func (c *Comm) CartSub(remain []bool) (*Comm, error) {
	const op = "MPI_Cart_sub"
	t, err := c.topoOf(op, Cart)
	if err != nil {
		return nil, err
	}
	var a topoArgs
	if len(remain) != len(t.dims) {
		a.err = newErr(ErrArg, op, c, NoPeer, "%d remain flags for %d dimensions", len(remain), len(t.dims))
	}
	keep := make([]int, len(remain))
	for i, r := range remain {
		if r {
			keep[i] = 1
		}
	}
	a.digest = digestInts(keep)
	remain = slices.Clone(remain)
	fn := func() (*Comm, error) {
		if err := agreeArgs(c, op, a); err != nil {
			return nil, err
		}
		pairs, err := agreeOnParent(c, op, 1, true)
		if err != nil {
			return nil, err
		}
		// The members: every rank of c whose coordinates in the dropped
		// dimensions are the caller's, in rank order (row-major in the
		// remaining ones).
		sub := &topology{kind: Cart}
		for i, r := range remain {
			if r {
				sub.dims = append(sub.dims, t.dims[i])
				sub.periods = append(sub.periods, t.periods[i])
			}
		}
		var members []int
		rank := -1
		for r := 0; r < c.size; r++ {
			co := t.cartCoords(r)
			same := true
			for i, keep := range remain {
				if !keep && co[i] != t.coords[i] {
					same = false
					break
				}
			}
			if same {
				if r == c.rank {
					rank = len(members)
				}
				members = append(members, c.worldRank(r))
			}
		}
		nc := newDerived(c, derivedName("cart_sub", c), pairs[0], members, rank)
		sub.coords = sub.cartCoords(rank)
		nc.topo = sub.finish(rank)
		return nc, nil
	}
	nc, err := c.ftm().create(c, op, fn)
	return nc, c.handle(err)
}

// GraphCreate returns a communicator of c's first len(index) processes
// with the graph topology given by index and edges (MPI_Graph_create): the
// neighbours of node i are edges[index[i-1]:index[i]] (index[-1] = 0).
// It is collective over c and every process passes the same arguments;
// reorder is accepted, ranks keep their order. Processes beyond the graph
// get a nil communicator and a nil error. More nodes than processes, a
// decreasing index, len(edges) != index[len(index)-1] or an edge naming no
// node is an ErrArg error at every process.
func (c *Comm) GraphCreate(index, edges []int, reorder bool) (*Comm, error) {
	const op = "MPI_Graph_create"
	if err := intraCreate(c, op); err != nil {
		return nil, err
	}
	var a topoArgs
	n := len(index)
	bad := func(format string, args ...any) {
		if a.err == nil {
			a.err = newErr(ErrArg, op, c, NoPeer, format, args...)
		}
	}
	if n > c.size {
		bad("a graph of %d nodes has more nodes than the communicator's %d processes", n, c.size)
	}
	for i, x := range index {
		if x < 0 || (i > 0 && x < index[i-1]) {
			bad("index[%d] is %d (index is non-decreasing and >= 0)", i, x)
		}
	}
	if n > 0 && index[n-1] != len(edges) {
		bad("index[%d] is %d but there are %d edges", n-1, index[n-1], len(edges))
	}
	if n == 0 && len(edges) > 0 {
		bad("%d edges in a graph of no nodes", len(edges))
	}
	for i, e := range edges {
		if e < 0 || e >= n {
			bad("edges[%d] is %d (nodes are 0..%d)", i, e, n-1)
		}
	}
	a.digest = digestInts(index, edges)
	index, edges = slices.Clone(index), slices.Clone(edges)
	return createTopo(c, op, "graph", n, a, func(int) *topology {
		return &topology{kind: Graph, index: index, edges: edges}
	})
}

// graphNeighbors are the neighbours of node r (a slice of t.edges).
func (t *topology) graphNeighbors(r int) []int {
	lo := 0
	if r > 0 {
		lo = t.index[r-1]
	}
	return t.edges[lo:t.index[r]]
}

// GraphdimsGet returns the number of nodes and edges of c's graph topology
// (MPI_Graphdims_get).
func (c *Comm) GraphdimsGet() (nnodes, nedges int, err error) {
	t, err := c.topoOf("MPI_Graphdims_get", Graph)
	if err != nil {
		return 0, 0, err
	}
	return len(t.index), len(t.edges), nil
}

// GraphGet returns the index and edges c's graph topology was created
// with (MPI_Graph_get), as new slices.
func (c *Comm) GraphGet() (index, edges []int, err error) {
	t, err := c.topoOf("MPI_Graph_get", Graph)
	if err != nil {
		return nil, nil, err
	}
	return slices.Clone(t.index), slices.Clone(t.edges), nil
}

// GraphNeighborsCount returns the number of neighbours of rank in c's
// graph topology (MPI_Graph_neighbors_count); ErrRank if rank is out of
// range.
func (c *Comm) GraphNeighborsCount(rank int) (int, error) {
	nb, err := c.graphNeighbors("MPI_Graph_neighbors_count", rank)
	return len(nb), err
}

// GraphNeighbors returns the neighbours of rank in c's graph topology
// (MPI_Graph_neighbors), as a new slice.
func (c *Comm) GraphNeighbors(rank int) ([]int, error) {
	nb, err := c.graphNeighbors("MPI_Graph_neighbors", rank)
	return slices.Clone(nb), err
}

func (c *Comm) graphNeighbors(op string, rank int) ([]int, error) {
	t, err := c.topoOf(op, Graph)
	if err != nil {
		return nil, err
	}
	if rank < 0 || rank >= c.size {
		return nil, c.handle(newErr(ErrRank, op, c, NoPeer, "rank %d out of range [0, %d)", rank, c.size))
	}
	return t.graphNeighbors(rank), nil
}

// checkWeights checks a weight slice against its neighbour list (nil:
// unweighted, MPI_UNWEIGHTED).
func checkWeights(what string, nb, w []int) string {
	if w != nil && len(w) != len(nb) {
		return fmt.Sprintf("%d %s weights for %d neighbours", len(w), what, len(nb))
	}
	for i, x := range w {
		if x < 0 {
			return fmt.Sprintf("%s weight %d is %d (weights are >= 0)", what, i, x)
		}
	}
	return ""
}

// checkRanks checks neighbour ranks of c.
func checkRanks(c *Comm, what string, nb []int) string {
	for i, r := range nb {
		if r < 0 || r >= c.size {
			return fmt.Sprintf("%s[%d] is %d, out of range [0, %d)", what, i, r, c.size)
		}
	}
	return ""
}

// DistGraphCreateAdjacent returns a communicator of c's processes with a
// distributed graph topology in which each process gives its own
// neighbours: the processes it receives from (sources) and sends to
// (dests), with weights (nil: unweighted, MPI_UNWEIGHTED)
// (MPI_Dist_graph_create_adjacent). It is collective over c; reorder is
// accepted, ranks keep their order. A rank out of range, a negative
// weight or weights of another length than their ranks is an ErrArg error
// at every process (the others name the rank that rejected its
// arguments). Every edge must be given at both its ends, as MPI requires.
func (c *Comm) DistGraphCreateAdjacent(sources, sourceWeights, dests, destWeights []int, reorder bool) (*Comm, error) {
	const op = "MPI_Dist_graph_create_adjacent"
	if err := intraCreate(c, op); err != nil {
		return nil, err
	}
	var a topoArgs
	for _, msg := range []string{checkRanks(c, "sources", sources), checkRanks(c, "dests", dests),
		checkWeights("source", sources, sourceWeights), checkWeights("destination", dests, destWeights)} {
		if msg != "" && a.err == nil {
			a.err = newErr(ErrArg, op, c, NoPeer, "%s", msg)
		}
	}
	if (sourceWeights == nil) != (destWeights == nil) && a.err == nil {
		a.err = newErr(ErrArg, op, c, NoPeer, "source and destination weights are either both given or both nil")
	}
	t := &topology{kind: DistGraph, sources: slices.Clone(sources), dests: slices.Clone(dests),
		sw: slices.Clone(sourceWeights), dw: slices.Clone(destWeights), weighted: sourceWeights != nil}
	return createTopo(c, op, "dist_graph", c.size, a, func(int) *topology { return t })
}

// DistGraphCreate returns a communicator of c's processes with a
// distributed graph topology given by edges that any process may
// contribute (MPI_Dist_graph_create): for each i, the edges from
// sources[i] to the degrees[i] next entries of dests, with as many
// weights (nil: unweighted, then at every process). It is collective over
// c: the edges are exchanged so that every process learns its in- and
// out-neighbours, each list in the order of the contributing ranks and
// then of their arguments (a recognised failed process, under run-through,
// contributes none). reorder is accepted, ranks keep their order.
func (c *Comm) DistGraphCreate(sources, degrees, dests, weights []int, reorder bool) (*Comm, error) {
	const op = "MPI_Dist_graph_create"
	if err := intraCreate(c, op); err != nil {
		return nil, err
	}
	var a topoArgs
	bad := func(format string, args ...any) {
		if a.err == nil {
			a.err = newErr(ErrArg, op, c, NoPeer, format, args...)
		}
	}
	if len(degrees) != len(sources) {
		bad("%d degrees for %d sources", len(degrees), len(sources))
	}
	total := 0
	for i, d := range degrees {
		if d < 0 {
			bad("degrees[%d] is %d (negative)", i, d)
		}
		total += d
	}
	if a.err == nil && total != len(dests) {
		bad("degrees add up to %d but there are %d destinations", total, len(dests))
	}
	if msg := checkRanks(c, "sources", sources); msg != "" {
		bad("%s", msg)
	}
	if msg := checkRanks(c, "dests", dests); msg != "" {
		bad("%s", msg)
	}
	if msg := checkWeights("edge", dests, weights); msg != "" {
		bad("%s", msg)
	}
	// The edges as (source, destination, weight) triples.
	var mine []int64
	if a.err == nil {
		k := 0
		for i, s := range sources {
			for range degrees[i] {
				w := int64(0)
				if weights != nil {
					w = int64(weights[k])
				}
				mine = append(mine, int64(s), int64(dests[k]), w)
				k++
			}
		}
	}
	weighted := weights != nil
	fn := func() (*Comm, error) {
		// The verdicts with the edge counts, then the edges themselves;
		// whether the graph is weighted must agree (the digest).
		wd := uint64(1<<61 | 1)
		if weighted {
			wd++
		}
		a.digest = wd
		if err := agreeArgs(c, op, a); err != nil {
			return nil, err
		}
		counts64, err := allgatherInts(c, op, int64(len(mine)))
		if err != nil {
			return nil, err
		}
		counts := make([]int, c.size)
		for i, n := range counts64 {
			counts[i] = int(n)
		}
		all := make([]int64, sum(counts))
		run, err := allgathervPrep(c, op, mine, all, counts, nil)
		if err != nil {
			return nil, err
		}
		if err := run(); err != nil {
			return nil, err
		}
		t := &topology{kind: DistGraph, weighted: weighted}
		for e := 0; e+2 < len(all); e += 3 {
			s, d, w := int(all[e]), int(all[e+1]), int(all[e+2])
			if d == c.rank {
				t.sources = append(t.sources, s)
				if weighted {
					t.sw = append(t.sw, w)
				}
			}
			if s == c.rank {
				t.dests = append(t.dests, d)
				if weighted {
					t.dw = append(t.dw, w)
				}
			}
		}
		pairs, err := agreeOnParent(c, op, 1, true)
		if err != nil {
			return nil, err
		}
		nc := newDerived(c, derivedName("dist_graph", c), pairs[0], slices.Clone(c.groupProcs()), c.rank)
		nc.topo = t.finish(c.rank)
		return nc, nil
	}
	nc, err := c.ftm().create(c, op, fn)
	return nc, c.handle(err)
}

// DistGraphNeighborsCount returns the numbers of in- and out-neighbours of
// the calling process in c's distributed graph topology and whether the
// graph is weighted (MPI_Dist_graph_neighbors_count).
func (c *Comm) DistGraphNeighborsCount() (indegree, outdegree int, weighted bool, err error) {
	t, err := c.topoOf("MPI_Dist_graph_neighbors_count", DistGraph)
	if err != nil {
		return 0, 0, false, err
	}
	return len(t.sources), len(t.dests), t.weighted, nil
}

// DistGraphNeighbors returns the in-neighbours (sources) and
// out-neighbours (dests) of the calling process in c's distributed graph
// topology, with their weights (nil if unweighted), as new slices
// (MPI_Dist_graph_neighbors). The neighbourhood collectives use this order.
func (c *Comm) DistGraphNeighbors() (sources, sourceWeights, dests, destWeights []int, err error) {
	t, err := c.topoOf("MPI_Dist_graph_neighbors", DistGraph)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return slices.Clone(t.sources), slices.Clone(t.sw), slices.Clone(t.dests), slices.Clone(t.dw), nil
}

// neighbors returns the neighbour lists the neighbourhood collectives use
// (MPI-4.1 8.6): in[i] is the source of receive block i, out[j] the
// destination of send block j (ProcNull: none), and the order in which the
// sends go out (nil: out's). A Cartesian process sends to its +1
// neighbour before its -1 neighbour in each dimension and receives from
// -1 before +1: so when both neighbours are one process (a periodic
// dimension of size 1 or 2), the block sent towards +1 lands in the
// receiver's -1 block, as MPI-4.1 requires.
func (t *topology) neighbors(rank int) (in, out, order []int) {
	switch t.kind {
	case Cart:
		in = make([]int, 0, 2*len(t.dims))
		order = make([]int, 0, 2*len(t.dims))
		for d := range t.dims {
			s, e := t.shift(d, 1)
			in = append(in, s, e)
			order = append(order, 2*d+1, 2*d)
		}
		return in, in, order
	case Graph:
		nb := t.graphNeighbors(rank)
		return nb, nb, nil
	}
	return t.sources, t.dests, nil
}
