package e2e

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// The shared-memory transport's failure cases in real jobs (the transport
// package's own tests cover the ring-level cases with real processes).

func shmBin(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "shmcheck")
}

// shmJob is a running ftmpirun and its output lines.
type shmJob struct {
	cmd   *exec.Cmd
	lines chan string
	mark  string
}

func startShmJob(t *testing.T, args ...string) *shmJob {
	t.Helper()
	j := &shmJob{lines: make(chan string, 64), mark: jobtest.NewMark(t)}
	j.cmd = exec.Command(bin["ftmpirun"], args...)
	j.cmd.Env = append(os.Environ(), jobtest.MarkVar+"="+j.mark)
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	j.cmd.Stderr = &stderr
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
		close(j.lines)
	}()
	t.Cleanup(func() {
		j.cmd.Process.Kill()
		j.cmd.Wait()
		jobtest.AssertNoLeftovers(t, j.mark, 10*time.Second)
		if t.Failed() {
			t.Logf("stderr:\n%s", stderr.String())
		}
	})
	return j
}

// next waits for a line starting with prefix and returns it.
func (j *shmJob) next(t *testing.T, prefix string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l, ok := <-j.lines:
			if !ok {
				t.Fatalf("the job ended before it printed %q", prefix)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			t.Fatalf("the job did not print %q", prefix)
		}
	}
}

func readyPid(t *testing.T, line string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "ready pid "))
	if err != nil {
		t.Fatalf("bad line %q", line)
	}
	return pid
}

// devShmHeld lists the /dev/shm files a process maps or holds open. The
// whole directory is not compared before and after: other programs on the
// machine (an Open MPI job, Python's multiprocessing) make and remove their
// own files there meanwhile.
func devShmHeld(t *testing.T, pid int) []string {
	t.Helper()
	var held []string
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		if i := strings.Index(line, "/dev/shm/"); i >= 0 {
			held = append(held, strings.TrimSuffix(line[i:], " (deleted)"))
		}
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(target, "/dev/shm/") {
			held = append(held, strings.TrimSuffix(target, " (deleted)"))
		}
	}
	return held
}

// A job on shared memory whose launcher is SIGKILLed leaves nothing
// behind: the ranks die, no file appears in /dev/shm, and the job
// directory holds no shared memory (only the sockets and the launcher's
// files, swept by the next launch as for the socket transport).
func TestShmLauncherKilledLeavesNothing(t *testing.T) {
	j := startShmJob(t, "-n", "4", "--transport", "shm", shmBin(t), "hang")
	var pids []int
	for range 4 {
		pids = append(pids, readyPid(t, j.next(t, "ready pid ")))
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pids[0]) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	var jobDir string
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, "FTMPI_TMPDIR="); ok {
			jobDir = v
		}
	}
	t.Cleanup(func() { os.RemoveAll(jobDir) }) // a SIGKILLed launcher cannot
	for _, pid := range pids {
		maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(maps), "memfd:ftmpi-pair"); n != 3 {
			t.Fatalf("rank pid %d maps %d pair segments, want 3 (shared memory with every other rank)", pid, n)
		}
		if held := devShmHeld(t, pid); len(held) > 0 {
			t.Fatalf("rank pid %d holds files in /dev/shm: %q (its shared memory must be memfds)", pid, held)
		}
	}
	if err := j.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	j.cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for jobtest.PidAlive(p) {
			if time.Now().After(deadline) {
				t.Fatalf("rank pid %d survived SIGKILL of ftmpirun", p)
			}
			time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
		}
	}
	if ents, err := os.ReadDir("/dev/shm"); err == nil {
		for _, e := range ents {
			if strings.Contains(e.Name(), "ftmpi") {
				t.Fatalf("/dev/shm holds %q after the job", e.Name())
			}
		}
	}
	ents, err := os.ReadDir(jobDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type()&os.ModeSocket == 0 && e.Name() != "owner" && e.Name() != "ctl" {
			t.Errorf("job directory holds %s (%v)", e.Name(), e.Type())
		}
	}
}

// Rank 0 sends to rank 1, stopped (its rings fill), then killed: rank 0's
// send fails with ErrProcFailed instead of hanging.
func TestShmSendToStoppedThenKilledRankFails(t *testing.T) {
	goFile := filepath.Join(t.TempDir(), "go")
	j := startShmJob(t, "-n", "2", "--transport", "shm", "--on-failure", "continue", shmBin(t), "fullring", goFile)
	pid := readyPid(t, j.next(t, "ready pid "))
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	j.next(t, "sending")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if got := j.next(t, "result: "); got != "result: fullring procfailed=true" {
		t.Fatalf("got %q", got)
	}
}
