package sock

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// The flood tests run the flooded transport in a child process (this test
// binary, re-executed with floodChildEnv set) whose descriptor limit is
// lowered to childNoFile: the test process keeps its own.
const (
	floodChildEnv = "FTMPI_SOCK_TEST_FLOOD_CHILD"
	childNoFile   = 128
	floodKeyByte  = 7
)

// floodChild is the child's main: rank 0 of a two-rank job, listening on
// loopback TCP with the job's secret (testKey(floodKeyByte)). It prints
// "listening ADDR NONCE", reads "peer ADDR NONCE" (rank 1, in the test
// process), answers every frame from rank 1 with a frame of Seq+1, and
// ends when its standard input closes. Its log goes to standard error.
// Mode "exhaust": after reading its peer, it takes every descriptor it
// has left (prints "exhausted") and gives them back when its accept loop
// logs that Accept fails. Mode "exhaust-dial": the same, then it sends a
// frame to rank 1 and gives the descriptors back when its dial logs that
// it waits for them.
func floodChild(mode string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "child: "+format+"\n", args...)
		return 1
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: childNoFile, Max: childNoFile}); err != nil {
		return fail("setrlimit: %v", err)
	}
	k, err := wireauth.FromBytes(bytes.Repeat([]byte{floodKeyByte}, wireauth.KeySize))
	if err != nil {
		return fail("%v", err)
	}
	var hog []int
	var hogMu sync.Mutex
	release := func() {
		hogMu.Lock()
		defer hogMu.Unlock()
		for _, fd := range hog {
			syscall.Close(fd)
		}
		hog = nil
	}
	// The descriptors come back when the path under test logs its
	// failure: the accept loop's (exhaust) or the dial's (exhaust-dial).
	// In exhaust-dial, an accept failure (a connection that reached the
	// listener meanwhile) must not give them back before the dial met the
	// limit: the test would then see no dial retry (a rare failure under
	// -race in CI).
	releaseOn := "accept failed"
	if mode == "exhaust-dial" {
		releaseOn = "retrying until descriptors free up"
	}
	logf := func(msg string) {
		fmt.Fprintf(os.Stderr, "log: %s\n", msg)
		if strings.Contains(msg, releaseOn) {
			release()
		}
	}
	h := &echoHandler{}
	tr, err := Listen(Config{Self: 0, Host: "h", Mode: ModeTCP, Handler: h, Auth: k, Log: logf, ConnectTimeout: 20 * time.Second})
	if err != nil {
		return fail("listen: %v", err)
	}
	defer tr.Close()
	h.tr = tr
	self := tr.Self()
	fmt.Printf("listening %s %s\n", self.TCP, self.Nonce)
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return fail("no peer line")
	}
	var peer Peer
	if _, err := fmt.Sscanf(in.Text(), "peer %s %s", &peer.TCP, &peer.Nonce); err != nil {
		return fail("peer line %q: %v", in.Text(), err)
	}
	peer.Host = "h"
	tr.SetPeers([]Peer{self, peer})
	if mode == "exhaust" || mode == "exhaust-dial" {
		hogMu.Lock()
		for {
			fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
			if err != nil {
				break
			}
			hog = append(hog, fd)
		}
		n := len(hog)
		hogMu.Unlock()
		fmt.Printf("exhausted %d\n", n)
	}
	if mode == "exhaust-dial" {
		go tr.Send(1, transport.Header{Kind: 1, Seq: 1}, nil)
	}
	for in.Scan() { // until the test closes standard input
	}
	release()
	return 0
}

// echoHandler answers each frame with one of Seq+1 to its sender.
type echoHandler struct{ tr *Transport }

func (e *echoHandler) Frame(int, transport.Header) ([]byte, any) { return nil, nil }
func (e *echoHandler) Payload(from int, h transport.Header, _ []byte, _ any, err error) {
	if err == nil {
		go e.tr.Send(from, transport.Header{Kind: 1, Seq: h.Seq + 1}, nil)
	}
}
func (e *echoHandler) PeerLost(int, error) {}

// child is a running floodChild.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	peer   Peer // its transport
	once   sync.Once
	err    error
}

