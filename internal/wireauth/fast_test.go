package wireauth

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

func TestFastHandshake(t *testing.T) {
	k := key(t, 7)
	l := NewListener(k, nonce(100))
	h := Hello{Proto: ProtoSock, Scope: 1, From: 1, To: 0, Nonce: nonce(1)}
	d, msg := NewFastDialer(k, h, l.Nonce())
	got, reply, err := l.Fast(msg, nil)
	if err != nil || !got.Fast || got.From != 1 {
		t.Fatalf("listener: %+v %v", got, err)
	}
	if v, err := d.Reply(reply(2)); err != nil || v != 2 {
		t.Fatalf("dialer: verdict %d %v", v, err)
	}
	// The same message again: a replay.
	if _, _, err := l.Fast(msg, nil); !errors.Is(err, ErrReplay) {
		t.Fatalf("replayed hello: %v", err)
	}
	// The answer replayed to another dialer (fresh nonce) fails; so does
	// an altered verdict.
	h.Nonce = nonce(2)
	d2, msg2 := NewFastDialer(k, h, l.Nonce())
	if _, err := d2.Reply(reply(2)); !errors.Is(err, ErrMAC) {
		t.Fatalf("replayed answer: %v", err)
	}
	_, reply2, err := l.Fast(msg2, nil)
	if err != nil {
		t.Fatal(err)
	}
	ans := reply2(1)
	ans[0] = 2
	d3, _ := NewFastDialer(k, h, l.Nonce())
	if _, err := d3.Reply(ans); !errors.Is(err, ErrMAC) {
		t.Fatalf("altered verdict: %v", err)
	}
	// Wrong keys, and a dialer with another listener nonce.
	h.Nonce = nonce(3)
	_, msg = NewFastDialer(key(t, 8), h, l.Nonce())
	if _, _, err := l.Fast(msg, nil); !errors.Is(err, ErrMAC) {
		t.Fatalf("wrong dialer key: %v", err)
	}
	_, msg = NewFastDialer(k, h, nonce(50))
	if _, _, err := l.Fast(msg, nil); !errors.Is(err, ErrMAC) {
		t.Fatalf("another listener's nonce: %v", err)
	}
	// The two kinds of hello do not mix.
	var hb [HelloSize]byte
	(&Hello{Proto: ProtoSock, Nonce: nonce(4)}).Encode(hb[:])
	if _, _, err := l.Fast(append(hb[:], make([]byte, MACSize)...), nil); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a three-message hello as two: %v", err)
	}
	_, msg = NewFastDialer(k, Hello{Nonce: nonce(5)}, l.Nonce())
	if _, _, err := NewAcceptor(k, nonce(100), nil).Hello(msg[:HelloSize]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a two-message hello as three: %v", err)
	}
}

// Listener.Accept serves both handshakes over a real connection.
func TestListenerAcceptsBoth(t *testing.T) {
	k := key(t, 1)
	l := NewListener(k, nonce(9))
	for _, fast := range []bool{true, false} {
		c1, c2 := net.Pipe()
		c1.SetDeadline(time.Now().Add(10 * time.Second))
		c2.SetDeadline(time.Now().Add(10 * time.Second))
		res := make(chan error, 1)
		go func() {
			h, reply, err := l.Accept(c2, c2, nil)
			if err == nil {
				if (reply != nil) != fast || h.From != 3 {
					err = errors.New("wrong kind of handshake")
				} else if reply != nil {
					_, err = c2.Write(reply(1))
				}
			}
			c2.Close()
			res <- err
		}()
		h := Hello{Proto: ProtoSock, From: 3, To: 0}
		var err error
		if fast {
			var v byte
			v, err = FastDial(c1, k, h, l.Nonce())
			if err == nil && v != 1 {
				t.Fatalf("verdict %d", v)
			}
		} else {
			err = Dial(c1, k, h)
		}
		c1.Close()
		if aerr := <-res; err != nil || aerr != nil {
			t.Fatalf("fast=%v: dial %v, accept %v", fast, err, aerr)
		}
	}
}

// FuzzFast feeds arbitrary two-message hellos to a listener.
func FuzzFast(f *testing.F) {
	k := key(f, 7)
	_, msg := NewFastDialer(k, Hello{Proto: ProtoSock, From: 1, Nonce: nonce(1)}, nonce(100))
	f.Add(msg)
	f.Add(make([]byte, FastHelloSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := NewListener(k, nonce(100))
		h, reply, err := l.Fast(b, nil)
		if err != nil {
			return
		}
		want := mac(&k.dialer, b[:HelloSize], &l.nonce)
		if !bytes.Equal(b[HelloSize:], want[:]) || !h.Fast || len(reply(1)) != FastReplySize {
			t.Fatalf("accepted %x", b)
		}
	})
}
