package ownerdir

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/procstat"
)

func names(t *testing.T, root string) []string {
	t.Helper()
	es, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// A directory whose owner died is swept by the next Make under the same
// root and prefix; the directories of a live owner, of a reused pid's new
// process being alive (same pid, other start time: dead owner), without an
// owner file, or of another prefix stay.
func TestMakeSweepsOnlyDeadOwners(t *testing.T) {
	root := t.TempDir()
	// A real process that has exited: its pid and start time.
	c := exec.Command("sleep", "0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadPid, deadStart := c.Process.Pid, procstat.StartTime(c.Process.Pid)
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, owner string) {
		t.Helper()
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(d, File), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	self := os.Getpid()
	mk("p-dead", fmt.Sprintf("%d %d\n", deadPid, deadStart))
	mk("p-reused", fmt.Sprintf("%d %d\n", self, procstat.StartTime(self)+1)) // this pid, another process's start time
	mk("p-alive", fmt.Sprintf("%d %d\n", self, procstat.StartTime(self)))
	mk("p-noowner", "")
	mk("p-garbled", "not an owner\n")
	mk("q-dead", fmt.Sprintf("%d %d\n", deadPid, deadStart))
	dir, err := Make(root, "p-")
	if err != nil {
		t.Fatal(err)
	}
	got := names(t, root)
	want := []string{filepath.Base(dir), "p-alive", "p-garbled", "p-noowner", "q-dead"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("after Make: %v, want %v", got, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil || string(b) != fmt.Sprintf("%d %d\n", self, procstat.StartTime(self)) {
		t.Fatalf("owner file %q, %v", b, err)
	}
	if procstat.StartTime(self) == 0 {
		t.Fatal("no start time for this process")
	}
}

// Remove takes the owner file last: a removal interrupted half-way (the
// process killed while cleaning up) leaves a directory that still names
// its owner, so that the next Sweep can prove it dead; an uninterrupted
// Remove leaves nothing.
func TestRemoveTakesOwnerLast(t *testing.T) {
	root := t.TempDir()
	dir, err := Make(root, "x-")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.sock", "b.sock", "sub"} {
		if n == "sub" {
			err = os.Mkdir(filepath.Join(dir, n), 0o700)
		} else {
			err = os.WriteFile(filepath.Join(dir, n), nil, 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	removed := 0
	removeEntry = func(p string) error {
		if removed == 1 {
			return fmt.Errorf("interrupted") // the process dies here
		}
		removed++
		return os.RemoveAll(p)
	}
	Remove(dir)
	removeEntry = os.RemoveAll
	if _, err := os.Stat(filepath.Join(dir, File)); err != nil {
		t.Fatalf("an interrupted removal lost the owner file: %v (left %v)", err, names(t, dir))
	}
	Remove(dir)
	if left := names(t, root); len(left) != 0 {
		t.Fatalf("Remove left %v", left)
	}
}

// An empty directory of ours without an owner file (a process killed
// between Remove's owner file and its rmdir, or between Make's mkdir and
// its owner file: srun jobs of 1,000 tasks killed at high load left ~1,000
// such) is swept once it has been unchanged for EmptyGrace; a fresh empty
// one (being made), one with content, or one of another prefix stays.
func TestSweepRemovesOldEmptyOwnerless(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-2 * EmptyGrace)
	mk := func(name string, content bool, mtime time.Time) {
		t.Helper()
		d := filepath.Join(root, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if content {
			if err := os.WriteFile(filepath.Join(d, "a.sock"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if !mtime.IsZero() {
			if err := os.Chtimes(d, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("p-empty-old", false, old)
	mk("p-empty-new", false, time.Time{})
	mk("p-full-old", true, old)
	mk("q-empty-old", false, old)
	// A removal killed after the owner file: what is left is an empty
	// directory (made old, as a later start would find it).
	half, err := Make(root, "p-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(half, File)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(half, old, old); err != nil {
		t.Fatal(err)
	}
	dir, err := Make(root, "p-")
	if err != nil {
		t.Fatal(err)
	}
	got := names(t, root)
	want := []string{filepath.Base(dir), "p-empty-new", "p-full-old", "q-empty-old"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("after Make: %v, want %v", got, want)
	}
}

// Make makes another directory when its own was swept between its
// creation and its owner file (a process stopped there for EmptyGrace),
// rather than failing the start.
func TestMakeRetriesWhenSwept(t *testing.T) {
	root := t.TempDir()
	swept := 0
	afterMkdir = func(d string) {
		if swept == 0 {
			swept++
			if err := os.Remove(d); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { afterMkdir = func(string) {} }()
	dir, err := Make(root, "p-")
	if err != nil {
		t.Fatal(err)
	}
	if swept != 1 {
		t.Fatalf("the hook ran %d times", swept)
	}
	if _, err := os.Stat(filepath.Join(dir, File)); err != nil {
		t.Fatalf("no owner file: %v", err)
	}
	if got := names(t, root); !slices.Equal(got, []string{filepath.Base(dir)}) {
		t.Fatalf("left %v", got)
	}
}
