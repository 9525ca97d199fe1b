package rte

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// launcher is a scripted control server for one process.
type launcher struct {
	t   *testing.T
	c   net.Conn
	r   *bufio.Reader
	enc *json.Encoder
}

func (l *launcher) read() ctlwire.Msg {
	l.t.Helper()
	l.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := l.r.ReadBytes('\n')
	if err != nil {
		l.t.Fatalf("launcher: read: %v", err)
	}
	var m ctlwire.Msg
	if err := json.Unmarshal(line, &m); err != nil {
		l.t.Fatal(err)
	}
	return m
}

func (l *launcher) send(m ctlwire.Msg) {
	l.t.Helper()
	if err := l.enc.Encode(m); err != nil {
		l.t.Fatalf("launcher: write: %v", err)
	}
}

// world is the test's stand-in for an epoch's World.
type world struct {
	failed chan int
	ended  chan string
	rank   *Rank         // the Spare hook's answer (nil: none)
	hold   chan struct{} // non-nil: the EndEpoch hook waits for it to close
}

func newWorld() *world {
	return &world{failed: make(chan int, 4), ended: make(chan string, 4)}
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// connect starts a Process of rank 0 of 2 against a scripted launcher that
// answers hello.
func connect(t *testing.T, lost chan struct{}) (*Process[world], *launcher) {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	info := boot.Info{Job: "j", Rank: 0, Size: 2, Proc: 0, Universe: 2, Control: "unix:" + filepath.Join(dir, "ctl"), Host: "h", TmpDir: dir}
	type res struct {
		p   *Process[world]
		err error
	}
	ch := make(chan res, 1)
	go func() {
		p, err := Connect(info, Hooks[world]{
			FailPeer: func(w *world, rank int, _ error) { w.failed <- rank },
			EndEpoch: func(w *world, reason string) {
				w.ended <- reason
				if w.hold != nil {
					<-w.hold
				}
			},
			Spare:        func(w *world) *Rank { return w.rank },
			LauncherLost: func() { close(lost) },
		})
		ch <- res{p, err}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	l := &launcher{t: t, c: c, r: bufio.NewReader(c), enc: json.NewEncoder(c)}
	if m := l.read(); m.Op != ctlwire.OpHello {
		t.Fatalf("first message %+v", m)
	}
	l.send(ctlwire.Msg{Op: ctlwire.OpHello, ID: 1})
	r := recv(t, ch, "Connect")
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.p, l
}

// The launcher watcher turns the connection's events into the hooks: a
// failure reaches the current World, a newer Reinit epoch ends it (an
// older one does not), and a lost launcher is reported.
func TestWatcherTurnsEventsIntoHooks(t *testing.T) {
	defer goleak.VerifyNone(t)
	lost := make(chan struct{})
	p, l := connect(t, lost)
	defer p.Close()
	w := newWorld()
	p.Start(w, 0)
	if p.Current() != w {
		t.Fatal("Start did not make the World current")
	}
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: 1, Reason: "killed"})
	if r := recv(t, w.failed, "failure"); r != 1 {
		t.Fatalf("FailPeer(%d), want 1", r)
	}
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventReinit, Rank: 1, Epoch: 3, Reason: "killed"})
	if reason := recv(t, w.ended, "epoch end"); !strings.Contains(reason, "rank 1 failed (killed)") {
		t.Fatalf("EndEpoch(%q)", reason)
	}
	if p.Latest() != 3 || !strings.Contains(p.LastNote(), "rank 1") {
		t.Fatalf("Latest %d, LastNote %q", p.Latest(), p.LastNote())
	}
	// An older epoch, then a newer one as a marker: the watcher handles
	// its events in order, so the first end is the marker's when the old
	// epoch was ignored. (A failure is no marker: it does not wait behind
	// them.)
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventReinit, Rank: 1, Epoch: 2, Reason: "late"})
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventReinit, Rank: 1, Epoch: 4, Reason: "marker"})
	if r := recv(t, w.ended, "marker"); !strings.Contains(r, "marker") {
		t.Fatalf("an older epoch ended the World: %q", r)
	}
	l.c.Close()
	recv(t, lost, "launcher loss")
}

// A failure event goes from the connection's reader to FailPeer without
// waiting behind the watcher's other events (issue 25: one hand-off from
// the socket to the blocked caller): with the watcher stuck in an
// EndEpoch hook, the failure still arrives.
func TestFailureDoesNotWaitForTheWatcher(t *testing.T) {
	defer goleak.VerifyNone(t)
	lost := make(chan struct{})
	p, l := connect(t, lost)
	w := newWorld()
	w.hold = make(chan struct{})
	p.Start(w, 0)
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventReinit, Rank: 1, Epoch: 1})
	recv(t, w.ended, "epoch end") // the watcher is now held in the hook
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: 1, Reason: "killed"})
	if r := recv(t, w.failed, "failure while the watcher is busy"); r != 1 {
		t.Fatalf("FailPeer(%d), want 1", r)
	}
	close(w.hold)
	p.Close()
}

