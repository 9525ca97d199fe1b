package sock

import (
	"testing"
)

// BenchmarkPeerLookup is the first step of every Send: finding the peer's
// sending state. "table" is the lock-free path (peertab) sends take now;
// "mutex" is the transport-wide lock they took before, kept here for the
// comparison. Parallel: goroutines of one rank sending at once (a C
// program's threads, nonblocking collectives).
func BenchmarkPeerLookup(b *testing.B) {
	tr, err := Listen(Config{Self: 0, Host: "h", Mode: ModeTCP, Handler: newRecorder()})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	for r := range 16 {
		if _, err := tr.peer(r); err != nil {
			b.Fatal(err)
		}
	}
	locked := func(r int) *peerState {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.peerLocked(r)
	}
	b.Run("table", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for r := 0; pb.Next(); r++ {
				if ps, _ := tr.peer(r & 15); ps == nil {
					b.Fatal("no peer")
				}
			}
		})
	})
	b.Run("mutex", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for r := 0; pb.Next(); r++ {
				if locked(r&15) == nil {
					b.Fatal("no peer")
				}
			}
		})
	})
}
