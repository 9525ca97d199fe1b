package mpiio

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
	ext := int64(at + rng.IntN(4))
	runs := func(yield func(int64, int64) bool) {
		for i, l := range lens {
			if !yield(int64(displs[i]), int64(l)) {
				return
			}
		}
	}
	if e := CheckLayout(runs, true); e != nil {
		return e.Error()
	}
	disp := int64(rng.IntN(20))
	v, err := NewView(disp, 1, ext, ext, runs)
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
	exts := v.Extents(nil, l0, n)
	var got []int64
	for i, e := range exts {
		if e.N <= 0 || (i > 0 && e.Off <= exts[i-1].Off+exts[i-1].N-1) {
			return "extents not ascending and disjoint"
		}
		for j := range e.N {
			got = append(got, e.Off+j)
		}
	}
	if int64(len(got)) != n {
		return "extents of the wrong total"
	}
	for i := range got {
		if got[i] != direct[l0+int64(i)] {
			return "an extent differs from the direct walk"
		}
		if v.BytesBefore(got[i]) != l0+int64(i) {
			return "viewBytesBefore does not invert extents"
		}
	}
	// A plan over 1..5 ranks with random extents.
	np := 1 + rng.IntN(5)
	rows := make([][]int64, np)
	live := make([]bool, np)
	all := make([][]Ext, np)
	for r := range np {
		live[r] = rng.IntN(5) > 0
		if !live[r] {
			rows[r] = []int64{0, 0}
			continue
		}
		all[r] = v.Extents(nil, int64(rng.IntN(50)), int64(rng.IntN(60)))
		lo, hi := int64(0), int64(0)
		if k := len(all[r]); k > 0 {
			lo, hi = all[r][0].Off, all[r][k-1].Off+all[r][k-1].N
		}
		rows[r] = []int64{lo, hi}
	}
	p := NewPlan(rows, live, rng.IntN(4), int64(1+rng.IntN(30)), func(int) string { return "" })
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
	if p.Interleaved != overlap {
		return "interleaved differs from a pairwise overlap check"
	}
	for _, a := range p.Aggs {
		if !live[a] {
			return "a rank that took no part is an aggregator"
		}
	}
	// Windows partition [lo, hi).
	next := p.Lo
	for a := range p.Aggs {
		for k := 0; k < p.Rounds; k++ {
			wlo, whi := p.Window(a, k)
			if whi == wlo {
				continue
			}
			if wlo != next {
				return "windows do not partition the range"
			}
			next = whi
		}
	}
	if next != p.Hi {
		return "windows do not reach the end of the range"
	}
	for r := range np {
		pos := int64(0)
		var cover []int64
		for _, pc := range p.Split(all[r]) {
			wlo, whi := p.Window(pc.Agg, pc.Round)
			if pc.Off < wlo || pc.Off+pc.N > whi || pc.At != pos {
				return "a piece outside its window or out of buffer order"
			}
			pos += pc.N
			for j := range pc.N {
				cover = append(cover, pc.Off+j)
			}
		}
		var want []int64
		for _, e := range all[r] {
			for j := range e.N {
				want = append(want, e.Off+j)
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
