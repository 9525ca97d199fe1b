package rma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The fake transport: n members in memory. Requests go to the target's
// inbox in send order (one ordered queue per target, so the requests of
// one origin stay in order), replies to a queue per (origin, target).
// kill(r) makes r's sends and receives fail and stops its server; every
// wait also ends on the revocation and the abort.

type netErr struct {
	what string // "failed", "revoked", "aborted"
	peer int
}

func (e *netErr) Error() string { return fmt.Sprintf("%s (peer %d)", e.what, e.peer) }

type req struct {
	from int
	b    []byte
}

type fabric struct {
	n       int
	mu      sync.Mutex
	inbox   []chan req
	replies [][]chan []byte // [origin][target]
	dead    []chan struct{} // closed when the member is killed
	killed  []int           // in kill order
	sig     chan struct{}   // closed and replaced at every kill
	revoked chan struct{}
	abort   chan struct{}
	arrived chan int // the target of every request enqueued
}

func newFabric(n int) *fabric {
	f := &fabric{n: n, sig: make(chan struct{}), revoked: make(chan struct{}), abort: make(chan struct{}), arrived: make(chan int, 1024)}
	for r := 0; r < n; r++ {
		f.inbox = append(f.inbox, make(chan req, 1024))
		f.dead = append(f.dead, make(chan struct{}))
		row := make([]chan []byte, n)
		for t := range row {
			row[t] = make(chan []byte, 1024)
		}
		f.replies = append(f.replies, row)
	}
	return f
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (f *fabric) kill(r int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, r)
	close(f.dead[r])
	close(f.sig)
	f.sig = make(chan struct{})
}

func (f *fabric) revoke() { close(f.revoked) }

type fnet struct {
	f  *fabric
	me int
}

func (n fnet) Send(op string, target int, msg []byte) error {
	f := n.f
	switch {
	case closed(f.revoked):
		return &netErr{"revoked", target}
	case closed(f.dead[target]):
		return &netErr{"failed", target}
	}
	f.inbox[target] <- req{n.me, slices.Clone(msg)}
	f.arrived <- target
	return nil
}

func (n fnet) Await(op string, target int, buf []byte) (int, error) {
	f := n.f
	select {
	case b := <-f.replies[n.me][target]:
		return copy(buf, b), nil
	case <-f.dead[target]:
		return 0, &netErr{"failed", target}
	case <-f.revoked:
		return 0, &netErr{"revoked", target}
	case <-f.abort:
		return 0, &netErr{"aborted", target}
	}
}

func (n fnet) Reply(origin int, msg []byte) {
	if !closed(n.f.dead[origin]) {
		n.f.replies[origin][n.me] <- slices.Clone(msg)
	}
}

func (n fnet) Next(sig, stop <-chan struct{}, room func(int) []byte) (int, []byte, Event) {
	f := n.f
	select {
	case q := <-f.inbox[n.me]:
		b := room(len(q.b))
		copy(b, q.b)
		return q.from, b, Request
	case <-sig:
		return 0, nil, Signalled
	case <-stop:
	case <-f.dead[n.me]:
	case <-f.revoked:
	case <-f.abort:
	}
	return 0, nil, Closed
}

func (n fnet) Signal() <-chan struct{} {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	return n.f.sig
}

func (n fnet) LostCount() int64 {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	return int64(len(n.f.killed))
}

func (n fnet) Lost(r int) bool { return closed(n.f.dead[r]) }

func (n fnet) Failed(dst []int) []int {
	n.f.mu.Lock()
	defer n.f.mu.Unlock()
	return append(dst, n.f.killed...)
}

func (n fnet) Revoked() bool { return closed(n.f.revoked) }

func (n fnet) IsRevocation(err error) bool {
	var e *netErr
	return errors.As(err, &e) && e.what == "revoked"
}

func (n fnet) Aborted() <-chan struct{} { return n.f.abort }
func (n fnet) Track(string) func()      { return nil }

