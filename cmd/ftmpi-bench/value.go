package main

import (
	"bytes"
	"encoding/gob"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// values is a ping-pong of Go values between ranks 0 and 1 (half round
// trip, µs): a []float64 of size bytes sent with SendValue/RecvValue
// ("value-latency"), and the same encoded with gob by hand, sent with
// Send and received with Recv into a buffer of known maximum size, then
// decoded ("gob-latency"). The two alternate within every repetition, so
// that both see the same machine; the difference is what SendValue adds
// beyond the codec.
func (b *bench) values() {
	c := b.c
	peer := 1 - c.Rank()
	raw := make([]byte, 2*b.max+1024)
	var enc bytes.Buffer
	pingValue := func(v []float64) {
		if c.Rank() == 0 {
			check(mpi.SendValue(c, v, peer, 2))
			_, _, err := mpi.RecvValue[[]float64](c, peer, 2)
			check(err)
			return
		}
		got, _, err := mpi.RecvValue[[]float64](c, peer, 2)
		check(err)
		check(mpi.SendValue(c, got, peer, 2))
	}
	send := func(v []float64) {
		enc.Reset()
		check(gob.NewEncoder(&enc).Encode(&v))
		check(mpi.Send(c, enc.Bytes(), peer, 3))
	}
	recv := func() []float64 {
		st, err := mpi.Recv(c, raw, peer, 3)
		check(err)
		var got []float64
		check(gob.NewDecoder(bytes.NewReader(raw[:st.Count])).Decode(&got))
		return got
	}
	pingGob := func(v []float64) {
		if c.Rank() == 0 {
			send(v)
			recv()
			return
		}
		send(recv())
	}
	for _, size := range sizes(max(8, b.min), b.max) {
		v := make([]float64, size/8)
		for i := range v {
			v[i] = float64(i) * 1.5
		}
		n := scaled(b.iters, size)
		warm := max(10, n/10)
		var sv, sg []float64
		for run := 0; run < b.runs; run++ {
			for _, k := range []int{0, 1} {
				ping := pingValue
				if k == 1 {
					ping = pingGob
				}
				check(c.Barrier())
				var start time.Time
				for i := 0; i < warm+n; i++ {
					if i == warm {
						start = time.Now()
					}
					ping(v)
				}
				us := float64(time.Since(start).Nanoseconds()) / 1e3 / float64(2*n)
				if k == 0 {
					sv = append(sv, us)
				} else {
					sg = append(sg, us)
				}
			}
		}
		b.emit("value-latency", size, sv, "us")
		b.emit("gob-latency", size, sg, "us")
	}
}
