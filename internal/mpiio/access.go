package mpiio

import (
	"encoding/binary"
	"errors"
	"io"
	"os"
	"slices"
	"sort"
	"syscall"
)

// Net is the file's communicator as one collective call of one process
// sees it: every process of the call makes the same calls in the same
// order. Its errors are final (already in the caller's terms: a failure
// of a process, a revocation); the engine returns them as they are. It
// has no MPI counterpart (MPI_Alltoall and MPI_Alltoallv over the file's
// communicator).
type Net interface {
	// Alltoall sends sc[j] to rank j and receives rc[j] from rank j.
	Alltoall(sc, rc []int64) error
	// Alltoallv sends sbuf[sdisp[j]:][:scounts[j]] to rank j and receives
	// rbuf[rdisp[j]:][:rcounts[j]] from rank j.
	Alltoallv(sbuf []byte, scounts, sdisp []int, rbuf []byte, rcounts, rdisp []int) error
	// ErrFlag is the last step of a call whose local part may fail: every
	// process learns whether it failed anywhere. It returns local if not
	// nil, else an error naming a process where it failed, else nil.
	ErrFlag(local error) error
}

// Data is the file's data as this process reaches it. ReadAt returns
// io.EOF at the end of the file (other errors are wrapped in IOError by
// the engine); Lock takes the atomic mode's lock (exclusive for a write)
// and returns its release; Size is the file's size. It has no MPI
// counterpart.
type Data interface {
	io.ReaderAt
	io.WriterAt
	Lock(write bool) (unlock func())
	Size() (int64, error)
}

// LockFile takes the atomic mode's lock on fd (flock: shared for reads,
// exclusive for writes) and returns its release. It has no MPI
// counterpart (MPI_File_set_atomicity's mode).
func LockFile(fd *os.File, write bool) func() {
	how := syscall.LOCK_SH
	if write {
		how = syscall.LOCK_EX
	}
	h := int(fd.Fd())
	for syscall.Flock(h, how) == syscall.EINTR {
	}
	return func() { syscall.Flock(h, syscall.LOCK_UN) }
}

// Pwrite writes b, already in the file's representation, at the file
// ranges of view bytes [l, l+len(b)) under the atomic-mode lock. It has
// no MPI counterpart (the data path of MPI_File_write_at).
func Pwrite(d Data, v *View, l int64, b []byte) error {
	unlock := d.Lock(true)
	defer unlock()
	var ext [8]Ext
	pos := 0
	for _, e := range v.Extents(ext[:0], l, int64(len(b))) {
		if _, err := d.WriteAt(b[pos:pos+int(e.N)], e.Off); err != nil {
			return ioErr(err)
		}
		pos += int(e.N)
	}
	return nil
}

