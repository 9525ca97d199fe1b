package mpi_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/mpi"
)

// MPI-4.1 3.9: a persistent send and receive, started and completed many
// times with new buffer contents each time; completion leaves them
// inactive and reusable; Waitall keeps their entries.
func TestPersistentSendRecvRounds(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := make([]int64, 3)
		var r *mpi.Request
		var err error
		if c.Rank() == 0 {
			r, err = mpi.SendInit(c, buf, 1, 7)
		} else {
			r, err = mpi.RecvInit(c, buf, 0, 7)
		}
		if err != nil {
			return err
		}
		// Inactive before the first Start: Wait and Test return at once.
		if st, err := r.Wait(); err != nil || st.Source != mpi.AnySource {
			return fmt.Errorf("wait on an inactive persistent request: %+v %v", st, err)
		}
		for round := 0; round < 20; round++ {
			if c.Rank() == 0 {
				for i := range buf {
					buf[i] = int64(round*10 + i)
				}
			}
			if err := r.Start(); err != nil {
				return fmt.Errorf("round %d: start: %v", round, err)
			}
			var st mpi.Status
			if round%2 == 0 {
				st, err = r.Wait()
			} else {
				reqs := []*mpi.Request{r, nil}
				var sts []mpi.Status
				sts, err = mpi.Waitall(reqs)
				if reqs[0] != r {
					return fmt.Errorf("round %d: Waitall set the persistent entry to %v", round, reqs[0])
				}
				st = sts[0]
			}
			if err != nil {
				return fmt.Errorf("round %d: wait: %v", round, err)
			}
			if c.Rank() == 1 {
				if st.Source != 0 || st.Tag != 7 || st.Count != 3 {
					return fmt.Errorf("round %d: status %+v", round, st)
				}
				for i, v := range buf {
					if v != int64(round*10+i) {
						return fmt.Errorf("round %d: got %v", round, buf)
					}
				}
			}
			// Completed: inactive again, a second Wait gives an empty status.
			if st, err := r.Wait(); err != nil || st.Count != 0 {
				return fmt.Errorf("round %d: second wait: %+v %v", round, st, err)
			}
		}
		return r.Free()
	})
}

// Ssend_init completes only after the receive matched; Startall starts
// several requests, Waitany/Testany skip inactive ones.
func TestPersistentStartallSsend(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 0:
			a, b := []int32{0}, []int32{0}
			r1, err := mpi.SsendInit(c, a, 1, 1)
			if err != nil {
				return err
			}
			r2, err := mpi.SendInit(c, b, 2, 2)
			if err != nil {
				return err
			}
			reqs := []*mpi.Request{r1, r2}
			for round := int32(1); round <= 5; round++ {
				a[0], b[0] = round, -round
				if err := mpi.Startall(reqs); err != nil {
					return err
				}
				for n := 0; n < 2; n++ {
					i, _, err := mpi.Waitany(reqs)
					if err != nil || i == mpi.Undefined {
						return fmt.Errorf("waitany: %d %v", i, err)
					}
				}
				if i, _, err := mpi.Waitany(reqs); i != mpi.Undefined || err != nil {
					return fmt.Errorf("waitany with only inactive requests: %d %v", i, err)
				}
				if reqs[0] != r1 || reqs[1] != r2 {
					return errors.New("Waitany set a persistent entry to nil")
				}
			}
			return errors.Join(r1.Free(), r2.Free())
		default:
			buf := []int32{0}
			r, err := mpi.RecvInit(c, buf, 0, c.Rank())
			if err != nil {
				return err
			}
			for round := int32(1); round <= 5; round++ {
				if err := r.Start(); err != nil {
					return err
				}
				for {
					_, ok, err := r.Test()
					if err != nil {
						return err
					}
					if ok {
						break
					}
				}
				want := round
				if c.Rank() == 2 {
					want = -round
				}
				if buf[0] != want {
					return fmt.Errorf("round %d: got %d", round, buf[0])
				}
			}
			return nil
		}
	})
}

