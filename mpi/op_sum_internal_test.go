package mpi

import (
	"bytes"
	"fmt"
	"math"
	"slices"
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

// sum4Loop gives, bit for bit, the sums of four sumLoop passes (d, c, b,
// then a) at every length around the unrolled turn, on float64s whose
// sums depend on the order of the additions, float32s, wrapping integers
// and complex numbers, and writes nothing past len(inout).
func TestSum4LoopIsFourSums(t *testing.T) {
	checkSum4(t, func(i int) float64 { return math.Pow(10, float64(i*7%31-15)) * float64(1-2*(i%3&1)) / 3 })
	checkSum4(t, func(i int) float32 { return float32(math.Pow(10, float64(i*5%13-6))) / 7 })
	checkSum4(t, func(i int) int8 { return int8(i * 37) })
	checkSum4(t, func(i int) int64 { return int64(i*i*7919) - 1<<40 })
	checkSum4(t, func(i int) complex128 { return complex(math.Pow(10, float64(i*3%17-8)), -float64(i)/7) })
}

func checkSum4[T Numeric](t *testing.T, val func(i int) T) {
	t.Helper()
	for n := range 19 {
		in := make([][]T, 4)
		for k := range in {
			in[k] = make([]T, n)
			for i := range in[k] {
				in[k][i] = val(11*i + 5*k + 1)
			}
		}
		inout := make([]T, n+3)
		for i := range inout {
			inout[i] = val(3*i + 2)
		}
		want := slices.Clone(inout)
		for k := 3; k >= 0; k-- {
			sumLoop(in[k], want[:n])
		}
		sum4Loop(in[0], in[1], in[2], in[3], inout[:n])
		if !bytes.Equal(asBytes(inout), asBytes(want)) {
			t.Fatalf("%T n=%d: %v, want %v", want[0], n, inout, want)
		}
	}
}

// The four-input form is the predefined sum's on numeric types only.
func TestOpFunc4OnlyForTheSum(t *testing.T) {
	if opFunc4[float64](Sum) == nil || opFunc4[int32](Sum) == nil {
		t.Error("no four-input form of the sum on float64 or int32")
	}
	if opFunc4[float64](Max) != nil || opFunc4[float64](Prod) != nil || opFunc4[bool](Lor) != nil {
		t.Error("a four-input form of another operation than the sum")
	}
	user := NewOp(func(in, inout []float64) {
		for i := range in {
			inout[i] += in[i]
		}
	}, true)
	if opFunc4[float64](user) != nil {
		t.Error("a four-input form of a user operation")
	}
}

// BenchmarkSum4Loop: 16 inputs of 8,192 float64s (a member's part of a
// 1 MiB Allreduce at np 16 on the shared segment) reduced one input a pass
// (sumLoop) and four a pass (sum4Loop); ns/add is per element addition.
func BenchmarkSum4Loop(b *testing.B) {
	const n, k = 8192, 16
	ins := make([][]float64, k)
	for j := range ins {
		ins[j] = make([]float64, n)
		for i := range ins[j] {
			ins[j][i] = float64(i*j) * 0.37
		}
	}
	out := make([]float64, n)
	for _, four := range []bool{false, true} {
		b.Run(fmt.Sprintf("four=%v", four), func(b *testing.B) {
			for b.Loop() {
				copy(out, ins[k-1])
				j := k - 2
				for ; four && j >= 3; j -= 4 {
					sum4Loop(ins[j-3], ins[j-2], ins[j-1], ins[j], out)
				}
				for ; j >= 0; j-- {
					sumLoop(ins[j], out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*(k-1)), "ns/add")
		})
	}
}
