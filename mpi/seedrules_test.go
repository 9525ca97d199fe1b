package mpi_test

// Rules of the seeds that an audit found contradicted or untested (issue
// 11): multiple-completion calls, nonblocking starts and probes after a
// failure, tag bounds, Shrink without Revoke, acknowledged groups,
// collectives after an acknowledgement, Iagree, Sendrecv with both peers
// failed, postponed errors.

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// isPending reports whether err is ErrPending (directly or in a status).
func isPending(err error) bool { return errors.Is(err, mpi.ErrPending) }

// Seed 002 A.1, A.2.2, 5.1.4: a nonblocking ANY_SOURCE receive that a
// failure leaves pending (a potential sender failed, unacknowledged, no
// message) makes Waitany, Waitsome, Waitall and the Test forms raise
// ErrPending, as Wait does, without completing it: they never block
// forever nor report "not done" forever. After FailureAck the same request
// completes by any of them.
func TestULFMMultiCompletionWildcardPending(t *testing.T) {
	acked := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			w.Kill()
		case 1:
			if err := mpi.Send(c, []int{7}, 0, 1); err != nil {
				return err
			}
			acked.wait(t)
			return mpi.Send(c, []int{11}, 0, 0)
		case 0:
			buf := []int{0}
			wild, err := mpi.Irecv(c, buf, mpi.AnySource, 0)
			if err != nil {
				return err
			}
			// Waitany blocks until the failure is known, then raises
			// ErrPending with the request's index, the entry kept.
			reqs := []*mpi.Request{wild}
			i, st, err := mpi.Waitany(reqs)
			if !isPending(err) || i != 0 || !isPending(st.Err) || reqs[0] != wild {
				return fmt.Errorf("Waitany: index %d status %+v err %v, entry %p", i, st, err, reqs[0])
			}
			i, st, done, err := mpi.Testany(reqs)
			if done || !isPending(err) || i != 0 || !isPending(st.Err) || reqs[0] != wild {
				return fmt.Errorf("Testany: index %d done %v status %+v err %v", i, done, st, err)
			}
			for name, f := range map[string]func([]*mpi.Request) ([]int, []mpi.Status, error){
				"Waitsome": mpi.Waitsome, "Testsome": mpi.Testsome,
			} {
				idx, sts, err := f(reqs)
				if !errors.Is(err, mpi.ErrInStatus) || len(idx) != 1 || idx[0] != 0 || !isPending(sts[0].Err) || reqs[0] != wild {
					return fmt.Errorf("%s: indices %v statuses %+v err %v", name, idx, sts, err)
				}
			}
			sts, done, err := mpi.Testall(reqs)
			if done || !errors.Is(err, mpi.ErrInStatus) || len(sts) != 1 || !isPending(sts[0].Err) || reqs[0] != wild {
				return fmt.Errorf("Testall: done %v statuses %+v err %v", done, sts, err)
			}
			// Waitall completes the other requests; the pending one stays.
			other, err := mpi.Irecv(c, []int{0}, 1, 1)
			if err != nil {
				return err
			}
			all := []*mpi.Request{wild, other}
			sts, err = mpi.Waitall(all)
			if !errors.Is(err, mpi.ErrInStatus) || !isPending(sts[0].Err) || sts[1].Err != nil || sts[1].Source != 1 || all[0] != wild || all[1] != nil {
				return fmt.Errorf("Waitall: statuses %+v err %v entries %v", sts, err, all)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			acked.open()
			i, st, err = mpi.Waitany(reqs)
			if err != nil || i != 0 || st.Source != 1 || buf[0] != 11 || reqs[0] != nil {
				return fmt.Errorf("Waitany after FailureAck: index %d %+v %v buf %v", i, st, err, buf)
			}
		}
		return nil
	})
}

