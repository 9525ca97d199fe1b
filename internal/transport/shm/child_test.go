package shm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// The crash tests run rank 1 as a child process: the test binary re-run
// with envChild naming its role. The child listens in envDir, prints
// "ready", acts, and exits when its standard input closes (the parent
// died or is done), unless it is killed first.
const (
	envChild = "FTMPI_SHM_TEST_CHILD"
	envDir   = "FTMPI_SHM_TEST_DIR"
)

// childHandler is the child's handler: hold makes it stop inside the
// Frame of kind 1 (printing "frame"); echo sends frames of kind 4 back.
type childHandler struct {
	tr    atomic.Pointer[Transport]
	hold  bool
	block <-chan struct{}
}

func (c *childHandler) Frame(from int, h transport.Header) ([]byte, any) {
	if h.Kind == 1 && c.hold {
		fmt.Println("frame")
		<-c.block
	}
	if h.N == 0 {
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func (c *childHandler) Payload(from int, h transport.Header, dst []byte, _ any, err error) {
	if err == nil && h.Kind == 4 {
		c.tr.Load().Post(from, h, dst, nil)
	}
}

func (c *childHandler) PeerLost(int, error) {}

func runChild(role string) int {
	stdinClosed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(stdinClosed)
	}()
	dir := os.Getenv(envDir)
	ch := &childHandler{hold: role == "hold-receiver", block: stdinClosed}
	cfg := Config{Self: 1, Dir: dir, Name: sockName(1), Handler: ch, NoCMA: role == "cut-mid-frame", Auth: testKey}
	puts := 0
	var armed atomic.Bool // fast-sender: stop at the step its role names
	if strings.HasPrefix(role, "fast-sender-") {
		stop := role[len(role)-1:]
		hit := func(step string) {
			if step == stop && armed.CompareAndSwap(true, false) {
				fmt.Println("step")
				<-stdinClosed
			}
		}
		cfg.fastStep = func(step int) { hit(fmt.Sprint(step)) }
		cfg.beforePublish = func() { hit("w") }
	}
	switch role {
	case "cut-before-publish":
		cfg.beforePublish = func() {
			fmt.Println("written")
			<-stdinClosed
		}
	case "cut-mid-frame":
		cfg.beforePublish = func() {
			if puts++; puts == 3 { // the header and two chunks are published
				fmt.Println("midframe")
				<-stdinClosed
			}
		}
	}
	tr, err := Listen(cfg)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	ch.tr.Store(tr)
	tr.SetPeers(addrs(dir, 3))
	fmt.Println("ready")
	switch role {
	case "cut-before-publish":
		tr.Send(0, transport.Header{Kind: 7, Seq: 7}, make([]byte, 100))
	case "cut-mid-frame", "big-sender":
		b := make([]byte, 8<<20)
		fill(b, 7)
		tr.Send(0, transport.Header{Kind: 1, Seq: 7}, b)
	default:
		if strings.HasPrefix(role, "fast-sender-") {
			// The first frame sets the pair up (the writer goroutine's
			// path); the second takes the fast path and stops at the step.
			var flags uint16
			if role[len("fast-sender-")] == 'u' {
				flags = transport.FlagUrgent
			}
			b := make([]byte, 100)
			fill(b, 1)
			if err := tr.Send(0, transport.Header{Kind: 8, Flags: flags, Seq: 1}, b); err != nil {
				fmt.Println("error", err)
				return 1
			}
			armed.Store(true)
			fill(b, 7)
			tr.Send(0, transport.Header{Kind: 7, Flags: flags, Seq: 7}, b)
			fmt.Println("error: the frame did not stop at its step")
		}
	}
	<-stdinClosed
	tr.Close()
	return 0
}

// child is a running child process and the lines it printed.
type child struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
}

func startChild(t *testing.T, role, dir string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+role, envDir+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 16), stdin: in}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	c.expect(t, "ready")
	return c
}

