package ftdrive

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
)

// A rank that suspects k processes at about the same time (k broken
// connections, as a kill of 1% of the job gives the ranks near the
// victims) tells each neighbour of the broadcast overlay in at most two
// frames, not k: the first suspicion is confirmed and broadcast at once,
// and the ones made while its verdict was awaited are confirmed together
// and broadcast as one batch a neighbour (issue 24: k·degree frames
// before). Every rank still learns every failure.
func TestSuspicionsBroadcastTogether(t *testing.T) {
	sizes := []int{64, 256}
	if v := os.Getenv("FTMPI_GROWTH_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 64 {
				t.Fatalf("FTMPI_GROWTH_SIZES: %q is not a size of at least 64", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			k := max(8, n/100)        // 1% of the job, at least 8
			victims := make([]int, k) // 3, 5, 7, ...: odd, none a neighbour of rank 0 (±2^i)
			for i := range victims {
				victims[i] = 3 + 2*i
			}
			cfg := detector.DefaultConfig()
			cfg.Period, cfg.Timeout = time.Second, time.Hour // no detection in the test's time
			asked, release := make(chan int, 1), make(chan struct{})
			rs := jobConfirm(t, n, cfg, func(self, rank, _ int, _ string) error {
				if self == 0 && rank == victims[0] {
					asked <- rank
					<-release // the launcher takes its time over the first
				}
				return nil
			})
			for _, v := range victims {
				rs[v].halt()
			}
			rs[0].f.Declare(victims[0], 0, "connection broken")
			select {
			case <-asked:
			case <-time.After(30 * time.Second):
				t.Fatal("the first suspicion was never confirmed")
			}
			for _, v := range victims[1:] {
				rs[0].f.Declare(v, 0, "connection broken")
			}
			close(release)
			for _, v := range victims {
				waitLostBut(t, rs, v, victims)
			}
			deg := len(rbcast.Neighbors(n, 0))
			got := rs[0].notices.Load()
			if os.Getenv("FTMPI_GROWTH_SIZES") != "" || testing.Verbose() {
				t.Logf("n=%d: %d failures suspected at once: %d notice frames from their observer (degree %d)", n, k, got, deg)
			}
			if got > int64(2*deg) {
				t.Fatalf("n=%d: %d notice frames for %d failures from one rank, want at most %d (two a neighbour)", n, got, k, 2*deg)
			}
		})
	}
}
