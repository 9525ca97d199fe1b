package dpm

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
)

type helloResult struct {
	peer int
	err  error
}

// The two ends of a socket learn each other's process id, and the port
// name passes from one to the other.
func TestJoinHandshake(t *testing.T) {
	x, y := net.Pipe()
	defer x.Close()
	defer y.Close()
	ch := make(chan helloResult, 1)
	go func() {
		p, err := JoinHello(y, "job", 7)
		ch <- helloResult{p, err}
	}()
	r := within(t, "JoinHello", func() helloResult {
		p, err := JoinHello(x, "job", 3)
		return helloResult{p, err}
	})
	r2 := within(t, "JoinHello", func() helloResult { return <-ch })
	if r.err != nil || r2.err != nil || r.peer != 7 || r2.peer != 3 {
		t.Fatalf("peers %d (%v) and %d (%v), want 7 and 3", r.peer, r.err, r2.peer, r2.err)
	}
	sent := make(chan error, 1)
	go func() { sent <- SendPort(x, "ftmpi-port:xyz") }()
	port, err := ReadPort(y)
	if err != nil || port != "ftmpi-port:xyz" {
		t.Fatalf("port %q, %v", port, err)
	}
	if err := within(t, "SendPort", func() error { return <-sent }); err != nil {
		t.Fatal(err)
	}
}

// What the other end of Join's socket may do wrong: an ErrJoin error that
// says what, never a hang.
func TestJoinHostilePeer(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(c net.Conn) // the other end
		want string
	}{
		{"garbage", func(c net.Conn) { io.WriteString(c, "GET / HTTP/1.0\n"); io.Copy(io.Discard, c) }, "not MPI_Comm_join"},
		{"another job", func(c net.Conn) { io.WriteString(c, `{"job":"other","proc":1}`+"\n"); io.Copy(io.Discard, c) }, "another job"},
		{"this process", func(c net.Conn) { io.WriteString(c, `{"job":"job","proc":3}`+"\n"); io.Copy(io.Discard, c) }, "both ends"},
		{"negative id", func(c net.Conn) { io.WriteString(c, `{"job":"job","proc":-2}`+"\n"); io.Copy(io.Discard, c) }, "not MPI_Comm_join"},
		{"closes at once", func(c net.Conn) { c.Close() }, "socket"},
		{"hangs up mid-line", func(c net.Conn) { io.WriteString(c, `{"job":`); c.Close() }, "reading from the socket"},
		{"a line without end", func(c net.Conn) {
			go io.Copy(io.Discard, c)
			io.WriteString(c, strings.Repeat("x", MaxJoinLine+1))
		}, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y := net.Pipe()
			done := make(chan struct{})
			go func() { defer close(done); tc.peer(y) }()
			r := within(t, "JoinHello", func() helloResult {
				p, err := JoinHello(x, "job", 3)
				return helloResult{p, err}
			})
			x.Close()
			y.Close()
			within(t, "the peer", func() bool { <-done; return true })
			if !errors.Is(r.err, ErrJoin) || !strings.Contains(r.err.Error(), tc.want) {
				t.Fatalf("%v, want ErrJoin with %q", r.err, tc.want)
			}
		})
	}
	// The peer dies before writing the port name.
	x, y := net.Pipe()
	y.Close()
	if _, err := ReadPort(x); !errors.Is(err, ErrJoin) {
		t.Fatalf("reading the port from a closed socket: %v", err)
	}
	if err := SendPort(x, "p"); !errors.Is(err, ErrJoin) {
		t.Fatalf("writing the port to a closed socket: %v", err)
	}
	x.Close()
}
