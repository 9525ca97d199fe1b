package coll

// The algorithms, on byte views of typed buffers. Every function is
// written so that send and receive buffers may alias in the ways package
// mpi documents as "in place". Errors are the Net's, returned as they are.
//
// Switch points (bytes; p processes, n bytes per member's contribution):
//
//	Barrier            dissemination, ceil(log2 p) rounds; crowded: flat (p <= flatMaxP) or binomial fan-in + fan-out
//	Bcast              n >= bcastLong and p >= bcastMinP, not crowded: binomial scatter + ring allgather;
//	                   crowded, one host and n >= bcastFlatMin: flat (root to all); else binomial tree
//	Reduce             binomial tree, reduced in place (non-commutative: rooted at 0 in rank order, then forwarded)
//	Allreduce          crowded: reduce + bcast; commutative, n >= allreduceLong and count >= p: ring
//	                   reduce-scatter + ring allgather; else recursive doubling with the non-power-of-two fold
//	Gather, Scatter    p*n <= gatherShort: binomial tree; else linear (direct to/from the root)
//	Gatherv, Scatterv  linear
//	Allgather(v)       total >= allgatherLong: ring; crowded: gather to 0 + bcast; else Bruck
//	Alltoall           crowded, p > 2 and p*p*block <= alltoallRoot: through member 0; else as Alltoallv
//	Alltoallv          largest block >= alltoallLong: pairwise exchange; else all requests posted at once
//	ReduceScatter      commutative and total >= redscatLong: ring; else reduce + scatterv
//	Scan, Exscan       recursive doubling, ceil(log2 p) rounds
//	Neighbor           (neighbourhood collectives, neighbor.go) every receive posted, then every send, then wait
const (
	bcastLong     = 64 << 10
	bcastMinP     = 4
	bcastFlatMin  = 1 << 20 // the shared-memory transport's smallest payload read from the sender's memory
	allreduceLong = 64 << 10
	gatherShort   = 32 << 10
	allgatherLong = 64 << 10
	alltoallLong  = 16 << 10
	alltoallRoot  = 64 << 10
	redscatLong   = 64 << 10
	flatMaxP      = 64
)

// On a crowded host (Set.Crowded) every process of a symmetric algorithm
// (dissemination, recursive doubling, Bruck) must be scheduled in each of
// its log p rounds, and trees, which send 2(p-1) messages in all and wake
// most processes once or twice, are several times faster for small
// messages despite their 2 log p depth.

func lowbit(v int) int { return v & -v }

// ceilPow2 is the smallest power of two >= p.
func ceilPow2(p int) int {
	m := 1
	for m < p {
		m <<= 1
	}
	return m
}

// Barrier: dissemination, ceil(log2 p) rounds of zero-byte exchanges; on
// a crowded host a binomial fan-in to rank 0 and fan-out.
func (s *Set) Barrier() error {
	p := s.N
	if p > 1 && s.Crowded {
		if p <= flatMaxP {
			return s.flatBarrier()
		}
		if err := s.fanIn(); err != nil {
			return err
		}
		return s.phase2().bcastBinomial(nil, 0)
	}
	for k := 1; k < p; k <<= 1 {
		if err := s.sendrecv((s.Me+k)%p, nil, (s.Me-k+p)%p, nil); err != nil {
			return err
		}
	}
	return nil
}

// flatBarrier: every rank notifies rank 0, which releases them all: two
// message hops, the fewest process wake-ups on a crowded host.
func (s *Set) flatBarrier() error {
	p, r := s.N, s.Me
	if r != 0 {
		if err := s.Send(0, nil); err != nil {
			return err
		}
		return s.phase2().recv(0, nil)
	}
	var pd pending
	for i := 1; i < p; i++ {
		if err := s.postRecv(&pd, i, nil, true); err != nil {
			s.cancelAll(&pd)
			return err
		}
	}
	if err := s.waitAll(&pd); err != nil {
		return err
	}
	s2 := s.phase2()
	for i := 1; i < p; i++ {
		if err := s2.postSend(&pd, i, nil); err != nil {
			s2.waitAll(&pd)
			return err
		}
	}
	return s2.waitAll(&pd)
}

