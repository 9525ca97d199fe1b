package mpi

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/fence"
)

// The fence of a process without a head (finalizeFence): a process that
// entered Finalize does not leave it while another has not entered it and
// is not failed; it leaves once the last one enters, or fails.
func TestFinalizeFenceWaitsForEveryProcess(t *testing.T) {
	for _, last := range []string{"enters", "fails"} {
		t.Run("last "+last, func(t *testing.T) {
			var left [2]atomic.Bool
			inFence := make(chan int, 2)
			runDPM(t, 3, func(w *World, c *Comm) error {
				if w.rank < 2 {
					w.fence.onStep = func(step string) bool {
						if step == "enter" {
							inFence <- w.rank
						}
						return false
					}
				}
				if err := c.Barrier(); err != nil { // every hook is set before any fence frame
					return err
				}
				if w.rank < 2 {
					w.finalizeFence()
					left[w.rank].Store(true)
					return nil
				}
				// Rank 2 sees both enter Finalize: neither may leave it.
				for range 2 {
					select {
					case <-inFence:
					case <-time.After(30 * time.Second):
						return fmt.Errorf("ranks 0 and 1 did not enter the fence within 30s")
					}
				}
				for r := range left {
					if left[r].Load() {
						return fmt.Errorf("rank %d left Finalize before rank 2 entered it", r)
					}
				}
				if last == "fails" {
					w.Kill() // the others' fence counts the failure
				}
				w.finalizeFence()
				return nil
			})
			for r := range left {
				if !left[r].Load() {
					t.Fatalf("rank %d never left Finalize", r)
				}
			}
		})
	}
}

// fenceJob runs the fence at every rank of an n-rank job (after a
// barrier, with the hooks hook returns set first) and returns the Worlds
// and how long the fence took, from the barrier to the last rank out.
func fenceJob(t *testing.T, n int, hook func(w *World) func(string) bool) ([]*World, time.Duration) {
	t.Helper()
	worlds := make([]*World, n)
	var mu sync.Mutex
	var start time.Time
	var end time.Time
	runDPM(t, n, func(w *World, c *Comm) error {
		worlds[w.rank] = w
		if hook != nil {
			w.fence.onStep = hook(w)
		}
		if err := c.Barrier(); err != nil {
			switch {
			case hook != nil && w.killedByFence():
				// The victim got a fence frame from a faster process while
				// still in its Barrier, and its hook killed it there.
				return waitKilled(w)
			case hook != nil && isFailure(err):
				// A victim killed as its fence began had not written its
				// last barrier frames yet: this Barrier fails with the
				// failure, and the process finalizes with it known.
			default:
				return err
			}
		}
		mu.Lock()
		if start.IsZero() {
			start = time.Now()
		}
		mu.Unlock()
		w.finalizeFence()
		if w.fence.onStep != nil && w.killedByFence() {
			return waitKilled(w)
		}
		mu.Lock()
		end = time.Now()
		mu.Unlock()
		return nil
	})
	return worlds, end.Sub(start)
}

// killedByFence reports whether the test hook killed w in its fence.
func (w *World) killedByFence() bool {
	return w.rt.Fence().Stopped()
}

// waitKilled waits (up to a deadline) until the kill the fence's hook
// started has taken effect.
func waitKilled(w *World) error {
	ch := w.rt.Fence().Signal()
	deadline := time.After(30 * time.Second)
	for !w.killed.Load() {
		select {
		case <-ch:
		case <-deadline:
			return fmt.Errorf("process %d: the kill did not take effect within 30s", w.rank)
		}
	}
	return nil
}

// fenceFrames returns the most fence frames one process sent and
// received, and all sent.
func fenceFrames(worlds []*World) (maxSent, maxGot, total int) {
	for _, w := range worlds {
		sent, got := w.rt.Fence().Frames()
		maxSent, maxGot = max(maxSent, sent), max(maxGot, got)
		total += sent
	}
	return
}

// A process sends and receives O(log n) fence frames, not one to and
// from every other process (n-1: 63 at n = 64, against 1+2*log2(64) = 13).
func TestFinalizeFenceFramesLogN(t *testing.T) {
	for _, n := range []int{16, 64} {
		worlds, _ := fenceJob(t, n, nil)
		maxSent, maxGot, total := fenceFrames(worlds)
		t.Logf("n %d: at most %d frames sent and %d received by a process, %d in all", n, maxSent, maxGot, total)
		if lim := fence.MaxSent(n); maxSent > lim || maxGot > lim {
			t.Errorf("n %d: a process sent %d and received %d fence frames, want at most 1+2*log2(n) = %d", n, maxSent, maxGot, lim)
		}
	}
}

// A process killed at each step of its fence (tied to the step, not to a
// time) does not hold the others: every survivor leaves, none before the
// others entered. The victims are the root (0), inner processes of the
// binomial tree (4: parent 0, children 5 and 6; 6: child 7) and a leaf (7).
func TestFinalizeFenceCrashAtEachStep(t *testing.T) {
	const n = 8
	steps := []string{"enter", "send probe", "send up", "send down", "got probe", "got up", "got down"}
	victims := []int{0, 4, 6, 7}
	if testing.Short() {
		victims = []int{0, 4}
	}
	killedAt := 0
	for _, v := range victims {
		for _, step := range steps {
			t.Run(fmt.Sprintf("rank%d-%s", v, strings.ReplaceAll(step, " ", "-")), func(t *testing.T) {
				var killed atomic.Bool
				worlds, _ := fenceJob(t, n, func(w *World) func(string) bool {
					if w.rank != v {
						return nil
					}
					return func(s string) bool { return s == step && !killed.Swap(true) }
				})
				if killed.Load() {
					killedAt++
				}
				for _, w := range worlds {
					if w.rank != v && !w.fenceDone() {
						t.Errorf("rank %d left the fence without its completion", w.rank)
					}
				}
			})
		}
	}
	t.Logf("%d of %d victim/step pairs reached their step and were killed there", killedAt, len(victims)*len(steps))
	// Every victim enters, sends or gets Down, and all but the root send
	// Up: at least these pairs must have happened.
	if min := len(victims) * 3; killedAt < min {
		t.Errorf("only %d kills happened, want at least %d", killedAt, min)
	}
}

// The fence's growth in process: frames per process and time from a
// barrier to the last rank out, at n = 16 ... 1000. Behind
// FTMPI_FENCE_SCALE=1 (a thousand goroutine ranks take a while on a
// loaded machine); FTMPI_FENCE_SCALE=n1,n2,... picks the sizes.
func TestFinalizeFenceScale(t *testing.T) {
	v := os.Getenv("FTMPI_FENCE_SCALE")
	if v == "" {
		t.Skip("FTMPI_FENCE_SCALE not set")
	}
	sizes := []int{16, 64, 256, 1000}
	if v != "1" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				t.Fatalf("FTMPI_FENCE_SCALE=%q: want 1 or sizes such as 16,64", v)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		worlds, took := fenceJob(t, n, nil)
		maxSent, maxGot, total := fenceFrames(worlds)
		fmt.Printf("fence-scale n=%d max_sent=%d max_got=%d total=%d bound=%d alltoall_per_proc=%d elapsed_ms=%.2f\n",
			n, maxSent, maxGot, total, fence.MaxSent(n), n-1, float64(took.Microseconds())/1000)
	}
}
