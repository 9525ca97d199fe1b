package rte

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

var callNames = []string{"MPI_Recv", "MPI_Send", "MPI_Allreduce", "MPI_Barrier"}

// testCall(i) is self-consistent: every field derives from i, so a torn read
// shows as a mismatch.
func testCall(i int) Call {
	e := BlankCall(callNames[i%len(callNames)], fmt.Sprint("comm", i%7), uint32(i))
	e.Peer, e.PeerProc, e.Root, e.Tag = int32(i%5), int32(i%5+100), int32(i%3), int32(i)
	e.Count, e.Type, e.Seq = int64(i)*2, callNames[(i+1)%len(callNames)], int64(i)*3
	e.Of, e.Background = callNames[(i+2)%len(callNames)], i%2 == 1
	return e
}

func consistentCall(e Call) error {
	i := int(e.Ctx)
	w := testCall(i)
	w.Since = e.Since
	if e != w {
		return fmt.Errorf("torn entry %+v, want %+v", e, w)
	}
	return nil
}

func TestCallTableEnterLeaveSnapshot(t *testing.T) {
	var tb CallTable
	a := tb.Enter(callPtr(testCall(1)))
	b := tb.Enter(callPtr(testCall(2)))
	if a < 0 || b < 0 || a == b {
		t.Fatalf("slots %d %d", a, b)
	}
	s := tb.Snapshot(CallNow())
	if len(s) != 2 || s[0].Ctx != 1 || s[1].Ctx != 2 {
		t.Fatalf("snapshot %+v", s)
	}
	for _, e := range s {
		if err := consistentCall(e); err != nil {
			t.Fatal(err)
		}
		if e.Since <= 0 {
			t.Fatalf("since %d", e.Since)
		}
	}
	p := tb.Progress()
	tb.Leave(a)
	if tb.Progress() != p+1 {
		t.Fatalf("progress %d after a leave, was %d", tb.Progress(), p)
	}
	if s := tb.Snapshot(CallNow()); len(s) != 1 || s[0].Ctx != 2 {
		t.Fatalf("after leave: %+v", s)
	}
	tb.Leave(b)
	if s := tb.Snapshot(CallNow()); len(s) != 0 {
		t.Fatalf("after both left: %+v", s)
	}
	tb.Leave(-1) // ignored
}

// A wait's Since is the first sample that saw it; a new occupant of the
// same slot is a new wait; Moving follows the progress counter.
func TestCallTableSampledTimes(t *testing.T) {
	var tb CallTable
	i := tb.Enter(callPtr(testCall(1)))
	tb.Sample(100)
	if s := tb.Snapshot(500); len(s) != 1 || s[0].Since != 100 {
		t.Fatalf("snapshot %+v, want since 100", s)
	}
	if m := tb.Moving(); m != 100 {
		t.Fatalf("moving %d, want the first sample 100", m)
	}
	tb.Leave(i)
	j := tb.Enter(callPtr(testCall(2)))
	if j != i {
		t.Fatalf("slot %d not reused (%d)", i, j)
	}
	if s := tb.Snapshot(700); len(s) != 1 || s[0].Since != 700 || s[0].Ctx != 2 {
		t.Fatalf("new occupant %+v, want since 700", s)
	}
	if m := tb.Moving(); m != 700 {
		t.Fatalf("moving %d after a leave, want 700", m)
	}
	tb.Sample(900)
	if m := tb.Moving(); m != 700 {
		t.Fatalf("moving %d without progress, want 700", m)
	}
	tb.Leave(j)
}

func TestCallTableNil(t *testing.T) {
	var tb *CallTable
	if i := tb.Enter(callPtr(testCall(1))); i != -1 {
		t.Fatalf("nil table Enter = %d", i)
	}
	tb.Leave(0)
	tb.Moved()
	tb.Sample(1)
	if tb.Snapshot(CallNow()) != nil || tb.Progress() != 0 || tb.Overflow() != 0 || tb.Moving() != 0 {
		t.Fatal("nil table reports something")
	}
}

