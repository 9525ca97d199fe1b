package sock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// feed runs x over the bytes of r as its owners would: each step is a
// polling caller's (process inline) when inline says so, else the reader
// goroutine's; after a caller leaves (pLeave) the reader goroutine takes
// the next step, as the hand-off makes it.
func feed(x *rx, r io.Reader, inline func() bool) error {
	forceReader := false
	for {
		mode := !forceReader && inline != nil && inline()
		forceReader = false
		switch x.process(mode) {
		case pBye:
			return nil
		case pFail:
			return x.err
		case pLeave:
			forceReader = true
			continue
		case pBatch:
			continue
		}
		p := x.target()
		if len(p) == 0 {
			return errors.New("the frame reader has nowhere to read into")
		}
		n, err := r.Read(p)
		if n == 0 && err == nil {
			continue
		}
		x.got(n, err)
	}
}

// logHandler records the receiving events as text, checking the contract
// (one Payload per Frame, after it).
type logHandler struct {
	t    testing.TB
	open map[uint64]bool
	log  []string
}

func (l *logHandler) Frame(from int, h transport.Header) ([]byte, any) {
	if l.open == nil {
		l.open = map[uint64]bool{}
	}
	l.log = append(l.log, fmt.Sprintf("F %d %d %d %d", from, h.Kind, h.Seq, h.N))
	switch {
	case h.Kind == 99:
		return nil, &transport.Reject{Err: errRejected}
	case h.N == 0 || h.N > 1<<22 || h.Kind == 98:
		return nil, nil
	}
	return make([]byte, h.N), h.Seq
}

func (l *logHandler) Payload(from int, h transport.Header, dst []byte, c any, err error) {
	if seq, ok := c.(uint64); ok && seq != h.Seq {
		l.t.Fatalf("cookie %d for frame %d", seq, h.Seq)
	}
	l.log = append(l.log, fmt.Sprintf("P %d %d %d %08x %v", h.Kind, h.Seq, len(dst), crc32.ChecksumIEEE(dst), err != nil))
}

func (l *logHandler) PeerLost(int, error) {}

// stream is a connection's bytes with every kind of frame: bulk and
// urgent whole frames, a chunked payload with urgent frames between its
// chunks, a payload the handler discards, then the goodbye.
func stream(big int) []byte {
	var b []byte
	add := func(h transport.Header, p []byte) { b = append(b, frameBytes(h, p)...) }
	fill := func(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }
	add(transport.Header{Kind: 1, Seq: 1, N: 3}, []byte{1, 2, 3})
	add(transport.Header{Kind: 16, Seq: 2, Flags: transport.FlagUrgent}, nil)
	add(transport.Header{Kind: 1, Seq: 3, N: 5000}, fill(5000, 3))
	add(transport.Header{Kind: 16, Seq: 4, Flags: transport.FlagUrgent, N: 7}, fill(7, 4))
	add(transport.Header{Kind: 1, Seq: 5, N: uint64(directMin + 5)}, fill(directMin+5, 5))
	add(transport.Header{Kind: 98, Seq: 6, N: 100}, fill(100, 6))
	// A chunked payload: two chunks with an urgent frame between them.
	n := chunkSize + uint64(big)
	add(transport.Header{Kind: 1, Seq: 7, Flags: flagChunked, N: n}, nil)
	add(transport.Header{Kind: connChunk, Flags: flagConn, N: chunkSize}, fill(chunkSize, 7))
	add(transport.Header{Kind: 16, Seq: 8, Flags: transport.FlagUrgent, N: 2}, []byte{8, 8})
	add(transport.Header{Kind: connChunk, Flags: flagConn, N: uint64(big)}, fill(big, 9))
	for i := 0; i < 20; i++ { // more than a caller's batch
		add(transport.Header{Kind: 1, Seq: uint64(10 + i), N: 1}, []byte{byte(i)})
	}
	add(transport.Header{Kind: connBye, Flags: flagConn}, nil)
	return b
}

