package acceptloop

import (
	"fmt"
	"sync"
	"time"
)

// Defaults of RateLog.
const (
	DefaultBurst  = 8
	DefaultWindow = 10 * time.Second
)

// RateLog logs lines that a client can cause one per connection (a
// refused handshake) so that a flood cannot turn them into a line each:
// the first Burst lines of a Window are logged as they come; the rest
// are counted, and one line at the end of the window says how many were
// not logged and repeats the last. While a flood lasts it logs one such
// line per Window. The zero value with Logf set is ready; Stop it when
// its owner closes.
type RateLog struct {
	Logf   func(msg string)
	Burst  int           // DefaultBurst if zero
	Window time.Duration // DefaultWindow if zero

	mu      sync.Mutex
	start   time.Time // the current window's start
	n       int       // lines logged in it
	dropped int       // lines not logged since the last summary
	last    string    // the last of them
	since   time.Time // when the first of them came
	timer   *time.Timer
	stopped bool
}

func (r *RateLog) limits() (int, time.Duration) {
	b, w := r.Burst, r.Window
	if b <= 0 {
		b = DefaultBurst
	}
	if w <= 0 {
		w = DefaultWindow
	}
	return b, w
}

// Printf logs the line, or counts it when the window's burst is spent.
func (r *RateLog) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	burst, window := r.limits()
	now := time.Now()
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	if now.Sub(r.start) >= window && r.dropped == 0 {
		r.start, r.n = now, 0
	}
	if r.n < burst {
		r.n++
		r.mu.Unlock()
		r.Logf(msg)
		return
	}
	if r.dropped == 0 {
		r.since = now
	}
	r.dropped++
	r.last = msg
	if r.timer == nil {
		r.timer = time.AfterFunc(max(r.start.Add(window).Sub(now), time.Millisecond), r.flush)
	}
	r.mu.Unlock()
}

// flush logs the summary of the lines not logged; the next window starts
// spent (a flood that goes on gets one summary per window).
func (r *RateLog) flush() {
	r.mu.Lock()
	r.timer = nil
	msg := r.summaryLocked()
	burst, _ := r.limits()
	r.start, r.n = time.Now(), burst
	r.mu.Unlock()
	if msg != "" {
		r.Logf(msg)
	}
}

// summaryLocked is the line that counts the lines not logged ("" if
// none) and resets the count; r.mu held.
func (r *RateLog) summaryLocked() string {
	if r.dropped == 0 || r.stopped {
		return ""
	}
	msg := r.last
	if r.dropped > 1 {
		msg = fmt.Sprintf("%s (and %d more such lines in %v, not logged)", r.last, r.dropped-1, time.Since(r.since).Round(time.Millisecond))
	}
	r.dropped = 0
	return msg
}

// Stop logs the summary of the lines not logged yet, if any; later lines
// are dropped.
func (r *RateLog) Stop() {
	r.mu.Lock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	msg := r.summaryLocked()
	r.stopped = true
	r.mu.Unlock()
	if msg != "" {
		r.Logf(msg)
	}
}
