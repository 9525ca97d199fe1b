// Command cutcheck kills a sender inside a message: rank 1 sends messages
// to rank 0 in a loop and SIGKILLs itself once it has written a given
// number of bytes (counted by the kernel, /proc/self/io wchar), so the cut
// lands inside a message's bytes on the wire; rank 0 receives in a loop and
// must see its Recv return ErrProcFailed, never hang. Rank 0 prints
// "result: cut procfailed=<bool> intact=<bool> received=<n>".
//
//	cutcheck large OFFSET    64 MiB messages (rendezvous)
//	cutcheck medium OFFSET   48 KiB messages (eager)
//	cutcheck window OFFSET   1 MiB messages (rendezvous, whole frames) in
//	                         windows of 8 Isends and 8 Irecvs (the TCP
//	                         transport's held wake-ups: receives completed
//	                         while the next payload came in, sends while
//	                         the next was written)
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: cutcheck large|medium|window OFFSET")
		os.Exit(2)
	}
	size := map[string]int{"large": 64 << 20, "medium": 48 << 10, "window": 1 << 20}[os.Args[1]]
	win := 1
	if os.Args[1] == "window" {
		win = 8
	}
	offset, err := strconv.ParseInt(os.Args[2], 10, 64)
	if size == 0 || err != nil || offset <= 0 {
		fmt.Fprintf(os.Stderr, "cutcheck: bad arguments %q\n", os.Args[1:])
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cutcheck:", err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	switch c.Rank() {
	case 0:
		receive(c, size, win)
	case 1:
		send(c, size, win, offset)
	}
	w.Finalize()
}

// fill writes message i's pattern into b.
func fill(b []byte, i int) {
	for k := range b {
		b[k] = byte(i + k*31)
	}
}

// receive takes messages in windows of win receives (posted together,
// waited for in order) until one fails.
func receive(c *mpi.Comm, size, win int) {
	bufs, want := make([][]byte, win), make([]byte, size)
	for k := range bufs {
		bufs[k] = make([]byte, size)
	}
	reqs := make([]*mpi.Request, win)
	intact := true
	for i := 0; ; i += win {
		for k := range reqs {
			var err error
			if reqs[k], err = mpi.Irecv(c, bufs[k], 1, 0); err != nil {
				fmt.Fprintf(os.Stderr, "rank 0: post receive %d: %v\n", i+k, err)
				fmt.Printf("result: cut procfailed=%v intact=%v received=%d\n", errors.Is(err, mpi.ErrProcFailed), intact, i)
				return
			}
		}
		for k, r := range reqs {
			if _, err := r.Wait(); err != nil {
				fmt.Fprintf(os.Stderr, "rank 0: receive %d: %v\n", i+k, err)
				fmt.Printf("result: cut procfailed=%v intact=%v received=%d\n", errors.Is(err, mpi.ErrProcFailed), intact, i+k)
				return
			}
			fill(want, i+k)
			intact = intact && bytes.Equal(bufs[k], want)
		}
	}
}

// wchar is the number of bytes this process handed to write system calls.
func wchar() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		panic(err)
	}
	_, rest, _ := bytes.Cut(b, []byte("wchar: "))
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, err := strconv.ParseInt(string(line), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("cannot read wchar from /proc/self/io: %v", err))
	}
	return n
}

func send(c *mpi.Comm, size, win int, offset int64) {
	start := wchar()
	go func() {
		// The kill is tied to the bytes written, not to a time: it lands
		// while a write of a message is in flight.
		for wchar()-start < offset {
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}()
	bufs := make([][]byte, win)
	for k := range bufs {
		bufs[k] = make([]byte, size)
	}
	reqs := make([]*mpi.Request, win)
	for i := 0; ; i += win {
		for k := range reqs {
			fill(bufs[k], i+k)
			var err error
			if reqs[k], err = mpi.Isend(c, bufs[k], 0, 0); err != nil {
				fmt.Fprintf(os.Stderr, "rank 1: send %d: %v\n", i+k, err)
				select {} // the kill comes
			}
		}
		for k, r := range reqs {
			if _, err := r.Wait(); err != nil {
				fmt.Fprintf(os.Stderr, "rank 1: send %d: %v\n", i+k, err)
				select {} // the kill comes
			}
		}
	}
}
