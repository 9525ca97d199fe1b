package launch

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// syncLog is an io.Writer for the launcher's messages that a test can wait on.
type syncLog struct {
	mu    sync.Mutex
	b     bytes.Buffer
	added chan struct{}
}

func newSyncLog() *syncLog { return &syncLog{added: make(chan struct{}, 1)} }

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

// wait waits for a line containing every part.
func (l *syncLog) wait(t *testing.T, parts ...string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		text := l.b.String()
		l.mu.Unlock()
		for _, line := range strings.Split(text, "\n") {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(line, p)
			}
			if ok {
				return
			}
		}
		select {
		case <-l.added:
		case <-deadline:
			t.Fatalf("no launcher message with %q in:\n%s", parts, text)
		}
	}
}

type recConn struct {
	net.Conn
	written []byte
}

func (r *recConn) Write(b []byte) (int, error) {
	r.written = append(r.written, b...)
	return r.Conn.Write(b)
}

func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("unix", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// dialAuth opens an authenticated control connection as process proc.
func dialAuth(t *testing.T, addr string, key *wireauth.Key, proc int) *ctlClient {
	t.Helper()
	nc := dialRaw(t, addr)
	if err := wireauth.Dial(nc, key, wireauth.Hello{Proto: wireauth.ProtoControl, From: uint64(proc), To: wireauth.Launcher}); err != nil {
		t.Fatal(err)
	}
	return &ctlClient{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// closed reports that the launcher closed nc.
func closed(t *testing.T, nc net.Conn) {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(nc); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatal("the launcher did not close the connection")
		}
	}
}

// Control connections without the job's secret (none, a wrong one, a
// replayed handshake) are refused before any request reaches the policy,
// an authenticated one cannot speak for another process, and malformed
// requests close the connection; each with a logged reason. The real
// ranks then go on undisturbed: no fake failure reached them.
func TestControlAuth(t *testing.T) {
	t.Parallel()
	log := newSyncLog()
	h := newHead("job", 2, OnFailureContinue, &output{stdout: io.Discard, stderr: log}, false)
	key, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	h.key = key
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	defer h.close()
	addr := ln.Addr().String()

	c0 := dialAuth(t, addr, key, 0)
	c0.req(ctlwire.Msg{Op: ctlwire.OpHello, Job: "job", Rank: 0})
	if m := c0.next(); m.Op != ctlwire.OpHello {
		t.Fatalf("hello reply %+v", m)
	}

	// No secret: the plain protocol of an older version, faking a failure.
	nc := dialRaw(t, addr)
	nc.Write([]byte(`{"op":"hello","id":1,"job":"job","rank":1}` + "\n" + `{"op":"suspect","id":2,"rank":0}` + "\n"))
	closed(t, nc)
	log.wait(t, "refused a control connection", "bad magic")

	// A wrong secret: the rogue's own side fails; the launcher logs it.
	other, _ := wireauth.New()
	nc = dialRaw(t, addr)
	if err := wireauth.Dial(nc, other, wireauth.Hello{Proto: wireauth.ProtoControl, From: 1, To: wireauth.Launcher}); err == nil {
		t.Fatal("a wrong secret authenticated")
	}
	nc.Close()
	log.wait(t, "refused a control connection", "no proof from the peer claiming 1")

	// A replayed handshake: captured from a valid one, sent again.
	nc = dialRaw(t, addr)
	rc := &recConn{Conn: nc}
	if err := wireauth.Dial(rc, key, wireauth.Hello{Proto: wireauth.ProtoControl, From: 1, To: wireauth.Launcher}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	nc = dialRaw(t, addr)
	nc.Write(rc.written)
	nc.Write([]byte(`{"op":"suspect","id":1,"rank":0}` + "\n"))
	closed(t, nc)
	log.wait(t, "refused a control connection", "wrong MAC")

	// Another protocol's handshake.
	nc = dialRaw(t, addr)
	if err := wireauth.Dial(nc, key, wireauth.Hello{Proto: wireauth.ProtoSock, From: 1, To: 0}); err == nil {
		t.Fatal("a transport handshake opened a control connection")
	}
	log.wait(t, "refused a control connection", "not the control protocol")

	// Authenticated, but speaking for someone else, or malformed.
	for _, bad := range []struct{ line, want string }{
		{`{"op":"hello","id":1,"job":"job","rank":0}`, "hello as process 0 on a connection authenticated as process 1"},
		{`{"op":"bogus","id":1}`, `unknown request "bogus"`},
		{`{"op":"suspect","rank":0}`, "without id"},
		{`{"op":"fence","id":1,"rank":"x"}`, "malformed message"},
		{`{"op":"fence","id":1,"rank":1,"inc":-3}`, "incarnation -3"},
		{strings.Repeat("x", maxRequest+10), "over 1048576 bytes"},
	} {
		c := dialAuth(t, addr, key, 1)
		c.nc.Write([]byte(bad.line + "\n"))
		closed(t, c.nc)
		log.wait(t, "closed the control connection of process 1", bad.want)
	}

	// The real rank 1; both fence: the next message each gets is the
	// fence's reply (a fake failure notice would have come first).
	c1 := dialAuth(t, addr, key, 1)
	c1.req(ctlwire.Msg{Op: ctlwire.OpHello, Job: "job", Rank: 1})
	if m := c1.next(); m.Op != ctlwire.OpHello {
		t.Fatalf("hello reply %+v", m)
	}
	for i, c := range []*ctlClient{c0, c1} {
		c.req(ctlwire.Msg{Op: ctlwire.OpFence, Rank: i, KV: map[string]string{ctlwire.EndpointKey(i): "x"}})
	}
	for _, c := range []*ctlClient{c0, c1} {
		if m := c.next(); m.Op != ctlwire.OpFence || len(m.KV) != 2 {
			t.Fatalf("fence: %+v", m)
		}
	}
}

// FuzzControlRequest decodes arbitrary request lines as the launcher does
// and feeds the ones it accepts to the policy, after a hello of the
// connection: nothing panics.
func FuzzControlRequest(f *testing.F) {
	for _, s := range []string{
		`{"op":"hello","id":1,"job":"j","rank":1}`,
		`{"op":"fence","id":2,"rank":1,"kv":{"ep/1":"{}"}}`,
		`{"op":"suspect","id":3,"rank":0,"inc":0,"reason":"x"}`,
		`{"op":"spawn","id":4,"reason":"{\"Command\":\"x\",\"MaxProcs\":2}"}`,
		`{"op":"rejoin","id":5,"epoch":3,"kv":{}}`,
		`{"op":"reinit","id":6,"kind":"enter"}`,
		`{"op":"abort","id":7,"code":3}`,
		`{"op":"finalize","id":8}`,
		`{"op":"suspect","id":3,"rank":99999999999}`,
		`{"op":"fence","id":2,"rank":1,"kind":"layout","host":"h","cores":2,"kv":{"ep/1":"{}"}}`,
		`{"op":"endpoints","id":9,"procs":[0,1]}`,
		`{"op":"endpoints","id":9,"epoch":2,"procs":[1,5]}`,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodeRequest(line, 1)
		if err != nil {
			return
		}
		pm, err := policy.New(policy.Config{Job: "j", Size: 2, Mode: policy.ModeContinue})
		if err != nil {
			t.Fatal(err)
		}
		pm.EnableSpawn()
		pm.Step(policy.Hello{Conn: 1, ID: 1, Job: "j", Rank: 1})
		pm.Step(requestEvent(2, m))
		pm.Step(requestEvent(1, m))
	})
}

// Malformed lookups (ctlwire.OpEndpoints) are refused with an error that
// says what is wrong, before the policy sees them; well-formed ones for
// processes the job does not have get an error reply from the policy.
func TestDecodeRequestRefusesBadLookups(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"op":"endpoints","id":1,"rank":1}`, "for 0 processes"},
		{`{"op":"endpoints","id":1,"rank":1,"procs":[]}`, "for 0 processes"},
		{`{"op":"endpoints","id":1,"rank":1,"procs":[3,-1]}`, "process -1"},
		{`{"op":"endpoints","id":1,"rank":1,"procs":[1` + strings.Repeat(",1", ctlwire.MaxLookup) + `]}`, "for 4097 processes"},
		{`{"op":"endpoints","id":1,"rank":1,"procs":"x"}`, "malformed"},
		{`{"op":"fence","id":1,"rank":1,"kind":"layout","cores":-3}`, "fence request"},
	} {
		if _, err := decodeRequest([]byte(tc.line), 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.70s: %v, want an error saying %q", tc.line, err, tc.want)
		}
	}
	m, err := decodeRequest([]byte(`{"op":"endpoints","id":4,"rank":1,"procs":[7]}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := policy.New(policy.Config{Job: "j", Size: 2, Mode: policy.ModeContinue})
	if err != nil {
		t.Fatal(err)
	}
	pm.Step(policy.Hello{Conn: 1, ID: 1, Job: "j", Rank: 1})
	acts := pm.Step(requestEvent(1, m))
	if len(acts) != 1 || acts[0].Msg.Op != ctlwire.OpError || !strings.Contains(acts[0].Msg.Error, "process 7 is not one of the job's 2") {
		t.Fatalf("lookup of process 7 of 2: %+v", acts)
	}
}

// Every request a rank sends is one the control server accepts: a request
// kind added elsewhere (the name service's "name") and missing from
// decodeRequest would close the rank's control connection.
func TestDecodeRequestAcceptsEveryRankRequest(t *testing.T) {
	for _, op := range []string{ctlwire.OpHello, ctlwire.OpFence, ctlwire.OpFinalize, ctlwire.OpAbort, ctlwire.OpReinit,
		ctlwire.OpRejoin, ctlwire.OpSpawn, ctlwire.OpSuspect, ctlwire.OpName, ctlwire.OpEndpoints} {
		line := []byte(`{"op":"` + op + `","id":1,"rank":1,"procs":[0]}`)
		if _, err := decodeRequest(line, 1); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
}
