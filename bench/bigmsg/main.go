// Command bigmsg times single large messages (one Send and one Recv of
// each size, 1 GiB and more) between two ranks, over sockets (run under
// ftmpirun -n 2) or in process (-inproc, mpi.Run). Rank 0 prints one
// result line per size in the format of bench/README.md, the median over
// -runs messages of the time from a barrier to the receive's completion:
//
//	{"name":"bigmsg","impl":"ftmpi","transport":"unix","np":2,"size":1073741824,"median":0.23,"unit":"s","runs":3}
//
// With -fresh, every message is received into pages never touched before
// (mmap'd per message and unmapped after), as in a program that allocates
// its receive buffer: then the time includes the kernel's zeroing of the
// fresh pages, which dominates on virtual machines; the name is then
// "bigmsg_fresh". Each run's time goes to stderr.
//
//	ftmpirun -n 2 bigmsg -sizes 1024,2048,4096 -runs 3
//	bigmsg -inproc -sizes 1024,2048,4096 -runs 3
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

type result struct {
	Name      string  `json:"name"`
	Impl      string  `json:"impl"`
	Transport string  `json:"transport"`
	NP        int     `json:"np"`
	Size      int64   `json:"size"`
	Median    float64 `json:"median"`
	Unit      string  `json:"unit"`
	Runs      int     `json:"runs"`
}

func main() {
	inproc := flag.Bool("inproc", false, "run both ranks in this process (mpi.Run)")
	sizes := flag.String("sizes", "1024,2048,4096", "comma-separated message sizes in MiB")
	runs := flag.Int("runs", 3, "messages per size; the median is reported")
	fresh := flag.Bool("fresh", false, "receive every message into untouched pages")
	flag.Parse()
	var mib []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bigmsg: bad size %q in -sizes (want MiB > 0)\n", s)
			os.Exit(2)
		}
		mib = append(mib, n)
	}
	if *runs < 1 {
		fmt.Fprintf(os.Stderr, "bigmsg: -runs %d (want at least 1)\n", *runs)
		os.Exit(2)
	}
	body := func(w *mpi.World) error { return run(w, mib, *runs, *fresh) }
	var err error
	if *inproc {
		err = mpi.Run(2, body)
	} else {
		var w *mpi.World
		if w, err = mpi.Init(); err == nil {
			err = body(w)
			if ferr := w.Finalize(); err == nil {
				err = ferr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigmsg:", err)
		os.Exit(1)
	}
}

func run(w *mpi.World, mib []int, runs int, fresh bool) error {
	c := w.CommWorld()
	if c.Size() != 2 {
		return fmt.Errorf("needs 2 ranks, has %d", c.Size())
	}
	recvFresh := fresh && c.Rank() == 0
	var buf []byte
	if !recvFresh {
		buf = make([]byte, slices.Max(mib)<<20)
		for k := range buf { // every page touched before timing
			buf[k] = byte(k)
		}
	}
	name := "bigmsg"
	if fresh {
		name = "bigmsg_fresh"
	}
	enc := json.NewEncoder(os.Stdout)
	for _, m := range mib {
		n := m << 20
		var secs []float64
		for i := 0; i < runs; i++ {
			b := buf[:min(n, len(buf))]
			if recvFresh {
				fb, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
				if err != nil {
					return fmt.Errorf("mmap of %d MiB: %w", m, err)
				}
				b = fb
			}
			if err := c.Barrier(); err != nil {
				return err
			}
			start := time.Now()
			var err error
			if c.Rank() == 1 {
				err = mpi.Send(c, b, 0, 0)
			} else {
				_, err = mpi.Recv(c, b, 1, 0)
			}
			d := time.Since(start).Seconds() // at rank 0: the message's time
			if recvFresh {
				syscall.Munmap(b)
			}
			if err != nil {
				return err
			}
			secs = append(secs, d)
			if c.Rank() == 0 {
				fmt.Fprintf(os.Stderr, "%s %s %d MiB run %d: %.3f s\n", name, w.Transport(), m, i, d)
			}
		}
		if c.Rank() == 0 {
			slices.Sort(secs)
			enc.Encode(result{Name: name, Impl: "ftmpi", Transport: w.Transport(), NP: 2, Size: int64(n),
				Median: secs[len(secs)/2], Unit: "s", Runs: runs})
		}
	}
	return nil
}
