package mpi_test

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// benchRec is a struct with a slice, the other payload of the value
// benchmarks.
type benchRec struct {
	ID   int
	Name string
	Vals []float64
}

// BenchmarkSendValue compares a round trip of SendValue/RecvValue with
// the same done by hand: gob-encode into a reused buffer, Send the bytes,
// Recv into a buffer of known maximum size, gob-decode. Two goroutine
// ranks (in-process transport), payloads of []float64 and of a struct
// with a slice at 64 B, 8 KiB and 1 MiB of floats. The goal: no overhead
// beyond the codec.
func BenchmarkSendValue(b *testing.B) {
	for _, n := range []int{8, 1 << 10, 1 << 17} {
		floats := make([]float64, n)
		for i := range floats {
			floats[i] = float64(i) * 1.5
		}
		rec := benchRec{ID: 7, Name: "particle", Vals: floats}
		for _, kind := range []string{"floats", "struct"} {
			for _, how := range []string{"value", "byhand"} {
				b.Run(fmt.Sprintf("%s/%dB/%s", kind, 8*n, how), func(b *testing.B) {
					if kind == "floats" {
						benchValue(b, floats, how, 8*n+64)
					} else {
						benchValue(b, rec, how, 8*n+256)
					}
				})
			}
		}
	}
}

func benchValue[T any](b *testing.B, v T, how string, maxBytes int) {
	b.ReportAllocs()
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		peer := 1 - c.Rank()
		var enc bytes.Buffer
		raw := make([]byte, maxBytes)
		send := func(v T) error {
			if how == "value" {
				return mpi.SendValue(c, v, peer, 0)
			}
			enc.Reset()
			if err := gob.NewEncoder(&enc).Encode(&v); err != nil {
				return err
			}
			return mpi.Send(c, enc.Bytes(), peer, 0)
		}
		recv := func() (T, error) {
			if how == "value" {
				got, _, err := mpi.RecvValue[T](c, peer, 0)
				return got, err
			}
			var got T
			st, err := mpi.Recv(c, raw, peer, 0)
			if err != nil {
				return got, err
			}
			err = gob.NewDecoder(bytes.NewReader(raw[:st.Count])).Decode(&got)
			return got, err
		}
		if c.Rank() == 0 {
			b.ResetTimer()
		}
		for i := 0; i < b.N; i++ {
			if c.Rank() == 0 {
				if err := send(v); err != nil {
					return err
				}
				if _, err := recv(); err != nil {
					return err
				}
			} else {
				got, err := recv()
				if err != nil {
					return err
				}
				if err := send(got); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
