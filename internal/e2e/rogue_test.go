package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// Rogue clients (processes that are not part of the job and do not know
// its secret) try to join a running job, inject a message, fake a failure
// notice and a revocation, over the launcher's control socket, a rank's
// listening socket (Unix, or TCP with --transport tcp) and the ranks' event
// sockets. Every attempt is refused and logged with its reason, and the job
// finishes with its normal result.
func TestRogueClientsCannotJoin(t *testing.T) {
	prog := buildOnce(t, "roguecheck")
	for _, tr := range []string{"unix", "tcp"} {
		t.Run(tr, func(t *testing.T) { rogueRun(t, prog, tr) })
	}
}

func rogueRun(t *testing.T, prog, tr string) {
	mark := jobtest.NewMark(t)
	goFile := filepath.Join(t.TempDir(), "go")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin["ftmpirun"], "-n", "3", "--transport", tr, "--timeout", "100s", prog, goFile)
	cmd.Env = append(os.Environ(), jobtest.MarkVar+"="+mark)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	finished := false
	defer func() {
		if !finished {
			cmd.Process.Kill()
			cmd.Wait()
			jobtest.AssertNoLeftovers(t, mark, 2*time.Second)
		}
	}()
	sc := bufio.NewScanner(out)
	var stdout []string
	var ready string
	for ready == "" && sc.Scan() {
		stdout = append(stdout, sc.Text())
		if strings.HasPrefix(sc.Text(), "ready ") {
			ready = sc.Text()
		}
	}
	if ready == "" {
		cmd.Wait()
		finished = true
		t.Fatalf("no ready line\nstdout:\n%s\nstderr:\n%s", strings.Join(stdout, "\n"), stderr.String())
	}
	var control, dir string
	var pid int
	if _, err := fmt.Sscanf(ready, "ready control=%s dir=%s pid=%d", &control, &dir, &pid); err != nil {
		t.Fatalf("%q: %v", ready, err)
	}
	ctlPath, ok := strings.CutPrefix(control, "unix:")
	if !ok {
		t.Fatalf("control endpoint %q is not a unix socket", control)
	}

	// The launcher's control socket. No secret: the plain protocol,
	// joining as rank 1 and asking the launcher to kill rank 1.
	c := dialRogue(t, "unix", ctlPath)
	c.Write([]byte(`{"op":"hello","id":1,"job":"x","rank":1}` + "\n" + `{"op":"suspect","id":2,"rank":1,"reason":"rogue"}` + "\n"))
	refused(t, c)
	// A wrong secret.
	rogueKey, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	c = dialRogue(t, "unix", ctlPath)
	if err := wireauth.Dial(c, rogueKey, wireauth.Hello{Proto: wireauth.ProtoControl, From: 1, To: wireauth.Launcher}); err == nil {
		t.Fatal("the launcher accepted a wrong secret")
	}
	c.Close()

	// Rank 0's listening socket: the plain hello of rank 1 followed by a
	// revocation of MPI_COMM_WORLD and a message; then a wrong secret.
	network, addr := "unix", ""
	if tr == "unix" {
		socks, _ := filepath.Glob(filepath.Join(dir, "r0.*sock"))
		if len(socks) != 1 {
			t.Fatalf("rank 0's socket in %s: %v", dir, socks)
		}
		addr = socks[0]
	} else {
		network, addr = "tcp", tcpListener(t, pid)
	}
	var wire []byte
	wire = binary.LittleEndian.AppendUint32(wire, 0x66746d70)
	wire = binary.LittleEndian.AppendUint64(wire, 1)
	for _, h := range []transport.Header{
		{Kind: 16, Flags: transport.FlagUrgent, Tag: 1}, // control frame: revoke, context 0
		{Kind: 1, Tag: 7, Src: 2, N: 8},                 // an eager message for the ring
	} {
		var b [transport.HeaderSize]byte
		h.Encode(b[:])
		wire = append(wire, b[:]...)
	}
	wire = binary.LittleEndian.AppendUint64(wire, 99)
	c = dialRogue(t, network, addr)
	c.Write(wire)
	refused(t, c)
	c = dialRogue(t, network, addr)
	if err := wireauth.Dial(c, rogueKey, wireauth.Hello{Proto: wireauth.ProtoSock, From: 1, To: 0}); err == nil {
		t.Fatal("rank 0 accepted a wrong secret")
	}
	c.Close()

	// The ranks' event sockets: a forged failure notice of rank 1.
	evs, _ := filepath.Glob(filepath.Join(dir, "ev-*.sock"))
	if len(evs) != 3 {
		t.Fatalf("event sockets in %s: %v", dir, evs)
	}
	forged, _ := json.Marshal(ctlwire.Msg{Op: ctlwire.OpEvent, Kind: ctlwire.EventFailed, Rank: 1, Reason: "forged"})
	for _, ev := range evs {
		dc, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: ev, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dc.Write(forged); err != nil {
			t.Fatal(err)
		}
		dc.Close()
	}

	// The job goes on: its normal result.
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		stdout = append(stdout, sc.Text())
	}
	err = cmd.Wait()
	finished = true
	jobtest.AssertNoLeftovers(t, mark, 2*time.Second)
	all, errText := strings.Join(stdout, "\n"), stderr.String()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if err != nil || !strings.Contains(all, "result: ring and allreduce sum=3 size=3") {
		t.Fatalf("exit %v\nstdout:\n%s\nstderr:\n%s", err, all, errText)
	}
	for _, want := range []string{
		"ftmpirun: refused a control connection: wireauth: malformed handshake: bad magic",
		"ftmpirun: refused a control connection: wireauth: no proof from the peer claiming 1",
		"ftmpi: process 0: refused a connection",
		"wireauth: malformed handshake: bad magic 0x66746d70",
		"wireauth: no proof from the peer claiming 1",
		"dropped an event datagram: wireauth: datagram with a wrong MAC",
	} {
		if !strings.Contains(errText, want) {
			t.Errorf("the log lacks %q\nstderr:\n%s", want, errText)
		}
	}
	if strings.Contains(errText, "panic") || strings.Contains(errText, "forged") || strings.Contains(errText, "revoked") {
		t.Errorf("a rogue got through\nstderr:\n%s", errText)
	}
}

