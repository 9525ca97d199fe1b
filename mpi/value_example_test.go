package mpi_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ftmpi/ftmpi/mpi"
)

// Any Go value travels as one message; the receiver needs no size.
func ExampleSendValue() {
	type Particle struct {
		Name string
		Pos  []float64
		Tags map[string]int
	}
	mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		if c.Rank() == 0 {
			return mpi.SendValue(c, Particle{"p1", []float64{1, 2, 3}, map[string]int{"charge": -1}}, 1, 0)
		}
		p, st, err := mpi.RecvValue[Particle](c, mpi.AnySource, 0)
		if err != nil {
			return err
		}
		fmt.Println(p.Name, p.Pos, p.Tags, "from rank", st.Source)
		return nil
	})
	// Output: p1 [1 2 3] map[charge:-1] from rank 0
}

// Word counts merged with a Go function, applied in rank order.
func ExampleAllreduceValue() {
	mpi.Run(3, func(w *mpi.World) error {
		c := w.CommWorld()
		text := []string{"a b a", "b c", "a"}[c.Rank()]
		counts := map[string]int{}
		for _, word := range strings.Fields(text) {
			counts[word]++
		}
		total, err := mpi.AllreduceValue(c, counts, func(a, b map[string]int) map[string]int {
			out := maps.Clone(a)
			for k, v := range b {
				out[k] += v
			}
			return out
		})
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			for _, k := range slices.Sorted(maps.Keys(total)) {
				fmt.Print(k, "=", total[k], " ")
			}
			fmt.Println()
		}
		return nil
	})
	// Output: a=3 b=2 c=1
}

// A nonblocking agreement: Wait returns the agreed flag.
func ExampleComm_Iagree() {
	mpi.Run(3, func(w *mpi.World) error {
		c := w.CommWorld()
		req, err := c.Iagree(c.Rank() != 1)
		if err != nil {
			return err
		}
		flag, err := req.Wait()
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			fmt.Println("agreed:", flag)
		}
		return nil
	})
	// Output: agreed: false
}