// The same with the Test forms first and Waitsome/Waitall completing the
// request after the acknowledgement.
func TestULFMMultiCompletionAfterAck(t *testing.T) {
	known, acked := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			w.Kill()
		case 1:
			acked.wait(t)
			if err := mpi.Send(c, []int{1}, 0, 0); err != nil {
				return err
			}
			return mpi.Send(c, []int{2}, 0, 0)
		case 0:
			// The failure is known once a receive from rank 2 fails.
			if _, err := mpi.Recv(c, []int{0}, 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("receive from the killed rank: %v", err)
			}
			known.open()
			a, b := []int{0}, []int{0}
			r1, err := mpi.Irecv(c, a, mpi.AnySource, 0)
			if err != nil {
				return err
			}
			reqs := []*mpi.Request{nil, r1}
			if i, _, done, err := mpi.Testany(reqs); done || i != 1 || !isPending(err) {
				return fmt.Errorf("Testany with a known failure: %d %v %v", i, done, err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			if _, done, err := mpi.Testall(reqs); done || err != nil {
				return fmt.Errorf("Testall after FailureAck, no message yet: done %v err %v", done, err)
			}
			acked.open()
			idx, sts, err := mpi.Waitsome(reqs)
			if err != nil || len(idx) != 1 || idx[0] != 1 || sts[0].Source != 1 || a[0] != 1 {
				return fmt.Errorf("Waitsome after FailureAck: %v %+v %v", idx, sts, err)
			}
			r2, err := mpi.Irecv(c, b, mpi.AnySource, 0)
			if err != nil {
				return err
			}
			if sts, err := mpi.Waitall([]*mpi.Request{r2}); err != nil || sts[0].Source != 1 || b[0] != 2 {
				return fmt.Errorf("Waitall after FailureAck: %+v %v", sts, err)
			}
		}
		return nil
	})
}

// Seed 002 A.2: "Non-blocking operations must not raise an exception about
// process failures during initiation": Isend and Issend to a failed peer
// (eager and rendezvous sizes) and Irecv from one return a request whose
// completion raises ErrProcFailed; Isend on a revoked communicator,
// ErrRevoked at completion.
func TestULFMNonblockingSendDefersFailure(t *testing.T) {
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup() // before the failure: revoked below
		if err != nil {
			return err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		switch c.Rank() {
		case 1:
			w.Kill()
		case 0:
			if _, err := mpi.Recv(c, []int{0}, 1, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("receive from the killed rank: %v", err)
			}
			for _, n := range []int{1, 1 << 20} {
				buf := make([]byte, n)
				for name, start := range map[string]func(*mpi.Comm, []byte, int, int) (*mpi.Request, error){
					"Isend": mpi.Isend[byte], "Issend": mpi.Issend[byte],
				} {
					req, err := start(c, buf, 1, 0)
					if err != nil || req == nil {
						return fmt.Errorf("%s of %d bytes to a failed rank: the start call raised %v", name, n, err)
					}
					if _, done, err := req.Test(); !done || !errors.Is(err, mpi.ErrProcFailed) {
						return fmt.Errorf("%s of %d bytes: Test: done %v err %v", name, n, done, err)
					}
					if req, err = start(c, buf, 1, 0); err != nil {
						return fmt.Errorf("%s of %d bytes, again: the start call raised %v", name, n, err)
					}
					if _, err := req.Wait(); !errors.Is(err, mpi.ErrProcFailed) {
						return fmt.Errorf("%s of %d bytes: Wait: %v", name, n, err)
					}
				}
			}
			rr, err := mpi.Irecv(c, []int{0}, 1, 0)
			if err != nil {
				return fmt.Errorf("Irecv from a failed rank: the start call raised %v", err)
			}
			if _, err := rr.Wait(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Irecv from a failed rank: Wait: %v", err)
			}
			d.Revoke()
			req, err := mpi.Isend(d, []int{1}, 2, 0)
			if err != nil {
				return fmt.Errorf("Isend on a revoked communicator: the start call raised %v", err)
			}
			if _, err := req.Wait(); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("Isend on a revoked communicator: Wait: %v", err)
			}
		case 2:
			// Rank 0 revokes d; the revocation reaches this rank.
			if _, err := mpi.Recv(d, []int{0}, 0, 5); !errors.Is(err, mpi.ErrRevoked) {
				return fmt.Errorf("receive on the revoked duplicate: %v", err)
			}
		}
		return nil
	})
}

