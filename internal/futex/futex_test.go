package futex

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// A held sleep (WaitHeld) ends when its thread gets a signal, as the Go
// runtime's preemption request that a stop of the world (a collection)
// sends to the thread of every running P: the stop waits for one wake-up
// of that thread, not for the sleep's bound (a minute here).
func TestWaitHeldEndsOnSignal(t *testing.T) {
	var w atomic.Uint32
	tid := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid <- unix.Gettid()
		WaitHeld(&w, 0, time.Minute)
		close(done)
	}()
	id := <-tid
	deadline := time.After(30 * time.Second)
	for {
		// Signalled until it returns: the first signal may come before
		// the thread sleeps.
		if err := unix.Tgkill(unix.Getpid(), id, unix.SIGURG); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatal("a signal did not end the held sleep")
		case <-time.After(time.Millisecond):
		}
	}
}
