// Package wireauth authenticates the connections of one job: every party
// (launcher, agents, ranks) holds the job's secret Key, and a connection is
// used only after both ends proved that they know it.
//
// The handshake is a mutual challenge-response with HMAC-SHA256, three
// fixed-size messages:
//
//	dialer -> acceptor  hello     magic, version, protocol, scope, from, to, dialer's nonce  (HelloSize)
//	acceptor -> dialer  challenge acceptor's nonce, acceptor's MAC                            (ChallengeSize)
//	dialer -> acceptor  proof     dialer's MAC                                                (ProofSize)
//
// Both MACs cover the whole hello (so both claimed identities, the
// protocol and the scope) and both nonces, under keys derived from the
// secret with distinct labels for the two roles. A transcript replayed to
// another connection fails (the other end's nonce is fresh), a MAC cannot
// be reflected (the roles' keys differ), and a connection cannot claim
// another identity, protocol or scope than the one its MAC was made for.
// After the proof each protocol sends its own verdict (the socket
// transport's accept/refuse byte, the launcher's hello reply). A listener
// that publishes a nonce of its own (Listener) also serves a
// one-round-trip form of the same handshake (fast.go).
//
// The core (Dialer, Acceptor, the message codecs) is pure: nonces come
// from the caller, no I/O, no clock. Dial and Accept are its I/O shell
// over a stream (the caller sets deadlines). Seal and Open authenticate
// single datagrams (the launcher's event datagrams).
//
// How the secret travels (see Key.Pipe and Inherit): a child process gets
// it through an inherited pipe whose descriptor number is in EnvFD; never
// on a command line, in the environment or in a file. An agent started
// over ssh reads it from its standard input (ReadKey) and hands it to its
// ranks the same way (Key.Pipe).
//
// What it does not do: encrypt (everything after the handshake travels in
// clear), protect frames after the handshake (an attacker who can write
// into an established TCP stream is not stopped), or hide the secret from
// root or from the job's own user, who can read a rank's memory.
//
// The package must hold no process-global state, and its core must not do
// I/O or read a clock.
package wireauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// KeySize is the size of a job's secret.
const KeySize = 32

// NonceSize is the size of each side's nonce.
const NonceSize = 32

// MACSize is the size of a MAC (HMAC-SHA256).
const MACSize = sha256.Size

// Sizes of the handshake messages.
const (
	HelloSize     = 4 + 1 + 1 + 2 + 8 + 8 + 8 + NonceSize // magic, version, proto, reserved, scope, from, to, nonce
	ChallengeSize = NonceSize + MACSize
	ProofSize     = MACSize
)

const (
	magic       = 0x616d7466 // "ftma" little endian
	version     = 1          // the three-message handshake
	versionFast = 2          // the two-message handshake (see Listener)
)

// Protocols a connection may be for: part of what the MACs cover, so a
// handshake made for one can never open another.
const (
	ProtoSock    uint8 = 1 // rank to rank (internal/transport/sock)
	ProtoControl uint8 = 2 // rank to launcher (internal/boot, internal/launch)
	ProtoAgent   uint8 = 3 // agent to head (multi-host launch)
	ProtoShm     uint8 = 4 // rank to rank, a shared-memory pair's set-up (internal/transport/shm)
)

// Launcher is the identity of the launcher's end of a control connection.
const Launcher = ^uint64(0)

// Key is a job's secret. The zero Key is not valid (see New, FromBytes).
type Key struct {
	secret [KeySize]byte
	dialer [MACSize]byte // derived: MAC key of the dialing side
	accept [MACSize]byte // derived: MAC key of the accepting side
	events [MACSize]byte // derived: MAC key of datagrams
}

// New makes a fresh random key (crypto/rand).
func New() (*Key, error) {
	var b [KeySize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("wireauth: make a secret: %w", err)
	}
	return FromBytes(b[:])
}

