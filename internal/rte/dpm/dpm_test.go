package dpm

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

func grp(procs ...int) Group { return Group{Procs: procs} }

// connectPair runs Connect at process 1 and Accept at process 0 on a port
// of process 0 and returns both results.
func connectPair(t *testing.T, f *fabric, a, b *Table, port string) (acc, con connResult) {
	t.Helper()
	ch := make(chan connResult, 1)
	go func() {
		c, g, err := b.Connect(port, grp(1, 3), Cancel{})
		ch <- connResult{c, g, err}
	}()
	acc = within(t, "Accept", func() connResult {
		c, g, err := a.Accept(port, grp(0, 2), -1, Cancel{})
		return connResult{c, g, err}
	})
	con = within(t, "Connect", func() connResult { return <-ch })
	return acc, con
}

// The group a root tells the other root carries its members' addresses,
// read in one lookup of the runtime for the whole group (under ftmpirun's
// lazy start one request to the head: rte's Endpoints), not one a member;
// those not known are left out, the order kept.
func TestMineReadsTheGroupInOneLookup(t *testing.T) {
	f := newFabric()
	procs := []int{0, 2, 4, 5, 7, 9, 11, 12}
	for _, p := range procs {
		if p != 7 {
			f.eps[p] = boot.Endpoint{Rank: p, Addrs: map[string]string{"tcp": "127.0.0.1:" + strconv.Itoa(1000+p)}}
		}
	}
	tb := f.table(t, 0, "job")
	f.mu.Lock()
	before := f.looked
	f.mu.Unlock()
	g := tb.Mine(procs, []int{7})
	f.mu.Lock()
	looked := f.looked - before
	f.mu.Unlock()
	if looked != 1 {
		t.Fatalf("%d lookups for a group of %d, want 1", looked, len(procs))
	}
	var got []int
	for _, ep := range g.Eps {
		got = append(got, ep.Rank)
	}
	if want := []int{0, 2, 4, 5, 9, 11, 12}; !slices.Equal(got, want) || !slices.Equal(g.Procs, procs) || !slices.Equal(g.Rec, []int{7}) {
		t.Fatalf("group %+v: addresses of %v, want %v (7 unknown)", g, got, want)
	}
}

// Two roots find each other: the same connection id, each the other's
// group, and the steps and verdicts of the two sides pass through.
func TestConnectAcceptRoots(t *testing.T) {
	f := newFabric()
	f.eps[0] = boot.Endpoint{Rank: 0, Addrs: map[string]string{"tcp": "127.0.0.1:1"}}
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	pn, err := ParsePort(port)
	if err != nil || pn.Proc != 0 || pn.Job != "job" || pn.Ep == nil || pn.Ep.Addrs["tcp"] != "127.0.0.1:1" {
		t.Fatalf("port %q parsed as %+v, %v", port, pn, err)
	}
	acc, con := connectPair(t, f, a, b, port)
	if acc.err != nil || con.err != nil {
		t.Fatalf("accept %v, connect %v", acc.err, con.err)
	}
	if acc.c.ID() != con.c.ID() || acc.c.Peer() != 1 || con.c.Peer() != 0 {
		t.Fatalf("ids %d/%d, peers %d/%d", acc.c.ID(), con.c.ID(), acc.c.Peer(), con.c.Peer())
	}
	if !slices.Equal(acc.g.Procs, []int{1, 3}) || !slices.Equal(con.g.Procs, []int{0, 2}) {
		t.Fatalf("remote groups %v at the acceptor, %v at the connector", acc.g.Procs, con.g.Procs)
	}
	// The connector reached the port's process through the port's address.
	if len(f.added) == 0 || f.added[0][0].Rank != 0 {
		t.Fatalf("the port's address was not added: %v", f.added)
	}

	sa := &Side{T: a, Local: solo{}, N: 1, Me: true, Conn: acc.c, Remote: acc.g}
	sb := &Side{T: b, Local: solo{}, N: 1, Me: true, Conn: con.c, Remote: con.g}
	wa, wb := []uint64{0b1110, 0xff}, []uint64{0b0111, 0x0f}
	errB := make(chan error, 1)
	go func() { errB <- sb.AND(wb) }()
	if err := within(t, "AND", func() error { return sa.AND(wa) }); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "AND", func() error { return <-errB }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wa, []uint64{0b0110, 0x0f}) || !slices.Equal(wa, wb) {
		t.Fatalf("AND gave %v and %v", wa, wb)
	}
	vb := make(chan agree.Value, 1)
	go func() { vb <- sb.Verdict(Vote(0)) }()
	va := within(t, "Verdict", func() agree.Value { return sa.Verdict(Vote(0)) })
	if v := within(t, "Verdict", func() agree.Value { return <-vb }); va.Flags&1 != 1 || v.Flags&1 != 1 {
		t.Fatalf("verdicts %v and %v, want yes", va, v)
	}
	acc.c.End()
	con.c.End()
	if err := a.Close(port); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(port); !errors.Is(err, ErrPort) {
		t.Fatalf("closing twice: %v, want ErrPort", err)
	}
}

