package mpi_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// A receive bounded by a deadline: rank 1 waits at most 50 ms for a
// message that rank 0 sends only later. The cut receive is withdrawn, so
// the message goes to the next receive.
func ExampleComm_WithContext() {
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if c.Rank() == 0 {
			if _, err := mpi.Recv(c, []int{0}, 1, 1); err != nil { // rank 1's go-ahead
				return err
			}
			return mpi.Send(c, []int{42}, 1, 0)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		buf := []int{0}
		_, err := mpi.Recv(c.WithContext(ctx), buf, 0, 0)
		fmt.Println("deadline exceeded:", errors.Is(err, context.DeadlineExceeded))
		if err := mpi.Send(c, []int{1}, 0, 1); err != nil {
			return err
		}
		if _, err := mpi.Recv(c, buf, 0, 0); err != nil {
			return err
		}
		fmt.Println("received", buf[0])
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// deadline exceeded: true
	// received 42
}

// A matched probe takes the message out of matching: the buffer is sized
// from the probe and no other receive can take the message meanwhile.
func ExampleComm_Mprobe() {
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if c.Rank() == 0 {
			return mpi.Send(c, []float64{1.5, 2.5, 3.5}, 1, 7)
		}
		msg, st, err := c.Mprobe(mpi.AnySource, mpi.AnyTag)
		if err != nil {
			return err
		}
		buf := make([]float64, st.Count)
		if _, err := mpi.Mrecv(msg, buf); err != nil {
			return err
		}
		fmt.Println("from", st.Source, "tag", st.Tag, buf)
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output: from 0 tag 7 [1.5 2.5 3.5]
}
