package sock

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// logBook collects a transport's log lines.
type logBook struct {
	mu    sync.Mutex
	lines []string
	added chan struct{}
}

func newLogBook() *logBook { return &logBook{added: make(chan struct{}, 64)} }

func (l *logBook) log(msg string) {
	l.mu.Lock()
	l.lines = append(l.lines, msg)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
}

// waitLine waits for a line containing every part.
func (l *logBook) waitLine(t *testing.T, parts ...string) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		for _, ln := range l.lines {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(ln, p)
			}
			if ok {
				l.mu.Unlock()
				return ln
			}
		}
		all := strings.Join(l.lines, "\n")
		l.mu.Unlock()
		select {
		case <-l.added:
		case <-deadline:
			t.Fatalf("no log line with %q; log:\n%s", parts, all)
		}
	}
}

func testKey(t testing.TB, b byte) *wireauth.Key {
	k, err := wireauth.FromBytes(bytes.Repeat([]byte{b}, wireauth.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rejecter is a recorder whose Frame refuses kind 99 (as the engine
// refuses a malformed frame).
type rejecter struct {
	*recorder
	payloads chan error
}

func (r *rejecter) Frame(from int, h transport.Header) ([]byte, any) {
	if h.Kind == 99 {
		return nil, &transport.Reject{Err: errors.New("kind 99 is not a frame kind")}
	}
	return r.recorder.Frame(from, h)
}

func (r *rejecter) Payload(from int, h transport.Header, dst []byte, c any, err error) {
	if _, ok := c.(*transport.Reject); ok {
		r.payloads <- err
		return
	}
	r.recorder.Payload(from, h, dst, c, err)
}

// authJob is n transports sharing key (keys[i] overrides for rank i).
func authJob(t *testing.T, mode Mode, keys []*wireauth.Key, scope uint64) ([]*Transport, []*recorder, []*logBook) {
	t.Helper()
	dir := t.TempDir()
	n := len(keys)
	trs := make([]*Transport, n)
	recs := make([]*recorder, n)
	logs := make([]*logBook, n)
	peers := make([]Peer, n)
	for i := range trs {
		recs[i], logs[i] = newRecorder(), newLogBook()
		tr, err := Listen(Config{Self: i, Host: "h", Mode: mode, Dir: dir, Handler: recs[i],
			Auth: keys[i], Scope: scope, Log: logs[i].log, ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
		peers[i] = tr.Self()
	}
	for _, tr := range trs {
		tr.SetPeers(peers)
	}
	return trs, recs, logs
}

func closeAll(trs []*Transport) {
	for _, tr := range trs {
		tr.Close()
	}
}

func TestAuthConnects(t *testing.T) {
	for _, mode := range []Mode{ModeUnix, ModeTCP} {
		k := testKey(t, 1)
		trs, recs, _ := authJob(t, mode, []*wireauth.Key{k, k, k}, 0)
		for from := range trs {
			for to := range trs {
				if from != to {
					if err := trs[from].Send(to, transport.Header{Kind: 1, Seq: uint64(from)}, nil); err != nil {
						t.Fatalf("%s: %d -> %d: %v", mode, from, to, err)
					}
				}
			}
		}
		for to, r := range recs {
			waitFor(t, "frames", func() bool { return r.count((to+1)%3) == 1 && r.count((to+2)%3) == 1 })
		}
		closeAll(trs)
	}
}

// A process with another secret cannot connect: the acceptor refuses its
// proof (one-round-trip handshake, the peer's nonce known) or the dialer
// refuses the acceptor's MAC (three messages, no nonce known), and the
// acceptor logs the connection it refused.
func TestAuthWrongKeyRefused(t *testing.T) {
	for _, mode := range []Mode{ModeUnix, ModeTCP} {
		trs, recs, logs := authJob(t, mode, []*wireauth.Key{testKey(t, 1), testKey(t, 2)}, 0)
		err := trs[1].Send(0, transport.Header{Kind: 1}, nil)
		if err == nil || !strings.Contains(err.Error(), "no answer from the peer") {
			t.Fatalf("%s: send with a wrong key: %v", mode, err)
		}
		logs[0].waitLine(t, "refused a connection", "wrong MAC", "claiming 1")
		if recs[0].count(1) != 0 {
			t.Fatalf("%s: a frame got through", mode)
		}
		closeAll(trs)
	}
	// Without the peer's nonce: the three-message handshake.
	trs, recs, logs := authJob(t, ModeUnix, []*wireauth.Key{testKey(t, 1), testKey(t, 2)}, 0)
	defer closeAll(trs)
	peers := []Peer{trs[0].Self(), trs[1].Self()}
	peers[0].Nonce = ""
	trs[1].SetPeers(peers)
	err := trs[1].Send(0, transport.Header{Kind: 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "wrong MAC") {
		t.Fatalf("three messages, send with a wrong key: %v", err)
	}
	logs[0].waitLine(t, "refused a connection", "no proof from the peer claiming 1")
	if recs[0].count(1) != 0 {
		t.Fatal("a frame got through")
	}
}

// Another epoch's process (scope) cannot connect either.
func TestAuthScope(t *testing.T) {
	k := testKey(t, 1)
	dir := t.TempDir()
	lb := newLogBook()
	a, err := Listen(Config{Self: 0, Host: "h", Mode: ModeUnix, Dir: dir, Handler: newRecorder(), Auth: k, Scope: 2, Log: lb.log})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Listen(Config{Self: 1, Host: "h", Mode: ModeUnix, Dir: dir, Handler: newRecorder(), Auth: k, Scope: 1, Log: newLogBook().log, ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.SetPeers([]Peer{a.Self(), b.Self()})
	if err := b.Send(0, transport.Header{Kind: 1}, nil); err == nil {
		t.Fatal("a connection of epoch 1 reached epoch 2")
	}
	lb.waitLine(t, "scope 1", "this process is in 2")
}

// rogue dials tr (Unix) and returns the raw connection.
func rogue(t *testing.T, tr *Transport) net.Conn {
	t.Helper()
	c, err := net.Dial("unix", tr.Self().Unix)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return c
}

// closedByPeer reports whether the peer closed c (a read gets EOF or a
// reset, not a timeout).
func closedByPeer(t *testing.T, c net.Conn) {
	t.Helper()
	var b [64]byte
	for {
		_, err := c.Read(b[:])
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the connection was not closed")
		}
		return
	}
}

// Stray clients without the secret: the plain hello of an older version,
// garbage, a wrong proof. Each is refused with its reason logged and no
// frame reaches the handler.
func TestAuthRogueClients(t *testing.T) {
	k := testKey(t, 1)
	trs, recs, logs := authJob(t, ModeUnix, []*wireauth.Key{k, k}, 0)
	defer closeAll(trs)

	// Garbage of a hello's size, then a frame.
	c := rogue(t, trs[0])
	junk := bytes.Repeat([]byte{0xab}, wireauth.HelloSize+transport.HeaderSize)
	c.Write(junk)
	closedByPeer(t, c)
	c.Close()
	logs[0].waitLine(t, "refused a connection", "bad magic")

	// A well-formed hello and a forged proof.
	c = rogue(t, trs[0])
	var hb [wireauth.HelloSize]byte
	(&wireauth.Hello{Proto: wireauth.ProtoSock, From: 1, To: 0}).Encode(hb[:])
	c.Write(hb[:])
	var ch [wireauth.ChallengeSize]byte
	if _, err := io.ReadFull(c, ch[:]); err != nil {
		t.Fatal(err)
	}
	c.Write(make([]byte, wireauth.ProofSize))
	closedByPeer(t, c)
	c.Close()
	logs[0].waitLine(t, "refused a connection", "wrong MAC", "claiming 1")

	// Claims out of range: another process's address, a huge id, another protocol.
	for _, hh := range []wireauth.Hello{{Proto: wireauth.ProtoSock, From: 1, To: 5},
		{Proto: wireauth.ProtoSock, From: 1 << 40, To: 0}, {Proto: wireauth.ProtoControl, From: 1, To: 0}} {
		c = rogue(t, trs[0])
		hh.Encode(hb[:])
		c.Write(hb[:])
		closedByPeer(t, c)
		c.Close()
	}
	logs[0].waitLine(t, "addressed to process 5")
	logs[0].waitLine(t, "claims process id 1099511627776")
	logs[0].waitLine(t, "protocol 2 is not the transport's")

	// The real rank 1 still connects.
	if err := trs[1].Send(0, transport.Header{Kind: 1, Seq: 7}, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the real frame", func() bool { return recs[0].count(1) == 1 })
}

// recordingConn keeps what was written to and read from a connection.
type recordingConn struct {
	net.Conn
	mu      sync.Mutex
	written []byte
}

func (r *recordingConn) Write(b []byte) (int, error) {
	r.mu.Lock()
	r.written = append(r.written, b...)
	r.mu.Unlock()
	return r.Conn.Write(b)
}

// A handshake captured on the wire and replayed on a new connection fails.
func TestAuthReplayRefused(t *testing.T) {
	k := testKey(t, 1)
	trs, recs, logs := authJob(t, ModeUnix, []*wireauth.Key{k, k}, 0)
	defer closeAll(trs)
	// Capture a complete valid handshake by rank 1's identity.
	c := rogue(t, trs[0])
	rc := &recordingConn{Conn: c}
	if err := wireauth.Dial(rc, k, wireauth.Hello{Proto: wireauth.ProtoSock, From: 1, To: 0}); err != nil {
		t.Fatal(err)
	}
	var reply [1]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil || reply[0] != replyAccept {
		t.Fatalf("reply %v %v", reply, err)
	}
	c.Close()
	// Replay it to a second transport of the job (rank 1 has no
	// connection there yet).
	c = rogue(t, trs[0])
	c.Write(rc.written)
	closedByPeer(t, c)
	c.Close()
	logs[0].waitLine(t, "wrong MAC", "claiming 1")
	if recs[0].count(1) != 0 {
		t.Fatal("a frame got through")
	}
}

// A client that knows the secret but sends malformed frames: each
// connection is closed with the defect logged, the handler is told the
// peer is lost, nothing panics, and a rejected frame's Payload comes once.
func TestAuthHostileFrames(t *testing.T) {
	k := testKey(t, 1)
	rj := &rejecter{recorder: newRecorder(), payloads: make(chan error, 4)}
	lb := newLogBook()
	dir := t.TempDir()
	tr, err := Listen(Config{Self: 0, Host: "h", Mode: ModeUnix, Dir: dir, Handler: rj, Auth: k, Log: lb.log})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	frame := func(h transport.Header, payload []byte) []byte {
		b := make([]byte, transport.HeaderSize)
		h.Encode(b)
		return append(b, payload...)
	}
	big := transport.Header{Kind: 1, N: chunkSize + 1}
	cases := []struct {
		name string
		wire []byte
		want string
	}{
		{"oversized whole frame", frame(big, nil), "a whole frame of 1048577 bytes"},
		{"unknown flags", frame(transport.Header{Kind: 1, Flags: 0x1000}, nil), "unknown transport flags 0x1000"},
		{"small chunked", frame(transport.Header{Kind: 1, Flags: flagChunked, N: 10}, nil), "a chunked frame of 10 bytes"},
		{"stray chunk", frame(transport.Header{Kind: connChunk, Flags: flagConn, N: 4}, []byte{1, 2, 3, 4}), "outside a chunked payload"},
		{"bad chunk", append(frame(transport.Header{Kind: 1, Flags: flagChunked, N: chunkSize + 8}, nil),
			frame(transport.Header{Kind: 7, Flags: flagConn, N: 16}, make([]byte, 16))...), "a bad chunk (kind 7"},
		{"rejected by the handler", frame(transport.Header{Kind: 99, N: 3}, []byte{1, 2, 3}), "kind 99 is not a frame kind"},
	}
	for i, cs := range cases {
		from := uint64(i + 1)
		c := rogue(t, tr)
		if err := wireauth.Dial(c, k, wireauth.Hello{Proto: wireauth.ProtoSock, From: from, To: 0}); err != nil {
			t.Fatal(err)
		}
		var reply [1]byte
		if _, err := io.ReadFull(c, reply[:]); err != nil || reply[0] != replyAccept {
			t.Fatalf("%s: reply %v %v", cs.name, reply, err)
		}
		// A valid frame first: it is delivered.
		var seq [8]byte
		binary.LittleEndian.PutUint64(seq[:], 5)
		c.Write(frame(transport.Header{Kind: 1, Seq: 5, N: 8}, seq[:]))
		c.Write(cs.wire)
		closedByPeer(t, c)
		c.Close()
		lb.waitLine(t, "closed the connection from process "+string(rune('0'+from)), cs.want)
		select {
		case p := <-rj.lost:
			if p != int(from) {
				t.Fatalf("%s: lost %d", cs.name, p)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: no PeerLost", cs.name)
		}
		if rj.count(int(from)) != 1 {
			t.Fatalf("%s: %d valid frames delivered, want 1", cs.name, rj.count(int(from)))
		}
	}
	select {
	case err := <-rj.payloads:
		if !strings.Contains(err.Error(), "kind 99") {
			t.Fatalf("the rejected frame's Payload: %v", err)
		}
	default:
		t.Fatal("no Payload for the rejected frame")
	}
}

// A one-round-trip handshake captured on the wire and replayed to the same
// listener is refused: its nonce was used.
func TestAuthFastReplayRefused(t *testing.T) {
	k := testKey(t, 1)
	trs, recs, logs := authJob(t, ModeUnix, []*wireauth.Key{k, k}, 0)
	defer closeAll(trs)
	n, err := hex.DecodeString(trs[0].Self().Nonce)
	if err != nil || len(n) != wireauth.NonceSize {
		t.Fatalf("published nonce %q: %v", trs[0].Self().Nonce, err)
	}
	c := rogue(t, trs[0])
	rc := &recordingConn{Conn: c}
	v, err := wireauth.FastDial(rc, k, wireauth.Hello{Proto: wireauth.ProtoSock, From: 1, To: 0}, [wireauth.NonceSize]byte(n))
	if err != nil || v != replyAccept {
		t.Fatalf("verdict %d: %v", v, err)
	}
	c.Close()
	c = rogue(t, trs[0])
	c.Write(rc.written)
	closedByPeer(t, c)
	c.Close()
	logs[0].waitLine(t, "refused a connection", "replayed handshake", "claiming 1")
	if recs[0].count(1) != 0 {
		t.Fatal("a frame got through")
	}
}

// With AuthLater the secret comes after Listen (a bootstrap without a
// launcher learns it in the exchange that publishes the addresses): a
// connection accepted before SetAuth waits for it, then authenticates.
func TestAuthLater(t *testing.T) {
	for _, mode := range []Mode{ModeUnix, ModeTCP} {
		dir := t.TempDir()
		k := testKey(t, 3)
		trs := make([]*Transport, 2)
		recs := make([]*recorder, 2)
		peers := make([]Peer, 2)
		for i := range trs {
			recs[i] = newRecorder()
			tr, err := Listen(Config{Self: i, Host: "h", Mode: mode, Dir: dir, Handler: recs[i], AuthLater: true, ConnectTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			trs[i], peers[i] = tr, tr.Self()
			if peers[i].Nonce == "" {
				t.Fatalf("%s: no nonce published before the secret", mode)
			}
		}
		// Rank 1 knows the secret and sends; rank 0 does not know it yet.
		if err := trs[1].SetAuth(k); err != nil {
			t.Fatal(err)
		}
		trs[1].SetPeers(peers)
		sent := make(chan error, 1)
		go func() { sent <- trs[1].Send(0, transport.Header{Kind: 1, Seq: 7}, nil) }()
		if recs[0].count(1) != 0 {
			t.Fatal("a frame arrived before the secret")
		}
		if err := trs[0].SetAuth(k); err != nil {
			t.Fatal(err)
		}
		if err := trs[0].SetAuth(k); err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("second SetAuth: %v", err)
		}
		trs[0].SetPeers(peers)
		if err := <-sent; err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		waitFor(t, "frame", func() bool { return recs[0].count(1) == 1 })
		closeAll(trs)
	}
}
