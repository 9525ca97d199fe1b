package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ftmpi/ftmpi/mpi"
)

// hostLossLine is what -bench hostloss prints (rank 0, one line): the
// instants, in Unix nanoseconds of the machine's clock, at which the
// first and the last survivor learned of the failure, and (-replace) at
// which the last rank held the restored communicator. The killer (an
// outside driver: bench/xhostcmp) knows when it killed; the differences
// are its to take (namespace hosts share one clock).
type hostLossLine struct {
	Name       string `json:"name"`
	Impl       string `json:"impl"`
	Transport  string `json:"transport"`
	NP         int    `json:"np"`
	Victims    int    `json:"victims"`
	FirstNS    int64  `json:"first_ns"`
	LastNS     int64  `json:"last_ns"`
	RestoredNS int64  `json:"restored_ns,omitempty"`
	Spawned    int    `json:"spawned,omitempty"`
}

// hostLossArmed is the line rank 0 prints when every rank waits for the
// victims: the driver kills the victims' host when it reads it.
const hostLossArmed = "xhost: armed"

// hostLossArrived is the tag of the message every rank but 0 sends rank 0
// once its receive is posted (the tags 98 and 99 are the receives').
const hostLossArrived = 97

// hostLoss waits for the loss of a whole host, killed from outside: the
// last `victims` ranks are the host's (ftmpirun --map-by slot with equal
// slots). Every survivor posts a receive from the first victim, every
// rank tells rank 0 it arrived (hostLossArm), rank 0 prints
// hostLossArmed and the survivors wait: their receive returns
// ErrProcFailed once they learn. Then revoke and shrink; with replace, the survivors spawn `victims` processes,
// merge and split back to the old ranks (kill → restored communicator).
// Run under ftmpirun --on-failure continue.
func (b *bench) hostLoss(victims int, replace bool) {
	c := b.c
	c.SetErrhandler(mpi.ErrorsReturn)
	n := c.Size()
	if victims < 1 || victims >= n {
		fmt.Fprintf(os.Stderr, "ftmpi-bench: hostloss: -victims %d: want 1..%d (the ranks of one host)\n", victims, n-1)
		os.Exit(2)
	}
	first := n - victims
	buf := []byte{0}
	r, err := hostLossArm(c, first, buf)
	if err != nil && (r == nil || c.Rank() == 0 || !failure(err)) {
		check(err)
	} // (else the loss came while this rank's "arrived" completed: its receive fails too)
	if c.Rank() == 0 {
		fmt.Println(hostLossArmed)
	}
	_, err = r.Wait()
	learned := time.Now().UnixNano()
	if err == nil {
		fmt.Fprintln(os.Stderr, "ftmpi-bench: hostloss: the receive from a rank of the lost host succeeded")
		os.Exit(1)
	}
	if c.Rank() >= first {
		// A victim that was not killed (the driver killed another host):
		// nothing to measure.
		fmt.Fprintln(os.Stderr, "ftmpi-bench: hostloss: a rank of the host to lose is still alive:", err)
		os.Exit(1)
	}
	check(c.Revoke())
	s, err := c.Shrink()
	check(err)
	times := make([]int64, s.Size())
	check(mpi.Gather(s, []int64{learned}, times, 0))
	line := hostLossLine{Name: "xhost-hostloss", Impl: "ftmpi", Transport: b.trans, NP: n, Victims: victims}
	if s.Rank() == 0 {
		line.FirstNS, line.LastNS = times[0], times[0]
		for _, t := range times {
			line.FirstNS, line.LastNS = min(line.FirstNS, t), max(line.LastNS, t)
		}
	}
	if replace {
		ic, err := s.Spawn("", os.Args[1:], victims, 0)
		check(err)
		m, err := ic.Merge(false)
		check(err)
		nc, err := m.Split(0, c.Rank())
		check(err)
		if nc.Size() != n {
			fmt.Fprintf(os.Stderr, "ftmpi-bench: hostloss: restored communicator of %d ranks, want %d\n", nc.Size(), n)
			os.Exit(1)
		}
		restored := hostLossRestored(nc)
		line.RestoredNS, line.Spawned = restored, victims
	}
	if s.Rank() == 0 {
		check(json.NewEncoder(os.Stdout).Encode(line))
	}
}

// hostLossArm posts this rank's receive (a survivor's from the first
// victim, a victim's from rank 0, never sent) and tells rank 0 it
// arrived; at rank 0 it returns once every other rank did, so that no
// rank is inside anything but that receive when the host is killed. (A
// barrier is not enough: rank 0 may leave it while a slow survivor is
// still inside, and that one's barrier fails then, with the loss or the
// revocation of a survivor that learned of it first.) r is nil when the
// receive could not be posted.
func hostLossArm(c *mpi.Comm, first int, buf []byte) (r *mpi.Request, err error) {
	if c.Rank() >= first {
		r, err = mpi.Irecv(c, buf, 0, 98) // never sent: the victim waits to be killed
	} else {
		r, err = mpi.Irecv(c, buf, first, 99)
	}
	if err != nil {
		return nil, err
	}
	if c.Rank() != 0 {
		return r, mpi.Send(c, buf[:0], 0, hostLossArrived)
	}
	for src := 1; src < c.Size(); src++ {
		if _, err := mpi.Recv(c, buf[:0], src, hostLossArrived); err != nil {
			return r, err
		}
	}
	return r, nil
}

// failure reports whether err is a process failure or a revocation.
func failure(err error) bool {
	return errors.Is(err, mpi.ErrProcFailed) || errors.Is(err, mpi.ErrRevoked)
}

// hostLossChild is a replacement spawned by hostLoss: it takes the rank
// of a lost process back (the spawned processes replace the last ranks).
func (b *bench) hostLossChild(parent *mpi.Comm) {
	parent.SetErrhandler(mpi.ErrorsReturn)
	m, err := parent.Merge(true)
	check(err)
	first := m.Size() - parent.Size() // the old ranks of the lost processes
	nc, err := m.Split(0, first+parent.Rank())
	check(err)
	hostLossRestored(nc)
}

// hostLossRestored returns, at rank 0 of the restored communicator, the
// latest instant at which a rank held it (each rank's own clock reading
// after its Split returned, reduced by maximum).
func hostLossRestored(nc *mpi.Comm) int64 {
	mine := []int64{time.Now().UnixNano()}
	latest := []int64{0}
	check(mpi.Reduce(nc, mine, latest, mpi.Max, 0))
	return latest[0]
}
