package rte

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/coll"
	"github.com/ftmpi/ftmpi/internal/rte/dpm"
	"go.uber.org/goleak"
)

// connRanks starts the runtimes of a job of two processes with a port
// table delegate (class code 7 for every error), process 0's diagnostics
// in diag.
func connRanks(t *testing.T, diag *syncBuf) (*testJob, [2]*Rank) {
	t.Helper()
	j := newTestJob(2)
	var rs [2]*Rank
	for i := range rs {
		cfg := j.config(i)
		cfg.Ports = PortDelegate{Job: func() string { return "job-c" }, Code: func(error) int { return 7 }}
		rs[i] = NewRank(cfg)
		rs[i].Start()
	}
	rs[0].SetDiag(&Diag{Out: diag})
	return j, rs
}

// faultOf is err's DPMError fault, or a test failure.
func faultOf(t *testing.T, what string, err error) DPMFault {
	t.Helper()
	var e *DPMError
	if !errors.As(err, &e) {
		t.Fatalf("%s: %v (%T), want a DPMError", what, err, err)
	}
	return e.Fault
}

// One Accept and one Connect between single-process sides, driven by the
// runtime: the roots find each other through the port (the accepting
// root writes the trace line), every process holds the other group and
// the connection id after Share, and the rounds of AND combine both
// sides' words.
func TestRankConnection(t *testing.T) {
	defer goleak.VerifyNone(t)
	var diag syncBuf
	j, rs := connRanks(t, &diag)
	defer j.close()
	abort := make(chan struct{})
	port := rs[0].OpenPort()
	words := [2][]uint64{{0b1100, 1}, {0b1010, 3}}
	type out struct {
		id     uint64
		remote []int
		words  []uint64
		err    error
	}
	res := make(chan out, 2)
	for i, r := range rs {
		go func() {
			x := r.NewConnection(0, true, abort)
			defer x.End()
			call := RootCall{Op: "MPI_Comm_connect", Port: port, Procs: []int{i}, Peer: -1, Timeout: 20 * time.Second}
			if i == 0 {
				call.Op, call.Accept, call.Trace = "MPI_Comm_accept", true, true
			}
			if err := x.Reach(call); err != nil {
				res <- out{err: err}
				return
			}
			x.Within(&coll.Set{N: 1})
			id, err := x.Share(0)
			if err != nil {
				res <- out{err: err}
				return
			}
			w := slices.Clone(words[i])
			err = x.AND(w)
			remote, _ := x.Remote()
			res <- out{id, remote, w, err}
		}()
	}
	var got [2]out
	for range 2 {
		select {
		case o := <-res:
			if o.err != nil {
				t.Fatal(o.err)
			}
			got[1-o.remote[0]] = o
		case <-time.After(30 * time.Second):
			t.Fatal("the connection did not complete within 30s")
		}
	}
	for i, o := range got {
		if !slices.Equal(o.remote, []int{1 - i}) || !slices.Equal(o.words, []uint64{0b1000, 1}) {
			t.Errorf("process %d: remote %v, words %b; want [%d], [1000 1]", i, o.remote, o.words, 1-i)
		}
	}
	if got[0].id != got[1].id {
		t.Errorf("connection ids %d and %d differ", got[0].id, got[1].id)
	}
	if want := "ftmpi-trace: process 0: MPI_Comm_accept: connected to process 1\n"; diag.String() != want {
		t.Errorf("trace %q, want %q", diag.String(), want)
	}
	if err := rs[0].ClosePort(port); err != nil {
		t.Fatal(err)
	}
}

