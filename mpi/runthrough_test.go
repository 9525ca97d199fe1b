package mpi_test

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// Run-through stabilization (seed 003, chapter 17) in process: mpi.Run
// ranks, crashes injected with World.Kill.

// awaitFailure blocks until the failure of rank r of c is known here (a
// receive from it on an unused tag completes with the failure).
func awaitFailure(c *mpi.Comm, r int) error {
	if _, err := mpi.Recv(c, []int{0}, r, 9999); !errors.Is(err, mpi.ErrRankFailStop) {
		return fmt.Errorf("receive from killed rank %d: want ErrRankFailStop, got %v", r, err)
	}
	return nil
}

func worldRanks(g *mpi.Group) []int {
	if g == nil {
		return nil
	}
	return g.WorldRanks()
}

// 17.5.1: MPI_ERR_RANK_FAIL_STOP and ULFM's MPI_ERR_PROC_FAILED are one
// class under two names.
func TestRunThroughErrorClass(t *testing.T) {
	err := error(&mpi.Error{Class: mpi.ErrProcFailed, Op: "MPI_Recv", Peer: 1})
	if !errors.Is(err, mpi.ErrRankFailStop) || !errors.Is(err, mpi.ErrProcFailed) {
		t.Fatalf("errors.Is disagrees: %v", err)
	}
	if mpi.ErrorClass(err) != mpi.ErrRankFailStop {
		t.Fatalf("ErrorClass = %v", mpi.ErrorClass(err))
	}
	if errors.Is(&mpi.Error{Class: mpi.ErrRevoked}, mpi.ErrRankFailStop) {
		t.Fatal("ErrRevoked matches ErrRankFailStop")
	}
}

// Examples 17.1-17.4 (17.4.4): GroupFailed and the group operations.
func TestRunThroughExamples17_1to17_4(t *testing.T) {
	work := newGate()
	run(t, 7, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 5:
			work.wait(t)
			w.Kill()
		case 3:
			w.Kill()
		case 0:
			if err := awaitFailure(c, 3); err != nil {
				return err
			}
			var out []string
			printf := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
			// Example 17.1: has rank 5 failed?
			worldGroup := c.Group()
			failed1, err := c.GroupFailed()
			if err != nil {
				return err
			}
			rank5 := func(failed *mpi.Group) {
				r, err := mpi.TranslateRanks(worldGroup, []int{5}, failed)
				if err == nil && r[0] != mpi.Undefined {
					printf("Rank 5 has failed")
				}
			}
			rank5(failed1)
			// "Do some work": rank 5 fails meanwhile.
			work.open()
			if err := awaitFailure(c, 5); err != nil {
				return err
			}
			failed2, _ := c.GroupFailed()
			rank5(failed2)
			// Example 17.2: any new failures?
			if mpi.CompareGroups(failed1, failed2) == mpi.Ident {
				printf("No new failed processes have been detected")
			} else {
				printf("New failed processes have been detected")
			}
			again, _ := c.GroupFailed()
			if mpi.CompareGroups(failed2, again) == mpi.Ident {
				printf("No new failed processes have been detected")
			}
			// Example 17.3: which? (The seed passes the groups to
			// MPI_Group_difference in the other order, which would give
			// the empty group.)
			newly, err := mpi.GroupDifference(failed2, failed1)
			if err != nil {
				return err
			}
			printf("newly failed %v", newly.WorldRanks())
			// Example 17.4: iterate over the failed processes.
			num := failed2.Size()
			ranks := make([]int, num)
			for i := range ranks {
				ranks[i] = i
			}
			wr, err := mpi.TranslateRanks(failed2, ranks, worldGroup)
			if err != nil {
				return err
			}
			for i := 0; i < num; i++ {
				printf("Process %d in MPI_COMM_WORLD has failed", wr[i])
			}
			want := []string{
				"Rank 5 has failed",
				"New failed processes have been detected",
				"No new failed processes have been detected",
				"newly failed [5]",
				"Process 3 in MPI_COMM_WORLD has failed",
				"Process 5 in MPI_COMM_WORLD has failed",
			}
			if !slices.Equal(out, want) {
				return fmt.Errorf("printed %q, want %q", out, want)
			}
			if !c.RunThrough() {
				return errors.New("GroupFailed did not make the communicator run-through")
			}
			if _, err := c.RemoteGroupFailed(); !errors.Is(err, mpi.ErrComm) {
				return fmt.Errorf("RemoteGroupFailed on an intracommunicator: %v", err)
			}
		}
		return nil
	})
}

