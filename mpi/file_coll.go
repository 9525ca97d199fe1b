package mpi

import (
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sort"
)

// Collective data access (MPI-4.1 14.4.3-14.4.5) by two-phase I/O, as
// ROMIO does it: a few aggregator processes each own a contiguous domain
// of the range of file bytes the call touches; every process sends the
// pieces of its data that fall in a domain to that domain's aggregator,
// which writes them as large contiguous runs (for reads: reads its domain
// in one piece and sends every process its pieces). Many small strided
// pieces of many processes become a few large writes. Aggregators: cb_nodes
// (an info hint) evenly spaced over the participating processes, else the
// first participating process of every host. A domain larger than
// cb_buffer_size (16 MiB by default) is handled in rounds of that size, so
// an aggregator holds at most that much at a time. When the processes'
// file ranges do not interleave (a block per process), every process
// accesses its own range directly, as ROMIO does: aggregation would only
// add copies.
//
// Every exchange is a collective on the handle's private communicator:
// under run-through, recognised failed processes take no part (seed 003
// 17.12.4: they neither read nor write, and are not aggregators); under
// ULFM, a failure during the call raises ErrProcFailed where it cuts an
// exchange (seed 002 A.2.5), and the file contents of the call are then
// undefined. An I/O error at an aggregator is reported at every process
// (a last exchange of error flags).

// piece is a fragment of a process's data in one round's domain of one
// aggregator: file range and position in the process's buffer.
type piece struct {
	off, n int64
	at     int64 // offset in the buffer
	round  int
	agg    int // index of the aggregator
}

// plan is the layout of one collective call: domains and rounds.
type plan struct {
	aggs     []int // ranks of the aggregators
	lo, hi   int64 // the file range touched by the call
	dom, buf int64 // domain size, bytes per round
	rounds   int
	// interleaved: the processes' file ranges overlap. If not (a block per
	// process, say), every process accesses its own range directly, as
	// ROMIO does: aggregation would only add copies.
	interleaved bool
}

// interleaved reports whether the [lo, hi) ranges of the live rows with
// data overlap.
func interleaved(rows [][]int64, live []bool) bool {
	type rng struct{ lo, hi int64 }
	var rs []rng
	for r, row := range rows {
		if live[r] && row[1] > row[0] {
			rs = append(rs, rng{row[0], row[1]})
		}
	}
	slices.SortFunc(rs, func(a, b rng) int { return int(a.lo - b.lo) })
	for i := 1; i < len(rs); i++ {
		if rs[i].lo < rs[i-1].hi {
			return true
		}
	}
	return false
}

// window is aggregator a's file range in round k.
func (p *plan) window(a, k int) (int64, int64) {
	start := p.lo + int64(a)*p.dom
	lo := start + int64(k)*p.buf
	hi := min(start+p.dom, lo+p.buf, p.hi)
	return lo, max(lo, hi)
}

// split cuts the extents into pieces at domain and round boundaries.
func (p *plan) split(exts []fext) []piece {
	var out []piece
	at := int64(0)
	for _, e := range exts {
		off, n := e.off, e.n
		for n > 0 {
			rel := off - p.lo
			a := int(rel / p.dom)
			k := int((rel - int64(a)*p.dom) / p.buf)
			_, whi := p.window(a, k)
			m := min(n, whi-off)
			out = append(out, piece{off: off, n: m, at: at, round: k, agg: a})
			off += m
			n -= m
			at += m
		}
	}
	return out
}

// hostName is the host of world rank p as the launcher told ("" under Run
// and when unknown).
func (h *hostTable) hostName(p int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p < 0 || p >= len(h.host) {
		return ""
	}
	return h.host[p]
}

