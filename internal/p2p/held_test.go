package p2p

import (
	"testing"
	"time"
)

// A request completed with its wake-up held (completeHeld: a transport
// goroutine that goes on moving the next payload, transport.Held and
// transport.HeldPayload) is done at once for anyone who looks, and its
// sleeping waiter wakes only when the returned wake-up is made; with
// nobody asleep there is no wake-up to make.
func TestHeldCompletionWakesTheSleeperLater(t *testing.T) {
	a, _ := pair(t)

	idle := a.NewLocalReq()
	if w := idle.completeHeld(); w != nil {
		t.Fatal("a request nobody waits on returned a wake-up to make")
	}
	if !idle.Done() {
		t.Fatal("not done after completeHeld")
	}

	r := a.NewLocalReq()
	returned := make(chan struct{})
	go func() {
		r.WaitSignalCancel(nil, nil, nil)
		close(returned)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !r.sleeping.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not go to sleep")
		}
		time.Sleep(time.Millisecond)
	}
	wake := r.completeHeld()
	if wake == nil {
		t.Fatal("a sleeping waiter got no wake-up to make")
	}
	if !r.Done() {
		t.Fatal("not done after completeHeld")
	}
	select {
	case <-returned:
		t.Fatal("the sleeping waiter returned before its wake-up was made")
	default:
	}
	wake()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not return after its wake-up")
	}
}
