package p2p

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
	"github.com/ftmpi/ftmpi/internal/transport/sock"
)

// rawPeer is rank 1 speaking the socket transport's wire format by hand to
// an engine (rank 0) over a real Unix socket, so that a test can cut the
// connection at an exact byte.
type rawPeer struct {
	t *testing.T
	c net.Conn
}

// cutSetup starts an engine on the socket transport and connects a raw
// peer to it.
func cutSetup(t *testing.T) (*Engine, *rawPeer) {
	t.Helper()
	e := New(Config{Self: 0})
	tr, err := sock.Listen(sock.Config{Self: 0, Host: "h", Mode: sock.ModeUnix, Dir: t.TempDir(), Handler: e})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetPeers([]sock.Peer{tr.Self(), {}})
	e.SetTransport(tr)
	t.Cleanup(func() { tr.Close(); e.Close() })
	c, err := net.Dial("unix", tr.Self().Unix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var hello [12]byte
	binary.LittleEndian.PutUint32(hello[0:], 0x66746d70)
	binary.LittleEndian.PutUint64(hello[4:], 1)
	p := &rawPeer{t: t, c: c}
	p.write(hello[:])
	var reply [1]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil || reply[0] != 1 {
		t.Fatalf("handshake: reply %v, %v", reply, err)
	}
	return e, p
}

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

func (p *rawPeer) header(h transport.Header) {
	p.t.Helper()
	var b [transport.HeaderSize]byte
	h.Encode(b[:])
	p.write(b[:])
}

func (p *rawPeer) readHeader() transport.Header {
	p.t.Helper()
	var b [transport.HeaderSize]byte
	if _, err := io.ReadFull(p.c, b[:]); err != nil {
		p.t.Fatal(err)
	}
	var h transport.Header
	h.Decode(b[:])
	return h
}

// rendezvous announces a message of n bytes and returns the receive id of
// the CTS the engine answers with.
func (p *rawPeer) rendezvous(n int) uint64 {
	p.t.Helper()
	p.header(transport.Header{Kind: KindRTS, DType: uint8(DTByte), Ctx: 7, Src: 1, A: 77, B: uint64(n)})
	cts := p.readHeader()
	if cts.Kind != KindCTS || cts.A != 77 {
		p.t.Fatalf("expected the CTS of send 77, got %+v", cts)
	}
	return cts.B
}

func wantErr(t *testing.T, r *Req, want error) {
	t.Helper()
	st := waitReq(t, r)
	if !errors.Is(st.Err, want) {
		t.Fatalf("receive completed with %v, want %v", st.Err, want)
	}
}

func post(t *testing.T, e *Engine, n int) *Req {
	t.Helper()
	r, err := e.Irecv(7, 1, 1, AnyTag, DTByte, make([]byte, n))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The sender dies inside a frame header: the posted receive fails.
func TestCutMidHeader(t *testing.T) {
	e, p := cutSetup(t)
	r := post(t, e, 1000)
	var b [transport.HeaderSize]byte
	(&transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 7, Src: 1, N: 1000}).Encode(b[:])
	p.write(b[:20])
	p.c.Close()
	wantErr(t, r, ErrPeerLost)
}

// The sender dies inside an eager payload that matched a posted receive.
func TestCutMidEagerPayload(t *testing.T) {
	e, p := cutSetup(t)
	r := post(t, e, 1000)
	p.header(transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 7, Src: 1, N: 1000})
	p.write(make([]byte, 500))
	p.c.Close()
	wantErr(t, r, ErrPeerLost)
}

// The receive is posted while an unexpected eager message is still
// arriving, then the sender dies.
func TestCutMidUnexpectedEagerPayload(t *testing.T) {
	e, p := cutSetup(t)
	p.header(transport.Header{Kind: KindEager, DType: uint8(DTByte), Ctx: 7, Src: 1, N: 1000})
	p.write(make([]byte, 10))
	probe, err := e.Probe(7, 1, 1, AnyTag, nil) // the header arrived
	if err != nil || probe.Bytes != 1000 {
		t.Fatalf("probe: %+v, %v", probe, err)
	}
	r := post(t, e, 1000)
	p.c.Close()
	wantErr(t, r, ErrPeerLost)
}

// The sender dies inside the DATA of a rendezvous, plain and chunked.
func TestCutMidRendezvousData(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		name := "plain"
		if chunked {
			name = "chunked"
		}
		t.Run(name, func(t *testing.T) {
			e, p := cutSetup(t)
			const n = 4 << 20
			r := post(t, e, n)
			id := p.rendezvous(n)
			if chunked {
				p.header(transport.Header{Kind: KindData, Flags: 1 << 13, Ctx: 7, A: id, N: n})
				p.header(transport.Header{Kind: 2, Flags: 1 << 14, N: 1 << 20})
				p.write(make([]byte, 1<<19))
			} else { // a whole frame (a sender chunks every payload over 1 MiB)
				p.header(transport.Header{Kind: KindData, Ctx: 7, A: id, N: 1 << 20})
				p.write(make([]byte, 1<<19))
			}
			p.c.Close()
			wantErr(t, r, ErrPeerLost)
		})
	}
}

