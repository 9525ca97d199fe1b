package wireauth

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func key(t testing.TB, b byte) *Key {
	t.Helper()
	k, err := FromBytes(bytes.Repeat([]byte{b}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func nonce(b byte) (n [NonceSize]byte) {
	for i := range n {
		n[i] = b + byte(i)
	}
	return n
}

// handshake runs the pure core between a dialer with kd and an acceptor
// with ka and returns the first error, naming the side.
func handshake(kd, ka *Key, h Hello, nA [NonceSize]byte, check func(Hello) error) error {
	d, hello := NewDialer(kd, h)
	a := NewAcceptor(ka, nA, check)
	_, ch, err := a.Hello(hello)
	if err != nil {
		return fmt.Errorf("acceptor hello: %w", err)
	}
	proof, err := d.Challenge(ch)
	if err != nil {
		return fmt.Errorf("dialer: %w", err)
	}
	if err := a.Proof(proof); err != nil {
		return fmt.Errorf("acceptor proof: %w", err)
	}
	return nil
}

func TestHandshake(t *testing.T) {
	h := Hello{Proto: ProtoSock, Scope: 3, From: 1, To: 0, Nonce: nonce(1)}
	if err := handshake(key(t, 7), key(t, 7), h, nonce(100), nil); err != nil {
		t.Fatalf("same key: %v", err)
	}
	// Either side with another key: the side that checks first fails.
	err := handshake(key(t, 8), key(t, 7), h, nonce(100), nil)
	if !errors.Is(err, ErrMAC) || !strings.HasPrefix(err.Error(), "dialer") {
		t.Fatalf("wrong dialer key: %v", err)
	}
	err = handshake(key(t, 7), key(t, 8), h, nonce(100), nil)
	if !errors.Is(err, ErrMAC) || !strings.HasPrefix(err.Error(), "dialer") {
		t.Fatalf("wrong acceptor key: the dialer must refuse it first: %v", err)
	}
}

// A rogue without the key that impersonates a dialer gets a challenge but
// cannot produce the proof; one that replays a proof captured from an
// earlier connection fails against the fresh nonce of the new one.
func TestReplayFails(t *testing.T) {
	k := key(t, 7)
	h := Hello{Proto: ProtoSock, From: 1, To: 0, Nonce: nonce(1)}
	// Capture a complete, valid transcript.
	d, hello := NewDialer(k, h)
	a := NewAcceptor(k, nonce(100), nil)
	_, ch, err := a.Hello(hello)
	if err != nil {
		t.Fatal(err)
	}
	proof, err := d.Challenge(ch)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Proof(proof); err != nil {
		t.Fatal(err)
	}
	// Replay the dialer's messages to a new acceptor (new nonce).
	a2 := NewAcceptor(k, nonce(200), nil)
	if _, _, err := a2.Hello(hello); err != nil {
		t.Fatal(err)
	}
	if err := a2.Proof(proof); !errors.Is(err, ErrMAC) {
		t.Fatalf("replayed proof accepted: %v", err)
	}
	// Replay the acceptor's challenge to a new dialer (new nonce).
	h.Nonce = nonce(2)
	d2, _ := NewDialer(k, h)
	if _, err := d2.Challenge(ch); !errors.Is(err, ErrMAC) {
		t.Fatalf("replayed challenge accepted: %v", err)
	}
	// Reflect the acceptor's MAC as the dialer's proof.
	a3 := NewAcceptor(k, nonce(100), nil)
	h.Nonce = nonce(1)
	_, ch3, _ := a3.Hello(hello)
	if err := a3.Proof(ch3[NonceSize:]); !errors.Is(err, ErrMAC) {
		t.Fatalf("reflected MAC accepted: %v", err)
	}
}

// The MACs bind the claimed identities, protocol and scope: a hello
// altered on the way makes the dialer refuse the challenge.
func TestIdentitiesBound(t *testing.T) {
	k := key(t, 7)
	base := Hello{Proto: ProtoSock, Scope: 2, From: 1, To: 0, Nonce: nonce(1)}
	for name, alter := range map[string]func(*Hello){
		"from":  func(h *Hello) { h.From = 5 },
		"to":    func(h *Hello) { h.To = 9 },
		"proto": func(h *Hello) { h.Proto = ProtoControl },
		"scope": func(h *Hello) { h.Scope = 1 },
		"nonce": func(h *Hello) { h.Nonce[0]++ },
	} {
		d, _ := NewDialer(k, base)
		alt := base
		alter(&alt)
		var b [HelloSize]byte
		alt.Encode(b[:])
		a := NewAcceptor(k, nonce(100), nil)
		_, ch, err := a.Hello(b[:])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := d.Challenge(ch); !errors.Is(err, ErrMAC) {
			t.Fatalf("%s altered in transit: dialer accepted: %v", name, err)
		}
	}
}

func TestCheckRefusesBeforeMAC(t *testing.T) {
	k := key(t, 7)
	h := Hello{Proto: ProtoSock, From: 40, To: 0, Nonce: nonce(1)}
	err := handshake(k, k, h, nonce(100), func(h Hello) error {
		if h.From >= 4 {
			return fmt.Errorf("process %d out of range [0,4)", h.From)
		}
		return nil
	})
	if !errors.Is(err, ErrIdentity) || !strings.Contains(err.Error(), "process 40 out of range") {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeHelloDefects(t *testing.T) {
	var good [HelloSize]byte
	(&Hello{Proto: 1, From: 2, To: 3}).Encode(good[:])
	if h, err := DecodeHello(good[:]); err != nil || h.From != 2 || h.To != 3 || h.Proto != 1 {
		t.Fatalf("round trip: %+v %v", h, err)
	}
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"short":    {good[:10], "hello of 10 bytes"},
		"magic":    {append([]byte{0, 0, 0, 0}, good[4:]...), "bad magic"},
		"version":  {func() []byte { b := good; b[4] = 9; return b[:] }(), "version 9"},
		"reserved": {func() []byte { b := good; b[7] = 1; return b[:] }(), "reserved"},
		"old":      {[]byte("pmtf\x01\x00\x00\x00\x00\x00\x00\x00"), "hello of 12 bytes"},
	}
	for name, c := range cases {
		_, err := DecodeHello(c.b)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestOutOfTurn(t *testing.T) {
	k := key(t, 7)
	a := NewAcceptor(k, nonce(100), nil)
	if err := a.Proof(make([]byte, ProofSize)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("proof before hello: %v", err)
	}
	d, _ := NewDialer(k, Hello{Nonce: nonce(1)})
	d.Challenge(make([]byte, ChallengeSize))
	if _, err := d.Challenge(make([]byte, ChallengeSize)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("second challenge: %v", err)
	}
	// An acceptor echoing the dialer's nonce is refused.
	d, _ = NewDialer(k, Hello{Nonce: nonce(1)})
	n1 := nonce(1)
	ch := append(n1[:], make([]byte, MACSize)...)
	if _, err := d.Challenge(ch); !errors.Is(err, ErrMalformed) {
		t.Fatalf("echoed nonce: %v", err)
	}
}

// Dial and Accept over a real socket pair, with a right and a wrong key.
func TestDialAccept(t *testing.T) {
	for _, same := range []bool{true, false} {
		c1, c2 := net.Pipe()
		c1.SetDeadline(time.Now().Add(10 * time.Second))
		c2.SetDeadline(time.Now().Add(10 * time.Second))
		kd, ka := key(t, 1), key(t, 1)
		if !same {
			ka = key(t, 2)
		}
		res := make(chan error, 1)
		go func() {
			_, err := Accept(c2, c2, ka, nil)
			c2.Close() // a refused dialer sees the connection end
			res <- err
		}()
		derr := Dial(c1, kd, Hello{Proto: ProtoControl, From: 3, To: Launcher})
		c1.Close()
		aerr := <-res
		if same && (derr != nil || aerr != nil) {
			t.Fatalf("same key: dial %v, accept %v", derr, aerr)
		}
		if !same && !errors.Is(derr, ErrMAC) {
			t.Fatalf("wrong key: dial %v (accept %v)", derr, aerr)
		}
	}
}

func TestSealOpen(t *testing.T) {
	k := key(t, 1)
	b := k.Seal([]byte(`{"op":"event"}`))
	msg, err := k.Open(b)
	if err != nil || string(msg) != `{"op":"event"}` {
		t.Fatalf("open: %q %v", msg, err)
	}
	if _, err := key(t, 2).Open(b); err == nil {
		t.Fatal("opened with another key")
	}
	b[0] ^= 1
	if _, err := k.Open(b); err == nil {
		t.Fatal("opened an altered datagram")
	}
	if _, err := k.Open([]byte("short")); err == nil || !strings.Contains(err.Error(), "shorter than its MAC") {
		t.Fatalf("short: %v", err)
	}
}

func TestPipeInherit(t *testing.T) {
	k, err := New()
	if err != nil {
		t.Fatal(err)
	}
	r, err := k.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// Inherit takes a descriptor number, as a child sees it.
	got, err := Inherit(strconv.Itoa(int(r.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), k.Bytes()) {
		t.Fatal("inherited another secret")
	}
	if k, err := Inherit(""); k != nil || err != nil {
		t.Fatalf("no descriptor: %v %v", k, err)
	}
	for _, v := range []string{"x", "1", "-4"} {
		if _, err := Inherit(v); err == nil || !strings.Contains(err.Error(), EnvFD) {
			t.Errorf("%q: %v", v, err)
		}
	}
	if _, err := ReadKey(strings.NewReader("short")); err == nil || !strings.Contains(err.Error(), "shorter") {
		t.Fatalf("short secret: %v", err)
	}
	if fmt.Sprint(k) != "wireauth.Key{…}" {
		t.Fatalf("a key prints as %v", k)
	}
}