// Bad input: Start of an active request, of a non-persistent one, of a
// freed one, of nil; Startall with a duplicate; all ErrRequest, none hangs.
func TestPersistentBadInput(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			_, err := mpi.Recv(c, []int{0}, 0, 1)
			return err
		}
		buf := []int{5}
		r, err := mpi.RecvInit(c, buf, 1, 3)
		if err != nil {
			return err
		}
		if err := r.Start(); err != nil {
			return err
		}
		if err := r.Start(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("start of an active request: want ErrRequest, got %v", err)
		}
		if err := mpi.Startall([]*mpi.Request{r}); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("startall of an active request: want ErrRequest, got %v", err)
		}
		if err := r.Cancel(); err != nil {
			return err
		}
		if st, err := r.Wait(); err != nil || !st.Cancelled {
			return fmt.Errorf("cancelled persistent receive: %+v %v", st, err)
		}
		s, err := mpi.SendInit(c, buf, 1, 1)
		if err != nil {
			return err
		}
		if err := mpi.Startall([]*mpi.Request{s, s}); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("startall with a duplicate: want ErrRequest, got %v", err)
		}
		if err := mpi.Startall([]*mpi.Request{s, nil}); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("startall with nil: want ErrRequest, got %v", err)
		}
		// Nothing was started by the failed Startall calls.
		if err := s.Start(); err != nil {
			return fmt.Errorf("start after refused startall: %v", err)
		}
		if _, err := s.Wait(); err != nil {
			return err
		}
		ir, err := mpi.Isend(c, buf, 1, 2)
		if err != nil {
			return err
		}
		if err := ir.Start(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("start of an Isend request: want ErrRequest, got %v", err)
		}
		if err := ir.Cancel(); err != nil {
			return err
		}
		if err := ir.Free(); err != nil { // sent eagerly: already complete
			return err
		}
		if _, err := ir.Wait(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("wait on a freed request: want ErrRequest, got %v", err)
		}
		if err := r.Free(); err != nil {
			return err
		}
		if err := r.Start(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("start of a freed request: want ErrRequest, got %v", err)
		}
		if err := r.Free(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("double free: want ErrRequest, got %v", err)
		}
		var nilReq *mpi.Request
		if err := nilReq.Start(); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("start of nil: %v", err)
		}
		if _, err := mpi.SendInit(c, buf, 5, 0); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("send_init to rank 5: want ErrRank, got %v", err)
		}
		if _, err := mpi.RecvInit(c, buf, 0, -3); !errors.Is(err, mpi.ErrTag) {
			return fmt.Errorf("recv_init with tag -3: want ErrTag, got %v", err)
		}
		if _, err := mpi.BcastInit(c, buf, 9); !errors.Is(err, mpi.ErrRoot) {
			return fmt.Errorf("bcast_init with root 9: want ErrRoot, got %v", err)
		}
		// Release rank 1 (its Bcast_init's failure is local: the one
		// above took a collective sequence number, which rank 1 never
		// uses).
		return s.Free()
	})
}

// Seed 002 A.2: a persistent request whose peer failed between two Starts
// completes with ErrProcFailed at Wait, never at Start, and keeps doing so
// at every later Start.
func TestPersistentPeerKilledBetweenStarts(t *testing.T) {
	killNow := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 1:
			buf := []int{0}
			for i := 0; i < 3; i++ {
				if _, err := mpi.Recv(c, buf, 0, 4); err != nil {
					return err
				}
				if err := mpi.Send(c, buf, 0, 5); err != nil {
					return err
				}
			}
			killNow.wait(t)
			w.Kill()
			return nil
		case 0:
			buf, in := []int{0}, []int{0}
			s, err := mpi.SendInit(c, buf, 1, 4)
			if err != nil {
				return err
			}
			r, err := mpi.RecvInit(c, in, 1, 5)
			if err != nil {
				return err
			}
			reqs := []*mpi.Request{s, r}
			for i := 0; i < 3; i++ {
				buf[0] = i + 1
				if err := mpi.Startall(reqs); err != nil {
					return err
				}
				if _, err := mpi.Waitall(reqs); err != nil {
					return err
				}
				if in[0] != i+1 {
					return fmt.Errorf("round %d: echo %d", i, in[0])
				}
			}
			// The receive is started before the kill; it completes with
			// the failure.
			if err := r.Start(); err != nil {
				return err
			}
			killNow.open()
			if _, err := r.Wait(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("persistent receive from a rank killed while it was active: want ErrProcFailed, got %v", err)
			}
			for i := 0; i < 2; i++ {
				if err := mpi.Startall(reqs); err != nil {
					return fmt.Errorf("start after the failure must not fail: %v", err)
				}
				sts, err := mpi.Waitall(reqs)
				if !errors.Is(err, mpi.ErrInStatus) || !errors.Is(sts[0].Err, mpi.ErrProcFailed) || !errors.Is(sts[1].Err, mpi.ErrProcFailed) {
					return fmt.Errorf("restart %d after the failure: %v %v %v", i, err, sts[0].Err, sts[1].Err)
				}
			}
			// Live peers are unaffected.
			s2, err := mpi.SendInit(c, []int{99}, 2, 6)
			if err != nil {
				return err
			}
			if err := s2.Start(); err != nil {
				return err
			}
			if _, err := s2.Wait(); err != nil {
				return err
			}
			return errors.Join(s.Free(), r.Free(), s2.Free())
		case 2:
			buf := []int{0}
			if _, err := mpi.Recv(c, buf, 0, 6); err != nil || buf[0] != 99 {
				return fmt.Errorf("rank 2: %v %v", buf, err)
			}
		}
		return nil
	})
}

