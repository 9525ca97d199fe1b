// Command agreejob is the program of shmagree's tests over real processes
// (ftmpirun; the fast path is on unless FTMPI_AGREE_SHM=0). "results" runs
// agreements and shrinks without failures and checks their results; rank 0
// prints "result: ok fast=N fallback=M segmaps=S segfiles=F"
// (ftdrive.FastStats: the instances decided on the segment and those that
// fell back; S the agreement segments rank 0 maps and F files named for
// them in the job's directory or /dev/shm, before the first agreement:
// none, the segment is a memfd). "kill POINT VICTIM" runs two
// agreements, then an AgreeBits in which rank VICTIM stops at POINT of the
// fast path (printing "agreestall POINT" for the launcher's --inject kill
// trigger), or, for POINT "returned", returns from it, prints its decision
// and stops; every survivor prints "result: rank R bits=X procfailed=B",
// shrinks, agrees on the shrunk communicator and prints "shrunk: rank R
// size=S".
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ftmpi/ftmpi/internal/ft/shmagree"
	"github.com/ftmpi/ftmpi/internal/rte/ftdrive"
	"github.com/ftmpi/ftmpi/mpi"
)

func main() {
	var armed atomic.Bool
	point := ""
	victim := -1
	if len(os.Args) == 4 && os.Args[1] == "kill" {
		point = os.Args[2]
		victim, _ = strconv.Atoi(os.Args[3])
	} else if len(os.Args) != 2 || os.Args[1] != "results" {
		fmt.Fprintln(os.Stderr, "usage: agreejob results | kill POINT VICTIM")
		os.Exit(2)
	}
	w, err := mpi.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	c := w.CommWorld()
	c.SetErrhandler(mpi.ErrorsReturn)
	r, p := c.Rank(), c.Size()
	fail := func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "rank %d: %s\n", r, fmt.Sprintf(f, a...))
		os.Exit(1)
	}
	if victim < 0 {
		// CommWorld's segment is made when the job starts, before any
		// agreement (mpi's openWorldAgreeSeg).
		if err := c.Barrier(); err != nil {
			fail("barrier: %v", err)
		}
		maps, _ := os.ReadFile("/proc/self/maps")
		segs := strings.Count(string(maps), "memfd:ftmpi-agree")
		files, _ := filepath.Glob(filepath.Join(os.Getenv("FTMPI_TMPDIR"), "ftmpi-agree-*"))
		shm, _ := filepath.Glob("/dev/shm/*ftmpi-agree*")
		files = append(files, shm...)
		if err := results(c); err != nil {
			fail("%v", err)
		}
		if r == 0 {
			fmt.Printf("result: ok fast=%d fallback=%d segmaps=%d segfiles=%d\n", ftdrive.FastStats.Decided.Load(), ftdrive.FastStats.Fallbacks.Load(), segs, len(files))
		}
		w.Finalize()
		return
	}
	if r == victim {
		shmagree.Hook = func(seq uint64, phase int) {
			if armed.Load() && shmagree.PhaseNames[phase] == point {
				fmt.Printf("agreestall %s\n", point)
				select {} // until the launcher kills this process
			}
		}
	}
	for range 2 {
		if _, err := c.Agree(true); err != nil {
			fail("warm-up agree: %v", err)
		}
	}
	armed.Store(true)
	bits, err := c.AgreeBits(^uint64(1 << r)) // the result shows who contributed
	if r == victim {
		fmt.Printf("agreestall returned bits=%#x procfailed=%v\n", bits, errors.Is(err, mpi.ErrProcFailed))
		select {}
	}
	fmt.Printf("result: rank %d bits=%#x procfailed=%v\n", r, bits, errors.Is(err, mpi.ErrProcFailed))
	if err != nil && !errors.Is(err, mpi.ErrProcFailed) {
		fail("agree: %v", err)
	}
	c.Revoke()
	s, err := c.Shrink()
	if err != nil {
		fail("shrink: %v", err)
	}
	if _, err := s.Agree(true); err != nil {
		fail("agree on the shrunk communicator: %v", err)
	}
	fmt.Printf("shrunk: rank %d size=%d of %d\n", r, s.Size(), p)
	w.Finalize()
}

// results runs agreements on the world, a duplicate (freed, then another
// duplicate reusing its context id) and a shrunk world, checking results:
// 20 on the world, two on each of 3 duplicates, the shrink's one and two
// on the shrunk world.
func results(c *mpi.Comm) error {
	r, p := c.Rank(), c.Size()
	for i := range 20 {
		bits := ^uint64(0)
		if i%p == r {
			bits &^= 1 << i
		}
		got, err := c.AgreeBits(bits)
		if err != nil {
			return err
		}
		if want := ^uint64(0) &^ (1 << i); got != want {
			return fmt.Errorf("agreement %d: %#x, want %#x", i, got, want)
		}
	}
	for range 3 {
		d, err := c.Dup()
		if err != nil {
			return err
		}
		// Two agreements: a communicator's first takes the message
		// protocol (ftdrive.SegmentFrom), the second its segment.
		for range 2 {
			ok, err := d.Agree(r != p-1)
			if err != nil || ok {
				return fmt.Errorf("agree on a duplicate: %v, %v; want false", ok, err)
			}
		}
		if err := d.Free(); err != nil {
			return err
		}
	}
	s, err := c.Shrink()
	if err != nil {
		return err
	}
	if s.Size() != p {
		return fmt.Errorf("shrink without a failure: size %d, want %d", s.Size(), p)
	}
	for range 2 {
		if ok, err := s.Agree(true); err != nil || !ok {
			return fmt.Errorf("agree on the shrunk communicator: %v, %v", ok, err)
		}
	}
	return nil
}