// makePlan computes the plan from every rank's (lo, hi) row; the same at
// every process. nil: the call touches no byte.
func (f *File) makePlan(rows [][]int64, live []bool) *plan {
	p := &plan{lo: -1}
	var alive []int
	for r, row := range rows {
		if !live[r] {
			continue
		}
		alive = append(alive, r)
		if row[1] > row[0] {
			if p.lo < 0 || row[0] < p.lo {
				p.lo = row[0]
			}
			p.hi = max(p.hi, row[1])
		}
	}
	if p.lo < 0 {
		return nil
	}
	f.mu.Lock()
	nodes, buf := f.cbNodes, f.cbBuf
	f.mu.Unlock()
	if nodes > 0 {
		nodes = min(nodes, len(alive))
		for i := range nodes {
			p.aggs = append(p.aggs, alive[i*len(alive)/nodes])
		}
	} else {
		var seen []string
		for _, r := range alive {
			h := f.c.w.hosts.hostName(f.c.worldRank(r))
			if !slices.Contains(seen, h) {
				seen = append(seen, h)
				p.aggs = append(p.aggs, r)
			}
		}
	}
	p.interleaved = interleaved(rows, live)
	na := int64(len(p.aggs))
	p.dom = (p.hi - p.lo + na - 1) / na
	p.buf = min(buf, p.dom)
	p.rounds = int((p.dom + p.buf - 1) / p.buf)
	return p
}

func putI64(b []byte, v int64) { binary.LittleEndian.PutUint64(b, uint64(v)) }
func getI64(b []byte) int64    { return int64(binary.LittleEndian.Uint64(b)) }

// xbuf is the scratch of one collective call's exchanges: a flat send
// buffer with per-rank counts, reused across rounds.
type xbuf struct {
	sbuf, rbuf     []byte
	scounts, sdisp []int
	rcounts, rdisp []int
	sc, rc         []int64
}

func newXbuf(n int) *xbuf {
	return &xbuf{scounts: make([]int, n), sdisp: make([]int, n), rcounts: make([]int, n), rdisp: make([]int, n),
		sc: make([]int64, n), rc: make([]int64, n)}
}

// layout sizes the send buffer from scounts (set by the caller) and
// returns it; sdisp[j] is where rank j's bytes go.
func (x *xbuf) layout() []byte {
	total := 0
	for j, c := range x.scounts {
		x.sdisp[j] = total
		total += c
	}
	if cap(x.sbuf) < total {
		x.sbuf = make([]byte, total)
	}
	x.sbuf = x.sbuf[:total]
	return x.sbuf
}

// exchange sends sbuf[sdisp[j]:][:scounts[j]] to rank j and returns what
// every rank sent here: rank j's bytes are from(j) (an alltoall of the
// sizes, an alltoallv of the bytes).
func (f *File) exchange(op string, x *xbuf) (from func(j int) []byte, err error) {
	for j, c := range x.scounts {
		x.sc[j], x.rc[j] = int64(c), 0
	}
	run, err := alltoallPrep(f.c, op, x.sc, x.rc)
	if err == nil {
		err = run()
	}
	if err != nil {
		return nil, f.ferr(err)
	}
	total := 0
	for j := range x.rc {
		x.rcounts[j], x.rdisp[j] = int(x.rc[j]), total
		total += x.rcounts[j]
	}
	if cap(x.rbuf) < total {
		x.rbuf = make([]byte, total)
	}
	x.rbuf = x.rbuf[:total]
	run, err = alltoallvPrep(f.c, op, x.sbuf, x.scounts, x.sdisp, x.rbuf, x.rcounts, x.rdisp)
	if err == nil {
		err = run()
	}
	if err != nil {
		return nil, f.ferr(err)
	}
	return func(j int) []byte { return x.rbuf[x.rdisp[j] : x.rdisp[j]+x.rcounts[j]] }, nil
}

// collPlan runs the first exchange of a collective access (each rank's
// file range) and returns the plan and this process's extents.
func (f *File) collPlan(op string, v *fileView, l, n int64) (*plan, []fext, error) {
	exts := v.extents(nil, l, n)
	lo, hi := int64(0), int64(0)
	for i, e := range exts { // ascending but for a read-only view's overlaps
		if i == 0 || e.off < lo {
			lo = e.off
		}
		hi = max(hi, e.off+e.n)
	}
	rows, live, err := f.together(op, lo, hi)
	if err != nil {
		return nil, nil, err
	}
	return f.makePlan(rows, live), exts, nil
}