// Seed 002 A.2.2: a wildcard persistent receive raises ErrPending while a
// failure is unacknowledged, staying active (Start refuses it); after
// FailureAck it completes and can be started again.
func TestPersistentWildcardPending(t *testing.T) {
	acked := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			w.Kill()
		case 0:
			if _, err := mpi.Recv(c, []int{0}, 2, 1); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("recv from killed rank: %v", err)
			}
			buf := []int{0}
			r, err := mpi.RecvInit(c, buf, mpi.AnySource, 3)
			if err != nil {
				return err
			}
			if err := r.Start(); err != nil {
				return fmt.Errorf("start of a wildcard receive must not fail: %v", err)
			}
			if _, err := r.Wait(); !errors.Is(err, mpi.ErrPending) {
				return fmt.Errorf("wildcard persistent receive: want ErrPending, got %v", err)
			}
			if err := r.Start(); !errors.Is(err, mpi.ErrRequest) {
				return fmt.Errorf("start of the pending request: want ErrRequest, got %v", err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			acked.open()
			if st, err := r.Wait(); err != nil || buf[0] != 11 || st.Source != 1 {
				return fmt.Errorf("after ack: %v %+v %v", buf, st, err)
			}
			if err := r.Start(); err != nil {
				return err
			}
			if st, err := r.Wait(); err != nil || buf[0] != 12 || st.Source != 1 {
				return fmt.Errorf("restart after ack: %v %+v %v", buf, st, err)
			}
			return r.Free()
		case 1:
			acked.wait(t)
			for _, v := range []int{11, 12} {
				if err := mpi.Send(c, []int{v}, 0, 3); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Seed 002 A.2.3: after Revoke a started persistent request completes with
// ErrRevoked; after Shrink the old communicator's requests keep failing
// and new ones on the shrunk communicator work.
func TestPersistentRevokeBetweenStarts(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		b, err := c.BarrierInit()
		if err != nil {
			return err
		}
		var s *mpi.Request
		if c.Rank() == 2 {
			if err := b.Start(); err != nil {
				return err
			}
			if _, err := b.Wait(); err != nil {
				return err
			}
			// Both others left the barrier before the revocation.
			for _, from := range []int{0, 1} {
				if _, err := mpi.Recv(c, []int{0}, from, 1); err != nil {
					return err
				}
			}
			if err := c.Revoke(); err != nil {
				return err
			}
		} else {
			peer := 1 - c.Rank()
			buf, in := []int{c.Rank()}, []int{-1}
			if s, err = mpi.SendInit(c, buf, peer, 2); err != nil {
				return err
			}
			r, err := mpi.RecvInit(c, in, peer, 2)
			if err != nil {
				return err
			}
			reqs := []*mpi.Request{s, r, b}
			if err := mpi.Startall(reqs); err != nil {
				return err
			}
			if _, err := mpi.Waitall(reqs); err != nil || in[0] != peer {
				return fmt.Errorf("before revoke: %v %v", in, err)
			}
			if err := mpi.Send(c, []int{1}, 2, 1); err != nil {
				return err
			}
			// A receive no one sends completes once the revocation arrived.
			if _, err := mpi.Recv(c, []int{0}, 2, 99); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("blocked receive: want ErrRevoked, got %v", err)
			}
			for i := 0; i < 2; i++ {
				if err := mpi.Startall(reqs); err != nil {
					return fmt.Errorf("start after revoke: %v", err)
				}
				sts, _ := mpi.Waitall(reqs)
				for k, st := range sts {
					if !errors.Is(st.Err, mpi.ErrRevoked) {
						return fmt.Errorf("request %d after revoke: want ErrRevoked, got %v", k, st.Err)
					}
				}
			}
			if err := r.Free(); err != nil {
				return err
			}
		}
		sc, err := c.Shrink()
		if err != nil {
			return err
		}
		if s != nil {
			if err := s.Start(); err != nil {
				return err
			}
			if _, err := s.Wait(); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("old communicator's request after Shrink: want ErrRevoked, got %v", err)
			}
			if err := s.Free(); err != nil {
				return err
			}
		}
		sc.SetErrhandler(mpi.ErrorsReturn)
		sum := []int{0}
		a, err := mpi.AllreduceInit(sc, []int{c.Rank() + 1}, sum, mpi.Sum)
		if err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			if err := a.Start(); err != nil {
				return err
			}
			if _, err := a.Wait(); err != nil || sum[0] != 6 {
				return fmt.Errorf("allreduce_init on the shrunk communicator: %v %v", sum, err)
			}
		}
		return errors.Join(b.Free(), a.Free())
	})
}

