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
//	hang                connect, print "ready pid P tmp DIR", block forever
//	hangterm            like hang but ignore SIGTERM
//	lines K             print K numbered lines on stdout and stderr, then a partial line
package main

import (
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
)

func die(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rankprog: "+format+"\n", args...)
	os.Exit(99)
}

func main() {
	if len(os.Args) < 2 {
		die("missing mode")
	}
	mode, args := os.Args[1], os.Args[2:]
	arg := func(i int) int {
		if i >= len(args) {
			die("missing argument %d", i)
		}
		n, err := strconv.Atoi(args[i])
		if err != nil {
			die("bad argument %q", args[i])
		}
		return n
	}
	info, ok, err := boot.FromEnv()
	if err != nil {
		die("%v", err)
	}
	if !ok {
		die("not started by ftmpirun")
	}
	if mode == "lines" {
		k := arg(0)
		pad := strings.Repeat("x", 100+info.Rank*37)
		for i := 0; i < k; i++ {
			fmt.Fprintf(os.Stdout, "rank %d line %d %s\n", info.Rank, i, pad)
			fmt.Fprintf(os.Stderr, "rank %d errline %d %s\n", info.Rank, i, pad)
		}
		fmt.Fprintf(os.Stdout, "rank %d partial", info.Rank)
		return
	}
	c, err := boot.Connect(info)
	if err != nil {
		die("connect: %v", err)
	}
	defer c.Close()
	if mode == "hang" || mode == "hangterm" {
		if mode == "hangterm" {
			signal.Ignore(syscall.SIGTERM)
		}
		fmt.Printf("ready pid %d tmp %s\n", os.Getpid(), info.TmpDir)
		select {}
	}
	self := boot.Endpoint{Addrs: map[string]string{
		"unix": filepath.Join(info.TmpDir, "r"+strconv.Itoa(info.Rank)),
		"tcp":  "127.0.0.1:" + strconv.Itoa(20000+info.Rank),
	}}
	if mode == "crashearly" && info.Rank == arg(0) {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	eps, err := c.Exchange(self)
	var fe *boot.FailedError
	if mode == "crashearly" {
		if !errors.As(err, &fe) || len(fe.Ranks) != 1 || fe.Ranks[0] != arg(0) {
			die("exchange: got %v, want a FailedError for rank %d", err, arg(0))
		}
		fmt.Printf("rank %d: exchange reports %v gone\n", info.Rank, fe.Ranks)
		eps[arg(0)] = boot.Endpoint{Rank: arg(0), Host: info.Host, Addrs: map[string]string{
			"unix": filepath.Join(info.TmpDir, "r"+strconv.Itoa(arg(0))),
			"tcp":  "127.0.0.1:" + strconv.Itoa(20000+arg(0)),
		}}
		mode = "crash"
	} else if err != nil {
		die("exchange: %v", err)
	}
	if len(eps) != info.Size {
		die("exchange returned %d endpoints, want %d", len(eps), info.Size)
	}
	for r, ep := range eps {
		if ep.Rank != r || ep.Host != info.Host || ep.Addrs["tcp"] != "127.0.0.1:"+strconv.Itoa(20000+r) ||
			ep.Addrs["unix"] != filepath.Join(info.TmpDir, "r"+strconv.Itoa(r)) {
			die("bad endpoint %d: %+v", r, ep)
		}
	}
	waitFailure := func(rank int) {
		deadline := time.After(20 * time.Second)
		for {
			select {
			case ev, ok := <-c.Events():
				if !ok {
					die("events closed")
				}
				if ev.Kind == boot.EventFailed && ev.Rank == rank {
					fmt.Printf("rank %d saw failure of %d\n", info.Rank, rank)
					return
				}
			case <-deadline:
				die("no failure event for rank %d", rank)
			}
		}
	}
	finalize := func() {
		if err := c.Finalize(); err != nil {
			die("finalize: %v", err)
		}
	}
	switch mode {
	case "hello":
		fmt.Printf("rank %d of %d: %d endpoints ok, transport %s\n", info.Rank, info.Size, len(eps), info.Transport)
		finalize()
		code := 0
		if len(args) > 0 {
			codes := strings.Split(args[0], ",")
			if info.Rank < len(codes) {
				code, _ = strconv.Atoi(codes[info.Rank])
			}
		}
		c.Close()
		os.Exit(code)
	case "abort":
		if info.Rank == arg(0) {
			if err := c.Abort(arg(1), "test reason"); err != nil {
				die("abort: %v", err)
			}
			select {}
		}
		finalize()
		select {}
	case "crash":
		if info.Rank == arg(0) {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		waitFailure(arg(0))
		finalize()
		c.Close()
		os.Exit(arg(1) + info.Rank)
	case "nofin":
		if info.Rank == arg(0) {
			os.Exit(arg(1))
		}
		finalize()
	case "abortcont":
		switch info.Rank {
		case 1:
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		case 0:
			waitFailure(1)
			if err := c.Abort(7, "giving up"); err != nil {
				die("abort: %v", err)
			}
			select {}
		default:
			finalize()
			select {}
		}
	default:
		die("unknown mode %q", mode)
	}
}
