package exitbell

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// envChild makes the test binary a child process of the tests: its value
// says what the child does with its bell.
const envChild = "FTMPI_EXITBELL_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		child(mode)
		return
	}
	goleak.VerifyTestMain(m)
}

// child arms the bell named by EnvFD and then, by mode: "kill" says
// "armed" and waits to be killed; "finalize" disarms, says "disarmed" and
// exits 0; "cycle" arms and disarms again and again, saying each step, until
// it is killed, each step once the parent wrote a byte on its stdin;
// "exit" says "armed" and exits 3 without disarming.
func child(mode string) {
	say := func(s string) { fmt.Println(s) }
	a, err := ArmFromEnv()
	if err != nil || a == nil {
		fmt.Fprintln(os.Stderr, "child: arm:", err)
		os.Exit(2)
	}
	if os.Getenv(EnvFD) != "" {
		fmt.Fprintln(os.Stderr, "child: EnvFD left set")
		os.Exit(2)
	}
	switch mode {
	case "kill":
		say("armed")
		select {}
	case "finalize":
		a.Disarm()
		say("disarmed")
		os.Exit(0)
	case "exit":
		say("armed")
		os.Exit(3)
	case "cycle":
		// The page stays mapped after a Disarm; arming it again takes a
		// descriptor, which the first Arm closed: re-register on the
		// same page through the Armed's own word.
		say("armed")
		var go1 [1]byte
		for i := 0; ; i++ {
			if _, err := os.Stdin.Read(go1[:]); err != nil {
				os.Exit(2)
			}
			a.Disarm()
			say("disarmed " + strconv.Itoa(i))
			if _, err := os.Stdin.Read(go1[:]); err != nil {
				os.Exit(2)
			}
			a = rearm(a)
			say("armed " + strconv.Itoa(i))
		}
	}
	os.Exit(2)
}

// rearm arms the page of a (disarmed) again on a new thread.
func rearm(a *Armed) *Armed {
	b := &Armed{mem: a.mem, word: a.word, off: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go b.hold(ready)
	if err := <-ready; err != nil {
		fmt.Fprintln(os.Stderr, "child: rearm:", err)
		os.Exit(2)
	}
	return b
}

// start starts the test binary as a child in mode with a new bell, and
// returns it, its bell, and a reader of its output lines.
func start(t *testing.T, mode string) (*exec.Cmd, *Bell, *bufio.Scanner) {
	cmd, b, sc, _ := startIn(t, mode)
	return cmd, b, sc
}

// startIn is start with a writer of the child's stdin.
func startIn(t *testing.T, mode string) (*exec.Cmd, *Bell, *bufio.Scanner, io.WriteCloser) {
	t.Helper()
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, EnvFD+"=3")
	cmd.ExtraFiles = []*os.File{b.File()}
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
		b.Stop()
		t.Fatal(err)
	}
	b.CloseFile()
	return cmd, b, bufio.NewScanner(out), in
}

func expectLine(t *testing.T, sc *bufio.Scanner, want string) {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("child ended before saying %q: %v", want, sc.Err())
	}
	if sc.Text() != want {
		t.Fatalf("child said %q, want %q", sc.Text(), want)
	}
}

// waitRang waits (30 s at most) for rang to be closed.
func waitRang(t *testing.T, rang <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-rang:
	case <-time.After(30 * time.Second):
		t.Fatalf("the bell did not ring: %s", what)
	}
}

// A SIGKILLed child rings its bell, and it rings before the child can be
// reaped (the kernel clears the robust list before it unmaps the child's
// memory and closes its files).
func TestKilledChildRings(t *testing.T) {
	cmd, b, sc := start(t, "kill")
	rang := make(chan struct{})
	var reapedFirst atomic.Bool
	var reaped atomic.Bool
	stop := b.Watch(func() {
		reapedFirst.Store(reaped.Load())
		close(rang)
	})
	expectLine(t, sc, "armed")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRang(t, rang, "child killed")
	cmd.Wait()
	reaped.Store(true)
	stop()
	if reapedFirst.Load() {
		t.Fatal("rang after the child was reaped")
	}
}

