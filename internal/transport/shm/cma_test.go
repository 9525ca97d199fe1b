package shm

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
	"golang.org/x/sys/unix"
)

// Whether a frame's payload is read from the sender's memory is decided
// by the receiver, which does the reading: a process that may read its
// peer's memory (process_vm_readv) gets the peer's large frames that way,
// one that may not gets them copied through the ring, whatever the peer
// may do. Before, each side set the flag on its own outgoing direction from
// whether it could read the peer: a process that could not read its peer
// was sent single-copy frames it then failed to read (the frame ended
// with an error and the pair was closed), and one that could read got
// copies.
func TestSingleCopyDecidedByTheReader(t *testing.T) {
	for _, dialer := range []int{0, 1} {
		t.Run(fmt.Sprintf("rank%d-dials", dialer), func(t *testing.T) { singleCopyByReader(t, dialer) })
	}
}

func singleCopyByReader(t *testing.T, dialer int) {
	var reads [2]atomic.Int64 // payload reads tried by each rank (beyond its probe)
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := listenTwo(t, recs, func(c *Config) {
		self := c.Self
		c.vmRead = func(pid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) {
			if local[0].Len > 8 {
				reads[self].Add(1)
			}
			if self == 0 { // rank 0 may not read another process's memory
				return -1, unix.EPERM
			}
			return unix.ProcessVMReadv(pid, local, remote, 0)
		}
	})
	defer closeAll(trs)
	send := func(from, to int, seq uint64, n int) {
		t.Helper()
		b := make([]byte, n)
		fill(b, seq)
		d := make(doneCh, 1)
		trs[from].Post(to, transport.Header{Kind: 1, Seq: seq}, b, d)
		select {
		case err := <-d:
			if err != nil {
				t.Fatalf("rank %d's frame of %d bytes to rank %d: %v", from, n, to, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("rank %d's frame of %d bytes to rank %d: not written in 30 s", from, n, to)
		}
	}
	// The dialer's small frame sets the pair up, then one back.
	other := 1 - dialer
	send(dialer, other, 1, 8)
	waitFor(t, "the dialer's first frame", func() bool { return recs[other].count(dialer) == 1 })
	send(other, dialer, 2, 8)
	waitFor(t, "the first frame back", func() bool { return recs[dialer].count(other) == 1 })
	// Large frames both ways.
	send(1, 0, 3, 2<<20)
	send(0, 1, 4, 2<<20)
	waitFor(t, "rank 1's large frame at rank 0", func() bool {
		recs[0].mu.Lock()
		defer recs[0].mu.Unlock()
		return len(recs[0].got[1]) == 2 || recs[0].errs[3] != nil
	})
	waitFor(t, "rank 0's large frame at rank 1", func() bool { return recs[1].count(0) == 2 })
	recs[0].check(t)
	recs[1].check(t)
	recs[0].mu.Lock()
	if err := recs[0].errs[3]; err != nil {
		t.Errorf("rank 0, which may not read rank 1's memory, got rank 1's large frame to read: %v", err)
	}
	recs[0].mu.Unlock()
	if n := reads[0].Load(); n != 0 {
		t.Errorf("rank 0 tried %d reads of rank 1's memory, want none", n)
	}
	if n := reads[1].Load(); n == 0 {
		t.Error("rank 1, which may read rank 0's memory, got rank 0's large frame copied through the ring")
	}
	for i, r := range recs {
		select {
		case p := <-r.lost:
			t.Errorf("rank %d lost rank %d", i, p)
		default:
		}
	}
}

// A process configured with NoCMA is never read either: its large frames
// are copied through the ring though its peer may read its memory.
func TestNoCMASenderIsCopied(t *testing.T) {
	var reads atomic.Int64 // rank 0's payload reads
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := listenTwo(t, recs, func(c *Config) {
		if c.Self == 1 {
			c.NoCMA = true
			return
		}
		c.vmRead = func(pid int, local []unix.Iovec, remote []unix.RemoteIovec) (int, error) {
			if local[0].Len > 8 {
				reads.Add(1)
			}
			return unix.ProcessVMReadv(pid, local, remote, 0)
		}
	})
	defer closeAll(trs)
	for i, n := range []int{8, 2 << 20} { // the first sets the pair up
		seq := uint64(1 + i)
		b := make([]byte, n)
		fill(b, seq)
		if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: seq}, b); err != nil {
			t.Fatalf("frame of %d bytes: %v", n, err)
		}
	}
	waitFor(t, "rank 1's frames at rank 0", func() bool { return recs[0].count(1) == 2 })
	recs[0].check(t)
	if n := reads.Load(); n != 0 {
		t.Errorf("rank 0 read rank 1's memory %d times; rank 1 has NoCMA", n)
	}
}