// 17.6: a new failure disables wildcard receives on every communicator
// containing it; pending ones complete with the error (also under
// Waitany, which does not poll the failure), new ones fail at once,
// ReenableAnySource returns the failed group and re-enables them; a
// later failure disables them again. 17.6.1: nonblocking wildcard
// receives report at completion, not at the start call.
func TestRunThroughWildcardDisableAndReenable(t *testing.T) {
	posted, reenabled, second := newGate(), newGate(), newGate()
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		other, err := c.Split(c.Rank()%2, 0) // {0,2} and {1,3}
		if err != nil {
			return err
		}
		switch c.Rank() {
		case 3:
			posted.wait(t)
			w.Kill()
		case 2:
			second.wait(t)
			w.Kill()
		case 1:
			reenabled.wait(t)
			return mpi.Send(c, []int{7}, 0, 1)
		case 0:
			if err := c.EnableRunThrough(); err != nil {
				return err
			}
			if err := other.EnableRunThrough(); err != nil {
				return err
			}
			buf := []int{0}
			pending, err := mpi.Irecv(c, buf, mpi.AnySource, 1)
			if err != nil {
				return err
			}
			onOther, err := mpi.Irecv(other, []int{0}, mpi.AnySource, 1)
			if err != nil {
				return err
			}
			posted.open()
			// Waitany completes the pending receive without polling.
			reqs := []*mpi.Request{pending}
			if _, _, err := mpi.Waitany(reqs); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("pending wildcard receive after a failure: want ErrRankFailStop, got %v", err)
			}
			// A new wildcard receive fails at once, the nonblocking one at
			// completion.
			if _, err := mpi.Recv(c, buf, mpi.AnySource, 1); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("blocking wildcard receive while disabled: %v", err)
			}
			req, err := mpi.Irecv(c, buf, mpi.AnySource, 1)
			if err != nil {
				return fmt.Errorf("Irecv must not report the failure at the start call: %v", err)
			}
			if _, done, err := req.Test(); !done || !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("Test of a wildcard receive while disabled: done=%v err=%v", done, err)
			}
			// A communicator without the failed process is unaffected.
			if _, done, err := onOther.Test(); done || err != nil {
				return fmt.Errorf("wildcard receive on a communicator without the failed process: done=%v %v", done, err)
			}
			if err := onOther.Cancel(); err != nil {
				return err
			}
			if st, err := onOther.Wait(); err != nil || !st.Cancelled {
				return fmt.Errorf("cancelled receive: %+v %v", st, err)
			}
			g, err := c.ReenableAnySource()
			if err != nil {
				return err
			}
			if !slices.Equal(worldRanks(g), []int{3}) {
				return fmt.Errorf("ReenableAnySource returned %v, want [3]", worldRanks(g))
			}
			reenabled.open()
			st, err := mpi.Recv(c, buf, mpi.AnySource, 1)
			if err != nil || buf[0] != 7 || st.Source != 1 {
				return fmt.Errorf("wildcard receive after ReenableAnySource: %v %+v %v", buf, st, err)
			}
			// Rank 2's failure disables them again.
			req, _ = mpi.Irecv(c, buf, mpi.AnySource, 1)
			second.open()
			if _, err := req.Wait(); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("wildcard receive after a second failure: %v", err)
			}
			g, _ = c.ReenableAnySource()
			if !slices.Equal(worldRanks(g), []int{2, 3}) {
				return fmt.Errorf("second ReenableAnySource returned %v", worldRanks(g))
			}
		}
		return nil
	})
}

