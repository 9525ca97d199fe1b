package mpi

import (
	"errors"
	"slices"
	"testing"
)

// The two models' answers that do not need a running job: how Sendrecv's
// outcomes combine, how collectives are routed without failures, which
// contexts a revocation reaches.
func TestModelSendrecvResult(t *testing.T) {
	c := &Comm{name: "c", size: 4}
	recvFail := newErr(ErrProcFailed, "MPI_Sendrecv", c, 2, "peer lost")
	sendFail := newErr(ErrProcFailed, "MPI_Sendrecv", c, 3, "peer lost")
	trunc := newErr(ErrTruncate, "MPI_Sendrecv", c, 2, "too long")
	st := Status{Source: 2, Tag: 5}

	// ULFM: the receive's error, else the send's, the status untouched.
	var u ulfmModel
	for _, tc := range []struct{ send, recv, want error }{
		{nil, nil, nil},
		{sendFail, nil, sendFail},
		{nil, recvFail, recvFail},
		{sendFail, trunc, trunc},
	} {
		gotSt, err := u.sendrecvResult(c, "MPI_Sendrecv", st, tc.send, tc.recv, 3, 2)
		if err != tc.want || gotSt != st {
			t.Errorf("ULFM(send %v, recv %v) = %+v, %v; want %+v, %v", tc.send, tc.recv, gotSt, err, st, tc.want)
		}
	}

	// Run-through (seed 003 17.6.2): a failed peer is ErrInStatus with its
	// rank and error in the status; the receive's failure first.
	rt := newRTModel()
	for _, tc := range []struct {
		send, recv error
		peer       int
		failed     error
	}{
		{sendFail, nil, 3, sendFail},
		{nil, recvFail, 2, recvFail},
		{sendFail, recvFail, 2, recvFail},
	} {
		gotSt, err := rt.sendrecvResult(c, "MPI_Sendrecv", st, tc.send, tc.recv, 3, 2)
		if !errors.Is(err, ErrInStatus) || gotSt.Source != tc.peer || gotSt.Err != tc.failed {
			t.Errorf("run-through(send %v, recv %v) = %+v, %v; want ErrInStatus, source %d, status error %v",
				tc.send, tc.recv, gotSt, err, tc.peer, tc.failed)
		}
	}
	// Other errors pass through as in ULFM (a failure of either half
	// takes precedence).
	if gotSt, err := rt.sendrecvResult(c, "MPI_Sendrecv", st, nil, trunc, 3, 2); err != trunc || gotSt != st {
		t.Errorf("run-through(nil, truncation) = %+v, %v; want the truncation", gotSt, err)
	}
	if gotSt, err := rt.sendrecvResult(c, "MPI_Sendrecv", st, sendFail, trunc, 3, 2); !errors.Is(err, ErrInStatus) || gotSt.Err != sendFail {
		t.Errorf("run-through(send failure, truncation) = %+v, %v; want ErrInStatus with the send's failure", gotSt, err)
	}
	// A wildcard receive's failure names the peer of the error.
	wild := newErr(ErrProcFailed, "MPI_Sendrecv", c, 1, "peer lost")
	if gotSt, _ := rt.sendrecvResult(c, "MPI_Sendrecv", st, nil, wild, 3, AnySource); gotSt.Source != 1 {
		t.Errorf("run-through wildcard failure: status source %d, want 1", gotSt.Source)
	}
}

func TestModelContextsAndRoute(t *testing.T) {
	c := &Comm{name: "c", ctx: 10, size: 3}
	if got, want := (ulfmModel{}).contexts(c), []uint32{10, 11}; !slices.Equal(got, want) {
		t.Errorf("ULFM contexts = %v, want %v", got, want)
	}
	if v, fail, ok := (ulfmModel{}).collRoute(c, "MPI_Barrier"); v != nil || fail != nil || ok {
		t.Errorf("ULFM collRoute = %v, %v, %v; want the ordinary path", v, fail != nil, ok)
	}
	ic := &Comm{name: "ic", ctx: 20, size: 2, remote: []int{5, 6}, local: &Comm{ctx: 22}}
	rt := newRTModel()
	if got, want := rt.contexts(ic), []uint32{20, 21, 22, 23}; !slices.Equal(got, want) {
		t.Errorf("run-through contexts without a view = %v, want %v", got, want)
	}
	view := &Comm{ctx: 30, local: &Comm{ctx: 32}}
	rt.snap.Store(&rtSnap{recognized: []int{6}, view: &collView{comm: view}})
	if got, want := rt.contexts(ic), []uint32{20, 21, 22, 23, 30, 31, 32, 33}; !slices.Equal(got, want) {
		t.Errorf("run-through contexts with a view = %v, want %v (the view's are revoked with the communicator)", got, want)
	}
	if got := rt.alive(ic); got != view {
		t.Errorf("run-through alive = %p, want the view %p", got, view)
	}
	if got := (ulfmModel{}).alive(ic); got != nil {
		t.Errorf("ULFM alive = %p, want nil", got)
	}
}
