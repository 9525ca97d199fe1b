package ftdrive

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// headlessJob is job with the ranks enforcing fail-stop themselves (no
// launcher: Headless), each rank's exit recorded instead of taken.
func headlessJob(t *testing.T, n int) ([]*rank, []chan string) {
	return headlessJobConfirm(t, n, nil)
}

// headlessJobConfirm is headlessJob with confirm as every rank's own
// check of a suspicion (nil: none).
func headlessJobConfirm(t *testing.T, n int, confirm func(rank, inc int, reason string) error) ([]*rank, []chan string) {
	t.Helper()
	cfg := detector.DefaultConfig()
	cfg.Period, cfg.Timeout = 20*time.Millisecond, 5*time.Second // no suspicion of its own in the test
	rs := job(t, n, cfg)
	exits := make([]chan string, n)
	for i, r := range rs {
		exits[i] = make(chan string, 8)
		r.f.Headless(func(reason string) {
			select {
			case exits[i] <- reason:
			default:
			}
		}, confirm)
		var tb ctl.Table
		tb.MustRegister(ctl.Heartbeat, r.f.OnHeartbeat)
		tb.MustRegister(ctl.FailNotice, r.f.OnNotice)
		tb.MustRegister(ctl.FailNotices, r.f.OnNotices)
		f := r.f
		r.eng.SetControlHandler(func(from int, h transport.Header, p []byte) {
			if f.Refuse(from) {
				return
			}
			if err := tb.Dispatch(from, h, p); err != nil {
				t.Errorf("rank %d: %v", i, err)
			}
		})
	}
	return rs, exits
}

func waitExit(t *testing.T, ch chan string, who int, want string) {
	t.Helper()
	select {
	case got := <-ch:
		if !strings.Contains(got, want) {
			t.Fatalf("process %d ended for %q, want %q", who, got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("process %d never ended (%q)", who, want)
	}
}

// Without a head nobody kills a wrongly suspected process: the others
// refuse it, and the first refused frame (its heartbeat) tells it it was
// declared failed, so it ends itself. The others go on.
func TestHeadlessDeclaredProcessEndsItself(t *testing.T) {
	rs, exits := headlessJob(t, 4)
	const victim = 1
	rs[0].f.Declare(victim, 0, "suspected by the test") // no launcher: a failure at once, broadcast
	waitLost(t, rs, victim)
	waitExit(t, exits[victim], victim, "declared failed by the others")
	for i, ch := range exits {
		select {
		case r := <-ch:
			if i != victim {
				t.Fatalf("process %d ended: %s", i, r)
			}
		default:
		}
	}
}

// A process that lost every other one (cut off) ends itself; one that
// lost some goes on.
func TestHeadlessIsolatedProcessEnds(t *testing.T) {
	rs, exits := headlessJob(t, 3)
	rs[0].eng.FailPeer(1, errors.New("test"))
	select {
	case r := <-exits[0]:
		t.Fatalf("ended with a live peer left: %s", r)
	default:
	}
	rs[0].eng.FailPeer(2, errors.New("test"))
	waitExit(t, exits[0], 0, "lost contact with every other process")
}

// Under a launcher (no Headless) nothing is refused and nobody ends
// itself: the launcher kills.
func TestRefuseOnlyHeadless(t *testing.T) {
	cfg := detector.DefaultConfig()
	rs := job(t, 2, cfg)
	rs[0].eng.FailPeer(1, errors.New("test"))
	if rs[0].f.Refuse(1) {
		t.Fatal("refused under a launcher")
	}
}

// A suspicion the rank's own check refutes (a process of its host seen
// running or sleeping) declares nothing.
func TestHeadlessConfirmRefutes(t *testing.T) {
	checked := make(chan int, 8)
	rs, _ := headlessJobConfirm(t, 3, func(rank, _ int, _ string) error {
		checked <- rank
		if rank == 1 {
			return errors.New("alive")
		}
		return nil
	})
	rs[0].f.Declare(1, 0, "suspected by the test")
	if got := <-checked; got != 1 {
		t.Fatalf("checked %d", got)
	}
	rs[0].f.Declare(2, 0, "suspected by the test")
	waitLost(t, rs[:2], 2)
	if rs[0].eng.IsLost(1) || rs[2].eng.IsLost(1) {
		t.Fatal("a refuted suspicion was declared")
	}
}

// A failure known at one process only (a process a headless Reinit epoch
// was opened without: failed in its engine, never broadcast) reaches every
// other by Announce, whatever the suspicion check would say (here it
// refutes everything).
func TestAnnounceReachesEveryProcess(t *testing.T) {
	rs, _ := headlessJobConfirm(t, 4, func(int, int, string) error { return errors.New("alive") })
	rs[0].eng.FailPeer(2, errors.New("left out of the epoch"))
	if rs[1].eng.IsLost(2) || rs[3].eng.IsLost(2) {
		t.Fatal("a failure known at one process reached the others without Announce")
	}
	rs[0].f.Announce(2, "left out of the epoch")
	waitLost(t, rs, 2)
}
