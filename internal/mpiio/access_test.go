package mpiio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// chanNet is a Net among n goroutine members: member from's messages to
// member to go through q[from][to] in call order (every member makes the
// same calls in the same order). A receive waits at most a deadline, so a
// mismatched call fails instead of hanging.
type chanNet struct {
	me int
	q  [][]chan []byte
}

func newChanNets(n int) []*chanNet {
	q := make([][]chan []byte, n)
	for i := range q {
		q[i] = make([]chan []byte, n)
		for j := range q[i] {
			q[i][j] = make(chan []byte, 64)
		}
	}
	nets := make([]*chanNet, n)
	for i := range nets {
		nets[i] = &chanNet{me: i, q: q}
	}
	return nets
}

func (c *chanNet) recv(from int) ([]byte, error) {
	select {
	case m := <-c.q[from][c.me]:
		return m, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("member %d: nothing from %d", c.me, from)
	}
}

func (c *chanNet) Alltoall(sc, rc []int64) error {
	for j := range c.q {
		c.q[c.me][j] <- binary.LittleEndian.AppendUint64(nil, uint64(sc[j]))
	}
	for j := range c.q {
		m, err := c.recv(j)
		if err != nil {
			return err
		}
		rc[j] = int64(binary.LittleEndian.Uint64(m))
	}
	return nil
}

func (c *chanNet) Alltoallv(sbuf []byte, scounts, sdisp []int, rbuf []byte, rcounts, rdisp []int) error {
	for j := range c.q {
		c.q[c.me][j] <- bytes.Clone(sbuf[sdisp[j] : sdisp[j]+scounts[j]])
	}
	for j := range c.q {
		m, err := c.recv(j)
		if err != nil {
			return err
		}
		if len(m) != rcounts[j] {
			return fmt.Errorf("member %d: %d bytes from %d, want %d", c.me, len(m), j, rcounts[j])
		}
		copy(rbuf[rdisp[j]:], m)
	}
	return nil
}

func (c *chanNet) ErrFlag(local error) error {
	flag := []byte{0}
	if local != nil {
		flag[0] = 1
	}
	for j := range c.q {
		c.q[c.me][j] <- flag
	}
	bad := -1
	for j := range c.q {
		m, err := c.recv(j)
		if err != nil {
			return err
		}
		if m[0] != 0 && bad < 0 {
			bad = j
		}
	}
	if local != nil {
		return local
	}
	if bad >= 0 {
		return fmt.Errorf("failed at member %d", bad)
	}
	return nil
}

// memData is a file in memory shared by the members; failWrites makes
// every write of one member fail.
type memData struct {
	mu         *sync.Mutex
	b          *[]byte
	failWrites bool
	locks      int
}

var errDisk = errors.New("disk on fire")