// fanIn: zero-byte binomial gather to rank 0.
func (s *Set) fanIn() error {
	p, r := s.N, s.Me
	for mask := 1; mask < p; mask <<= 1 {
		if r&mask != 0 {
			return s.Send(r-mask, nil)
		}
		if r+mask < p {
			if err := s.recv(r+mask, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bcast broadcasts buf from root.
func (s *Set) Bcast(buf []byte, root int) error {
	p := s.N
	if p == 1 || len(buf) == 0 {
		return nil
	}
	if len(buf) >= bcastLong && p >= bcastMinP && !s.Crowded {
		return s.bcastScatterRing(buf, root)
	}
	if s.Crowded && s.OneHost && len(buf) >= bcastFlatMin {
		return s.bcastFlat(buf, root)
	}
	return s.bcastBinomial(buf, root)
}

// bcastFlat: the root sends the whole buffer to every other member at
// once. On one crowded host, where a large message is read straight from
// the root's memory (process_vm_readv), every member is woken once and
// copies once, where a binomial tree chains ceil(log2 p) wake-ups, each
// after a whole message's copy.
func (s *Set) bcastFlat(buf []byte, root int) error {
	if s.Me != root {
		return s.recv(root, buf)
	}
	var pd pending
	pd.reqs, pd.peers, pd.want = make([]Req, 0, s.N), make([]int, 0, s.N), make([]int, 0, s.N)
	for i := range s.N {
		if i == root {
			continue
		}
		if err := s.postSend(&pd, i, buf); err != nil {
			s.waitAll(&pd)
			return err
		}
	}
	return s.waitAll(&pd)
}

// bcastBinomial: binomial tree rooted at root, ceil(log2 p) rounds.
func (s *Set) bcastBinomial(buf []byte, root int) error {
	p, r := s.N, s.Me
	vr := (r - root + p) % p
	mask := 1
	for mask < p {
		if vr&mask != 0 {
			if err := s.recv((r-mask+p)%p, buf); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	var pd pending
	for mask >>= 1; mask > 0; mask >>= 1 {
		if vr+mask < p {
			if err := s.postSend(&pd, (r+mask)%p, buf); err != nil {
				s.waitAll(&pd)
				return err
			}
		}
	}
	return s.waitAll(&pd)
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
func (s *Set) bcastScatterRing(buf []byte, root int) error {
	p, r, n := s.N, s.Me, len(buf)
	vr := (r - root + p) % p
	rng := func(v, cnt int) (int, int) { // bytes of chunks [v, v+cnt) (relative)
		lo, _ := chunk(n, p, s.ESize, v)
		_, hi := chunk(n, p, s.ESize, min(v+cnt, p)-1)
		return lo, max(lo, hi)
	}
	mask := 1
	for mask < p {
		if vr&mask != 0 {
			lo, hi := rng(vr, min(mask, p-vr))
			if err := s.recv((r-mask+p)%p, buf[lo:hi]); err != nil {
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
			if err := s.postSend(&pd, (r+mask)%p, buf[lo:hi]); err != nil {
				s.waitAll(&pd)
				return err
			}
		}
	}
	if err := s.waitAll(&pd); err != nil {
		return err
	}
	// Ring allgather of the chunks, in relative numbering.
	right, left := (r+1)%p, (r-1+p)%p
	for st := 0; st < p-1; st++ {
		sj, rj := (vr-st+p)%p, (vr-st-1+p)%p
		slo, shi := chunk(n, p, s.ESize, sj)
		rlo, rhi := chunk(n, p, s.ESize, rj)
		if err := s.sendrecv(right, buf[slo:shi], left, buf[rlo:rhi]); err != nil {
			return err
		}
	}
	return nil
}

// Reduce combines send of every rank into recv at root, in rank order
// (binomial tree; for non-commutative ops the tree is rooted at rank 0
// and the result forwarded to root). recv is used at root only.
func (s *Set) Reduce(send, recv []byte, root int, red ReduceFn, commutative bool) error {
	p, r, n := s.N, s.Me, len(send)
	if p == 1 {
		copy(recv, send)
		return nil
	}
	if n == 0 {
		return nil
	}
	if commutative {
		var w []byte
		if r == root {
			w = recv[:n]
		}
		return s.reduceComm(send, w, root, red)
	}
	troot := 0 // non-commutative: rank order from a tree rooted at 0
	vr := (r - troot + p) % p
	acc := send // read-only until replaced by a temporary
	var t1, t2 []byte
	var h1, h2 *tmpBuf
	defer func() { putTmp(h1); putTmp(h2) }()
	for mask := 1; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			if err := s.Send((r-mask+p)%p, acc); err != nil {
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
		if err := s.recv((child+troot)%p, in); err != nil {
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
		return s.phase2().Send(root, acc) // non-commutative: rank 0 forwards
	}
	if r == root { // non-commutative, root != 0
		return s.phase2().recv(0, recv[:n])
	}
	return nil
}

// reduceComm is Reduce for a commutative operation: a binomial tree rooted
// at root whose partial results accumulate in place, with no copy of the
// data. w (n writable bytes, or nil) is where this member may accumulate:
// the root must pass its result buffer, which may alias send (in place:
// it holds this member's contribution); a member that passes nil
// accumulates in a pooled buffer. The first child's message is received
// into the accumulator's buffer and send is reduced into it (acc = send ∘
// in); every later child's message is reduced from the buffer it was
// received into straight into the accumulator (acc = in ∘ acc). A step
// costs one receive and one pass of the operation; a member holds at most
// two pooled buffers; a leaf sends send itself.
func (s *Set) reduceComm(send, w []byte, root int, red ReduceFn) error {
	p, r, n := s.N, s.Me, len(send)
	vr := (r - root + p) % p
	var acc []byte // nil until this member holds a writable partial result
	if sameStart(w, send) {
		acc = w
	}
	var in []byte
	var hIn, hAcc *tmpBuf
	defer func() { putTmp(hIn); putTmp(hAcc) }()
	for mask := 1; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			out := acc
			if out == nil {
				out = send
			}
			return s.Send((r-mask+p)%p, out)
		}
		child := vr + mask
		if child >= p {
			continue
		}
		from := (child + root) % p
		if acc == nil { // the first child's message lands where the result accumulates
			if w != nil {
				acc = w[:n]
			} else {
				acc, hAcc = getTmp(n)
			}
			if err := s.recv(from, acc); err != nil {
				return err
			}
			red(send, acc)
			continue
		}
		if in == nil {
			in, hIn = getTmp(n)
		}
		if err := s.recv(from, in); err != nil {
			return err
		}
		red(in, acc)
	}
	return nil
}

// sameStart reports whether a and b start at the same byte.
func sameStart(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// Allreduce combines send of every rank into recv of every rank.
func (s *Set) Allreduce(send, recv []byte, red ReduceFn, commutative bool) error {
	p, n := s.N, len(send)
	recv = recv[:n]
	if p > 1 && n > 0 && s.Crowded {
		// Binomial reduce to rank 0 (rank order kept) and broadcast, which
		// overwrites recv: a commutative reduction accumulates in recv at
		// every member, and no member copies send into it.
		var err error
		if commutative {
			err = s.reduceComm(send, recv, 0, red)
		} else {
			err = s.Reduce(send, recv, 0, red, commutative)
		}
		if err != nil {
			return err
		}
		return s.phase2().Bcast(recv, 0)
	}
	if !sameStart(recv, send) {
		copy(recv, send)
	}
	if p == 1 || n == 0 {
		return nil
	}
	if commutative && n >= allreduceLong && n/s.ESize >= p {
		return s.allreduceRing(recv, red)
	}
	return s.allreduceRD(recv, red, commutative)
}

// allreduceRD: recursive doubling on the largest power of two pof2 <= p;
// the first 2*(p-pof2) ranks pair up first (even ranks hand their data to
// the odd neighbour and get the result back at the end). Rank order is
// kept: each of the pof2 participants stands for a contiguous rank range.
func (s *Set) allreduceRD(buf []byte, red ReduceFn, commutative bool) error {
	p, r, n := s.N, s.Me, len(buf)
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
			if err := s.Send(r+1, cur); err != nil {
				return err
			}
			newrank = -1
		} else {
			if err := s.recv(r-1, tmp); err != nil {
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
			if err := s.sendrecv(dst, cur, dst, tmp); err != nil {
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
			if err := s.Send(r-1, cur); err != nil {
				return err
			}
		} else if err := s.recv(r+1, cur); err != nil {
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
	for _, sz := range b.size {
		m = max(m, sz)
	}
	return m
}

// ringReduceScatter: p-1 steps; afterwards block r of work holds the
// reduction of every rank's block r (commutative ops only).
func (s *Set) ringReduceScatter(work []byte, bl blocks, red ReduceFn) error {
	p, r := s.N, s.Me
	tmp, h := getTmp(bl.maxSize())
	defer putTmp(h)
	right, left := (r+1)%p, (r-1+p)%p
	for st := 0; st < p-1; st++ {
		si, ri := (r-st-1+p)%p, (r-st-2+p)%p
		in := tmp[:bl.size[ri]]
		if err := s.sendrecv(right, bl.of(work, si), left, in); err != nil {
			return err
		}
		red(in, bl.of(work, ri))
	}
	return nil
}

// ringAllgather: p-1 steps; block r of buf is passed around the ring.
func (s *Set) ringAllgather(buf []byte, bl blocks) error {
	p, r := s.N, s.Me
	right, left := (r+1)%p, (r-1+p)%p
	for st := 0; st < p-1; st++ {
		si, ri := (r-st+p)%p, (r-st-1+p)%p
		if err := s.sendrecv(right, bl.of(buf, si), left, bl.of(buf, ri)); err != nil {
			return err
		}
	}
	return nil
}

// allreduceRing: ring reduce-scatter then ring allgather, 2(p-1)/p n bytes
// sent per rank.
func (s *Set) allreduceRing(buf []byte, red ReduceFn) error {
	bl := evenBlocks(len(buf), s.N, s.ESize)
	if err := s.ringReduceScatter(buf, bl, red); err != nil {
		return err
	}
	return s.phase2().ringAllgather(buf, bl)
}

// Gather collects n bytes from every rank into recv (p*n bytes) at root.
func (s *Set) Gather(send, recv []byte, root int) error {
	p, n := s.N, len(send)
	if p == 1 {
		copy(recv[:n], send)
		return nil
	}
	if GatherLinear(p, n) {
		counts, displs := equalBlocks(p, n)
		return s.Gatherv(send, recv, counts, displs, root)
	}
	return s.GatherTree(send, recv, root)
}

// GatherTree collects n bytes from every member into recv (p*n bytes, in
// member order) at root over a binomial tree: node vr (relative to the
// root) collects the blocks of relative ranks [vr, vr+min(lowbit(vr),
// p-vr)) in relative order.
func (s *Set) GatherTree(send, recv []byte, root int) error {
	p, r, n := s.N, s.Me, len(send)
	vr := (r - root + p) % p
	if vr&1 == 1 {
		return s.Send((r-1+p)%p, send)
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
			return s.Send((r-mask+p)%p, buf[:min(mask, p-vr)*n])
		}
		child := vr + mask
		if child >= p {
			continue
		}
		cnt := min(mask, p-child)
		if err := s.recv((r+mask)%p, buf[mask*n:(mask+cnt)*n]); err != nil {
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

// Scatter sends block i (n bytes) of send at root to rank i's recv.
func (s *Set) Scatter(send, recv []byte, root int) error {
	p, r, n := s.N, s.Me, len(recv)
	if p == 1 {
		copy(recv, send[:n])
		return nil
	}
	if GatherLinear(p, n) {
		counts, displs := equalBlocks(p, n)
		return s.Scatterv(send, recv, counts, displs, root, true)
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
		if err := s.recv((r-mask+p)%p, buf[:sub*n]); err != nil {
			putTmp(h)
			return err
		}
	}
	defer putTmp(h)
	var pd pending
	for m := mask >> 1; m > 0; m >>= 1 {
		if child := vr + m; child < p {
			cnt := min(m, p-child)
			if err := s.postSend(&pd, (r+m)%p, buf[m*n:(m+cnt)*n]); err != nil {
				s.waitAll(&pd)
				return err
			}
		}
	}
	if n > 0 && &buf[0] != &recv[0] {
		copy(recv, buf[:n])
	}
	return s.waitAll(&pd)
}

// equalBlocks describes p blocks of n bytes packed in member order.
func equalBlocks(p, n int) (counts, displs []int) {
	counts, displs = make([]int, p), make([]int, p)
	for i := range p {
		counts[i], displs[i] = n, i*n
	}
	return counts, displs
}

// Gatherv: linear; root receives counts[i] bytes at displs[i] (bytes).
func (s *Set) Gatherv(send, recv []byte, counts, displs []int, root int) error {
	if s.Me != root {
		return s.Send(root, send)
	}
	var pd pending
	for i := range s.N {
		if i == root {
			continue
		}
		if err := s.postRecv(&pd, i, recv[displs[i]:displs[i]+counts[i]], true); err != nil {
			s.cancelAll(&pd)
			return err
		}
	}
	copy(recv[displs[root]:displs[root]+counts[root]], send)
	return s.waitAll(&pd)
}

// Scatterv: linear; rank i receives counts[i] bytes from displs[i] of
// send at root (exact is false when the receivers do not know the count).
func (s *Set) Scatterv(send, recv []byte, counts, displs []int, root int, exact bool) error {
	if s.Me != root {
		r, err := s.irecv(root, recv)
		if err != nil {
			return err
		}
		want := -1
		if exact {
			want = len(recv)
		}
		_, err = s.waitRecv(r, root, want)
		return err
	}
	var pd pending
	for i := range s.N {
		if i == root {
			continue
		}
		if err := s.postSend(&pd, i, send[displs[i]:displs[i]+counts[i]]); err != nil {
			s.waitAll(&pd)
			return err
		}
	}
	copy(recv, send[displs[root]:displs[root]+counts[root]])
	return s.waitAll(&pd)
}

// Allgatherv gathers counts[i] bytes of every rank i at displs[i] of
// every rank's recv; send is this rank's contribution (it may be this
// rank's block of recv).
func (s *Set) Allgatherv(send, recv []byte, counts, displs []int) error {
	p, r := s.N, s.Me
	copy(recv[displs[r]:displs[r]+counts[r]], send)
	if p == 1 {
		return nil
	}
	total := 0
	for _, k := range counts {
		total += k
	}
	if s.Crowded && total < allgatherLong {
		// Gather to rank 0 (linear: the blocks land in place), broadcast
		// the packed blocks.
		return s.allgathervTree(send, recv, counts, displs, total)
	}
	if total >= allgatherLong {
		return s.ringAllgather(recv, blocks{off: displs, size: counts})
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
		if err := s.sendrecv((r-d+p)%p, tmp[:toff[cnt]], (r+d)%p, tmp[toff[d]:toff[d+cnt]]); err != nil {
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
func (s *Set) allgathervTree(send, recv []byte, counts, displs []int, total int) error {
	p, r := s.N, s.Me
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
			if err := s.Send(r-mask, tmp[off[r]:off[min(r+mask, p)]]); err != nil {
				return err
			}
			break
		}
		if child := r + mask; child < p {
			if err := s.recv(child, tmp[off[child]:off[min(child+mask, p)]]); err != nil {
				return err
			}
		}
	}
	if err := s.phase2().Bcast(tmp, 0); err != nil {
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
func (s *Set) alltoallViaRoot(send, recv []byte, bn int) error {
	p := s.N
	var all, tr []byte
	if s.Me == 0 {
		a, ha := getTmp(p * p * bn)
		t, ht := getTmp(p * p * bn)
		defer putTmp(ha)
		defer putTmp(ht)
		all, tr = a, t
	}
	if err := s.Gather(send[:p*bn], all, 0); err != nil {
		return err
	}
	if s.Me == 0 {
		for i := range p { // source
			for j := range p { // destination
				copy(tr[(j*p+i)*bn:(j*p+i+1)*bn], all[(i*p+j)*bn:(i*p+j+1)*bn])
			}
		}
	}
	return s.phase2().Scatter(tr, recv[:p*bn], 0)
}

// Alltoall sends block j (bn bytes) of send to member j, which stores it
// as block Me of its recv.
func (s *Set) Alltoall(send, recv []byte, bn int) error {
	p := s.N
	if p > 2 && bn > 0 && s.Crowded && p*p*bn <= alltoallRoot {
		return s.alltoallViaRoot(send, recv, bn)
	}
	counts, displs := equalBlocks(p, bn)
	return s.Alltoallv(send, counts, displs, recv, counts, displs)
}

// Alltoallv sends block j of send (scounts[j] bytes at sdispls[j]) to
// member j, which stores it at rdispls[Me] of its recv. The largest block
// sent decides the algorithm; for a choice every member agrees on, the
// blocks must be alike (Alltoall) or the counts known to every member.
func (s *Set) Alltoallv(send []byte, scounts, sdispls []int, recv []byte, rcounts, rdispls []int) error {
	p, r := s.N, s.Me
	sendTotal, maxBlock := 0, 0
	for j := range p {
		sendTotal = max(sendTotal, sdispls[j]+scounts[j])
		maxBlock = max(maxBlock, scounts[j])
	}
	pairwise := AlltoallPairwise(maxBlock)
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
			if err := s.sendrecv(dst, send[sdispls[dst]:sdispls[dst]+scounts[dst]], src, recv[rdispls[src]:rdispls[src]+rcounts[src]]); err != nil {
				return err
			}
		}
		return nil
	}
	pd := pending{reqs: make([]Req, 0, 2*p), peers: make([]int, 0, 2*p), want: make([]int, 0, 2*p)}
	for i := 1; i < p; i++ {
		src := (r - i + p) % p
		if err := s.postRecv(&pd, src, recv[rdispls[src]:rdispls[src]+rcounts[src]], true); err != nil {
			s.cancelAll(&pd)
			return err
		}
	}
	for i := 1; i < p; i++ {
		dst := (r + i) % p
		if err := s.postSend(&pd, dst, send[sdispls[dst]:sdispls[dst]+scounts[dst]]); err != nil {
			s.cancelAll(&pd)
			return err
		}
	}
	return s.waitAll(&pd)
}

// ReduceScatter: block i (counts[i] bytes, packed) of the reduction ends in
// rank i's recv.
func (s *Set) ReduceScatter(send, recv []byte, counts []int, red ReduceFn, commutative bool) error {
	p, r := s.N, s.Me
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
	if commutative && total >= redscatLong {
		copy(work, send[:total])
		if err := s.ringReduceScatter(work, bl, red); err != nil {
			return err
		}
		copy(recv[:counts[r]], bl.of(work, r))
		return nil
	}
	if err := s.Reduce(send[:total], work, 0, red, commutative); err != nil {
		return err
	}
	return s.phase2().Scatterv(work, recv[:counts[r]], counts, bl.off, 0, true)
}

// Scan: recursive doubling; recv of rank r gets x_0 ∘ ... ∘ x_r
// (inclusive) or x_0 ∘ ... ∘ x_(r-1) (exclusive; rank 0's recv is left
// untouched).
func (s *Set) Scan(send, recv []byte, red ReduceFn, commutative, exclusive bool) error {
	p, r, n := s.N, s.Me, len(send)
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
		if err := s.sendrecv(dst, partial, dst, tmp); err != nil {
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
