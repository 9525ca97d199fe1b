package launch

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
)

// ctlClient is a bare control connection for tests of the head.
type ctlClient struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
	id uint64
}

func dialHead(t *testing.T, addr string, job string, rank, pid int) *ctlClient {
	t.Helper()
	nc, err := net.DialTimeout("unix", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	c := &ctlClient{t: t, nc: nc, r: bufio.NewReader(nc)}
	c.req(ctlwire.Msg{Op: ctlwire.OpHello, Job: job, Rank: rank, Pid: pid})
	if m := c.next(); m.Op != ctlwire.OpHello {
		t.Fatalf("hello reply %+v", m)
	}
	return c
}

func (c *ctlClient) req(m ctlwire.Msg) {
	c.t.Helper()
	c.id++
	m.ID = c.id
	b, _ := json.Marshal(m)
	if _, err := c.nc.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next message (every wait is bounded).
func (c *ctlClient) next() ctlwire.Msg {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := c.r.ReadBytes('\n')
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m ctlwire.Msg
	if err := json.Unmarshal(line, &m); err != nil {
		c.t.Fatalf("bad line %q: %v", line, err)
	}
	return m
}

// zombie returns the pid of a process that has exited (or is exiting) and
// is not reaped yet (what a SIGKILLed rank is until the launcher's wait
// returns).
func zombie(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "exec 1>&-; exit 0")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	io.ReadAll(r) // EOF: the child closed its stdout and is exiting
	r.Close()
	t.Cleanup(func() { cmd.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if state, alive := hostagent.ProcState(cmd.Process.Pid); !alive {
			if state != "dead" && state != "exiting" {
				t.Fatalf("child %d is %s, want exiting or dead (a zombie)", cmd.Process.Pid, state)
			}
			return cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatal("child did not exit within 10s")
		}
		time.Sleep(time.Millisecond) // polling the child's state, not synchronising goroutines
	}
}

// A suspicion that finds the suspect dead (a zombie, not reaped yet) tells
// every survivor at once in --on-failure continue mode, before the death
// is reaped; the reaped death then sends nothing more.
func TestSuspectOfDeadRankNotifiesEveryoneAtOnce(t *testing.T) {
	t.Parallel()
	h := newHead("job", 4, OnFailureContinue, &output{stdout: io.Discard, stderr: io.Discard}, false)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	defer h.close()
	addr := ln.Addr().String()
	dead := zombie(t)
	c0 := dialHead(t, addr, "job", 0, 0)
	c1 := dialHead(t, addr, "job", 1, 0)
	dialHead(t, addr, "job", 2, dead)

	c0.req(ctlwire.Msg{Op: ctlwire.OpSuspect, Rank: 2, Reason: "connection broken"})
	for _, c := range []*ctlClient{c0, c1} {
		var ev ctlwire.Msg
		for ev.Op != ctlwire.OpEvent {
			if ev = c.next(); ev.Op != ctlwire.OpEvent && ev.Op != ctlwire.OpSuspect {
				t.Fatalf("unexpected %+v", ev)
			}
		}
		if ev.Kind != ctlwire.EventFailed || ev.Rank != 2 || !strings.Contains(ev.Reason, "declared failed by rank 0: connection broken") {
			t.Fatalf("event %+v", ev)
		}
	}
	// A rank that connects after the notice still learns of the failure.
	c3 := dialHead(t, addr, "job", 3, 0)
	if ev := c3.next(); ev.Op != ctlwire.OpEvent || ev.Kind != ctlwire.EventFailed || ev.Rank != 2 {
		t.Fatalf("late rank: %+v", ev)
	}
	// The reaped death: no second event. A request sent after it is
	// answered next, so a duplicate event would be read first.
	h.Exited(hostagent.ExitReport{Rank: 2, Pid: dead, Signal: syscall.SIGKILL})
	for _, c := range []*ctlClient{c1, c3} {
		c.req(ctlwire.Msg{Op: ctlwire.OpSuspect, Rank: 2}) // answered at once: rank 2 is gone
		if m := c.next(); m.Op != ctlwire.OpSuspect {
			t.Fatalf("after the reaped death: %+v, want the reply to the request", m)
		}
	}
}

// In abort mode a suspicion sends no failed event (the job is torn down
// when the death is reaped).
func TestSuspectOfDeadRankAbortModeNoEvent(t *testing.T) {
	t.Parallel()
	h := newHead("job", 3, OnFailureAbort, &output{stdout: io.Discard, stderr: io.Discard}, false)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	defer h.close()
	addr := ln.Addr().String()
	dead := zombie(t)
	c0 := dialHead(t, addr, "job", 0, 0)
	c1 := dialHead(t, addr, "job", 1, 0)
	dialHead(t, addr, "job", 2, dead)
	c0.req(ctlwire.Msg{Op: ctlwire.OpSuspect, Rank: 2, Reason: "connection broken"})
	if m := c0.next(); m.Op != ctlwire.OpSuspect {
		t.Fatalf("suspect reply %+v", m)
	}
	c1.req(ctlwire.Msg{Op: ctlwire.OpSuspect, Rank: 1})
	if m := c1.next(); m.Op != ctlwire.OpError || !strings.Contains(m.Error, "suspects itself") {
		t.Fatalf("%+v, want the reply to the request (no event)", m)
	}
}

// The failed event reaches ranks with an event socket as a datagram (one
// sendmmsg for all of them), not on their control connection; a rank whose
// event socket is gone gets it on its control connection.
func TestFailedEventByDatagram(t *testing.T) {
	h := newHead("job", 3, OnFailureContinue, &output{stdout: io.Discard, stderr: io.Discard}, false)
	defer h.close()
	dir := t.TempDir()
	listen := func(r int) *net.UnixConn {
		name := filepath.Join(dir, fmt.Sprintf("ev-%d.sock", r))
		uc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		return uc
	}
	type end struct {
		cc *ctlConn
		r  *bufio.Reader
	}
	ends := make([]end, 3)
	for r := 1; r < 3; r++ {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		cc := newCtlConn(a)
		cc.id = policy.Conn(r)
		h.wg.Add(1)
		go func() { defer h.wg.Done(); cc.writeLoop() }()
		h.conns[cc.id] = cc
		ends[r] = end{cc, bufio.NewReader(b)}
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	ev1 := listen(1)
	defer ev1.Close()
	ev2 := listen(2)
	ev2.Close() // gone: the control connection must carry the event
	h.mu.Lock()
	ends[1].cc.evAddr = eventAddr(ev1.LocalAddr().String())
	ends[2].cc.evAddr = eventAddr(ev2.LocalAddr().String())
	if ends[1].cc.evAddr == nil {
		h.mu.Unlock()
		t.Fatalf("event address %q not accepted", ev1.LocalAddr())
	}
	h.notify([]policy.Conn{1, 2}, ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: 0, Reason: "rank 0 (pid 1234) killed: declared failed by rank 1: connection broken"})
	h.mu.Unlock()
	if restore, ok := rtFor(true); ok {
		restore()
		// Permitted here: the broadcast's sendmmsg ran real-time.
		if n := h.rtBroadcasts.Load(); n != 1 {
			t.Errorf("broadcasts sent real-time: %d, want 1", n)
		}
	}

	parse := func(b []byte) ctlwire.Msg {
		var m ctlwire.Msg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("bad event %q: %v", b, err)
		}
		if m.Op != ctlwire.OpEvent || m.Kind != ctlwire.EventFailed || m.Rank != 0 || !strings.Contains(m.Reason, "connection broken") {
			t.Fatalf("event %+v", m)
		}
		return m
	}
	buf := make([]byte, 64<<10)
	ev1.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, _, err := ev1.ReadFromUnix(buf)
	if err != nil {
		t.Fatal(err)
	}
	parse(buf[:n])
	line, err := ends[2].r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	parse(line)
	// Rank 1's control connection carries the next message, not the event.
	ends[1].cc.send(ctlwire.Msg{Op: ctlwire.OpHello, ID: 9})
	line, err = ends[1].r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var m ctlwire.Msg
	if json.Unmarshal(line, &m); m.Op != ctlwire.OpHello || m.ID != 9 {
		t.Fatalf("rank 1's control connection: %q, want only the later message", line)
	}
}

// A suspicion of a rank whose hello carried no pid is still checked: the
// head asks the agent for the pid and refuses to kill a process that is
// running or sleeping.
func TestSuspectOfLiveRankWithoutPidIsRefused(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep program")
	}
	h := newHead("job", 2, OnFailureContinue, &output{stdout: io.Discard, stderr: io.Discard}, false)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	defer h.close()
	agent := hostagent.NewLocalAgent("host", h)
	h.addAgent(agent)
	agent.Start([]hostagent.RankSpec{{Rank: 1, Path: sleep, Args: []string{"60"}}})
	defer agent.Wait()
	defer h.signalAll(syscall.SIGKILL)
	addr := ln.Addr().String()
	c0 := dialHead(t, addr, "job", 0, 0)
	dialHead(t, addr, "job", 1, 0) // the sleeping process's rank, no pid said
	c0.req(ctlwire.Msg{Op: ctlwire.OpSuspect, Rank: 1, Reason: "no heartbeat"})
	if m := c0.next(); m.Op != ctlwire.OpError || !strings.Contains(m.Error, fmt.Sprintf("suspect: rank 1 is alive (process %d ", agent.Pid(1, 0))) {
		t.Fatalf("%+v, want the refusal", m)
	}
	if agent.Pid(1, 0) == 0 {
		t.Fatal("the sleeping rank was killed")
	}
}