// finish closes the child's input and waits for its exit.
func (c *child) finish(t *testing.T) error {
	t.Helper()
	c.once.Do(func() {
		c.stdin.Close()
		exited := make(chan error, 1)
		go func() { exited <- c.cmd.Wait() }()
		select {
		case c.err = <-exited:
		case <-time.After(20 * time.Second):
			c.cmd.Process.Kill()
			<-exited
			c.err = errors.New("the child did not end when its input closed")
		}
	})
	return c.err
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startChild(t *testing.T, mode string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), floodChildEnv+"="+mode)
	c := &child{cmd: cmd, lines: make(chan string, 16), stderr: &syncBuffer{}}
	cmd.Stderr = c.stderr
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		if err := c.finish(t); err != nil && !t.Failed() {
			t.Errorf("child: %v\nstderr:\n%s", err, c.stderr.String())
		}
		<-done
	})
	line := c.line(t, "listening ")
	c.peer.Host = "h"
	if _, err := fmt.Sscanf(line, "listening %s %s", &c.peer.TCP, &c.peer.Nonce); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return c
}

// line waits for the child's next output line, which must start with prefix.
func (c *child) line(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			t.Fatalf("child printed %q (ok %v), want %q...\nstderr:\n%s", l, ok, prefix, c.stderr.String())
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("child printed no %q line\nstderr:\n%s", prefix, c.stderr.String())
	}
	return ""
}