// FromBytes makes a key from a secret of KeySize bytes.
func FromBytes(b []byte) (*Key, error) {
	if len(b) != KeySize {
		return nil, fmt.Errorf("wireauth: a secret has %d bytes, not %d", KeySize, len(b))
	}
	k := &Key{}
	copy(k.secret[:], b)
	k.derive(k.dialer[:], "ftmpi wireauth v1 dialer")
	k.derive(k.accept[:], "ftmpi wireauth v1 acceptor")
	k.derive(k.events[:], "ftmpi wireauth v1 datagram")
	return k, nil
}

func (k *Key) derive(dst []byte, label string) {
	m := hmac.New(sha256.New, k.secret[:])
	m.Write([]byte(label))
	m.Sum(dst[:0])
}

// Bytes returns a copy of the secret (to hand it on, e.g. to an agent).
func (k *Key) Bytes() []byte { return append([]byte(nil), k.secret[:]...) }

// String never shows the secret.
func (k *Key) String() string { return "wireauth.Key{…}" }

// Hello is the first message of a handshake.
type Hello struct {
	Fast  bool   // a two-message handshake (set by NewFastDialer; see Listener)
	Proto uint8  // ProtoSock, ProtoControl, ProtoAgent, ProtoShm
	Scope uint64 // what the connection belongs to within the job (the socket transport: the Reinit epoch)
	From  uint64 // the dialer's identity (a process id)
	To    uint64 // the identity the dialer expects to reach
	Nonce [NonceSize]byte
}

// Encode writes h into b (HelloSize bytes).
func (h *Hello) Encode(b []byte) {
	_ = b[HelloSize-1]
	binary.LittleEndian.PutUint32(b[0:], magic)
	b[4] = version
	if h.Fast {
		b[4] = versionFast
	}
	b[5] = h.Proto
	b[6], b[7] = 0, 0
	binary.LittleEndian.PutUint64(b[8:], h.Scope)
	binary.LittleEndian.PutUint64(b[16:], h.From)
	binary.LittleEndian.PutUint64(b[24:], h.To)
	copy(b[32:], h.Nonce[:])
}

// Errors of a failed handshake (wrapped with details).
var (
	ErrMalformed = errors.New("malformed handshake")
	ErrMAC       = errors.New("wrong MAC: the peer does not know the job's secret, or replays another connection's handshake")
	ErrIdentity  = errors.New("identity refused")
	// ErrNoHello: the connection ended before a whole hello came (with
	// io.EOF: it closed before sending a byte).
	ErrNoHello = errors.New("no hello")
)

