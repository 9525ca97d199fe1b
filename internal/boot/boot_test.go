package boot

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	if _, ok, err := fromLookup(lookupFrom(nil)); ok || err != nil {
		t.Fatalf("singleton: ok=%v err=%v", ok, err)
	}
	good := Info{Job: "ab12", Rank: 2, Size: 4, Control: "unix:/tmp/x/ctl", Host: "h1", HostCores: 8, TmpDir: "/tmp/x", Transport: "tcp", Incarnation: 3, Proc: 2, Universe: 4}
	env := map[string]string{}
	for _, kv := range good.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	info, ok, err := fromLookup(lookupFrom(env))
	if err != nil || !ok || !reflect.DeepEqual(info, good) {
		t.Fatalf("got %+v ok=%v err=%v, want %+v", info, ok, err, good)
	}
	delete(env, EnvTransport)
	delete(env, EnvIncarnation)
	info, _, err = fromLookup(lookupFrom(env))
	if err != nil || info.Transport != "auto" || info.Incarnation != 0 {
		t.Fatalf("defaults: %+v %v", info, err)
	}
	for _, tc := range []struct{ name, value string }{
		{EnvRank, "x"}, {EnvRank, "-1"}, {EnvRank, "4"}, {EnvSize, "0"}, {EnvSize, ""},
		{EnvIncarnation, "one"}, {EnvHostCores, "many"}, {EnvHostCores, "-1"}, {EnvControl, "udp:1.2.3.4:5"}, {EnvControl, "nocolon"}, {EnvTransport, "ib"},
	} {
		bad := map[string]string{}
		for k, v := range env {
			bad[k] = v
		}
		bad[tc.name] = tc.value
		if _, _, err := fromLookup(lookupFrom(bad)); err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s=%q: error %v does not name the variable", tc.name, tc.value, err)
		}
	}
	noSize := map[string]string{EnvRank: "0"}
	if _, _, err := fromLookup(lookupFrom(noSize)); err == nil || !strings.Contains(err.Error(), EnvSize) {
		t.Errorf("missing size: %v", err)
	}
}

// fakeLauncher is a minimal control server for one rank, scripted by the test.
type fakeLauncher struct {
	ln    net.Listener
	conns chan net.Conn
}

func newFake(t *testing.T) (*fakeLauncher, Info) {
	sock := filepath.Join(t.TempDir(), "ctl")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLauncher{ln: ln, conns: make(chan net.Conn, 1)}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			f.conns <- c
		}
		close(f.conns)
	}()
	t.Cleanup(func() { ln.Close() })
	return f, Info{Job: "j", Rank: 1, Size: 3, Control: "unix:" + sock, Host: "h", HostCores: 4, Transport: "auto"}
}

// serve accepts the connection, answers hello and returns a reader/writer.
func (f *fakeLauncher) serve(t *testing.T) (net.Conn, *bufio.Reader, *json.Encoder) {
	var c net.Conn
	select {
	case c = <-f.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	enc := json.NewEncoder(c)
	m := read(t, r)
	if m.Op != ctlwire.OpHello || m.Rank != 1 || m.Job != "j" || m.Pid == 0 {
		t.Fatalf("bad hello %+v", m)
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpHello, ID: m.ID})
	return c, r, enc
}

