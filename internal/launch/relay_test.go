package launch

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/launch/agentwire"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// gateLine feeds the gate a request of connection id and returns the
// frames it sends up, each as "conn:op" entries ("conn:close" for a close,
// "+" before an open).
func gateLine(g *relayGate, id uint32, m ctlwire.Msg) []string {
	return frames(g.line(id, string(encodeLine(m)), m))
}

func frames(fs [][]agentwire.CtlLine) []string {
	var out []string
	for _, f := range fs {
		var es []string
		for _, e := range f {
			s := strconv.Itoa(int(e.Conn)) + ":"
			if e.Open {
				s = "+" + s
			}
			if e.Close {
				s += "close"
			} else {
				s += decodeOp(e.Line)
			}
			es = append(es, s)
		}
		out = append(out, strings.Join(es, " "))
	}
	return out
}

func decodeOp(line string) string {
	m, _ := decodeRequest([]byte(line), -1)
	return m.Op
}

func expectFrames(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Fatalf("%s: frames %q, want %q", what, got, want)
	}
}

func hello(rank, inc int) ctlwire.Msg {
	return ctlwire.Msg{Op: ctlwire.OpHello, ID: 1, Rank: rank, Incarnation: inc}
}

// TestRelayGateHoldsTheCollectivePhases: an agent with three ranks holds
// their hellos and fences until all three sent theirs, then sends each
// phase up as one frame; other requests go up at once.
func TestRelayGateHoldsTheCollectivePhases(t *testing.T) {
	g := newRelayGate()
	for r := 1; r <= 3; r++ {
		g.started(r, 0)
		g.open(uint32(r), r)
	}
	expectFrames(t, "hello 1", gateLine(g, 1, hello(1, 0)))
	expectFrames(t, "hello 2", gateLine(g, 2, hello(2, 0)))
	expectFrames(t, "hello 3", gateLine(g, 3, hello(3, 0)), "+1:hello +2:hello +3:hello")
	fence := ctlwire.Msg{Op: ctlwire.OpFence, ID: 2}
	expectFrames(t, "fence 3", gateLine(g, 3, fence))
	expectFrames(t, "fence 1", gateLine(g, 1, fence))
	expectFrames(t, "lookup 2", gateLine(g, 2, ctlwire.Msg{Op: ctlwire.OpEndpoints, ID: 3, Procs: []int{1}}), "2:endpoints")
	expectFrames(t, "fence 2", gateLine(g, 2, fence), "3:fence 1:fence 2:fence")
	if len(g.held) != 0 {
		t.Fatalf("held after the fence: %d", len(g.held))
	}
	// The second fence: rank 2 is gone; the others' fences go up as soon
	// as the agent hears of its exit.
	expectFrames(t, "fence 1 again", gateLine(g, 1, fence))
	expectFrames(t, "rank 2 exits", frames(g.exited(2, 0)))
	expectFrames(t, "fence 3 again", gateLine(g, 3, fence), "1:fence 3:fence")
}

// TestRelayGateDropsAClosedConnectionsHeldRequests: a rank killed inside
// the fence: its held request is dropped, its close goes up, and the
// others' fences go up since nothing more is expected from it. A
// connection whose hello never went up closes unseen by the head.
func TestRelayGateDropsAClosedConnectionsHeldRequests(t *testing.T) {
	g := newRelayGate()
	for r := 0; r < 3; r++ {
		g.started(r, 0)
		g.open(uint32(r+1), r)
	}
	g.started(3, 0)
	g.open(4, 3)
	for r := 0; r < 3; r++ {
		gateLine(g, uint32(r+1), hello(r, 0))
	}
	expectFrames(t, "rank 3's hello held, rank 3 dies", gateLine(g, 4, hello(3, 0)), "+1:hello +2:hello +3:hello +4:hello")
	fence := ctlwire.Msg{Op: ctlwire.OpFence, ID: 2}
	gateLine(g, 1, fence)
	gateLine(g, 2, fence)
	expectFrames(t, "rank 1 closes inside the fence", frames(g.closed(2)), "2:close")
	expectFrames(t, "rank 2's fence", gateLine(g, 3, fence))
	expectFrames(t, "rank 3 closes", frames(g.closed(4)), "4:close", "1:fence 3:fence")

	g = newRelayGate()
	g.started(0, 0)
	g.started(1, 0)
	g.open(1, 0)
	g.open(2, 1)
	expectFrames(t, "held hello", gateLine(g, 1, hello(0, 0)))
	expectFrames(t, "a close before anything went up", frames(g.closed(1)))
	expectFrames(t, "the other hello", gateLine(g, 2, hello(1, 0)), "+2:hello")
}

