package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/jobtest"
)

// bigxferMiB is the size of the one message: large enough that its
// transfer lasts many heartbeat timeouts (300 ms) on any machine.
const bigxferMiB = 1024

// A large transfer does not make the detector suspect a healthy peer:
// heartbeats are never queued behind bulk data (issue 10, item 4). Two
// ranks, a 300 ms heartbeat timeout, one 1 GiB Send/Recv: the job
// succeeds, the data is intact, and the launcher never hears a suspicion
// (it would log "suspected by" for a live process, "killing rank" for a
// confirmed one).
func TestLargeTransferRaisesNoSuspicion(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 1 GiB")
	}
	out := buildOnce(t, "bigxfer")
	if jobtest.RaceEnabled {
		// Measured: with the ranks built with -race, both ranks go without
		// each other's heartbeats for over 1.5 s during this transfer (the
		// launcher refuses the suspicions, the job succeeds): to be
		// understood (the race detector's annotation of large buffers?)
		// before this runs under -race. Since bigxfer fills and checks its
		// buffer with block copies instead of byte loops, two runs under
		// -race (load 12) passed with no suspicion, in 20 s each: too long
		// for the suite, and too few runs to call it understood.
		t.Skip("ranks built with -race miss heartbeats for over 1.5 s during a 1 GiB transfer (see the comment)")
	}
	env := []string{"FTMPI_HB_TIMEOUT=300ms", "FTMPI_HB_PERIOD=50ms"}
	start := time.Now()
	r := jobtest.Run(t, 240*time.Second, env, bin["ftmpirun"],
		"-n", "2", out, fmt.Sprint(bigxferMiB))
	if got, want := resultLine(t, r), fmt.Sprintf("result: bigxfer bytes=%d intact=true", bigxferMiB<<20); got != want {
		t.Fatalf("got %q, want %q\nstderr:\n%s", got, want, r.Stderr)
	}
	if r.Code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.Code, r.Stderr)
	}
	for _, s := range []string{"suspect", "killing rank"} {
		if strings.Contains(r.Stderr, s) {
			t.Fatalf("a healthy peer was suspected during the transfer (%q in stderr):\n%s", s, r.Stderr)
		}
	}
	t.Logf("%d MiB in one message, heartbeat %v: job of %v", bigxferMiB, env, time.Since(start))
}

// A message above 2 GiB (2 GiB + 3 bytes: lengths past the int32 range,
// a last chunk of 3 bytes) arrives intact over sockets. Skipped in -short
// mode (it moves 2 GiB) and under -race (the ranks' race-detector shadow
// memory for 2 GiB buffers adds several GiB per process, beyond what this
// machine can spare next to the other tests).
func TestMessageAbove2GiB(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2 GiB")
	}
	if jobtest.RaceEnabled {
		t.Skip("ranks built with -race need several GiB of shadow memory for 2 GiB buffers")
	}
	out := buildOnce(t, "bigxfer")
	const mib, extra = 2048, 3
	r := jobtest.Run(t, 240*time.Second, nil, bin["ftmpirun"], "-n", "2", out, fmt.Sprint(mib), fmt.Sprint(extra))
	if got, want := resultLine(t, r), fmt.Sprintf("result: bigxfer bytes=%d intact=true", mib<<20+extra); got != want {
		t.Fatalf("got %q, want %q\nstderr:\n%s", got, want, r.Stderr)
	}
	if r.Code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.Code, r.Stderr)
	}
}