// expect waits for the child to print line.
func (c *child) expect(t *testing.T, line string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child ended before it printed %q", line)
			}
			if l == line {
				return
			}
			if strings.HasPrefix(l, "error") {
				t.Fatalf("child: %s", l)
			}
		case <-deadline:
			t.Fatalf("the child did not print %q", line)
		}
	}
}

// kill sends sig to the child and, for SIGKILL, waits until it is gone.
func (c *child) kill(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if sig == syscall.SIGKILL {
		c.cmd.Wait()
	}
}

// parent is rank 0 of the crash tests, in this process.
func parent(t *testing.T, dir string, n int, h transport.Handler) *Transport {
	t.Helper()
	tr, err := Listen(Config{Self: 0, Dir: dir, Name: sockName(0), Handler: h, Auth: testKey})
	if err != nil {
		t.Fatal(err)
	}
	tr.SetPeers(addrs(dir, n))
	return tr
}

// events collects the recorder's events until "lost 1" (or the deadline).
func untilLost(t *testing.T, r *recorder) []string {
	t.Helper()
	var ev []string
	deadline := time.After(60 * time.Second)
	for {
		select {
		case e := <-r.event:
			ev = append(ev, e)
			if e == "lost 1" {
				return ev
			}
		case <-deadline:
			t.Fatalf("rank 1 was not reported lost (events %v)", ev)
		}
	}
}

// pairMaps counts this process's mappings of pair segments.
func pairMaps(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "memfd:ftmpi-pair")
}

