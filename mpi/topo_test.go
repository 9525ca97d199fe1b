package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// MPI-4.1 8.5.2: MPI_Dims_create, with the standard's examples.
func TestDimsCreate(t *testing.T) {
	cases := []struct {
		n    int
		dims []int
		want []int
		err  *mpi.Class
	}{
		{6, []int{0, 0}, []int{3, 2}, nil},
		{7, []int{0, 0}, []int{7, 1}, nil},
		{6, []int{0, 3, 0}, []int{2, 3, 1}, nil},
		{7, []int{0, 3, 0}, nil, mpi.ErrDims},
		{12, []int{0, 0}, []int{4, 3}, nil},
		{16, []int{0, 0, 0}, []int{4, 2, 2}, nil},
		{36, []int{0, 0}, []int{6, 6}, nil},
		{72, []int{0, 0}, []int{9, 8}, nil},
		{1, []int{0, 0, 0}, []int{1, 1, 1}, nil},
		{8, []int{2, 4}, []int{2, 4}, nil},
		{8, []int{2, 2}, nil, mpi.ErrDims},
		{6, []int{0, -1}, nil, mpi.ErrDims},
		{0, []int{0}, nil, mpi.ErrArg},
		{5, nil, nil, mpi.ErrDims},
		{1, nil, nil, nil},
	}
	for _, tc := range cases {
		in := slices.Clone(tc.dims)
		got, err := mpi.DimsCreate(tc.n, in)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("DimsCreate(%d, %v) = %v, %v; want %v", tc.n, tc.dims, got, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("DimsCreate(%d, %v) = %v, %v; want %v", tc.n, tc.dims, got, err, tc.want)
		}
		if !slices.Equal(in, tc.dims) {
			t.Errorf("DimsCreate modified its argument: %v", in)
		}
	}
}

// DimsCreate's split is the most balanced one (least spread between the
// largest and the smallest dimension), checked against an exhaustive search
// at every n up to 300 over 1 to 4 free dimensions, with a fixed one too.
// TestDimsCreateTies: among splits of the least spread, the one whose
// smallest factors are largest (MPICH topo/dims5's table, e.g. 5040 in 3
// dimensions: 21x16x15, not 20x18x14; 5616 in 4: 13x9x8x6, not 13x12x6x6).
func TestDimsCreateTies(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{5040, []int{21, 16, 15}},
		{5616, []int{13, 9, 8, 6}},
		{72, []int{9, 8}},
		{91080, []int{23, 22, 15, 12}},
	} {
		got, err := mpi.DimsCreate(tc.n, make([]int, len(tc.want)))
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("DimsCreate(%d, %d zeros) = %v %v, want %v", tc.n, len(tc.want), got, err, tc.want)
		}
	}
}

func TestDimsCreateBalanced(t *testing.T) {
	var minSpread func(n, k, hi int) int // -1: impossible
	minSpread = func(n, k, hi int) int {
		if k == 1 {
			if n <= hi {
				return 0
			}
			return -1
		}
		best := -1
		for d := min(n, hi); d >= 1; d-- {
			if n%d != 0 {
				continue
			}
			// spread of (d, rest...) = d - the rest's largest possible smallest factor.
			if s := spreadWith(n/d, k-1, d); s >= 0 {
				if sp := d - s; best < 0 || sp < best {
					best = sp
				}
			}
		}
		return best
	}
	for n := 1; n <= 300; n++ {
		for k := 1; k <= 4; k++ {
			dims := make([]int, k)
			got, err := mpi.DimsCreate(n, dims)
			if err != nil {
				t.Fatalf("DimsCreate(%d, %d zeros): %v", n, k, err)
			}
			prod := 1
			for i, d := range got {
				prod *= d
				if i > 0 && d > got[i-1] {
					t.Fatalf("DimsCreate(%d, %d zeros) = %v: not non-increasing", n, k, got)
				}
			}
			if prod != n {
				t.Fatalf("DimsCreate(%d, %d zeros) = %v: product %d", n, k, got, prod)
			}
			if want := minSpread(n, k, n); got[0]-got[k-1] != want {
				t.Fatalf("DimsCreate(%d, %d zeros) = %v: spread %d, best %d", n, k, got, got[0]-got[k-1], want)
			}
		}
		if n%2 == 0 { // a fixed dimension is kept, the others balanced
			got, err := mpi.DimsCreate(n, []int{0, 2, 0})
			if err != nil || got[1] != 2 || got[0]*got[2] != n/2 || got[0] < got[2] {
				t.Fatalf("DimsCreate(%d, [0 2 0]) = %v %v", n, got, err)
			}
		}
	}
}

