package hostagent

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bellRecorder is a DyingReporter that hands what it hears to a channel.
type bellRecorder struct {
	bells  bool
	events chan string
}

func (r *bellRecorder) Output(_ int, _ bool, line []byte) {
	r.events <- "said " + strings.TrimSpace(string(line))
}
func (r *bellRecorder) Exited(e ExitReport) {
	r.events <- fmt.Sprintf("exited %d %d %v", e.Rank, e.Incarnation, e.Signal)
}
func (r *bellRecorder) ExitBells() bool { return r.bells }
func (r *bellRecorder) Dying(rank, inc, pid int) {
	r.events <- fmt.Sprintf("dying %d %d", rank, inc)
}

func (r *bellRecorder) next(t *testing.T) string {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("nothing reported within 30 s")
		return ""
	}
}

// A LocalAgent whose Reporter wants exit bells gives each rank one: a
// rank that armed it and is killed is reported Dying before it is
// reported Exited. Without (ExitBells false) the rank gets none and only
// its Exited comes.
func TestLocalAgentExitBell(t *testing.T) {
	for _, bells := range []bool{true, false} {
		t.Run(fmt.Sprintf("bells=%v", bells), func(t *testing.T) {
			rec := &bellRecorder{bells: bells, events: make(chan string, 8)}
			a := NewLocalAgent("host", rec)
			env := append(os.Environ(), envBellChild+"=1")
			a.Start([]RankSpec{{Rank: 3, Incarnation: 1, Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: env}})
			want := "said none"
			if bells {
				want = "said armed"
			}
			if got := rec.next(t); got != want {
				t.Fatalf("the rank %s, want %s", got, want)
			}
			a.SignalIncarnation(3, 1, syscall.SIGKILL)
			if bells {
				if got := rec.next(t); got != "dying 3 1" {
					t.Fatalf("after the kill: %s, want dying 3 1", got)
				}
			}
			if got := rec.next(t); got != "exited 3 1 killed" {
				t.Fatalf("after the kill: %s, want exited 3 1 killed", got)
			}
			a.Wait()
			select {
			case e := <-rec.events:
				t.Fatalf("after the exit: %s", e)
			default:
			}
		})
	}
}
