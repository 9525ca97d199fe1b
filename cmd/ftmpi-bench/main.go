// Command ftmpi-bench measures ftmpi in the style of the OSU micro
// benchmarks and prints one JSON object per measurement (from rank 0):
//
//	{"name":"latency","impl":"ftmpi","transport":"unix","np":2,"size":1,"median":5.9,"unit":"us","runs":5}
//
// Run it under the launcher, for example
//
//	ftmpirun -n 2 --transport tcp ftmpi-bench -bench latency
//
// The medians over -runs repetitions are reported because the machines are
// noisy; bench/compare.sh runs the same measurements with MPICH and Open MPI
// and prints the ratios.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

type result struct {
	Name      string  `json:"name"`
	Impl      string  `json:"impl"`
	Transport string  `json:"transport"`
	NP        int     `json:"np"`
	Size      int     `json:"size"`
	Median    float64 `json:"median"`
	Unit      string  `json:"unit"`
	Runs      int     `json:"runs"`
}

type bench struct {
	c      *mpi.Comm
	runs   int
	min    int
	max    int
	iters  int
	window int
	out    *json.Encoder
	trans  string
	bytes  int64 // bw, bibw: bytes per repetition (-bytes; 0: from iters)
}

func main() {
	which := flag.String("bench", "latency", "benchmark: latency, bw, bibw, barrier, coll, collgrowth, ftgrowth, ft (agree/shrink failure-free), detect (one rank killed; run with --on-failure continue), replace (one rank killed and replaced: shrink, spawn, merge, split; --on-failure continue), replace-call (one rank killed, kill -> restored communicator by Comm.Replace: from a spare with ftmpirun --spares 1, else spawned; --on-failure continue), rtcoll (collectives over recognised failures vs the alive processes only; --on-failure continue), value (SendValue/RecvValue of a []float64 against gob by hand + Send/Recv), dtype (strided vector and struct messages at 1 KiB and 1 MiB), rma (one-sided Put/Get/Accumulate latency and Put bandwidth with fence and lock, 8 B to 1 MiB), hostloss (the last -victims ranks' host is killed from outside after rank 0 prints \"xhost: armed\": when the survivors learn, and with -replace when the communicator is restored; --on-failure continue)")
	runs := flag.Int("runs", 5, "repetitions; the median is reported")
	minSize := flag.Int("min", 1, "smallest message size in bytes")
	maxSize := flag.Int("max", 0, "largest message size in bytes (default 4 MiB for latency, 16 MiB for bandwidth)")
	iters := flag.Int("iters", 1000, "iterations per repetition for small messages (scaled down for large ones)")
	budget := flag.Duration("budget", 30*time.Millisecond, "coll, collgrowth: target time per repetition")
	inproc := flag.Bool("inproc", false, "collgrowth: run ranks in process (mpi.Run); required")
	maxP := flag.Int("maxp", 1024, "collgrowth: largest process count")
	ioDir := flag.String("dir", os.TempDir(), "io: directory of the benchmark file (shared by the ranks)")
	rtKill := flag.Int("kill", 1, "rtcoll: how many ranks kill themselves before Validate (run with --on-failure continue)")
	victims := flag.Int("victims", 4, "hostloss: how many of the last ranks are on the host that is killed")
	replace := flag.Bool("replace", false, "hostloss: replace the lost ranks (revoke, shrink, spawn, merge, split back)")
	bwBytes := flag.Int64("bytes", 0, "bw, bibw: move about this many bytes per repetition and direction, as bench/c/bw.c (1 to 100 windows; 0: windows scaled from -iters)")
	collOnly := flag.String("ops", "", "coll: only these collectives, comma-separated (barrier, bcast, reduce, allreduce, allgather, alltoall, gather, allgatherv; default all)")
	afterBarrier := flag.Bool("after-barrier", false, "coll: also time every operation but barrier right after a Barrier (a Barrier, then the call, in a loop; the call's time alone), reported as NAME_after_barrier")
	cpuProfile := flag.String("cpuprofile", "", "write each rank's CPU profile to FILE.RANK (go tool pprof); samples carry a \"phase\" label (the operation being timed: go tool pprof -tagfocus phase=NAME); FTMPI_BENCH_PROFILE_HZ sets the sampling rate (default 100, too coarse for an operation of a few milliseconds)")
	flag.Parse()

	if *which == "ftgrowth" {
		if !*inproc {
			fmt.Fprintln(os.Stderr, "ftmpi-bench: ftgrowth runs in process: pass -inproc (and do not start it under ftmpirun)")
			os.Exit(2)
		}
		if err := ftGrowth(max(1, *runs), *maxP); err != nil {
			fmt.Fprintln(os.Stderr, "ftmpi-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *which == "collgrowth" {
		if !*inproc {
			fmt.Fprintln(os.Stderr, "ftmpi-bench: collgrowth runs in process: pass -inproc (and do not start it under ftmpirun)")
			os.Exit(2)
		}
		if err := collGrowth(max(1, *runs), *maxP, *budget); err != nil {
			fmt.Fprintln(os.Stderr, "ftmpi-bench:", err)
			os.Exit(1)
		}
		return
	}

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ftmpi-bench:", err)
		os.Exit(1)
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile, w.Rank())
		if err != nil {
			fmt.Fprintln(os.Stderr, "ftmpi-bench:", err)
			os.Exit(2)
		}
		defer stop()
	}
	b := &bench{c: w.CommWorld(), runs: max(1, *runs), min: max(1, *minSize), max: *maxSize,
		iters: max(1, *iters), window: 64, out: json.NewEncoder(os.Stdout), trans: w.Transport(), bytes: *bwBytes}
	if nc := w.Replacement(); nc != nil { // a process -bench replace-call took (a spare, or spawned)
		b.replaceCallReport(nc, "", []float64{0, 0})
		w.Finalize()
		return
	}
	if parent := w.Parent(); parent != nil { // a process spawned by -bench replace or hostloss
		if *which == "hostloss" {
			b.hostLossChild(parent)
		} else {
			b.replaceChild(parent)
		}
		w.Finalize()
		return
	}
	switch *which {
	case "latency":
		if b.max == 0 {
			b.max = 4 << 20
		}
		b.need2()
		b.latency()
	case "bw", "bibw":
		if b.max == 0 {
			b.max = 16 << 20
		}
		b.need2()
		b.bandwidth(*which == "bibw")
	case "barrier":
		b.barrier()
	case "ft":
		b.ftFailureFree()
	case "detect":
		b.detect()
	case "replace":
		b.replace()
	case "replace-call":
		b.replaceCall(w)
	case "hostloss":
		b.hostLoss(*victims, *replace)
	case "rtcoll":
		b.rtColl(*budget, *rtKill)
	case "dtype":
		b.need2()
		b.dtype()
	case "rma":
		b.need2()
		b.rma()
	case "io":
		b.io(*ioDir)
	case "coll":
		if b.max == 0 {
			b.max = 1 << 20
		}
		b.coll(*budget, *collOnly, *afterBarrier)
	case "value":
		if b.max == 0 {
			b.max = 1 << 20
		}
		b.need2()
		b.values()
	default:
		if w.Rank() == 0 {
			fmt.Fprintf(os.Stderr, "ftmpi-bench: unknown benchmark %q (want latency, bw, bibw, barrier, coll or collgrowth)\n", *which)
		}
		w.Finalize()
		os.Exit(2)
	}
	w.Finalize()
}