// MPI-4.1 6.13: persistent collectives, started many times, interleaved
// with blocking collectives on the same communicator.
func TestPersistentCollectives(t *testing.T) {
	const n = 4
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		me := c.Rank()
		bc := make([]float64, 2)
		bcr, err := mpi.BcastInit(c, bc, 1)
		if err != nil {
			return err
		}
		send, red := []int{0}, []int{0}
		rr, err := mpi.ReduceInit(c, send, red, mpi.Sum, 0)
		if err != nil {
			return err
		}
		all := make([]int, n)
		ag, err := mpi.AllgatherInit(c, send, all)
		if err != nil {
			return err
		}
		sc := make([]int, 1)
		scr, err := mpi.ScanInit(c, send, sc, mpi.Sum)
		if err != nil {
			return err
		}
		bar, err := c.BarrierInit()
		if err != nil {
			return err
		}
		for round := 1; round <= 6; round++ {
			if me == 1 {
				bc[0], bc[1] = float64(round), float64(-round)
			}
			send[0] = me * round
			if err := mpi.Startall([]*mpi.Request{bcr, rr, ag}); err != nil {
				return err
			}
			// A blocking collective between the starts.
			if err := c.Barrier(); err != nil {
				return err
			}
			if err := mpi.Startall([]*mpi.Request{scr, bar}); err != nil {
				return err
			}
			if _, err := mpi.Waitall([]*mpi.Request{bcr, rr, ag, scr, bar}); err != nil {
				return fmt.Errorf("round %d: %v", round, err)
			}
			if bc[0] != float64(round) || bc[1] != float64(-round) {
				return fmt.Errorf("round %d: bcast %v", round, bc)
			}
			if me == 0 && red[0] != round*(0+1+2+3) {
				return fmt.Errorf("round %d: reduce %v", round, red)
			}
			for i, v := range all {
				if v != i*round {
					return fmt.Errorf("round %d: allgather %v", round, all)
				}
			}
			if want := round * me * (me + 1) / 2; sc[0] != want {
				return fmt.Errorf("round %d: scan %d, want %d", round, sc[0], want)
			}
		}
		for _, r := range []*mpi.Request{bcr, rr, ag, scr, bar} {
			if err := r.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}

// A persistent collective whose member failed completes with
// ErrProcFailed at Wait (ULFM), Start itself succeeding.
func TestPersistentCollectiveMemberKilled(t *testing.T) {
	left := newArrivals(2) // rank 2 may leave the first all-reduction first
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		sum := []int{0}
		a, err := mpi.AllreduceInit(c, []int{1}, sum, mpi.Sum)
		if err != nil {
			return err
		}
		if err := a.Start(); err != nil {
			return err
		}
		if _, err := a.Wait(); err != nil || sum[0] != 3 {
			return fmt.Errorf("first allreduce: %v %v", sum, err)
		}
		if c.Rank() == 2 {
			left.g.wait(t)
			w.Kill()
			return nil
		}
		left.arrive()
		for i := 0; i < 2; i++ {
			if err := a.Start(); err != nil {
				return fmt.Errorf("start after a failure: %v", err)
			}
			if _, err := a.Wait(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("allreduce with a killed member: want ErrProcFailed, got %v", err)
			}
		}
		return a.Free()
	})
}

