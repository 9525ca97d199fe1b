package wireauth

import (
	"bytes"
	"testing"
)

// FuzzAcceptor feeds arbitrary hellos and proofs to an acceptor: it never
// panics, and accepts only the proof the key makes for that hello.
func FuzzAcceptor(f *testing.F) {
	k := key(f, 7)
	var good [HelloSize]byte
	(&Hello{Proto: ProtoSock, Scope: 1, From: 1, To: 0, Nonce: nonce(1)}).Encode(good[:])
	f.Add(good[:], make([]byte, ProofSize))
	f.Add([]byte("pmtf\x01\x00\x00\x00\x00\x00\x00\x00"), []byte{1})
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, hello, proof []byte) {
		a := NewAcceptor(k, nonce(100), func(h Hello) error { return nil })
		_, ch, err := a.Hello(hello)
		if err != nil {
			if ch != nil {
				t.Fatal("a challenge with an error")
			}
			return
		}
		if len(ch) != ChallengeSize {
			t.Fatalf("challenge of %d bytes", len(ch))
		}
		err = a.Proof(proof)
		want := mac(&k.dialer, hello, (*[NonceSize]byte)(ch[:NonceSize]))
		if (err == nil) != bytes.Equal(proof, want[:]) {
			t.Fatalf("proof %x: %v", proof, err)
		}
	})
}

// FuzzDialer feeds arbitrary challenges to a dialer.
func FuzzDialer(f *testing.F) {
	k := key(f, 7)
	f.Add(make([]byte, ChallengeSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, ch []byte) {
		d, hello := NewDialer(k, Hello{Proto: ProtoControl, From: 2, To: Launcher, Nonce: nonce(1)})
		proof, err := d.Challenge(ch)
		if err != nil {
			return
		}
		want := mac(&k.accept, hello, (*[NonceSize]byte)(ch[:NonceSize]))
		if !bytes.Equal(ch[NonceSize:], want[:]) || len(proof) != ProofSize {
			t.Fatalf("accepted a challenge the key did not make: %x", ch)
		}
	})
}

// FuzzOpen feeds arbitrary datagrams to Open.
func FuzzOpen(f *testing.F) {
	k := key(f, 7)
	f.Add(k.Seal([]byte(`{"op":"event","kind":"failed","rank":1}`)))
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, err := k.Open(b)
		if err == nil && !bytes.Equal(k.Seal(msg), b) {
			t.Fatalf("opened %x", b)
		}
	})
}