// chunky reads at most a random few bytes at a time.
type chunky struct {
	b   []byte
	rng *rand.Rand
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := 1 + c.rng.Intn(3*transport.HeaderSize) // pieces of headers
	switch c.rng.Intn(8) {
	case 0:
		n = len(c.b) // sometimes all there is
	case 1, 2, 3:
		n = 1 + c.rng.Intn(16<<10)
	}
	n = min(n, len(p), len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// events is the log of the reader goroutine alone over data (the reference).
func events(t testing.TB, data []byte) ([]string, error) {
	hd := &logHandler{t: t}
	tr := &Transport{cfg: Config{Handler: hd}}
	err := feed(newRx(tr, 1), bytes.NewReader(data), nil)
	return hd.log, err
}

// Whatever the points where the read side passes between polling callers
// and the reader goroutine, and however the bytes arrive, the handler sees
// the same frames, payloads and end as with the reader goroutine alone
// (thousands of seeded schedules; a failure names its seed).
func TestHandOffAnyPointSameFrames(t *testing.T) {
	cases := map[string][]byte{"all kinds": stream(100)}
	// Ends inside frames: a cut stream, a rejected frame, a malformed one.
	full := stream(1)
	for _, cut := range []int{5, transport.HeaderSize + 2, 3*transport.HeaderSize + 3 + 1000, len(full) - 100} {
		cases["cut at "+strconv.Itoa(cut)] = full[:cut]
	}
	cases["rejected"] = append(frameBytes(transport.Header{Kind: 1, Seq: 1, N: 4}, []byte{1, 2, 3, 4}),
		frameBytes(transport.Header{Kind: 99, Seq: 2, N: 10}, make([]byte, 10))...)
	cases["bad flags"] = append(frameBytes(transport.Header{Kind: 1, Seq: 1, N: 4}, []byte{1, 2, 3, 4}),
		frameBytes(transport.Header{Kind: 1, Seq: 2, Flags: 1 << 12}, nil)...)
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for name, data := range cases {
		want, werr := events(t, data)
		for seed := int64(0); seed < int64(seeds); seed++ {
			rng := rand.New(rand.NewSource(seed))
			hd := &logHandler{t: t}
			tr := &Transport{cfg: Config{Handler: hd}}
			bias := rng.Intn(5)
			err := feed(newRx(tr, 1), &chunky{b: data, rng: rng}, func() bool { return rng.Intn(5) < bias })
			if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
				t.Fatalf("%s, seed %d: ended with %v, the reader alone with %v", name, seed, err, werr)
			}
			if strings.Join(hd.log, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s, seed %d: events differ from the reader alone's:\n%s\nwant:\n%s", name, seed, short(hd.log), short(want))
			}
		}
	}
}

func short(log []string) string {
	var b strings.Builder
	for _, l := range log {
		if len(l) > 80 {
			l = l[:80] + "..."
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// FuzzHandOff reads an arbitrary stream with the read side passing between
// callers and the reader goroutine at points drawn from the input: the
// same events as the reader goroutine alone, and no panic.
func FuzzHandOff(f *testing.F) {
	f.Add(int64(1), stream(10))
	f.Add(int64(2), frameBytes(transport.Header{Kind: 1, N: 3}, []byte{1, 2, 3}))
	f.Add(int64(3), frameBytes(transport.Header{Kind: 99, N: 1 << 40}, nil))
	f.Fuzz(func(t *testing.T, seed int64, data []byte) {
		want, werr := events(t, data)
		rng := rand.New(rand.NewSource(seed))
		hd := &logHandler{t: t}
		tr := &Transport{cfg: Config{Handler: hd}}
		err := feed(newRx(tr, 1), &chunky{b: data, rng: rng}, func() bool { return rng.Intn(2) == 0 })
		if (err == nil) != (werr == nil) || strings.Join(hd.log, "\n") != strings.Join(want, "\n") {
			t.Fatalf("hand-offs changed what was received: %v vs %v", err, werr)
		}
	})
}

// ---- over real sockets

// gid is the calling goroutine's id.
func gid() uint64 {
	var b [64]byte
	s := strings.TrimPrefix(string(b[:runtime.Stack(b[:], false)]), "goroutine ")
	id, _ := strconv.ParseUint(s[:strings.IndexByte(s, ' ')], 10, 64)
	return id
}

// event is one handler call, with the goroutine that made it.
type event struct {
	payload bool
	h       transport.Header
	data    []byte
	err     error
	g       uint64
}

// tapHandler records handler calls with their goroutines.
type tapHandler struct {
	mu     sync.Mutex
	events []event
	lost   []error
	change chan struct{} // a token after every call
}

func newTap() *tapHandler { return &tapHandler{change: make(chan struct{}, 1)} }

func (h *tapHandler) add(e event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
	select {
	case h.change <- struct{}{}:
	default:
	}
}

func (h *tapHandler) Frame(from int, hd transport.Header) ([]byte, any) {
	h.add(event{h: hd, g: gid()})
	if hd.N == 0 {
		return nil, nil
	}
	return make([]byte, hd.N), nil
}

func (h *tapHandler) Payload(from int, hd transport.Header, dst []byte, _ any, err error) {
	h.add(event{payload: true, h: hd, data: append([]byte(nil), dst...), err: err, g: gid()})
}

func (h *tapHandler) PeerLost(peer int, err error) {
	h.mu.Lock()
	h.lost = append(h.lost, err)
	h.mu.Unlock()
	select {
	case h.change <- struct{}{}:
	default:
	}
}

func (h *tapHandler) snapshot() ([]event, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]event(nil), h.events...), append([]error(nil), h.lost...)
}

// cond is a PollUntil condition over the tap's events.
type cond struct {
	h       *tapHandler
	started chan struct{} // closed at the second Done (the caller polls: counted in Transport.polling)
	calls   int
	f       func(ev []event, lost []error) bool
}

func (c *cond) Done() bool {
	if c.calls++; c.calls == 2 {
		close(c.started)
	}
	ev, lost := c.h.snapshot()
	return c.f(ev, lost)
}

// waitTap waits until f holds of the tap's events (20 s at most).
func waitTap(t *testing.T, h *tapHandler, what string, f func([]event, []error) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		if f(h.snapshot()) {
			return
		}
		select {
		case <-h.change:
		case <-deadline.C:
			ev, lost := h.snapshot()
			t.Fatalf("timed out waiting for %s; events %v, lost %v", what, ev, lost)
		}
	}
}

// rawPeer is a transport listening on TCP with tap as handler and a raw
// connection to it that says the plain hello as process 1.
func rawPeer(t *testing.T, h transport.Handler) (*Transport, *net.TCPConn) {
	t.Helper()
	return rawPeerLog(t, h, nil)
}

// rawPeerLog is rawPeer with the transport's log going to log.
func rawPeerLog(t *testing.T, h transport.Handler, log func(string)) (*Transport, *net.TCPConn) {
	t.Helper()
	tr, err := Listen(Config{Self: 0, Host: "h", Mode: ModeTCP, Handler: h, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	c := dialPlain(t, tr, 1)
	idle(t, tr)
	return tr, c
}

// idle waits until tr's one connection is registered for callers and its
// reader goroutine waits for bytes without owning it.
func idle(t *testing.T, tr *Transport) { idleN(t, tr, 1) }

// idleN is idle for n connections.
func idleN(t *testing.T, tr *Transport, n int) {
	t.Helper()
	waitFor(t, "the readers to wait", func() bool {
		p := tr.rxs.Load()
		if p == nil || len(*p) != n {
			return false
		}
		for _, x := range *p {
			if x.waiting.Load() != 1 || x.own.Load() != ownFree {
				return false
			}
		}
		return true
	})
}

// dialPlain connects to tr over TCP with the plain hello of process from.
func dialPlain(t *testing.T, tr *Transport, from int) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", tr.Self().TCP)
	if err != nil {
		t.Fatal(err)
	}
	var hello [helloSize]byte
	binary.LittleEndian.PutUint32(hello[0:], helloMagic)
	binary.LittleEndian.PutUint64(hello[4:], uint64(from))
	c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write(hello[:]); err != nil {
		t.Fatal(err)
	}
	var reply [1]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil || reply[0] != replyAccept {
		t.Fatalf("handshake: %v %v", reply, err)
	}
	return c.(*net.TCPConn)
}

func frames(ev []event, payload bool) []event {
	var out []event
	for _, e := range ev {
		if e.payload == payload {
			out = append(out, e)
		}
	}
	return out
}

// poll runs PollUntil(f) in its own goroutine (budget 20 s) and returns
// its goroutine id once it polls, and a channel closed when it returns.
func poll(tr *Transport, h *tapHandler, f func([]event, []error) bool) (uint64, chan struct{}) {
	c := &cond{h: h, started: make(chan struct{}), f: f}
	var g atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Store(gid())
		tr.PollUntil(c, 20*time.Second)
	}()
	select {
	case <-c.started:
	case <-done:
	}
	return g.Load(), done
}

// A caller polls five connections in turn (the one that last gave it
// frames, and one other per round): frames from every peer, in rounds
// where each time another peer sends, are all delivered by the caller.
func TestPollEveryPeerInTurn(t *testing.T) {
	h := newTap()
	tr, err := Listen(Config{Self: 0, Host: "h", Mode: ModeTCP, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	const peers = 5
	var cs []*net.TCPConn
	for p := 1; p <= peers; p++ {
		c := dialPlain(t, tr, p)
		defer c.Close()
		cs = append(cs, c)
	}
	idleN(t, tr, peers)
	for round := 0; round < 3*peers; round++ {
		want := round + 1
		g, done := poll(tr, h, func(ev []event, _ []error) bool { return len(frames(ev, true)) == want })
		cs[(round*3)%peers].Write(frameBytes(transport.Header{Kind: 1, Seq: uint64(round), N: 1}, []byte{byte(round)}))
		within(t, "the poll", done)
		ev, _ := h.snapshot()
		p := frames(ev, true)
		if last := p[len(p)-1]; last.h.Seq != uint64(round) || last.g != g {
			t.Fatalf("round %d: payload %+v, caller %d", round, last, g)
		}
		idleN(t, tr, peers)
	}
}

// A frame split between a polling caller and the reader goroutine: the
// caller announces it and reads the first bytes, then stops polling; the
// reader goroutine reads the rest and ends it, once.
func TestPollCallerStartsReaderFinishes(t *testing.T) {
	h := newTap()
	tr, c := rawPeer(t, h)
	defer tr.Close()
	defer c.Close()
	payload := bytes.Repeat([]byte{0xab}, 100)
	wire := frameBytes(transport.Header{Kind: 1, Seq: 1, N: 100}, payload)
	g, done := poll(tr, h, func(ev []event, _ []error) bool { return len(ev) > 0 })
	c.Write(wire[:transport.HeaderSize+40])
	within(t, "the poll", done)
	c.Write(wire[transport.HeaderSize+40:])
	waitTap(t, h, "the payload", func(ev []event, _ []error) bool { return len(frames(ev, true)) == 1 })
	ev, lost := h.snapshot()
	if len(ev) != 2 || len(lost) != 0 {
		t.Fatalf("events %v, lost %v", ev, lost)
	}
	if ev[0].g != g {
		t.Errorf("the frame was announced by goroutine %d, not by the polling caller %d", ev[0].g, g)
	}
	if ev[1].g == g || ev[1].err != nil || !bytes.Equal(ev[1].data, payload) {
		t.Errorf("payload by goroutine %d (caller %d), error %v, %d bytes", ev[1].g, g, ev[1].err, len(ev[1].data))
	}
}

// The reverse: the reader goroutine announces a frame and reads part of
// it; a caller that starts polling then reads the rest and ends it.
func TestPollReaderStartsCallerFinishes(t *testing.T) {
	h := newTap()
	tr, c := rawPeer(t, h)
	defer tr.Close()
	defer c.Close()
	payload := bytes.Repeat([]byte{0xcd}, 100)
	wire := frameBytes(transport.Header{Kind: 1, Seq: 1, N: 100}, payload)
	c.Write(wire[:transport.HeaderSize+40])
	waitTap(t, h, "the frame", func(ev []event, _ []error) bool { return len(ev) == 1 })
	idle(t, tr) // inside the frame
	g, done := poll(tr, h, func(ev []event, _ []error) bool { return len(frames(ev, true)) == 1 })
	c.Write(wire[transport.HeaderSize+40:])
	within(t, "the poll", done)
	ev, _ := h.snapshot()
	if len(ev) != 2 || ev[0].g == g || ev[1].g != g || ev[1].err != nil || !bytes.Equal(ev[1].data, payload) {
		t.Fatalf("events %+v, caller %d", ev, g)
	}
}

// A caller polling meets an urgent frame between bulk ones: it delivers
// the bulk frames, the reader goroutine the urgent one, in order.
func TestPollLeavesUrgentToReader(t *testing.T) {
	h := newTap()
	tr, c := rawPeer(t, h)
	defer tr.Close()
	defer c.Close()
	var wire []byte
	wire = append(wire, frameBytes(transport.Header{Kind: 1, Seq: 1, N: 1}, []byte{1})...)
	wire = append(wire, frameBytes(transport.Header{Kind: 16, Seq: 2, Flags: transport.FlagUrgent, N: 1}, []byte{2})...)
	wire = append(wire, frameBytes(transport.Header{Kind: 1, Seq: 3, N: 1}, []byte{3})...)
	g, done := poll(tr, h, func(ev []event, _ []error) bool { return len(frames(ev, true)) == 3 })
	c.Write(wire)
	within(t, "the poll", done)
	ev, _ := h.snapshot()
	p := frames(ev, true)
	for i, e := range p {
		if e.h.Seq != uint64(i+1) || e.err != nil {
			t.Fatalf("payloads %+v", p)
		}
	}
	if p[0].g != g {
		t.Errorf("the first bulk frame was not delivered by the polling caller")
	}
	if p[1].g == g {
		t.Errorf("the urgent frame was delivered by the polling caller")
	}
	if p[1].h.Flags != 0 {
		t.Errorf("the handler saw transport flags %#x", p[1].h.Flags)
	}
}

// The peer dies inside a frame while a caller polls: the frame ends with
// an error, once, the peer is reported lost, once, and the caller's wait
// ends (the reader goroutine, handed the end, reports both).
func TestPollPeerDiesMidFrame(t *testing.T) {
	h := newTap()
	tr, c := rawPeer(t, h)
	defer tr.Close()
	wire := frameBytes(transport.Header{Kind: 1, Seq: 1, N: 100}, make([]byte, 100))
	g, done := poll(tr, h, func(ev []event, lost []error) bool { return len(lost) > 0 })
	c.Write(wire[:transport.HeaderSize+10])
	waitTap(t, h, "the frame", func(ev []event, _ []error) bool { return len(ev) == 1 })
	c.SetLinger(0) // a reset, as when the peer's host goes
	c.Close()
	within(t, "the poll", done)
	ev, lost := h.snapshot()
	if len(ev) != 2 || ev[0].g != g || !ev[1].payload || ev[1].err == nil || ev[1].g == g {
		t.Fatalf("events %+v (caller %d)", ev, g)
	}
	if len(lost) != 1 {
		t.Fatalf("peer lost %d times: %v", len(lost), lost)
	}
}

// Goodbye-less end between frames while a caller polls: reported lost by
// the reader goroutine, the caller's wait ends.
func TestPollPeerClosesBetweenFrames(t *testing.T) {
	h := newTap()
	tr, c := rawPeer(t, h)
	defer tr.Close()
	_, done := poll(tr, h, func(ev []event, lost []error) bool { return len(lost) > 0 })
	c.Write(frameBytes(transport.Header{Kind: 1, Seq: 1, N: 1}, []byte{1}))
	waitTap(t, h, "the frame", func(ev []event, _ []error) bool { return len(ev) == 2 })
	c.Close()
	within(t, "the poll", done)
	_, lost := h.snapshot()
	if len(lost) != 1 || !strings.Contains(lost[0].Error(), "closed without goodbye") {
		t.Fatalf("lost %v", lost)
	}
}

// A malformed frame met by a polling caller closes the connection with
// the reason logged and the peer reported lost once, by the reader
// goroutine; the frames before it are delivered.
func TestPollHostileFrame(t *testing.T) {
	h := newTap()
	lb := newLogBook()
	tr, c := rawPeerLog(t, h, lb.log)
	defer tr.Close()
	defer c.Close()
	g, done := poll(tr, h, func(ev []event, lost []error) bool { return len(lost) > 0 })
	wire := frameBytes(transport.Header{Kind: 1, Seq: 1, N: 2}, []byte{1, 2})
	wire = append(wire, frameBytes(transport.Header{Kind: 1, Seq: 2, Flags: 1 << 12}, nil)...)
	c.Write(wire)
	within(t, "the poll", done)
	lb.waitLine(t, "closed the connection from process 1", "unknown transport flags")
	closedByPeer(t, c)
	ev, lost := h.snapshot()
	if len(ev) != 2 || ev[1].h.Seq != 1 || ev[1].err != nil || ev[1].g != g || len(lost) != 1 {
		t.Fatalf("events %+v, lost %v (caller %d)", ev, lost, g)
	}
}

// Close while callers poll a busy connection: Close returns (the reader
// goroutines end although callers keep taking their connections), the
// callers' waits end, and nothing is left running.
func TestPollWhileClosing(t *testing.T) {
	h := newTap()
	tr, c := rawPeer(t, h)
	defer c.Close()
	var polls sync.WaitGroup
	for i := 0; i < 3; i++ {
		polls.Add(1)
		go func() {
			defer polls.Done()
			tr.PollUntil(&cond{h: h, started: make(chan struct{}), f: func([]event, []error) bool { return false }}, 300*time.Millisecond)
		}()
	}
	go func() { // keeps the connection busy with bulk frames
		for k := 0; ; k++ {
			if _, err := c.Write(frameBytes(transport.Header{Kind: 1, Seq: uint64(k), N: 3}, []byte{1, 2, 3})); err != nil {
				return
			}
		}
	}()
	waitTap(t, h, "frames", func(ev []event, _ []error) bool { return len(ev) > 100 })
	closed := make(chan struct{})
	go func() {
		tr.Close()
		close(closed)
	}()
	within(t, "Close", closed)
	polled := make(chan struct{})
	go func() {
		polls.Wait()
		close(polled)
	}()
	within(t, "the polls", polled)
	c.Close()
}

// seqHandler counts frames per sender and checks they come in order, each
// once, with their payload.
type seqHandler struct {
	mu    sync.Mutex
	next  map[int]uint64
	bad   error
	lost  int
	ready chan struct{}
}

func (s *seqHandler) Frame(from int, h transport.Header) ([]byte, any) {
	if h.N == 0 {
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func (s *seqHandler) Payload(from int, h transport.Header, dst []byte, _ any, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil:
		s.bad = err
	case h.Seq != s.next[from]:
		s.bad = fmt.Errorf("from %d: frame %d, expected %d", from, h.Seq, s.next[from])
	case len(dst) >= 8 && binary.LittleEndian.Uint64(dst) != h.Seq || len(dst) > 8 && dst[len(dst)-1] != byte(h.Seq):
		s.bad = fmt.Errorf("from %d: frame %d has a wrong payload", from, h.Seq)
	}
	s.next[from]++
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

func (s *seqHandler) PeerLost(int, error) {
	s.mu.Lock()
	s.lost++
	s.mu.Unlock()
}

func (s *seqHandler) got(from int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next[from]
}

type countDone struct {
	s    *seqHandler
	from int
	n    uint64
}

func (c countDone) Done() bool { return c.s.got(c.from) >= c.n }

// Many goroutines wait at once, each polling for the frames of its own
// sender while the senders send bulk frames of every size (chunked ones
// too) and urgent ones: every frame arrives once and in order, and no
// wait hangs (each polls with short budgets and parks between them).
func TestPollManyWaiters(t *testing.T) {
	const senders, per = 4, 300
	s := &seqHandler{next: map[int]uint64{}, ready: make(chan struct{}, 1)}
	hs := []transport.Handler{s}
	for i := 0; i < senders; i++ {
		hs = append(hs, newRecorder())
	}
	trs := jobTCP(t, 10*time.Microsecond, hs...)
	defer closeAll(trs)
	var wg sync.WaitGroup
	errs := make(chan error, 4*senders)
	for from := 1; from <= senders; from++ {
		wg.Add(2)
		go func() { // the sender
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(from)))
			for k := 0; k < per; k++ {
				size := []int{0, 1, 8, 100, 5000, 70000, chunkSize + 1000}[rng.Intn(7)]
				if size > chunkSize && rng.Intn(10) != 0 {
					size = 9
				}
				p := make([]byte, size)
				if size >= 8 {
					binary.LittleEndian.PutUint64(p, uint64(k))
				}
				if size > 8 {
					p[size-1] = byte(k)
				}
				h := transport.Header{Kind: 1, Seq: uint64(k)}
				if size < 100 && rng.Intn(4) == 0 {
					h.Flags = transport.FlagUrgent
				}
				if err := trs[from].Send(0, h, p); err != nil {
					errs <- err
					return
				}
			}
		}()
		go func() { // the waiters for this sender: two goroutines taking turns
			defer wg.Done()
			var inner sync.WaitGroup
			for w := 0; w < 2; w++ {
				inner.Add(1)
				go func() {
					defer inner.Done()
					deadline := time.Now().Add(30 * time.Second)
					for k := uint64(w); k < per; k += 2 {
						c := countDone{s: s, from: from, n: k + 1}
						for !trs[0].PollUntil(c, time.Duration(k%50)*time.Microsecond) {
							if time.Now().After(deadline) {
								errs <- fmt.Errorf("waiter for %d: frame %d never came (%d did)", from, k, s.got(from))
								return
							}
							select { // parked, as a request's wait is, until a frame is delivered
							case <-s.ready:
							case <-time.After(time.Millisecond):
							}
						}
					}
				}()
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad != nil {
		t.Fatal(s.bad)
	}
	if s.lost != 0 {
		t.Fatalf("%d peers lost", s.lost)
	}
}

// Ping-pong where the receiver polls with budgets from nothing to a few
// microseconds and else parks until the frame is delivered: a wake-up
// lost between a caller and the reader goroutine leaves a frame unread and
// the test times out.
func TestPollNoLostWakeUp(t *testing.T) {
	a, b := &pingHandler{got: make(chan uint64, 1)}, &pingHandler{got: make(chan uint64, 1)}
	trs := pairTCP(t, a, b)
	defer closeAll(trs)
	n := 3000
	if testing.Short() {
		n = 500
	}
	go func() {
		for i := 0; i < n; i++ {
			select {
			case k := <-b.got:
				trs[1].Send(0, transport.Header{Kind: 1, Seq: k}, nil)
			case <-time.After(20 * time.Second):
				return
			}
		}
	}()
	for i := 0; i < n; i++ {
		if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: uint64(i)}, nil); err != nil {
			t.Fatal(err)
		}
		c := &chanDone{ch: a.got}
		trs[0].PollUntil(c, time.Duration(i%7)*time.Microsecond)
		if !c.done {
			select {
			case <-a.got:
			case <-time.After(20 * time.Second):
				t.Fatalf("round %d: the answer never came", i)
			}
		}
	}
}

type pingHandler struct{ got chan uint64 }

func (p *pingHandler) Frame(int, transport.Header) ([]byte, any) { return nil, nil }
func (p *pingHandler) Payload(_ int, h transport.Header, _ []byte, _ any, err error) {
	if err == nil {
		p.got <- h.Seq
	}
}
func (p *pingHandler) PeerLost(int, error) {}

// chanDone is done once a value came on ch (taken by Done).
type chanDone struct {
	ch   chan uint64
	done bool
}

func (c *chanDone) Done() bool {
	if !c.done {
		select {
		case <-c.ch:
			c.done = true
		default:
		}
	}
	return c.done
}

func pairTCP(t *testing.T, hs ...transport.Handler) []*Transport {
	t.Helper()
	return jobTCP(t, 5*time.Microsecond, hs...)
}

// jobTCP starts a TCP transport per handler, each knowing the others,
// whose reader goroutines spin for spin.
func jobTCP(t *testing.T, spin time.Duration, hs ...transport.Handler) []*Transport {
	t.Helper()
	trs := make([]*Transport, len(hs))
	peers := make([]Peer, len(hs))
	for i, h := range hs {
		tr, err := Listen(Config{Self: i, Host: "h", Mode: ModeTCP, Handler: h,
			SpinFn: func() time.Duration { return spin }})
		if err != nil {
			t.Fatal(err)
		}
		trs[i], peers[i] = tr, tr.Self()
	}
	for _, tr := range trs {
		tr.SetPeers(peers)
	}
	return trs
}

// A round trip of small frames received by polling callers allocates
// nothing (the reader goroutine's waits and the hand-offs are not on this
// path).
func TestPollRoundTripAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	a, b := &pingHandler{got: make(chan uint64, 1)}, &pingHandler{got: make(chan uint64, 1)}
	trs := pairTCP(t, a, b)
	defer closeAll(trs)
	ca, cb := &chanDone{ch: a.got}, &chanDone{ch: b.got}
	round := func() {
		ca.done, cb.done = false, false
		if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
			t.Fatal(err)
		}
		for !trs[1].PollUntil(cb, time.Second) {
		}
		if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: 2}, nil); err != nil {
			t.Fatal(err)
		}
		for !trs[0].PollUntil(ca, time.Second) {
		}
	}
	for i := 0; i < 100; i++ { // connect, warm up
		round()
	}
	if n := testing.AllocsPerRun(500, round); n != 0 {
		t.Fatalf("%.1f allocations per round trip", n)
	}
}