// A connector whose port was closed before it was accepted is refused;
// so is one of a port that is not open; an Accept waiting on a port that
// closes returns ErrPort.
func TestClosedPorts(t *testing.T) {
	f := newFabric()
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	pn, _ := ParsePort(port)
	ch := make(chan error, 1)
	go func() {
		_, _, err := b.Connect(port, grp(1), Cancel{})
		ch <- err
	}()
	// The request is queued: wait for it (an event, not a guess).
	f.await(t, Request, 1)
	if n := a.Pending(pn.Port); n != 1 {
		t.Fatalf("%d requests queued, want 1", n)
	}
	if err := a.Close(port); err != nil {
		t.Fatal(err)
	}
	err := within(t, "Connect", func() error { return <-ch })
	if !errors.Is(err, ErrPort) || !strings.Contains(err.Error(), "the port was closed") {
		t.Fatalf("connect to a port closed before accepting: %v", err)
	}
	if _, _, err := b.Connect(port, grp(1), Cancel{}); !errors.Is(err, ErrPort) || !strings.Contains(err.Error(), "is not open") {
		t.Fatalf("connect to a closed port: %v", err)
	}
	// The refusal withdrew the connection: nothing is left at either end.
	if len(a.conns) != 0 || len(b.conns) != 0 {
		t.Fatalf("connections left: %d, %d", len(a.conns), len(b.conns))
	}

	p2 := a.Open()
	acc := make(chan error, 1)
	go func() {
		_, _, err := a.Accept(p2, grp(0), -1, Cancel{})
		acc <- err
	}()
	if err := a.Close(p2); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "Accept", func() error { return <-acc }); !errors.Is(err, ErrPort) {
		t.Fatalf("accept on a closed port: %v", err)
	}
}

// Port names of another job or process, malformed ones, and a port of
// this process passed to Connect, are ErrPort errors before any frame.
func TestPortChecks(t *testing.T) {
	f := newFabric()
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	other := PortName{Job: "other", Proc: 0, Port: 1}.String()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"connect to another job", func() error { _, _, err := b.Connect(other, grp(1), Cancel{}); return err }()},
		{"connect to its own port", func() error { _, _, err := a.Connect(port, grp(0), Cancel{}); return err }()},
		{"connect to garbage", func() error { _, _, err := b.Connect("tcp://x", grp(1), Cancel{}); return err }()},
		{"accept on another's port", func() error { _, _, err := b.Accept(port, grp(1), -1, Cancel{}); return err }()},
		{"close another's port", b.Close(port)},
	} {
		if !errors.Is(tc.err, ErrPort) {
			t.Errorf("%s: %v, want ErrPort", tc.name, tc.err)
		}
	}
	if n := len(f.sent); n != 0 {
		t.Fatalf("%d frames sent for refused calls", n)
	}
}