// writeAll is the two-phase collective write of b at view bytes l on, in
// the view's data representation.
func (f *File) writeAll(op string, v *fileView, l int64, b []byte) error {
	return f.writeAllRaw(op, v, l, v.toFile(b))
}

func (f *File) writeAllRaw(op string, v *fileView, l int64, b []byte) error {
	p, exts, err := f.collPlan(op, v, l, int64(len(b)))
	if err != nil || p == nil {
		return err
	}
	if !p.interleaved {
		return f.errFlag(op, f.pwriteRaw(op, v, l, b))
	}
	pieces := p.split(exts)
	me := slices.Index(p.aggs, f.c.rank)
	var lerr error
	var wb []byte
	var got []fext
	x := newXbuf(f.c.size)
	cnt, at := make([]int, f.c.size), make([]int, f.c.size)
	for k := 0; k < p.rounds; k++ {
		// This round's pieces per aggregator: [count, (off, n)..., data].
		clear(cnt)
		clear(x.scounts)
		for _, pc := range pieces {
			if pc.round == k {
				r := p.aggs[pc.agg]
				cnt[r]++
				x.scounts[r] += 16 + int(pc.n)
			}
		}
		for r, c := range cnt {
			if c > 0 {
				x.scounts[r] += 8
			}
		}
		sbuf := x.layout()
		for r, c := range cnt {
			if c > 0 {
				putI64(sbuf[x.sdisp[r]:], int64(c))
				at[r] = x.sdisp[r] + 8 + 16*c // the data follow the (off, n) pairs
			}
		}
		meta := slices.Clone(x.sdisp)
		for r := range meta {
			meta[r] += 8
		}
		for _, pc := range pieces {
			if pc.round != k {
				continue
			}
			r := p.aggs[pc.agg]
			putI64(sbuf[meta[r]:], pc.off)
			putI64(sbuf[meta[r]+8:], pc.n)
			meta[r] += 16
			at[r] += copy(sbuf[at[r]:], b[pc.at:pc.at+pc.n])
		}
		from, err := f.exchange(op, x)
		if err != nil {
			return err
		}
		if me < 0 || lerr != nil {
			continue
		}
		wlo, whi := p.window(me, k)
		if cap(wb) < int(whi-wlo) {
			wb = make([]byte, whi-wlo)
		}
		wb = wb[:whi-wlo]
		got = got[:0]
		for j := range f.c.size {
			m := from(j)
			if len(m) == 0 {
				continue
			}
			cnt := int(getI64(m))
			data := m[8+16*cnt:]
			for q := range cnt {
				off, n := getI64(m[8+16*q:]), getI64(m[16+16*q:])
				copy(wb[off-wlo:], data[:n])
				data = data[n:]
				got = append(got, fext{off, n})
			}
		}
		lerr = f.writeRuns(op, wb, wlo, got)
	}
	return f.errFlag(op, lerr)
}

// writeRuns writes the parts of wb (file bytes from wlo on) covered by
// got, one write per maximal contiguous run.
func (f *File) writeRuns(op string, wb []byte, wlo int64, got []fext) error {
	if len(got) == 0 {
		return nil
	}
	sort.Slice(got, func(i, j int) bool { return got[i].off < got[j].off })
	unlock := f.lockData(true)
	defer unlock()
	start, end := got[0].off, got[0].off+got[0].n
	flush := func() error {
		if _, err := f.fd.WriteAt(wb[start-wlo:end-wlo], start); err != nil {
			return fileErr(op, f.name, err)
		}
		return nil
	}
	for _, g := range got[1:] {
		if g.off > end {
			if err := flush(); err != nil {
				return err
			}
			start = g.off
		}
		end = max(end, g.off+g.n)
	}
	return flush()
}

// readAll is the two-phase collective read into b from view bytes l on;
// it returns the bytes read before the end of the file, converted from the
// view's data representation.
func (f *File) readAll(op string, v *fileView, l int64, b []byte) (int, error) {
	n, err := f.readAllRaw(op, v, l, b)
	v.fromFile(b[:n])
	return n, err
}

