package futex

import (
	"sync/atomic"
	"testing"
	"time"
)

// Wait returns at once when the word no longer holds the value, and a
// sleeper returns when another goroutine changes the word and wakes it
// (long before its bound).
func TestWaitAndWakeAll(t *testing.T) {
	var w atomic.Uint32
	w.Store(1)
	done := make(chan struct{})
	go func() {
		Wait(&w, 0, time.Minute) // the word holds 1, not 0: no sleep
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait slept on a word that no longer held the value")
	}

	woke := make(chan struct{})
	go func() {
		for w.Load() == 1 {
			Wait(&w, 1, time.Minute)
		}
		close(woke)
	}()
	w.Store(2)
	WakeAll(&w)
	select {
	case <-woke:
	case <-time.After(30 * time.Second):
		t.Fatal("the sleeper was not woken")
	}
}

// A sleep nobody ends returns after its bound.
func TestWaitIsBounded(t *testing.T) {
	var w atomic.Uint32
	done := make(chan struct{})
	go func() {
		Wait(&w, 0, time.Millisecond)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return after its bound")
	}
}
