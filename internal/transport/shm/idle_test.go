package shm

import (
	"bytes"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The receiver's sleep bound grows with the ranks a core (as the
// launcher's heartbeat does), only past sleepFreeLoad, and never beyond
// sleepMost.
func TestSleepBound(t *testing.T) {
	for _, tc := range []struct {
		local, cores int
		want         time.Duration
	}{
		{0, 2, sleepMax},
		{2, 2, sleepMax},
		{16, 2, sleepMax},                          // 8 a core
		{18, 2, sleepMax * 9 / 8},                  // 9 a core
		{80, 1, sleepMax * 10},                     // 80 a core: 1 s
		{2000, 2, sleepMost},                       // 1,000 a core: 12.5 s, capped
		{1 << 30, 1, sleepMost},                    // no overflow
		{100, 0, sleepBound(sleepMax, 100, 1)},     // no cores counts as one
		{-3, 4, sleepMax},                          // nonsense counts as none
		{9, 1, sleepMax * 9 / 8},                   // rounds up the ranks a core
		{3 * sleepFreeLoad, 3, sleepMax},           // exactly sleepFreeLoad a core
		{3*sleepFreeLoad + 1, 3, sleepMax * 9 / 8}, // one more rank: 9 a core
		{sleepFreeLoad * 50, 1, sleepMost},         // 50x: exactly sleepMost
		{sleepFreeLoad*50 - 8, 1, sleepMax * 49},   // just under
		{sleepFreeLoad * 1000, 1, sleepMost},       // far beyond
		{sleepFreeLoad * 1000, 1000, sleepMax},     // many cores
		{sleepFreeLoad*1000 + 1, 1000, sleepMax * 9 / 8},
	} {
		if got := sleepBound(sleepMax, tc.local, tc.cores); got != tc.want {
			t.Errorf("sleepBound(%v, %d ranks, %d cores) = %v, want %v", sleepMax, tc.local, tc.cores, got, tc.want)
		}
	}
}

// receiversInIOWait counts the receiver goroutines parked in the
// runtime's netpoller and those in a system call.
func receiversInIOWait() (ioWait, syscall int, dump string) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if !bytes.Contains(g, []byte("shm.(*Transport).recvLoop")) {
			continue
		}
		head, _, _ := bytes.Cut(g, []byte("\n"))
		switch {
		case bytes.Contains(head, []byte("[IO wait")):
			ioWait++
		case bytes.Contains(head, []byte("[syscall")):
			syscall++
		}
		dump += string(head) + "\n"
	}
	return ioWait, syscall, dump
}

// An idle receiver sleeps parked in the Go runtime's netpoller, not in a
// system call: no thread is held and the runtime's monitor does not run
// to take its processor back (issue 24: a quarter of the CPU of an idle
// job of 500 ranks on 2 cores went there, with the futex sleep). Its
// sleep's bound is scaled with the ranks a core (here 80 local ranks on
// one core: 1 s), and it wakes (onSleep counts each sleep) at most once
// per bound while nothing arrives. A send wakes it at once all the same.
func TestIdleReceiverHoldsNoThread(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var bounds []time.Duration
	sleeps := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(bounds)
	}
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := make([]*Transport, 2)
	for i := range trs {
		cfg := Config{Self: i, Dir: dir, Name: sockName(i), Handler: recs[i], Auth: testKey, cores: 1,
			SpinFn: func() time.Duration { return 10 * time.Microsecond }}
		if i == 1 {
			cfg.onSleep = func(d time.Duration) {
				mu.Lock()
				bounds = append(bounds, d)
				mu.Unlock()
			}
		}
		tr, err := Listen(cfg)
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
	}
	defer closeAll(trs)
	// 80 ranks of this host (78 that never start): 80 a core.
	peers := addrs(dir, 80)
	for _, tr := range trs {
		tr.SetPeers(peers)
	}
	exchange(t, trs, recs, 0, 1, 1) // the pair is set up and used both ways

	deadline := time.Now().Add(20 * time.Second)
	for {
		io, sys, dump := receiversInIOWait()
		if io >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle receivers are not parked in the netpoller (%d in a system call):\n%s", sys, dump)
		}
		runtime.Gosched()
	}
	asleep := time.Now()
	n0 := sleeps()
	mu.Lock()
	last := bounds[len(bounds)-1]
	mu.Unlock()
	if want := sleepBound(sleepMax, 80, 1); last != want {
		t.Fatalf("the receiver sleeps for at most %v, want %v (80 ranks on 1 core)", last, want)
	}

	// A send to the sleeper is delivered (that it is at once, not at the
	// bound, TestIdleReceiverWakesOnSend checks with a bound of an hour).
	exchange(t, trs, recs, 0, 1, 3)
	// Wake-ups while idle: at most one per bound over the time it slept,
	// plus the sleep it was in and those the exchange's frames caused.
	elapsed := time.Since(asleep)
	if got, most := sleeps()-n0, int(elapsed/last)+4; got > most {
		t.Fatalf("%d wake-ups in %v of idling with a %v bound, want at most %d", got, elapsed, last, most)
	}
}

// A receiver asleep on the eventfd with a bound of an hour is woken by a
// send: no frame waits for the bound (a lost wake-up would hang here
// until the wait's deadline).
func TestIdleReceiverWakesOnSend(t *testing.T) {
	recs := []*recorder{newRecorder(), newRecorder()}
	dir := t.TempDir()
	trs := make([]*Transport, 2)
	for i := range trs {
		tr, err := Listen(Config{Self: i, Dir: dir, Name: sockName(i), Handler: recs[i], Auth: testKey, sleepMax: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
	}
	defer closeAll(trs)
	for _, tr := range trs {
		tr.SetPeers(addrs(dir, 2))
	}
	exchange(t, trs, recs, 0, 1, 1)
	for seq := uint64(3); seq < 23; seq += 2 {
		waitFor(t, "the receivers asleep", func() bool {
			return trs[0].bellSleep.Load() != 0 && trs[1].bellSleep.Load() != 0
		})
		exchange(t, trs, recs, 0, 1, seq)
	}
}