// sum64 is the test's only reduction: op 1 on int64 elements (dt 1).
func sum64(dt, op uint8, in, inout []byte) {
	if dt != 1 || op != 1 {
		panic(fmt.Sprintf("reduce of dt %d op %d", dt, op))
	}
	for i := 0; i+8 <= len(inout); i += 8 {
		binary.LittleEndian.PutUint64(inout[i:], binary.LittleEndian.Uint64(inout[i:])+binary.LittleEndian.Uint64(in[i:]))
	}
}

// cluster is n windows of elems int64 each over a fabric; serve says
// which members run their server.
type cluster struct {
	f    *fabric
	w    []*Window
	mem  [][]byte
	runs sync.WaitGroup
}

func newCluster(t *testing.T, n, elems int, serve func(r int) bool) *cluster {
	c := &cluster{f: newFabric(n)}
	for r := 0; r < n; r++ {
		m := make([]byte, 8*elems)
		c.mem = append(c.mem, m)
		c.w = append(c.w, NewWindow(Config{Net: fnet{c.f, r}, Rank: r, Size: n, Mem: m, ESize: 8, DT: 1, Reduce: sum64}))
		if serve == nil || serve(r) {
			w := c.w[r]
			c.runs.Add(1)
			go func() { defer c.runs.Done(); w.Serve() }()
		}
	}
	t.Cleanup(func() {
		// Whatever the test left: end the job, so every server stops.
		if !closed(c.f.abort) {
			close(c.f.abort)
		}
		c.runs.Wait()
	})
	return c
}

func i64(vs ...int64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func (c *cluster) at(r, i int) int64 { return int64(binary.LittleEndian.Uint64(c.mem[r][8*i:])) }

// all runs f at every member in ranks concurrently and returns their
// errors; it fails the test if one does not return within a minute.
func all(t *testing.T, ranks []int, f func(r int) error) []error {
	t.Helper()
	errs := make([]error, len(ranks))
	done := make(chan int, len(ranks))
	for i, r := range ranks {
		go func() { errs[i] = f(r); done <- i }()
	}
	deadline := time.After(time.Minute)
	for range ranks {
		select {
		case <-done:
		case <-deadline:
			t.Fatal("a call did not return within a minute (a hang)")
		}
	}
	return errs
}

// within runs f and fails the test if it does not return within a minute.
func within(t *testing.T, f func() error) error {
	t.Helper()
	return all(t, []int{0}, func(int) error { return f() })[0]
}

func ranksTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func noErrs(t *testing.T, what string, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s at member %d: %v", what, r, err)
		}
	}
}

func fence(c *cluster, r int) error {
	kept, missing, err := c.w[r].Fence("fence", false, false, false)
	if err == nil && kept != nil {
		err = kept
	}
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("missing %v", missing)
	}
	return err
}

func freeAll(t *testing.T, c *cluster, ranks []int) {
	t.Helper()
	noErrs(t, "Free", all(t, ranks, func(r int) error { return c.w[r].Free("free") }))
}

