package mpi_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// gate lets in-process tests order events across ranks without sleeping.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) wait(t *testing.T) {
	select {
	case <-g.ch:
	case <-time.After(20 * time.Second):
		t.Error("gate not opened within 20s")
	}
}

// Seed 002 A.2.2: point-to-point with a failed peer raises ErrProcFailed,
// and keeps doing so.
func TestULFMRecvFromFailedPeer(t *testing.T) {
	killed := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 1:
			killed.open()
			w.Kill()
		case 0:
			buf := []int{0}
			for i := 0; i < 2; i++ {
				if _, err := mpi.Recv(c, buf, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
					return fmt.Errorf("recv %d from failed rank: %v", i, err)
				}
			}
			killed.wait(t)
			if err := mpi.Send(c, buf, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("send to failed rank: %v", err)
			}
			// Insulation: communication with live ranks is unaffected.
			if err := mpi.Send(c, []int{42}, 2, 5); err != nil {
				return err
			}
		case 2:
			buf := []int{0}
			if _, err := mpi.Recv(c, buf, 0, 5); err != nil || buf[0] != 42 {
				return fmt.Errorf("recv between live ranks after a failure: %v %v", buf, err)
			}
		}
		return nil
	})
}

// Seed 002 A.2.2: a nonblocking ANY_SOURCE receive raises ErrPending while
// an unacknowledged failure exists and stays pending; after FailureAck it
// completes; a blocking ANY_SOURCE receive raises ErrProcFailed.
func TestULFMAnySourcePendingUntilAck(t *testing.T) {
	killed, acked := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			killed.open()
			w.Kill()
		case 0:
			killed.wait(t)
			buf := []int{0}
			if _, err := mpi.Recv(c, buf, mpi.AnySource, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("blocking any-source receive: want ErrProcFailed, got %v", err)
			}
			req, err := mpi.Irecv(c, buf, mpi.AnySource, 0)
			if err != nil {
				return err
			}
			if _, err := req.Wait(); !errors.Is(err, mpi.ErrPending) {
				return fmt.Errorf("wait on any-source receive: want ErrPending, got %v", err)
			}
			if _, done, err := req.Test(); done || !errors.Is(err, mpi.ErrPending) {
				return fmt.Errorf("test on any-source receive: done=%v err=%v", done, err)
			}
			g, err := c.GetFailed()
			if err != nil || g.Size() != 1 {
				return fmt.Errorf("GetFailed: %v %v", g, err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			ag, _ := c.FailureGetAcked()
			if ag.Size() != 1 {
				return fmt.Errorf("acked group size %d", ag.Size())
			}
			acked.open()
			st, err := req.Wait() // the same request, still pending, now matches
			if err != nil || buf[0] != 11 || st.Source != 1 {
				return fmt.Errorf("pending receive after ack: %v %+v %v", buf, st, err)
			}
		case 1:
			acked.wait(t)
			return mpi.Send(c, []int{11}, 0, 0)
		}
		return nil
	})
}

func TestULFMAckFailedCounts(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2, 3:
			w.Kill()
		case 0:
			// A receive from a failed rank returns once its failure is known.
			for _, r := range []int{2, 3} {
				if _, err := mpi.Recv(c, []int{0}, r, 0); !errors.Is(err, mpi.ErrProcFailed) {
					return fmt.Errorf("recv from killed rank %d: %v", r, err)
				}
			}
			if n, err := c.AckFailed(0); n != 0 || err != nil {
				return fmt.Errorf("AckFailed(0) = %d, %v", n, err)
			}
			if n, _ := c.AckFailed(1); n != 1 {
				return fmt.Errorf("AckFailed(1) = %d", n)
			}
			if n, _ := c.AckFailed(10); n != 2 {
				return fmt.Errorf("AckFailed(10) = %d", n)
			}
			if _, err := c.AckFailed(-1); !errors.Is(err, mpi.ErrArg) {
				return fmt.Errorf("AckFailed(-1): %v", err)
			}
			if g, _ := c.GetFailed(); g.Size() != 2 {
				return fmt.Errorf("GetFailed size %d", g.Size())
			}
		}
		return nil
	})
}

