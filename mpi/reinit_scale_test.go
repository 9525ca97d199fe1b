package mpi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/growth"
	"github.com/ftmpi/ftmpi/mpi"
)

// reinitEpochRow is one Reinit epoch change in process: n ranks, one
// killed, measured from the kill to the last rank's result in epoch 1.
type reinitEpochRow struct {
	N  int     `json:"n"`
	Ms float64 `json:"ms"` // kill -> the last rank's epoch-1 Allreduce result
	// CPUMs is the process's CPU time (user + system) over the same span.
	CPUMs float64 `json:"cpu_ms"`
	// KBPerRank: heap and goroutine stacks in use then (after a GC),
	// both epochs' engines included, a rank.
	KBPerRank int64 `json:"kb_per_rank"`
	// Frames sent from the kill on: on epoch 0's fabric after the kill
	// and on epoch 1's (its start and the Allreduce), in all and by the
	// busiest rank.
	Frames    int64  `json:"frames"`
	FramesMax int64  `json:"frames_max_per_rank"`
	Load      string `json:"load"`
}

// reinitEpoch runs one Reinit epoch change of n ranks under mpi.Run:
// every rank enters Reinit (ErrorsReinitAsync), one rank is killed once
// all are in (a barrier), the survivors roll back and the killed rank's
// next incarnation starts; all n run one Allreduce in epoch 1, which must
// count n, with the states of seed 000 (n-1 reinited, 1 restarted).
func reinitEpoch(t *testing.T, n int) reinitEpochRow {
	t.Helper()
	victim := n / 3
	var (
		mu       sync.Mutex
		bad      []string
		states   = map[mpi.ReinitState]int{}
		alive    sync.WaitGroup // every rank, after its epoch-1 Allreduce
		measured = make(chan struct{})
		bail     = make(chan struct{})
		bailOnce sync.Once
		killedAt time.Time
		cpu0     time.Duration
		f0       []int64 // epoch 0's frames at the kill
		last     *mpi.World
		row      = reinitEpochRow{N: n}
	)
	alive.Add(n)
	fail := func(format string, a ...any) error {
		err := fmt.Errorf(format, a...)
		mu.Lock()
		bad = append(bad, err.Error())
		mu.Unlock()
		bailOnce.Do(func() { close(bail) })
		return err
	}
	go func() {
		alive.Wait()
		mu.Lock()
		row.Ms = float64(time.Since(killedAt)) / 1e6
		row.CPUMs = float64(processCPU()-cpu0) / 1e6
		w := last
		mu.Unlock()
		// Every rank waits for measured: no frame moves now.
		f1, e0 := mpi.FramesOfEpoch(w, 1, n), mpi.FramesOfEpoch(w, 0, n)
		for r := range n {
			d := f1[r]
			if e0 != nil && f0 != nil {
				d += e0[r] - f0[r]
			}
			row.Frames += d
			row.FramesMax = max(row.FramesMax, d)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		row.KBPerRank = int64(ms.HeapAlloc+ms.StackInuse) / int64(n) >> 10
		row.Load = loadavg()
		close(measured)
	}()
	err := runWithin(t, n, 10*time.Minute, func(w *mpi.World) error {
		if err := w.CommWorld().SetErrhandler(mpi.ErrorsReinitAsync); err != nil {
			return fail("set the handler: %v", err)
		}
		return mpi.Reinit(w, func(ctx context.Context, w *mpi.World, st mpi.ReinitState) error {
			c := w.CommWorld()
			switch w.Epoch() {
			case 0:
				if err := c.Barrier(); err != nil {
					return fail("rank %d: barrier in epoch 0: %v", c.Rank(), err)
				}
				if c.Rank() == victim {
					mu.Lock()
					f0 = mpi.FramesOfEpoch(w, 0, n)
					killedAt, cpu0 = time.Now(), processCPU()
					mu.Unlock()
					w.Kill()
				}
				err := c.Barrier() // unwinds to Reinit once the epoch ends
				return fail("rank %d: barrier with a dead rank returned: %v", c.Rank(), err)
			case 1:
				sum := []int64{0}
				if err := mpi.Allreduce(c, []int64{1}, sum, mpi.Sum); err != nil {
					return fail("rank %d: allreduce in epoch 1: %v", c.Rank(), err)
				}
				if sum[0] != int64(n) {
					return fail("rank %d: allreduce in epoch 1 counted %d ranks, want %d", c.Rank(), sum[0], n)
				}
				mu.Lock()
				states[st]++
				last = w
				mu.Unlock()
				alive.Done()
				select {
				case <-measured:
				case <-bail:
				}
				return nil
			}
			return fail("rank %d: epoch %d: no failure caused it", c.Rank(), w.Epoch())
		})
	})
	if err != nil || len(bad) > 0 {
		t.Fatalf("n=%d: Run: %v; %d rank errors, first: %v", n, err, len(bad), bad[:min(3, len(bad))])
	}
	if states[mpi.ReinitReinited] != n-1 || states[mpi.ReinitRestarted] != 1 {
		t.Errorf("n=%d: states in epoch 1: %v, want %d reinited and 1 restarted", n, states, n-1)
	}
	return row
}

// A Reinit epoch at 10,000 ranks in one process (issue 24 item 4; 1,000
// under -race and -short, scaleRanks). The time from the kill to the last
// rank's result in epoch 1 and the memory in use then (heap and goroutine
// stacks, after a GC) are logged, with the load.
func TestScaleReinit(t *testing.T) {
	n := scaleRanks()
	r := reinitEpoch(t, n)
	t.Logf("n=%d: Reinit epoch (kill of rank %d -> every rank's Allreduce in epoch 1) %.0f ms (CPU %.0f ms); heap and stacks in use %d MB, %d KB a rank; busiest rank %d frames; load %s",
		n, n/3, r.Ms, r.CPUMs, r.KBPerRank*int64(n)>>10, r.KBPerRank, r.FramesMax, r.Load)
}

// Reinit's epoch change in process as a curve (issue 24 item 1): one
// epoch change at each size, and the frames the busiest rank sends from
// the kill to its result in epoch 1 (the failure's notices, the new
// epoch's start and one Allreduce) bounded by 4*log2(n) + 16, which
// refuses any O(n) variant steeper than CatchesLinear (an all-to-all
// rejoin: n-1 frames a rank). With FTMPI_REINIT_GROWTH_SIZES the rows
// (REINIT lines, JSON) and the fits of the time, the CPU, the memory a
// rank and the frames (FIT lines) are printed.
func TestReinitGrowthInProcess(t *testing.T) {
	ns := mpi.SizesFromEnv(t, "FTMPI_REINIT_GROWTH_SIZES", []int{16, 64, 256}, 16) // a second in all by default
	bound := growth.Bound{C: 4, D: 16}
	var ms, cpu, kb, fmax []float64
	for _, n := range ns {
		r := reinitEpoch(t, n)
		ms, cpu = append(ms, r.Ms), append(cpu, r.CPUMs)
		kb, fmax = append(kb, float64(r.KBPerRank)), append(fmax, float64(r.FramesMax))
		if os.Getenv("FTMPI_REINIT_GROWTH_SIZES") != "" {
			b, _ := json.Marshal(r)
			fmt.Printf("REINIT %s\n", b)
		}
	}
	if err := bound.Check("the busiest rank's frames in a Reinit epoch change", ns, fmax); err != nil {
		t.Error(err)
	}
	all := make([]float64, len(ns))
	for i, n := range ns {
		all[i] = float64(n - 1)
	}
	if bound.Check("an all-to-all rejoin", ns, all) == nil {
		t.Errorf("the bound accepts n-1 frames a rank at %v", ns)
	}
	t.Logf("n %v: busiest rank's frames %v, ms %v", ns, fmax, ms)
	if os.Getenv("FTMPI_REINIT_GROWTH_SIZES") == "" || len(ns) < 2 {
		return
	}
	for _, c := range []struct {
		what string
		ys   []float64
	}{{"ms", ms}, {"cpu_ms", cpu}, {"kb_per_rank", kb}, {"frames_max_per_rank", fmax}} {
		b, _ := json.Marshal(struct {
			Op   string     `json:"op"`
			What string     `json:"what"`
			Fit  growth.Fit `json:"fit"`
		}{"reinit epoch (kill -> epoch-1 Allreduce)", c.what, growth.FitCurve(ns, c.ys)})
		fmt.Printf("FIT %s\n", b)
	}
}
