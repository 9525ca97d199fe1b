// Command hostileflood is the attacker of the hostile-local-user tests,
// run by the test as another user or as the job's own. With -probe, it
// first tries to reach each named path (a Unix stream or datagram socket,
// or a directory) and prints "probe PATH: denied" or "probe PATH:
// reached". Then it opens up to -n connections to -addr (network -net) as
// fast as it can, without ever writing, stopping at the first that fails
// (the listener's queue is full; a timeout only at the third in a row),
// prints "flooded N", holds them until
// its standard input closes, then prints "closed K of N": how many the
// listener had closed meanwhile.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

func main() {
	network := flag.String("net", "tcp", "network of -addr: tcp or unix")
	addr := flag.String("addr", "", "the listener to flood")
	n := flag.Int("n", 3000, "connections to open")
	probe := flag.String("probe", "", "comma-separated paths to try to reach first")
	flag.Parse()
	if *addr == "" || *n <= 0 {
		fmt.Fprintln(os.Stderr, "hostileflood: -addr and a positive -n are required")
		os.Exit(2)
	}
	if *probe != "" {
		for _, p := range strings.Split(*probe, ",") {
			fmt.Printf("probe %s: %s\n", p, reach(p))
		}
	}
	var conns []net.Conn
	var stop error
	// A dial that times out is the listener's full queue (the kernel
	// drops the SYN), or this process not run for the 2 s on a loaded
	// machine: a flood once stopped at its first dial at load ~200. The
	// flood stops at another error or at 3 timeouts in a row.
	timeouts := 0
	for len(conns) < *n {
		c, err := net.DialTimeout(*network, *addr, 2*time.Second)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && timeouts < 2 {
				timeouts++
				continue
			}
			stop = err
			break
		}
		timeouts = 0
		conns = append(conns, c)
	}
	if stop != nil {
		fmt.Printf("flooded %d (stopped: %v)\n", len(conns), stop)
	} else {
		fmt.Printf("flooded %d\n", len(conns))
	}
	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	closed := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
		c.Close()
	}
	fmt.Printf("closed %d of %d\n", closed, len(conns))
}

// reach says whether this process can reach path: denied, reached, or the
// error.
func reach(path string) string {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		_, err := os.ReadDir(path)
		return verdict(err)
	}
	if strings.HasPrefix(baseName(path), "ev-") {
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
		if err == nil {
			_, err = c.Write([]byte(`{"op":"event","kind":"failed","rank":0,"reason":"forged"}`))
			c.Close()
		}
		return verdict(err)
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		c.Close()
	}
	return verdict(err)
}

func baseName(p string) string { return p[strings.LastIndex(p, "/")+1:] }

func verdict(err error) string {
	switch {
	case err == nil:
		return "reached"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "denied"
	}
	return "error: " + err.Error()
}
