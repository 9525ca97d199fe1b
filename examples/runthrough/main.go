// Command runthrough runs one of examples 17.5 to 17.8 of seed 003 (run-through
// stabilization, the MPI Forum draft chapter 17 of 2011; see package rtex)
// and prints what the seed says it prints, then a result line:
//
//	go run ./cmd/ftmpirun -n 5 --on-failure continue ./examples/runthrough -example exscan -kill exscan1=2,exscan2=0
//	go run ./cmd/ftmpirun -n 4 --on-failure continue --inject kill:rank=2,at=400ms ./examples/runthrough -example bcast -delay 20ms
//
// -kill names the example's injection points and the rank that kills
// itself (SIGKILL) there.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ftmpi/ftmpi/examples/runthrough/rtex"
	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	example := flag.String("example", "exscan", "barrier (17.6), bcast (17.7), exscan (17.8) or anysource (17.5)")
	kill := flag.String("kill", "", "point=rank,... : the rank kills itself at the point")
	delay := flag.Duration("delay", 0, "pause between steps (so that a timed --inject lands mid-run)")
	count := flag.Int("n", 10, "bcast: number of recovery blocks; anysource: messages per client")
	progress := flag.Bool("progress", false, "rank 0 prints \"runthrough: reached POINT.\" at every injection point (for tests: ftmpirun --inject 'kill:rank=2,on=reached bcast:20:0.')")
	flag.Parse()

	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	e := &rtex.Env{W: w, C: c, Delay: *delay, KillAt: map[string]int{},
		Printf: func(f string, a ...any) { fmt.Printf("[%d] %s\n", c.Rank(), fmt.Sprintf(f, a...)) }}
	if *progress && c.Rank() == 0 {
		e.Reached = func(point string) { fmt.Printf("runthrough: reached %s.\n", point) }
	}
	if *kill != "" {
		for _, kv := range strings.Split(*kill, ",") {
			p, r, ok := strings.Cut(kv, "=")
			n, err := strconv.Atoi(r)
			if !ok || err != nil {
				fmt.Fprintf(os.Stderr, "runthrough: bad -kill %q\n", kv)
				os.Exit(2)
			}
			e.KillAt[p] = n
		}
	}
	start := time.Now()
	var result string
	switch *example {
	case "barrier":
		err = rtex.Barrier(e)
		result = "barrier"
	case "bcast":
		var last int
		last, err = rtex.Bcast(e, *count)
		result = fmt.Sprintf("bcast last %d", last)
	case "exscan":
		err = rtex.Exscan(e)
		result = "exscan"
	case "anysource":
		var got, re int
		var failed []int
		got, re, failed, err = rtex.AnySourceServer(e, *count)
		if c.Rank() == 0 {
			result = fmt.Sprintf("anysource received %d re-enabled %d failed %v", got, re, failed)
		}
	default:
		fmt.Fprintf(os.Stderr, "runthrough: unknown example %q\n", *example)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "runthrough: rank %d: %v\n", c.Rank(), err)
		os.Exit(1)
	}
	// The lowest surviving rank prints the result line (anysource: the
	// server, rank 0). Validate gives every survivor the same failed group.
	printer := 0
	if *example != "anysource" {
		g, err := c.Validate()
		if err != nil {
			fmt.Fprintf(os.Stderr, "runthrough: rank %d: final Validate: %v\n", c.Rank(), err)
			os.Exit(1)
		}
		for slices.Contains(g.WorldRanks(), printer) {
			printer++
		}
	}
	if c.Rank() == printer {
		fmt.Printf("result: %s\n", result)
	}
	_ = start
	w.Finalize()
}