// A connector waiting for the accept ends with ErrPeerFailed when the
// port's process fails; so does one whose request cannot be sent, and an
// Accept that waits for one process's connection (Join) when that process
// fails. Nothing hangs.
func TestPeerDiesBeforeAccept(t *testing.T) {
	f := newFabric()
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	ch := make(chan error, 1)
	go func() {
		_, _, err := b.Connect(port, grp(1), Cancel{})
		ch <- err
	}()
	f.await(t, Request, 1)
	f.kill(0)
	if err := within(t, "Connect", func() error { return <-ch }); !errors.Is(err, ErrPeerFailed) {
		t.Fatalf("connect to a port whose process failed: %v", err)
	}
	if _, _, err := b.Connect(port, grp(1), Cancel{}); !errors.Is(err, ErrPeerFailed) {
		t.Fatalf("connect to a dead process's port: %v", err)
	}

	c := f.table(t, 2, "job")
	p2 := c.Open()
	acc := make(chan error, 1)
	go func() {
		_, _, err := c.Accept(p2, grp(2), 3, Cancel{})
		acc <- err
	}()
	f.kill(3)
	if err := within(t, "Accept", func() error { return <-acc }); !errors.Is(err, ErrPeerFailed) {
		t.Fatalf("accept of a failed process's connection: %v", err)
	}
}

// A root that fails mid-handshake (after the roots found each other) ends
// the other root's step wait and verdict with its failure.
func TestPeerDiesMidHandshake(t *testing.T) {
	f := newFabric()
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	acc, con := connectPair(t, f, a, b, port)
	if acc.err != nil || con.err != nil {
		t.Fatal(acc.err, con.err)
	}
	sb := &Side{T: b, Local: solo{}, N: 1, Me: true, Conn: con.c, Remote: con.g}
	errB := make(chan error, 1)
	go func() { errB <- sb.AND([]uint64{1}) }()
	// The step reached process 0, which then dies without answering.
	f.await(t, Step, 2) // the answer to the request, and the step
	f.kill(0)
	if err := within(t, "AND", func() error { return <-errB }); !errors.Is(err, ErrPeerFailed) {
		t.Fatalf("AND with a dead root: %v", err)
	}
	v := within(t, "Verdict", func() agree.Value { return sb.Verdict(Vote(0)) })
	if ok, codes := Decide(v, agree.SetOf(0), 0, tProcFailed); ok || !codes.Has(tProcFailed) {
		t.Fatalf("verdict with a dead root: %v, %v", ok, codes)
	}
}

// The deadline and the job's end stop every wait.
func TestCancel(t *testing.T) {
	f := newFabric()
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	fired := make(chan time.Time, 1)
	fired <- time.Time{}
	if _, _, err := a.Accept(port, grp(0), -1, Cancel{Deadline: fired}); !errors.Is(err, ErrPort) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("accept past its deadline: %v", err)
	}
	fired <- time.Time{}
	if _, _, err := b.Connect(port, grp(1), Cancel{Deadline: fired}); !errors.Is(err, ErrPort) || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("connect past its deadline: %v", err)
	}
	// The timed-out connector withdrew its request with its verdict.
	pn, _ := ParsePort(port)
	if n := a.Pending(pn.Port); n != 0 {
		t.Fatalf("%d requests left after the connector withdrew", n)
	}
	fin := f.frames(Final)
	if len(fin) != 1 {
		t.Fatalf("%d withdrawals sent, want 1", len(fin))
	}
	if v, err := DecodeVerdict(fin[0].body); err != nil || v.Flags != 0 || !v.Union.Has(tPort) {
		t.Fatalf("the withdrawal's verdict: %v, %v", v, err)
	}
	done := make(chan struct{})
	close(done)
	if _, _, err := a.Accept(port, grp(0), -1, Cancel{Abort: done}); !errors.Is(err, ErrAborted) {
		t.Fatalf("accept after the job ended: %v", err)
	}
	if _, _, err := b.Connect(port, grp(1), Cancel{Stop: done}); !errors.Is(err, ErrAborted) {
		t.Fatalf("connect after the job ended: %v", err)
	}
}

