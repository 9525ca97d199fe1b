package mpi_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/mpi"
)

// The race of Probe + Recv with wildcards, made deterministic: a probe
// sees message A, another receive (another goroutine's wildcard Recv)
// takes A, and the receive sized from the probe gets B (truncated). A
// matched probe takes A out of matching: the other receive gets B, and
// Mrecv gets exactly A.
func TestMprobeVersusProbeRace(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() == 0 {
			for round := 0; round < 2; round++ {
				if err := mpi.Send(c, []int{1}, 1, 1); err != nil { // A
					return err
				}
				if err := mpi.Send(c, []int{2, 2, 2}, 1, 1); err != nil { // B
					return err
				}
			}
			return nil
		}
		// Probe + Recv: the interleaving that goes wrong.
		st, err := c.Probe(mpi.AnySource, 1)
		if err != nil || st.Count != 1 {
			return fmt.Errorf("probe: %+v %v", st, err)
		}
		other := make([]int, 3)
		if _, err := mpi.Recv(c, other, mpi.AnySource, 1); err != nil || other[0] != 1 {
			return fmt.Errorf("the other receive: %v %v", other, err)
		}
		mine := make([]int, st.Count)
		if _, err := mpi.Recv(c, mine, st.Source, st.Tag); !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("Probe + Recv after the other receive stole the message: %v, want ErrTruncate (B instead of A)", err)
		}
		// Mprobe + Mrecv: the same interleaving is correct.
		msg, st, err := c.Mprobe(mpi.AnySource, 1)
		if err != nil || st.Count != 1 {
			return fmt.Errorf("mprobe: %+v %v", st, err)
		}
		if _, err := mpi.Recv(c, other, mpi.AnySource, 1); err != nil || other[0] != 2 {
			return fmt.Errorf("the other receive after Mprobe: %v %v, want B", other, err)
		}
		mine = make([]int, st.Count)
		if st, err := mpi.Mrecv(msg, mine); err != nil || mine[0] != 1 || st.Count != 1 || st.Source != 0 {
			return fmt.Errorf("mrecv: %v %+v %v, want A", mine, st, err)
		}
		// A message is received once.
		if _, err := mpi.Mrecv(msg, mine); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("second mrecv: %v, want ErrRequest", err)
		}
		if _, err := mpi.Imrecv(msg, mine); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("imrecv of a received message: %v, want ErrRequest", err)
		}
		if _, err := mpi.Mrecv[int](nil, mine); !errors.Is(err, mpi.ErrRequest) {
			return fmt.Errorf("mrecv of nil: %v, want ErrRequest", err)
		}
		return nil
	})
}

// Many goroutines doing Mprobe + Mrecv (and Improbe + Imrecv) with
// ANY_SOURCE on one communicator never take each other's messages: each
// receive gets the message its probe described (size and content), and
// every message is received once. Eager and rendezvous sizes.
func TestMprobeManyGoroutines(t *testing.T) {
	const perSender, workers = 60, 6
	sizes := []int{1, 9, 70_000, 3, 0, 20}
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		if c.Rank() != 0 {
			for i := 0; i < perSender; i++ {
				n := sizes[i%len(sizes)]
				buf := make([]int32, n+1)
				for j := range buf {
					buf[j] = int32(c.Rank()*100000 + i)
				}
				if err := mpi.Send(c, buf, 0, 5); err != nil {
					return err
				}
			}
			return nil
		}
		var mu sync.Mutex
		seen := map[int32]bool{}
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		total := 2 * perSender
		var taken int
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for {
					mu.Lock()
					if taken == total {
						mu.Unlock()
						errs <- nil
						return
					}
					taken++
					mu.Unlock()
					var msg *mpi.Message
					var st mpi.Status
					var err error
					if g%2 == 0 {
						msg, st, err = c.Mprobe(mpi.AnySource, 5)
					} else {
						for ok := false; !ok && err == nil; {
							msg, st, ok, err = c.Improbe(mpi.AnySource, 5)
						}
					}
					if err != nil {
						errs <- err
						return
					}
					buf := make([]int32, st.Count)
					var rst mpi.Status
					if g%3 == 0 {
						req, err := mpi.Imrecv(msg, buf)
						if err == nil {
							rst, err = req.Wait()
						}
						if err != nil {
							errs <- err
							return
						}
					} else if rst, err = mpi.Mrecv(msg, buf); err != nil {
						errs <- err
						return
					}
					id := buf[0]
					if rst.Count != st.Count || rst.Source != st.Source || int(id)/100000 != st.Source || buf[len(buf)-1] != id ||
						len(buf) != sizes[int(id)%100000%len(sizes)]+1 {
						errs <- fmt.Errorf("worker %d: probed %+v, received %+v with id %d", g, st, rst, id)
						return
					}
					mu.Lock()
					dup := seen[id]
					seen[id] = true
					mu.Unlock()
					if dup {
						errs <- fmt.Errorf("message %d received twice", id)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		if len(seen) != total {
			return fmt.Errorf("received %d distinct messages, want %d", len(seen), total)
		}
		return nil
	})
}