// Seed 002 A.3.1: revoke completes pending and later operations with
// ErrRevoked at every member; Agree still works on a revoked communicator.
func TestULFMRevokeInterruptsBlockedRanks(t *testing.T) {
	const n = 6
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			// Wait until everyone else is (about to be) blocked, then revoke.
			buf := []int{0}
			for i := 1; i < n; i++ {
				if _, err := mpi.Recv(c, buf, i, 1); err != nil {
					return err
				}
			}
			if err := c.Revoke(); err != nil {
				return err
			}
		} else {
			if err := mpi.Send(c, []int{c.Rank()}, 0, 1); err != nil {
				return err
			}
			// Blocks: nobody sends tag 2. The revoke must release it.
			_, err := mpi.Recv(c, []int{0}, 0, 2)
			if !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("blocked receive after revoke: %v", err)
			}
		}
		if !c.IsRevoked() {
			return errors.New("IsRevoked false after revoke")
		}
		if err := mpi.Send(c, []int{1}, (c.Rank()+1)%n, 3); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("send on revoked communicator: %v", err)
		}
		if err := c.Barrier(); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("barrier on revoked communicator: %v", err)
		}
		flag, err := c.Agree(c.Rank() != 3)
		if err != nil || flag {
			return fmt.Errorf("agree on revoked communicator: %v %v", flag, err)
		}
		return nil
	})
}

func TestULFMAgreeFailureFree(t *testing.T) {
	for _, n := range []int{1, 2, 5, 16, 33} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			run(t, n, func(w *mpi.World, c *mpi.Comm) error {
				for round := 0; round < 5; round++ {
					want := round%2 == 0
					flag, err := c.Agree(want || c.Rank() != n-1)
					if err != nil || flag != want {
						return fmt.Errorf("round %d: agree = %v, %v; want %v", round, flag, err, want)
					}
				}
				bits, err := c.AgreeBits(uint64(0xff) &^ (1 << uint(c.Rank()%8)))
				want := uint64(0xff)
				for r := 0; r < n; r++ {
					want &^= 1 << uint(r%8)
				}
				if err != nil || bits != want {
					return fmt.Errorf("AgreeBits = %#x, %v; want %#x", bits, err, want)
				}
				req, err := c.Iagree(true)
				if err != nil {
					return err
				}
				if res, err := req.Wait(); err != nil || !res {
					return fmt.Errorf("Iagree: %v %v", res, err)
				}
				return nil
			})
		})
	}
}

// Seed 002 A.3.1: a failure before the agreement raises ErrProcFailed at
// every survivor (uniformly) until every survivor acknowledged it.
func TestULFMAgreeAfterFailureUniformError(t *testing.T) {
	const n = 5
	killed := newGate()
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 2 {
			killed.open()
			w.Kill()
		}
		killed.wait(t)
		flag, err := c.Agree(true)
		if !errors.Is(err, mpi.ErrProcFailed) || !flag {
			return fmt.Errorf("agree after failure: %v %v (want true, ErrProcFailed)", flag, err)
		}
		if err := c.FailureAck(); err != nil {
			return err
		}
		flag, err = c.Agree(c.Rank() != 4)
		if err != nil || flag {
			return fmt.Errorf("agree after ack: %v %v (want false, nil)", flag, err)
		}
		return nil
	})
}

// Kill of the agreement's root (rank 0) in the middle of repeated
// agreements: every survivor finishes every agreement with the same value.
func TestULFMAgreeSurvivesRootFailure(t *testing.T) {
	const n, rounds = 8, 30
	results := make([][]bool, n)
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		for i := 0; i < rounds; i++ {
			if c.Rank() == 0 && i == 7 {
				w.Kill()
			}
			flag, err := c.Agree(true)
			if err != nil && !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("round %d: %v", i, err)
			}
			results[c.Rank()] = append(results[c.Rank()], flag)
			if err != nil {
				c.FailureAck()
			}
		}
		return nil
	})
	for r := 1; r < n; r++ {
		if len(results[r]) != rounds {
			t.Fatalf("rank %d finished %d of %d agreements", r, len(results[r]), rounds)
		}
		for i, f := range results[r] {
			if !f {
				t.Fatalf("rank %d round %d decided false", r, i)
			}
		}
	}
}

