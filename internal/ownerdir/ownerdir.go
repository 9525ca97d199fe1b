// Package ownerdir makes temporary directories that name their owner
// process (its pid and start time in an "owner" file) and removes those
// whose owner is dead, so that what a process killed by SIGKILL leaves
// behind (it cannot clean up) is swept by the next one that makes such a
// directory under the same root: the launcher's job directories, and the
// socket directories of ranks started by srun or mpiexec (no launcher of
// ours outlives them there).
//
// It must not remove a directory it cannot prove dead: one with content
// but without an owner file (made by another program), one of another
// user, or one whose owner is alive. An EMPTY directory of ours without an
// owner file that has not changed for EmptyGrace is removed too: a process
// killed between removing a directory's owner file and the directory itself
// (ranks remove the directories of peers they saw fail, and srun kills
// them all at once), or between creating one and writing its owner file,
// leaves one; srun jobs of 1,000 tasks killed at high load left ~1,000 of
// them. rmdir removes only an empty directory, so a directory that anything
// was put in meanwhile stays; Make makes a new one if its own vanished
// before it wrote the owner file.
package ownerdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/procstat"
)

// File names the owner file in a directory this package makes.
const File = "owner"

// EmptyGrace is how long an empty directory without an owner file must
// have been unchanged before Sweep removes it: far longer than a process
// takes between creating a directory and writing its owner file.
const EmptyGrace = time.Minute

// Make removes the dead-owned directories named prefix* under root (Sweep),
// then creates a new one (os.MkdirTemp(root, prefix)) owned by this process.
func Make(root, prefix string) (string, error) {
	Sweep(root, prefix)
	self := os.Getpid()
	owner := fmt.Sprintf("%d %d\n", self, procstat.StartTime(self))
	var err error
	for try := 0; try < 3; try++ {
		var dir string
		dir, err = os.MkdirTemp(root, prefix)
		if err != nil {
			return "", err
		}
		afterMkdir(dir)
		err = os.WriteFile(filepath.Join(dir, File), []byte(owner), 0o600)
		if err == nil {
			return dir, nil
		}
		os.RemoveAll(dir)
		if !errors.Is(err, os.ErrNotExist) {
			break
		}
		// Swept between its creation and the owner file (a process
		// stopped there for EmptyGrace): make another.
	}
	return "", err
}

// afterMkdir runs between the creation of a directory and its owner file
// (a variable so that a test can sweep it there).
var afterMkdir = func(string) {}

// removeEntry removes one entry of a directory being removed (a variable
// so that a test can interrupt a removal).
var removeEntry = os.RemoveAll

// Remove removes a directory made by Make: its entries first, the owner
// file last, then the directory. A process killed in the middle (a host
// lost while its launcher agent or a rank cleans up) leaves a directory
// that still names its owner, which the next Sweep removes; os.RemoveAll
// may remove the owner file first and leave a directory nothing can prove
// dead. Errors are ignored (best effort, like Sweep).
func Remove(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != File {
			if removeEntry(filepath.Join(dir, e.Name())) != nil {
				return
			}
		}
	}
	_ = os.Remove(filepath.Join(dir, File))
	_ = os.RemoveAll(dir) // with what a live process made meanwhile
}

// Sweep removes the directories named prefix* under root, owned by this
// user, whose owner process is dead, and the empty ones without an owner
// file unchanged for EmptyGrace (see the package comment). Errors are
// ignored: sweeping is best effort and never stops a start.
func Sweep(root, prefix string) {
	dirs, _ := filepath.Glob(filepath.Join(root, prefix+"*"))
	uid := os.Getuid()
	now := time.Now()
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, File))
		if errors.Is(err, os.ErrNotExist) && now.Sub(fi.ModTime()) >= EmptyGrace {
			_ = os.Remove(dir) // rmdir: only if empty
			continue
		}
		if err != nil {
			continue
		}
		if pid, start, ok := parseOwner(b); ok && !alive(pid, start) {
			Remove(dir)
		}
	}
}

// parseOwner parses the contents of an owner file: "PID STARTTIME\n".
func parseOwner(b []byte) (pid int, start uint64, ok bool) {
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return 0, 0, false
	}
	return pid, start, true
}

// alive reports whether process pid exists and is the one that started at
// start (0: unknown, the pid alone decides).
func alive(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if st := procstat.StartTime(pid); start != 0 && st != 0 && st != start {
		return false // the pid was reused
	}
	return true
}