// peerOf is rank 1 in the test process, with the child as rank 0.
func peerOf(t *testing.T, c *child) (*Transport, *recorder) {
	t.Helper()
	rec := newRecorder()
	tr, err := Listen(Config{Self: 1, Host: "h", Mode: ModeTCP, Handler: rec, Auth: testKey(t, floodKeyByte),
		Log: func(string) {}, ConnectTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	tr.SetPeers([]Peer{c.peer, tr.Self()})
	self := tr.Self()
	if _, err := fmt.Fprintf(c.stdin, "peer %s %s\n", self.TCP, self.Nonce); err != nil {
		t.Fatal(err)
	}
	return tr, rec
}

// exchange sends a frame to the child and waits for its answer.
func exchange(t *testing.T, c *child, tr *Transport, rec *recorder) {
	t.Helper()
	if err := tr.Send(0, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
		t.Fatalf("send to the flooded rank: %v\nchild's log:\n%s", err, c.stderr.String())
	}
	deadline := time.After(30 * time.Second)
	for rec.count(0) == 0 {
		select {
		case p := <-rec.lost:
			t.Fatalf("the flooded rank was reported lost (%d)\nchild's log:\n%s", p, c.stderr.String())
		case <-deadline:
			t.Fatalf("no answer from the flooded rank\nchild's log:\n%s", c.stderr.String())
		case <-time.After(5 * time.Millisecond): // polling the recorder, bounded by the deadline
		}
	}
}

// TestFloodBeyondDescriptorLimit: thousands of idle connections (many
// times the listening process's descriptor limit) to a transport's TCP
// listener: it goes on accepting, closing the oldest of them, and a peer
// that connects afterwards exchanges frames with it. The refused and shed
// connections cost a few log lines, not one each.
func TestFloodBeyondDescriptorLimit(t *testing.T) {
	c := startChild(t, "flood")
	tr, rec := peerOf(t, c)
	const flood = 3000
	var idle []net.Conn
	defer func() {
		for _, nc := range idle {
			nc.Close()
		}
	}()
	for len(idle) < flood {
		nc, err := net.DialTimeout("tcp", c.peer.TCP, 2*time.Second)
		if err != nil {
			break // the listener's queue is full: the old accept loop stopped
		}
		idle = append(idle, nc)
	}
	if len(idle) < 4*childNoFile {
		t.Fatalf("only %d flood connections (the listener's queue filled: its accept loop stopped?)\nchild's log:\n%s", len(idle), c.stderr.String())
	}
	// The listener took more connections than it has descriptors: the
	// first ones were closed to make room.
	for i, nc := range idle[:2*childNoFile] {
		nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("flood connection %d of %d is still open: %v\nchild's log:\n%s", i, len(idle), err, c.stderr.String())
		}
	}
	exchange(t, c, tr, rec)
	// Garbage hellos: a few lines and a count, not a line each.
	for range 200 {
		nc, err := net.DialTimeout("tcp", c.peer.TCP, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		nc.Write(bytes.Repeat([]byte{0xab}, wireauth.FastHelloSize))
		io.Copy(io.Discard, nc)
		nc.Close()
	}
	for _, nc := range idle {
		nc.Close()
	}
	idle = nil
	if err := c.finish(t); err != nil {
		t.Fatalf("child: %v\nstderr:\n%s", err, c.stderr.String())
	}
	log := c.stderr.String()
	if n := strings.Count(log, "\n"); n > 20 {
		t.Errorf("%d log lines for one flood and 200 bad hellos, want a few\n%s", n, log)
	}
	for _, want := range []string{"tcp listener: more than 8 connections have not authenticated; closing the oldest",
		"refused a connection from 127.0.0.1", "more such lines in"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
	t.Logf("%d flood connections; child's log:\n%s", flood, log)
}

// TestAcceptRecoversWhenDescriptorsReturn: a process whose descriptors
// are all taken by something else cannot accept; its accept loop retries,
// and once descriptors are back (the child gives them back when its loop
// logs the failure) the peer waiting in its handshake gets through.
func TestAcceptRecoversWhenDescriptorsReturn(t *testing.T) {
	c := startChild(t, "exhaust")
	tr, rec := peerOf(t, c)
	c.line(t, "exhausted ")
	exchange(t, c, tr, rec)
	if err := c.finish(t); err != nil {
		t.Fatalf("child: %v\nstderr:\n%s", err, c.stderr.String())
	}
	log := c.stderr.String()
	for _, want := range []string{"tcp listener: accept failed (", "too many open files", "tcp listener: accepting again after "} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q:\n%s", want, log)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestDialRecoversWhenDescriptorsReturn: a process out of descriptors
// sending to a peer it has no connection to yet: the dial is retried (and
// logged once) instead of failing the peer, and the frame arrives once
// descriptors are back.
func TestDialRecoversWhenDescriptorsReturn(t *testing.T) {
	c := startChild(t, "exhaust-dial")
	_, rec := peerOf(t, c)
	c.line(t, "exhausted ")
	deadline := time.After(30 * time.Second)
	for rec.count(0) == 0 {
		select {
		case <-deadline:
			t.Fatalf("no frame from the process out of descriptors\nchild's log:\n%s", c.stderr.String())
		case <-time.After(5 * time.Millisecond): // polling the recorder, bounded by the deadline
		}
	}
	if err := c.finish(t); err != nil {
		t.Fatalf("child: %v\nstderr:\n%s", err, c.stderr.String())
	}
	log := c.stderr.String()
	if want := "too many open files; retrying until descriptors free up"; strings.Count(log, want) != 1 {
		t.Errorf("the log has not one %q:\n%s", want, log)
	}
}

// TestDialRetriesAShedConnection: a connection closed in its handshake
// (as a flooded peer's accept loop sheds it) is dialled again: the frame
// arrives instead of the peer being reported lost. The peer is reached
// through a relay that closes the first connection after its first byte
// and relays the next one.
func TestDialRetriesAShedConnection(t *testing.T) {
	k := testKey(t, 3)
	recA, recB := newRecorder(), newRecorder()
	a, err := Listen(Config{Self: 0, Host: "h", Mode: ModeTCP, Handler: recA, Auth: k, Log: func(string) {}, ConnectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Listen(Config{Self: 1, Host: "h", Mode: ModeTCP, Handler: recB, Auth: k, Log: func(string) {}, ConnectTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	relay, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	keep := func(c net.Conn) {
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
	}
	defer func() {
		relay.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		first, err := relay.Accept()
		if err != nil {
			return
		}
		first.Read(make([]byte, 1))
		first.Close()
		c, err := relay.Accept()
		if err != nil {
			return
		}
		keep(c)
		d, err := net.Dial("tcp", a.Self().TCP)
		if err != nil {
			c.Close()
			return
		}
		keep(d)
		wg.Add(2)
		go func() { defer wg.Done(); io.Copy(d, c); d.Close() }()
		go func() { defer wg.Done(); io.Copy(c, d); c.Close() }()
	}()
	viaRelay := a.Self()
	viaRelay.TCP = relay.Addr().String()
	b.SetPeers([]Peer{viaRelay, b.Self()})
	a.SetPeers([]Peer{a.Self(), b.Self()})
	if err := b.Send(0, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
		t.Fatalf("send: %v", err)
	}
	deadline := time.After(20 * time.Second)
	for recA.count(1) == 0 {
		select {
		case p := <-recB.lost:
			t.Fatalf("rank %d reported lost after one shed connection", p)
		case <-deadline:
			t.Fatal("the frame did not arrive")
		case <-time.After(5 * time.Millisecond): // polling the recorder, bounded by the deadline
		}
	}
}
