package mpi_test

import (
	"fmt"

	"github.com/ftmpi/ftmpi/mpi"
)

// A persistent send and receive: the arguments are bound once, each
// Startall/Waitall moves the buffers' current contents.
func ExampleSendInit() {
	mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		buf := []int{0}
		var r *mpi.Request
		if c.Rank() == 0 {
			r, _ = mpi.SendInit(c, buf, 1, 0)
		} else {
			r, _ = mpi.RecvInit(c, buf, 0, 0)
		}
		for step := 1; step <= 3; step++ {
			if c.Rank() == 0 {
				buf[0] = step * step
			}
			r.Start()
			r.Wait() // a failed peer is reported here (ErrProcFailed), never by Start
			if c.Rank() == 1 {
				fmt.Println("received", buf[0])
			}
		}
		return r.Free()
	})
	// Output:
	// received 1
	// received 4
	// received 9
}

// A persistent collective (MPI-4): Init is collective, each Start is one
// all-reduction.
func ExampleAllreduceInit() {
	mpi.Run(4, func(w *mpi.World) error {
		c := w.CommWorld()
		local, total := []int{0}, []int{0}
		r, err := mpi.AllreduceInit(c, local, total, mpi.Sum)
		if err != nil {
			return err
		}
		for step := 1; step <= 2; step++ {
			local[0] = step * c.Rank()
			r.Start()
			r.Wait()
			if c.Rank() == 0 {
				fmt.Println("step", step, "sum", total[0])
			}
		}
		return r.Free()
	})
	// Output:
	// step 1 sum 6
	// step 2 sum 12
}

// Buffered sends return at once: the message is copied into the attached
// buffer.
func ExampleBsend() {
	mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if c.Rank() == 0 {
			w.BufferAttach(make([]byte, 1024))
			mpi.Bsend(c, []float64{1.5, 2.5}, 1, 0) // returns before rank 1 receives
			w.BufferDetach()                        // waits until the message left the buffer
			return nil
		}
		buf := make([]float64, 2)
		mpi.Recv(c, buf, 0, 0)
		fmt.Println(buf)
		return nil
	})
	// Output: [1.5 2.5]
}

// Attributes: a keyval whose copy callback runs on Dup; the predefined
// attributes.
func ExampleCommCreateKeyval() {
	mpi.Run(1, func(w *mpi.World) error {
		c := w.CommWorld()
		gen := mpi.CommCreateKeyval(
			func(old *mpi.Comm, k *mpi.Keyval, v any) (any, bool, error) { return v.(int) + 1, true, nil },
			nil)
		c.SetAttr(gen, 0)
		d, _ := c.Dup()
		v, _, _ := d.GetAttr(gen)
		fmt.Println("generation of the dup:", v)
		ft, _, _ := c.GetAttr(mpi.AttrFT)
		fmt.Printf("fault tolerance: %+v\n", ft)
		return d.Free()
	})
	// Output:
	// generation of the dup: 1
	// fault tolerance: {Enabled:true Model:ULFM}
}

// Info objects hold hints as ordered string pairs.
func ExampleNewInfo() {
	info := mpi.NewInfo()
	info.Set("wdir", "/tmp")
	info.Set("soft", "1:4")
	v, ok := info.Get("wdir")
	fmt.Println(info.Keys(), v, ok)
	// Output: [wdir soft] /tmp true
}