// Probes follow the receive rules after a failure (seed 002 A.1, A.2.2):
// a probe of a failed source raises ErrProcFailed (a blocked one is
// released by the failure), a wildcard probe with an unacknowledged
// failure raises ErrProcFailed (as a blocking wildcard receive), a message
// that arrived is still probed, and after FailureAck wildcard probes work.
func TestULFMProbeFollowsReceiveRules(t *testing.T) {
	probing, acked := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			probing.wait(t)
			w.Kill()
		case 1:
			if err := mpi.Send(c, []int{5}, 0, 5); err != nil {
				return err
			}
			acked.wait(t)
			return mpi.Send(c, []int{7}, 0, 7)
		case 0:
			probing.open()
			// Blocked before or after the kill: released with the error.
			if _, err := c.Probe(2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Probe of the failed source: %v", err)
			}
			if _, err := c.Probe(2, mpi.AnyTag); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("second Probe of the failed source: %v", err)
			}
			if _, ok, err := c.Iprobe(2, 0); ok || !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Iprobe of the failed source: %v %v", ok, err)
			}
			if _, err := c.Probe(mpi.AnySource, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Probe(AnySource) with an unacknowledged failure: %v", err)
			}
			if _, ok, err := c.Iprobe(mpi.AnySource, 0); ok || !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Iprobe(AnySource) with an unacknowledged failure: %v %v", ok, err)
			}
			// A message that arrived is probed all the same.
			if st, err := c.Probe(1, 5); err != nil || st.Source != 1 {
				return fmt.Errorf("Probe of a live source: %+v %v", st, err)
			}
			if st, err := c.Probe(mpi.AnySource, 5); err != nil || st.Source != 1 || st.Tag != 5 {
				return fmt.Errorf("Probe(AnySource) of an arrived message: %+v %v", st, err)
			}
			if st, ok, err := c.Iprobe(mpi.AnySource, 5); err != nil || !ok || st.Source != 1 {
				return fmt.Errorf("Iprobe(AnySource) of an arrived message: %+v %v %v", st, ok, err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			if _, ok, err := c.Iprobe(mpi.AnySource, 7); ok || err != nil {
				return fmt.Errorf("Iprobe(AnySource) after FailureAck: %v %v", ok, err)
			}
			acked.open()
			if st, err := c.Probe(mpi.AnySource, 7); err != nil || st.Source != 1 {
				return fmt.Errorf("Probe(AnySource) after FailureAck: %+v %v", st, err)
			}
			if _, err := c.Probe(2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Probe of the failed source after FailureAck: %v", err)
			}
			for _, tag := range []int{5, 7} {
				if _, err := mpi.Recv(c, []int{0}, 1, tag); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// A probe blocked on a wildcard is released by a failure that happens
// while it waits (the case a probe started after the failure does not
// cover).
func TestULFMBlockedWildcardProbeReleasedByFailure(t *testing.T) {
	probing := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			probing.wait(t)
			w.Kill()
		case 0:
			probing.open()
			if _, err := c.Probe(mpi.AnySource, 3); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("blocked Probe(AnySource): %v", err)
			}
		}
		return nil
	})
}

