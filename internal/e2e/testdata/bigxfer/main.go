// Command bigxfer sends one large message from rank 1 to rank 0 (a single
// Send and Recv of SIZE MiB plus EXTRA bytes) and checks its contents.
// Rank 0 prints "result: bigxfer bytes=<n> intact=<bool>".
//
//	bigxfer SIZE_MIB [EXTRA_BYTES]
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/ftmpi/ftmpi/mpi"
)

// period of the pattern: a prime, so that it divides no chunk size and a
// piece placed at the wrong offset shows.
const period = 251

// chunk is the most fill copies at once: a multiple of period.
const chunk = period << 12

// fill writes the pattern into b by copies of what is written already (a
// byte-by-byte loop costs seconds per GiB), each of at most chunk bytes.
// One copy of a GiB is one memmove the runtime cannot preempt: with
// ftmpirun's GOMAXPROCS=1 it held the rank's only P for over 10 s at load
// 27 on 2 cores, the transport's goroutines did not run, and a peer's
// accept loop closed the rank's unfinished handshake (the job failed).
func fill(b []byte) {
	n := min(len(b), period)
	for k := range n {
		b[k] = byte(k*31 + 7)
	}
	for done := n; done < len(b); {
		done += copy(b[done:], b[:min(done, chunk)])
	}
}

// intact reports whether b holds the pattern.
func intact(b []byte) bool {
	ref := make([]byte, min(len(b), chunk))
	fill(ref)
	for off := 0; off < len(b); off += len(ref) {
		end := min(off+len(ref), len(b))
		if !bytes.Equal(b[off:end], ref[:end-off]) {
			return false
		}
	}
	return true
}

func main() {
	args := os.Args[1:]
	mib, extra := 0, 0
	var err error
	if len(args) >= 1 {
		mib, err = strconv.Atoi(args[0])
	}
	if len(args) == 2 && err == nil {
		extra, err = strconv.Atoi(args[1])
	}
	if len(args) < 1 || len(args) > 2 || err != nil || mib < 0 || extra < 0 || mib == 0 && extra == 0 {
		fmt.Fprintf(os.Stderr, "usage: bigxfer SIZE_MIB [EXTRA_BYTES] (got %q)\n", args)
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bigxfer:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	buf := make([]byte, mib<<20+extra)
	switch c.Rank() {
	case 0:
		st, err := mpi.Recv(c, buf, 1, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bigxfer: recv:", err)
			os.Exit(1)
		}
		fmt.Printf("result: bigxfer bytes=%d intact=%v\n", st.Count, intact(buf))
	case 1:
		fill(buf)
		if err := mpi.Send(c, buf, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "bigxfer: send:", err)
			os.Exit(1)
		}
	}
	if err := w.Finalize(); err != nil {
		fmt.Fprintln(os.Stderr, "bigxfer:", err)
		os.Exit(1)
	}
}
