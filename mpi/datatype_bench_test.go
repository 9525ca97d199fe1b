package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// BenchmarkPackVector packs and unpacks 1 MiB of data of a float64 vector
// with stride 2 (the cost a typed send and receive add to a contiguous
// one).
func BenchmarkPackVector(b *testing.B) {
	const n = 1 << 17
	vec := must(mpi.TypeVector(n, 1, 2, mpi.Float64))
	src := make([]float64, 2*n)
	out := make([]byte, 8*n)
	b.SetBytes(8 * n)
	for b.Loop() {
		if _, err := mpi.Pack(src, 1, vec, out); err != nil {
			b.Fatal(err)
		}
		if _, err := mpi.Unpack(out, src, 1, vec); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackStruct packs and unpacks 1 MiB of data of a struct
// datatype of an int32 and a float64 (12 bytes of data in 16).
func BenchmarkPackStruct(b *testing.B) {
	const n = (1 << 20) / 12
	st := must(mpi.TypeCreateStruct([]int{1, 1}, []int{0, 8}, []*mpi.Datatype{mpi.Int32, mpi.Float64}))
	src := make([]pairA, n)
	out := make([]byte, 12*n)
	b.SetBytes(12 * n)
	for b.Loop() {
		if _, err := mpi.Pack(src, n, st, out); err != nil {
			b.Fatal(err)
		}
		if _, err := mpi.Unpack(out, src, n, st); err != nil {
			b.Fatal(err)
		}
	}
}
