// Command bigmsg times single large messages (one Send and one Recv of
// each size) between two ranks, over sockets (run under ftmpirun -n 2) or
// in process (-inproc, mpi.Run), and prints one JSON line per size and run
// from rank 0: {"name":"bigmsg","transport":...,"size":...,"seconds":...}.
//
//	ftmpirun -n 2 bigmsg -sizes 1024,2048,4096 -runs 3
//	bigmsg -inproc -sizes 1024,2048,4096 -runs 3
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

type result struct {
	Name      string  `json:"name"`
	Transport string  `json:"transport"`
	Size      int64   `json:"size"`
	Run       int     `json:"run"`
	Seconds   float64 `json:"seconds"`
	GBps      float64 `json:"gbps"`
}

func main() {
	inproc := flag.Bool("inproc", false, "run both ranks in this process (mpi.Run)")
	sizes := flag.String("sizes", "1024", "comma-separated message sizes in MiB")
	runs := flag.Int("runs", 3, "messages per size")
	fresh := flag.Bool("fresh", false, "a new (untouched) receive buffer for every message, as a program that allocates it would have")
	flag.Parse()
	var mib []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "bigmsg: bad size %q in -sizes\n", s)
			os.Exit(2)
		}
		mib = append(mib, n)
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
	maxMiB := 0
	for _, m := range mib {
		maxMiB = max(maxMiB, m)
	}
	var buf []byte
	if !fresh || c.Rank() != 0 {
		buf = make([]byte, maxMiB<<20)
		for k := range buf { // touch every page before timing
			buf[k] = byte(k)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	for _, m := range mib {
		for i := 0; i < runs; i++ {
			var b []byte
			if !fresh || c.Rank() != 0 {
				b = buf[:m<<20]
			} else {
				// fresh pages from the kernel, returned after the message
				fb, err := syscall.Mmap(-1, 0, m<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
				if err != nil {
					return fmt.Errorf("mmap: %w", err)
				}
				defer syscall.Munmap(fb)
				b = fb
			}
			if err := c.Barrier(); err != nil {
				return err
			}
			start := time.Now()
			if c.Rank() == 1 {
				if err := mpi.Send(c, b, 0, 0); err != nil {
					return err
				}
			} else if _, err := mpi.Recv(c, b, 1, 0); err != nil {
				return err
			}
			// the receive completes last: rank 0's time is the message's
			d := time.Since(start).Seconds()
			if c.Rank() == 0 {
				enc.Encode(result{Name: "bigmsg", Transport: w.Transport(), Size: int64(len(b)), Run: i, Seconds: d, GBps: float64(len(b)) / d / 1e9})
			}
		}
	}
	return nil
}
