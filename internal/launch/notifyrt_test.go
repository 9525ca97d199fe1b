package launch

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// A failure notice's broadcast runs its sendmmsg real-time where the
// launcher may (rtFor), so that the ranks it wakes do not preempt it
// before the last datagram is sent; the thread is back to its policy and
// nice value afterwards, and with rtFor(false) (FTMPI_NOTIFY_NO_RT=1)
// nothing changes.
func TestRTForRaisesAndRestores(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Skipf("sched_getattr: %v", err)
	}
	if _, raised := rtFor(false); raised {
		t.Fatal("rtFor(false) raised the thread")
	}
	restore, raised := rtFor(true)
	if !raised {
		restore()
		t.Skip("not permitted to run real-time here (no CAP_SYS_NICE nor RLIMIT_RTPRIO): rtFor does nothing")
	}
	during, err := unix.SchedGetAttr(0, 0)
	if err != nil || during.Policy != unix.SCHED_FIFO {
		t.Fatalf("during: %+v, %v; want SCHED_FIFO", during, err)
	}
	restore()
	after, err := unix.SchedGetAttr(0, 0)
	if err != nil || after.Policy != before.Policy || after.Nice != before.Nice {
		t.Fatalf("after: %+v, %v; want policy %d nice %d as before", after, err, before.Policy, before.Nice)
	}
}