// raceEnabled is set when the tests run under -race.
var raceEnabled bool

// BenchmarkPingPong is a round trip of 1-byte frames over loopback TCP,
// each side receiving by polling (PollUntil) or through its reader
// goroutine (waiting on the handler's channel).
func BenchmarkPingPong(b *testing.B) {
	for _, mode := range []string{"poll", "reader"} {
		b.Run(mode, func(b *testing.B) {
			a, c := &pingHandler{got: make(chan uint64, 1)}, &pingHandler{got: make(chan uint64, 1)}
			trs := make([]*Transport, 2)
			peers := make([]Peer, 2)
			for i, h := range []transport.Handler{a, c} {
				tr, err := Listen(Config{Self: i, Host: "h", Mode: ModeTCP, Handler: h,
					SpinFn: func() time.Duration { return 50 * time.Microsecond }})
				if err != nil {
					b.Fatal(err)
				}
				trs[i], peers[i] = tr, tr.Self()
			}
			for _, tr := range trs {
				tr.SetPeers(peers)
			}
			defer closeAll(trs)
			one := []byte{1}
			wait := func(tr *Transport, h *pingHandler) {
				if mode == "poll" {
					cd := &chanDone{ch: h.got}
					if tr.PollUntil(cd, 50*time.Microsecond) {
						return
					}
				}
				<-h.got
			}
			stop, echoed := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(echoed)
				for {
					select {
					case <-stop:
						return
					default:
					}
					wait(trs[1], c)
					trs[1].Send(0, transport.Header{Kind: 1}, one)
				}
			}()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				trs[0].Send(1, transport.Header{Kind: 1}, one)
				wait(trs[0], a)
			}
			b.StopTimer()
			close(stop)
			trs[0].Send(1, transport.Header{Kind: 1}, one) // let the echo goroutine see stop
			<-echoed
		})
	}
}

