package mpi

import "testing"

var sinkFacts *elemFacts

// BenchmarkElemOf is the per-call cost of the element type check: a type
// switch for the exact numeric types, a sync.Map load for the others.
func BenchmarkElemOf(b *testing.B) {
	type celsius float64
	type pair struct {
		V float64
		I int32
	}
	b.Run("float64", func(b *testing.B) {
		for b.Loop() {
			sinkFacts = elemOf[float64]()
		}
	})
	b.Run("named", func(b *testing.B) {
		for b.Loop() {
			sinkFacts = elemOf[celsius]()
		}
	})
	b.Run("struct", func(b *testing.B) {
		for b.Loop() {
			sinkFacts = elemOf[pair]()
		}
	})
}
