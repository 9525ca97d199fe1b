package wireauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The two-message handshake. A listener publishes a nonce of its own
// through a channel the job already trusts (the socket transport puts it
// in its endpoint, exchanged through the authenticated launcher
// connections). A dialer that knows it sends its hello together with its
// proof at once; the listener checks the proof, refuses a dialer nonce it
// has seen before (a replay), and answers with its verdict and its own MAC
// over both (so a replayed answer fails against the dialer's fresh nonce):
//
//	dialer -> listener  hello (Fast) + proof MAC_d(hello, listener nonce)   (FastHelloSize)
//	listener -> dialer  verdict + MAC_a(hello, listener nonce, verdict)      (FastReplySize)
//
// One round trip, as a plain hello with an accept/refuse reply.

// Sizes of the two-message handshake.
const (
	FastHelloSize = HelloSize + MACSize
	FastReplySize = 1 + MACSize
)

// fastReplyMAC is the listener's MAC over the hello, its nonce and the verdict.
func fastReplyMAC(k *Key, hello []byte, nonceL *[NonceSize]byte, verdict byte) [MACSize]byte {
	m := hmac.New(sha256.New, k.accept[:])
	m.Write(hello)
	m.Write(nonceL[:])
	m.Write([]byte{verdict})
	var out [MACSize]byte
	m.Sum(out[:0])
	return out
}

// FastDialer is the dialing side of a two-message handshake.
type FastDialer struct {
	key    *Key
	hello  [HelloSize]byte
	nonceL [NonceSize]byte
	h      Hello
	done   bool
}

// NewFastDialer starts a two-message handshake with a listener that
// published nonceL; it returns the message to send (hello and proof).
func NewFastDialer(key *Key, h Hello, nonceL [NonceSize]byte) (*FastDialer, []byte) {
	h.Fast = true
	d := &FastDialer{key: key, h: h, nonceL: nonceL}
	h.Encode(d.hello[:])
	proof := mac(&key.dialer, d.hello[:], &nonceL)
	return d, append(append([]byte(nil), d.hello[:]...), proof[:]...)
}

// Reply checks the listener's answer and returns its verdict.
func (d *FastDialer) Reply(msg []byte) (byte, error) {
	if d.done {
		return 0, fmt.Errorf("%w: a second reply", ErrMalformed)
	}
	d.done = true
	if len(msg) != FastReplySize {
		return 0, fmt.Errorf("%w: reply of %d bytes, want %d", ErrMalformed, len(msg), FastReplySize)
	}
	want := fastReplyMAC(d.key, d.hello[:], &d.nonceL, msg[0])
	if !hmac.Equal(want[:], msg[1:]) {
		return 0, fmt.Errorf("peer %d: %w", d.h.To, ErrMAC)
	}
	return msg[0], nil
}

// Listener is the accepting side of the handshakes of one listening
// socket: its published nonce and the dialer nonces of the two-message
// handshakes it accepted (a replayed one is refused). Safe for concurrent
// use.
type Listener struct {
	key   *Key
	nonce [NonceSize]byte
	mu    sync.Mutex
	seen  map[[NonceSize]byte]struct{}
}

// NewListener makes the accepting side of a listener with nonce, which it
// publishes to its dialers.
func NewListener(key *Key, nonce [NonceSize]byte) *Listener {
	return &Listener{key: key, nonce: nonce, seen: make(map[[NonceSize]byte]struct{})}
}

// Nonce is the listener's published nonce.
func (l *Listener) Nonce() [NonceSize]byte { return l.nonce }

// Fast checks a two-message hello (FastHelloSize bytes) and returns the
// hello and the function that makes the answer with the caller's verdict.
// check runs before any MAC is computed.
func (l *Listener) Fast(msg []byte, check func(Hello) error) (Hello, func(verdict byte) []byte, error) {
	if len(msg) != FastHelloSize {
		return Hello{}, nil, fmt.Errorf("%w: two-message hello of %d bytes, want %d", ErrMalformed, len(msg), FastHelloSize)
	}
	hello := msg[:HelloSize]
	h, err := DecodeHello(hello)
	if err != nil {
		return h, nil, err
	}
	if !h.Fast {
		return h, nil, fmt.Errorf("%w: a three-message hello", ErrMalformed)
	}
	if check != nil {
		if err := check(h); err != nil {
			return h, nil, fmt.Errorf("%w: %v", ErrIdentity, err)
		}
	}
	want := mac(&l.key.dialer, hello, &l.nonce)
	if !hmac.Equal(want[:], msg[HelloSize:]) {
		return h, nil, fmt.Errorf("dialer claiming %d: %w", h.From, ErrMAC)
	}
	l.mu.Lock()
	_, replay := l.seen[h.Nonce]
	l.seen[h.Nonce] = struct{}{}
	l.mu.Unlock()
	if replay {
		return h, nil, fmt.Errorf("dialer claiming %d: %w: its nonce was used before", h.From, ErrReplay)
	}
	hb := append([]byte(nil), hello...)
	return h, func(verdict byte) []byte {
		m := fastReplyMAC(l.key, hb, &l.nonce, verdict)
		return append([]byte{verdict}, m[:]...)
	}, nil
}

// ErrReplay is a two-message hello seen before.
var ErrReplay = errors.New("replayed handshake")

// Accept runs the accepting side of either handshake over r and w: the
// two-message one (reply is then the function that makes the answer
// carrying the caller's verdict, which the caller writes), or the
// three-message one (reply is nil: the caller sends its verdict its own
// way). Exactly the handshake's bytes are read from r.
func (l *Listener) Accept(r io.Reader, w io.Writer, check func(Hello) error) (h Hello, reply func(verdict byte) []byte, err error) {
	var buf [FastHelloSize]byte
	if _, err := io.ReadFull(r, buf[:HelloSize]); err != nil {
		return Hello{}, nil, fmt.Errorf("wireauth: no hello: %w", err)
	}
	if buf[4] != versionFast {
		h, err := acceptRest(r, w, l.key, check, buf[:HelloSize])
		return h, nil, err
	}
	if _, err := io.ReadFull(r, buf[HelloSize:]); err != nil {
		return Hello{}, nil, fmt.Errorf("wireauth: no proof after a two-message hello: %w", err)
	}
	h, reply, err = l.Fast(buf[:], check)
	if err != nil {
		return h, nil, fmt.Errorf("wireauth: %w", err)
	}
	return h, reply, nil
}

// FastDial runs the dialing side of a two-message handshake with a
// listener that published nonceL and returns its verdict (deadlines are
// the caller's): h.Nonce is filled with a fresh nonce.
func FastDial(rw io.ReadWriter, key *Key, h Hello, nonceL [NonceSize]byte) (byte, error) {
	n, err := Nonce()
	if err != nil {
		return 0, err
	}
	h.Nonce = n
	d, msg := NewFastDialer(key, h, nonceL)
	if _, err := rw.Write(msg); err != nil {
		return 0, fmt.Errorf("wireauth: send hello: %w", err)
	}
	var rep [FastReplySize]byte
	if _, err := io.ReadFull(rw, rep[:]); err != nil {
		return 0, fmt.Errorf("wireauth: no answer from the peer (it refused this side's hello?): %w", err)
	}
	v, err := d.Reply(rep[:])
	if err != nil {
		return 0, fmt.Errorf("wireauth: %w", err)
	}
	return v, nil
}
