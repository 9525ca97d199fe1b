package ctl

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ftmpi/ftmpi/internal/transport"
)

func TestDispatchToRegisteredHandler(t *testing.T) {
	var tb Table
	var got []string
	for _, typ := range []Type{Revoke, Agree, CollFail, Heartbeat, FailNotice} {
		if err := tb.Register(typ, func(from int, h transport.Header, p []byte) {
			got = append(got, Type(h.Tag).String()+"/"+string(p))
		}); err != nil {
			t.Fatalf("Register(%v): %v", typ, err)
		}
	}
	for _, typ := range []Type{FailNotice, Revoke, Heartbeat, Agree} {
		var p []byte
		if typ == Agree { // the others carry no payload
			p = []byte("x")
		}
		if err := tb.Dispatch(3, transport.Header{Tag: int32(typ), N: uint64(len(p))}, p); err != nil {
			t.Fatalf("Dispatch(%v): %v", typ, err)
		}
	}
	want := "failure notice/ revoke/ heartbeat/ agree/x"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("handled %q, want %q", s, want)
	}
}

func TestUnknownAndUnhandledFramesRejected(t *testing.T) {
	var tb Table
	called := false
	tb.MustRegister(Revoke, func(int, transport.Header, []byte) { called = true })
	for _, tc := range []struct {
		tag    int32
		reason string
	}{
		{0, "unknown type"}, {5, "unknown type"}, {-1, "unknown type"}, {31, "unknown type"},
		{32, "unknown type"}, {1 << 30, "unknown type"}, {int32(Agree), "no handler for agree"},
	} {
		h := transport.Header{Tag: tc.tag, Ctx: 7, N: 4}
		err := tb.Dispatch(5, h, []byte("abcd"))
		var re *RejectError
		if !errors.As(err, &re) || re.From != 5 || re.Header != h {
			t.Fatalf("tag %d: Dispatch = %v, want a *RejectError", tc.tag, err)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.reason) || !strings.Contains(msg, "process 5") {
			t.Errorf("tag %d: error %q does not say %q and who sent it", tc.tag, msg, tc.reason)
		}
	}
	if called {
		t.Fatal("a rejected frame reached the revoke handler")
	}
}

func TestRegisterErrors(t *testing.T) {
	var tb Table
	nop := func(int, transport.Header, []byte) {}
	for _, tc := range []struct {
		typ  Type
		fn   Handler
		want string
	}{
		{5, nop, "not a declared control type"},
		{-4, nop, "not a declared control type"},
		{Heartbeat, nil, "nil handler"},
	} {
		if err := tb.Register(tc.typ, tc.fn); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Register(%v): %v, want %q", tc.typ, err, tc.want)
		}
	}
	tb.MustRegister(Heartbeat, nop)
	if err := tb.Register(Heartbeat, nop); err == nil || !strings.Contains(err.Error(), "heartbeat: it has a handler already") {
		t.Errorf("second Register: %v", err)
	}
}

// Registration while frames are dispatched (the engine delivers early
// frames as soon as the runtime installs its dispatcher) is race-free.
func TestConcurrentRegisterAndDispatch(t *testing.T) {
	var tb Table
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				_ = tb.Dispatch(g, transport.Header{Tag: int32(Agree)}, nil)
			}
		}()
	}
	tb.MustRegister(Agree, func(int, transport.Header, []byte) { mu.Lock(); n++; mu.Unlock() })
	wg.Wait()
	if err := tb.Dispatch(0, transport.Header{Tag: int32(Agree)}, nil); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("handler never called")
	}
}

// Types that carry everything in their header reject a payload.
func TestPayloadOnHeaderOnlyTypeRejected(t *testing.T) {
	var tb Table
	called := false
	tb.MustRegister(FailNotice, func(int, transport.Header, []byte) { called = true })
	err := tb.Dispatch(2, transport.Header{Tag: int32(FailNotice), A: 1, N: 4}, []byte{1, 2, 3, 4})
	var rj *RejectError
	if !errors.As(err, &rj) || !strings.Contains(err.Error(), "a failure notice carries no payload") || called {
		t.Fatalf("err %v, called %v", err, called)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		h    transport.Header
		want string
	}{
		{transport.Header{Tag: int32(Agree), N: 10}, ""},
		{transport.Header{Tag: int32(Heartbeat)}, ""},
		{transport.Header{Tag: 9}, "unknown control type 9"},
		{transport.Header{Tag: -1}, "unknown control type -1"},
		{transport.Header{Tag: int32(Revoke), N: 2}, "a revoke carries no payload, this one 2 bytes"},
	} {
		err := Check(c.h)
		if (c.want == "") != (err == nil) || err != nil && err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.h, err, c.want)
		}
	}
}