// A failure or a revocation that comes while a payload is arriving marks
// the receive; it completes with that error once the transport is done
// with its buffer (here: when the data stops), not with success.
func TestFailureAndRevocationReachInFlightReceives(t *testing.T) {
	for _, how := range []string{"fail", "revoke"} {
		t.Run(how, func(t *testing.T) {
			e, p := cutSetup(t)
			const n = 1 << 20
			r := post(t, e, n)
			id := p.rendezvous(n)
			p.header(transport.Header{Kind: KindData, Ctx: 7, A: id, N: n})
			p.write(make([]byte, 1000))
			waitFlying(t, e, r)
			want := ErrPeerLost
			if how == "fail" {
				e.FailPeer(1, errors.New("declared failed"))
			} else {
				e.Revoke(7)
				want = ErrRevoked
			}
			if r.Done() {
				t.Fatal("receive completed while the transport still writes its buffer")
			}
			p.write(make([]byte, n-1000)) // the payload completes normally
			wantErr(t, r, want)
		})
	}
}

// waitFlying waits until the transport handed r's frame to the engine.
func waitFlying(t *testing.T, e *Engine, r *Req) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.mu.Lock()
		w := r.where
		e.mu.Unlock()
		if w == inFlight {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the DATA frame did not reach the engine within 10s")
		}
		time.Sleep(time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// A revocation that comes while the DATA of a rendezvous send is being
// written marks the send; it completes with ErrRevoked once the transport
// is done with the buffer (here: the receiver's connection breaks), not
// before.
func TestRevocationReachesInFlightSend(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", dir+"/raw.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e := New(Config{Self: 0})
	tr, err := sock.Listen(sock.Config{Self: 0, Host: "h", Mode: sock.ModeUnix, Dir: dir, Handler: e})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetPeers([]sock.Peer{tr.Self(), {Host: "h", Unix: dir + "/raw.sock"}})
	e.SetTransport(tr)
	defer func() { tr.Close(); e.Close() }()

	type started struct {
		r   *Req
		err error
	}
	isend := make(chan started, 1)
	go func() {
		r, err := e.Isend(7, 0, 1, 0, DTByte, make([]byte, 64<<20), false)
		isend <- started{r, err}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var hello [12]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{1}); err != nil { // accept
		t.Fatal(err)
	}
	p := &rawPeer{t: t, c: c}
	rts := p.readHeader()
	if rts.Kind != KindRTS {
		t.Fatalf("expected an RTS, got %+v", rts)
	}
	s := <-isend
	if s.err != nil {
		t.Fatal(s.err)
	}
	p.header(transport.Header{Kind: KindCTS, Ctx: 7, A: rts.A, B: 99})
	waitFlying(t, e, s.r) // the DATA is being written; this peer does not read it
	e.Revoke(7)
	if s.r.Done() {
		t.Fatal("send completed while the transport still reads its buffer")
	}
	c.Close()
	st := waitReq(t, s.r)
	if !errors.Is(st.Err, ErrRevoked) {
		t.Fatalf("send completed with %v, want ErrRevoked", st.Err)
	}
}

// A rendezvous announcement that was queued before its sender died can
// never bring its data: a receive that matches it after the failure fails
// at once (it used to wait in the rendezvous table, which FailPeer had
// already scanned: a hang).
func TestReceiveMatchingAnnouncementOfLostPeerFails(t *testing.T) {
	fab := inproc.NewFabric(2)
	a, b := New(Config{Self: 0}), New(Config{Self: 1})
	ta, tb := fab.Attach(0, a), fab.Attach(1, b)
	a.SetTransport(ta)
	b.SetTransport(tb)
	defer func() { ta.Close(); tb.Close(); a.Close(); b.Close() }()
	if _, err := a.Isend(7, 0, 1, 0, DTByte, make([]byte, 1<<20), false); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Iprobe(7, 0, AnyTag); !ok {
		t.Fatal("the announcement did not arrive")
	}
	fab.Kill(0, errors.New("killed"))
	r, err := b.Irecv(7, 0, 0, AnyTag, DTByte, make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	wantErr(t, r, ErrPeerLost)
}

// A rendezvous announcement of a message above 4 GiB (sizes travel as
// 64-bit values end to end): a probe reports its exact size, a receive
// too small for it is told the exact size in its truncation error and
// its status, and the CTS asks for the message to be dropped.
func TestAnnouncementAbove4GiB(t *testing.T) {
	e, p := cutSetup(t)
	const n = 5<<30 + 3
	p.header(transport.Header{Kind: KindRTS, DType: uint8(DTByte), Ctx: 7, Src: 1, A: 77, B: n})
	abort := make(chan struct{})
	timer := time.AfterFunc(10*time.Second, func() { close(abort) })
	defer timer.Stop()
	st, err := e.Probe(7, 1, 1, AnyTag, abort)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if st.Bytes != n {
		t.Fatalf("probe reports %d bytes, want %d", st.Bytes, n)
	}
	r := post(t, e, 1024)
	cts := p.readHeader()
	if cts.Kind != KindCTS || cts.A != 77 || cts.Flags&flagDiscard == 0 {
		t.Fatalf("expected a discarding CTS for send 77, got %+v", cts)
	}
	p.header(transport.Header{Kind: KindData, Ctx: 7, A: cts.B})
	st = waitReq(t, r)
	if !errors.Is(st.Err, ErrTruncate) || st.Bytes != n || !strings.Contains(st.Err.Error(), "message of 5368709123 bytes") {
		t.Fatalf("status %+v, want a truncation naming %d bytes", st, n)
	}
}
