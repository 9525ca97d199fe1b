package mpi_test

import (
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// BenchmarkSelfSendRecv is one goroutine sending a small message to
// itself and receiving it: the CPU cost of Send and Recv on a queued
// message (argument checks, matching, completion), without the scheduling
// noise of a ping-pong between goroutines. It compares the plain path
// before and after a change to it.
func BenchmarkSelfSendRecv(b *testing.B) {
	b.ReportAllocs()
	err := mpi.Run(1, func(w *mpi.World) error {
		c := w.CommSelf()
		buf := make([]float64, 4)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := mpi.Send(c, buf, 0, 0); err != nil {
				return err
			}
			if _, err := mpi.Recv(c, buf, 0, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