// spreadWith returns the largest possible smallest factor of n split into k
// non-increasing factors each at most hi (-1: impossible).
func spreadWith(n, k, hi int) int {
	if k == 1 {
		if n <= hi {
			return n
		}
		return -1
	}
	best := -1
	for d := min(n, hi); d >= 1; d-- {
		if n%d == 0 {
			if s := spreadWith(n/d, k-1, d); s > best {
				best = s
			}
		}
	}
	return best
}

// refCoords is the row-major decomposition of r in dims.
func refCoords(r int, dims []int) []int {
	co := make([]int, len(dims))
	for i := len(dims) - 1; i >= 0; i-- {
		co[i] = r % dims[i]
		r /= dims[i]
	}
	return co
}

// refShift is the reference of CartShift, from coordinates.
func refShift(me int, dims []int, periods []bool, d, disp int) (int, int) {
	at := func(delta int) int {
		co := refCoords(me, dims)
		co[d] += delta
		if co[d] < 0 || co[d] >= dims[d] {
			if !periods[d] {
				return mpi.ProcNull
			}
			co[d] = ((co[d] % dims[d]) + dims[d]) % dims[d]
		}
		r := 0
		for i, x := range co {
			r = r*dims[i] + x
		}
		return r
	}
	return at(-disp), at(disp)
}