func (f *File) readAllRaw(op string, v *fileView, l int64, b []byte) (int, error) {
	p, exts, err := f.collPlan(op, v, l, int64(len(b)))
	if err != nil || p == nil {
		return 0, err
	}
	if !p.interleaved {
		n, lerr := f.preadRaw(op, v, l, b)
		return n, f.errFlag(op, lerr)
	}
	pieces := p.split(exts)
	me := slices.Index(p.aggs, f.c.rank)
	var lerr error
	var wb []byte
	x := newXbuf(f.c.size)
	at := make([]int, f.c.size)
	for k := 0; k < p.rounds; k++ {
		// Requests: [(off, n)...] per aggregator.
		clear(x.scounts)
		for _, pc := range pieces {
			if pc.round == k {
				x.scounts[p.aggs[pc.agg]] += 16
			}
		}
		sbuf := x.layout()
		copy(at, x.sdisp)
		for _, pc := range pieces {
			if pc.round == k {
				r := p.aggs[pc.agg]
				putI64(sbuf[at[r]:], pc.off)
				putI64(sbuf[at[r]+8:], pc.n)
				at[r] += 16
			}
		}
		from, err := f.exchange(op, x)
		if err != nil {
			return 0, err
		}
		// The replies: the requested pieces, in request order.
		clear(x.scounts)
		lo, hi := int64(-1), int64(0)
		if me >= 0 {
			for j := range f.c.size {
				m := from(j)
				for q := 0; q+16 <= len(m); q += 16 {
					off, n := getI64(m[q:]), getI64(m[q+8:])
					if lo < 0 || off < lo {
						lo = off
					}
					hi = max(hi, off+n)
					x.scounts[j] += int(n)
				}
			}
			// Read the span of the requests in one piece (data sieving).
			if lo >= 0 && lerr == nil {
				if cap(wb) < int(hi-lo) {
					wb = make([]byte, hi-lo)
				}
				wb = wb[:hi-lo]
				unlock := f.lockData(false)
				n, err := f.fd.ReadAt(wb, lo)
				unlock()
				clear(wb[n:])
				if err != nil && !errors.Is(err, io.EOF) {
					lerr = fileErr(op, f.name, err)
				}
			}
		}
		reqs := slices.Clone(x.rbuf[:len(x.rbuf)])
		rdisp, rcounts := slices.Clone(x.rdisp), slices.Clone(x.rcounts)
		sbuf = x.layout()
		for j := range f.c.size {
			m := reqs[rdisp[j] : rdisp[j]+rcounts[j]]
			o := x.sdisp[j]
			for q := 0; q+16 <= len(m); q += 16 {
				off, n := getI64(m[q:]), getI64(m[q+8:])
				o += copy(sbuf[o:], wb[off-lo:off-lo+n])
			}
		}
		from, err = f.exchange(op, x)
		if err != nil {
			return 0, err
		}
		for j := range at {
			at[j] = 0
		}
		for _, pc := range pieces {
			if pc.round == k {
				r := p.aggs[pc.agg]
				at[r] += copy(b[pc.at:pc.at+pc.n], from(r)[at[r]:])
			}
		}
	}
	if err := f.errFlag(op, lerr); err != nil {
		return 0, err
	}
	st, err := f.fd.Stat()
	if err != nil {
		return 0, f.handle(fileErr(op, f.name, err))
	}
	return validBytes(exts, st.Size()), nil
}

// validBytes is how many bytes of the extents (in order) lie before the
// end of the file at size.
func validBytes(exts []fext, size int64) int {
	n := int64(0)
	for _, e := range exts {
		if e.off+e.n > size {
			return int(n + max(0, size-e.off))
		}
		n += e.n
	}
	return int(n)
}

// WriteAtAll is the collective WriteAt (MPI_File_write_at_all): every
// process of the file calls it (with its own offset and buffer, possibly
// empty); the data go through the aggregators (two-phase I/O, see the top
// of file_coll.go). Under run-through the handle must be collectively
// active (seed 003 17.12.4).
func WriteAtAll[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_write_at_all"
	b, v, err := ioBufAt(f, op, buf, true, offset)
	if err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error { return f.writeAll(op, v, offset*v.esize, b) }))
}

