package boot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// With the job's secret, a rank proves it to the launcher before its
// hello, and accepts event datagrams only when the launcher sealed them:
// a forged failure notice sent to its event socket is dropped, and the
// sealed one sent after it is the first event delivered.
func TestClientAuth(t *testing.T) {
	logs := &lockedBuffer{}
	logOut = logs
	defer func() { logOut = os.Stderr }()
	key, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	f, info := newFake(t)
	info.TmpDir = t.TempDir()
	info.Auth = key
	ch := connect(info)
	var conn net.Conn
	select {
	case conn = <-f.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	h, err := wireauth.Accept(conn, conn, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.From != 1 || h.To != wireauth.Launcher || h.Proto != wireauth.ProtoControl {
		t.Fatalf("hello %+v", h)
	}
	r := bufio.NewReader(conn)
	hello := read(t, r)
	json.NewEncoder(conn).Encode(ctlwire.Msg{Op: ctlwire.OpHello, ID: hello.ID})
	res := <-ch
	if res.err != nil {
		t.Fatal(res.err)
	}
	c := res.c
	defer c.Close()
	dc, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: hello.KV[HelloEventAddr], Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	forged, _ := json.Marshal(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 2, Reason: "forged"})
	other, _ := wireauth.New()
	// A flood of forged datagrams is logged rate-limited, not a line each.
	for range 100 {
		dc.Write(forged)
		dc.Write(other.Seal(forged))
	}
	real, _ := json.Marshal(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 0, Reason: "sealed"})
	dc.Write(key.Seal(real))
	select {
	case ev := <-c.Events():
		if ev.Reason != "sealed" {
			t.Fatalf("first event %+v, want the sealed one", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	if n := strings.Count(logs.String(), "dropped an event datagram"); n < 1 || n > acceptloop.DefaultBurst {
		t.Fatalf("%d lines for 200 dropped datagrams, want 1 to %d:\n%s", n, acceptloop.DefaultBurst, logs.String())
	}
}

// A launcher that does not know the secret is refused by the rank.
func TestClientAuthWrongLauncher(t *testing.T) {
	f, info := newFake(t)
	info.Auth, _ = wireauth.New()
	ch := connect(info)
	var conn net.Conn
	select {
	case conn = <-f.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	other, _ := wireauth.New()
	go wireauth.Accept(conn, conn, other, nil)
	res := <-ch
	if res.err == nil || !strings.Contains(res.err.Error(), "wrong MAC") {
		t.Fatalf("connected to a launcher without the secret: %v", res.err)
	}
}

// FuzzDatagram decodes arbitrary event datagrams, sealed and not.
func FuzzDatagram(f *testing.F) {
	key, _ := wireauth.FromBytes(make([]byte, wireauth.KeySize))
	ev, _ := json.Marshal(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 2})
	f.Add(ev)
	f.Add(key.Seal(ev))
	f.Add([]byte(`{"op":"event","rank":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := decodeDatagram(key, b); err == nil && m.Op != ctlwire.OpEvent {
			t.Fatalf("accepted %+v", m)
		}
		decodeDatagram(nil, b)
	})
}

// FuzzEnv parses arbitrary values of the rank's environment variables:
// errors name the variable, nothing panics, and an accepted Info is
// consistent.
func FuzzEnv(f *testing.F) {
	f.Add("1", "3", "4", "2", "0,1;0,1,2", "auto", "unix:/x")
	f.Add("0", "1", "", "", "", "", "")
	f.Add("-1", "x", "9", "1", "1;", "udp", "tcp:")
	f.Fuzz(func(t *testing.T, rank, size, universe, proc, parent, transport, control string) {
		env := map[string]string{EnvRank: rank, EnvSize: size, EnvUniverse: universe, EnvProc: proc,
			EnvParent: parent, EnvTransport: transport, EnvControl: control}
		info, ok, err := fromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
		if err != nil {
			if !strings.Contains(err.Error(), "FTMPI_") {
				t.Fatalf("error names no variable: %v", err)
			}
			return
		}
		if ok && (info.Rank < 0 || info.Rank >= info.Size || info.Proc >= info.Universe || info.Universe < info.Size) {
			t.Fatalf("inconsistent %+v", info)
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for the client's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