// MPI-4.1 8.5.1, 8.5.5: coordinates, ranks and shifts of Cartesian grids
// of 1 to 12 processes, 2-D and 3-D, periodic and not, and a grid smaller
// than the communicator (the others get nil).
func TestCartCoordsRankShift(t *testing.T) {
	for np := 1; np <= 12; np++ {
		t.Run(fmt.Sprint(np), func(t *testing.T) {
			run(t, np, func(w *mpi.World, c *mpi.Comm) error {
				if c.Topo() != mpi.Undefined {
					return fmt.Errorf("CommWorld has topology %d", c.Topo())
				}
				grids := [][]int{{0, 0}, {0, 0, 0}, {1, 0}}
				pers := [][]bool{{true, false}, {false, true, true}, {true, true}}
				for g, d0 := range grids {
					dims, err := mpi.DimsCreate(np, d0)
					if err != nil {
						return err
					}
					cart, err := c.CartCreate(dims, pers[g], true)
					if err != nil {
						return fmt.Errorf("CartCreate(%v): %v", dims, err)
					}
					if err := checkCart(cart, c.Rank(), dims, pers[g]); err != nil {
						return fmt.Errorf("grid %v: %v", dims, err)
					}
					if err := cart.Free(); err != nil {
						return err
					}
				}
				// A grid of np-1 processes: the last one gets nil.
				if np > 1 {
					cart, err := c.CartCreate([]int{np - 1}, []bool{false}, false)
					if err != nil {
						return err
					}
					if (cart == nil) != (c.Rank() == np-1) {
						return fmt.Errorf("grid of %d: communicator %v at rank %d", np-1, cart, c.Rank())
					}
					if cart != nil {
						if err := checkCart(cart, c.Rank(), []int{np - 1}, []bool{false}); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
}

func checkCart(cart *mpi.Comm, me int, dims []int, periods []bool) error {
	if cart.Topo() != mpi.Cart || cart.Rank() != me {
		return fmt.Errorf("topology %d, rank %d", cart.Topo(), cart.Rank())
	}
	if nd, err := cart.CartdimGet(); err != nil || nd != len(dims) {
		return fmt.Errorf("CartdimGet %d %v", nd, err)
	}
	gd, gp, gc, err := cart.CartGet()
	if err != nil || !slices.Equal(gd, dims) || !slices.Equal(gp, periods) || !slices.Equal(gc, refCoords(me, dims)) {
		return fmt.Errorf("CartGet %v %v %v %v", gd, gp, gc, err)
	}
	for r := 0; r < cart.Size(); r++ {
		co, err := cart.CartCoords(r)
		if err != nil || !slices.Equal(co, refCoords(r, dims)) {
			return fmt.Errorf("CartCoords(%d) = %v %v", r, co, err)
		}
		if back, err := cart.CartRank(co); err != nil || back != r {
			return fmt.Errorf("CartRank(%v) = %d %v", co, back, err)
		}
	}
	for d := range dims {
		for _, disp := range []int{1, -1, 2} {
			s, e, err := cart.CartShift(d, disp)
			ws, we := refShift(me, dims, periods, d, disp)
			if err != nil || s != ws || e != we {
				return fmt.Errorf("CartShift(%d, %d) = %d %d %v; want %d %d", d, disp, s, e, err, ws, we)
			}
		}
	}
	// Periodic coordinates wrap; non-periodic ones are an error.
	co := refCoords(me, dims)
	co[0] += dims[0]
	r, err := cart.CartRank(co)
	if periods[0] && (err != nil || r != me) {
		return fmt.Errorf("CartRank of wrapped %v = %d %v", co, r, err)
	}
	if !periods[0] && !errors.Is(err, mpi.ErrArg) {
		return fmt.Errorf("CartRank outside the non-periodic grid: %d %v", r, err)
	}
	// Dup keeps the topology (MPI-4.1 7.4.2).
	d, err := cart.Dup()
	if err != nil {
		return err
	}
	if dd, _, _, err := d.CartGet(); err != nil || !slices.Equal(dd, dims) {
		return fmt.Errorf("Dup's topology %v %v", dd, err)
	}
	return d.Free()
}

// MPI-4.1 8.5.6: CartSub keeps the chosen dimensions.
func TestCartSub(t *testing.T) {
	run(t, 12, func(w *mpi.World, c *mpi.Comm) error {
		dims := []int{2, 3, 2}
		cart, err := c.CartCreate(dims, []bool{false, true, false}, false)
		if err != nil {
			return err
		}
		me := refCoords(c.Rank(), dims)
		for _, remain := range [][]bool{{true, false, true}, {false, true, false}, {false, false, false}, {true, true, true}} {
			sub, err := cart.CartSub(remain)
			if err != nil {
				return fmt.Errorf("CartSub(%v): %v", remain, err)
			}
			var wd []int
			var wp, wantPer []bool
			for i, r := range remain {
				if r {
					wd = append(wd, dims[i])
					wp = append(wp, []bool{false, true, false}[i])
				}
			}
			wantPer = wp
			gd, gp, gc, err := sub.CartGet()
			if err != nil || !slices.Equal(gd, wd) || !slices.Equal(gp, wantPer) {
				return fmt.Errorf("CartSub(%v): CartGet %v %v %v", remain, gd, gp, err)
			}
			var wc []int
			for i, r := range remain {
				if r {
					wc = append(wc, me[i])
				}
			}
			if !slices.Equal(gc, wc) {
				return fmt.Errorf("CartSub(%v): coordinates %v, want %v", remain, gc, wc)
			}
			// The members: world ranks agreeing in the dropped dimensions.
			var members []int
			for r := 0; r < 12; r++ {
				co := refCoords(r, dims)
				same := true
				for i, keep := range remain {
					if !keep && co[i] != me[i] {
						same = false
					}
				}
				if same {
					members = append(members, r)
				}
			}
			if got := sub.Group().WorldRanks(); !slices.Equal(got, members) {
				return fmt.Errorf("CartSub(%v): members %v, want %v", remain, got, members)
			}
			sum := []int{0}
			if err := mpi.Allreduce(sub, []int{1}, sum, mpi.Sum); err != nil || sum[0] != len(members) {
				return fmt.Errorf("Allreduce on the subgrid: %v %v", sum, err)
			}
			if err := sub.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}

// MPI-4.1 8.5.3, 8.5.4, 8.5.5: graph and distributed graph topologies and
// their neighbour queries.
func TestGraphAndDistGraph(t *testing.T) {
	const n = 5
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		// A graph of 4 nodes: 0-1, 0-3, 1-2, 2-3, 3-3 (a self-loop).
		index := []int{2, 4, 6, 9}
		edges := []int{1, 3, 0, 2, 1, 3, 0, 2, 3}
		g, err := c.GraphCreate(index, edges, false)
		if err != nil {
			return err
		}
		if (g == nil) != (me == 4) {
			return fmt.Errorf("graph of 4 nodes: communicator %v at rank %d", g, me)
		}
		if g != nil {
			if g.Topo() != mpi.Graph {
				return fmt.Errorf("Topo %d", g.Topo())
			}
			if nn, ne, err := g.GraphdimsGet(); nn != 4 || ne != 9 || err != nil {
				return fmt.Errorf("GraphdimsGet %d %d %v", nn, ne, err)
			}
			gi, ge, err := g.GraphGet()
			if err != nil || !slices.Equal(gi, index) || !slices.Equal(ge, edges) {
				return fmt.Errorf("GraphGet %v %v %v", gi, ge, err)
			}
			want := [][]int{{1, 3}, {0, 2}, {1, 3}, {0, 2, 3}}
			for r := range 4 {
				cnt, err := g.GraphNeighborsCount(r)
				nb, err2 := g.GraphNeighbors(r)
				if err != nil || err2 != nil || cnt != len(want[r]) || !slices.Equal(nb, want[r]) {
					return fmt.Errorf("neighbours of %d: %d %v %v %v", r, cnt, nb, err, err2)
				}
			}
			if _, err := g.GraphNeighbors(4); !errors.Is(err, mpi.ErrRank) {
				return fmt.Errorf("GraphNeighbors(4): %v", err)
			}
			if _, _, _, err := g.CartGet(); !errors.Is(err, mpi.ErrTopology) {
				return fmt.Errorf("CartGet on a graph: %v", err)
			}
		}
		// Adjacent: a directed ring, weighted by the sender.
		next, prev := (me+1)%n, (me+n-1)%n
		dg, err := c.DistGraphCreateAdjacent([]int{prev}, []int{prev}, []int{next}, []int{me}, false)
		if err != nil {
			return err
		}
		in, out, weighted, err := dg.DistGraphNeighborsCount()
		if err != nil || in != 1 || out != 1 || !weighted {
			return fmt.Errorf("DistGraphNeighborsCount %d %d %v %v", in, out, weighted, err)
		}
		s, sw, d, dw, err := dg.DistGraphNeighbors()
		if err != nil || !slices.Equal(s, []int{prev}) || !slices.Equal(sw, []int{prev}) || !slices.Equal(d, []int{next}) || !slices.Equal(dw, []int{me}) {
			return fmt.Errorf("DistGraphNeighbors %v %v %v %v %v", s, sw, d, dw, err)
		}
		// General: rank 0 contributes the whole star 0 -> everyone, the
		// others their edge to 0; unweighted.
		var srcs, degs, dsts []int
		if me == 0 {
			srcs, degs = []int{0}, []int{n - 1}
			for r := 1; r < n; r++ {
				dsts = append(dsts, r)
			}
		} else {
			srcs, degs, dsts = []int{me}, []int{1}, []int{0}
		}
		dg2, err := c.DistGraphCreate(srcs, degs, dsts, nil, false)
		if err != nil {
			return err
		}
		s, sw, d, dw, err = dg2.DistGraphNeighbors()
		wantS, wantD := []int{0}, []int{0}
		if me == 0 {
			wantS, wantD = dsts, dsts
		}
		if err != nil || sw != nil || dw != nil || !slices.Equal(s, wantS) || !slices.Equal(d, wantD) {
			return fmt.Errorf("DistGraphCreate neighbours %v %v %v %v %v", s, sw, d, dw, err)
		}
		return nil
	})
}

// neighborRef is what rank me receives in a neighbour collective: for
// in-neighbour i (rank src), the index of the block src sends to me on
// that edge (Cartesian: my -1 neighbour's +1 block and conversely, MPI-4.1
// 8.6), -1 for none.
type topoRef struct {
	in, out []int // neighbours per rank
	blockOf []int // for my in-neighbour i: the sender's out-block index
}

func cartRef(me int, dims []int, periods []bool) topoRef {
	var r topoRef
	for d := range dims {
		s, e := refShift(me, dims, periods, d, 1)
		r.in = append(r.in, s, e)
		r.blockOf = append(r.blockOf, 2*d+1, 2*d)
	}
	r.out = r.in
	return r
}

// val is element k of the block b that rank r sends.
func val(r, b, k int) int { return r*10000 + b*100 + k + 1 }

// checkNeighborColls runs the four neighbourhood collectives (blocking and
// nonblocking) on comm, whose reference neighbours of every rank ref gives,
// and compares with a sequential reference.
func checkNeighborColls(comm *mpi.Comm, ref func(rank int) topoRef) error {
	me := comm.Rank()
	my := ref(me)
	const sentinel = -7
	const n = 3
	for _, nb := range []bool{false, true} {
		wait := func(r *mpi.Request, err error) error {
			if err != nil {
				return err
			}
			_, err = r.Wait()
			return err
		}
		// Allgather: n elements of block 0.
		send := make([]int, n)
		for k := range send {
			send[k] = val(me, 0, k)
		}
		recv := make([]int, n*len(my.in))
		for i := range recv {
			recv[i] = sentinel
		}
		var err error
		if nb {
			err = wait(mpi.IneighborAllgather(comm, send, recv))
		} else {
			err = mpi.NeighborAllgather(comm, send, recv)
		}
		if err != nil {
			return fmt.Errorf("NeighborAllgather: %v", err)
		}
		for i, src := range my.in {
			for k := range n {
				want := sentinel
				if src >= 0 {
					want = val(src, 0, k)
				}
				if got := recv[i*n+k]; got != want {
					return fmt.Errorf("NeighborAllgather (nonblocking %v): block %d from %d element %d = %d, want %d", nb, i, src, k, got, want)
				}
			}
		}
		// Allgatherv: rank r sends r%3+1 elements.
		sendv := make([]int, me%3+1)
		for k := range sendv {
			sendv[k] = val(me, 0, k)
		}
		counts := make([]int, len(my.in))
		for i, src := range my.in {
			if src >= 0 {
				counts[i] = src%3 + 1
			}
		}
		recv = make([]int, 3*len(my.in)+1)
		for i := range recv {
			recv[i] = sentinel
		}
		displs := make([]int, len(my.in))
		for i := range displs {
			displs[i] = 3*i + 1 // gaps stay untouched
		}
		if nb {
			err = wait(mpi.IneighborAllgatherv(comm, sendv, recv, counts, displs))
		} else {
			err = mpi.NeighborAllgatherv(comm, sendv, recv, counts, displs)
		}
		if err != nil {
			return fmt.Errorf("NeighborAllgatherv: %v", err)
		}
		want := make([]int, len(recv))
		for i := range want {
			want[i] = sentinel
		}
		for i, src := range my.in {
			for k := range counts[i] {
				want[displs[i]+k] = val(src, 0, k)
			}
		}
		if !slices.Equal(recv, want) {
			return fmt.Errorf("NeighborAllgatherv (nonblocking %v): %v, want %v", nb, recv, want)
		}
		// Alltoall: block j (n elements) to out-neighbour j.
		send = make([]int, n*len(my.out))
		for j := range my.out {
			for k := range n {
				send[j*n+k] = val(me, j, k)
			}
		}
		recv = make([]int, n*len(my.in))
		for i := range recv {
			recv[i] = sentinel
		}
		if nb {
			err = wait(mpi.IneighborAlltoall(comm, send, recv))
		} else {
			err = mpi.NeighborAlltoall(comm, send, recv)
		}
		if err != nil {
			return fmt.Errorf("NeighborAlltoall: %v", err)
		}
		for i, src := range my.in {
			for k := range n {
				want := sentinel
				if src >= 0 {
					want = val(src, my.blockOf[i], k)
				}
				if got := recv[i*n+k]; got != want {
					return fmt.Errorf("NeighborAlltoall (nonblocking %v): block %d from %d element %d = %d, want %d", nb, i, src, k, got, want)
				}
			}
		}
		// Alltoallv: block j has j%2+1 elements, packed.
		var sc []int
		send = send[:0]
		for j := range my.out {
			sc = append(sc, j%2+1)
			for k := range j%2 + 1 {
				send = append(send, val(me, j, k))
			}
		}
		rc := make([]int, len(my.in))
		for i := range rc {
			rc[i] = my.blockOf[i]%2 + 1
		}
		recv = make([]int, 2*len(my.in))
		for i := range recv {
			recv[i] = sentinel
		}
		if nb {
			err = wait(mpi.IneighborAlltoallv(comm, send, sc, nil, recv, rc, nil))
		} else {
			err = mpi.NeighborAlltoallv(comm, send, sc, nil, recv, rc, nil)
		}
		if err != nil {
			return fmt.Errorf("NeighborAlltoallv: %v", err)
		}
		want = make([]int, len(recv))
		for i := range want {
			want[i] = sentinel
		}
		off := 0
		for i, src := range my.in {
			for k := range rc[i] {
				if src >= 0 {
					want[off+k] = val(src, my.blockOf[i], k)
				}
			}
			off += rc[i]
		}
		if !slices.Equal(recv, want) {
			return fmt.Errorf("NeighborAlltoallv (nonblocking %v): %v, want %v", nb, recv, want)
		}
	}
	return nil
}

// MPI-4.1 8.6, 8.7: the neighbourhood collectives against a sequential
// reference: 2-D grids periodic and not (with periodic dimensions of size
// 1 and 2, where both neighbours are one process), and a distributed graph.
func TestNeighborCollectives(t *testing.T) {
	grids := []struct {
		np      int
		dims    []int
		periods []bool
	}{
		{6, []int{3, 2}, []bool{true, true}},
		{6, []int{3, 2}, []bool{false, false}},
		{6, []int{2, 3}, []bool{false, true}},
		{4, []int{2, 2}, []bool{true, true}},
		{3, []int{1, 3}, []bool{true, false}},
		{1, []int{1, 1}, []bool{true, true}},
	}
	for _, g := range grids {
		t.Run(fmt.Sprint(g.dims, g.periods), func(t *testing.T) {
			run(t, g.np, func(w *mpi.World, c *mpi.Comm) error {
				cart, err := c.CartCreate(g.dims, g.periods, false)
				if err != nil {
					return err
				}
				return checkNeighborColls(cart, func(r int) topoRef { return cartRef(r, g.dims, g.periods) })
			})
		})
	}
	t.Run("distgraph", func(t *testing.T) {
		// Rank r sends to r+1 and r+2 (mod 5), receives from r-1 and r-2,
		// listed in a scrambled order at each end.
		const n = 5
		dests := func(r int) []int { return []int{(r + 2) % n, (r + 1) % n} }
		sources := func(r int) []int { return []int{(r + n - 1) % n, (r + n - 2) % n} }
		ref := func(r int) topoRef {
			tr := topoRef{in: sources(r), out: dests(r)}
			for _, s := range tr.in {
				tr.blockOf = append(tr.blockOf, slices.Index(dests(s), r))
			}
			return tr
		}
		run(t, n, func(w *mpi.World, c *mpi.Comm) error {
			dg, err := c.DistGraphCreateAdjacent(sources(c.Rank()), nil, dests(c.Rank()), nil, true)
			if err != nil {
				return err
			}
			return checkNeighborColls(dg, ref)
		})
	})
}

// Bad input: a clear error at every process, never a hang.
func TestTopologyBadInput(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if nc, err := c.CartCreate([]int{3, 2}, []bool{false, false}, false); nc != nil || !errors.Is(err, mpi.ErrDims) {
			return fmt.Errorf("grid larger than the communicator: %v %v", nc, err)
		}
		if nc, err := c.CartCreate([]int{2, -1}, []bool{false, false}, false); nc != nil || !errors.Is(err, mpi.ErrDims) {
			return fmt.Errorf("negative dimension: %v %v", nc, err)
		}
		if nc, err := c.CartCreate([]int{2, 2}, []bool{false}, false); nc != nil || !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("periods of another length: %v %v", nc, err)
		}
		// One rank alone passes other dimensions: every rank fails.
		dims := []int{2, 2}
		if c.Rank() == 2 {
			dims = []int{4, 1}
		}
		if nc, err := c.CartCreate(dims, []bool{false, false}, false); nc != nil || !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("differing dimensions: %v %v", nc, err)
		}
		// One rank alone rejects its arguments: every rank fails.
		dims = []int{2, 2}
		if c.Rank() == 1 {
			dims = []int{0, 2}
		}
		if nc, err := c.CartCreate(dims, []bool{false, false}, false); nc != nil || !errors.Is(err, mpi.ErrDims) {
			return fmt.Errorf("one rank's bad dimensions: %v %v", nc, err)
		}
		if nc, err := c.GraphCreate([]int{1, 2}, []int{1, 5}, false); nc != nil || !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("edge to no node: %v %v", nc, err)
		}
		if nc, err := c.DistGraphCreateAdjacent([]int{9}, nil, nil, nil, false); nc != nil || !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("source out of range: %v %v", nc, err)
		}
		if nc, err := c.DistGraphCreate([]int{0}, []int{2}, []int{1}, nil, false); nc != nil || !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("degrees beyond the destinations: %v %v", nc, err)
		}
		// Queries and collectives on a communicator without a topology.
		if _, _, err := c.CartShift(0, 1); !errors.Is(err, mpi.ErrTopology) {
			return fmt.Errorf("CartShift on CommWorld: %v", err)
		}
		if _, _, _, _, err := c.DistGraphNeighbors(); !errors.Is(err, mpi.ErrTopology) {
			return fmt.Errorf("DistGraphNeighbors on CommWorld: %v", err)
		}
		if err := mpi.NeighborAllgather(c, []int{1}, make([]int, 4)); !errors.Is(err, mpi.ErrTopology) {
			return fmt.Errorf("NeighborAllgather on CommWorld: %v", err)
		}
		cart, err := c.CartCreate([]int{2, 2}, []bool{false, true}, false)
		if err != nil {
			return err
		}
		if _, err := cart.CartCoords(4); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("CartCoords(4): %v", err)
		}
		if _, _, err := cart.CartShift(2, 1); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("CartShift in dimension 2: %v", err)
		}
		if _, err := cart.CartSub([]bool{true}); !errors.Is(err, mpi.ErrArg) {
			return fmt.Errorf("CartSub with one flag: %v", err)
		}
		// A receive buffer too small for 4 neighbours.
		if err := mpi.NeighborAllgather(cart, []int{1}, make([]int, 1)); !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("short receive buffer: %v", err)
		}
		// The communicator still works after the rejected calls.
		return checkNeighborColls(cart, func(r int) topoRef { return cartRef(r, []int{2, 2}, []bool{false, true}) })
	})
}