// Tags are 0..TagUB (MPI_TAG_UB): a larger one is ErrTag at every call that
// takes a tag, never truncated to 32 bits (1<<32 used to be received by a
// receive of tag 0, TagUB+1 to arrive as a negative tag). TagUB itself
// works.
func TestTagAboveUpperBoundIsErrTag(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		peer := 1 - c.Rank()
		w.CommSelf().SetErrhandler(mpi.ErrorsReturn)
		ub := mpi.TagUB
		bad := []int{ub + 1, (ub + 1) * 2} // TagUB+1 and 1<<32
		for _, tag := range bad {
			calls := map[string]func() error{
				"Send":   func() error { return mpi.Send(c, []int{1}, peer, tag) },
				"Ssend":  func() error { return mpi.Ssend(c, []int{1}, peer, tag) },
				"Isend":  func() error { _, err := mpi.Isend(c, []int{1}, peer, tag); return err },
				"Issend": func() error { _, err := mpi.Issend(c, []int{1}, peer, tag); return err },
				"Recv":   func() error { _, err := mpi.Recv(c, []int{0}, peer, tag); return err },
				"Irecv":  func() error { _, err := mpi.Irecv(c, []int{0}, peer, tag); return err },
				"Sendrecv send tag": func() error {
					_, err := mpi.Sendrecv(c, []int{1}, peer, tag, []int{0}, peer, 0)
					return err
				},
				"Sendrecv receive tag": func() error {
					_, err := mpi.Sendrecv(c, []int{1}, peer, 0, []int{0}, peer, tag)
					return err
				},
				"Probe":       func() error { _, err := c.Probe(peer, tag); return err },
				"Iprobe":      func() error { _, _, err := c.Iprobe(peer, tag); return err },
				"CreateGroup": func() error { _, err := c.CreateGroup(c.Group(), tag); return err },
				"IntercommCreate": func() error {
					_, err := mpi.IntercommCreate(w.CommSelf(), 0, c, peer, tag)
					return err
				},
			}
			for name, f := range calls {
				err := f()
				if !errors.Is(err, mpi.ErrTag) {
					return fmt.Errorf("%s with tag %d: want ErrTag, got %v", name, tag, err)
				}
				if want := fmt.Sprint(tag); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "upper bound") {
					return fmt.Errorf("%s with tag %d: the error does not name the tag and the bound: %v", name, tag, err)
				}
			}
		}
		// Nothing was sent above: the largest valid tag is delivered intact.
		buf := []int{0}
		st, err := mpi.Sendrecv(c, []int{c.Rank() + 1}, peer, ub, buf, peer, ub)
		if err != nil || st.Tag != ub || buf[0] != peer+1 {
			return fmt.Errorf("Sendrecv with tag TagUB: %+v %v %v", st, buf, err)
		}
		if _, ok, err := c.Iprobe(mpi.AnySource, mpi.AnyTag); ok || err != nil {
			return fmt.Errorf("a message with an out-of-range tag was sent: %v %v", ok, err)
		}
		return nil
	})
}

// Shrink of a communicator that was not revoked (seed 002 A.3.1 says
// MPI_ERR_ARG; the MPI Forum's later ULFM text and Open MPI 5 allow it, and
// so does ftmpi: docs/semantics.md argues the choice): with a failed
// member, every survivor gets the same communicator of the survivors, and
// the parent stays unrevoked and usable between live members.
func TestULFMShrinkWithoutRevoke(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 3 {
			w.Kill()
			return nil
		}
		s, err := c.Shrink()
		if err != nil {
			return fmt.Errorf("Shrink of an unrevoked communicator with a failed member: %v", err)
		}
		if s.Size() != 3 || s.Rank() != c.Rank() {
			return fmt.Errorf("shrunk communicator: size %d rank %d", s.Size(), s.Rank())
		}
		sum := []int{0}
		if err := mpi.Allreduce(s, []int{1}, sum, mpi.Sum); err != nil || sum[0] != 3 {
			return fmt.Errorf("Allreduce on the shrunk communicator: %v %v", sum, err)
		}
		if c.IsRevoked() {
			return errors.New("Shrink revoked its parent")
		}
		next, prev := (c.Rank()+1)%3, (c.Rank()+2)%3
		buf := []int{0}
		if _, err := mpi.Sendrecv(c, []int{c.Rank()}, next, 1, buf, prev, 1); err != nil || buf[0] != prev {
			return fmt.Errorf("point-to-point on the unrevoked parent: %v %v", buf, err)
		}
		return s.Free()
	})
}