// TestRelayGateOrderAndFlush: a request that is not held goes up after
// its connection's held ones; the timer's flush sends everything held.
func TestRelayGateOrderAndFlush(t *testing.T) {
	g := newRelayGate()
	g.started(0, 0)
	g.started(1, 0)
	g.open(1, 0)
	expectFrames(t, "hello held", gateLine(g, 1, hello(0, 0)))
	expectFrames(t, "abort after a held hello", gateLine(g, 1, ctlwire.Msg{Op: ctlwire.OpAbort, ID: 2}), "+1:hello 1:abort")
	expectFrames(t, "fence held", gateLine(g, 1, ctlwire.Msg{Op: ctlwire.OpFence, ID: 3}))
	expectFrames(t, "flush", frames(g.flush()), "1:fence")
	expectFrames(t, "nothing left", frames(g.flush()))
}

// TestRelayGateRejoin: a Reinit epoch's rejoin is held until every rank
// still in Reinit rejoined it, and the respawned incarnation (started, not
// yet connected) too; a rank that left Reinit or finalizes is not waited
// for.
func TestRelayGateRejoin(t *testing.T) {
	g := newRelayGate()
	for r := 0; r < 3; r++ {
		g.started(r, 0)
		g.open(uint32(r+1), r)
		gateLine(g, uint32(r+1), hello(r, 0))
	}
	gateLine(g, 3, ctlwire.Msg{Op: ctlwire.OpReinit, ID: 2, Kind: ctlwire.ReinitLeave})
	g.exited(1, 0)
	g.closed(2)
	g.started(1, 1) // respawned here
	rejoin := ctlwire.Msg{Op: ctlwire.OpRejoin, ID: 3, Epoch: 1}
	expectFrames(t, "rank 0 rejoins", gateLine(g, 1, rejoin))
	g.open(4, 1)
	expectFrames(t, "the respawned hello", gateLine(g, 4, hello(1, 1)), "+4:hello")
	expectFrames(t, "the respawned rejoin", gateLine(g, 4, rejoin), "1:rejoin 4:rejoin")
}

var relayLogRE = regexp.MustCompile(`relay: (\d+) connections, (\d+) frames up \(hello (\d+), fence (\d+), rejoin (\d+)\), (\d+) down`)

// relayLog is the head's count of relayed connections and frames (its -v
// line at the end of the job).
func relayLog(t *testing.T, stderr string) (conns, up, hello, fence, down int) {
	t.Helper()
	m := relayLogRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no relay line:\n%s", stderr)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	return n(1), n(2), n(3), n(4), n(6)
}

// TestRelayFramesAtTheHead: with FTMPI_RELAY=1, the ring over three hosts
// (one rank at the head, 2 and 3 on two remote ones) reaches the head
// through two connections, and the start-up's hellos and fences arrive as
// one frame a remote host each.
func TestRelayFramesAtTheHead(t *testing.T) {
	t.Parallel()
	ssh, _ := fakeSSH(t)
	ring := ringProgram(t)
	// An hour's hold (as TestRelayRankKilledInsideTheFence): one frame a
	// host however far apart its ranks start.
	r := jobtest.Run(t, 60*time.Second, []string{EnvRelay + "=1", EnvRelayHold + "=1h"}, ftmpirunBin, "-v", "--host", "localhost:1,fake2:2,fake3:3",
		"--interface", "lo", "--launch-agent", ssh, "--tag-output", ring)
	res := result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}
	expectCode(t, res, 0)
	if !strings.Contains(r.Stdout, "[0] result: ranks=6 token=15 ok") {
		t.Fatalf("ring over 3 hosts:\n%s\n%s", r.Stdout, r.Stderr)
	}
	conns, _, hellos, fences, _ := relayLog(t, r.Stderr)
	if conns != 5 || hellos != 2 || fences != 2 {
		t.Fatalf("relayed %d connections, hellos in %d frames, fences in %d; want 5, 2, 2\n%s", conns, hellos, fences, r.Stderr)
	}
	// The star: no relay line.
	r = jobtest.Run(t, 60*time.Second, []string{EnvRelay + "=0"}, ftmpirunBin, "-v", "--host", "localhost:1,fake2:2",
		"--interface", "lo", "--launch-agent", ssh, ring)
	expectCode(t, result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}, 0)
	if strings.Contains(r.Stderr, "relay:") {
		t.Fatalf("a relay without %s=1:\n%s", EnvRelay, r.Stderr)
	}
}