// Pread reads b from the file ranges of view bytes [l, l+len(b)) under
// the atomic-mode lock and returns the bytes read before the end of the
// file (in the file's representation). It has no MPI counterpart (the
// data path of MPI_File_read_at).
func Pread(d Data, v *View, l int64, b []byte) (int, error) {
	unlock := d.Lock(false)
	defer unlock()
	var ext [8]Ext
	pos := 0
	for _, e := range v.Extents(ext[:0], l, int64(len(b))) {
		n, err := d.ReadAt(b[pos:pos+int(e.N)], e.Off)
		pos += n
		if errors.Is(err, io.EOF) {
			return pos, nil
		}
		if err != nil {
			return pos, ioErr(err)
		}
	}
	return pos, nil
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
func (x *xbuf) exchange(net Net) (from func(j int) []byte, err error) {
	for j, c := range x.scounts {
		x.sc[j], x.rc[j] = int64(c), 0
	}
	if err := net.Alltoall(x.sc, x.rc); err != nil {
		return nil, err
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
	if err := net.Alltoallv(x.sbuf, x.scounts, x.sdisp, x.rbuf, x.rcounts, x.rdisp); err != nil {
		return nil, err
	}
	return func(j int) []byte { return x.rbuf[x.rdisp[j] : x.rdisp[j]+x.rcounts[j]] }, nil
}

// Access is one process's side of a collective data access: the call's
// exchanges (Net), the file (Data), this process's rank among Size. It
// has no MPI counterpart (the engine of MPI_File_write_at_all and the
// other collective data accesses).
type Access struct {
	Net        Net
	Data       Data
	Rank, Size int
}

// Write is the two-phase collective write of b (already in the file's
// representation) at view bytes l on, whose extents are exts, by plan p
// (made by NewPlan from every process's Span of its extents). An I/O error
// at an aggregator is reported at every process (Net.ErrFlag).
func (a *Access) Write(p *Plan, v *View, l int64, exts []Ext, b []byte) error {
	if !p.Interleaved {
		return a.Net.ErrFlag(Pwrite(a.Data, v, l, b))
	}
	pieces := p.Split(exts)
	me := slices.Index(p.Aggs, a.Rank)
	var lerr error
	var wb []byte
	var got []Ext
	x := newXbuf(a.Size)
	cnt, at := make([]int, a.Size), make([]int, a.Size)
	for k := 0; k < p.Rounds; k++ {
		// This round's pieces per aggregator: [count, (off, n)..., data].
		clear(cnt)
		clear(x.scounts)
		for _, pc := range pieces {
			if pc.Round == k {
				r := p.Aggs[pc.Agg]
				cnt[r]++
				x.scounts[r] += 16 + int(pc.N)
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
			if pc.Round != k {
				continue
			}
			r := p.Aggs[pc.Agg]
			putI64(sbuf[meta[r]:], pc.Off)
			putI64(sbuf[meta[r]+8:], pc.N)
			meta[r] += 16
			at[r] += copy(sbuf[at[r]:], b[pc.At:pc.At+pc.N])
		}
		from, err := x.exchange(a.Net)
		if err != nil {
			return err
		}
		if me < 0 || lerr != nil {
			continue
		}
		wlo, whi := p.Window(me, k)
		if cap(wb) < int(whi-wlo) {
			wb = make([]byte, whi-wlo)
		}
		wb = wb[:whi-wlo]
		got = got[:0]
		for j := range a.Size {
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
				got = append(got, Ext{off, n})
			}
		}
		lerr = a.writeRuns(wb, wlo, got)
	}
	return a.Net.ErrFlag(lerr)
}

// writeRuns writes the parts of wb (file bytes from wlo on) covered by
// got, one write per maximal contiguous run.
func (a *Access) writeRuns(wb []byte, wlo int64, got []Ext) error {
	if len(got) == 0 {
		return nil
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Off < got[j].Off })
	unlock := a.Data.Lock(true)
	defer unlock()
	start, end := got[0].Off, got[0].Off+got[0].N
	flush := func() error {
		if _, err := a.Data.WriteAt(wb[start-wlo:end-wlo], start); err != nil {
			return ioErr(err)
		}
		return nil
	}
	for _, g := range got[1:] {
		if g.Off > end {
			if err := flush(); err != nil {
				return err
			}
			start = g.Off
		}
		end = max(end, g.Off+g.N)
	}
	return flush()
}

// Read is the two-phase collective read into b from view bytes l on,
// whose extents are exts, by plan p; it returns the bytes read before the
// end of the file (in the file's representation). An I/O error at an
// aggregator is reported at every process (Net.ErrFlag).
func (a *Access) Read(p *Plan, v *View, l int64, exts []Ext, b []byte) (int, error) {
	if !p.Interleaved {
		n, lerr := Pread(a.Data, v, l, b)
		return n, a.Net.ErrFlag(lerr)
	}
	pieces := p.Split(exts)
	me := slices.Index(p.Aggs, a.Rank)
	var lerr error
	var wb []byte
	x := newXbuf(a.Size)
	at := make([]int, a.Size)
	for k := 0; k < p.Rounds; k++ {
		// Requests: [(off, n)...] per aggregator.
		clear(x.scounts)
		for _, pc := range pieces {
			if pc.Round == k {
				x.scounts[p.Aggs[pc.Agg]] += 16
			}
		}
		sbuf := x.layout()
		copy(at, x.sdisp)
		for _, pc := range pieces {
			if pc.Round == k {
				r := p.Aggs[pc.Agg]
				putI64(sbuf[at[r]:], pc.Off)
				putI64(sbuf[at[r]+8:], pc.N)
				at[r] += 16
			}
		}
		from, err := x.exchange(a.Net)
		if err != nil {
			return 0, err
		}
		// The replies: the requested pieces, in request order.
		clear(x.scounts)
		lo, hi := int64(-1), int64(0)
		if me >= 0 {
			for j := range a.Size {
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
				unlock := a.Data.Lock(false)
				n, err := a.Data.ReadAt(wb, lo)
				unlock()
				clear(wb[n:])
				if err != nil && !errors.Is(err, io.EOF) {
					lerr = ioErr(err)
				}
			}
		}
		reqs := slices.Clone(x.rbuf[:len(x.rbuf)])
		rdisp, rcounts := slices.Clone(x.rdisp), slices.Clone(x.rcounts)
		sbuf = x.layout()
		for j := range a.Size {
			m := reqs[rdisp[j] : rdisp[j]+rcounts[j]]
			o := x.sdisp[j]
			for q := 0; q+16 <= len(m); q += 16 {
				off, n := getI64(m[q:]), getI64(m[q+8:])
				o += copy(sbuf[o:], wb[off-lo:off-lo+n])
			}
		}
		from, err = x.exchange(a.Net)
		if err != nil {
			return 0, err
		}
		for j := range at {
			at[j] = 0
		}
		for _, pc := range pieces {
			if pc.Round == k {
				r := p.Aggs[pc.Agg]
				at[r] += copy(b[pc.At:pc.At+pc.N], from(r)[at[r]:])
			}
		}
	}
	if err := a.Net.ErrFlag(lerr); err != nil {
		return 0, err
	}
	size, err := a.Data.Size()
	if err != nil {
		return 0, ioErr(err)
	}
	return ValidBytes(exts, size), nil
}
