package inject

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Play fires in order and ends when fire says so.
func TestPlayFiresInOrderUntilFireSaysStop(t *testing.T) {
	defer goleak.VerifyNone(t)
	fired := make(chan int, 3)
	plan := []Event{{Rank: 0}, {Rank: 1}, {Rank: 2}}
	stop := Play(plan, func(ev Event) bool {
		fired <- ev.Rank
		return ev.Rank != 1
	})
	for want := 0; want < 2; want++ {
		select {
		case got := <-fired:
			if got != want {
				t.Fatalf("fired rank %d, want %d", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("event %d not fired within 20s", want)
		}
	}
	stop()
	stop() // a second call is harmless
	if len(fired) != 0 {
		t.Fatalf("an event fired after fire returned false: rank %d", <-fired)
	}
}

// stop cancels the events not yet due and returns once the goroutine ended.
func TestPlayStopCancelsPendingEvents(t *testing.T) {
	defer goleak.VerifyNone(t)
	stop := Play([]Event{{Rank: 3, At: time.Hour}}, func(Event) bool {
		t.Error("an event an hour away fired")
		return true
	})
	stop()
	if s := Play(nil, nil); s == nil {
		t.Fatal("Play of an empty plan returned a nil stop")
	} else {
		s()
	}
}