func (d *memData) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off >= int64(len(*d.b)) {
		return 0, io.EOF
	}
	n := copy(p, (*d.b)[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (d *memData) WriteAt(p []byte, off int64) (int, error) {
	if d.failWrites {
		return 0, errDisk
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if end := int(off) + len(p); end > len(*d.b) {
		*d.b = append(*d.b, make([]byte, end-len(*d.b))...)
	}
	return copy((*d.b)[off:], p), nil
}

func (d *memData) Lock(bool) func() { d.locks++; return func() {} }

func (d *memData) Size() (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return int64(len(*d.b)), nil
}

// runMembers runs fn at n members with an Access each over one memory
// file; it returns every member's error, failing the test if one does not
// return within a deadline.
func runMembers(t *testing.T, n int, file *[]byte, failAt int, fn func(a *Access) error) []error {
	t.Helper()
	nets := newChanNets(n)
	var mu sync.Mutex
	errs := make([]error, n)
	done := make(chan int, n)
	for r := range n {
		a := &Access{Net: nets[r], Data: &memData{mu: &mu, b: file, failWrites: r == failAt}, Rank: r, Size: n}
		go func() {
			errs[r] = fn(a)
			done <- r
		}()
	}
	for range n {
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("a member did not return")
		}
	}
	return errs
}

// stridedView is member r's view of n members' interleaved blocks of blk
// bytes.
func stridedView(t *testing.T, r, n, blk int) *View {
	t.Helper()
	v, err := NewView(int64(r*blk), 1, int64(n*blk), int64(n*blk), runsOf(0, int64(blk)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// planFor is every member's part of a collective call's first step: the
// spans of all members' extents, and the plan made from them.
func planFor(views []*View, l, size int64, nodes int, buf int64) (*Plan, [][]Ext) {
	rows := make([][]int64, len(views))
	live := make([]bool, len(views))
	exts := make([][]Ext, len(views))
	for r, v := range views {
		exts[r] = v.Extents(nil, l, size)
		lo, hi := Span(exts[r])
		rows[r], live[r] = []int64{lo, hi}, true
	}
	return NewPlan(rows, live, nodes, buf, func(r int) string { return fmt.Sprint(r / 2) }), exts
}

// TestAccessTwoPhase writes 4 members' interleaved blocks (3 bytes each,
// 39 per member) by two-phase I/O with 2 aggregators and rounds of 7
// bytes, checks the file byte by byte, reads it back the same way into
// every member, and reads past the end of the file (the bytes before it
// counted). The plan with the hosts' first members (nodes 0, two members a
// host) gives the same result.
func TestAccessTwoPhase(t *testing.T) {
	const n, blk, per = 4, 3, 39
	for _, nodes := range []int{2, 0} {
		views := make([]*View, n)
		for r := range views {
			views[r] = stridedView(t, r, n, blk)
		}
		p, exts := planFor(views, 0, per, nodes, 7)
		if !p.Interleaved || len(p.Aggs) != 2 || p.Rounds < 2 {
			t.Fatalf("plan %+v: want interleaved, 2 aggregators, several rounds", p)
		}
		var file []byte
		errs := runMembers(t, n, &file, -1, func(a *Access) error {
			b := bytes.Repeat([]byte{byte('a' + a.Rank)}, per)
			return a.Write(p, views[a.Rank], 0, exts[a.Rank], b)
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("nodes %d: write at member %d: %v", nodes, r, err)
			}
		}
		if len(file) != n*per {
			t.Fatalf("nodes %d: file of %d bytes, want %d", nodes, len(file), n*per)
		}
		for i, c := range file {
			if want := byte('a' + (i/blk)%n); c != want {
				t.Fatalf("nodes %d: byte %d is %q, want %q", nodes, i, c, want)
			}
		}
		// Read back from view byte 30 on, 20 bytes: the last 11 lie past
		// the end of the file.
		p, exts = planFor(views, 30, 20, nodes, 7)
		got := make([][]byte, n)
		counts := make([]int, n)
		errs = runMembers(t, n, &file, -1, func(a *Access) error {
			got[a.Rank] = make([]byte, 20)
			var err error
			counts[a.Rank], err = a.Read(p, views[a.Rank], 30, exts[a.Rank], got[a.Rank])
			return err
		})
		for r := range n {
			if errs[r] != nil || counts[r] != 9 {
				t.Fatalf("nodes %d: read at member %d: %d bytes, %v; want 9", nodes, r, counts[r], errs[r])
			}
			if want := bytes.Repeat([]byte{byte('a' + r)}, 9); !bytes.Equal(got[r][:9], want) {
				t.Fatalf("nodes %d: member %d read %q, want %q", nodes, r, got[r][:9], want)
			}
		}
	}
}

// TestAccessDirect checks the path of ranges that do not interleave (a
// block per member): each member writes its own range itself,
// under the atomic-mode lock, and the plan says so.
func TestAccessDirect(t *testing.T) {
	const n, per = 3, 16
	views := make([]*View, n)
	for r := range views {
		v, err := NewView(int64(r*per), 1, 1, 1, runsOf(0, 1))
		if err != nil {
			t.Fatal(err)
		}
		views[r] = v
	}
	p, exts := planFor(views, 0, per, 1, 1<<20)
	if p.Interleaved {
		t.Fatal("blocks per member planned as interleaved")
	}
	var file []byte
	errs := runMembers(t, n, &file, -1, func(a *Access) error {
		d := a.Data.(*memData)
		if err := a.Write(p, views[a.Rank], 0, exts[a.Rank], bytes.Repeat([]byte{byte('0' + a.Rank)}, per)); err != nil {
			return err
		}
		if d.locks != 1 {
			return fmt.Errorf("%d locks for one direct write", d.locks)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("member %d: %v", r, err)
		}
	}
	if want := "0000000000000000111111111111111122222222222222222"[:n*per]; string(file) != want {
		t.Fatalf("file %q, want %q", file, want)
	}
}

// TestAccessErrorEverywhere checks that a write error at an aggregator is
// reported at every member: the aggregator gets its IOError (with the
// operating system error), the others the Net's error naming it.
func TestAccessErrorEverywhere(t *testing.T) {
	const n, blk, per = 4, 2, 8
	views := make([]*View, n)
	for r := range views {
		views[r] = stridedView(t, r, n, blk)
	}
	p, exts := planFor(views, 0, per, 1, 1<<20)
	agg := p.Aggs[0]
	var file []byte
	errs := runMembers(t, n, &file, agg, func(a *Access) error {
		return a.Write(p, views[a.Rank], 0, exts[a.Rank], make([]byte, per))
	})
	for r, err := range errs {
		var ioe *IOError
		switch {
		case r == agg && (!errors.As(err, &ioe) || !errors.Is(err, errDisk)):
			t.Errorf("aggregator %d: %v, want an IOError of the disk's error", r, err)
		case r != agg && (err == nil || err.Error() != fmt.Sprintf("failed at member %d", agg)):
			t.Errorf("member %d: %v, want the failure at member %d", r, err, agg)
		}
	}
}