// The runtime's errors are DPMErrors whose faults the API maps: a
// malformed port, a closed one, an Accept's timeout are FaultPort, an
// aborted wait FaultAborted; every kind of the protocol's errors has its
// fault, and other errors pass as they are.
func TestConnectionFaults(t *testing.T) {
	defer goleak.VerifyNone(t)
	var diag syncBuf
	j, rs := connRanks(t, &diag)
	defer j.close()
	none := make(chan struct{})
	reach := func(r *Rank, c RootCall, abort chan struct{}) error {
		x := r.NewConnection(0, true, abort)
		defer x.End()
		c.Peer = -1
		return x.Reach(c)
	}
	if f := faultOf(t, "a malformed port", reach(rs[1], RootCall{Port: "tcp://x"}, none)); f != FaultPort {
		t.Errorf("a malformed port: fault %d, want FaultPort", f)
	}
	port := rs[0].OpenPort()
	if f := faultOf(t, "accept's timeout", reach(rs[0], RootCall{Port: port, Accept: true, Timeout: 10 * time.Millisecond}, none)); f != FaultPort {
		t.Errorf("accept's timeout: fault %d, want FaultPort", f)
	}
	aborted := make(chan struct{})
	close(aborted)
	if f := faultOf(t, "an aborted accept", reach(rs[0], RootCall{Port: port, Accept: true}, aborted)); f != FaultAborted {
		t.Errorf("an aborted accept: fault %d, want FaultAborted", f)
	}
	if err := rs[0].ClosePort(port); err != nil {
		t.Fatal(err)
	}
	if f := faultOf(t, "a closed port", rs[0].ClosePort(port)); f != FaultPort {
		t.Errorf("closing a closed port: fault %d, want FaultPort", f)
	}
	if f := faultOf(t, "connect to a closed port", reach(rs[1], RootCall{Port: port, Timeout: 20 * time.Second}, none)); f != FaultPort {
		t.Errorf("connect to a closed port: fault %d, want FaultPort", f)
	}

	for _, tc := range []struct {
		kind error
		want DPMFault
	}{
		{dpm.ErrPort, FaultPort}, {dpm.ErrPeerFailed, FaultPeerFailed}, {dpm.ErrGaveUp, FaultOther},
		{dpm.ErrMalformed, FaultInternal}, {dpm.ErrNoConn, FaultInternal}, {dpm.ErrRemote, FaultRemote},
		{dpm.ErrAborted, FaultAborted}, {dpm.ErrJoin, FaultOther},
	} {
		err := dpmError(fmt.Errorf("wrapped: %w", &dpm.Error{Kind: tc.kind, Code: 5, Detail: "what"}))
		var e *DPMError
		if !errors.As(err, &e) || e.Fault != tc.want || e.Code != 5 || e.Detail != "what" {
			t.Errorf("dpm %v: %#v, want fault %d, code 5, detail %q", tc.kind, err, tc.want, "what")
		}
	}
	if other := errors.New("the API's"); dpmError(other) != other || dpmError(nil) != nil {
		t.Error("an error not of the protocol changed")
	}
}

// MPI_Comm_join's handshake, the runtime's: over a socket the end with
// the lower id opens a port and accepts, the other connects to that same
// port; an end that is not Join of this job is a FaultOther error.
func TestRankJoinPort(t *testing.T) {
	defer goleak.VerifyNone(t)
	var diag syncBuf
	j, rs := connRanks(t, &diag)
	defer j.close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	type out struct {
		peer   int
		port   string
		accept bool
		err    error
	}
	res := make(chan out, 1)
	go func() {
		peer, port, accept, err := rs[1].JoinPort(b)
		res <- out{peer, port, accept, err}
	}()
	peer, port, accept, err := rs[0].JoinPort(a)
	if err != nil {
		t.Fatal(err)
	}
	var o out
	select {
	case o = <-res:
	case <-time.After(30 * time.Second):
		t.Fatal("the other end's handshake did not end within 30s")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if peer != 1 || !accept || o.peer != 0 || o.accept || o.port != port {
		t.Fatalf("ends (peer %d, accept %v, %q) and (peer %d, accept %v, %q): want 1 accepting on its port, 0 connecting to it",
			peer, accept, port, o.peer, o.accept, o.port)
	}
	if err := rs[0].ClosePort(port); err != nil {
		t.Fatalf("the port Join opened: %v", err)
	}

	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	go func() {
		_, _ = d.Write([]byte("hello\n"))
		_, _ = d.Read(make([]byte, 256))
	}()
	if _, _, _, err := rs[0].JoinPort(c); faultOf(t, "a foreign end", err) != FaultOther || !strings.Contains(err.Error(), "not MPI_Comm_join") {
		t.Fatalf("a foreign end: %v, want FaultOther (not MPI_Comm_join)", err)
	}
}