func (b *bench) need2() {
	if b.c.Size() < 2 {
		fmt.Fprintln(os.Stderr, "ftmpi-bench: this benchmark needs at least 2 ranks (run it under ftmpirun -n 2)")
		os.Exit(2)
	}
}

func (b *bench) emit(name string, size int, samples []float64, unit string) {
	if b.c.Rank() != 0 {
		return
	}
	slices.Sort(samples)
	b.out.Encode(result{Name: name, Impl: "ftmpi", Transport: b.trans, NP: b.c.Size(), Size: size,
		Median: samples[len(samples)/2], Unit: unit, Runs: len(samples)})
}

func sizes(lo, hi int) []int {
	var s []int
	for n := lo; n <= hi; n *= 2 {
		s = append(s, n)
	}
	return s
}

func scaled(iters, size int) int {
	switch {
	case size >= 1<<20:
		return max(10, iters/50)
	case size >= 64<<10:
		return max(20, iters/10)
	}
	return iters
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "ftmpi-bench:", err)
		os.Exit(1)
	}
}

// latency is OSU latency: ping-pong between ranks 0 and 1, half round trip.
func (b *bench) latency() {
	c := b.c
	buf := make([]byte, b.max)
	for _, size := range sizes(b.min, b.max) {
		n := scaled(b.iters, size)
		warm := max(10, n/10)
		var samples []float64
		for run := 0; run < b.runs; run++ {
			check(c.Barrier())
			var start time.Time
			for i := 0; i < warm+n; i++ {
				if i == warm {
					start = time.Now()
				}
				switch c.Rank() {
				case 0:
					check(mpi.Send(c, buf[:size], 1, 1))
					_, err := mpi.Recv(c, buf[:size], 1, 1)
					check(err)
				case 1:
					_, err := mpi.Recv(c, buf[:size], 0, 1)
					check(err)
					check(mpi.Send(c, buf[:size], 0, 1))
				}
			}
			samples = append(samples, float64(time.Since(start).Nanoseconds())/1e3/float64(2*n))
		}
		b.emit("latency", size, samples, "us")
	}
}