// Seed 002 5.1.3: the acknowledged group does not change until the next
// FailureAck, however often it is read and whatever failures become known
// meanwhile.
func TestULFMAckedGroupStableUntilNextAck(t *testing.T) {
	firstAcked := newGate()
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 3:
			w.Kill()
		case 2:
			firstAcked.wait(t)
			w.Kill()
		case 0:
			if _, err := mpi.Recv(c, []int{0}, 3, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("receive from rank 3: %v", err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			firstAcked.open()
			if _, err := mpi.Recv(c, []int{0}, 2, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("receive from rank 2: %v", err)
			}
			if g, err := c.GetFailed(); err != nil || g.Size() != 2 {
				return fmt.Errorf("GetFailed after the second failure: %v %v", g, err)
			}
			for i := 0; i < 5; i++ {
				g, err := c.FailureGetAcked()
				if err != nil || g.Size() != 1 {
					return fmt.Errorf("read %d of the acknowledged group: %v %v", i, g, err)
				}
				if r, _ := mpi.TranslateRanks(g, []int{0}, c.Group()); r[0] != 3 {
					return fmt.Errorf("read %d: acknowledged group holds rank %v, want 3", i, r)
				}
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			if g, err := c.FailureGetAcked(); err != nil || g.Size() != 2 {
				return fmt.Errorf("acknowledged group after the second FailureAck: %v %v", g, err)
			}
		}
		return nil
	})
}

// Seed 002 A.3.1, advice to users: FailureAck does not make collectives
// work again: on a communicator with an acknowledged failure they keep
// raising ErrProcFailed (until Revoke and Shrink), at every survivor.
func TestULFMCollectivesFailAfterAck(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 2 {
			w.Kill()
			return nil
		}
		// Rank 2 never enters: every survivor raises ErrProcFailed.
		berr := c.Barrier()
		if !errors.Is(berr, mpi.ErrProcFailed) {
			return fmt.Errorf("Barrier without rank 2: %v", berr)
		}
		if err := c.FailureAck(); err != nil {
			return err
		}
		if g, _ := c.FailureGetAcked(); g.Size() != 1 {
			gf, _ := c.GetFailed()
			return fmt.Errorf("acknowledged group size %d (barrier: %v; failed now %d)", g.Size(), berr, gf.Size())
		}
		for i := 0; i < 3; i++ {
			if err := c.Barrier(); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Barrier %d after FailureAck: %v", i, err)
			}
			sum := []int{0}
			if err := mpi.Allreduce(c, []int{1}, sum, mpi.Sum); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Allreduce %d after FailureAck: %v", i, err)
			}
			if err := mpi.Bcast(c, []int{1}, 0); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("Bcast %d after FailureAck: %v", i, err)
			}
		}
		return nil
	})
}

// Seed 002 A.3.1: Iagree under failures behaves as Agree: with an
// unacknowledged failure every survivor's request completes with
// ErrProcFailed, uniformly; once every survivor acknowledged it, Iagree
// succeeds with the AND of the survivors' flags.
func TestULFMIagreeUnderFailures(t *testing.T) {
	run(t, 5, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 4 {
			w.Kill()
			return nil
		}
		if _, err := mpi.Recv(c, []int{0}, 4, 0); !errors.Is(err, mpi.ErrProcFailed) {
			return fmt.Errorf("receive from the killed rank: %v", err)
		}
		req, err := c.Iagree(true)
		if err != nil {
			return fmt.Errorf("Iagree start with a failure: %v", err)
		}
		if res, err := req.Wait(); !errors.Is(err, mpi.ErrProcFailed) || !res {
			return fmt.Errorf("Iagree with an unacknowledged failure: %v %v (want true, ErrProcFailed)", res, err)
		}
		if err := c.FailureAck(); err != nil {
			return err
		}
		req, err = c.Iagree(c.Rank() != 1)
		if err != nil {
			return err
		}
		if res, err := req.Wait(); err != nil || res {
			return fmt.Errorf("Iagree after FailureAck: %v %v (want false: rank 1 passed false)", res, err)
		}
		return nil
	})
}