// ULFM (seed 002 A.2): a neighbour collective with a killed neighbour
// raises ErrProcFailed and does not hang; once the failure is known,
// topology creation fails at every survivor; after Shrink the topology is
// re-created on the survivors with new dimensions and works.
func TestTopologyULFMFailureAndShrink(t *testing.T) {
	const n = 6
	const victim = 5
	created := newArrivals(n)
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		dims := []int{3, 2}
		cart, err := c.CartCreate(dims, []bool{false, false}, false)
		if err != nil {
			return err
		}
		cart.SetErrhandler(mpi.ErrorsReturn)
		created.arrive()
		if me == victim {
			created.g.wait(t)
			w.Kill()
			return nil
		}
		// Neighbours of 5 in the 3x2 grid: 3 (dimension 0) and 4 (dimension 1).
		err = mpi.NeighborAlltoall(cart, make([]int, 4), make([]int, 4))
		if me == 3 || me == 4 {
			if !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("rank %d: neighbour collective with killed neighbour: %v, want ErrProcFailed", me, err)
			}
		} else if err != nil && !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("rank %d: neighbour collective: %v", me, err)
		}
		if err := awaitFailure(c, victim); err != nil {
			return err
		}
		// Creation after a known failure: every survivor fails.
		if nc, err := c.CartCreate([]int{5}, []bool{true}, false); nc != nil || !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("rank %d: CartCreate after a failure: %v %v", me, nc, err)
		}
		if nc, err := cart.CartSub([]bool{true, false}); nc != nil || !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("rank %d: CartSub after a failure: %v %v", me, nc, err)
		}
		// Repair: shrink, then re-create the topology with new dimensions.
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		nd, err := mpi.DimsCreate(s.Size(), []int{0, 0})
		if err != nil {
			return err
		}
		if !slices.Equal(nd, []int{5, 1}) {
			return fmt.Errorf("DimsCreate(5): %v", nd)
		}
		per := []bool{true, false}
		cart2, err := s.CartCreate(nd, per, false)
		if err != nil {
			return fmt.Errorf("CartCreate on the shrunk communicator: %v", err)
		}
		return checkNeighborColls(cart2, func(r int) topoRef { return cartRef(r, nd, per) })
	})
}