// ProcNull, truncation and type mismatch.
func TestMprobeProcNullAndBadReceives(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		msg, st, err := c.Mprobe(mpi.ProcNull, 0)
		if err != nil || msg != mpi.MessageNoProc || st.Source != mpi.ProcNull {
			return fmt.Errorf("mprobe of ProcNull: %v %+v %v", msg, st, err)
		}
		for i := 0; i < 2; i++ {
			if st, err := mpi.Mrecv(msg, []int{}); err != nil || st.Source != mpi.ProcNull {
				return fmt.Errorf("mrecv of MessageNoProc: %+v %v", st, err)
			}
		}
		if msg, _, ok, err := c.Improbe(mpi.ProcNull, 0); !ok || err != nil || msg != mpi.MessageNoProc {
			return fmt.Errorf("improbe of ProcNull: %v %v %v", msg, ok, err)
		}
		if _, _, err := c.Mprobe(5, 0); !errors.Is(err, mpi.ErrRank) {
			return fmt.Errorf("mprobe of rank 5: %v, want ErrRank", err)
		}
		if c.Rank() == 0 {
			if err := mpi.Send(c, []int{1, 2}, 1, 0); err != nil {
				return err
			}
			return mpi.Send(c, []float64{1}, 1, 0)
		}
		msg, _, err = c.Mprobe(0, 0)
		if err != nil {
			return err
		}
		if _, err := mpi.Mrecv(msg, []int{0}); !errors.Is(err, mpi.ErrTruncate) {
			return fmt.Errorf("mrecv into a short buffer: %v, want ErrTruncate", err)
		}
		msg, _, err = c.Mprobe(0, 0)
		if err != nil {
			return err
		}
		if _, err := mpi.Mrecv(msg, []int{0}); !errors.Is(err, mpi.ErrType) {
			return fmt.Errorf("mrecv of float64 into int: %v, want ErrType", err)
		}
		return nil
	})
}

// Failures (ULFM): Mprobe of a failed source raises ErrProcFailed, a
// wildcard one with an unacknowledged failure the blocking wildcard
// error; a probed eager message is delivered after its sender died, a
// probed rendezvous message whose sender died before its data raises
// ErrProcFailed.
func TestMprobeFailures(t *testing.T) {
	sent, probed := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 1: // eager then rendezvous, then dies
			if err := mpi.Send(c, []int{42}, 0, 1); err != nil {
				return err
			}
			if _, err := mpi.Isend(c, make([]int, 100_000), 0, 2); err != nil {
				return err
			}
			sent.open()
			probed.wait(t)
			w.Kill()
		case 0:
			sent.wait(t)
			eager, _, err := c.Mprobe(1, 1)
			if err != nil {
				return err
			}
			big, st, err := c.Mprobe(1, 2)
			if err != nil || st.Count != 100_000 {
				return fmt.Errorf("mprobe of the rendezvous message: %+v %v", st, err)
			}
			probed.open()
			// The failure is known once a receive from rank 1 fails.
			if _, err := mpi.Recv(c, []int{0}, 1, 9); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("recv from the dead rank: %v", err)
			}
			got := []int{0}
			if _, err := mpi.Mrecv(eager, got); err != nil || got[0] != 42 {
				return fmt.Errorf("mrecv of an eager message of a dead sender: %v %v, want it delivered", got, err)
			}
			if _, err := mpi.Mrecv(big, make([]int, 100_000)); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("mrecv of a rendezvous message of a dead sender: %v, want ErrProcFailed", err)
			}
			if _, _, err := c.Mprobe(1, 1); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("mprobe of a dead source: %v, want ErrProcFailed", err)
			}
			if _, _, _, err := c.Improbe(1, 1); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("improbe of a dead source: %v, want ErrProcFailed", err)
			}
			if _, _, err := c.Mprobe(mpi.AnySource, 1); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("wildcard mprobe with an unacknowledged failure: %v, want ErrProcFailed", err)
			}
			if _, _, _, err := c.Improbe(mpi.AnySource, 1); !errors.Is(err, mpi.ErrProcFailed) {
				return fmt.Errorf("wildcard improbe with an unacknowledged failure: %v, want ErrProcFailed", err)
			}
			if err := c.FailureAck(); err != nil {
				return err
			}
			if _, _, ok, err := c.Improbe(mpi.AnySource, 1); ok || err != nil {
				return fmt.Errorf("wildcard improbe after the acknowledgement: %v %v, want nothing", ok, err)
			}
			if err := mpi.Send(c, []int{7}, 2, 3); err != nil {
				return err
			}
			msg, _, err := c.Mprobe(mpi.AnySource, 4)
			if err != nil {
				return err
			}
			if _, err := mpi.Mrecv(msg, got); err != nil || got[0] != 8 {
				return fmt.Errorf("wildcard mprobe after the acknowledgement: %v %v", got, err)
			}
		case 2:
			got := []int{0}
			if _, err := mpi.Recv(c, got, 0, 3); err != nil {
				return err
			}
			return mpi.Send(c, []int{8}, 0, 4)
		}
		return nil
	})
}