// Seed 002 A.3.1: Shrink gives every survivor the same communicator of the
// survivors, in old rank order, also when a process fails during the call.
func TestULFMShrinkAfterAndDuringFailures(t *testing.T) {
	const n = 7
	var mu sync.Mutex
	views := map[int][]int{}
	killed := newGate()
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 2 {
			killed.open()
			w.Kill() // fails before the shrink
		}
		killed.wait(t)
		if c.Rank() == 5 {
			w.Kill() // fails during the shrink (the others are in it or entering it)
		}
		c.Revoke()
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		g := s.Group()
		mu.Lock()
		views[c.Rank()] = g.WorldRanks()
		mu.Unlock()
		if s.Rank() != g.Rank() {
			return fmt.Errorf("rank %d in the new group but %d in the communicator", g.Rank(), s.Rank())
		}
		// The new communicator works (5 was maybe still in it: tolerate its failure).
		next := (s.Rank() + 1) % s.Size()
		prev := (s.Rank() - 1 + s.Size()) % s.Size()
		s.SetErrhandler(mpi.ErrorsReturn)
		buf := []int{-1}
		_, err = mpi.Sendrecv(s, []int{c.Rank()}, next, 0, buf, prev, 0)
		if err != nil && !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("ring on the shrunk communicator: %v", err)
		}
		return nil
	})
	var first []int
	for r, v := range views {
		if first == nil {
			first = v
		}
		if fmt.Sprint(v) != fmt.Sprint(first) {
			t.Fatalf("rank %d got %v, another rank %v", r, v, first)
		}
		for i := 1; i < len(v); i++ {
			if v[i] <= v[i-1] {
				t.Fatalf("not in old rank order: %v", v)
			}
		}
		for _, p := range v {
			if p == 2 {
				t.Fatalf("failed rank 2 in the shrunk communicator %v", v)
			}
		}
	}
	if len(views) != n-2 {
		t.Fatalf("%d survivors reported, want %d", len(views), n-2)
	}
}

// Repeated failures until one process remains: kill, revoke, shrink, and go on.
func TestULFMShrinkRepeatedlyToOne(t *testing.T) {
	const n = 6
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		cur := c
		for cur.Size() > 1 {
			cur.SetErrhandler(mpi.ErrorsReturn)
			if cur.Rank() == cur.Size()-1 {
				w.Kill()
			}
			s, err := cur.Shrink()
			if err != nil {
				return err
			}
			// Every survivor of this round agrees the size dropped by one or stayed
			// (the victim may not have been noticed before the agreement).
			flag, err := s.Agree(true)
			if err != nil && !errors.Is(err, mpi.ErrProcFailed) {
				return err
			}
			if !flag {
				return errors.New("agree false")
			}
			if s.Size() >= cur.Size() && s.Size() > 1 {
				// Not noticed yet: shrink again (Agree made everyone see it).
				s.FailureAck()
			}
			cur = s
		}
		if w.Rank() != 0 {
			return fmt.Errorf("rank %d is the last survivor, want 0", w.Rank())
		}
		return nil
	})
}

func TestULFMShrinkFailureFreeKeepsEveryone(t *testing.T) {
	run(t, 9, func(w *mpi.World, c *mpi.Comm) error {
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		if s.Size() != 9 || s.Rank() != c.Rank() || mpi.CompareComms(s, c) != mpi.Congruent {
			return fmt.Errorf("failure-free shrink: size %d rank %d compare %v", s.Size(), s.Rank(), mpi.CompareComms(s, c))
		}
		req, err := c.Ishrink()
		if err != nil {
			return err
		}
		got, err := req.Wait()
		if err != nil || got.Size() != 9 {
			return fmt.Errorf("Ishrink: %v", err)
		}
		return s.Free()
	})
}

// Seed 002 A.2.2: a collective whose participant failed raises
// ErrProcFailed instead of hanging, at every survivor (each in this or a
// later call); survivors then revoke, shrink and continue (the
// iterative-refinement pattern of A.5.2). A communicator without the failed
// process sees nothing (insulation).
func TestULFMCollectivesRaiseAndRecover(t *testing.T) {
	const n = 8
	run(t, n, func(w *mpi.World, c *mpi.Comm) error {
		half, err := c.Split(c.Rank()/4, c.Rank()) // {0..3} and {4..7}
		if err != nil {
			return err
		}
		half.SetErrhandler(mpi.ErrorsReturn)
		sum := []float64{0}
		failedSeen := false
		for it := 0; it < 50 && !failedSeen; it++ {
			if c.Rank() == 6 && it == 10 {
				w.Kill()
			}
			err := mpi.Allreduce(c, []float64{1}, sum, mpi.Sum)
			switch {
			case err == nil:
				if sum[0] != n {
					return fmt.Errorf("iteration %d: sum %v", it, sum[0])
				}
			case errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked):
				failedSeen = true
				c.Revoke()
			default:
				return fmt.Errorf("iteration %d: %v", it, err)
			}
		}
		if !failedSeen {
			return errors.New("the failure of rank 6 was never reported by a collective")
		}
		if c.Rank() < 4 {
			// Insulation: the half without rank 6 still works.
			if err := mpi.Allreduce(half, []float64{2}, sum, mpi.Sum); err != nil || sum[0] != 8 {
				return fmt.Errorf("allreduce on the intact half: %v %v", sum, err)
			}
		} else if err := half.Barrier(); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("barrier on the half with the failed rank: %v", err)
		}
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		if s.Size() != n-1 {
			return fmt.Errorf("shrunk size %d", s.Size())
		}
		if err := mpi.Allreduce(s, []float64{1}, sum, mpi.Sum); err != nil || sum[0] != n-1 {
			return fmt.Errorf("allreduce after shrink: %v %v", sum, err)
		}
		return nil
	})
}