// Run-through (seed 003 17.6): a persistent send to a recognised failed
// peer fails at each completion as Isend does; a persistent collective
// made before the failure runs on the alive processes after Validate.
func TestPersistentRunThrough(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if err := c.EnableRunThrough(); err != nil {
			return err
		}
		if c.Rank() == 3 {
			w.Kill()
			return nil
		}
		if err := awaitFailure(c, 3); err != nil {
			return err
		}
		if _, err := c.Validate(); err != nil {
			return err
		}
		s, err := mpi.SendInit(c, []int{1}, 3, 0)
		if err != nil {
			return err
		}
		for i := 0; i < 2; i++ {
			if err := s.Start(); err != nil {
				return err
			}
			if _, err := s.Wait(); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("send to a recognised failed peer: want ErrRankFailStop, got %v", err)
			}
		}
		r, err := mpi.RecvInit(c, []int{0}, 3, 0)
		if err != nil {
			return err
		}
		if err := r.Start(); err != nil {
			return err
		}
		if _, err := r.Wait(); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("receive from a recognised failed peer: want ErrRankFailStop, got %v", err)
		}
		// Wildcards stay disabled until ReenableAnySource (17.6): the
		// persistent wildcard receive completes with ErrRankFailStop.
		wr, err := mpi.RecvInit(c, []int{0}, mpi.AnySource, 1)
		if err != nil {
			return err
		}
		if err := wr.Start(); err != nil {
			return err
		}
		if _, err := wr.Wait(); !errors.Is(err, mpi.ErrRankFailStop) {
			return fmt.Errorf("wildcard receive with wildcards disabled: want ErrRankFailStop, got %v", err)
		}
		sum := []int{0}
		a, err := mpi.AllreduceInit(c, []int{c.Rank() + 1}, sum, mpi.Sum)
		if err != nil {
			return err
		}
		for i := 0; i < 3; i++ {
			if err := a.Start(); err != nil {
				return err
			}
			if _, err := a.Wait(); err != nil || sum[0] != 6 {
				return fmt.Errorf("allreduce over the alive processes: %v %v", sum, err)
			}
		}
		// After ReenableAnySource the same wildcard request works.
		if _, err := c.ReenableAnySource(); err != nil {
			return err
		}
		if err := wr.Start(); err != nil {
			return err
		}
		if err := mpi.Send(c, []int{c.Rank()}, (c.Rank()+1)%3, 1); err != nil {
			return err
		}
		if st, err := wr.Wait(); err != nil || st.Source != (c.Rank()+2)%3 {
			return fmt.Errorf("wildcard receive after ReenableAnySource: %+v %v", st, err)
		}
		return errors.Join(s.Free(), r.Free(), wr.Free(), a.Free())
	})
}

// A persistent send and receive allocate nothing per Start once warm (the
// arguments are bound at Init; engine requests are pooled), nor does an
// eager Bsend.
func TestPersistentAndBsendDoNotAllocate(t *testing.T) {
	if jobtest.RaceEnabled {
		t.Skip("the race detector's instrumentation allocates; run without -race")
	}
	const runs = 2000
	var persist, buffered float64
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		buf := make([]float64, 8)
		peer := 1 - c.Rank()
		s, err := mpi.SendInit(c, buf, peer, 0)
		if err != nil {
			return err
		}
		r, err := mpi.RecvInit(c, buf, peer, 0)
		if err != nil {
			return err
		}
		round := func() {
			if c.Rank() == 1 {
				r.Start()
				r.Wait()
				s.Start()
				s.Wait()
				return
			}
			s.Start()
			s.Wait()
			r.Start()
			r.Wait()
		}
		if c.Rank() == 1 {
			for i := 0; i < runs+1; i++ {
				round()
			}
			for i := 0; i < runs+1; i++ {
				if _, err := mpi.Recv(c, buf, 0, 1); err != nil {
					return err
				}
				if err := mpi.Send(c, buf, 0, 1); err != nil {
					return err
				}
			}
			return errors.Join(s.Free(), r.Free())
		}
		persist = testing.AllocsPerRun(runs, round)
		if err := w.BufferAttach(make([]byte, 1024)); err != nil {
			return err
		}
		buffered = testing.AllocsPerRun(runs, func() {
			mpi.Bsend(c, buf, 1, 1)
			mpi.Recv(c, buf, 1, 1)
		})
		w.BufferDetach()
		return errors.Join(s.Free(), r.Free())
	})
	if persist > 0.05 || buffered > 0.05 {
		t.Fatalf("%.2f allocations per persistent round trip, %.2f per Bsend round trip; want 0", persist, buffered)
	}
}

