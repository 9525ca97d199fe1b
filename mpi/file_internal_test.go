package mpi

import (
	"math/rand/v2"
	"testing"
)

// TestFileViewAndPlanSchedules checks the pure parts of file access over
// thousands of seeded random layouts: a random strided view (blocks,
// gaps, displacement) maps view bytes to file extents that are ascending,
// disjoint and of the right total, agree byte by byte with a direct walk
// of the tiled filetype, and viewBytesBefore inverts them; a two-phase
// plan over several ranks' extents (random aggregators and round size)
// has windows that partition the touched range, and its pieces cover each
// rank's extents exactly, each inside its window, in buffer order. A
// failing layout prints its seed.
func TestFileViewAndPlanSchedules(t *testing.T) {
	for seed := uint64(0); seed < 2000; seed++ {
		if err := viewPlanSchedule(seed); err != "" {
			t.Fatalf("seed %d: %s", seed, err)
		}
	}
}

func viewPlanSchedule(seed uint64) string {
	rng := rand.New(rand.NewPCG(seed, 0x66696c65))
	// A filetype of 1..4 blocks of bytes with gaps, resized.
	var lens, displs []int
	at := rng.IntN(4)
	for range 1 + rng.IntN(4) {
		l := 1 + rng.IntN(6)
		lens = append(lens, l)
		displs = append(displs, at)
		at += l + rng.IntN(5)
	}
	idx, err := TypeIndexed(lens, displs, Byte)
	if err != nil {
		return err.Error()
	}
	ft, err := TypeCreateResized(idx, 0, at+rng.IntN(4))
	if err != nil {
		return err.Error()
	}
	ft.Commit()
	disp := int64(rng.IntN(20))
	v, err := newFileView("test", disp, Byte, ft, true)
	if err != nil {
		return err.Error()
	}
	// Direct walk: the file byte of every view byte.
	var direct []int64
	for tile := int64(0); len(direct) < 400; tile++ {
		for i, l := range lens {
			for j := range l {
				direct = append(direct, disp+tile*v.text+int64(displs[i]+j))
			}
		}
	}
	l0, n := int64(rng.IntN(100)), int64(1+rng.IntN(200))
	exts := v.extents(nil, l0, n)
	var got []int64
	for i, e := range exts {
		if e.n <= 0 || (i > 0 && e.off <= exts[i-1].off+exts[i-1].n-1) {
			return "extents not ascending and disjoint"
		}
		for j := range e.n {
			got = append(got, e.off+j)
		}
	}
	if int64(len(got)) != n {
		return "extents of the wrong total"
	}
	for i := range got {
		if got[i] != direct[l0+int64(i)] {
			return "an extent differs from the direct walk"
		}
		if v.viewBytesBefore(got[i]) != l0+int64(i) {
			return "viewBytesBefore does not invert extents"
		}
	}
	// A plan over 1..5 ranks with random extents.
	np := 1 + rng.IntN(5)
	rows := make([][]int64, np)
	live := make([]bool, np)
	all := make([][]fext, np)
	for r := range np {
		live[r] = rng.IntN(5) > 0
		if !live[r] {
			rows[r] = []int64{0, 0}
			continue
		}
		all[r] = v.extents(nil, int64(rng.IntN(50)), int64(rng.IntN(60)))
		lo, hi := int64(0), int64(0)
		if k := len(all[r]); k > 0 {
			lo, hi = all[r][0].off, all[r][k-1].off+all[r][k-1].n
		}
		rows[r] = []int64{lo, hi}
	}
	f := &File{cbNodes: rng.IntN(4), cbBuf: int64(1 + rng.IntN(30))}
	f.c = &Comm{w: &World{}, size: np}
	p := f.makePlan(rows, live)
	if p == nil {
		for r := range np {
			if live[r] && len(all[r]) > 0 {
				return "no plan although a rank has data"
			}
		}
		return ""
	}
	overlap := false
	for r := range np {
		for q := range r {
			a, b := rows[r], rows[q]
			if live[r] && live[q] && a[1] > a[0] && b[1] > b[0] && a[0] < b[1] && b[0] < a[1] {
				overlap = true
			}
		}
	}
	if p.interleaved != overlap {
		return "interleaved differs from a pairwise overlap check"
	}
	for _, a := range p.aggs {
		if !live[a] {
			return "a rank that took no part is an aggregator"
		}
	}
	// Windows partition [lo, hi).
	next := p.lo
	for a := range p.aggs {
		for k := 0; k < p.rounds; k++ {
			wlo, whi := p.window(a, k)
			if whi == wlo {
				continue
			}
			if wlo != next {
				return "windows do not partition the range"
			}
			next = whi
		}
	}
	if next != p.hi {
		return "windows do not reach the end of the range"
	}
	for r := range np {
		pos := int64(0)
		var cover []int64
		for _, pc := range p.split(all[r]) {
			wlo, whi := p.window(pc.agg, pc.round)
			if pc.off < wlo || pc.off+pc.n > whi || pc.at != pos {
				return "a piece outside its window or out of buffer order"
			}
			pos += pc.n
			for j := range pc.n {
				cover = append(cover, pc.off+j)
			}
		}
		var want []int64
		for _, e := range all[r] {
			for j := range e.n {
				want = append(want, e.off+j)
			}
		}
		if len(cover) != len(want) {
			return "pieces do not cover the extents"
		}
		for i := range cover {
			if cover[i] != want[i] {
				return "pieces do not cover the extents in order"
			}
		}
	}
	return ""
}
