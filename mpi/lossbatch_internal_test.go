package mpi

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// The losses queued at a rank are taken in one call of take, in the order
// queued; a drain while another caller takes them returns at once, and
// what is queued meanwhile is taken by that caller's next call; an
// injected kill's pending count is released only once its loss was taken.
func TestLossQueueBatches(t *testing.T) {
	var q lossQueue
	var takes [][]int
	inFirst := make(chan struct{})
	release := make(chan struct{})
	take := func(peers []int, causes []error) {
		if len(peers) != len(causes) {
			t.Errorf("take got %d peers, %d causes", len(peers), len(causes))
		}
		takes = append(takes, slices.Clone(peers))
		if len(takes) == 1 {
			close(inFirst)
			<-release
		}
	}
	kills := make([]*injectedKill, 6)
	for i := range kills {
		kills[i] = new(injectedKill)
	}
	for i := range 3 {
		q.queue(i, kills[i])
	}
	q.queue(100, errors.New("not a kill"))
	first := make(chan struct{})
	go func() {
		defer close(first)
		q.drain(take)
	}()
	<-inFirst
	for i := 3; i < 6; i++ {
		q.queue(i, kills[i])
	}
	q.drain(take) // another caller takes them: returns at once
	taken := make(chan struct{})
	go func() {
		for _, k := range kills {
			k.pending.Wait()
		}
		close(taken)
	}()
	select {
	case <-taken:
		t.Fatal("the kills counted as taken before their batch was")
	default:
	}
	close(release)
	deadline := time.After(30 * time.Second)
	for _, ch := range []chan struct{}{first, taken} {
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("the queued losses were not taken within 30 s")
		}
	}
	if got := fmt.Sprint(takes); got != "[[0 1 2 100] [3 4 5]]" {
		t.Fatalf("batches taken %s, want [[0 1 2 100] [3 4 5]]", got)
	}
	q.drain(take) // nothing queued: no call
	if len(takes) != 2 {
		t.Fatalf("an empty queue was taken: %v", takes)
	}
}

// An in-process kill of several ranks at once (mpi.Run): when a killer's
// kill returns, every other rank has taken its loss (recorded in the
// engine and in the failure order, the fault-tolerance pass run), though
// ranks take the losses in batches; and every survivor makes at most one
// pass over its fault-tolerance state per kill.
func TestInProcKillsReachEveryRank(t *testing.T) {
	const n, k = 40, 8
	killed := func(r int) bool { return r%(n/k) == 3 }
	var (
		ready, killers sync.WaitGroup
		mu             sync.Mutex
		bad            []string
	)
	ready.Add(n)
	killers.Add(k)
	report := func(format string, a ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	err := Run(n, func(w *World) error {
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		if err := c.Barrier(); err != nil {
			return err
		}
		ready.Done()
		ready.Wait()
		if killed(w.rank) {
			w.killInProc()
			for _, o := range w.runWorlds {
				if o.rank != w.rank && !killed(o.rank) && !o.eng.IsLost(w.rank) {
					report("rank %d's kill returned before rank %d took it", w.rank, o.rank)
				}
			}
			killers.Done()
			runtime.Goexit()
		}
		killers.Wait()
		order := w.failedOrder()
		if len(order) != k {
			report("rank %d knows the failures %v, want %d", w.rank, order, k)
		}
		for _, p := range order {
			if !killed(p) {
				report("rank %d: %d in its failure order was not killed", w.rank, p)
			}
		}
		if p := w.ft.passes.Load(); p < 1 || p > k {
			report("rank %d made %d passes for %d kills, want 1..%d", w.rank, p, k, k)
		}
		return nil
	})
	if err != nil || len(bad) > 0 {
		t.Fatalf("Run: %v; %d errors, first: %v", err, len(bad), bad[:min(3, len(bad))])
	}
}