// bandwidth is OSU bw (and bibw): windows of nonblocking sends, then an
// acknowledgement.
func (b *bench) bandwidth(bidir bool) {
	c := b.c
	sbuf := make([]byte, b.max)
	rbuf := make([]byte, b.max)
	ack := make([]byte, 1)
	reqs := make([]*mpi.Request, 0, 2*b.window)
	name := "bw"
	if bidir {
		name = "bibw"
	}
	for _, size := range sizes(b.min, b.max) {
		n := max(5, scaled(b.iters/10, size))
		warm := max(2, n/10)
		if b.bytes > 0 {
			n, warm = bwWindows(b.bytes, b.window, size)
		}
		var samples []float64
		for run := 0; run < b.runs; run++ {
			check(c.Barrier())
			var start time.Time
			for i := 0; i < warm+n; i++ {
				if i == warm {
					start = time.Now()
				}
				reqs = reqs[:0]
				switch c.Rank() {
				case 0:
					if bidir {
						for j := 0; j < b.window; j++ {
							r, err := mpi.Irecv(c, rbuf[:size], 1, 2)
							check(err)
							reqs = append(reqs, r)
						}
					}
					for j := 0; j < b.window; j++ {
						r, err := mpi.Isend(c, sbuf[:size], 1, 2)
						check(err)
						reqs = append(reqs, r)
					}
					_, err := mpi.Waitall(reqs)
					check(err)
					_, err = mpi.Recv(c, ack, 1, 3)
					check(err)
				case 1:
					for j := 0; j < b.window; j++ {
						r, err := mpi.Irecv(c, rbuf[:size], 0, 2)
						check(err)
						reqs = append(reqs, r)
					}
					if bidir {
						for j := 0; j < b.window; j++ {
							r, err := mpi.Isend(c, sbuf[:size], 0, 2)
							check(err)
							reqs = append(reqs, r)
						}
					}
					_, err := mpi.Waitall(reqs)
					check(err)
					check(mpi.Send(c, ack, 0, 3))
				}
			}
			el := time.Since(start).Seconds()
			bytes := float64(size) * float64(b.window) * float64(n)
			if bidir {
				bytes *= 2
			}
			samples = append(samples, bytes/el/1e6)
		}
		b.emit(name, size, samples, "MB/s")
	}
}

// bwWindows is bench/c/bw.c's rule: enough windows to move about total
// bytes per repetition, 1 to 100, a tenth of them (at least one) more as
// warm-up, none from 4 MiB (a window of 4 MiB messages warms up alone).
func bwWindows(total int64, window, size int) (n, warm int) {
	n = int(min(100, max(1, total/(int64(window)*int64(size)))))
	warm = max(1, n/10)
	if size >= 4<<20 {
		warm = 0
	}
	return n, warm
}

// barrier times MPI_Barrier over all ranks.
func (b *bench) barrier() {
	c := b.c
	n := b.iters
	var samples []float64
	for run := 0; run < b.runs; run++ {
		check(c.Barrier())
		start := time.Now()
		for i := 0; i < n; i++ {
			check(c.Barrier())
		}
		samples = append(samples, float64(time.Since(start).Nanoseconds())/1e3/float64(n))
	}
	b.emit("barrier", 0, samples, "us")
}

// profiling is set while a CPU profile is taken: phase then labels samples.
var profiling bool

// startCPUProfile profiles this rank's CPU time into path.RANK until the
// returned function is called, at FTMPI_BENCH_PROFILE_HZ samples a second
// if set (the runtime then warns that the rate was set before the
// profile: the profile's header says 100 Hz, so read its shares, not its
// seconds).
func startCPUProfile(path string, rank int) (stop func(), err error) {
	f, err := os.Create(fmt.Sprintf("%s.%d", path, rank))
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if v := os.Getenv("FTMPI_BENCH_PROFILE_HZ"); v != "" {
		hz, err := strconv.Atoi(v)
		if err != nil || hz <= 0 {
			f.Close()
			return nil, fmt.Errorf("FTMPI_BENCH_PROFILE_HZ=%q: want a positive rate", v)
		}
		runtime.SetCPUProfileRate(hz)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	profiling = true
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// phase runs f with the profile label phase=name on this goroutine (and
// the goroutines it starts) when a CPU profile is taken.
func phase(name string, f func()) {
	if !profiling {
		f()
		return
	}
	pprof.Do(context.Background(), pprof.Labels("phase", name), func(context.Context) { f() })
}