// Seed 003 17.9: under run-through, topology creation on a collectively
// inactive communicator fails with ErrRankFailStop at every process; after
// Validate it succeeds and the recognised failed process stays recognised
// in the new communicator; the neighbour collectives there treat it as
// ProcNull. CartSub's subgrids keep it, recognised.
func TestTopologyRunThrough(t *testing.T) {
	const n = 4
	const victim = 3
	started := newArrivals(n)
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		if err := c.EnableRunThrough(); err != nil {
			return err
		}
		dims, per := []int{2, 2}, []bool{true, false}
		before, err := c.CartCreate(dims, per, false)
		if err != nil {
			return err
		}
		started.arrive()
		if me == victim {
			started.g.wait(t)
			w.Kill()
			return nil
		}
		if err := awaitFailure(c, victim); err != nil {
			return err
		}
		// A neighbour collective on a communicator with an unrecognised
		// failure: ErrRankFailStop, at neighbours and others alike.
		if err := mpi.NeighborAllgather(before, []int{me}, make([]int, 4)); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("rank %d: neighbour collective with an unrecognised failure: %v", me, err)
		}
		if nc, err := c.CartCreate(dims, per, false); nc != nil || !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("rank %d: CartCreate on an inactive communicator: %v %v", me, nc, err)
		}
		if nc, err := c.DistGraphCreate(nil, nil, nil, nil, false); nc != nil || !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("rank %d: DistGraphCreate on an inactive communicator: %v %v", me, nc, err)
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		cart, err := c.CartCreate(dims, per, false)
		if err != nil {
			return fmt.Errorf("CartCreate after Validate: %v", err)
		}
		if g, err := cart.GroupFailed(); err != nil || !slices.Equal(worldRanks(g), []int{victim}) {
			return fmt.Errorf("recognised failures of the new communicator: %v %v", worldRanks(g), err)
		}
		// The reference with the failed process as ProcNull.
		ref := func(r int) topoRef {
			tr := cartRef(r, dims, per)
			tr.in = slices.Clone(tr.in)
			for i, x := range tr.in {
				if x == victim {
					tr.in[i] = mpi.ProcNull
				}
			}
			tr.out = tr.in
			return tr
		}
		if err := checkNeighborColls(cart, ref); err != nil {
			return err
		}
		// DistGraphCreate: the recognised failed process contributes no
		// edge (its 3->0 is missing); the edge 2->3 to it stays, and the
		// neighbour collective skips it.
		dg, err := c.DistGraphCreate([]int{me}, []int{1}, []int{(me + 1) % n}, nil, false)
		if err != nil {
			return fmt.Errorf("DistGraphCreate after Validate: %v", err)
		}
		srcs, _, dsts, _, err := dg.DistGraphNeighbors()
		wantSrc := []int{me - 1}
		if me == 0 {
			wantSrc = nil
		}
		if err != nil || !slices.Equal(srcs, wantSrc) || !slices.Equal(dsts, []int{me + 1}) {
			return fmt.Errorf("rank %d: DistGraphCreate over a recognised failure: sources %v dests %v %v", me, srcs, dsts, err)
		}
		got := []int{-1}
		if err := mpi.NeighborAllgather(dg, []int{10 + me}, got[:len(srcs)]); err != nil {
			return fmt.Errorf("rank %d: NeighborAllgather on the dist graph: %v", me, err)
		}
		if me > 0 && got[0] != 10+me-1 {
			return fmt.Errorf("rank %d: NeighborAllgather on the dist graph got %v", me, got)
		}
		sub, err := cart.CartSub([]bool{false, true})
		if err != nil {
			return fmt.Errorf("CartSub after Validate: %v", err)
		}
		g, _ := sub.GroupFailed()
		if want := me >= 2; (g.Size() == 1) != want || sub.Size() != 2 {
			return fmt.Errorf("rank %d: subgrid of size %d with failures %v", me, sub.Size(), worldRanks(g))
		}
		return nil
	})
}