func read(t *testing.T, r *bufio.Reader) ctlwire.Msg {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m ctlwire.Msg
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

type connectResult struct {
	c   *Client
	err error
}

// served connects a Client of info to the fake launcher f, which answers
// its hello; the Client and the launcher's side are closed at the test's
// end.
func served(t *testing.T, f *fakeLauncher, info Info) (*Client, net.Conn, *bufio.Reader, *json.Encoder) {
	t.Helper()
	ch := connect(info)
	conn, r, enc := f.serve(t)
	t.Cleanup(func() { conn.Close() })
	res := <-ch
	if res.err != nil {
		t.Fatal(res.err)
	}
	t.Cleanup(func() { res.c.Close() })
	return res.c, conn, r, enc
}

func connect(info Info) chan connectResult {
	ch := make(chan connectResult, 1)
	go func() { c, err := Connect(info); ch <- connectResult{c, err} }()
	return ch
}

func TestClientExchangeEventsFinalize(t *testing.T) {
	f, info := newFake(t)
	c, _, r, enc := served(t, f, info)

	// Many events while nobody reads Events: the reader must not stall.
	for i := 0; i < 1000; i++ {
		enc.Encode(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 2, Incarnation: i, Reason: "test"})
	}
	done := make(chan error, 1)
	var eps []Endpoint
	go func() {
		var err error
		eps, err = c.Exchange(Endpoint{Addrs: map[string]string{"tcp": "127.0.0.1:9"}})
		done <- err
	}()
	m := read(t, r)
	if m.Op != ctlwire.OpFence || m.KV[ctlwire.EndpointKey(1)] == "" {
		t.Fatalf("bad fence %+v", m)
	}
	kv := map[string]string{
		ctlwire.EndpointKey(0): `{"Rank":0,"Host":"h","Addrs":{"unix":"/s0"}}`,
		ctlwire.EndpointKey(1): m.KV[ctlwire.EndpointKey(1)],
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpFence, ID: m.ID, KV: kv, Failed: []int{2}})
	select {
	case err := <-done:
		var fe *FailedError
		if !errors.As(err, &fe) || len(fe.Ranks) != 1 || fe.Ranks[0] != 2 {
			t.Fatalf("exchange error %v, want FailedError{[2]}", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exchange did not return")
	}
	if eps[0].Addrs["unix"] != "/s0" || eps[1].Addrs["tcp"] != "127.0.0.1:9" || eps[1].Host != "h" || eps[1].Cores != 4 || eps[2].Addrs != nil {
		t.Fatalf("endpoints %+v", eps)
	}
	for i := 0; i < 1000; i++ {
		select {
		case ev := <-c.Events():
			if ev.Kind != EventFailed || ev.Rank != 2 || ev.Incarnation != i {
				t.Fatalf("event %d: %+v", i, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d missing", i)
		}
	}
	go func() { done <- c.Finalize() }()
	m = read(t, r)
	if m.Op != ctlwire.OpFinalize {
		t.Fatalf("bad finalize %+v", m)
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpFinalize, ID: m.ID})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Suspect(2, "no heartbeat") }()
	m = read(t, r)
	if m.Op != ctlwire.OpSuspect || m.Rank != 2 || m.Reason != "no heartbeat" || m.ID == 0 {
		t.Fatalf("bad suspect %+v", m)
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpSuspect, ID: m.ID})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- c.Suspect(7, "") }()
	m = read(t, r)
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpError, ID: m.ID, Error: "rank 7 out of range"})
	if err := <-done; err == nil || !strings.Contains(err.Error(), "rank 7 out of range") {
		t.Fatalf("suspect error: %v", err)
	}
	go func() { done <- c.Abort(3, "why") }()
	m = read(t, r)
	if m.Op != ctlwire.OpAbort || m.Code != 3 || m.Reason != "why" {
		t.Fatalf("bad abort %+v", m)
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpAbort, ID: m.ID})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Lost():
		t.Fatal("Lost closed after Close")
	default:
	}
	if err := c.Finalize(); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestClientLostWhenLauncherDies(t *testing.T) {
	f, info := newFake(t)
	c, conn, r, _ := served(t, f, info)
	done := make(chan error, 1)
	go func() { _, err := c.Exchange(Endpoint{}); done <- err }()
	read(t, r) // the fence request arrived; now the launcher dies
	conn.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrLost) {
			t.Fatalf("exchange: %v, want ErrLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("exchange hangs after the launcher died")
	}
	select {
	case <-c.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost not closed")
	}
	select {
	case _, ok := <-c.Events():
		if ok {
			t.Fatal("unexpected event")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Events not closed after loss")
	}
	if err := c.Finalize(); !errors.Is(err, ErrLost) {
		t.Fatalf("after loss: %v", err)
	}
}

func TestConnectRefused(t *testing.T) {
	f, info := newFake(t)
	ch := connect(info)
	var c net.Conn
	select {
	case c = <-f.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	defer c.Close()
	r := bufio.NewReader(c)
	m := read(t, r)
	json.NewEncoder(c).Encode(ctlwire.Msg{Op: ctlwire.OpError, ID: m.ID, Error: "rank 1 is already connected"})
	res := <-ch
	if res.err == nil || !strings.Contains(res.err.Error(), "already connected") {
		t.Fatalf("Connect: %v", res.err)
	}
	if _, err := Connect(Info{Control: "unix:" + filepath.Join(t.TempDir(), "none")}); err == nil {
		t.Fatal("Connect to nothing succeeded")
	}
}

// A spawned process: its process id and universe differ from its rank and
// size, and it knows its parents.
func TestFromEnvSpawned(t *testing.T) {
	good := Info{Job: "ab12", Rank: 1, Size: 2, Control: "unix:/tmp/x/ctl", Transport: "auto", Proc: 5, Universe: 6,
		ParentPairs: []int{7, 9}, ParentProcs: []int{0, 2, 3}}
	env := map[string]string{}
	for _, kv := range good.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	info, ok, err := fromLookup(lookupFrom(env))
	if err != nil || !ok || !reflect.DeepEqual(info, good) {
		t.Fatalf("got %+v ok=%v err=%v, want %+v", info, ok, err, good)
	}
	for _, bad := range []string{"1;2", "1,2", "a,b;1", "1,2;x"} {
		env[EnvParent] = bad
		if _, _, err := fromLookup(lookupFrom(env)); err == nil || !strings.Contains(err.Error(), EnvParent) {
			t.Errorf("%s=%q: err %v, want one naming the variable", EnvParent, bad, err)
		}
	}
	env[EnvParent] = ""
	env[EnvProc] = "6"
	if _, _, err := fromLookup(lookupFrom(env)); err == nil || !strings.Contains(err.Error(), "inconsistent") {
		t.Errorf("process id beyond the universe: err %v", err)
	}
}

// A rank connected over a unix socket offers an event socket in the job's
// directory in its hello; events sent there as datagrams are delivered
// like those on the control connection, and Close removes it. Without a
// job directory there is none.
func TestClientEventSocket(t *testing.T) {
	f, info := newFake(t)
	info.TmpDir = t.TempDir()
	ch := connect(info)
	var conn net.Conn
	select {
	case conn = <-f.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	enc := json.NewEncoder(conn)
	hello := read(t, r)
	addr := hello.KV[HelloEventAddr]
	if hello.Op != ctlwire.OpHello || filepath.Dir(addr) != info.TmpDir {
		t.Fatalf("hello %+v: want an event socket in %s", hello, info.TmpDir)
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpHello, ID: hello.ID})
	res := <-ch
	if res.err != nil {
		t.Fatal(res.err)
	}
	c := res.c
	defer c.Close()
	dc, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	b, _ := json.Marshal(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 2, Reason: "by datagram"})
	if _, err := dc.Write(b); err != nil {
		t.Fatal(err)
	}
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 0, Reason: "by stream"})
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case ev := <-c.Events():
			got[ev.Reason] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("events %v: one missing", got)
		}
	}
	if !got["by datagram"] || !got["by stream"] {
		t.Fatalf("events %v", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Write(b); err == nil {
		t.Fatal("event socket still open after Close")
	}
	if _, err := os.Stat(addr); !os.IsNotExist(err) {
		t.Fatalf("event socket %s not removed: %v", addr, err)
	}

	// No job directory: no event socket.
	f2, info2 := newFake(t)
	ch = connect(info2)
	var conn2 net.Conn
	select {
	case conn2 = <-f2.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
	}
	defer conn2.Close()
	conn2.SetDeadline(time.Now().Add(10 * time.Second))
	r2 := bufio.NewReader(conn2)
	hello = read(t, r2)
	if _, ok := hello.KV[HelloEventAddr]; ok {
		t.Fatalf("hello %+v: event socket without a job directory", hello)
	}
	json.NewEncoder(conn2).Encode(ctlwire.Msg{Op: ctlwire.OpHello, ID: hello.ID})
	if res := <-ch; res.err != nil {
		t.Fatal(res.err)
	} else {
		res.c.Close()
	}
}

// FTMPI_SPARES marks the last K processes of the start set as spares: the
// value round-trips through Env, IsSpare and WorldSize follow from it, and a
// malformed or too large count is refused with the variable named.
func TestFromEnvSpares(t *testing.T) {
	good := Info{Job: "ab12", Rank: 5, Size: 6, Control: "unix:/tmp/x/ctl", Transport: "auto", Proc: 5, Universe: 6, Spares: 2}
	env := map[string]string{}
	for _, kv := range good.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	info, ok, err := fromLookup(lookupFrom(env))
	if err != nil || !ok || !reflect.DeepEqual(info, good) {
		t.Fatalf("got %+v ok=%v err=%v, want %+v", info, ok, err, good)
	}
	if !info.IsSpare() || info.WorldSize() != 4 {
		t.Fatalf("rank 5 of 6 with 2 spares: IsSpare %v, WorldSize %d; want true, 4", info.IsSpare(), info.WorldSize())
	}
	if r := (Info{Rank: 3, Size: 6, Spares: 2}); r.IsSpare() {
		t.Fatalf("rank 3 of 6 with 2 spares is a rank, not a spare")
	}
	if r := (Info{Rank: 0, Size: 2}); r.IsSpare() || r.WorldSize() != 2 {
		t.Fatalf("no spares: IsSpare %v, WorldSize %d", r.IsSpare(), r.WorldSize())
	}
	for _, bad := range []string{"x", "-1", "7"} {
		env[EnvSpares] = bad
		if _, _, err := fromLookup(lookupFrom(env)); err == nil || !strings.Contains(err.Error(), EnvSpares) {
			t.Errorf("%s=%q: err %v, want one naming the variable", EnvSpares, bad, err)
		}
	}
}

// Deliver's delegate sees the events in the reader's goroutine: the ones
// it handles are not queued for Events, the others are, in order; after
// Deliver(nil) every event is queued again.
func TestClientDeliverDelegate(t *testing.T) {
	f, info := newFake(t)
	c, _, _, enc := served(t, f, info)
	handled := make(chan Event, 16)
	c.Deliver(func(ev Event) bool {
		if ev.Kind != EventFailed {
			return false
		}
		handled <- ev
		return true
	})
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 3, Reason: "killed"})
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventReinit, Epoch: 1})
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 4})
	for _, want := range []int{3, 4} {
		select {
		case ev := <-handled:
			if ev.Rank != want {
				t.Fatalf("delegate got rank %d, want %d", ev.Rank, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the delegate did not get the failure of rank %d", want)
		}
	}
	select {
	case ev := <-c.Events():
		if ev.Kind != EventReinit || ev.Epoch != 1 {
			t.Fatalf("queued event %+v, want the Reinit epoch 1 (failures were handled)", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event the delegate declined was not queued")
	}
	c.Deliver(nil)
	enc.Encode(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: EventFailed, Rank: 5})
	select {
	case ev := <-c.Events():
		if ev.Kind != EventFailed || ev.Rank != 5 {
			t.Fatalf("queued event %+v, want rank 5's failure", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("without a delegate the failure was not queued")
	}
	if len(handled) != 0 {
		t.Fatalf("the removed delegate still got %d events", len(handled))
	}
}