// Seed 002 A.3.1: on an intercommunicator, Agree returns the AND of the
// remote group's flags; Revoke reaches both groups.
func TestULFMIntercommAgreeAndRevoke(t *testing.T) {
	run(t, 7, func(w *mpi.World, c *mpi.Comm) error {
		_, inter, inA, err := halves(c, 3, 0, 9)
		if err != nil {
			return err
		}
		inter.SetErrhandler(mpi.ErrorsReturn)
		// Group A (ranks 0..2) all say true; group B: rank 5 says false.
		flag, err := inter.Agree(c.Rank() != 5)
		if err != nil {
			return err
		}
		if want := !inA; flag != want { // A sees B's AND (false); B sees A's AND (true)
			return fmt.Errorf("in group A=%v: agree = %v, want %v", inA, flag, want)
		}
		if c.Rank() == 1 {
			if err := inter.Revoke(); err != nil {
				return err
			}
		} else if c.Rank() == 4 {
			// Blocks until the revocation from the other group arrives.
			if _, err := mpi.Recv(inter, []int{0}, 0, 77); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("receive on the intercommunicator after revoke: %v", err)
			}
		}
		if _, err := inter.Agree(true); err != nil {
			return err
		}
		if !inter.IsRevoked() {
			return errors.New("intercommunicator not revoked everywhere")
		}
		return nil
	})
}

// Seed 002 A.3.1 on an intercommunicator: Shrink keeps the survivors of
// both groups (in their old order) and the result works across groups.
func TestULFMIntercommShrink(t *testing.T) {
	run(t, 7, func(w *mpi.World, c *mpi.Comm) error {
		_, inter, inA, err := halves(c, 3, 0, 11)
		if err != nil {
			return err
		}
		inter.SetErrhandler(mpi.ErrorsReturn)
		// Everybody has its intercommunicator before anyone dies (the
		// creation is not fault tolerant).
		if _, err := c.Agree(true); err != nil {
			return err
		}
		if c.Rank() == 1 || c.Rank() == 5 { // one process of each group fails
			w.Kill()
		}
		inter.Revoke()
		s, err := inter.Shrink()
		if err != nil {
			return fmt.Errorf("shrink: %w", err)
		}
		wantLocal, wantRemote := 3, 2 // B keeps 3, 4, 6; A keeps 0, 2
		if inA {
			wantLocal, wantRemote = 2, 3
		}
		if !s.IsInter() || s.Size() != wantLocal || s.RemoteSize() != wantRemote {
			return fmt.Errorf("shrunk: inter=%v size %d remote %d, want %d and %d", s.IsInter(), s.Size(), s.RemoteSize(), wantLocal, wantRemote)
		}
		// The sum of the other group's old world ranks: A gets 3+4+6, B 0+2.
		sum := []int{0}
		if err := mpi.Allreduce(s, []int{c.Rank()}, sum, mpi.Sum); err != nil {
			return fmt.Errorf("allreduce on the shrunk intercommunicator: %w", err)
		}
		want := 2
		if inA {
			want = 13
		}
		if sum[0] != want {
			return fmt.Errorf("allreduce across groups = %d, want %d", sum[0], want)
		}
		return nil
	})
}

// A communicator freed after a failure poisoned it must not hand its
// context ids to a later communicator: the new one would fail at once.
func TestULFMFreedPoisonedContextNotReused(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		c.SetErrhandler(mpi.ErrorsReturn)
		mpi.CtxLowFirst(w) // context ids from the lowest free: a freed pair is reused at once
		var olds []*mpi.Comm
		for i := 0; i < 32; i++ {
			d, err := c.Dup()
			if err != nil {
				return err
			}
			olds = append(olds, d)
		}
		if _, err := c.Agree(true); err != nil {
			return err
		}
		if c.Rank() == 3 {
			w.Kill()
		}
		for _, d := range olds {
			d.Barrier() // fails: a member died; the context is poisoned
		}
		c.Revoke()
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		for _, d := range olds {
			if err := d.Free(); err != nil {
				return err
			}
		}
		for i := 0; i < 64; i++ {
			n, err := s.Dup()
			if err != nil {
				return fmt.Errorf("dup %d of the survivors: %w", i, err)
			}
			if err := n.Barrier(); err != nil {
				return fmt.Errorf("barrier on dup %d of the survivors: %w", i, err)
			}
			n.Free()
		}
		return nil
	})
}