// The last look of PollUntil holds a connection while no caller polls.
// Bytes that come after its last read wake the reader goroutine, which
// cannot take the connection (the caller holds it) and waits again: the
// caller must read them once it lets go, or they stay unread until more
// bytes come (a receive that never completes). The hooks put the frame's
// arrival exactly there.
func TestPollLastLookReadsWhatWokeTheReader(t *testing.T) {
	var armed, sent, left atomic.Bool
	var target atomic.Pointer[rx]
	var sender atomic.Pointer[Transport]
	leftCh := make(chan struct{})
	testHookRetakeLeft = func(x *rx) {
		if x == target.Load() && armed.Load() && left.CompareAndSwap(false, true) {
			close(leftCh)
		}
	}
	testHookPollEmpty = func(x *rx) {
		if x != target.Load() || x.t.polling.Load() != 0 || !armed.Load() || !sent.CompareAndSwap(false, true) {
			return
		}
		if err := sender.Load().Send(0, transport.Header{Kind: 1, Seq: 7}, nil); err != nil {
			t.Error(err)
		}
		select {
		case <-leftCh: // the reader goroutine was woken and left the bytes to this caller
		case <-time.After(10 * time.Second):
			t.Error("the reader goroutine was not woken by the frame")
		}
	}
	defer func() { testHookRetakeLeft, testHookPollEmpty = nil, nil }()

	a, b := &pingHandler{got: make(chan uint64, 4)}, &pingHandler{got: make(chan uint64, 4)}
	trs := pairTCP(t, a, b)
	defer closeAll(trs)
	sender.Store(trs[1])
	// Connect both ways.
	if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
		t.Fatal(err)
	}
	waitSeq(t, b.got, 1)
	if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: 2}, nil); err != nil {
		t.Fatal(err)
	}
	waitSeq(t, a.got, 2)
	// Every connection of rank 0 idle, its reader goroutine waiting
	// without owning it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		idle := true
		if p := trs[0].rxs.Load(); p != nil {
			for _, x := range *p {
				if x.waiting.Load() == 0 || x.own.Load() != ownFree {
					idle = false
				}
			}
		}
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rank 0's reader goroutines never let go of their connections")
		}
		runtime.Gosched()
	}
	for _, x := range *trs[0].rxs.Load() {
		if x.peer == 1 {
			target.Store(x)
		}
	}
	x := target.Load()
	if x == nil {
		t.Fatal("no connection from rank 1")
	}
	// What the last look does with a marked connection (lookAgain), with
	// no caller polling.
	armed.Store(true)
	if !x.callerTake() {
		t.Fatal("the idle connection could not be taken")
	}
	x.poll()
	if !left.Load() {
		t.Fatal("the reader goroutine never left the frame to the caller")
	}
	waitSeq(t, a.got, 7)
}

func waitSeq(t *testing.T, ch chan uint64, want uint64) {
	t.Helper()
	select {
	case k := <-ch:
		if k != want {
			t.Fatalf("got frame %d, want %d", k, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("frame %d never came", want)
	}
}
