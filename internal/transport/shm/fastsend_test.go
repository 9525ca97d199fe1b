package shm

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/transport"
)

// The steps of sendFast a process is killed at: 1 the producer token
// taken, 2 the frame checked, w its record written but not published,
// 3 published, 4 the peer woken (the token not yet let go).
var fastSteps = []string{"1", "2", "w", "3", "4"}

// A sender killed at every step of the fast path (urgent and bulk lane):
// the receiver delivers the frame whole once it is published and nothing
// of it before, then reports the peer lost; nothing else.
func TestCrashFastSenderKilledAtEveryStep(t *testing.T) {
	for _, lane := range []string{"b", "u"} {
		for _, step := range fastSteps {
			t.Run("lane="+lane+"/step="+step, func(t *testing.T) {
				dir := t.TempDir()
				rec := newRecorder()
				tr := parent(t, dir, 2, rec)
				defer tr.Close()
				c := startChild(t, "fast-sender-"+lane+step, dir)
				c.expect(t, "step")
				c.kill(t, syscall.SIGKILL)
				ev := untilLost(t, rec)
				want := "frame 1,lost 1"
				if step == "3" || step == "4" {
					want = "frame 1,frame 7,lost 1"
				}
				if got := strings.Join(ev, ","); got != want {
					t.Fatalf("events %s, want %s", got, want)
				}
				rec.check(t)
			})
		}
	}
}

// A receiver killed while a sender of this process is at every step of
// the fast path (stopped there until the receiver's death is recorded,
// so the receiver goroutine ends the pair while the sender holds the
// producer token): the send completes (written into the still mapped
// ring) or, stopped before its second look at the pair, fails with
// ErrPeerLost; every later send fails with ErrPeerLost, the peer is
// reported lost once and its memory unmapped, nothing hangs.
func TestCrashReceiverKilledInFastSend(t *testing.T) {
	for _, step := range fastSteps {
		t.Run("step="+step, func(t *testing.T) {
			dir := t.TempDir()
			rec := newRecorder()
			var armed atomic.Bool
			at, release := make(chan struct{}), make(chan struct{})
			hit := func(s string) {
				if s == step && armed.CompareAndSwap(true, false) {
					close(at)
					<-release
				}
			}
			tr, err := Listen(Config{Self: 0, Dir: dir, Name: sockName(0), Handler: rec, Auth: testKey,
				fastStep:      func(i int) { hit(strconv.Itoa(i)) },
				beforePublish: func() { hit("w") }})
			if err != nil {
				t.Fatal(err)
			}
			tr.SetPeers(addrs(dir, 2))
			defer tr.Close()
			c := startChild(t, "echo", dir)
			b := make([]byte, 64)
			fill(b, 1)
			if err := tr.Send(1, transport.Header{Kind: 4, Seq: 1}, b); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the echo", func() bool { return rec.count(1) == 1 })
			armed.Store(true)
			sent := make(chan error, 1)
			go func() {
				p := make([]byte, 100)
				fill(p, 2)
				sent <- tr.Send(1, transport.Header{Kind: 5, Seq: 2}, p)
			}()
			select {
			case <-at:
			case <-time.After(60 * time.Second):
				t.Fatal("the send did not take the fast path")
			}
			c.kill(t, syscall.SIGKILL)
			p := tr.fast.Load(1)
			waitFor(t, "the receiver's death to be recorded", p.slow.Load)
			close(release)
			select {
			case err := <-sent:
				if step == "1" && !errors.Is(err, transport.ErrPeerLost) {
					t.Fatalf("the send stopped before its second look ended with %v, want ErrPeerLost", err)
				}
				if step != "1" && err != nil {
					t.Fatalf("the send past its second look ended with %v, want nil", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the send did not end")
			}
			if err := tr.Send(1, transport.Header{Kind: 5, Seq: 3}, b); !errors.Is(err, transport.ErrPeerLost) {
				t.Fatalf("a send after the loss ended with %v, want ErrPeerLost", err)
			}
			untilLost(t, rec)
			waitFor(t, "the dead peer's segment to be unmapped", func() bool { return pairMaps(t) == 0 })
			if p.prod.Load() != prodGone {
				t.Fatalf("the unmapped pair's producer token is %d, want prodGone", p.prod.Load())
			}
		})
	}
}