func devShm(t *testing.T) []string {
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// A sender killed after writing a frame's bytes but before publishing
// them: the receiver delivers nothing of it and reports the peer lost.
func TestCrashSenderKilledBeforePublish(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	tr := parent(t, dir, 2, rec)
	defer tr.Close()
	c := startChild(t, "cut-before-publish", dir)
	c.expect(t, "written")
	c.kill(t, syscall.SIGKILL)
	ev := untilLost(t, rec)
	if len(ev) != 1 || rec.frames != 0 {
		t.Fatalf("events %v and %d frames announced, want only the loss", ev, rec.frames)
	}
}

// A sender killed inside an 8 MiB frame (its header and two chunks
// published, the third written but not published): the frame ends with
// an error, then the peer is reported lost; nothing else is delivered.
func TestCrashSenderKilledMidFrame(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	tr := parent(t, dir, 2, rec)
	defer tr.Close()
	c := startChild(t, "cut-mid-frame", dir)
	c.expect(t, "midframe")
	c.kill(t, syscall.SIGKILL)
	ev := untilLost(t, rec)
	if strings.Join(ev, ",") != "cut 7,lost 1" || rec.frames != 1 {
		t.Fatalf("events %v with %d frames announced, want the frame cut then the loss", ev, rec.frames)
	}
	rec.check(t)
}

// A sender killed while its 8 MiB payload waits in its memory for the
// receiver to read it (the receiver holds inside the frame's Frame call
// until the sender is dead): the frame ends with an error, then the peer
// is reported lost.
func TestCrashSenderKilledBeforeItsPayloadIsRead(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	rx := &holdHandler{recorder: rec, seen: make(chan struct{}), hold: make(chan struct{})}
	tr := parent(t, dir, 2, rx)
	defer tr.Close()
	c := startChild(t, "big-sender", dir)
	select {
	case <-rx.seen:
	case <-time.After(60 * time.Second):
		t.Fatal("the big frame did not arrive")
	}
	tr.mu.Lock()
	cma := tr.pairs[1].in.cma.Load() == 1
	tr.mu.Unlock()
	if !cma {
		t.Fatal("the payload is not to be read from the sender's memory")
	}
	c.kill(t, syscall.SIGKILL)
	close(rx.hold)
	ev := untilLost(t, rec)
	if strings.Join(ev, ",") != "cut 7,lost 1" || rec.frames != 1 {
		t.Fatalf("events %v with %d frames announced, want the frame cut then the loss", ev, rec.frames)
	}
	rec.check(t)
}

// A receiver killed while the sender waits for room in a full ring: the
// send ends with ErrPeerLost, the peer is reported lost and its memory is
// unmapped.
func TestCrashReceiverKilledWhileSenderWaits(t *testing.T) {
	dir := t.TempDir()
	before := devShm(t)
	rec := newRecorder()
	tr := parent(t, dir, 2, rec)
	defer tr.Close()
	c := startChild(t, "hold-receiver", dir)
	sent := make(chan error, 1)
	go func() { sent <- tr.Send(1, transport.Header{Kind: 1, Seq: 1}, make([]byte, 8<<20)) }()
	c.expect(t, "frame") // the child holds its receiver: at most a ring of the 8 MiB fits
	select {
	case err := <-sent:
		t.Fatalf("the send completed (%v) while the receiver holds", err)
	default:
	}
	c.kill(t, syscall.SIGKILL)
	select {
	case err := <-sent:
		if !errors.Is(err, transport.ErrPeerLost) {
			t.Fatalf("the send ended with %v, want ErrPeerLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the send to a dead receiver did not end")
	}
	untilLost(t, rec)
	waitFor(t, "the dead peer's segment to be unmapped", func() bool { return pairMaps(t) == 0 })
	if after := devShm(t); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Fatalf("/dev/shm changed: %v, was %v", after, before)
	}
}

// A stopped peer (SIGSTOP) holding a full ring blocks nobody else: frames
// between the other ranks flow both ways, posts to the stopped peer
// return at once; killed, it fails what waits for it.
func TestCrashStoppedPeerBlocksNobodyElse(t *testing.T) {
	dir := t.TempDir()
	rec0, rec2 := newRecorder(), newRecorder()
	tr0 := parent(t, dir, 3, rec0)
	defer tr0.Close()
	tr2, err := Listen(Config{Self: 2, Dir: dir, Name: sockName(2), Handler: rec2, Auth: testKey})
	if err != nil {
		t.Fatal(err)
	}
	tr2.SetPeers(addrs(dir, 3))
	defer tr2.Close()
	c := startChild(t, "echo", dir)
	b := make([]byte, 64)
	fill(b, 1)
	if err := tr0.Send(1, transport.Header{Kind: 4, Seq: 1}, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the echo", func() bool { return rec0.count(1) == 1 })
	c.kill(t, syscall.SIGSTOP)
	defer c.cmd.Process.Signal(syscall.SIGCONT)
	bigDone := make(doneCh, 1)
	tr0.Post(1, transport.Header{Kind: 5, Seq: 2}, make([]byte, 8<<20), bigDone)
	posted := make(chan struct{})
	go func() {
		tr2.Post(1, transport.Header{Kind: 5, Seq: 3}, nil, nil)
		close(posted)
	}()
	select {
	case <-posted:
	case <-time.After(30 * time.Second):
		t.Fatal("a post to the stopped peer blocked")
	}
	for i := range 20 {
		p := make([]byte, (i%4)*(1<<20)+8)
		fill(p, uint64(10+i))
		if err := tr0.Send(2, transport.Header{Kind: 6, Seq: uint64(10 + i)}, p); err != nil {
			t.Fatal(err)
		}
		if err := tr2.Send(0, transport.Header{Kind: 6, Seq: uint64(10 + i)}, p); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the frames between the running ranks", func() bool { return rec2.count(0) == 20 && rec0.count(2) == 20 })
	select {
	case err := <-bigDone:
		t.Fatalf("the frame to the stopped peer completed (%v)", err)
	default:
	}
	c.kill(t, syscall.SIGKILL)
	select {
	case err := <-bigDone:
		if !errors.Is(err, transport.ErrPeerLost) {
			t.Fatalf("the frame to the killed peer ended with %v, want ErrPeerLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the frame to the killed peer did not end")
	}
	untilLost(t, rec0)
	rec0.check(t)
	rec2.check(t)
}