// A persistent request is bound to its communicator: once the
// communicator is freed, Start is an ErrComm error (nothing is sent).
func TestPersistentStartOnFreedComm(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		s, err := mpi.SendInit(d, []int{1}, 1-c.Rank(), 0)
		if err != nil {
			return err
		}
		b, err := d.BarrierInit()
		if err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		if err := s.Start(); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("start on a freed communicator: want ErrComm, got %v", err)
		}
		if err := b.Start(); !errors.Is(err, mpi.ErrComm) {
			return fmt.Errorf("barrier start on a freed communicator: want ErrComm, got %v", err)
		}
		if _, err := s.Wait(); err != nil { // still inactive
			return err
		}
		return errors.Join(s.Free(), b.Free())
	})
}

// A request freed while active counts as inactive in the completion calls
// (erroneous in MPI, but neither a panic nor a hang).
func TestFreedActiveRequestInWaitany(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 1 {
			if _, err := mpi.Recv(c, []int{0}, 0, 1); err != nil {
				return err
			}
			return mpi.Send(c, []int{5}, 0, 78)
		}
		r, err := mpi.Irecv(c, []int{0}, 1, 77) // never sent
		if err != nil {
			return err
		}
		if err := r.Free(); err != nil {
			return err
		}
		live, err := mpi.Irecv(c, []int{0}, 1, 78)
		if err != nil {
			return err
		}
		if err := mpi.Send(c, []int{1}, 1, 1); err != nil {
			return err
		}
		// Most often live is not complete yet: Waitany blocks on both.
		if i, _, err := mpi.Waitany([]*mpi.Request{r, live}); i != 1 || err != nil {
			return fmt.Errorf("waitany beside a freed request: %d %v", i, err)
		}
		if i, _, err := mpi.Waitany([]*mpi.Request{r}); i != mpi.Undefined || err != nil {
			return fmt.Errorf("waitany of a freed request: %d %v", i, err)
		}
		if _, err := mpi.Waitall([]*mpi.Request{r}); err != nil {
			return err
		}
		if idx, _, err := mpi.Waitsome([]*mpi.Request{r}); idx != nil || err != nil {
			return fmt.Errorf("waitsome of a freed request: %v %v", idx, err)
		}
		return nil
	})
}

// MPI_Request_get_status of an inactive persistent request reports an
// empty status and flag true; of a started one, its state without
// deactivating it (the Wait after it completes it as usual).
func TestGetStatusOfPersistentRequest(t *testing.T) {
	err := mpi.Run(2, func(w *mpi.World) error {
		c := w.CommWorld()
		buf := []int32{0}
		var r *mpi.Request
		var err error
		if c.Rank() == 0 {
			buf[0] = 7
			r, err = mpi.SendInit(c, buf, 1, 3)
		} else {
			r, err = mpi.RecvInit(c, buf, 0, 3)
		}
		if err != nil {
			return err
		}
		st, done, err := r.GetStatus()
		if err != nil || !done || st.Source != mpi.AnySource {
			return fmt.Errorf("inactive: status %+v done %v err %v, want empty status, done", st, done, err)
		}
		if err := r.Start(); err != nil {
			return err
		}
		st, err = r.Wait()
		if err != nil {
			return err
		}
		if c.Rank() == 1 && (buf[0] != 7 || st.Source != 0) {
			return fmt.Errorf("received %v from %d", buf, st.Source)
		}
		return r.Free()
	})
	if err != nil {
		t.Fatal(err)
	}
}
