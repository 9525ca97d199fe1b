package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// jobDirPrefix names the per-job directories under the temporary root.
const jobDirPrefix = "ftmpi-"

// ownerFile, in a job directory, names the launcher that owns it: its pid
// and its start time (in clock ticks since boot, from /proc/PID/stat), so
// that a reused pid is not mistaken for the owner.
const ownerFile = "owner"

// makeJobDir creates the job's directory under root and records this
// process as its owner. It first removes the job directories under root
// that a launcher which died without cleaning up left behind (SIGKILL
// cannot be caught, and its ranks die with it by their parent-death
// signal): those whose owner process no longer exists.
func makeJobDir(root string) (string, error) {
	sweepJobDirs(root)
	dir, err := os.MkdirTemp(root, jobDirPrefix)
	if err != nil {
		return "", err
	}
	self := os.Getpid()
	owner := fmt.Sprintf("%d %d\n", self, procStartTime(self))
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// sweepJobDirs removes the job directories under root, owned by this user,
// whose owner launcher is dead. A directory without an owner file (being
// created right now, or made by another program) is left alone. Errors are
// ignored: sweeping is best effort and never stops a launch.
func sweepJobDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, jobDirPrefix+"*"))
	uid := os.Getuid()
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		if pid, start, ok := parseOwner(b); ok && !ownerAlive(pid, start) {
			_ = os.RemoveAll(dir)
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

// ownerAlive reports whether process pid exists and is the one that
// started at start (0: unknown, the pid alone decides).
func ownerAlive(pid int, start uint64) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if st := procStartTime(pid); start != 0 && st != 0 && st != start {
		return false // the pid was reused
	}
	return true
}

// procStartTime is the start time of process pid in clock ticks since
// boot (field 22 of /proc/PID/stat), 0 if unknown.
func procStartTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	// After the command: state(3) ppid pgrp ... starttime is field 22,
	// the 20th after the command.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0
	}
	st, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0
	}
	return st
}
