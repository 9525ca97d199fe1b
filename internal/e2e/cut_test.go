package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// A sender SIGKILLed inside a message (testdata/cutcheck: it kills itself
// once it has written a given number of bytes, so the cut lands inside the
// bytes of a message on the wire): the receiver's Recv returns
// ErrProcFailed, never hangs. Before the transport contract was made total,
// the receive cut off inside a 64 MiB rendezvous hung in most runs.
//
// FTMPI_CUT_RUNS sets the number of jobs per message size (default 5);
// bench/cut.sh runs the same jobs 200 times and counts hangs.

// cutOffset is the byte count after which the sender of run i kills
// itself: spread over the first two messages of each size.
func cutOffset(mode string, i int) int64 {
	if mode == "large" {
		return 4<<20 + int64(i)*9_876_543%(120<<20)
	}
	if mode == "window" {
		return 100_000 + int64(i)*777_777%(20<<20)
	}
	return 100_000 + int64(i)*777_777%(8<<20)
}

func TestSenderKilledInsideMessage(t *testing.T) {
	runs := 5
	if s := os.Getenv("FTMPI_CUT_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("FTMPI_CUT_RUNS=%q: want a positive number of runs", s)
		}
		runs = n
	}
	cutcheck := buildOnce(t, "cutcheck")
	// window: windows of 1 MiB rendezvous messages over TCP, whose
	// transport holds the wake-ups of requests completed while the next
	// payload moves (sock's writeLoop and reader).
	for _, mode := range []string{"large", "medium", "window"} {
		tr := "unix"
		if mode == "window" {
			tr = "tcp"
		}
		t.Run(mode, func(t *testing.T) {
			for i := range runs {
				off := cutOffset(mode, i)
				// The kill counts the bytes written to sockets: the socket
				// transport (internal/transport/shm has its own cut tests).
				r := jobtest.Run(t, 90*time.Second, nil, bin["ftmpirun"], "-n", "2", "--on-failure", "continue", "--transport", tr,
					"--timeout", "60s", cutcheck, mode, strconv.FormatInt(off, 10))
				line := resultLine(t, r)
				if !strings.HasPrefix(line, "result: cut procfailed=true intact=true ") || r.Code != 0 {
					t.Fatalf("run %d (kill after %d bytes): exit %d, %q\nstderr:\n%s", i, off, r.Code, line, r.Stderr)
				}
			}
		})
	}
}