// Hostile and malformed frames: dropped with a logged reason, or refused
// to their sender, never a panic or a blocked handler; frames of another
// connection, or of the right connection from another process, do not
// reach it.
func TestHostileFrames(t *testing.T) {
	f := newFabric()
	a := f.table(t, 0, "job")
	port := a.Open()
	pn, _ := ParsePort(port)
	h := func(k Kind, A, id uint64) transport.Header {
		return Frame{Kind: k, A: A, ID: id}.Header()
	}
	// Undecodable frames are errors, logged by Handle.
	for _, bad := range []transport.Header{
		{Tag: int32(ctl.Port), B: 9},
		{Tag: int32(ctl.Agree), B: uint64(Step)},
		h(Request, 0, 1),
		h(Final, 3, 1),
	} {
		if err := a.OnFrame(5, bad, nil); !errors.Is(err, ErrMalformed) {
			t.Errorf("frame %+v: %v, want ErrMalformed", bad, err)
		}
	}
	a.Handle(5, transport.Header{Tag: int32(ctl.Port), B: 77}, nil)
	if l := f.log(0); !strings.Contains(l, "port frame from process 5 dropped: unknown port frame kind 77") {
		t.Fatalf("the dropped frame was not logged: %q", l)
	}
	// Malformed requests are refused to their sender, not queued.
	for i, body := range [][]byte{nil, []byte("{"), []byte(`{"procs":[]}`), []byte(`{"procs":[5,5]}`),
		[]byte(`{"procs":[6]}`), []byte(`{"procs":[5],"eps":[{"Rank":9}]}`), []byte(`{"procs":[5],"rec":[-1]}`)} {
		if err := a.OnFrame(5, h(Request, uint64(pn.Port), uint64(100+i)), body); err != nil {
			t.Fatalf("request %q: %v", body, err)
		}
	}
	if n := a.Pending(pn.Port); n != 0 {
		t.Fatalf("%d malformed requests queued", n)
	}
	if ref := f.frames(Refuse); len(ref) != 7 || !strings.Contains(string(ref[0].body), "malformed connection request") ||
		!strings.Contains(string(ref[4].body), "not in its group") {
		t.Fatalf("refusals: %d, first %q", len(ref), ref[0].body)
	}

	// A connection in progress: frames of other ids and other senders
	// are dropped; a flood does not block the handler.
	if err := a.OnFrame(5, h(Request, uint64(pn.Port), 41), EncodeGroup(grp(5))); err != nil {
		t.Fatal(err)
	}
	c, g, err := a.Accept(port, grp(0), -1, Cancel{})
	if err != nil || c.ID() != 41 || !slices.Equal(g.Procs, []int{5}) {
		t.Fatalf("accept: %v %v %v", c, g, err)
	}
	within(t, "a flood of steps", func() bool {
		for i := range 100 {
			_ = a.OnFrame(6, h(Step, 1, 41), []byte("x"))           // not the peer
			_ = a.OnFrame(5, h(Step, 1, 43), []byte("x"))           // not the connection
			_ = a.OnFrame(5, h(Step, uint64(1000+i), 41), []byte{}) // stale steps, past the queue
		}
		return true
	})
	if n := len(c.ch); n != cap(c.ch) {
		t.Fatalf("%d frames queued of the flood, want the queue's %d", n, cap(c.ch))
	}
	c.End()
	if err := a.OnFrame(5, h(Request, uint64(pn.Port), 42), EncodeGroup(grp(5))); err != nil {
		t.Fatal(err)
	}
	if c, g, err = a.Accept(port, grp(0), -1, Cancel{}); err != nil || c.ID() != 42 {
		t.Fatalf("accept: %v %v", c, err)
	}
	steps := len(f.frames(Step))
	// A step of the wrong size is malformed; then the peer's verdict
	// arrives while a step is awaited: it gave up.
	s := &Side{T: a, Local: solo{}, N: 1, Me: true, Conn: c, Remote: g}
	done := make(chan error, 1)
	go func() { done <- s.AND([]uint64{1, 2}) }()
	f.await(t, Step, steps+1)
	_ = a.OnFrame(5, h(Step, 1, 42), []byte("seven b"))
	if err := within(t, "AND", func() error { return <-done }); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a step of 7 bytes: %v, want ErrMalformed", err)
	}
	go func() { done <- s.AND([]uint64{1}) }()
	f.await(t, Step, steps+2)
	no := EncodeVerdict(Vote(tPort))
	_ = a.OnFrame(5, h(Final, 0, 42), no)
	if err := within(t, "AND", func() error { return <-done }); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("a verdict instead of a step: %v, want ErrGaveUp", err)
	}
	// Verdict uses the verdict that came early.
	v := s.Verdict(Vote(0))
	if v.Flags&1 != 0 || !v.Union.Has(tPort) {
		t.Fatalf("verdict %v, want no with the other side's class", v)
	}
	c.End()
	// An undecodable verdict counts as a malformed frame.
	if err := a.OnFrame(5, h(Request, uint64(pn.Port), 44), EncodeGroup(grp(5))); err != nil {
		t.Fatal(err)
	}
	c, g, err = a.Accept(port, grp(0), -1, Cancel{})
	if err != nil {
		t.Fatal(err)
	}
	s = &Side{T: a, Local: solo{}, N: 1, Me: true, Conn: c, Remote: g}
	_ = a.OnFrame(5, h(Final, 0, 44), []byte{1, 2, 3})
	if v := s.Verdict(Vote(0)); v.Flags&1 != 0 || !v.Union.Has(tIntern) {
		t.Fatalf("verdict after a malformed one: %v", v)
	}
	c.End()
}

