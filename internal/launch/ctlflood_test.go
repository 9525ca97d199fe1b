package launch

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/acceptloop"
	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/wireauth"
)

// A flood of the launcher's control listener (TCP, as a multi-host
// job's): idle connections beyond the cap (acceptloop.CapFor: the job's
// size plus the default) are closed oldest first (they are not held until
// their handshake deadline), 200 garbage hellos cost a few
// log lines rather than one each, and a rank that connects afterwards is
// served.
func TestControlListenerFlood(t *testing.T) {
	t.Parallel()
	log := newSyncLog()
	h := newHead("job", 2, OnFailureContinue, &output{stdout: io.Discard, stderr: log}, false)
	key, err := wireauth.New()
	if err != nil {
		t.Fatal(err)
	}
	h.key = key
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	var once sync.Once
	stop := func() { once.Do(h.close) }
	defer stop()
	addr := ln.Addr().String()

	var idle []net.Conn
	defer func() {
		for _, nc := range idle {
			nc.Close()
		}
	}()
	flood := acceptloop.CapFor(2) + 500 // the cap of a 2-rank job's control listener
	for range flood {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, nc)
	}
	for i, nc := range idle[:500] {
		nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Fatalf("idle connection %d: the launcher sent something", i)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("idle connection %d of %d is still open", i, flood)
		}
	}
	for range 200 {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		nc.Write(bytes.Repeat([]byte{0xab}, wireauth.HelloSize))
		io.Copy(io.Discard, nc)
		nc.Close()
	}

	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if err := wireauth.Dial(nc, key, wireauth.Hello{Proto: wireauth.ProtoControl, From: 0, To: wireauth.Launcher}); err != nil {
		t.Fatalf("a rank after the flood: %v\nlog:\n%s", err, log.String())
	}
	c := &ctlClient{t: t, nc: nc, r: bufio.NewReader(nc)}
	c.req(ctlwire.Msg{Op: ctlwire.OpHello, Job: "job", Rank: 0})
	if m := c.next(); m.Op != ctlwire.OpHello {
		t.Fatalf("hello reply %+v", m)
	}

	stop() // logs the count of the refused connections not logged yet
	log.wait(t, "control listener: more than", "connections have not authenticated; closing the oldest")
	log.wait(t, "refused a control connection from 127.0.0.1", "bad magic", "more such lines in")
	if n := strings.Count(log.String(), "\n"); n > 15 {
		t.Fatalf("%d log lines for one flood, want a few:\n%s", n, log.String())
	}
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