// Seed 003 17.9: topology creation is all-or-nothing when a process fails
// during it: every survivor gets the new communicator, or every survivor
// an ErrRankFailStop error (the run-through model's creation rule, which
// the topology constructors are built on).
func TestTopologyRunThroughCreationAllOrNothing(t *testing.T) {
	kinds := []string{"cart", "cartsub", "graph", "distgraph", "adjacent"}
	for _, kind := range kinds {
		for _, victim := range []int{1, 4} {
			t.Run(fmt.Sprint(kind, victim), func(t *testing.T) {
				const n = 5
				var got, failed atomic.Int32
				ready := newArrivals(n)
				run(t, n, func(w *mpi.World, c *mpi.Comm) error {
					me := c.Rank()
					if err := c.EnableRunThrough(); err != nil {
						return err
					}
					ring, err := c.CartCreate([]int{n}, []bool{true}, false)
					if err != nil {
						return err
					}
					ready.arrive()
					if me == victim {
						ready.g.wait(t)
						w.Kill()
						return nil
					}
					var nc *mpi.Comm
					switch kind {
					case "cart":
						nc, err = c.CartCreate([]int{n}, []bool{false}, false)
					case "cartsub":
						nc, err = ring.CartSub([]bool{true})
					case "graph":
						nc, err = c.GraphCreate([]int{1, 2, 3, 4, 5}, []int{1, 2, 3, 4, 0}, false)
					case "distgraph":
						nc, err = c.DistGraphCreate([]int{me}, []int{1}, []int{(me + 1) % n}, nil, false)
					case "adjacent":
						nc, err = c.DistGraphCreateAdjacent([]int{(me + n - 1) % n}, nil, []int{(me + 1) % n}, nil, false)
					}
					switch {
					case err == nil && nc != nil:
						got.Add(1)
						if nc.Topo() == mpi.Undefined {
							return errors.New("the new communicator has no topology")
						}
						if _, err := nc.Validate(); err != nil {
							return err
						}
					case errors.Is(err, mpi.ErrRankFailStop):
						failed.Add(1)
					default:
						return fmt.Errorf("rank %d: %s during a failure: %v %v", me, kind, nc, err)
					}
					return nil
				})
				if got.Load() != 0 && failed.Load() != 0 {
					t.Fatalf("not all-or-nothing: %d got the communicator, %d an error", got.Load(), failed.Load())
				}
				if got.Load()+failed.Load() != n-1 {
					t.Fatalf("%d outcomes, want %d", got.Load()+failed.Load(), n-1)
				}
			})
		}
	}
}