// Seed 003 17.6.2: when both peers of a Sendrecv failed, it returns
// ErrInStatus with one of them identified in the status.
func TestRunThroughSendrecvBothPeersFailed(t *testing.T) {
	run(t, 4, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2, 3:
			w.Kill()
		case 0:
			c.EnableRunThrough()
			for _, r := range []int{2, 3} {
				if err := awaitFailure(c, r); err != nil {
					return err
				}
			}
			st, err := mpi.Sendrecv(c, []int{1}, 2, 0, []int{0}, 3, 0)
			if !errors.Is(err, mpi.ErrInStatus) || (st.Source != 2 && st.Source != 3) || !errors.Is(st.Err, mpi.ErrRankFailStop) {
				return fmt.Errorf("Sendrecv with both peers failed: %+v %v", st, err)
			}
		}
		return nil
	})
}

// Seed 003 17.5: an error detected but not associated with the current
// call is postponed to a later related call: a failure of rank 2 does not
// disturb rank 0's communication with rank 1; the next operations that
// involve rank 2 (a send, a receive, an Isend's completion) report it.
func TestRunThroughErrorPostponedToRelatedCall(t *testing.T) {
	failedKnown := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		c.EnableRunThrough()
		switch c.Rank() {
		case 2:
			w.Kill()
		case 1:
			if err := awaitFailure(c, 2); err != nil {
				return err
			}
			failedKnown.open()
			for i := 0; i < 3; i++ {
				if err := mpi.Send(c, []int{i}, 0, 1); err != nil {
					return err
				}
			}
		case 0:
			failedKnown.wait(t)
			buf := []int{0}
			for i := 0; i < 3; i++ {
				if _, err := mpi.Recv(c, buf, 1, 1); err != nil || buf[0] != i {
					return fmt.Errorf("unrelated receive %d after the failure: %v %v", i, buf, err)
				}
			}
			req, err := mpi.Isend(c, []int{1}, 2, 0)
			if err != nil {
				return fmt.Errorf("Isend start: %v", err)
			}
			if _, err := req.Wait(); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("Isend's completion: %v", err)
			}
			if err := mpi.Send(c, []int{1}, 2, 0); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("send to the failed rank: %v", err)
			}
			if _, err := mpi.Recv(c, buf, 2, 0); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("receive from the failed rank: %v", err)
			}
		}
		return nil
	})
}

// Probes on a run-through communicator follow its receive rules (seed 003
// 17.6): a probe of the failed process and a wildcard probe while
// wildcards are disabled raise ErrRankFailStop; after ReenableAnySource a
// wildcard probe finds a live sender's message.
func TestRunThroughProbeFollowsReceiveRules(t *testing.T) {
	reenabled := newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		c.EnableRunThrough()
		switch c.Rank() {
		case 2:
			w.Kill()
		case 1:
			reenabled.wait(t)
			return mpi.Send(c, []int{4}, 0, 4)
		case 0:
			if err := awaitFailure(c, 2); err != nil {
				return err
			}
			if _, err := c.Probe(2, 4); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("Probe of the failed process: %v", err)
			}
			if _, err := c.Probe(mpi.AnySource, 4); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("Probe(AnySource) while wildcards are disabled: %v", err)
			}
			if _, ok, err := c.Iprobe(mpi.AnySource, 4); ok || !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("Iprobe(AnySource) while wildcards are disabled: %v %v", ok, err)
			}
			if _, err := c.ReenableAnySource(); err != nil {
				return err
			}
			reenabled.open()
			if st, err := c.Probe(mpi.AnySource, 4); err != nil || st.Source != 1 {
				return fmt.Errorf("Probe(AnySource) after ReenableAnySource: %+v %v", st, err)
			}
			_, err := mpi.Recv(c, []int{0}, 1, 4)
			return err
		}
		return nil
	})
}
