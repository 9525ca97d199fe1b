package mpi

import (
	"fmt"
	"testing"
)

// sumPlain is the plain loop sumLoop unrolls (the reference).
func sumPlain[T Numeric](in, inout []T) {
	inout = inout[:len(in)]
	for i, v := range in {
		inout[i] += v
	}
}

// sumLoop (unrolled four elements a turn) gives the plain loop's sums at
// every length around the turn, at every element type kind, and writes
// nothing past len(in).
func TestSumLoopUnrolled(t *testing.T) {
	checkSum(t, func(i int) float64 { return float64(i)*0.1 + 1e-9*float64(i*i) })
	checkSum(t, func(i int) int64 { return int64(i*i*7919) - 1<<40 })
	checkSum(t, func(i int) int8 { return int8(i * 37) }) // wraps, as the plain loop does
	checkSum(t, func(i int) float32 { return float32(i) / 3 })
	checkSum(t, func(i int) complex128 { return complex(float64(i), -float64(i)/7) })
}

func checkSum[T Numeric](t *testing.T, val func(i int) T) {
	t.Helper()
	for n := range 19 {
		in, inout := make([]T, n), make([]T, n+3)
		for i := range in {
			in[i], inout[i] = val(i), val(3*i+1)
		}
		for i := n; i < len(inout); i++ {
			inout[i] = val(1000 + i)
		}
		want := make([]T, len(inout))
		copy(want, inout)
		sumPlain(in, want)
		sumLoop(in, inout)
		for i := range want {
			if inout[i] != want[i] {
				t.Fatalf("%T n=%d: element %d is %v, want %v", want[0], n, i, inout[i], want[i])
			}
		}
	}
}

// BenchmarkSumLoop: the unrolled sum against the plain loop, 16,384
// elements (128 KiB) a call.
func BenchmarkSumLoop(b *testing.B) {
	const n = 16384
	for _, f := range []struct {
		name string
		f64  func(in, inout []float64)
		i64  func(in, inout []int64)
	}{{"plain", sumPlain[float64], sumPlain[int64]}, {"unrolled", sumLoop[float64], sumLoop[int64]}} {
		b.Run(fmt.Sprintf("float64/%s", f.name), func(b *testing.B) {
			in, inout := make([]float64, n), make([]float64, n)
			b.SetBytes(8 * n)
			for b.Loop() {
				f.f64(in, inout)
			}
		})
		b.Run(fmt.Sprintf("int64/%s", f.name), func(b *testing.B) {
			in, inout := make([]int64, n), make([]int64, n)
			b.SetBytes(8 * n)
			for b.Loop() {
				f.i64(in, inout)
			}
		})
	}
}