// A child that exits without disarming (no MPI_Finalize) rings too.
func TestExitWithoutDisarmRings(t *testing.T) {
	cmd, b, sc := start(t, "exit")
	rang := make(chan struct{})
	stop := b.Watch(func() { close(rang) })
	expectLine(t, sc, "armed")
	waitRang(t, rang, "child exited armed")
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("child: %v, want exit status 3", err)
	}
	stop()
}

// A child that disarmed (MPI_Finalize) and exits rings nothing; stop ends
// the watch.
func TestDisarmedExitIsSilent(t *testing.T) {
	cmd, b, sc := start(t, "finalize")
	var rang atomic.Bool
	stop := b.Watch(func() { rang.Store(true) })
	expectLine(t, sc, "disarmed")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	stop()
	if rang.Load() {
		t.Fatal("a disarmed child's exit rang its bell")
	}
}

// A bell whose child never arms it (not an MPI process, or killed before
// MPI_Init) rings nothing, and stop returns.
func TestUnarmedBellStops(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var rang atomic.Bool
	stop := b.Watch(func() { rang.Store(true) })
	stop()
	stop() // twice is harmless
	if rang.Load() {
		t.Fatal("an unarmed bell rang")
	}
	b2, err := New()
	if err != nil {
		t.Fatal(err)
	}
	b2.Stop() // never watched
}

// Bad descriptors are refused with an error, not a panic.
func TestArmRefusesBadDescriptors(t *testing.T) {
	t.Setenv(EnvFD, "x")
	if _, err := ArmFromEnv(); err == nil {
		t.Fatal("EnvFD=x armed")
	}
	t.Setenv(EnvFD, "1")
	if _, err := ArmFromEnv(); err == nil {
		t.Fatal("EnvFD=1 armed")
	}
	f, err := os.CreateTemp(t.TempDir(), "notabell")
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Arm(fd); err == nil {
		t.Fatal("an empty file armed")
	}
}

// The crash test: a child that arms and disarms its bell in a loop is
// SIGKILLed at a step spread over the loop (after it said its k-th line);
// every time, the watch ends without a hang: killed armed it rang, killed
// disarmed it did not (and stop ends the watch). FTMPI_EXITBELL_RUNS sets the number of children
// (default 20; 200 for the crash runs of docs/benchmarks.md).
func TestKilledAtEveryStep(t *testing.T) {
	runs := 20
	if v, err := strconv.Atoi(os.Getenv("FTMPI_EXITBELL_RUNS")); err == nil && v > 0 {
		runs = v
	}
	rang, silent := 0, 0
	for i := range runs {
		cmd, b, sc, in := startIn(t, "cycle")
		ring := make(chan struct{})
		stop := b.Watch(func() { close(ring) })
		var last string
		for k := 0; k <= i%7; k++ {
			if k > 0 {
				in.Write([]byte{1}) // the next step
			}
			if !sc.Scan() {
				t.Fatalf("run %d: child ended: %v", i, sc.Err())
			}
			last = sc.Text()
		}
		cmd.Process.Signal(syscall.SIGKILL) // the child waits for its next step
		in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d: child not reaped", i)
		}
		armed := len(last) >= 5 && last[:5] == "armed"
		if armed {
			waitRang(t, ring, fmt.Sprintf("run %d killed after %q", i, last))
		}
		if !armed {
			// Disarmed: the kill rang nothing (stop below must end the watch).
			select {
			case <-ring:
				t.Fatalf("run %d: killed disarmed (after %q), the bell rang", i, last)
			default:
			}
		}
		stopped := make(chan struct{})
		go func() { stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Fatalf("run %d: stop hung", i)
		}
		select {
		case <-ring:
			rang++
		default:
			silent++
		}
	}
	t.Logf("%d runs: %d rang, %d silent (killed between a disarm and the next arm)", runs, rang, silent)
}
