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
