package mpi

import (
	"runtime"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/p2p"
)

// The collective algorithms, on byte views of typed buffers. Every
// function here returns raw errors (the public wrappers apply the
// communicator's error handler) and is written so that send and receive
// buffers may alias in the ways the public functions document as "in
// place".

// Algorithm switch points (bytes). See docs in coll.go.
var tune = struct {
	bcastLong     int // Bcast: >= this and p >= bcastMinP: scatter + ring allgather; else binomial tree
	bcastMinP     int
	allreduceLong int // Allreduce (commutative op, count >= p): >= this: ring reduce-scatter + ring allgather; else recursive doubling
	gatherShort   int // Gather/Scatter: total <= this: binomial tree; else linear (direct)
	allgatherLong int // Allgather(v): total >= this: ring; else Bruck (ceil(log2 p) rounds)
	alltoallLong  int // Alltoall(v): block >= this: pairwise exchange; else all requests posted at once
	alltoallRoot  int // crowded host, Alltoall with p*p*block <= this bytes: through rank 0 (2 hops)
	redscatLong   int // ReduceScatter(Block) (commutative op): total >= this: ring; else reduce + scatterv
	flatMaxP      int // crowded host, p <= this: flat (linear) barrier
}{
	flatMaxP:      64,
	bcastLong:     64 << 10,
	bcastMinP:     4,
	allreduceLong: 64 << 10,
	gatherShort:   32 << 10,
	allgatherLong: 64 << 10,
	alltoallLong:  16 << 10,
	alltoallRoot:  64 << 10,
	redscatLong:   64 << 10,
}

// crowded reports whether c has more processes than this host has cores
// (true of every multi-rank job on a small machine, and of Run). Then
// every process of a symmetric algorithm (dissemination, recursive
// doubling, Bruck) must be scheduled in each of its log p rounds, and
// trees, which send 2(p-1) messages in all and wake most processes once
// or twice, are several times faster for small messages despite their
// 2 log p depth.
func crowded(p int) bool {
	switch crowdedMode.Load() {
	case 1:
		return true
	case -1:
		return false
	}
	return p > runtime.NumCPU()
}

// crowdedMode overrides crowded for tests: 1 always, -1 never, 0 auto.
var crowdedMode atomic.Int32

func lowbit(v int) int { return v & -v }

// ceilPow2 is the smallest power of two >= p.
func ceilPow2(p int) int {
	m := 1
	for m < p {
		m <<= 1
	}
	return m
}

// barrier: dissemination, ceil(log2 p) rounds of zero-byte exchanges; on
// a crowded host a binomial fan-in to rank 0 and fan-out.
func (x *cx) barrier() error {
	c := x.c
	p := c.size
	if p > 1 && crowded(p) {
		if p <= tune.flatMaxP {
			return x.flatBarrier()
		}
		if err := x.fanIn(); err != nil {
			return err
		}
		return x.phase2().bcastBinomial(nil, 0)
	}
	for k := 1; k < p; k <<= 1 {
		if err := x.sendrecv((c.rank+k)%p, nil, (c.rank-k+p)%p, nil); err != nil {
			return err
		}
	}
	return nil
}

// flatBarrier: every rank notifies rank 0, which releases them all: two
// message hops, the fewest process wake-ups on a crowded host.
func (x *cx) flatBarrier() error {
	p, r := x.c.size, x.c.rank
	if r != 0 {
		if err := x.send(0, nil); err != nil {
			return err
		}
		return x.phase2().recv(0, nil)
	}
	var pd pending
	for i := 1; i < p; i++ {
		if err := x.postRecv(&pd, i, nil, true); err != nil {
			x.cancelAll(&pd)
			return err
		}
	}
	if err := x.waitAll(&pd); err != nil {
		return err
	}
	y := x.phase2()
	for i := 1; i < p; i++ {
		if err := y.postSend(&pd, i, nil); err != nil {
			y.waitAll(&pd)
			return err
		}
	}
	return y.waitAll(&pd)
}