// ringProgram builds examples/ring once per test.
func ringProgram(t *testing.T) string {
	t.Helper()
	ring := t.TempDir() + "/ring"
	if err := jobtest.Build([]string{ring}, []string{"../../examples/ring"}); err != nil {
		t.Fatal(err)
	}
	return ring
}

// TestRelayRankKilledInsideTheFence: rank 2 SIGKILLs itself after its
// hello, before the start-up fence, on a host whose agent holds its
// neighbours' fences: they go up once the agent sees it gone, and every
// survivor's exchange names it failed, as behind the star.
func TestRelayRankKilledInsideTheFence(t *testing.T) {
	t.Parallel()
	ssh, _ := fakeSSH(t)
	// The hold timer is an hour: the agent sends each phase's requests when
	// all three ranks' are in, never because one was slower than the
	// default hold (500 ms: three -race ranks on a loaded machine start
	// further apart than that, and the hellos went up in 2 frames).
	r := jobtest.Run(t, 60*time.Second, []string{EnvRelay + "=1", EnvRelayHold + "=1h"}, ftmpirunBin, "-v", "--host", "localhost:1,fake2:3",
		"--interface", "lo", "--launch-agent", ssh, "--on-failure", "continue", rankprogBin, "crashearly", "2", "20")
	res := result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}
	expectCode(t, res, 20)
	if n := strings.Count(r.Stdout, "exchange reports [2] gone"); n != 3 {
		t.Fatalf("%d survivors told of rank 2 in the exchange, want 3\n%s", n, r.Stdout)
	}
	conns, _, hellos, fences, _ := relayLog(t, r.Stderr)
	if conns != 3 || hellos != 1 || fences != 1 {
		t.Fatalf("relayed %d connections, hellos in %d frames, fences in %d; want 3, 1, 1\n%s", conns, hellos, fences, r.Stderr)
	}
}

// TestRelayRankStoppedBeforeTheFence: every rank on one remote host, rank
// 2 stopped after its hello and before the fence (no heartbeat runs yet:
// no rank can suspect it). The agent holds the others' fences; only its
// timer sends them up, so that the head, seeing waiters, looks for the
// stalled process, finds it stopped and kills it. Without the timer the
// job hangs until --timeout (checked by hand when the relay was wired).
func TestRelayRankStoppedBeforeTheFence(t *testing.T) {
	t.Parallel()
	ssh, _ := fakeSSH(t)
	r := jobtest.Run(t, 60*time.Second, []string{EnvRelay + "=1"}, ftmpirunBin, "-v", "--timeout", "40s", "--host", "fake2:4",
		"--interface", "lo", "--launch-agent", ssh, "--on-failure", "continue", rankprogBin, "stopearly", "2", "20")
	res := result{code: r.Code, stdout: r.Stdout, stderr: r.Stderr}
	expectCode(t, res, 20)
	expectStderr(t, res, "found stopped")
	if n := strings.Count(r.Stdout, "exchange reports [2] gone"); n != 3 {
		t.Fatalf("%d survivors told of rank 2 in the exchange, want 3\n%s", n, r.Stdout)
	}
}

// TestRelayHostLostWithHeldRequests: the agent of fake2 holds its ranks'
// hellos (rank 2 never connects, and the hold timer is an hour) and is
// SIGKILLed: the head loses the host (its ranks fail), closes the relayed
// connections it knew, and the survivor at the head finishes. Not
// parallel: it counts the connections to agents' sockets on this machine.
func TestRelayHostLostWithHeldRequests(t *testing.T) {
	ssh, dir := fakeSSH(t)
	mark := newMark(t)
	script := fmt.Sprintf(`if [ "$FTMPI_RANK" = 2 ]; then exec sleep 60; fi; exec %s waitfail 1 10`, rankprogBin)
	cmd := exec.Command(ftmpirunBin, "--host", "localhost:1,fake2:3", "--interface", "lo", "--launch-agent", ssh,
		"--on-failure", "continue", "-v", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "FTMPI_TESTMARK="+mark, EnvAgentHBPeriod+"=100ms", EnvAgentHBTimeout+"=1s",
		EnvRelay+"=1", EnvRelayHold+"=1h")
	code, err, log := runKillingAgentWhen(t, cmd, dir, "fake2", func() bool { return connectedTo(t, dir, 2) })
	if code != 10 || !strings.Contains(log, "host fake2 lost") {
		t.Fatalf("exit %d (%v), want 10 with the host lost\n%s", code, err, log)
	}
	// Ranks 1 and 3 were connected to the agent when it was killed; their
	// hellos were held there: the head never saw their connections.
	if conns, up, _, _, _ := relayLog(t, log); conns != 0 || up != 0 {
		t.Fatalf("the head saw %d relayed connections, %d frames: want the hellos held at the agent\n%s", conns, up, log)
	}
	assertNoLeftovers(t, mark, 5*time.Second)
}

