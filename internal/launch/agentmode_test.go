package launch

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
)

// agentUnderTest runs RunAgent on pipes, as ssh would.
type agentUnderTest struct {
	toAgent *io.PipeWriter
	from    *bufio.Reader
	stderr  *syncBuffer
	code    chan int
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

func startAgent(t *testing.T) *agentUnderTest {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &agentUnderTest{toAgent: inW, from: bufio.NewReader(outR), stderr: &syncBuffer{}, code: make(chan int, 1)}
	go func() {
		a.code <- RunAgent(inR, outW, a.stderr)
		outW.Close()
	}()
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return a
}

func (a *agentUnderTest) send(t *testing.T, m agentwire.Msg) {
	t.Helper()
	if err := agentwire.Write(a.toAgent, m); err != nil {
		t.Fatal(err)
	}
}

// next reads the agent's next frame other than a ping.
func (a *agentUnderTest) next(t *testing.T) agentwire.Msg {
	t.Helper()
	for {
		m, err := agentwire.Read(a.from)
		if err != nil {
			t.Fatalf("reading the agent: %v (stderr: %s)", err, a.stderr.String())
		}
		if m.Type != agentwire.TPing {
			return m
		}
	}
}

func (a *agentUnderTest) exit(t *testing.T, d time.Duration) int {
	t.Helper()
	go io.Copy(io.Discard, a.from) // what it still writes
	select {
	case c := <-a.code:
		return c
	case <-time.After(d):
		t.Fatalf("the agent did not exit within %v (stderr: %s)", d, a.stderr.String())
		return -1
	}
}

func agentHello() agentwire.Msg {
	return agentwire.Msg{Type: agentwire.THello, Version: agentwire.Version, Job: "j", Host: "hx",
		HBPeriod: int64(50 * time.Millisecond), HBTimeout: int64(500 * time.Millisecond), HeadAddr: "127.0.0.1"}
}

// TestAgentKillsRanksWhenHeadSilent: the head stops sending (a partition):
// after the heartbeat timeout the agent SIGKILLs its rank, reports
// nothing more, and exits 1.
func TestAgentKillsRanksWhenHeadSilent(t *testing.T) {
	a := startAgent(t)
	a.send(t, agentHello())
	if m := a.next(t); m.Type != agentwire.TReady || m.Error != "" || m.Listen != "127.0.0.1" {
		t.Fatalf("ready: %+v", m)
	}
	a.send(t, agentwire.Msg{Type: agentwire.TStart, Seq: 1, Specs: []agentwire.Spec{{Rank: 3, Path: "/bin/sleep", Args: []string{"60"}}}})
	if m := a.next(t); m.Type != agentwire.TStarted || m.Seq != 1 {
		t.Fatalf("started: %+v", m)
	}
	a.send(t, agentwire.Msg{Type: agentwire.TCheck, Token: 9, Rank: 3})
	m := a.next(t)
	if m.Type != agentwire.TState || m.Token != 9 || !m.Alive || m.Pid <= 0 {
		t.Fatalf("state: %+v", m)
	}
	pid := m.Pid
	start := time.Now()
	// Silence from now on: the agent must give up within its timeout.
	if c := a.exit(t, 10*time.Second); c != 1 {
		t.Fatalf("exit %d, want 1", c)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", d)
	}
	if !strings.Contains(a.stderr.String(), "no heartbeat from the head") {
		t.Fatalf("stderr: %s", a.stderr.String())
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatalf("rank process %d survives its agent", pid)
	}
}

// TestAgentHeadSlowFrameIsNotSilence: a frame that takes longer than the
// heartbeat timeout to arrive (a preloaded binary's 1 MiB piece through
// ssh on a loaded host: CI's TestMultiHostRing lost a host "no heartbeat
// from the head for 3.1 s" during --preload-binary) keeps the head alive
// while its bytes move; the agent handles it once whole.
func TestAgentHeadSlowFrameIsNotSilence(t *testing.T) {
	a := startAgent(t)
	h := agentHello()
	h.HBTimeout = int64(time.Second)
	a.send(t, h)
	if m := a.next(t); m.Type != agentwire.TReady || m.Error != "" {
		t.Fatalf("ready: %+v", m)
	}
	// The agent's frames (pings) are read until its answer to the frame.
	answer := make(chan agentwire.Msg, 1)
	go func() {
		for {
			m, err := agentwire.Read(a.from)
			if err != nil || m.Type != agentwire.TPing {
				answer <- m
				return
			}
		}
	}()
	frame, err := agentwire.Encode(nil, agentwire.Msg{Type: agentwire.TFile, File: "slow", Data: bytes.Repeat([]byte{7}, 64<<10), Final: true})
	if err != nil {
		t.Fatal(err)
	}
	// 25 pieces 100 ms apart: 2.5 s, more than twice the timeout, with
	// no frame whole before the last piece. The pipe returns a write once
	// the agent read it.
	const pieces = 25
	step := (len(frame) + pieces - 1) / pieces
	for off := 0; off < len(frame); off += step {
		select {
		case c := <-a.code:
			t.Fatalf("the agent exited %d with the frame %d of %d bytes in: %s", c, off, len(frame), a.stderr.String())
		default:
		}
		if _, err := a.toAgent.Write(frame[off:min(off+step, len(frame))]); err != nil {
			t.Fatalf("writing the frame at %d: %v (stderr: %s)", off, err, a.stderr.String())
		}
		time.Sleep(100 * time.Millisecond) // the slow link under test, not a synchronisation
	}
	select {
	case m := <-answer:
		if m.Type != agentwire.TFileDone || m.File != "slow" || m.Error != "" || m.Path == "" {
			t.Fatalf("the agent answered the slow frame with %+v (stderr: %s)", m, a.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer to the slow frame (stderr: %s)", a.stderr.String())
	}
	a.send(t, agentwire.Msg{Type: agentwire.TBye})
	if c := a.exit(t, 10*time.Second); c != 0 {
		t.Fatalf("exit %d, want 0 (a Bye after the slow frame): %s", c, a.stderr.String())
	}
}

// TestAgentHeadClosed: the session ends (the head's host crashed): the
// agent kills its rank and exits 1 at once.
func TestAgentHeadClosed(t *testing.T) {
	a := startAgent(t)
	h := agentHello()
	h.HBTimeout = int64(time.Minute)
	a.send(t, h)
	a.next(t)
	a.send(t, agentwire.Msg{Type: agentwire.TStart, Seq: 1, Specs: []agentwire.Spec{{Rank: 0, Path: "/bin/sleep", Args: []string{"60"}}}})
	a.next(t)
	a.toAgent.Close()
	if c := a.exit(t, 10*time.Second); c != 1 || !strings.Contains(a.stderr.String(), "lost the head") {
		t.Fatalf("exit %d: %s", c, a.stderr.String())
	}
}

// TestAgentRejectsBadStart: a first message that is not hello, or a
// garbage frame, ends the agent with a reason, never a panic.
func TestAgentRejectsBadStart(t *testing.T) {
	a := startAgent(t)
	a.send(t, agentwire.Msg{Type: agentwire.TPing})
	if c := a.exit(t, 10*time.Second); c != 1 || !strings.Contains(a.stderr.String(), "first message is ping, not hello") {
		t.Fatalf("exit %d: %s", c, a.stderr.String())
	}
	a = startAgent(t)
	a.toAgent.Write([]byte{0, 0, 0, 3, 99, '{', '}'})
	if c := a.exit(t, 10*time.Second); c != 1 || !strings.Contains(a.stderr.String(), "unknown message type 99") {
		t.Fatalf("exit %d: %s", c, a.stderr.String())
	}
}

// TestAgentByeReportsAndExits: a rank runs to its end and is reported;
// after Bye the agent exits 0.
func TestAgentByeReportsAndExits(t *testing.T) {
	a := startAgent(t)
	a.send(t, agentHello())
	a.next(t)
	a.send(t, agentwire.Msg{Type: agentwire.TStart, Seq: 1, Specs: []agentwire.Spec{{Rank: 1, Path: "/bin/sh", Args: []string{"-c", "echo hi; exit 3"}, Env: []string{"A=1"}}}})
	var sawOut, sawExit bool
	for !sawExit {
		m := a.next(t)
		switch m.Type {
		case agentwire.TOutput:
			sawOut = m.Rank == 1 && string(m.Line) == "hi\n"
		case agentwire.TExited:
			sawExit = true
			if m.Rank != 1 || m.Status != 3 || !sawOut {
				t.Fatalf("exited %+v (output seen: %v)", m, sawOut)
			}
		}
		if m.Type != agentwire.TExited {
			a.send(t, agentwire.Msg{Type: agentwire.TPing})
		}
	}
	a.send(t, agentwire.Msg{Type: agentwire.TBye})
	if c := a.exit(t, 10*time.Second); c != 0 {
		t.Fatalf("exit %d: %s", c, a.stderr.String())
	}
}

// TestAgentRejectsMalformedSecret: a hello whose secret is not a secret
// (not hex, or the wrong length) makes the agent refuse the job with the
// reason in its Ready, never start ranks without it.
func TestAgentRejectsMalformedSecret(t *testing.T) {
	for _, secret := range []string{"zz", "abcd"} {
		a := startAgent(t)
		h := agentHello()
		h.Secret = secret
		a.send(t, h)
		m := a.next(t)
		if m.Type != agentwire.TReady || !strings.Contains(m.Error, "the job's secret in the hello") {
			t.Fatalf("secret %q: reply %+v", secret, m)
		}
		if c := a.exit(t, 10*time.Second); c != 1 {
			t.Fatalf("secret %q: exit %d: %s", secret, c, a.stderr.String())
		}
	}
}