// A connector that gives up before its request is accepted withdraws it;
// a later Accept does not take it.
func TestWithdrawnRequest(t *testing.T) {
	f := newFabric()
	a := f.table(t, 0, "job")
	port := a.Open()
	pn, _ := ParsePort(port)
	_ = a.OnFrame(5, Frame{Kind: Request, A: uint64(pn.Port), ID: 7}.Header(), EncodeGroup(grp(5)))
	_ = a.OnFrame(6, Frame{Kind: Final, ID: 7}.Header(), EncodeVerdict(Vote(tPort))) // another process: not a withdrawal
	if n := a.Pending(pn.Port); n != 1 {
		t.Fatalf("%d requests after another process's verdict, want 1", n)
	}
	_ = a.OnFrame(5, Frame{Kind: Final, ID: 7}.Header(), EncodeVerdict(Vote(tPort)))
	if n := a.Pending(pn.Port); n != 0 {
		t.Fatalf("%d requests after the withdrawal, want 0", n)
	}
}

// Sides of several processes: the remote group and the connection id
// reach every process, the AND covers both groups, and a root's failure
// to connect reaches its side as its class.
func TestSides(t *testing.T) {
	f := newFabric()
	a, b := f.table(t, 0, "job"), f.table(t, 1, "job")
	port := a.Open()
	acc, con := connectPair(t, f, a, b, port)
	if acc.err != nil || con.err != nil {
		t.Fatal(acc.err, con.err)
	}
	// Side A: processes 0 (root, rank 1 of the side) and 2; side B: 1
	// (root, rank 0), 3.
	type out struct {
		id    uint64
		g     Group
		words []uint64
		err   error
	}
	run := func(tb *Table, bs *bus, rank, root int, conn *Conn, remote Group, in uint64) out {
		s := &Side{T: tb, Local: member{bs, rank}, N: 2, Root: root, Me: rank == root}
		if s.Me {
			s.Conn, s.Remote = conn, remote
		}
		id, err := s.Share(0)
		if err != nil {
			return out{err: err}
		}
		w := []uint64{in, in << 1}
		err = s.AND(w)
		return out{id, s.Remote, w, err}
	}
	ba, bb := newBus(2), newBus(2)
	inputs := map[string]uint64{"a0": 0b11110, "a2": 0b01111, "b1": 0b11101, "b3": 0b10111}
	res := make(chan out, 4)
	go func() { res <- run(a, ba, 1, 1, acc.c, acc.g, inputs["a0"]) }()
	go func() { res <- run(a, ba, 0, 1, nil, Group{}, inputs["a2"]) }()
	go func() { res <- run(b, bb, 0, 0, con.c, con.g, inputs["b1"]) }()
	go func() { res <- run(b, bb, 1, 0, nil, Group{}, inputs["b3"]) }()
	want := inputs["a0"] & inputs["a2"] & inputs["b1"] & inputs["b3"]
	for range 4 {
		o := within(t, "a side", func() out { return <-res })
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.id != acc.c.ID() || !slices.Equal(o.words, []uint64{want, want << 1}) {
			t.Fatalf("id %d (want %d), words %v (want %v)", o.id, acc.c.ID(), o.words, []uint64{want, want << 1})
		}
		if !slices.Equal(o.g.Procs, []int{1, 3}) && !slices.Equal(o.g.Procs, []int{0, 2}) {
			t.Fatalf("remote group %v", o.g.Procs)
		}
	}
	acc.c.End()
	con.c.End()

	// A root that failed to connect: its side learns its class.
	bs := newBus(3)
	errs := make(chan error, 3)
	for r := range 3 {
		go func() {
			s := &Side{T: a, Local: member{bs, r}, N: 3, Root: 2, Me: r == 2}
			code := 0
			if s.Me {
				code = tPort
			}
			_, err := s.Share(code)
			errs <- err
		}()
	}
	for range 3 {
		err := within(t, "Share", func() error { return <-errs })
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrRemote) || e.Code != tPort {
			t.Fatalf("share of a failed root: %v, want ErrRemote with code %d", err, tPort)
		}
	}
	// A root with no connection and no error is ErrNoConn's class.
	s := &Side{T: a, Local: solo{}, N: 1, Me: true}
	if _, err := s.Share(0); !errors.Is(err, ErrRemote) || err.(*Error).Code != tIntern {
		t.Fatalf("share without a connection: %v", err)
	}
	if v := s.Verdict(Vote(0)); v.Flags != 0 || !v.Union.Has(tIntern) {
		t.Fatalf("verdict without a connection: %v", v)
	}
}

