package txn_test

import (
	"encoding/binary"
	"fmt"

	"github.com/ftmpi/ftmpi/mpi"
	"github.com/ftmpi/ftmpi/txn"
)

// A running sum over the ranks, one transaction per round: rank 2 dies in
// round 1, which is rolled back at the survivors and redone on them.
func ExampleTx_Step() {
	mpi.Run(4, func(w *mpi.World) error {
		var total int64 // this process's state
		tx, err := txn.New(w.CommWorld(), txn.Config{
			Save:    func() ([]byte, error) { return binary.AppendVarint(nil, total), nil },
			Restore: func(b []byte) error { total, _ = binary.Varint(b); return nil },
		})
		if err != nil {
			return err
		}
		for round := 0; round < 3; round++ {
			err := tx.Step(func(c *mpi.Comm) error {
				if round == 1 && w.Rank() == 2 {
					w.Kill()
				}
				n := []int64{0}
				if err := mpi.Allreduce(c, []int64{1}, n, mpi.Sum); err != nil {
					return err
				}
				total += n[0]
				return nil
			})
			if err != nil {
				return err
			}
			if tx.Comm().Rank() == 0 {
				fmt.Printf("round %d: total %d on %d ranks\n", round, total, tx.Comm().Size())
			}
		}
		if tx.Comm().Rank() == 0 {
			st := tx.Stats()
			fmt.Printf("%d commits, %d rollback, lost %v\n", st.Commits, st.Rollbacks, st.Lost)
		}
		return nil
	})
	// Output:
	// round 0: total 4 on 4 ranks
	// round 1: total 7 on 3 ranks
	// round 2: total 10 on 3 ranks
	// 3 commits, 1 rollback, lost [2]
}