// DecodeHello parses a hello; any defect is an error naming it.
func DecodeHello(b []byte) (Hello, error) {
	var h Hello
	if len(b) != HelloSize {
		return h, fmt.Errorf("%w: hello of %d bytes, want %d", ErrMalformed, len(b), HelloSize)
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != magic {
		return h, fmt.Errorf("%w: bad magic %#x (not an authenticated ftmpi peer)", ErrMalformed, m)
	}
	if b[4] != version && b[4] != versionFast {
		return h, fmt.Errorf("%w: version %d, want %d or %d", ErrMalformed, b[4], version, versionFast)
	}
	h.Fast = b[4] == versionFast
	if b[6] != 0 || b[7] != 0 {
		return h, fmt.Errorf("%w: reserved bytes set", ErrMalformed)
	}
	h.Proto = b[5]
	h.Scope = binary.LittleEndian.Uint64(b[8:])
	h.From = binary.LittleEndian.Uint64(b[16:])
	h.To = binary.LittleEndian.Uint64(b[24:])
	copy(h.Nonce[:], b[32:])
	return h, nil
}

// mac is the MAC of one role over the hello and the acceptor's nonce.
func mac(key *[MACSize]byte, hello []byte, nonceA *[NonceSize]byte) [MACSize]byte {
	m := hmac.New(sha256.New, key[:])
	m.Write(hello)
	m.Write(nonceA[:])
	var out [MACSize]byte
	m.Sum(out[:0])
	return out
}

// Dialer is the dialing side of one handshake.
type Dialer struct {
	key   *Key
	hello [HelloSize]byte
	h     Hello
	done  bool
}

// NewDialer starts a handshake as h.From towards h.To; it returns the
// hello to send.
func NewDialer(key *Key, h Hello) (*Dialer, []byte) {
	d := &Dialer{key: key, h: h}
	h.Encode(d.hello[:])
	return d, append([]byte(nil), d.hello[:]...)
}

// Challenge checks the acceptor's challenge and returns the proof to send.
func (d *Dialer) Challenge(msg []byte) ([]byte, error) {
	if d.done {
		return nil, fmt.Errorf("%w: a second challenge", ErrMalformed)
	}
	d.done = true
	if len(msg) != ChallengeSize {
		return nil, fmt.Errorf("%w: challenge of %d bytes, want %d", ErrMalformed, len(msg), ChallengeSize)
	}
	var nonceA [NonceSize]byte
	copy(nonceA[:], msg)
	if nonceA == d.h.Nonce {
		return nil, fmt.Errorf("%w: the peer echoed this side's nonce", ErrMalformed)
	}
	want := mac(&d.key.accept, d.hello[:], &nonceA)
	if !hmac.Equal(want[:], msg[NonceSize:]) {
		return nil, fmt.Errorf("peer %d: %w", d.h.To, ErrMAC)
	}
	proof := mac(&d.key.dialer, d.hello[:], &nonceA)
	return proof[:], nil
}

// Acceptor is the accepting side of one handshake.
type Acceptor struct {
	key    *Key
	check  func(Hello) error
	nonceA [NonceSize]byte
	hello  [HelloSize]byte
	h      Hello
	state  int // 0: wants hello, 1: wants proof, 2: done
}

// NewAcceptor starts accepting a handshake with the acceptor's nonce;
// check decides whether a hello's protocol, scope and identities are
// acceptable (it runs before any MAC is computed).
func NewAcceptor(key *Key, nonce [NonceSize]byte, check func(Hello) error) *Acceptor {
	return &Acceptor{key: key, check: check, nonceA: nonce}
}

// Hello takes the dialer's hello and returns the challenge to send.
func (a *Acceptor) Hello(msg []byte) (Hello, []byte, error) {
	if a.state != 0 {
		return Hello{}, nil, fmt.Errorf("%w: a second hello", ErrMalformed)
	}
	a.state = 1
	h, err := DecodeHello(msg)
	if err != nil {
		return h, nil, err
	}
	if h.Fast {
		return h, nil, fmt.Errorf("%w: a two-message hello where three messages are expected", ErrMalformed)
	}
	if h.Nonce == a.nonceA {
		return h, nil, fmt.Errorf("%w: the peer echoed this side's nonce", ErrMalformed)
	}
	if a.check != nil {
		if err := a.check(h); err != nil {
			return h, nil, fmt.Errorf("%w: %v", ErrIdentity, err)
		}
	}
	a.h = h
	copy(a.hello[:], msg)
	m := mac(&a.key.accept, a.hello[:], &a.nonceA)
	out := make([]byte, 0, ChallengeSize)
	out = append(out, a.nonceA[:]...)
	return h, append(out, m[:]...), nil
}

// Proof checks the dialer's proof: nil means the dialer knows the key and
// is who its hello claims.
func (a *Acceptor) Proof(msg []byte) error {
	if a.state != 1 {
		return fmt.Errorf("%w: a proof out of turn", ErrMalformed)
	}
	a.state = 2
	if len(msg) != ProofSize {
		return fmt.Errorf("%w: proof of %d bytes, want %d", ErrMalformed, len(msg), ProofSize)
	}
	want := mac(&a.key.dialer, a.hello[:], &a.nonceA)
	if !hmac.Equal(want[:], msg) {
		return fmt.Errorf("dialer claiming %d: %w", a.h.From, ErrMAC)
	}
	return nil
}

// Nonce returns a fresh random nonce.
func Nonce() ([NonceSize]byte, error) {
	var n [NonceSize]byte
	if _, err := rand.Read(n[:]); err != nil {
		return n, fmt.Errorf("wireauth: nonce: %w", err)
	}
	return n, nil
}

// Dial runs the dialer's side of a handshake over rw (deadlines are the
// caller's): h.Nonce is filled with a fresh nonce.
func Dial(rw io.ReadWriter, key *Key, h Hello) error {
	n, err := Nonce()
	if err != nil {
		return err
	}
	h.Nonce = n
	d, hello := NewDialer(key, h)
	if _, err := rw.Write(hello); err != nil {
		return fmt.Errorf("wireauth: send hello: %w", err)
	}
	var ch [ChallengeSize]byte
	if _, err := io.ReadFull(rw, ch[:]); err != nil {
		return fmt.Errorf("wireauth: no challenge from the peer (it refused this side's hello?): %w", err)
	}
	proof, err := d.Challenge(ch[:])
	if err != nil {
		return fmt.Errorf("wireauth: %w", err)
	}
	if _, err := rw.Write(proof); err != nil {
		return fmt.Errorf("wireauth: send proof: %w", err)
	}
	return nil
}

// Accept runs the acceptor's side of a handshake, reading from r and
// writing to w (deadlines are the caller's); it returns the dialer's
// hello once the dialer proved it knows the key. Exactly the handshake's
// bytes are read from r.
func Accept(r io.Reader, w io.Writer, key *Key, check func(Hello) error) (Hello, error) {
	var hb [HelloSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return Hello{}, fmt.Errorf("wireauth: %w: %w", ErrNoHello, err)
	}
	return acceptRest(r, w, key, check, hb[:])
}

// acceptRest is the three-message handshake after its hello was read.
func acceptRest(r io.Reader, w io.Writer, key *Key, check func(Hello) error, hb []byte) (Hello, error) {
	n, err := Nonce()
	if err != nil {
		return Hello{}, err
	}
	a := NewAcceptor(key, n, check)
	h, ch, err := a.Hello(hb)
	if err != nil {
		return h, fmt.Errorf("wireauth: %w", err)
	}
	if _, err := w.Write(ch); err != nil {
		return h, fmt.Errorf("wireauth: send challenge: %w", err)
	}
	var proof [ProofSize]byte
	if _, err := io.ReadFull(r, proof[:]); err != nil {
		return h, fmt.Errorf("wireauth: no proof from the peer claiming %d: %w", h.From, err)
	}
	if err := a.Proof(proof[:]); err != nil {
		return h, fmt.Errorf("wireauth: %w", err)
	}
	return h, nil
}

// Seal returns msg followed by its MAC under the key's datagram key; the
// launcher seals each event datagram.
func (k *Key) Seal(msg []byte) []byte {
	m := hmac.New(sha256.New, k.events[:])
	m.Write(msg)
	out := make([]byte, 0, len(msg)+MACSize)
	out = append(out, msg...)
	return m.Sum(out)
}

// Open checks a sealed datagram and returns its message.
func (k *Key) Open(b []byte) ([]byte, error) {
	if len(b) < MACSize {
		return nil, fmt.Errorf("wireauth: datagram of %d bytes is shorter than its MAC", len(b))
	}
	msg, tag := b[:len(b)-MACSize], b[len(b)-MACSize:]
	m := hmac.New(sha256.New, k.events[:])
	m.Write(msg)
	if !hmac.Equal(m.Sum(nil), tag) {
		return nil, errors.New("wireauth: datagram with a wrong MAC (not sent by the job's launcher)")
	}
	return msg, nil
}