// Neighbourhood collectives are collective calls on the communicator's
// collective context: a wildcard user receive posted before them never
// takes their messages, and a call whose count differs at one process
// fails with ErrCount at that process and its neighbours (the call's signature)
// instead of a wrong result or a hang; the communicator then works.
func TestNeighborCollectiveIsolationAndMismatch(t *testing.T) {
	const n = 4
	dims, per := []int{2, 2}, []bool{true, true}
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		cart, err := c.CartCreate(dims, per, false)
		if err != nil {
			return err
		}
		cart.SetErrhandler(mpi.ErrorsReturn)
		user := []int{-1}
		req, err := mpi.Irecv(cart, user, mpi.AnySource, mpi.AnyTag)
		if err != nil {
			return err
		}
		if err := checkNeighborColls(cart, func(r int) topoRef { return cartRef(r, dims, per) }); err != nil {
			return err
		}
		// The user message, sent after the collectives, is the one received.
		if err := mpi.Send(cart, []int{100 + me}, (me+1)%n, 3); err != nil {
			return err
		}
		st, err := req.Wait()
		if err != nil || user[0] != 100+(me+n-1)%n || st.Tag != 3 {
			return fmt.Errorf("wildcard user receive got %v (tag %d), %v", user, st.Tag, err)
		}
		// Rank 0 sends 2 elements, the others 1: rank 0 and its neighbours
		// 1 and 2 see a mismatch; rank 3 (a neighbour of 1 and 2 only)
		// may finish first or be released by them.
		k := 1
		if me == 0 {
			k = 2
		}
		err = mpi.NeighborAllgather(cart, make([]int, k), make([]int, 4*k))
		if err == nil && me != 3 {
			return fmt.Errorf("rank %d: mismatched NeighborAllgather succeeded", me)
		}
		if err != nil && !errors.Is(err, mpi.ErrCount) && !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("rank %d: mismatched NeighborAllgather: %v", me, err)
		}
		return checkNeighborColls(cart, func(r int) topoRef { return cartRef(r, dims, per) })
	})
}
