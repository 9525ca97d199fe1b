// Command rankprog is a test rank for the launcher tests. It uses
// internal/boot directly. Usage: rankprog MODE [ARGS...]
//
//	hello [C0,C1,...]   exchange, check every endpoint, finalize, exit with Cr (default 0)
//	abort R C           exchange; rank R calls Abort(C), the others wait in Finalize
//	crash R BASE        exchange; rank R SIGKILLs itself; the others wait for the
//	                    failure event of R, finalize and exit BASE+rank
//	nofin R X           exchange; rank R exits X without finalizing; others finalize
//	abortcont           rank 1 crashes; rank 0 waits for the event and aborts with 7;
//	                    the others wait in Finalize
//	crashearly R BASE   rank R SIGKILLs itself before Exchange; the others get a
//	                    *boot.FailedError naming R, then behave as in crash
//	stopearly R BASE    as crashearly, but rank R SIGSTOPs itself (the launcher's
//	                    stall look must find it)
//	hang                connect, print "ready pid P tmp DIR", block forever
//	hangterm            like hang but ignore SIGTERM
//	lines K             print K numbered lines on stdout and stderr, then a partial line
//	waitfail K BASE     exchange (ranks gone before it are allowed); wait for failure
//	                    events of K distinct ranks, printing "rank R saw failure of F"
//	                    for each, finalize, exit BASE+rank
//	suspect R BASE      rank 0 (R != 0) first finds rank R's process in /proc, waits
//	                    until it is stopped, checks that bad Suspect calls fail, and
//	                    calls Suspect(R); then every rank behaves as in waitfail 1 BASE
//
// In every mode, if FTMPI_INJECT is set the rank first calls inject.Self
// with it, as a rank started by another launcher would.
package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/inject"
)

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rankprog: "+format+"\n", args...)
	os.Exit(99)
}

// rank is one run of the program: its client, identity and arguments.
type rank struct {
	c    *boot.Client
	info boot.Info
	args []string
}

// arg is argument i as an integer.
func (r *rank) arg(i int) int {
	if i >= len(r.args) {
		die("missing argument %d", i)
	}
	n, err := strconv.Atoi(r.args[i])
	if err != nil {
		die("bad argument %q", r.args[i])
	}
	return n
}

