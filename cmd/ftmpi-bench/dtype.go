package main

import (
	"time"
	"unsafe"

	"github.com/ftmpi/ftmpi/mpi"
)

// pair is the struct of an int and a double of the datatype benchmarks
// (16 bytes with its padding).
type pair struct {
	I int32
	D float64
}

// dtype measures ping-pong latency (half round trip) between ranks 0 and 1
// of messages of non-contiguous or struct data, at 1 KiB and 1 MiB of data
// (-min/-max bound the sizes; the size reported is the data's bytes):
//
//   - dtype-contig: a []float64 (the baseline);
//   - dtype-vector: float64 vector with stride 2 (SendTyped/RecvTyped of
//     TypeVector(n, 1, 2, Float64): packed at the sender, unpacked at the
//     receiver);
//   - dtype-struct: []pair as Go struct elements (sent as their bytes,
//     padding included: 16 bytes per element, 12 of data);
//   - dtype-structdt: []pair through TypeCreateStruct of its two fields
//     (packed: 12 bytes per element).
func (b *bench) dtype() {
	c := b.c
	st, err := mpi.TypeCreateStruct([]int{1, 1}, []int{int(unsafe.Offsetof(pair{}.I)), int(unsafe.Offsetof(pair{}.D))}, []*mpi.Datatype{mpi.Int32, mpi.Float64})
	check(err)
	check(st.Commit())
	for _, size := range []int{1 << 10, 1 << 20} {
		if size < b.min || b.max > 0 && size > b.max {
			continue
		}
		nf := size / 8
		vec, err := mpi.TypeVector(nf, 1, 2, mpi.Float64)
		check(err)
		check(vec.Commit())
		strided := make([]float64, 2*nf)
		contig := make([]float64, nf)
		np := size / 12 // struct elements carrying size bytes of data
		pairs := make([]pair, np)
		cases := []struct {
			name string
			send func(dest int) error
			recv func(src int) error
		}{
			{"dtype-contig", func(d int) error { return mpi.Send(c, contig, d, 1) },
				func(s int) error { _, err := mpi.Recv(c, contig, s, 1); return err }},
			{"dtype-vector", func(d int) error { return mpi.SendTyped(c, strided, 1, vec, d, 1) },
				func(s int) error { _, err := mpi.RecvTyped(c, strided, 1, vec, s, 1); return err }},
			{"dtype-struct", func(d int) error { return mpi.Send(c, pairs, d, 1) },
				func(s int) error { _, err := mpi.Recv(c, pairs, s, 1); return err }},
			{"dtype-structdt", func(d int) error { return mpi.SendTyped(c, pairs, np, st, d, 1) },
				func(s int) error { _, err := mpi.RecvTyped(c, pairs, np, st, s, 1); return err }},
		}
		for _, k := range cases {
			n := scaled(b.iters, size)
			warm := max(10, n/10)
			var samples []float64
			for range b.runs {
				check(c.Barrier())
				var start time.Time
				for i := range warm + n {
					if i == warm {
						start = time.Now()
					}
					switch c.Rank() {
					case 0:
						check(k.send(1))
						check(k.recv(1))
					case 1:
						check(k.recv(0))
						check(k.send(0))
					}
				}
				samples = append(samples, float64(time.Since(start).Nanoseconds())/1e3/float64(2*n))
			}
			b.emit(k.name, size, samples, "us")
		}
	}
}