// ReadAtAll is the collective ReadAt (MPI_File_read_at_all); it returns
// the number of whole elements read.
func ReadAtAll[T Elem](f *File, offset int64, buf []T) (int, error) {
	const op = "MPI_File_read_at_all"
	b, v, err := ioBufAt(f, op, buf, false, offset)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		var err error
		n, err = f.readAll(op, v, offset*v.esize, b)
		return err
	})
	return n / esizeOf[T](), f.handle(err)
}

// WriteAll is the collective Write at the individual file pointer
// (MPI_File_write_all): the pointer moves past buf.
func WriteAll[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_all"
	b, v, err := ioBufSeq(f, op, buf, true)
	if err != nil {
		return err
	}
	return f.handle(f.inOrder(op, func() error { return f.writeAll(op, v, f.take(v, int64(len(b))), b) }))
}

// ReadAll is the collective Read at the individual file pointer
// (MPI_File_read_all): the pointer moves past what was read.
func ReadAll[T Elem](f *File, buf []T) (int, error) {
	const op = "MPI_File_read_all"
	b, v, err := ioBufSeq(f, op, buf, false)
	if err != nil {
		return 0, err
	}
	var n int
	err = f.inOrder(op, func() error {
		var err error
		n, err = f.readAll(op, v, f.take(v, int64(len(b))), b)
		if err == nil {
			f.giveBack(v, int64(len(b)-n)) // stopped at the end of the file
		}
		return err
	})
	return n / esizeOf[T](), f.handle(err)
}

// startOrdered runs a collective of the handle in a goroutine, after the
// collectives called before it (and before those called after it).
func (f *File) startOrdered(op string, fn func() error) *Request {
	prev, mine := f.turn()
	return f.c.startColl(op, func() error {
		defer close(mine)
		if prev != nil {
			w := f.c.w
			select {
			case <-prev:
			case <-w.abort:
				return w.abortedErr(op, f.c)
			case <-w.stop:
				return w.abortedErr(op, f.c)
			}
		}
		return fn()
	})
}

// IwriteAtAll starts a WriteAtAll (MPI_File_iwrite_at_all); buf must not
// change until the request completes. Under run-through, a handle
// collectively inactive raises ErrRankFailStop at the request's
// completion, not here (seed 003 17.12.4).
func IwriteAtAll[T Elem](f *File, offset int64, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite_at_all"
	b, v, err := ioBufAt(f, op, buf, true, offset)
	if err != nil {
		return nil, err
	}
	return f.startOrdered(op, func() error { return f.writeAll(op, v, offset*v.esize, b) }), nil
}

// IreadAtAll starts a ReadAtAll (MPI_File_iread_at_all); the request's
// Wait returns the number of whole elements read.
func IreadAtAll[T Elem](f *File, offset int64, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread_at_all"
	b, v, err := ioBufAt(f, op, buf, false, offset)
	if err != nil {
		return nil, err
	}
	r := &RequestOf[int]{}
	r.Request = f.startOrdered(op, func() error {
		n, err := f.readAll(op, v, offset*v.esize, b)
		r.val = n / esizeOf[T]()
		return err
	})
	return r, nil
}

// IwriteAll starts a WriteAll (MPI_File_iwrite_all): the individual file
// pointer moves past buf at once.
func IwriteAll[T Elem](f *File, buf []T) (*Request, error) {
	const op = "MPI_File_iwrite_all"
	b, v, err := ioBufSeq(f, op, buf, true)
	if err != nil {
		return nil, err
	}
	at := f.take(v, int64(len(b)))
	return f.startOrdered(op, func() error { return f.writeAll(op, v, at, b) }), nil
}

// IreadAll starts a ReadAll (MPI_File_iread_all): the individual file
// pointer moves past len(buf) elements at once; the request's Wait returns
// the number of whole elements read.
func IreadAll[T Elem](f *File, buf []T) (*RequestOf[int], error) {
	const op = "MPI_File_iread_all"
	b, v, err := ioBufSeq(f, op, buf, false)
	if err != nil {
		return nil, err
	}
	at := f.take(v, int64(len(b)))
	r := &RequestOf[int]{}
	r.Request = f.startOrdered(op, func() error {
		n, err := f.readAll(op, v, at, b)
		r.val = n / esizeOf[T]()
		return err
	})
	return r, nil
}