func main() {
	if len(os.Args) < 2 {
		die("missing mode")
	}
	mode := os.Args[1]
	r := &rank{args: os.Args[2:]}
	info, ok, err := boot.FromEnv()
	if err != nil {
		die("%v", err)
	}
	if !ok {
		die("not started by ftmpirun")
	}
	r.info = info
	if mode == "lines" {
		r.lines()
		return
	}
	c, err := boot.Connect(info)
	if err != nil {
		die("connect: %v", err)
	}
	defer c.Close()
	r.c = c
	// Self-injection starts once the rank is connected, as under mpi.Init
	// (rte.Process.Arm): a kill before the hello would make the rank a
	// plain program that died, not a failed rank.
	if specs := os.Getenv(inject.EnvVar); specs != "" {
		stop, err := inject.Self(info.Rank, info.Size, specs)
		if err != nil {
			die("%v", err)
		}
		defer stop()
	}
	if mode == "hang" || mode == "hangterm" {
		if mode == "hangterm" {
			signal.Ignore(syscall.SIGTERM)
		}
		fmt.Printf("ready pid %d tmp %s\n", os.Getpid(), info.TmpDir)
		select {}
	}
	if mode == "crashearly" && info.Rank == r.arg(0) {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if mode == "stopearly" && info.Rank == r.arg(0) {
		// Stopped after its hello, before the exchange's fence: no
		// heartbeat runs yet, only the launcher's stall look finds it.
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		select {}
	}
	if mode == "suspect" && info.Rank == 0 {
		suspectStopped(c, info, r.arg(0))
	}
	mode = r.exchange(mode)
	r.act(mode)
}

// lines prints K numbered lines on stdout and stderr, then a partial line.
func (r *rank) lines() {
	k := r.arg(0)
	pad := strings.Repeat("x", 100+r.info.Rank*37)
	for i := 0; i < k; i++ {
		fmt.Fprintf(os.Stdout, "rank %d line %d %s\n", r.info.Rank, i, pad)
		fmt.Fprintf(os.Stderr, "rank %d errline %d %s\n", r.info.Rank, i, pad)
	}
	fmt.Fprintf(os.Stdout, "rank %d partial", r.info.Rank)
}

// endpoint is the endpoint every rank publishes for rank k.
func (r *rank) endpoint(k int) boot.Endpoint {
	return boot.Endpoint{Rank: k, Host: r.info.Host, Addrs: map[string]string{
		"unix": filepath.Join(r.info.TmpDir, "r"+strconv.Itoa(k)),
		"tcp":  "127.0.0.1:" + strconv.Itoa(20000+k),
	}}
}

// exchange publishes this rank's endpoint, checks every endpoint the
// exchange returns (ranks gone before it are allowed in waitfail and
// suspect, and expected in crashearly) and returns the mode to go on in
// (crashearly goes on as crash).
func (r *rank) exchange(mode string) string {
	info := r.info
	self := r.endpoint(info.Rank)
	self.Rank, self.Host = 0, ""
	eps, err := r.c.Exchange(self)
	var fe *boot.FailedError
	if mode == "crashearly" || mode == "stopearly" {
		if !errors.As(err, &fe) || len(fe.Ranks) != 1 || fe.Ranks[0] != r.arg(0) {
			die("exchange: got %v, want a FailedError for rank %d", err, r.arg(0))
		}
		fmt.Printf("rank %d: exchange reports %v gone\n", info.Rank, fe.Ranks)
		eps[r.arg(0)] = r.endpoint(r.arg(0))
		mode = "crash"
	} else if errors.As(err, &fe) && (mode == "waitfail" || mode == "suspect") {
		fmt.Printf("rank %d: exchange reports %v gone\n", info.Rank, fe.Ranks)
	} else if err != nil {
		die("exchange: %v", err)
	}
	if len(eps) != info.Size {
		die("exchange returned %d endpoints, want %d", len(eps), info.Size)
	}
	for k, ep := range eps {
		if fe != nil && ep.Addrs == nil {
			continue // gone before publishing (waitfail, suspect)
		}
		sameHost := ep.Host == info.Host // on another host (a multi-host test), its job directory differs
		if ep.Rank != k || ep.Addrs["tcp"] != "127.0.0.1:"+strconv.Itoa(20000+k) ||
			sameHost && ep.Addrs["unix"] != filepath.Join(info.TmpDir, "r"+strconv.Itoa(k)) {
			die("bad endpoint %d: %+v", k, ep)
		}
	}
	return mode
}

// waitFailures waits (20 s at most) for the failure events of k distinct
// ranks, or of rank only if it is not negative, printing each.
func (r *rank) waitFailures(k, rank int) {
	deadline := time.After(20 * time.Second)
	seen := make(map[int]bool)
	for len(seen) < k {
		select {
		case ev, ok := <-r.c.Events():
			if !ok {
				die("events closed")
			}
			if ev.Kind == boot.EventFailed && !seen[ev.Rank] && (rank < 0 || ev.Rank == rank) {
				seen[ev.Rank] = true
				fmt.Printf("rank %d saw failure of %d\n", r.info.Rank, ev.Rank)
			}
		case <-deadline:
			if rank >= 0 {
				die("no failure event for rank %d", rank)
			}
			die("saw %d failures after 20s, want %d", len(seen), k)
		}
	}
}

func (r *rank) finalize() {
	if err := r.c.Finalize(); err != nil {
		die("finalize: %v", err)
	}
}

// exit closes the connection and exits with code.
func (r *rank) exit(code int) {
	r.c.Close()
	os.Exit(code)
}

// act runs what mode does after the exchange.
func (r *rank) act(mode string) {
	info := r.info
	switch mode {
	case "hello":
		fmt.Printf("rank %d of %d: %d endpoints ok, transport %s\n", info.Rank, info.Size, info.Size, info.Transport)
		r.finalize()
		code := 0
		if len(r.args) > 0 {
			codes := strings.Split(r.args[0], ",")
			if info.Rank < len(codes) {
				code, _ = strconv.Atoi(codes[info.Rank])
			}
		}
		r.exit(code)
	case "abort":
		if info.Rank == r.arg(0) {
			if err := r.c.Abort(r.arg(1), "test reason"); err != nil {
				die("abort: %v", err)
			}
			select {}
		}
		r.finalize()
		select {}
	case "crash":
		if info.Rank == r.arg(0) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		r.waitFailures(1, r.arg(0))
		r.finalize()
		r.exit(r.arg(1) + info.Rank)
	case "nofin":
		if info.Rank == r.arg(0) {
			os.Exit(r.arg(1))
		}
		r.finalize()
	case "abortcont":
		r.abortcont()
	case "waitfail":
		r.waitFailures(r.arg(0), -1)
		r.finalize()
		r.exit(r.arg(1) + info.Rank)
	case "suspect":
		r.waitFailures(1, -1)
		r.finalize()
		r.exit(r.arg(1) + info.Rank)
	default:
		die("unknown mode %q", mode)
	}
}

// abortcont: rank 1 crashes; rank 0 waits for the event and aborts with 7;
// the others wait in Finalize.
func (r *rank) abortcont() {
	switch r.info.Rank {
	case 1:
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case 0:
		r.waitFailures(1, 1)
		if err := r.c.Abort(7, "giving up"); err != nil {
			die("abort: %v", err)
		}
		select {}
	default:
		r.finalize()
		select {}
	}
}

// suspectStopped is a stand-in for a heartbeat detector: it finds the
// process of rank target of this job in /proc (it may not have connected
// yet), waits until it is stopped, and asks the launcher to kill it.
func suspectStopped(c *boot.Client, info boot.Info, target int) {
	want := [][]byte{[]byte("\x00" + boot.EnvJob + "=" + info.Job + "\x00"), []byte("\x00" + boot.EnvRank + "=" + strconv.Itoa(target) + "\x00")}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if pid := findStopped(want); pid != "" {
			break
		}
		if time.Now().After(deadline) {
			die("rank %d was not found stopped", target)
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
	if err := c.Suspect(info.Size, "x"); err == nil || !strings.Contains(err.Error(), "out of range") {
		die("Suspect(size): %v", err)
	}
	if err := c.Suspect(info.Rank, "x"); err == nil || !strings.Contains(err.Error(), "suspects itself") {
		die("Suspect(self): %v", err)
	}
	if err := c.Suspect(target, "no heartbeat"); err != nil {
		die("suspect: %v", err)
	}
	fmt.Printf("rank %d suspected %d\n", info.Rank, target)
}

// findStopped returns the pid of a stopped process whose environment
// contains every string of want.
func findStopped(want [][]byte) string {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		env = append([]byte{0}, env...)
		match := true
		for _, w := range want {
			if !bytes.Contains(env, w) {
				match = false
			}
		}
		if !match {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		if i > 0 && i+2 < len(stat) && (stat[i+2] == 'T' || stat[i+2] == 't') {
			return e.Name()
		}
	}
	return ""
}
