package mpi_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// syncBuf is a bytes.Buffer safe for the reporter's write and the test's
// read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runHung runs fn as n ranks with a short hang timeout and returns the
// report; the job must end with the hang's exit code (the hung calls then
// fail: fn's ranks return nil whatever they got).
func runHung(t *testing.T, n int, fn func(w *mpi.World, c *mpi.Comm)) string {
	t.Helper()
	var out syncBuf
	cfg := mpi.DefaultConfig()
	cfg.HangTimeout = 300 * time.Millisecond
	cfg.HangOutput = &out
	done := make(chan error, 1)
	go func() {
		done <- mpi.RunConfig(n, cfg, func(w *mpi.World) error {
			c := w.CommWorld()
			c.SetErrhandler(mpi.ErrorsReturn)
			fn(w, c)
			return nil
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("no hang report within 60 s; output so far:\n%s", out.String())
	}
	var ae *mpi.AbortError
	if !errors.As(err, &ae) || ae.Code != mpi.HangExitCode {
		t.Fatalf("Run = %v, want an abort with code %d; report:\n%s", err, mpi.HangExitCode, out.String())
	}
	r := out.String()
	if n := strings.Count(r, "ftmpi: hang report"); n != 1 {
		t.Fatalf("%d reports, want 1:\n%s", n, r)
	}
	return r
}

func wantLines(t *testing.T, report string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(report, w) {
			t.Errorf("report lacks %q:\n%s", w, report)
		}
	}
}

// Rank 0 reduces to itself while rank 1 broadcasts from rank 0: each
// waits for the other, with no message between them that the signature
// check could see (mpi/coll_sig.go). The report names both calls.
func TestHangReportMismatchedCollectives(t *testing.T) {
	r := runHung(t, 2, func(w *mpi.World, c *mpi.Comm) {
		mpi.SetCrowdedForTest(w, -1) // the point-to-point algorithms (the shared-memory set-up would see the mismatch)
		buf := []float64{1, 2}
		if c.Rank() == 0 {
			mpi.Reduce(c, buf, make([]float64, 2), mpi.Sum, 0)
		} else {
			mpi.Bcast(c, buf, 0)
		}
	})
	wantLines(t, r, "rank 0 in MPI_Reduce (root 0, 2 x float64) on MPI_COMM_WORLD #1",
		"rank 1 in MPI_Bcast (root 0, 2 x float64) on MPI_COMM_WORLD #1",
		"mismatched collectives on MPI_COMM_WORLD: rank 0 in MPI_Reduce (root 0, 2 x float64) #1; rank 1 in MPI_Bcast (root 0, 2 x float64) #1")
}

// Ranks 0 and 1 each receive from the other; rank 2 waits in a barrier.
func TestHangReportDeadlock(t *testing.T) {
	r := runHung(t, 3, func(w *mpi.World, c *mpi.Comm) {
		buf := make([]int32, 1)
		switch c.Rank() {
		case 0:
			mpi.Recv(c, buf, 1, 5)
		case 1:
			mpi.Recv(c, buf, 0, 5)
		default:
			c.Barrier()
		}
	})
	wantLines(t, r, "rank 0 in MPI_Recv from 1 tag 5 on MPI_COMM_WORLD", "rank 1 in MPI_Recv from 0 tag 5 on MPI_COMM_WORLD",
		"deadlock: 0 waits for 1, 1 waits for 0, both in MPI_Recv tag 5 on MPI_COMM_WORLD",
		"rank 2 in MPI_Barrier on MPI_COMM_WORLD #1",
		"waits for rank 0 (in MPI_Recv from 1 tag 5 on MPI_COMM_WORLD), rank 1 (in MPI_Recv from 0 tag 5 on MPI_COMM_WORLD)")
}

// Rank 2 dies; rank 0 repairs (Shrink) while ranks 1 and 3 wait for a
// message from rank 0 on the old communicator, which nobody revoked.
func TestHangReportUnrevokedFailure(t *testing.T) {
	r := runHung(t, 4, func(w *mpi.World, c *mpi.Comm) {
		// Rank 2 dies once every other rank told it it is past the
		// barrier (its failure must not fail their barrier).
		buf := make([]int32, 1)
		if err := c.Barrier(); err != nil {
			return
		}
		if c.Rank() == 2 {
			for i := 0; i < c.Size()-1; i++ {
				if _, err := mpi.Recv(c, buf, mpi.AnySource, 1); err != nil {
					return
				}
			}
		} else if err := mpi.Send(c, buf, 2, 1); err != nil {
			return
		}
		switch c.Rank() {
		case 2:
			w.Kill()
		case 0:
			c.Shrink()
		default:
			mpi.Recv(c, make([]int32, 1), 0, 7)
		}
	})
	wantLines(t, r, "rank 2 failed", "rank 0 in MPI_Comm_shrink on MPI_COMM_WORLD",
		"2 of 4 ranks (1,3) in MPI_Recv from 0 tag 7 on MPI_COMM_WORLD",
		"MPI_COMM_WORLD lost rank 2 (nobody revoked it",
		"rank 0 is in MPI_Comm_shrink, ranks 1,3 wait in MPI_Recv on MPI_COMM_WORLD: revoke MPI_COMM_WORLD")
}

// With HangAction report the job is not ended: the report is printed and
// the ranks keep waiting (here until a rank that was computing arrives).
func TestHangReportOnlyReportsWhenAllBlocked(t *testing.T) {
	var out syncBuf
	cfg := mpi.DefaultConfig()
	cfg.HangTimeout = 100 * time.Millisecond
	cfg.HangAction = mpi.HangReport
	cfg.HangOutput = &out
	err := mpi.RunConfig(2, cfg, func(w *mpi.World) error {
		c := w.CommWorld()
		buf := make([]int32, 1)
		if c.Rank() == 0 {
			_, err := mpi.Recv(c, buf, 1, 0)
			return err
		}
		// Rank 1 is "computing" (not in MPI) until a report would have
		// been due several times over: none must come, rank 1 is not
		// blocked.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
		}
		return mpi.Send(c, buf, 0, 0)
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.String(); r != "" {
		t.Fatalf("a report while a rank was computing:\n%s", r)
	}
}
