package mpi_test

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// scaleRanks is the size of the tests at scale: 10,000 ranks (issue 24);
// 1,000 under -race (whose detector allows 8128 goroutines, two per rank,
// and costs ten times the time) and with -short.
func scaleRanks() int {
	if testing.Short() || raceEnabled {
		return 1000
	}
	return 10000
}

// A ULFM repair at 10,000 ranks in one process: 1% of the ranks are killed,
// the survivors agree (and learn of the failure), revoke, acknowledge,
// shrink and run one Allreduce on the result. Every survivor gets the same
// communicator of the n-k survivors in their old order, the sum counts
// exactly them, the failed group names exactly the killed ranks, and the
// memory in use with every rank alive after the repair (heap and goroutine
// stacks) stays within the 400 KiB a rank: state that grew with n
// at every rank (a map of the members per communicator, as before issue
// 24) needs 1.2 MB a rank at this size.
func TestScaleRepair(t *testing.T) {
	n := scaleRanks()
	k := n / 100
	stride := n / k
	killed := func(r int) bool { return r%stride == 1 }
	var (
		alive     sync.WaitGroup // the survivors, after the repair
		measured  = make(chan struct{})
		mu        sync.Mutex
		bad       []string
		inUse     uint64
		repairDur time.Duration
		cpu0      time.Duration // the process's CPU time at the kill
		repairCPU time.Duration
	)
	alive.Add(n - k)
	var start time.Time
	var ready sync.WaitGroup
	ready.Add(n)
	go func() {
		alive.Wait()
		repairDur = time.Since(start)
		repairCPU = processCPU() - cpu0
		pprof.StopCPUProfile()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		inUse = ms.HeapAlloc + ms.StackInuse
		close(measured)
	}()
	fail := func(format string, a ...any) error {
		err := fmt.Errorf(format, a...)
		mu.Lock()
		bad = append(bad, err.Error())
		mu.Unlock()
		return err
	}
	var once sync.Once
	err := mpi.Run(n, func(w *mpi.World) error {
		c := w.CommWorld()
		c.SetErrhandler(mpi.ErrorsReturn)
		if err := c.Barrier(); err != nil {
			return fail("rank %d: barrier: %v", c.Rank(), err)
		}
		ready.Done()
		ready.Wait()
		once.Do(func() {
			startRepairProfile(t)
			start, cpu0 = time.Now(), processCPU()
		})
		if killed(c.Rank()) {
			w.Kill()
		}
		// The agreement completes at every survivor (it excludes the
		// dead); whether it reports the failures depends on what each
		// survivor acknowledged, so its error is not asserted here.
		c.Agree(true)
		c.Revoke()
		if err := c.FailureAck(); err != nil {
			return fail("rank %d: ack: %v", c.Rank(), err)
		}
		s, err := c.Shrink()
		if err != nil {
			return fail("rank %d: shrink: %v", c.Rank(), err)
		}
		defer s.Free()
		wantRank := c.Rank() - c.Rank()/stride
		if c.Rank()%stride > 1 || c.Rank()/stride >= k {
			wantRank-- // the killed rank of this stride is below
		}
		if s.Size() != n-k || s.Rank() != wantRank {
			return fail("rank %d: shrunk to rank %d of %d, want %d of %d", c.Rank(), s.Rank(), s.Size(), wantRank, n-k)
		}
		sum := []int64{0}
		if err := mpi.Allreduce(s, []int64{1}, sum, mpi.Sum); err != nil {
			return fail("rank %d: allreduce on the shrunk communicator: %v", c.Rank(), err)
		}
		if sum[0] != int64(n-k) {
			return fail("rank %d: allreduce counted %d survivors, want %d", c.Rank(), sum[0], n-k)
		}
		if c.Rank() == 0 {
			g, err := c.GetFailed()
			if err != nil {
				return fail("get failed: %v", err)
			}
			if g.Size() != k {
				return fail("failed group has %d processes, want %d", g.Size(), k)
			}
		}
		alive.Done()
		<-measured
		return nil
	})
	if err != nil || len(bad) > 0 {
		t.Fatalf("Run: %v; %d rank errors, first: %v", err, len(bad), bad[:min(3, len(bad))])
	}
	perRank := inUse / uint64(n)
	t.Logf("n=%d killed=%d: kill -> every survivor's result %v, CPU %v; heap and stacks in use %d MB, %d KB a rank; load %s",
		n, k, repairDur.Round(time.Millisecond), repairCPU.Round(time.Millisecond), inUse>>20, perRank>>10, loadavg())
	if perRank > 400<<10 {
		t.Errorf("memory in use after the repair: %d KB a rank, want at most 400 KB (n=%d)", perRank>>10, n)
	}
}

// processCPU is the CPU time (user and system) the test process has used:
// on a shared 2-core machine a repair's wall time follows the other jobs,
// its CPU time much less.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// startRepairProfile starts a CPU profile of the repair alone (from the
// kill to every survivor's result) into the file FTMPI_SCALE_CPUPROFILE
// names, if set (not with -test.cpuprofile, which profiles the whole test,
// the ranks' start included).
func startRepairProfile(t *testing.T) {
	path := os.Getenv("FTMPI_SCALE_CPUPROFILE")
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("repair profile: %v", err)
		return
	}
	t.Cleanup(func() { f.Close() })
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Errorf("repair profile: %v", err)
	}
}