func code(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestFenceEpochOperations runs a fence epoch of three members: one-way
// Puts and accumulates (applied in the order sent, confirmed by the
// fence), a round-trip Get, GetAcc and CompareAndSwap, and the same on
// the member's own window (applied in the call); Replace and NoOp are
// the engine's, Sum the binding's Reduce.
func TestFenceEpochOperations(t *testing.T) {
	c := newCluster(t, 3, 4, nil)
	noErrs(t, "Fence", all(t, ranksTo(3), func(r int) error { return fence(c, r) }))
	w0 := c.w[0]
	put := func(target, disp int, vs ...int64) {
		if err := w0.Access("put", target, Header{Kind: Put, Disp: int64(disp), Count: int64(len(vs))}, i64(vs...), nil); err != nil {
			t.Fatal(err)
		}
	}
	acc := func(target, disp int, op uint8, vs ...int64) {
		if err := w0.Access("acc", target, Header{Kind: Acc, Op: op, Disp: int64(disp), Count: int64(len(vs))}, i64(vs...), nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range []int{1, 0} {
		put(target, 0, 5, 6)
		acc(target, 0, 1, 10, 20) // Sum: 15, 26
		acc(target, 1, OpReplace, 7)
		acc(target, 0, OpNoOp, 99)
		got := make([]byte, 8)
		if err := w0.Access("getacc", target, Header{Kind: GetAcc, Op: 1, Disp: 2, Count: 1}, i64(3), got); err != nil {
			t.Fatal(err)
		}
		if v := int64(binary.LittleEndian.Uint64(got)); v != 0 {
			t.Fatalf("target %d: GetAcc fetched %d, want 0", target, v)
		}
		if err := w0.Access("cas", target, Header{Kind: CAS, Disp: 3, Count: 1}, i64(0, 42), got); err != nil {
			t.Fatal(err)
		}
	}
	noErrs(t, "Fence", all(t, ranksTo(3), func(r int) error { return fence(c, r) }))
	for _, target := range []int{1, 0} {
		want := []int64{15, 7, 3, 42}
		for i, v := range want {
			if c.at(target, i) != v {
				t.Fatalf("member %d's element %d is %d, want %d", target, i, c.at(target, i), v)
			}
		}
	}
	got := make([]byte, 16)
	if err := c.w[2].Access("get", 1, Header{Kind: Get, Disp: 0, Count: 2}, nil, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, i64(15, 7)) {
		t.Fatalf("Get: % x", got)
	}
	noErrs(t, "Fence", all(t, ranksTo(3), func(r int) error { return fence(c, r) }))
	freeAll(t, c, ranksTo(3))
}

// TestEpochErrors: an operation outside an epoch, a second lock of a
// target, an unlock without a lock, MPI_MODE_NOPRECEDE after operations,
// Complete without Start, Wait without Post, Free in a lock epoch are
// CodeSync errors and change nothing.
func TestEpochErrors(t *testing.T) {
	c := newCluster(t, 2, 1, nil)
	w := c.w[0]
	check := func(what string, err error) {
		t.Helper()
		if code(err) != CodeSync {
			t.Fatalf("%s: %v, want a CodeSync error", what, err)
		}
	}
	check("Put outside an epoch", w.Access("put", 1, Header{Kind: Put, Count: 1}, i64(1), nil))
	check("Unlock without Lock", w.Unlock("unlock", 1))
	check("Complete without Start", w.Complete("complete"))
	_, err := w.Wait("wait", true)
	check("Wait without Post", err)
	if err := within(t, func() error { return w.Lock("lock", Exclusive, 1, false) }); err != nil {
		t.Fatal(err)
	}
	check("a second Lock", w.Lock("lock", Shared, 1, false))
	check("Free in a lock epoch", w.Free("free"))
	check("Fence in a lock epoch", func() error { _, _, err := w.Fence("fence", false, false, false); return err }())
	if err := within(t, func() error { return w.Unlock("unlock", 1) }); err != nil {
		t.Fatal(err)
	}
	noErrs(t, "Fence", all(t, ranksTo(2), func(r int) error { return fence(c, r) }))
	if err := w.Access("put", 1, Header{Kind: Put, Count: 1}, i64(1), nil); err != nil {
		t.Fatal(err)
	}
	_, _, err = w.Fence("fence", true, false, false)
	check("NOPRECEDE after a Put", err)
	noErrs(t, "Fence", all(t, ranksTo(2), func(r int) error { return fence(c, r) }))
	freeAll(t, c, ranksTo(2))
}

// TestLockOfFailedHolderReleased: member 1 holds member 0's exclusive
// lock, member 2 asks for it; member 1 dies: its lock is released at the
// target and member 2 is granted (without the release, member 2 waited
// for ever). An exclusive lock excludes: member 2's Put under it lands.
func TestLockOfFailedHolderReleased(t *testing.T) {
	c := newCluster(t, 3, 1, nil)
	if err := within(t, func() error { return c.w[1].Lock("lock", Exclusive, 0, false) }); err != nil {
		t.Fatal(err)
	}
	granted := make(chan error, 1)
	go func() { granted <- c.w[2].Lock("lock", Exclusive, 0, false) }()
	c.f.kill(1)
	select {
	case err := <-granted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the lock of the failed holder was not released within a minute")
	}
	if err := c.w[2].Access("put", 0, Header{Kind: Put, Count: 1}, i64(9), nil); err != nil {
		t.Fatal(err)
	}
	if err := within(t, func() error { return c.w[2].Unlock("unlock", 0) }); err != nil {
		t.Fatal(err)
	}
	if c.at(0, 0) != 9 {
		t.Fatalf("the Put under the lock left %d", c.at(0, 0))
	}
	freeAll(t, c, []int{0, 2})
}

// TestTargetFailsMidOperation: member 1 does not serve; member 0's Get to
// it is in flight (the request reached member 1) when member 1 dies. The
// Get returns (no hang) without an error, the failure is kept, and the
// Unlock of the epoch raises it; a Put to the dead member is kept too and
// raised by the next Flush. A fence among the survivors completes and
// names member 1 as missing.
func TestTargetFailsMidOperation(t *testing.T) {
	c := newCluster(t, 3, 2, func(r int) bool { return r != 1 })
	w := c.w[0]
	if err := w.Lock("lock", Shared, 1, true); err != nil { // MPI_MODE_NOCHECK: no request
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() { got <- w.Access("get", 1, Header{Kind: Get, Count: 2}, nil, make([]byte, 16)) }()
	if r := <-c.f.arrived; r != 1 {
		t.Fatalf("a request went to %d", r)
	}
	c.f.kill(1)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the Get returned %v; its failure is the synchronisation's", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the Get to a dead target did not return within a minute")
	}
	err := within(t, func() error { return w.Unlock("unlock", 1) })
	var ee *EpochError
	var ne *netErr
	if !errors.As(err, &ee) || !errors.As(err, &ne) || ne.what != "failed" || ne.peer != 1 {
		t.Fatalf("Unlock after the target died: %v, want the kept failure of target 1", err)
	}
	// A one-way Put to the dead target: kept, raised by Flush.
	if err := within(t, func() error { return w.Lock("lock", Shared, 2, false) }); err != nil {
		t.Fatal(err)
	}
	if err := w.Lock("lock", Shared, 1, true); code(err) != CodeFailed {
		t.Fatalf("NOCHECK lock of a dead target: %v, want CodeFailed", err)
	}
	if err := within(t, func() error { return w.Unlock("unlock", 2) }); err != nil {
		t.Fatal(err)
	}
	kept := make([]error, 3)
	missing := make([][]int, 3)
	errs := all(t, []int{0, 2}, func(r int) error {
		var err error
		kept[r], missing[r], err = c.w[r].Fence("fence", false, false, false)
		return err
	})
	noErrs(t, "Fence among the survivors", errs)
	for _, r := range []int{0, 2} {
		if !slices.Equal(missing[r], []int{1}) || kept[r] != nil {
			t.Fatalf("member %d's fence: missing %v, kept %v; want [1], nil", r, missing[r], kept[r])
		}
	}
	if err := w.Access("put", 1, Header{Kind: Put, Count: 1}, i64(1), nil); err != nil {
		t.Fatalf("a Put to a dead target returned %v; its failure is the synchronisation's", err)
	}
	noErrs(t, "Fence among the survivors", all(t, []int{0, 2}, func(r int) error {
		var err error
		kept[r], missing[r], err = c.w[r].Fence("fence", false, false, false)
		return err
	}))
	if !errors.As(kept[0], &ee) || !errors.As(kept[0], &ne) || ne.peer != 1 || kept[2] != nil {
		t.Fatalf("the fence after a Put to a dead target: kept %v at member 0, %v at member 2", kept[0], kept[2])
	}
	freeAll(t, c, []int{0, 2})
}

// TestRevocation: a revoked window's waits end with CodeRevoked (a fence
// whose other member never comes, Start without a post), a request to it
// returns the revocation (not kept), and the servers stop.
func TestRevocation(t *testing.T) {
	c := newCluster(t, 2, 1, nil)
	noErrs(t, "Fence", all(t, ranksTo(2), func(r int) error { return fence(c, r) }))
	fenced := make(chan error, 1)
	go func() { _, _, err := c.w[0].Fence("fence", false, false, false); fenced <- err }()
	started := make(chan error, 1)
	go func() { started <- c.w[1].Start("start", []int{0}) }()
	c.f.revoke()
	for _, ch := range []chan error{fenced, started} {
		select {
		case err := <-ch:
			if code(err) != CodeRevoked {
				t.Fatalf("a wait on a revoked window returned %v, want CodeRevoked", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a wait on a revoked window did not end within a minute")
		}
	}
	if err := c.w[1].Lock("lock", Shared, 0, false); !(fnet{}).IsRevocation(err) {
		t.Fatalf("Lock on a revoked window: %v, want the revocation", err)
	}
	c.runs.Wait() // the servers stopped
}

// TestAbortEndsWaits: the end of the job ends a fence waiting for a
// member that never comes (CodeAborted), and the servers.
func TestAbortEndsWaits(t *testing.T) {
	c := newCluster(t, 2, 1, nil)
	err := within(t, func() error {
		go func() { <-c.f.arrived; close(c.f.abort) }()
		_, _, err := c.w[0].Fence("fence", false, false, false)
		return err
	})
	if code(err) != CodeAborted {
		t.Fatalf("a fence when the job ended: %v, want CodeAborted", err)
	}
	c.runs.Wait()
}

// TestPSCWOriginFails: member 0 exposes its window to members 1 and 2;
// member 1 starts, puts and completes; member 2 dies before completing.
// Test reports the epoch open while member 2 is alive and has not
// completed; after its death Wait ends with CodeFailed naming it, and
// member 1's Put landed.
func TestPSCWOriginFails(t *testing.T) {
	c := newCluster(t, 3, 1, nil)
	if err := c.w[0].Post("post", []int{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := within(t, func() error { return c.w[1].Start("start", []int{0}) }); err != nil {
		t.Fatal(err)
	}
	if err := c.w[1].Access("put", 0, Header{Kind: Put, Count: 1}, i64(4), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.w[1].Complete("complete"); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.w[0].Wait("test", false); ok || err != nil {
		t.Fatalf("Test with member 2 alive and not complete: %v, %v", ok, err)
	}
	c.f.kill(2)
	var ok bool
	err := within(t, func() error {
		var err error
		ok, err = c.w[0].Wait("wait", true)
		return err
	})
	var e *Error
	if !ok || !errors.As(err, &e) || e.Code != CodeFailed || e.Detail != "origins [2] failed during the epoch" {
		t.Fatalf("Wait after origin 2 died: %v, %v", ok, err)
	}
	if c.at(0, 0) != 4 {
		t.Fatalf("member 1's Put left %d", c.at(0, 0))
	}
	freeAll(t, c, []int{0, 1})
}

// TestRefusedRequest: a request outside the target's window is refused
// by its server (CodeRefused), kept and raised by the Flush.
func TestRefusedRequest(t *testing.T) {
	c := newCluster(t, 2, 1, nil)
	w := c.w[0]
	if err := within(t, func() error { return w.Lock("lock", Shared, 1, false) }); err != nil {
		t.Fatal(err)
	}
	if err := within(t, func() error { return w.Access("get", 1, Header{Kind: Get, Disp: 1, Count: 1}, nil, make([]byte, 8)) }); err != nil {
		t.Fatal(err)
	}
	err := within(t, func() error { return w.Flush("flush", 1) })
	var ee *EpochError
	if !errors.As(err, &ee) || code(ee.Err) != CodeRefused {
		t.Fatalf("Flush after a refused Get: %v, want an EpochError of CodeRefused", err)
	}
	if err := within(t, func() error { return w.Unlock("unlock", 1) }); err != nil {
		t.Fatal(err)
	}
	freeAll(t, c, ranksTo(2))
}