// fanIn: zero-byte binomial gather to rank 0.
func (x *cx) fanIn() error {
	p, r := x.c.size, x.c.rank
	for mask := 1; mask < p; mask <<= 1 {
		if r&mask != 0 {
			return x.send(r-mask, nil)
		}
		if r+mask < p {
			if err := x.recv(r+mask, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// bcast broadcasts buf from root.
func (x *cx) bcast(buf []byte, root int) error {
	p := x.c.size
	if p == 1 || len(buf) == 0 {
		return nil
	}
	if len(buf) >= tune.bcastLong && p >= tune.bcastMinP && !crowded(p) {
		return x.bcastScatterRing(buf, root)
	}
	return x.bcastBinomial(buf, root)
}

// bcastBinomial: binomial tree rooted at root, ceil(log2 p) rounds.
func (x *cx) bcastBinomial(buf []byte, root int) error {
	c := x.c
	p, r := c.size, c.rank
	vr := (r - root + p) % p
	mask := 1
	for mask < p {
		if vr&mask != 0 {
			if err := x.recv((r-mask+p)%p, buf); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	var pd pending
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < p {
			if err := x.postSend(&pd, (r+mask)%p, buf); err != nil {
				x.waitAll(&pd)
				return err
			}
		}
	}
	return x.waitAll(&pd)
}

// chunk returns the byte range of chunk j when n bytes are split into p
// chunks of ceil(n/p) bytes rounded up to whole elements (the last ones
// may be short or empty).
func chunk(n, p, esz, j int) (lo, hi int) {
	per := (n/esz + p - 1) / p * esz
	lo, hi = min(j*per, n), min((j+1)*per, n)
	return
}

// bcastScatterRing: binomial scatter of p chunks, then a ring allgather
// (van de Geijn); about 2n bytes per rank instead of n log p.
func (x *cx) bcastScatterRing(buf []byte, root int) error {
	c := x.c
	p, r, n := c.size, c.rank, len(buf)
	vr := (r - root + p) % p
	rng := func(v, cnt int) (int, int) { // bytes of chunks [v, v+cnt) (relative)
		lo, _ := chunk(n, p, x.esz, v)
		_, hi := chunk(n, p, x.esz, min(v+cnt, p)-1)
		return lo, max(lo, hi)
	}
	mask := 1
	for mask < p {
		if vr&mask != 0 {
			lo, hi := rng(vr, min(mask, p-vr))
			if err := x.recv((r-mask+p)%p, buf[lo:hi]); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	var pd pending
	for mask >>= 1; mask > 0; mask >>= 1 {
		if child := vr + mask; child < p {
			lo, hi := rng(child, min(mask, p-child))
			if err := x.postSend(&pd, (r+mask)%p, buf[lo:hi]); err != nil {
				x.waitAll(&pd)
				return err
			}
		}
	}
	if err := x.waitAll(&pd); err != nil {
		return err
	}
	// Ring allgather of the chunks, in relative numbering.
	right, left := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		sj, rj := (vr-s+p)%p, (vr-s-1+p)%p
		slo, shi := chunk(n, p, x.esz, sj)
		rlo, rhi := chunk(n, p, x.esz, rj)
		if err := x.sendrecv(right, buf[slo:shi], left, buf[rlo:rhi]); err != nil {
			return err
		}
	}
	return nil
}

// reduce combines send of every rank into recv at root, in rank order
// (binomial tree; for non-commutative ops the tree is rooted at rank 0
// and the result forwarded to root). recv is used at root only.
func (x *cx) reduce(send, recv []byte, root int, red redFn, commutative bool) error {
	c := x.c
	p, r, n := c.size, c.rank, len(send)
	if p == 1 {
		copy(recv, send)
		return nil
	}
	if n == 0 {
		return nil
	}
	troot := root
	if !commutative {
		troot = 0
	}
	vr := (r - troot + p) % p
	acc := send // read-only until replaced by a temporary
	var t1, t2 []byte
	var h1, h2 *tmpBuf
	defer func() { putTmp(h1); putTmp(h2) }()
	for mask := 1; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			if err := x.send((r-mask+p)%p, acc); err != nil {
				return err
			}
			break
		}
		child := vr + mask
		if child >= p {
			continue
		}
		if t1 == nil {
			t1, h1 = getTmp(n)
			t2, h2 = getTmp(n)
		}
		in := t1
		if &acc[0] == &t1[0] {
			in = t2
		}
		if err := x.recv((child+troot)%p, in); err != nil {
			return err
		}
		// acc holds lower ranks than the child's subtree: in = acc ∘ in.
		red(acc, in)
		acc = in
	}
	if vr == 0 {
		if r == root {
			copy(recv[:n], acc)
			return nil
		}
		return x.phase2().send(root, acc) // non-commutative: rank 0 forwards
	}
	if r == root { // non-commutative, root != 0
		return x.phase2().recv(0, recv[:n])
	}
	return nil
}

// allreduce combines send of every rank into recv of every rank.
func (x *cx) allreduce(send, recv []byte, red redFn, commutative bool) error {
	p, n := x.c.size, len(send)
	recv = recv[:n]
	copy(recv, send)
	if p == 1 || n == 0 {
		return nil
	}
	if crowded(p) {
		// Binomial reduce to rank 0 (rank order kept) and broadcast.
		if err := x.reduce(send, recv, 0, red, commutative); err != nil {
			return err
		}
		return x.phase2().bcast(recv, 0)
	}
	if commutative && n >= tune.allreduceLong && n/x.esz >= p {
		return x.allreduceRing(recv, red)
	}
	return x.allreduceRD(recv, red, commutative)
}

// allreduceRD: recursive doubling on the largest power of two pof2 <= p;
// the first 2*(p-pof2) ranks pair up first (even ranks hand their data to
// the odd neighbour and get the result back at the end). Rank order is
// kept: each of the pof2 participants stands for a contiguous rank range.
func (x *cx) allreduceRD(buf []byte, red redFn, commutative bool) error {
	c := x.c
	p, r, n := c.size, c.rank, len(buf)
	pof2 := 1
	for pof2*2 <= p {
		pof2 *= 2
	}
	rem := p - pof2
	tmp, h := getTmp(n)
	defer putTmp(h)
	cur := buf
	newrank := r - rem
	if r < 2*rem {
		if r%2 == 0 {
			if err := x.send(r+1, cur); err != nil {
				return err
			}
			newrank = -1
		} else {
			if err := x.recv(r-1, tmp); err != nil {
				return err
			}
			red(tmp, cur) // r-1 is lower
			newrank = r / 2
		}
	}
	if newrank >= 0 {
		for mask := 1; mask < pof2; mask <<= 1 {
			nd := newrank ^ mask
			dst := nd + rem
			if nd < rem {
				dst = nd*2 + 1
			}
			if err := x.sendrecv(dst, cur, dst, tmp); err != nil {
				return err
			}
			if nd < newrank || commutative {
				red(tmp, cur)
			} else {
				red(cur, tmp)
				cur, tmp = tmp, cur
			}
		}
	}
	if r < 2*rem {
		if r%2 == 1 {
			if err := x.send(r-1, cur); err != nil {
				return err
			}
		} else if err := x.recv(r+1, cur); err != nil {
			return err
		}
	}
	if &cur[0] != &buf[0] {
		copy(buf, cur)
	}
	return nil
}

// blocks describes a buffer split into p blocks (byte offsets and sizes).
type blocks struct {
	off, size []int
}

func evenBlocks(n, p, esz int) blocks {
	b := blocks{off: make([]int, p), size: make([]int, p)}
	for j := range p {
		lo, hi := chunk(n, p, esz, j)
		b.off[j], b.size[j] = lo, hi-lo
	}
	return b
}

func (b blocks) of(buf []byte, j int) []byte { return buf[b.off[j] : b.off[j]+b.size[j]] }

func (b blocks) maxSize() int {
	m := 0
	for _, s := range b.size {
		m = max(m, s)
	}
	return m
}

// ringReduceScatter: p-1 steps; afterwards block r of work holds the
// reduction of every rank's block r (commutative ops only).
func (x *cx) ringReduceScatter(work []byte, bl blocks, red redFn) error {
	c := x.c
	p, r := c.size, c.rank
	tmp, h := getTmp(bl.maxSize())
	defer putTmp(h)
	right, left := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		si, ri := (r-s-1+p)%p, (r-s-2+p)%p
		in := tmp[:bl.size[ri]]
		if err := x.sendrecv(right, bl.of(work, si), left, in); err != nil {
			return err
		}
		red(in, bl.of(work, ri))
	}
	return nil
}

// ringAllgather: p-1 steps; block r of buf is passed around the ring.
func (x *cx) ringAllgather(buf []byte, bl blocks) error {
	c := x.c
	p, r := c.size, c.rank
	right, left := (r+1)%p, (r-1+p)%p
	for s := 0; s < p-1; s++ {
		si, ri := (r-s+p)%p, (r-s-1+p)%p
		if err := x.sendrecv(right, bl.of(buf, si), left, bl.of(buf, ri)); err != nil {
			return err
		}
	}
	return nil
}

// allreduceRing: ring reduce-scatter then ring allgather, 2(p-1)/p n bytes
// sent per rank.
func (x *cx) allreduceRing(buf []byte, red redFn) error {
	bl := evenBlocks(len(buf), x.c.size, x.esz)
	if err := x.ringReduceScatter(buf, bl, red); err != nil {
		return err
	}
	return x.phase2().ringAllgather(buf, bl)
}

// gather collects n bytes from every rank into recv (p*n bytes) at root.
func (x *cx) gather(send, recv []byte, root int) error {
	c := x.c
	p, r, n := c.size, c.rank, len(send)
	if p == 1 {
		copy(recv[:n], send)
		return nil
	}
	if n*p > tune.gatherShort {
		if r != root {
			return x.send(root, send)
		}
		var pd pending
		for i := range p {
			if i == root {
				continue
			}
			if err := x.postRecv(&pd, i, recv[i*n:(i+1)*n], true); err != nil {
				x.cancelAll(&pd)
				return err
			}
		}
		copy(recv[root*n:(root+1)*n], send)
		return x.waitAll(&pd)
	}
	// Binomial tree: node vr collects the blocks of relative ranks
	// [vr, vr+min(lowbit(vr), p-vr)) in relative order.
	vr := (r - root + p) % p
	if vr&1 == 1 {
		return x.send((r-1+p)%p, send)
	}
	var buf []byte
	var h *tmpBuf
	if vr == 0 && root == 0 {
		buf = recv[:p*n]
	} else {
		sub := p
		if vr != 0 {
			sub = min(lowbit(vr), p-vr)
		}
		buf, h = getTmp(sub * n)
		defer putTmp(h)
	}
	copy(buf[:n], send)
	for mask := 1; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			return x.send((r-mask+p)%p, buf[:min(mask, p-vr)*n])
		}
		child := vr + mask
		if child >= p {
			continue
		}
		cnt := min(mask, p-child)
		if err := x.recv((r+mask)%p, buf[mask*n:(mask+cnt)*n]); err != nil {
			return err
		}
	}
	if root != 0 { // rotate relative order into rank order
		for j := range p {
			i := (j + root) % p
			copy(recv[i*n:(i+1)*n], buf[j*n:(j+1)*n])
		}
	}
	return nil
}

// scatter sends block i (n bytes) of send at root to rank i's recv.
func (x *cx) scatter(send, recv []byte, root int) error {
	c := x.c
	p, r, n := c.size, c.rank, len(recv)
	if p == 1 {
		copy(recv, send[:n])
		return nil
	}
	if n*p > tune.gatherShort {
		if r != root {
			return x.recv(root, recv)
		}
		var pd pending
		for i := range p {
			if i == root {
				continue
			}
			if err := x.postSend(&pd, i, send[i*n:(i+1)*n]); err != nil {
				x.waitAll(&pd)
				return err
			}
		}
		copy(recv, send[root*n:(root+1)*n])
		return x.waitAll(&pd)
	}
	vr := (r - root + p) % p
	var buf []byte
	var h *tmpBuf
	mask := ceilPow2(p)
	switch {
	case vr == 0 && root == 0:
		buf = send[:p*n]
	case vr == 0:
		buf, h = getTmp(p * n)
		for j := range p {
			i := (j + root) % p
			copy(buf[j*n:(j+1)*n], send[i*n:(i+1)*n])
		}
	default:
		mask = lowbit(vr)
		sub := min(mask, p-vr)
		if sub == 1 {
			buf = recv
		} else {
			buf, h = getTmp(sub * n)
		}
		if err := x.recv((r-mask+p)%p, buf[:sub*n]); err != nil {
			putTmp(h)
			return err
		}
	}
	defer putTmp(h)
	var pd pending
	for m := mask >> 1; m > 0; m >>= 1 {
		if child := vr + m; child < p {
			cnt := min(m, p-child)
			if err := x.postSend(&pd, (r+m)%p, buf[m*n:(m+cnt)*n]); err != nil {
				x.waitAll(&pd)
				return err
			}
		}
	}
	if n > 0 && &buf[0] != &recv[0] {
		copy(recv, buf[:n])
	}
	return x.waitAll(&pd)
}

// gatherv: linear; root receives counts[i] bytes at displs[i] (bytes).
func (x *cx) gatherv(send, recv []byte, counts, displs []int, root int) error {
	c := x.c
	if c.rank != root {
		return x.send(root, send)
	}
	var pd pending
	for i := range c.size {
		if i == root {
			continue
		}
		if err := x.postRecv(&pd, i, recv[displs[i]:displs[i]+counts[i]], true); err != nil {
			x.cancelAll(&pd)
			return err
		}
	}
	copy(recv[displs[root]:displs[root]+counts[root]], send)
	return x.waitAll(&pd)
}

// scatterv: linear; rank i receives counts[i] bytes from displs[i] of
// send at root (exact is false when the receivers do not know the count).
func (x *cx) scatterv(send, recv []byte, counts, displs []int, root int, exact bool) error {
	c := x.c
	if c.rank != root {
		r, err := x.irecv(root, recv)
		if err != nil {
			return err
		}
		want := -1
		if exact {
			want = len(recv)
		}
		return x.waitRecv(r, root, want)
	}
	var pd pending
	for i := range c.size {
		if i == root {
			continue
		}
		if err := x.postSend(&pd, i, send[displs[i]:displs[i]+counts[i]]); err != nil {
			x.waitAll(&pd)
			return err
		}
	}
	copy(recv, send[displs[root]:displs[root]+counts[root]])
	return x.waitAll(&pd)
}

// allgatherv gathers counts[i] bytes of every rank i at displs[i] of
// every rank's recv; send is this rank's contribution (it may be this
// rank's block of recv).
func (x *cx) allgatherv(send, recv []byte, counts, displs []int) error {
	c := x.c
	p, r := c.size, c.rank
	copy(recv[displs[r]:displs[r]+counts[r]], send)
	if p == 1 {
		return nil
	}
	total := 0
	for _, k := range counts {
		total += k
	}
	if crowded(p) && total < tune.allgatherLong {
		// Gather to rank 0 (linear: the blocks land in place), broadcast
		// the packed blocks.
		return x.allgathervTree(send, recv, counts, displs, total)
	}
	if total >= tune.allgatherLong {
		return x.ringAllgather(recv, blocks{off: displs, size: counts})
	}
	// Bruck: tmp holds the blocks of ranks r, r+1, ... (mod p) packed.
	tmp, h := getTmp(total)
	defer putTmp(h)
	toff := make([]int, p+1)
	for i := range p {
		toff[i+1] = toff[i] + counts[(r+i)%p]
	}
	copy(tmp, send)
	for d := 1; d < p; d <<= 1 {
		cnt := min(d, p-d)
		if err := x.sendrecv((r-d+p)%p, tmp[:toff[cnt]], (r+d)%p, tmp[toff[d]:toff[d+cnt]]); err != nil {
			return err
		}
	}
	for i := 1; i < p; i++ {
		j := (r + i) % p
		copy(recv[displs[j]:displs[j]+counts[j]], tmp[toff[i]:toff[i+1]])
	}
	return nil
}

// allgathervTree: binomial gather of the packed blocks to rank 0, then a
// broadcast of them.
func (x *cx) allgathervTree(send, recv []byte, counts, displs []int, total int) error {
	p, r := x.c.size, x.c.rank
	tmp, h := getTmp(total)
	defer putTmp(h)
	off := make([]int, p+1)
	for i := range p {
		off[i+1] = off[i] + counts[i]
	}
	// Node r (tree rooted at 0) holds ranks [r, r+min(lowbit(r), p-r)).
	copy(tmp[off[r]:off[r+1]], send)
	for mask := 1; mask < p; mask <<= 1 {
		if r&mask != 0 {
			if err := x.send(r-mask, tmp[off[r]:off[min(r+mask, p)]]); err != nil {
				return err
			}
			break
		}
		if child := r + mask; child < p {
			if err := x.recv(child, tmp[off[child]:off[min(child+mask, p)]]); err != nil {
				return err
			}
		}
	}
	if err := x.phase2().bcast(tmp, 0); err != nil {
		return err
	}
	for j := range p {
		if j != r {
			copy(recv[displs[j]:displs[j]+counts[j]], tmp[off[j]:off[j+1]])
		}
	}
	return nil
}

// alltoallViaRoot is Alltoall for small blocks on a crowded host: gather
// every send buffer at rank 0, transpose, scatter. Two message hops instead
// of p-1 concurrent exchanges per rank, which on a host with more ranks than
// cores costs fewer process wake-ups (measured at np 16 on 2 cores).
func (x *cx) alltoallViaRoot(send, recv []byte, bn int) error {
	c := x.c
	p := c.size
	var all, tr []byte
	if c.rank == 0 {
		a, ha := getTmp(p * p * bn)
		t, ht := getTmp(p * p * bn)
		defer putTmp(ha)
		defer putTmp(ht)
		all, tr = a, t
	}
	if err := x.gather(send[:p*bn], all, 0); err != nil {
		return err
	}
	if c.rank == 0 {
		for i := range p { // source
			for j := range p { // destination
				copy(tr[(j*p+i)*bn:(j*p+i+1)*bn], all[(i*p+j)*bn:(i*p+j+1)*bn])
			}
		}
	}
	return x.phase2().scatter(tr, recv[:p*bn], 0)
}

// alltoallv: block j of send (scounts[j] bytes at sdispls[j]) goes to rank
// j, which stores it at rdispls[r] of its recv.
func (x *cx) alltoallv(send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int, pairwise bool) error {
	c := x.c
	p, r := c.size, c.rank
	sendTotal := 0
	for j := range p {
		sendTotal = max(sendTotal, sdispls[j]+scounts[j])
	}
	if overlap(send[:sendTotal], recv) { // in place: keep the outgoing data
		tmp, h := getTmp(sendTotal)
		defer putTmp(h)
		copy(tmp, send[:sendTotal])
		send = tmp
	}
	copy(recv[rdispls[r]:rdispls[r]+rcounts[r]], send[sdispls[r]:sdispls[r]+scounts[r]])
	if p == 1 {
		return nil
	}
	if pairwise {
		for i := 1; i < p; i++ {
			dst, src := (r+i)%p, (r-i+p)%p
			if err := x.sendrecv(dst, send[sdispls[dst]:sdispls[dst]+scounts[dst]], src, recv[rdispls[src]:rdispls[src]+rcounts[src]]); err != nil {
				return err
			}
		}
		return nil
	}
	pd := pending{reqs: make([]*p2p.Req, 0, 2*p), peers: make([]int, 0, 2*p), want: make([]int, 0, 2*p)}
	for i := 1; i < p; i++ {
		src := (r - i + p) % p
		if err := x.postRecv(&pd, src, recv[rdispls[src]:rdispls[src]+rcounts[src]], true); err != nil {
			x.cancelAll(&pd)
			return err
		}
	}
	for i := 1; i < p; i++ {
		dst := (r + i) % p
		if err := x.postSend(&pd, dst, send[sdispls[dst]:sdispls[dst]+scounts[dst]]); err != nil {
			x.cancelAll(&pd)
			return err
		}
	}
	return x.waitAll(&pd)
}

// reduceScatter: block i (counts[i] bytes, packed) of the reduction ends in
// rank i's recv.
func (x *cx) reduceScatter(send, recv []byte, counts []int, red redFn, commutative bool) error {
	c := x.c
	p, r := c.size, c.rank
	bl := blocks{off: make([]int, p), size: counts}
	total := 0
	for i, k := range counts {
		bl.off[i] = total
		total += k
	}
	if p == 1 {
		copy(recv[:counts[0]], send)
		return nil
	}
	work, h := getTmp(total)
	defer putTmp(h)
	if commutative && total >= tune.redscatLong {
		copy(work, send[:total])
		if err := x.ringReduceScatter(work, bl, red); err != nil {
			return err
		}
		copy(recv[:counts[r]], bl.of(work, r))
		return nil
	}
	if err := x.reduce(send[:total], work, 0, red, commutative); err != nil {
		return err
	}
	return x.phase2().scatterv(work, recv[:counts[r]], counts, bl.off, 0, true)
}

// scan: recursive doubling; recv of rank r gets x_0 ∘ ... ∘ x_r
// (inclusive) or x_0 ∘ ... ∘ x_(r-1) (exclusive; rank 0's recv is left
// untouched).
func (x *cx) scan(send, recv []byte, red redFn, commutative, exclusive bool) error {
	c := x.c
	p, r, n := c.size, c.rank, len(send)
	recv = recv[:n]
	if n == 0 {
		return nil
	}
	partial, h1 := getTmp(n)
	defer putTmp(h1)
	tmp, h2 := getTmp(n)
	defer putTmp(h2)
	copy(partial, send)
	if !exclusive {
		copy(recv, send)
	}
	have := !exclusive // recv holds a value
	for mask := 1; mask < p; mask <<= 1 {
		dst := r ^ mask
		if dst >= p {
			continue
		}
		if err := x.sendrecv(dst, partial, dst, tmp); err != nil {
			return err
		}
		if dst < r { // tmp is the reduction of a lower rank range
			if have {
				red(tmp, recv)
			} else {
				copy(recv, tmp)
				have = true
			}
			red(tmp, partial)
		} else if commutative {
			red(tmp, partial)
		} else {
			red(partial, tmp)
			partial, tmp = tmp, partial
		}
	}
	return nil
}