// connectedTo tells whether k connections to an agent's control socket
// are open (/proc/net/unix: a socket path ending in /control, connected).
func connectedTo(t *testing.T, _ string, k int) bool {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Skipf("no /proc/net/unix: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		// Num RefCount Protocol Flags Type St Inode Path; St 03: connected.
		if len(f) == 8 && f[5] == "03" && strings.HasSuffix(f[7], "/control") && strings.Contains(f[7], "/ftmpi-") {
			n++
		}
	}
	return n >= k
}

// runKillingAgentWhen is runKillingAgent, the kill once ready() holds
// (nil: at once; polled every 10 ms after "ranks started", 30 s at most).
func runKillingAgentWhen(t *testing.T, cmd *exec.Cmd, dir, host string, ready func() bool) (int, error, string) {
	t.Helper()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	killed := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if !killed && strings.Contains(line, "ranks started") {
			deadline := time.Now().Add(30 * time.Second)
			for ready != nil && !ready() {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("not ready to kill the agent within 30 s\n%s", log.String())
				}
				time.Sleep(10 * time.Millisecond) // polling /proc, with a deadline
			}
			b, err := os.ReadFile(dir + "/agent-" + host + ".pid")
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 {
				t.Fatalf("agent pid: %v %q", err, b)
			}
			syscall.Kill(pid, syscall.SIGKILL)
			killed = true
		}
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, err, log.String()
}

// TestAgentRelayStopEndsHandshakes: an agent that ends while a connection
// to its control socket has not finished its handshake closes it at once,
// instead of waiting for the handshake's bound (controlTimeout, 30 s).
func TestAgentRelayStopEndsHandshakes(t *testing.T) {
	key, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	w := newFrameWriter(io.Discard)
	defer w.stop()
	r, err := listenRelay(t.TempDir(), w, key, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("unix", r.path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		n := len(r.hs)
		r.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection never reached its handshake")
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	t0 := time.Now()
	r.stop()
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("stop took %v with a connection in its handshake", d)
	}
	if _, err := nc.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection in its handshake is still open")
	}
}

// TestAgentRelayEventsAsDatagrams: an event the head sends a relayed rank
// reaches the rank's event socket (its hello named it) as a datagram sealed
// with the job's key; a reply goes on the connection.
func TestAgentRelayEventsAsDatagrams(t *testing.T) {
	key, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w := newFrameWriter(io.Discard)
	defer w.stop()
	r, err := listenRelay(dir, w, key, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.stop()
	evPath := dir + "/ev"
	ev, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: evPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	nc, err := net.Dial("unix", r.path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if err := wireauth.Dial(nc, key, wireauth.Hello{Proto: wireauth.ProtoControl, From: 1, To: wireauth.Launcher}); err != nil {
		t.Fatal(err)
	}
	hello := ctlwire.Msg{Op: ctlwire.OpHello, ID: 1, Rank: 1, KV: map[string]string{boot.HelloEventAddr: evPath}}
	if _, err := nc.Write(encodeLine(hello)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := r.ev[1]
		r.mu.Unlock()
		if got == evPath {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never read the hello's event socket")
		}
		time.Sleep(time.Millisecond) // polling with a deadline
	}
	event := string(encodeLine(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: 3}))
	reply := string(encodeLine(ctlwire.Msg{Op: ctlwire.OpHello, ID: 1}))
	r.down([]agentwire.CtlLine{{Conn: 1, Line: reply}, {Conn: 1, Line: event}})
	ev.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := ev.Read(buf)
	if err != nil {
		t.Fatalf("no event datagram: %v", err)
	}
	opened, err := key.Open(buf[:n])
	if err != nil || string(opened) != event {
		t.Fatalf("datagram %q (%v), want the sealed %q", buf[:n], err, event)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || line != reply {
		t.Fatalf("on the connection %q (%v), want only the reply %q", line, err, reply)
	}
}