func TestTrace(t *testing.T) {
	f := newFabric()
	a := f.table(t, 4, "job")
	a.Trace("MPI_Comm_connect", "connected to process 2")
	if l := f.log(4); l != "ftmpi-trace: process 4: MPI_Comm_connect: connected to process 2\n" {
		t.Fatalf("trace line %q", l)
	}
}

func TestNewChecksConfig(t *testing.T) {
	f := newFabric()
	for _, cfg := range []Config{
		{Self: 0, Job: "j", Code: testCode},
		{Self: 0, Job: "j", Net: node{f, 0}},
		{Self: -1, Job: "j", Net: node{f, 0}, Code: testCode},
		{Self: 0, Net: node{f, 0}, Code: testCode},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestSpawnKeys(t *testing.T) {
	var p, q Spawns
	k1, k2 := p.Key(7, []int{0, 1}), p.Key(7, []int{0, 1})
	if !strings.HasPrefix(k1, "7/1/2/") || !strings.HasPrefix(k2, "7/2/2/") || k1[len("7/1/"):] != k2[len("7/2/"):] {
		t.Fatalf("keys %q, %q", k1, k2)
	}
	if q.Key(7, []int{0, 1}) != k1 {
		t.Fatal("two parents of one group name its first call differently")
	}
	if k := p.Key(8, []int{0, 1}); !strings.HasPrefix(k, "8/1/") {
		t.Fatalf("another context does not start its own count: %q", k)
	}
	if k := p.Key(7, []int{0, 2}); !strings.HasPrefix(k, "7/1/") || k == k1 {
		t.Fatalf("another group does not start its own count or is named as the first: %q (first %q)", k, k1)
	}
	// The key travels in every parent's request: its size must not grow
	// with the group (a list of ids would be n^2 bytes at the launcher).
	big := make([]int, 100000)
	for i := range big {
		big[i] = i
	}
	if k := p.Key(7, big); len(k) > 40 {
		t.Fatalf("the key of a 100,000-process group is %d bytes, want at most 40", len(k))
	}
}

// A process without a table refuses a request and drops the rest.
func TestUnopened(t *testing.T) {
	f := newFabric()
	b := f.table(t, 1, "job")
	n := node{f, 0}
	port := PortName{Job: "job", Proc: 0, Port: 1}.String()
	ch := make(chan error, 1)
	go func() {
		_, _, err := b.Connect(port, grp(1), Cancel{})
		ch <- err
	}()
	f.await(t, Request, 1) // sent to process 0, which has no table in the fabric
	req := f.frames(Request)[0]
	if err := Unopened(n, 0, 1, req.h, req.body); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "Connect", func() error { return <-ch }); !errors.Is(err, ErrPort) || !strings.Contains(err.Error(), "port 1 of process 0 is not open") {
		t.Fatalf("connect to a process without ports: %v", err)
	}
	if err := Unopened(n, 0, 1, Frame{Kind: Step, ID: 3}.Header(), nil); err != nil {
		t.Fatal(err)
	}
	if err := Unopened(n, 0, 1, transport.Header{Tag: int32(ctl.Port), B: 99}, nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("an undecodable frame: %v", err)
	}
	if len(f.frames(Refuse)) != 1 {
		t.Fatalf("%d refusals, want 1", len(f.frames(Refuse)))
	}
}
