package coll

import (
	"slices"
	"testing"
)

func TestNewView(t *testing.T) {
	// Group of world ranks 7, 3, 5, 9; 3 and 9 recognised failed.
	m, world := NewView([]int{7, 3, 5, 9}, []int{3, 9})
	if want := []int{0, 2}; !slices.Equal(m.Alive, want) {
		t.Errorf("Alive = %v, want %v", m.Alive, want)
	}
	if want := []int{0, -1, 1, -1}; !slices.Equal(m.VRank, want) {
		t.Errorf("VRank = %v, want %v", m.VRank, want)
	}
	if want := []int{7, 5}; !slices.Equal(world, want) {
		t.Errorf("world = %v, want %v", world, want)
	}
	if m.Full() {
		t.Error("Full() = true with two failed members")
	}
	if full, _ := NewView([]int{0, 1, 2}, []int{5}); !full.Full() {
		t.Error("Full() = false without failed members")
	}
}

func TestPickBlocks(t *testing.T) {
	m, _ := NewView([]int{0, 1, 2, 3}, []int{1})
	if got, want := m.Pick([]int{10, 11, 12, 13}), []int{10, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("Pick = %v, want %v", got, want)
	}
	if m.Pick(nil) != nil {
		t.Error("Pick(nil) != nil")
	}
	counts, displs := m.Blocks(2)
	if want := []int{2, 2, 2}; !slices.Equal(counts, want) {
		t.Errorf("counts = %v, want %v", counts, want)
	}
	if want := []int{0, 4, 6}; !slices.Equal(displs, want) {
		t.Errorf("displs = %v, want %v", displs, want)
	}
}

func TestPackUnpack(t *testing.T) {
	m, _ := NewView([]int{0, 1, 2}, []int{0})
	src := []float64{1, 2, 3, 4, 5, 6}
	packed := PackView(m, src, 2)
	if want := []float64{3, 4, 5, 6}; !slices.Equal(packed, want) {
		t.Fatalf("PackView = %v, want %v", packed, want)
	}
	dst := []float64{-1, -1, 0, 0, 0, 0}
	UnpackView(m, dst, []float64{30, 40, 50, 60}, 2)
	if want := []float64{-1, -1, 30, 40, 50, 60}; !slices.Equal(dst, want) {
		t.Errorf("UnpackView = %v, want %v (the failed rank's block untouched)", dst, want)
	}
	v := PackViewV(m, []int{1, 2, 3, 4, 5, 6}, []int{1, 2, 3}, []int{0, 1, 3})
	if want := []int{2, 3, 4, 5, 6}; !slices.Equal(v, want) {
		t.Errorf("PackViewV = %v, want %v", v, want)
	}
}