func TestCallTableOverflowCounts(t *testing.T) {
	var tb CallTable
	var got []int
	for i := 0; i < CallSlots; i++ {
		s := tb.Enter(callPtr(testCall(i)))
		if s < 0 {
			t.Fatalf("enter %d: table full early", i)
		}
		got = append(got, s)
	}
	if s := tb.Enter(callPtr(testCall(CallSlots))); s != -1 {
		t.Fatalf("enter beyond CallSlots = %d", s)
	}
	if tb.Overflow() != 1 {
		t.Fatalf("overflow %d", tb.Overflow())
	}
	if n := len(tb.Snapshot(CallNow())); n != CallSlots {
		t.Fatalf("snapshot has %d entries", n)
	}
	tb.Leave(got[5])
	if s := tb.Enter(callPtr(testCall(7))); s != got[5] {
		t.Fatalf("freed slot not reused: %d", s)
	}
}

func TestCallTableObserverSeesEnterAndLeave(t *testing.T) {
	var tb CallTable
	var evs []CallEvent
	tb.SetObserver(func(ev CallEvent) { evs = append(evs, ev) })
	i := tb.Enter(callPtr(testCall(3)))
	tb.Leave(i)
	tb.SetObserver(nil)
	tb.Leave(tb.Enter(callPtr(testCall(4))))
	if len(evs) != 2 || evs[0].Leave || !evs[1].Leave || evs[0].Slot != i || evs[1].Slot != i {
		t.Fatalf("events %+v", evs)
	}
	if err := consistentCall(evs[1].Call); err != nil {
		t.Fatal(err)
	}
	if evs[1].At < evs[0].At || evs[0].Since != evs[0].At || evs[0].At <= 0 {
		t.Fatalf("times: %+v", evs)
	}
}

// Many goroutines enter and leave while readers snapshot: every entry
// read is whole, and every slot is free at the end.
func TestCallTableConcurrentConsistent(t *testing.T) {
	var tb CallTable
	var stop atomic.Bool
	var wg sync.WaitGroup
	const writers, rounds = 8, 2000
	for g := 0; g < writers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				i := tb.Enter(callPtr(testCall(g*rounds + r)))
				tb.Leave(i)
			}
		}(g)
	}
	errs := make(chan error, 1)
	var rd sync.WaitGroup
	rd.Add(1)
	go func() {
		defer rd.Done()
		for !stop.Load() {
			for _, e := range tb.Snapshot(CallNow()) {
				if err := consistentCall(e); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		}
	}()
	wg.Wait()
	stop.Store(true)
	rd.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if n := len(tb.Snapshot(CallNow())); n != 0 {
		t.Fatalf("%d entries left", n)
	}
	if p := tb.Progress(); p != writers*rounds {
		t.Fatalf("progress %d, want %d", p, writers*rounds)
	}
}

func TestCallTableNoAllocation(t *testing.T) {
	var tb CallTable
	e := testCall(1)
	if n := testing.AllocsPerRun(100, func() { tb.Leave(tb.Enter(&e)) }); n != 0 {
		t.Fatalf("%v allocations per Enter/Leave", n)
	}
	tb.SetObserver(func(CallEvent) {})
	if n := testing.AllocsPerRun(100, func() { tb.Leave(tb.Enter(&e)) }); n != 0 {
		t.Fatalf("%v allocations per Enter/Leave with an observer", n)
	}
}

func BenchmarkCallTableEnterLeave(b *testing.B) {
	var tb CallTable
	e := testCall(1)
	for i := 0; i < b.N; i++ {
		tb.Leave(tb.Enter(&e))
	}
}

// Two calls in turn: every field of the slot changes at each Enter (the
// dearest case: every word is stored).
func BenchmarkCallTableEnterLeaveChanging(b *testing.B) {
	var tb CallTable
	e := [2]Call{testCall(1), testCall(2)}
	for i := 0; i < b.N; i++ {
		tb.Leave(tb.Enter(&e[i&1]))
	}
}

func callPtr(e Call) *Call { return &e }