// splitBegin records the split collective started on f (one at a time
// per handle, MPI-4.1 14.4.5).
func (f *File) splitBegin(op string, start func() (*RequestOf[int], error)) error {
	f.mu.Lock()
	busy := f.split != nil
	f.mu.Unlock()
	if busy {
		return f.handle(f.err(ErrOther, op, "a split collective is already active on the file (%s)", f.splitOp))
	}
	r, err := start()
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.split, f.splitOp = r, op
	f.mu.Unlock()
	return nil
}

// splitEnd completes the split collective begun by begin.
func (f *File) splitEnd(op, begin string) (int, error) {
	if err := f.checkOpen(op); err != nil {
		return 0, err
	}
	f.mu.Lock()
	r, bop := f.split, f.splitOp
	if r != nil && bop == begin {
		f.split, f.splitOp = nil, ""
	}
	f.mu.Unlock()
	if r == nil || bop != begin {
		return 0, f.handle(f.err(ErrOther, op, "no matching %s is active (active: %q)", begin, bop))
	}
	n, err := r.Wait()
	return n, f.handle(f.ferr(err))
}

func asCount(r *Request, err error) (*RequestOf[int], error) {
	if err != nil {
		return nil, err
	}
	return &RequestOf[int]{Request: r}, nil
}

// WriteAtAllBegin begins a split collective WriteAtAll
// (MPI_File_write_at_all_begin); WriteAtAllEnd completes it. buf must not
// change in between. Under run-through, a handle collectively inactive is
// reported by the end call, not the begin call (seed 003 17.12.4).
func WriteAtAllBegin[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_write_at_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return asCount(IwriteAtAll(f, offset, buf)) })
}

// WriteAtAllEnd completes the split collective begun by WriteAtAllBegin
// (MPI_File_write_at_all_end).
func (f *File) WriteAtAllEnd() error {
	_, err := f.splitEnd("MPI_File_write_at_all_end", "MPI_File_write_at_all_begin")
	return err
}

// ReadAtAllBegin begins a split collective ReadAtAll
// (MPI_File_read_at_all_begin); ReadAtAllEnd completes it and returns the
// number of whole elements read.
func ReadAtAllBegin[T Elem](f *File, offset int64, buf []T) error {
	const op = "MPI_File_read_at_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return IreadAtAll(f, offset, buf) })
}

// ReadAtAllEnd completes the split collective begun by ReadAtAllBegin
// (MPI_File_read_at_all_end).
func (f *File) ReadAtAllEnd() (int, error) {
	return f.splitEnd("MPI_File_read_at_all_end", "MPI_File_read_at_all_begin")
}

// WriteAllBegin begins a split collective WriteAll
// (MPI_File_write_all_begin); WriteAllEnd completes it.
func WriteAllBegin[T Elem](f *File, buf []T) error {
	const op = "MPI_File_write_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return asCount(IwriteAll(f, buf)) })
}

// WriteAllEnd completes the split collective begun by WriteAllBegin
// (MPI_File_write_all_end).
func (f *File) WriteAllEnd() error {
	_, err := f.splitEnd("MPI_File_write_all_end", "MPI_File_write_all_begin")
	return err
}

// ReadAllBegin begins a split collective ReadAll
// (MPI_File_read_all_begin); ReadAllEnd completes it.
func ReadAllBegin[T Elem](f *File, buf []T) error {
	const op = "MPI_File_read_all_begin"
	return f.splitBegin(op, func() (*RequestOf[int], error) { return IreadAll(f, buf) })
}

// ReadAllEnd completes the split collective begun by ReadAllBegin
// (MPI_File_read_all_end) and returns the number of whole elements read.
func (f *File) ReadAllEnd() (int, error) {
	return f.splitEnd("MPI_File_read_all_end", "MPI_File_read_all_begin")
}
