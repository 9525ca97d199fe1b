package mpi

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
)

// waitEntry polls w's call table until an entry satisfies ok (deadline
// 30 s) and returns it.
func waitEntry(t *testing.T, w *World, ok func(e rte.Call) bool) (rte.Call, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range w.rt.Calls.Snapshot(rte.CallNow()) {
			if ok(e) {
				return e, nil
			}
		}
		time.Sleep(time.Millisecond) // polling the other rank's table for its entry
	}
	return rte.Call{}, fmt.Errorf("no such entry in rank %d's table: %+v", w.rank, w.rt.Calls.Snapshot(rte.CallNow()))
}

// Every rank knows what it is waiting in (issue 23 item 1): a blocked
// wildcard receive, a Wait on a nonblocking receive, and the third
// collective of a communicator, each with its fields; the table is empty
// once the calls returned.
func TestCallTableRecordsBlockedCalls(t *testing.T) {
	err := Run(2, func(w *World) error {
		c := w.CommWorld()
		peer := w.runWorlds[1-c.Rank()]
		buf := make([]float64, 3)
		if c.Rank() == 1 {
			if _, err := Recv(c, buf, AnySource, 3); err != nil {
				return err
			}
			r, err := Irecv(c, buf[:2], 0, 4)
			if err != nil {
				return err
			}
			if _, err := r.Wait(); err != nil {
				return err
			}
		} else {
			e, err := waitEntry(t, peer, func(e rte.Call) bool { return e.Op == "MPI_Recv" })
			if err != nil {
				return err
			}
			if e.Comm != "MPI_COMM_WORLD" || e.Peer != rte.CallAny || e.Tag != 3 || e.Count != 3 || e.Type != "float64" || e.Seq != rte.CallNone {
				return fmt.Errorf("wildcard receive recorded as %+v", e)
			}
			if err := Send(c, buf, 1, 3); err != nil {
				return err
			}
			e, err = waitEntry(t, peer, func(e rte.Call) bool { return e.Op == "MPI_Wait" })
			if err != nil {
				return err
			}
			if e.Of != "MPI_Irecv" || e.Peer != 0 || e.PeerProc != 0 || e.Tag != 4 || e.Count != 2 {
				return fmt.Errorf("wait on a receive recorded as %+v", e)
			}
			if err := Send(c, buf[:2], 1, 4); err != nil {
				return err
			}
		}
		for i := 0; i < 2; i++ {
			if err := Allreduce(c, buf, make([]float64, 3), Sum); err != nil {
				return err
			}
		}
		// The third collective: rank 0 waits in it until rank 1 saw it.
		if c.Rank() == 1 {
			e, err := waitEntry(t, peer, func(e rte.Call) bool { return e.Op == "MPI_Allreduce" && e.Seq == 3 })
			if err != nil {
				return err
			}
			if e.Count != 3 || e.Type != "float64" || e.Root != rte.CallNone || e.Background {
				return fmt.Errorf("the third collective recorded as %+v", e)
			}
		}
		if err := Allreduce(c, buf, make([]float64, 3), Sum); err != nil {
			return err
		}
		if err := c.Barrier(); err != nil {
			return err
		}
		if s := w.rt.Calls.Snapshot(rte.CallNow()); len(s) != 0 {
			return fmt.Errorf("rank %d: %+v still in the table after the calls returned", c.Rank(), s)
		}
		if w.rt.Calls.Progress() == 0 {
			return fmt.Errorf("rank %d: no progress counted", c.Rank())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkTrack measures one recorded wait, enter and leave, as the API
// makes it on its wait paths (no MPI counterpart): a blocked call's
// (trackOp, Comm.entry into the runtime's table, the path of p2p.go's
// and request.go's waits) and a shared-memory collective's (through the
// coll.ShmComm interface, as internal/coll's path calls it).
func BenchmarkTrack(b *testing.B) {
	err := Run(1, func(w *World) error {
		c := w.CommWorld()
		b.Run("op", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				c.w.leave(c.trackOp("MPI_Barrier"))
			}
		})
		b.Run("shm", func(b *testing.B) {
			var sc coll.ShmComm = (*shmComm)(c)
			sig := coll.MakeSig(coll.KAllreduce, 1, 0, 1)
			b.ReportAllocs()
			for i := range b.N {
				sc.ShmUnblock(sc.ShmBlock("MPI_Allreduce", uint64(p2p.DTFloat64), sig, uint32(i), 0, 0))
			}
		})
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// goOnPoller is a p2p.Poller whose poll waits (deadline 30 s) for its
// request, the message being delivered by the sender's goroutine (Run's
// transport); it closes polling at its first call and, with goesOn, tells
// the request that its wait goes on first (as the shared-memory
// transport's poll does past its brief stretch).
type goOnPoller struct {
	polling chan struct{}
	once    sync.Once
	goesOn  bool
}

func (p *goOnPoller) PollUntil(c interface{ Done() bool }, budget time.Duration) bool {
	if b, ok := c.(interface{ Blocking() }); ok && p.goesOn {
		b.Blocking()
	}
	p.once.Do(func() { close(p.polling) })
	deadline := time.Now().Add(30 * time.Second)
	for !c.Done() && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	return c.Done()
}

// A blocking receive whose poll completes it within the poll's brief
// stretch (its reply came within a ping-pong's round trip) records
// nothing in the call table (issue 28: a record is about a seventh of a
// 1-byte round trip), as one that found its message already there; one
// whose wait goes on is recorded, and left when it returns; with an
// observer on the table (the trace timeline) every wait is recorded.
func TestBriefReceiveIsNotRecorded(t *testing.T) {
	for _, tc := range []struct {
		name             string
		goesOn, observed bool
		want             uint64
	}{{"brief", false, false, 0}, {"goes-on", true, false, 1}, {"observed", false, true, 1}} {
		p := &goOnPoller{polling: make(chan struct{}), goesOn: tc.goesOn}
		err := Run(2, func(w *World) error {
			c := w.CommWorld()
			buf := []byte{7}
			if c.Rank() == 0 {
				select {
				case <-p.polling: // rank 1's receive is posted and polls
				case <-time.After(30 * time.Second):
					return fmt.Errorf("rank 1 never polled")
				}
				return Send(c, buf, 1, 5)
			}
			var entered int
			if tc.observed {
				w.rt.Calls.SetObserver(func(ev rte.CallEvent) {
					if !ev.Leave && ev.Op == "MPI_Recv" {
						entered++
					}
				})
				defer w.rt.Calls.SetObserver(nil)
			}
			w.eng.SetPoller(p, time.Second)
			before := w.rt.Calls.Progress()
			if _, err := Recv(c, buf, 0, 5); err != nil {
				return err
			}
			if got := w.rt.Calls.Progress() - before; got != tc.want || tc.observed && entered != 1 {
				return fmt.Errorf("the receive was recorded %d times (want %d), the observer saw %d", got, tc.want, entered)
			}
			if s := w.rt.Calls.Snapshot(rte.CallNow()); len(s) != 0 {
				return fmt.Errorf("%+v still in the table after the receive returned", s)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}