// A respawned process told to join epoch 1 that found epoch 1 superseded
// joined epoch 2 directly: hearing of epoch 2 afterwards (from the
// launcher's event or its MPI_Reinit reply) must not end that World, or
// its peers wait for it in epoch 2 forever (seen as a hang of
// TestReinitExamplesSurviveKills/async-during-recovery). A later epoch
// still ends it.
func TestAdvanceSparesWorldOfThatEpoch(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, l := connect(t, make(chan struct{}))
	defer l.c.Close()
	defer p.Close()
	p.Finalizing()
	p.epoch = 1 // as boot.Info.Epoch of a process respawned for epoch 1
	w := newWorld()
	p.Start(w, 2)
	p.Advance(2, "the epoch this World already belongs to")
	select {
	case r := <-w.ended:
		t.Fatalf("announcing the World's own epoch ended it: %q", r)
	default:
	}
	if p.Latest() != 2 {
		t.Fatalf("Latest %d, want 2", p.Latest())
	}
	p.Advance(3, "a newer failure")
	if r := recv(t, w.ended, "epoch end"); r != "a newer failure" {
		t.Fatalf("EndEpoch(%q)", r)
	}
}

// BeginReinit: once per process, and only with the current World.
func TestBeginReinit(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, l := connect(t, make(chan struct{}))
	defer l.c.Close()
	defer p.Close()
	p.Finalizing()
	w := newWorld()
	p.Start(w, 0)
	if err := p.BeginReinit(newWorld()); !errors.Is(err, ErrEndedEpoch) {
		t.Fatalf("another World: %v", err)
	}
	if err := p.BeginReinit(w); err != nil || !p.Active() {
		t.Fatalf("first call: %v, active %v", err, p.Active())
	}
	if err := p.BeginReinit(w); !errors.Is(err, ErrReinitAgain) {
		t.Fatalf("second call: %v", err)
	}
}

// OpenEpoch: the transport and spin settings reach the sockets, the
// exchange gives every process's endpoint, and a process that died
// before publishing is reported dead.
func TestOpenEpochExchange(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, l := connect(t, make(chan struct{}))
	defer l.c.Close()
	defer p.Close()
	p.Finalizing()
	type res struct {
		n   *Net
		err error
	}
	ch := make(chan res, 1)
	go func() {
		n, err := p.OpenEpoch(0, NetConfig{Transport: "tcp", EagerLimit: 100, ReaderSpin: -1, ConnectTimeout: time.Second})
		ch <- res{n, err}
	}()
	m := l.read()
	if m.Op != ctlwire.OpFence {
		t.Fatalf("expected a fence, got %+v", m)
	}
	ep, err := boot.DecodeEndpoint(m.KV[ctlwire.EndpointKey(0)])
	if err != nil {
		t.Fatal(err)
	}
	if ep.Addrs["tcp"] == "" || ep.Addrs["unix"] != "" {
		t.Fatalf("Transport tcp, published endpoint %+v", ep)
	}
	l.send(ctlwire.Msg{Op: ctlwire.OpFence, ID: m.ID, KV: m.KV}) // process 1 never published
	r := recv(t, ch, "OpenEpoch")
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.n.Close()
	if r.n.Mode != "tcp" || len(r.n.Endpoints) != 2 || len(r.n.Dead) != 1 || r.n.Dead[0] != 1 || r.n.Epoch != 0 {
		t.Fatalf("Net %+v", r.n)
	}
	if r.n.Endpoints[0].Addrs["tcp"] != ep.Addrs["tcp"] {
		t.Fatalf("own endpoint %+v, published %+v", r.n.Endpoints[0], ep)
	}
}

func TestReaderSpin(t *testing.T) {
	if d := (NetConfig{ReaderSpin: 7 * time.Microsecond}).readerSpin(1<<20, 0); d != 7*time.Microsecond {
		t.Fatalf("fixed spin: %v", d)
	}
	if d := (NetConfig{ReaderSpin: -1}).readerSpin(1<<20, 0); d != 0 {
		t.Fatalf("automatic spin, oversubscribed: %v", d)
	}
	if d := (NetConfig{ReaderSpin: -1}).readerSpin(1, 0); d != 50*time.Microsecond {
		t.Fatalf("automatic spin, one rank: %v", d)
	}
	// The launcher's count of the host's cores decides, not this
	// process's CPU count (which affinity may shrink or the host exceed).
	many := runtime.NumCPU() + 8
	if d := (NetConfig{ReaderSpin: -1}).readerSpin(many, many); d != 50*time.Microsecond {
		t.Fatalf("automatic spin, %d ranks on a host the launcher counts %d cores: %v", many, many, d)
	}
	if d := (NetConfig{ReaderSpin: -1}).readerSpin(2, 1); d != 0 {
		t.Fatalf("automatic spin, 2 ranks on a host the launcher counts 1 core: %v", d)
	}
}

