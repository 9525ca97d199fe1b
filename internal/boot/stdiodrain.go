package boot

import (
	"time"

	"golang.org/x/sys/unix"
)

// unread is how many bytes written to fd still wait to be read by its
// other end, when fd is a pipe (FIONREAD, TIOCINQ here, counts the buffer from
// either end) or a stream socket (SIOCOUTQ: sent, not yet consumed); 0
// for anything else (a terminal, a file) or on an error.
func unread(fd int) int {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return 0
	}
	req := uint(0)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		req = unix.TIOCINQ // FIONREAD
	case unix.S_IFSOCK:
		req = unix.SIOCOUTQ
	default:
		return 0
	}
	n, err := unix.IoctlGetInt(fd, req)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// awaitRead waits until whoever reads fds (a launcher's proxy) has read
// what this process wrote to them, or until d has passed; it reports
// whether everything was read. A process about to ask its launcher to
// abort the job calls it on its standard output and error: hydra kills
// the job on the abort, and a report still in the pipe is lost.
func awaitRead(fds []int, d time.Duration) bool {
	end := time.Now().Add(d)
	for _, fd := range fds {
		for unread(fd) > 0 {
			if !time.Now().Before(end) {
				return false
			}
			time.Sleep(time.Millisecond) // polling the kernel's count: there is no event for "read by the other end"
		}
	}
	return true
}