// lockedBuffer is a bytes buffer written by exec's copying goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

func dialRogue(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(40 * time.Second))
	return c
}

// refused waits until the other end closes c (every read is bounded by
// c's deadline: a timeout means the rogue was not refused).
func refused(t *testing.T, c net.Conn) {
	t.Helper()
	defer c.Close()
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a rogue connection was not closed")
	}
}

// tcpListener finds the address of the TCP socket process pid listens on
// (/proc/PID/fd and /proc/PID/net/tcp).
func tcpListener(t *testing.T, pid int) string {
	t.Helper()
	fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		_, port, _ := strings.Cut(f[1], ":")
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil {
			t.Fatal(err)
		}
		return "127.0.0.1:" + strconv.Itoa(int(p))
	}
	t.Fatalf("process %d listens on no TCP socket", pid)
	return ""
}

// A member of the job (a process with the secret, here a test client in
// rank 2's place) that sends malformed frames after a valid handshake: each
// rank closes that connection with the defect in its log, nothing panics,
// and the two real ranks finish their exchange.
func TestHostileMemberFramesCloseConnection(t *testing.T) {
	prog := buildOnce(t, "hostilecheck")
	r := ftmpirun(t, "-n", "3", "--transport", "unix", "--timeout", "80s", prog)
	if r.Code != 0 || resultLine(t, r) != "result: ranks 0 and 1 exchanged sum=5050" || !strings.Contains(r.Stdout, "hostile: both connections closed") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{
		"ftmpi: process 0: closed the connection from process 2: malformed frame: unknown frame kind 9 (kind 9, context 0, tag 3, 0 payload bytes)",
		"ftmpi: process 1: closed the connection from process 2: malformed frame: a whole frame of 4194304 bytes (at most 1048576)",
	} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the log lacks %q\nstderr:\n%s", want, r.Stderr)
		}
	}
	if strings.Contains(r.Stderr, "panic") {
		t.Errorf("a panic:\n%s", r.Stderr)
	}
}