// NetConfig.ConnectTimeout reaches the sockets: a send to a process whose
// listener never answers the handshake fails after it (the default would
// wait 30 s).
func TestOpenEpochConnectTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, l := connect(t, make(chan struct{}))
	defer l.c.Close()
	defer p.Close()
	p.Finalizing()
	// Process 1 listens, but never accepts nor answers.
	mute, err := net.Listen("unix", filepath.Join(t.TempDir(), "mute.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer mute.Close()
	type res struct {
		n   *Net
		err error
	}
	ch := make(chan res, 1)
	const timeout = 200 * time.Millisecond
	go func() {
		n, err := p.OpenEpoch(0, NetConfig{Transport: "unix", ReaderSpin: -1, ConnectTimeout: timeout})
		ch <- res{n, err}
	}()
	m := l.read()
	ep1, _ := json.Marshal(boot.Endpoint{Rank: 1, Host: "h", Addrs: map[string]string{"unix": mute.Addr().String()}})
	m.KV[ctlwire.EndpointKey(1)] = string(ep1)
	l.send(ctlwire.Msg{Op: ctlwire.OpFence, ID: m.ID, KV: m.KV})
	r := recv(t, ch, "OpenEpoch")
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.n.Close()
	sent := make(chan error, 1)
	start := time.Now()
	go func() { sent <- r.n.Tr.Send(1, transport.Header{Tag: 16}, nil) }() // blocking: SendControl is posted
	select {
	case err := <-sent:
		if err == nil {
			t.Fatal("a send to a mute process succeeded")
		}
		if d := time.Since(start); d < timeout {
			t.Fatalf("the send failed after %v, before the connect timeout %v: %v", d, timeout, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the connect timeout did not reach the sockets: the send still waits after 15 s")
	}
}

// The launcher's reason names the failed rank and says how it ended: the
// cause says so once (issue 26: "rank 2 failed: rank 2 (pid ...)").
func TestFailedCauseNamesTheRankOnce(t *testing.T) {
	for reason, want := range map[string]string{
		"rank 2 (pid 123) killed by signal 9 (killed)": "rank 2 (pid 123) killed by signal 9 (killed)",
		"killed":                               "rank 2 failed (killed)",
		"":                                     "rank 2 failed",
		"rank 20 (pid 5) exited with status 1": "rank 2 failed (rank 20 (pid 5) exited with status 1)",
	} {
		if got := failedCause(boot.Event{Rank: 2, Reason: reason}).Error(); got != want {
			t.Errorf("reason %q: cause %q, want %q", reason, got, want)
		}
	}
}

// The launcher's events for a spare reach the spare driver of the current
// epoch's Rank (Hooks.Spare): a take as the driver's outcome, a take it
// refuses (it is no longer waiting) on the Rank's diagnostics.
func TestLauncherSpareEventsReachTheRank(t *testing.T) {
	defer goleak.VerifyNone(t)
	j := newTestJob(2)
	defer j.close()
	cfg := j.config(1)
	cfg.Spares = SpareConfig{Pool: []int{1}, IsSpare: true, Pairs: 4}
	r := NewRank(cfg)
	out := &syncBuf{wrote: make(chan struct{}, 16)}
	r.SetDiag(&Diag{Out: out})
	p, l := connect(t, make(chan struct{}))
	defer p.Close()
	w := newWorld()
	w.rank = r
	p.Start(w, 0)
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventActivate, Rank: 0, Incarnation: 2, Epoch: 3})
	o := recv(t, r.Spares.Outcome(), "the take's outcome")
	if o.Take == nil || o.Take.Rank != 0 || o.Take.Inc != 2 || o.Take.Epoch != 3 {
		t.Fatalf("outcome %+v, want the launcher's take of rank 0, incarnation 2, epoch 3", o)
	}
	l.send(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventActivate, Rank: 0, Incarnation: 3, Epoch: 4})
	recv(t, out.wrote, "the refused take's diagnostic")
	if !strings.Contains(out.String(), "taken by the launcher as rank 0") {
		t.Fatalf("diagnostic %q", out.String())
	}
}
