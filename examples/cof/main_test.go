package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/checkpoint"
	"github.com/ftmpi/ftmpi/mpi"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const np = 4

// launch runs one launch of the job in process: np goroutine ranks, launch
// number k, kills mapping a rank to the iteration after which it crashes
// (w.Kill). Survivors checkpoint and "exit" by crashing too, as the real
// processes exit without finalizing. It returns the result line ("" if the
// launch failed) and the output.
func launch(t *testing.T, dir string, k int, kills map[int]int) (string, string) {
	t.Helper()
	return launchWith(t, dir, k, kills, -1)
}

// launchWith is launch, and rank recoveryKill (if >= 0) crashes during the
// recovery of a relaunched job.
func launchWith(t *testing.T, dir string, k int, kills map[int]int, recoveryKill int) (string, string) {
	t.Helper()
	var out lockedBuf
	var mu sync.Mutex
	line := ""
	done := make(chan error, 1)
	go func() {
		done <- mpi.Run(np, func(w *mpi.World) error {
			p := params{m: 8, iters: 300, seed: 7, degree: 4, dir: dir, launch: k}
			p.exit = func(w *mpi.World) { w.Kill() }
			if w.Rank() == recoveryKill {
				p.inRecovery = func(w *mpi.World) { w.Kill() }
			}
			if at, ok := kills[w.Rank()]; ok {
				p.afterIter = func(w *mpi.World, iter int) {
					if iter == at {
						w.Kill()
					}
				}
			}
			l, err := run(w, &p, &out)
			if l != "" {
				mu.Lock()
				line = l
				mu.Unlock()
			}
			return err
		})
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("launch %d did not end within 60s\noutput:\n%s", k, out.String())
	}
	if err != nil {
		t.Fatalf("launch %d: %v\noutput:\n%s", k, err, out.String())
	}
	return line, out.String()
}

// resumedNear reports whether relaunch k resumed at iteration at or at-1:
// a rank killed after computing iteration at had finished the Allgather
// of iteration at-1, which some survivors may not have finished yet
// (ranks are at most one iteration apart, and the relaunch takes the
// older one).
func resumedNear(out string, k, at int) bool {
	for _, it := range []int{at, at - 1} {
		if strings.Contains(out, fmt.Sprintf("cof: relaunch %d: resumed at iteration %d,", k, it)) {
			return true
		}
	}
	return false
}

func reference(t *testing.T) string {
	t.Helper()
	line, out := launch(t, t.TempDir(), 0, nil)
	if !strings.HasPrefix(line, "result: cof N=24 K=300 seed=7 walks=") || !strings.HasSuffix(line, " checksum=ok") {
		t.Fatalf("failure-free result %q\n%s", line, out)
	}
	return line
}

// Launch 0 loses a rank, the survivors checkpoint; launch 1 rebuilds the
// lost block from the checksum (or the checksum from the data) and ends
// with the failure-free answer; a successful run leaves no checkpoint.
func TestRelaunchRebuildsLostBlock(t *testing.T) {
	want := reference(t)
	for _, tc := range []struct {
		name   string
		victim int
		desc   string
	}{
		{"data rank", 2, "rank 2's block rebuilt from the checksum (ABFT)"},
		{"rank 0", 0, "rank 0's block rebuilt from the checksum (ABFT)"},
		{"checksum rank", np - 1, "checksum rank 3's block recomputed from the data blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			line, out := launch(t, dir, 0, map[int]int{tc.victim: 120})
			if line != "" || strings.Count(out, "checkpointed iteration") != np-1 {
				t.Fatalf("launch 0: result %q\n%s", line, out)
			}
			line, out = launch(t, dir, 1, nil)
			if line != want {
				t.Fatalf("after the relaunch: %q, want %q\n%s", line, want, out)
			}
			if !resumedNear(out, 1, 120) || !strings.Contains(out, tc.desc) {
				t.Fatalf("no recovery line with %q:\n%s", tc.desc, out)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("checkpoints left after success: %v", ents)
			}
		})
	}
}

// Two blocks lost at once are more than one checksum block can rebuild:
// the relaunch starts over and still gives the answer. (Rank 2 is killed;
// rank 1's files are deleted, as if its node's disk were gone: two kills
// in one launch would not reliably both land, since a survivor stops at
// the first failure.)
func TestTwoLossesStartOver(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	launch(t, dir, 0, map[int]int{2: 100})
	s, err := checkpoint.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(); err != nil {
		t.Fatal(err)
	}
	line, out := launch(t, dir, 1, nil)
	if line != want || !strings.Contains(out, "ranks [1 2] have no usable checkpoint") || !strings.Contains(out, "starting over from iteration 0") {
		t.Fatalf("result %q, want %q\n%s", line, want, out)
	}
}

// A damaged checkpoint is never used (package checkpoint detects it): with
// the killed rank, two blocks are missing, and the job starts over.
func TestCorruptCheckpointNotUsed(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	launch(t, dir, 0, map[int]int{2: 150})
	s, err := checkpoint.Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Latest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.Path(v))
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-9] ^= 1
	if err := os.WriteFile(s.Path(v), b, 0o644); err != nil {
		t.Fatal(err)
	}
	line, out := launch(t, dir, 1, nil)
	if line != want || !strings.Contains(out, "ranks [1 2] have no usable checkpoint") ||
		!strings.Contains(out, "rank 1 has no usable checkpoint: checkpoint: rank 1 has no valid checkpoint") || !strings.Contains(out, "payload checksum mismatch") {
		t.Fatalf("result %q, want %q\n%s", line, want, out)
	}
}

// A failure after the recovery is handled the same way by the next launch;
// checkpoints of an older launch are not mixed in.
func TestSecondFailureAfterRelaunch(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	launch(t, dir, 0, map[int]int{2: 80})
	if line, out := launch(t, dir, 1, map[int]int{1: 200}); line != "" || !resumedNear(out, 1, 80) {
		t.Fatalf("launch 1: %q\n%s", line, out)
	}
	line, out := launch(t, dir, 2, nil)
	if line != want || !resumedNear(out, 2, 200) || !strings.Contains(out, "rank 1's block rebuilt") {
		t.Fatalf("result %q, want %q\n%s", line, want, out)
	}
}

// A fresh launch ignores (and removes) checkpoints of an earlier run.
func TestFreshLaunchIgnoresOldCheckpoints(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	launch(t, dir, 0, map[int]int{3: 50})
	if ents, _ := os.ReadDir(dir); len(ents) != np-1 {
		t.Fatalf("checkpoints after the failed launch: %v", ents)
	}
	line, _ := launch(t, dir, 0, nil)
	if line != want {
		t.Fatalf("result %q, want %q", line, want)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 0 {
		t.Fatalf("old checkpoints left: %v", m)
	}
}

// A failure during the recovery (seed 002, 4.2: "the local states are not
// updated, and the relaunch starts from the beginning"): the survivors
// save what they loaded, and the next launch recovers from it.
func TestFailureDuringRecovery(t *testing.T) {
	want := reference(t)
	dir := t.TempDir()
	launch(t, dir, 0, map[int]int{2: 100})
	// Rank 2, the one to rebuild, dies again before the agreement.
	line, out := launchWith(t, dir, 1, nil, 2)
	if line != "" || strings.Count(out, "checkpointed iteration") != np-1 {
		t.Fatalf("launch 1: %q\n%s", line, out)
	}
	line, out = launch(t, dir, 2, nil)
	if line != want || !resumedNear(out, 2, 100) || !strings.Contains(out, "rank 2's block rebuilt") {
		t.Fatalf("result %q, want %q\n%s", line, want, out)
	}
}
