package mpiio

import "slices"

// Collective data access (MPI-4.1 14.4.3-14.4.5) by two-phase I/O, as
// ROMIO does it: a few aggregator processes each own a contiguous domain
// of the range of file bytes the call touches; every process sends the
// pieces of its data that fall in a domain to that domain's aggregator,
// which writes them as large contiguous runs (for reads: reads its domain
// in one piece and sends every process its pieces). Many small strided
// pieces of many processes become a few large writes. Aggregators: cb_nodes
// (an info hint) evenly spaced over the participating processes, else the
// first participating process of every host. A domain larger than
// cb_buffer_size is handled in rounds of that size, so an aggregator holds
// at most that much at a time. When the processes' file ranges do not
// interleave (a block per process), every process accesses its own range
// directly, as ROMIO does: aggregation would only add copies.

// Piece is a fragment of a process's data in one round's domain of one
// aggregator: file range and position in the process's buffer. It has no
// MPI counterpart.
type Piece struct {
	Off, N int64
	At     int64 // offset in the buffer
	Round  int
	Agg    int // index of the aggregator in Plan.Aggs
}

// Plan is the layout of one collective call: aggregators, domains and
// rounds; the same at every process. It has no MPI counterpart.
type Plan struct {
	Aggs     []int // ranks of the aggregators
	Lo, Hi   int64 // the file range touched by the call
	Dom, Buf int64 // domain size, bytes per round
	Rounds   int
	// Interleaved: the processes' file ranges overlap. If not (a block per
	// process, say), every process accesses its own range directly.
	Interleaved bool
}

// Interleaved reports whether the [lo, hi) ranges (rows[r][0],
// rows[r][1]) of the live rows with data overlap. It has no MPI
// counterpart.
func Interleaved(rows [][]int64, live []bool) bool {
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

// NewPlan computes the plan of a call from every rank's (lo, hi) row
// (live: whether the rank takes part), with nodes aggregators (0: the
// first live rank of every host, host naming rank r's host) handling at
// most buf bytes per round (buf > 0). The same rows give the same plan at
// every process. nil: the call touches no byte. It has no MPI counterpart
// (cb_nodes and cb_buffer_size are MPI-4.1 14.2.8's hints).
func NewPlan(rows [][]int64, live []bool, nodes int, buf int64, host func(r int) string) *Plan {
	p := &Plan{Lo: -1}
	var alive []int
	for r, row := range rows {
		if !live[r] {
			continue
		}
		alive = append(alive, r)
		if row[1] > row[0] {
			if p.Lo < 0 || row[0] < p.Lo {
				p.Lo = row[0]
			}
			p.Hi = max(p.Hi, row[1])
		}
	}
	if p.Lo < 0 {
		return nil
	}
	if nodes > 0 {
		nodes = min(nodes, len(alive))
		for i := range nodes {
			p.Aggs = append(p.Aggs, alive[i*len(alive)/nodes])
		}
	} else {
		var seen []string
		for _, r := range alive {
			h := host(r)
			if !slices.Contains(seen, h) {
				seen = append(seen, h)
				p.Aggs = append(p.Aggs, r)
			}
		}
	}
	p.Interleaved = Interleaved(rows, live)
	na := int64(len(p.Aggs))
	p.Dom = (p.Hi - p.Lo + na - 1) / na
	p.Buf = min(max(buf, 1), p.Dom)
	p.Rounds = int((p.Dom + p.Buf - 1) / p.Buf)
	return p
}

// Window is aggregator a's file range in round k. It has no MPI
// counterpart.
func (p *Plan) Window(a, k int) (int64, int64) {
	start := p.Lo + int64(a)*p.Dom
	lo := start + int64(k)*p.Buf
	hi := min(start+p.Dom, lo+p.Buf, p.Hi)
	return lo, max(lo, hi)
}

// Split cuts the extents (a process's data, in buffer order) into pieces
// at domain and round boundaries. It has no MPI counterpart.
func (p *Plan) Split(exts []Ext) []Piece {
	var out []Piece
	at := int64(0)
	for _, e := range exts {
		off, n := e.Off, e.N
		for n > 0 {
			rel := off - p.Lo
			a := int(rel / p.Dom)
			k := int((rel - int64(a)*p.Dom) / p.Buf)
			_, whi := p.Window(a, k)
			m := min(n, whi-off)
			out = append(out, Piece{Off: off, N: m, At: at, Round: k, Agg: a})
			off += m
			n -= m
			at += m
		}
	}
	return out
}

// Ordered places a collective ordered access (MPI_File_write_ordered):
// from each rank's count (column 0 of its row; live: whether it takes
// part), the counts of the live ranks below rank (prefix) and of all live
// ranks (total). Ranks that take no part keep their place in the order
// with nothing. It has no MPI counterpart.
func Ordered(rows [][]int64, live []bool, rank int) (prefix, total int64) {
	for r, row := range rows {
		if !live[r] {
			continue
		}
		if r < rank {
			prefix += row[0]
		}
		total += row[0]
	}
	return prefix, total
}
