package mpi

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Commit from the leader (internal/ft/spare's Outbox): only the leader of
// a repair tells its spares Commit, the next survivor once the ones before
// it are known failed. Here the leader (rank 0) fails after the second
// agreement decided to commit, before its Commit: the spare that replaces
// rank 3 must still become a rank (rank 1 tells it once it learns rank 0
// failed: it decided, owing the Commit, before rank 0 failed), and a second Replace over the repaired communicator, in which
// the replacement takes part, replaces rank 0 with the other spare. A
// spare told by the leader only would wait in Init for ever and the
// second repair's agreement with it (the run's deadline fails the test).
func TestReplaceLeaderFailsBeforeCommit(t *testing.T) {
	seen := newViews()
	var hooked atomic.Int32
	owed := make(chan struct{}) // closed when rank 1 owes the first repair's Commit
	var owedOnce sync.Once
	// second runs the repair of the repaired communicator nc (rank 0, the
	// first repair's leader, failed in it) and checks the result.
	second := func(w *World, nc *Comm) error {
		nc.SetErrhandler(ErrorsReturn)
		if err := untilFailure(nc); err != nil {
			return err
		}
		nc2, err := nc.Replace()
		if err != nil {
			return fmt.Errorf("the second Replace: %w", err)
		}
		return seen.check(w, nc2, 4)
	}
	err := runSpares(t, 4, 2, func(w *World) error {
		if nc := w.Replacement(); nc != nil {
			if nc.groupProcs()[0] == 0 { // the first repair's spare: rank 0 is the failed leader
				return second(w, nc)
			}
			return seen.check(w, nc, 4)
		}
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		switch w.Rank() {
		case 0:
			w.rt.Spares.SetDecidedHook(func(commit, handed bool) {
				if commit && !handed && hooked.Add(1) == 1 {
					// Rank 1 owes the Commit before it learns this failure:
					// the hand-over goes through the failure's notice.
					select {
					case <-owed:
					case <-time.After(time.Minute):
					}
					w.Kill() // between the agreement that committed and the leader's Commit
				}
			})
		case 1:
			w.rt.Spares.SetDecidedHook(func(commit, handed bool) {
				if commit && handed && w.rt.Spares.Owed() > 0 {
					owedOnce.Do(func() { close(owed) })
				}
			})
		}
		if w.Rank() == 3 {
			w.Kill()
		}
		if err := untilFailure(c); err != nil {
			return err
		}
		nc, err := c.Replace()
		if err != nil {
			return fmt.Errorf("Replace: %w", err)
		}
		return second(w, nc)
	})
	if err != nil {
		t.Fatal(err)
	}
	if hooked.Load() != 1 {
		t.Fatal("rank 0 never decided a commit")
	}
	select {
	case <-owed:
	default:
		t.Fatal("rank 1 never owed the Commit (it knew of rank 0's failure before it decided)")
	}
	if len(seen.procs) != 4 {
		t.Fatalf("%d processes checked the twice-repaired communicator, want 4", len(seen.procs))
	}
	for p, got := range seen.procs {
		checkUniform(t, seen.procs, p, got)
		if got[1] != 1 || got[2] != 2 || got[0] < 4 || got[3] < 4 || got[0] == got[3] {
			t.Errorf("process %d sees %v: want 1 and 2 in place, ranks 0 and 3 taken by the two spares", p, got)
		}
	}
}