// 17.6, advice to implementors (manager/worker): a message that already
// arrived from a live process is still delivered to a wildcard receive
// while wildcards are disabled. Messages of the failed process sent before
// it failed may be received (17.6 rationale); after a receive from it
// failed, no later one succeeds (advice to implementors).
func TestRunThroughQueuedMessagesAndOrdering(t *testing.T) {
	sent := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			if err := mpi.Send(c, []int{22}, 0, 4); err != nil {
				return err
			}
			sent.wait(t)
			w.Kill()
		case 1:
			if err := mpi.Send(c, []int{11}, 0, 1); err != nil {
				return err
			}
			sent.open()
		case 0:
			c.EnableRunThrough()
			// Both messages are here once rank 1's probe sees its own.
			if _, err := c.Probe(1, 1); err != nil {
				return err
			}
			if _, err := c.Probe(2, 4); err != nil {
				return err
			}
			if err := awaitFailure(c, 2); err != nil {
				return err
			}
			buf := []int{0}
			if st, err := mpi.Recv(c, buf, mpi.AnySource, 1); err != nil || buf[0] != 11 || st.Source != 1 {
				return fmt.Errorf("queued message from a live process: %v %+v %v", buf, st, err)
			}
			if _, err := mpi.Recv(c, buf, mpi.AnySource, 1); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("nothing queued: want ErrRankFailStop, got %v", err)
			}
			if _, err := mpi.Recv(c, buf, 2, 5); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("receive from the failed rank, nothing queued: %v", err)
			}
			if _, err := mpi.Recv(c, buf, 2, 4); err != nil || buf[0] != 22 {
				return fmt.Errorf("message the failed rank sent before failing: %v %v", buf, err)
			}
			for i := 0; i < 2; i++ {
				if _, err := mpi.Recv(c, buf, 2, 4); !errors.Is(err, mpi.ErrRankFailStop) {
					return fmt.Errorf("receive %d after the failed one: %v", i, err)
				}
			}
		}
		return nil
	})
}

// 17.6.2: Sendrecv with a failed peer returns ErrInStatus, the failed rank
// in the status, and calls the error handler once.
func TestRunThroughSendrecvErrInStatus(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 3:
			w.Kill()
		case 0:
			var calls atomic.Int32
			c.SetErrhandler(mpi.NewErrhandler(func(*mpi.Comm, error) { calls.Add(1) }))
			defer c.SetErrhandler(mpi.ErrorsReturn)
			c.EnableRunThrough()
			if err := awaitFailure(c, 3); err != nil {
				return err
			}
			calls.Store(0)
			// Failed destination, live source.
			st, err := mpi.Sendrecv(c, []int{1}, 3, 0, []int{0}, 1, 0)
			if !errors.Is(err, mpi.ErrInStatus) || st.Source != 3 || !errors.Is(st.Err, mpi.ErrRankFailStop) {
				return fmt.Errorf("failed destination: %+v %v", st, err)
			}
			// Failed source, live destination.
			st, err = mpi.Sendrecv(c, []int{2}, 1, 0, []int{0}, 3, 0)
			if !errors.Is(err, mpi.ErrInStatus) || st.Source != 3 || !errors.Is(st.Err, mpi.ErrRankFailStop) {
				return fmt.Errorf("failed source: %+v %v", st, err)
			}
			// Wildcard source while wildcards are disabled.
			st, err = mpi.Sendrecv(c, []int{3}, 2, 0, []int{0}, mpi.AnySource, 7)
			if !errors.Is(err, mpi.ErrInStatus) || !errors.Is(st.Err, mpi.ErrRankFailStop) {
				return fmt.Errorf("wildcard source: %+v %v", st, err)
			}
			if n := calls.Load(); n != 3 {
				return fmt.Errorf("error handler called %d times for 3 operations", n)
			}
			// Without failures Sendrecv is unchanged.
			buf := []int{0}
			if st, err := mpi.Sendrecv(c, []int{5}, 1, 1, buf, 1, 1); err != nil || buf[0] != 6 || st.Source != 1 {
				return fmt.Errorf("failure-free Sendrecv: %v %+v %v", buf, st, err)
			}
		case 1:
			buf := []int{0}
			if _, err := mpi.Recv(c, buf, 0, 0); err != nil || buf[0] != 2 {
				return fmt.Errorf("rank 1: %v %v", buf, err)
			}
			if _, err := mpi.Sendrecv(c, []int{6}, 0, 1, buf, 0, 1); err != nil {
				return err
			}
		case 2:
			buf := []int{0}
			if _, err := mpi.Recv(c, buf, 0, 0); err != nil || buf[0] != 3 {
				return fmt.Errorf("rank 2: %v %v", buf, err)
			}
		}
		return nil
	})
}
