// Command txn is transactional fault tolerance (seed 002, 6.1.3) with
// package txn: a sum of squares over [0, N) computed in steps of C numbers,
// each step a transaction. The processes split a step's numbers among
// themselves, add them up, and Allreduce the partial sums into the running
// total that every process keeps (its state, saved at each commit). A
// process that dies in a step makes the survivors roll the step back,
// shrink the communicator and redo the step among themselves, so the
// result line is the same with or without failures:
//
//	go run ./cmd/ftmpirun -n 4 ./examples/txn
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject 'kill:rank=2,on=txn: step 5 committed' ./examples/txn -progress
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math/big"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
	"github.com/ftmpi/ftmpi/txn"
)

func main() {
	n := flag.Int64("n", 200000, "sum the squares of [0, N)")
	chunk := flag.Int64("chunk", 10000, "numbers per step (transaction)")
	pace := flag.Duration("pace", 20*time.Millisecond, "extra time each step takes (so that a kill lands in a step)")
	progress := flag.Bool("progress", false, "print \"txn: step K committed\" after each step (for --inject ...,on=LINE)")
	flag.Parse()
	if *n < 0 || *chunk <= 0 {
		fmt.Fprintln(os.Stderr, "txn: -n must be >= 0 and -chunk > 0")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "txn:", err)
		os.Exit(1)
	}
	if err := run(w, *n, *chunk, *pace, *progress); err != nil {
		fmt.Fprintf(os.Stderr, "txn: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	w.Finalize()
}

func run(w *mpi.World, n, chunk int64, pace time.Duration, progress bool) error {
	var total uint64 // the running sum (mod 2^64), the same at every process
	tx, err := txn.New(w.CommWorld(), txn.Config{
		Save:    func() ([]byte, error) { return binary.LittleEndian.AppendUint64(nil, total), nil },
		Restore: func(b []byte) error { total = binary.LittleEndian.Uint64(b); return nil },
	})
	if err != nil {
		return err
	}
	steps := (n + chunk - 1) / chunk
	for k := int64(0); k < steps; k++ {
		lo, hi := k*chunk, min((k+1)*chunk, n)
		err := tx.Step(func(c *mpi.Comm) error {
			var part uint64
			for i := lo + int64(c.Rank()); i < hi; i += int64(c.Size()) {
				part += uint64(i) * uint64(i)
			}
			time.Sleep(pace) // the work of a real step
			sum := []uint64{0}
			if err := mpi.Allreduce(c, []uint64{part}, sum, mpi.Sum); err != nil {
				return err
			}
			total += sum[0]
			return nil
		})
		if err != nil {
			return fmt.Errorf("step %d: %w", k, err)
		}
		if progress && tx.Comm().Rank() == 0 {
			fmt.Printf("txn: step %d committed\n", k)
		}
	}
	if tx.Comm().Rank() == 0 {
		// The closed form, to check: (n-1) n (2n-1) / 6 mod 2^64.
		want := new(big.Int).Mul(big.NewInt(n-1), big.NewInt(n))
		want.Mul(want, big.NewInt(2*n-1))
		want.Div(want, big.NewInt(6))
		want.Mod(want, new(big.Int).Lsh(big.NewInt(1), 64))
		st := tx.Stats()
		fmt.Printf("result: txn n=%d steps=%d total=%d correct=%v\n", n, steps, total, want.Uint64() == total)
		fmt.Printf("txn: %d commits, %d rollbacks, %d repairs, lost %v, %d processes at the end\n",
			st.Commits, st.Rollbacks, st.Repairs, st.Lost, tx.Comm().Size())
	}
	return nil
}
