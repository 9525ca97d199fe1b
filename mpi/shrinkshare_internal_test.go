package mpi

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

// The survivors of a shrink of a large world in one process (mpi.Run) get
// one member list, not one each: every shrunk communicator holds the same
// array, which lists exactly the survivors in order, and a rank's place in
// it is its rank.
func TestShrunkWorldSharesItsMembers(t *testing.T) {
	const n = sharedListMin + 6
	killed := func(r int) bool { return r == 5 || r == n-2 }
	var (
		ready sync.WaitGroup
		mu    sync.Mutex
		lists = map[*int]int{}
		bad   []string
	)
	ready.Add(n)
	report := func(format string, a ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
	err := Run(n, func(w *World) error {
		c := w.CommWorld()
		c.SetErrhandler(ErrorsReturn)
		ready.Done()
		ready.Wait()
		if killed(w.rank) {
			w.killInProc()
			runtime.Goexit()
		}
		s, err := c.Shrink()
		if err != nil {
			return err
		}
		defer s.Free()
		want := w.rank
		if w.rank > 5 {
			want--
		}
		if w.rank > n-2 {
			want--
		}
		if s.Size() != n-2 || s.Rank() != want || len(s.members) != n-2 || s.members[want] != w.rank {
			report("rank %d: shrunk to rank %d of %d (members %d), want %d of %d", w.rank, s.Rank(), s.Size(), len(s.members), want, n-2)
		}
		if s.members[4] != 4 || s.members[5] != 6 || s.members[n-3] != n-1 || cap(s.members) != n-2 {
			report("rank %d: members around the dead %v, cap %d", w.rank, []int{s.members[4], s.members[5], s.members[n-3]}, cap(s.members))
		}
		mu.Lock()
		lists[unsafe.SliceData(s.members)]++
		mu.Unlock()
		return nil
	})
	if err != nil || len(bad) > 0 {
		t.Fatalf("Run: %v; %d errors, first: %v", err, len(bad), bad[:min(3, len(bad))])
	}
	if len(lists) != 1 {
		t.Fatalf("the %d survivors hold %d member lists, want one shared", n-2, len(lists))
	}
}