// A revocation after the probe: Mrecv raises ErrRevoked.
func TestMprobeRevoked(t *testing.T) {
	run(t, 2, func(w *mpi.World, c *mpi.Comm) error {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		d.SetErrhandler(mpi.ErrorsReturn)
		if d.Rank() == 0 {
			return mpi.Send(d, []int{1}, 1, 0)
		}
		msg, _, err := d.Mprobe(0, 0)
		if err != nil {
			return err
		}
		if err := d.Revoke(); err != nil {
			return err
		}
		if _, err := mpi.Mrecv(msg, []int{0}); !errors.Is(err, mpi.ErrRevoked) {
			return fmt.Errorf("mrecv on a revoked communicator: %v, want ErrRevoked", err)
		}
		return nil
	})
}

// Run-through (seed 003 17.6): a wildcard matched probe raises
// ErrRankFailStop while wildcards are disabled by a failure, and works
// again after ReenableAnySource; a message already queued is still taken.
func TestMprobeRunThroughWildcards(t *testing.T) {
	killed, queued := newGate(), newGate()
	run(t, 3, func(w *mpi.World, c *mpi.Comm) error {
		switch c.Rank() {
		case 2:
			killed.open()
			w.Kill()
		case 1:
			if err := mpi.Send(c, []int{3}, 0, 1); err != nil {
				return err
			}
			queued.open()
		case 0:
			if err := c.EnableRunThrough(); err != nil {
				return err
			}
			killed.wait(t)
			queued.wait(t)
			// The failure is known once a receive from rank 2 fails.
			if _, err := mpi.Recv(c, []int{0}, 2, 0); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("receive from the failed rank: %v", err)
			}
			msg, _, err := c.Mprobe(mpi.AnySource, 1)
			if err != nil {
				return fmt.Errorf("wildcard mprobe of a queued message while disabled: %v", err)
			}
			got := []int{0}
			if _, err := mpi.Mrecv(msg, got); err != nil || got[0] != 3 {
				return fmt.Errorf("mrecv: %v %v", got, err)
			}
			if _, _, err := c.Mprobe(mpi.AnySource, 1); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("wildcard mprobe while disabled: %v, want ErrRankFailStop", err)
			}
			if _, _, _, err := c.Improbe(mpi.AnySource, 1); !errors.Is(err, mpi.ErrRankFailStop) {
				return fmt.Errorf("wildcard improbe while disabled: %v, want ErrRankFailStop", err)
			}
			if _, err := c.ReenableAnySource(); err != nil {
				return err
			}
			if _, _, ok, err := c.Improbe(mpi.AnySource, 1); ok || err != nil {
				return fmt.Errorf("wildcard improbe after ReenableAnySource: %v %v", ok, err)
			}
		}
		return nil
	})
}
