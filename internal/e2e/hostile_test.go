package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// The hostile-local-user suite: while a job runs, processes that are not
// part of it (the job's own user, or an unprivileged user the suite
// creates) flood the ranks' and the launcher's listeners with thousands
// of idle connections, far past the descriptor limit the job runs with
// (ulimit -n hostileNoFile, for ftmpirun and its ranks). Every flooded
// listener still answers a handshake, every pair of ranks connects after
// the flood began, and the job prints its failure-free result.

const (
	hostileNoFile = 256
	hostileUser   = "ftmpi-hostile"
	hostileFlood  = 3000 // connections per flooder
	hostileResult = "result: pairs exchanged wrong=0 ranksum=6 size=4"
)

// hostileJob is a running hostilejob under ftmpirun.
type hostileJob struct {
	*jobtest.Live
	mark    string
	goFile  string
	pids    map[int]int // rank -> pid
	control string      // the launcher's control socket (a path)
}

// startHostileJob starts 4 ranks of hostilejob over transport tr, all of
// it limited to hostileNoFile descriptors, and waits until every rank is
// ready. Without the failure detector (detector false) no rank has
// connected to another when they are ready: every connection between
// ranks is made after the flood began. With it, its ring's connections
// exist before, and the flood must not make a rank miss its heartbeats.
func startHostileJob(t *testing.T, tr string, detector bool) *hostileJob {
	t.Helper()
	prog := buildOnce(t, "hostilejob")
	j := &hostileJob{mark: jobtest.NewMark(t), goFile: filepath.Join(t.TempDir(), "go"), pids: map[int]int{}}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -n `+strconv.Itoa(hostileNoFile)+` && exec "$0" "$@"`,
		bin["ftmpirun"], "-n", "4", "--transport", tr, "--timeout", "120s", prog, j.goFile)
	cmd.Env = append(os.Environ(), "FTMPI_TIMEOUT_DUMP=1", jobtest.MarkVar+"="+j.mark)
	if !detector {
		cmd.Env = append(cmd.Env, "FTMPI_HB_TIMEOUT=off")
	}
	t.Cleanup(func() { jobtest.AssertNoLeftovers(t, j.mark, 10*time.Second) }) // after StartLive's clean-up ended the job
	j.Live = jobtest.StartLive(t, cmd, cancel)
	ready := regexp.MustCompile(`^ready rank=(\d+) pid=(\d+) control=unix:(\S+)$`)
	for range 4 {
		j.WaitLine("ready rank=")
	}
	for _, l := range strings.Split(j.Stdout(), "\n") {
		if m := ready.FindStringSubmatch(l); m != nil {
			r, _ := strconv.Atoi(m[1])
			j.pids[r], _ = strconv.Atoi(m[2])
			j.control = m[3]
		}
	}
	if len(j.pids) != 4 || j.control == "" {
		t.Fatalf("ready lines:\n%s", j.Stdout())
	}
	return j
}

// finish lets the job go on, waits for its end and checks its result:
// exit 0, the failure-free result line, and a log that did not grow with
// the flood.
func (j *hostileJob) finish(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(j.goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code := j.Wait()
	stdout, stderr := j.Stdout(), j.Stderr()
	var results []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "result:") {
			results = append(results, l)
		}
	}
	if code != 0 || len(results) != 1 || results[0] != hostileResult {
		t.Fatalf("exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, hostileResult, stdout, stderr)
	}
	if n := strings.Count(stderr, "\n"); n > 100 {
		t.Fatalf("%d log lines: the log grows with the flood\n%s", n, stderr)
	}
	t.Logf("job's log:\n%s", stderr)
}

// floodTool is hostileflood built where any user can run it.
func floodTool(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ftmpi-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "hostileflood")
	if err := jobtest.Build([]string{path}, []string{"./testdata/hostileflood"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, path} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// flooder is a running hostileflood.
type flooder struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr lockedBuffer
	once   sync.Once
	last   string
}

// startFlood runs the flood tool with args, as cred's user (nil: this
// process's).
func startFlood(t *testing.T, tool string, cred *syscall.Credential, args ...string) *flooder {
	t.Helper()
	f := &flooder{lines: make(chan string, 64)}
	f.cmd = exec.Command(tool, args...)
	f.cmd.Env = []string{"PATH=/usr/bin:/bin"}
	f.cmd.Dir = "/"
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	f.cmd.Stderr = &f.stderr
	var err error
	if f.stdin, err = f.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	t.Cleanup(func() {
		f.stop(t)
		<-done
	})
	return f
}

// line waits for the flooder's next line, which must start with prefix.
func (f *flooder) line(t *testing.T, prefix string) string {
	t.Helper()
	select {
	case l, ok := <-f.lines:
		if !ok || !strings.HasPrefix(l, prefix) {
			t.Fatalf("flooder printed %q (ok %v), want %q...\nstderr:\n%s", l, ok, prefix, f.stderr.String())
		}
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("flooder printed no %q line\nstderr:\n%s", prefix, f.stderr.String())
	}
	return ""
}

// flooded waits until the flood is in place and checks that it went
// past the job's descriptor limit.
func (f *flooder) flooded(t *testing.T) {
	t.Helper()
	l := f.line(t, "flooded ")
	var n int
	if _, err := fmt.Sscanf(l, "flooded %d", &n); err != nil || n <= 2*hostileNoFile {
		t.Fatalf("%q: the flood did not go past the descriptor limit %d", l, hostileNoFile)
	}
}

// stop ends the flood (its connections closed) and returns its last line
// ("closed K of N").
func (f *flooder) stop(t *testing.T) string {
	t.Helper()
	f.once.Do(func() {
		f.stdin.Close()
		for l := range f.lines {
			f.last = l
		}
		exited := make(chan error, 1)
		go func() { exited <- f.cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			f.cmd.Process.Kill()
			<-exited
		}
	})
	return f.last
}

// answers checks that the listener at addr still runs handshakes: a
// well-formed hello gets the challenge of the three-message handshake.
func answers(t *testing.T, what, network, addr string, h wireauth.Hello) {
	t.Helper()
	c, err := net.DialTimeout(network, addr, 20*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	var hb [wireauth.HelloSize]byte
	h.Encode(hb[:])
	if _, err := c.Write(hb[:]); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var ch [wireauth.ChallengeSize]byte
	if _, err := io.ReadFull(c, ch[:]); err != nil {
		t.Fatalf("%s no longer answers a handshake under the flood: %v", what, err)
	}
}

// TestFloodedJobFinishes: the job's own user (not a member of the job: no
// secret) floods rank 1's TCP listener, the launcher's control socket and
// (default transport) rank 1's shared-memory socket with 3000 idle
// connections each, while the job runs with 256 descriptors; each still
// answers handshakes, and the job, whose ranks all connect to each other
// after the flood began, prints its failure-free result. Before issue 27
// the flooded rank stopped accepting for good and the job aborted.
func TestFloodedJobFinishes(t *testing.T) {
	tool := floodTool(t)
	for _, tr := range []string{"tcp", "auto"} {
		t.Run(tr, func(t *testing.T) {
			j := startHostileJob(t, tr, false)
			addr := tcpListener(t, j.pids[1])
			rank := startFlood(t, tool, nil, "-addr", addr, "-n", strconv.Itoa(hostileFlood))
			ctl := startFlood(t, tool, nil, "-net", "unix", "-addr", j.control, "-n", strconv.Itoa(hostileFlood))
			var shm *flooder
			var shmSock string
			if tr == "auto" { // the shared-memory set-up socket too
				socks, _ := filepath.Glob(filepath.Join(filepath.Dir(j.control), "r1.*shm.sock"))
				if len(socks) != 1 {
					t.Fatalf("rank 1's shared-memory socket: %v", socks)
				}
				shmSock = socks[0]
				shm = startFlood(t, tool, nil, "-net", "unix", "-addr", shmSock, "-n", strconv.Itoa(hostileFlood))
			}
			rank.flooded(t)
			ctl.flooded(t)
			answers(t, "rank 1's tcp listener", "tcp", addr, wireauth.Hello{Proto: wireauth.ProtoSock, From: 0, To: 1})
			answers(t, "the launcher's control socket", "unix", j.control, wireauth.Hello{Proto: wireauth.ProtoControl, From: 0, To: wireauth.Launcher})
			if shm != nil {
				shm.flooded(t)
				answers(t, "rank 1's shared-memory socket", "unix", shmSock, wireauth.Hello{Proto: wireauth.ProtoShm, From: 0, To: 1})
			}
			j.finish(t)
			t.Logf("rank 1 flood: %s; control flood: %s", rank.stop(t), ctl.stop(t))
			if shm != nil {
				t.Logf("shared-memory flood: %s", shm.stop(t))
			}
		})
	}
}

// hostileCred is the credential of the suite's unprivileged user, created
// if absent; the test is skipped when that is not possible.
func hostileCred(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the hostile-user tests create a user: run them as root")
	}
	u, err := user.Lookup(hostileUser)
	if err != nil {
		useradd, lerr := exec.LookPath("useradd")
		if lerr != nil {
			useradd = "/usr/sbin/useradd"
		}
		if _, serr := os.Stat(useradd); serr != nil {
			t.Skipf("no useradd to create the user %s: %v", hostileUser, serr)
		}
		out, aerr := exec.Command(useradd, "-M", "-r", "-s", "/usr/sbin/nologin", hostileUser).CombinedOutput()
		if u, err = user.Lookup(hostileUser); err != nil {
			t.Fatalf("useradd %s: %v %s; lookup: %v", hostileUser, aerr, out, err)
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil || uid == 0 {
		t.Fatalf("user %s: uid %q gid %q: %v", hostileUser, u.Uid, u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// TestHostileUserFloodsJob: an unprivileged user cannot reach anything of
// the job but its ranks' loopback TCP listeners (the job directory, the
// launcher's control socket, the ranks' Unix, shared-memory and event
// sockets are denied to it, so it cannot forge an event datagram); it
// floods two ranks' TCP listeners past their descriptor limit, and the job
// prints its failure-free result: on the default transport with the
// failure detector on (no rank misses its heartbeats), on TCP with it off
// (every connection between ranks is made after the flood began).
func TestHostileUserFloodsJob(t *testing.T) {
	cred := hostileCred(t)
	tool := floodTool(t)
	for _, tr := range []string{"auto", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			j := startHostileJob(t, tr, tr != "tcp")
			dir := filepath.Dir(j.control)
			socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
			probes := append([]string{dir, j.control}, socks...)
			if tr == "auto" && len(socks) < 4 {
				t.Fatalf("the job directory %s holds %d sockets: %v", dir, len(socks), socks)
			}
			var floods []*flooder
			for i, r := range []int{1, 3} {
				args := []string{"-addr", tcpListener(t, j.pids[r]), "-n", strconv.Itoa(hostileFlood)}
				if i == 0 {
					args = append(args, "-probe", strings.Join(probes, ","))
				}
				floods = append(floods, startFlood(t, tool, cred, args...))
			}
			for range probes {
				if l := floods[0].line(t, "probe "); !strings.HasSuffix(l, ": denied") {
					t.Errorf("another user reached part of the job: %s", l)
				}
			}
			for i, f := range floods {
				f.flooded(t)
				r := []int{1, 3}[i]
				answers(t, fmt.Sprintf("rank %d's tcp listener", r), "tcp", tcpListener(t, j.pids[r]), wireauth.Hello{Proto: wireauth.ProtoSock, From: 0, To: uint64(r)})
			}
			j.finish(t)
			for i, f := range floods {
				t.Logf("rank %d flood: %s", []int{1, 3}[i], f.stop(t))
			}
		})
	}
}
