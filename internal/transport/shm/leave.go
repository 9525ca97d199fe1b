package shm

// leavePoll is PollUntil's way out: the caller stops counting itself in
// the poll word and lets go of the rings if it holds them (held).
//
// The last caller to stop counting owes a last look (lastLook) if the
// receiver sleeps: a sender that saw this caller counted did not ring
// it. One that still holds the rings takes the look before letting go
// of them, without taking them again (two atomic operations fewer on the
// way out of a ping-pong's every receive). A receiver that does not sleep
// (parked while this caller polled, the common case, or running) polls
// again before it sleeps (recvLoop says it sleeps, then polls; every one
// of these words is a sequentially consistent atomic) and so after this
// decrement: it sees such a record itself, and unpark wakes it if parked.
// (Issue 28: the look read the next record's line on the way out of
// every receive of a ping-pong, ~12 ns of nanotime-marked time a hop.)
func (t *Transport) leavePoll(held bool) {
	n := t.bellPoll.Add(^uint32(0))
	if n == 0 && t.bellSleep.Load() != 0 {
		if t.cfg.onLastLook != nil {
			t.cfg.onLastLook()
		}
		if held {
			t.lastLookHeld()
		} else {
			t.lastLook()
		}
		t.unpark()
		return
	}
	if held {
		t.releaseCaller()
	}
	if n == 0 {
		t.unpark()
	}
}
