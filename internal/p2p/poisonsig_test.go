package p2p

import (
	"testing"
	"time"
)

// PoisonSignal is closed by a Poison or Revoke that poisons a context
// anew, after the context's state is recorded, and not by one that
// changes nothing (the shared-memory collectives' sleepers are woken by
// it: mpi/coll_shm.go).
func TestPoisonSignal(t *testing.T) {
	_, b := pair(t)
	sig := b.PoisonSignal()
	b.Revoke(7)
	select {
	case <-sig:
	case <-time.After(10 * time.Second):
		t.Fatal("the signal was not closed by a revocation")
	}
	if !b.IsRevoked(7) {
		t.Fatal("the signal was closed before the context was revoked")
	}
	again := b.PoisonSignal()
	if again == sig {
		t.Fatal("the closed signal was not replaced")
	}
	b.Revoke(7) // nothing new
	select {
	case <-again:
		t.Fatal("an idempotent revocation closed the signal")
	default:
	}
	b.Poison(ErrRevoked, 9)
	select {
	case <-again:
	case <-time.After(10 * time.Second):
		t.Fatal("the signal was not closed by a poison")
	}
}
