// Package futex is the Linux futex on a 32-bit word of a shared mapping:
// a process sleeps while the word holds a value, another wakes it after
// changing the word (the shared-memory transport's doorbells and ring
// space, the shared-memory collectives' doorbell). The operations are not
// FUTEX_PRIVATE: the waiter and the waker may be different processes.
//
// It must not decide when to sleep or for how long (its callers poll
// first and bound each sleep), and must not be used on memory that is not
// mapped shared by every party (a private word works, but only within one
// process).
package futex

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	opWait = 0 // FUTEX_WAIT
	opWake = 1 // FUTEX_WAKE
)

// Wait sleeps while *w == val, for at most d. Spurious returns are fine:
// callers re-check their condition.
func Wait(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), opWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// WakeAll wakes every waiter on w.
func WakeAll(w *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), opWake, uintptr(1<<31-1), 0, 0, 0)
}

// WaitHeld is Wait without telling the Go runtime: the calling thread
// keeps its processor (P) while it sleeps, so the runtime neither hands
// the P to another thread nor wakes one to take it (about two extra
// thread switches a sleep when the process has one P: issue 28, session
// 16), and no other goroutine of the process runs on that P until the
// sleep ends. Callers bound d to a short time (a few ms) and then sleep
// with Wait. A signal to the thread ends the sleep early (a timed futex
// wait returns EINTR when a handler ran): the runtime's preemption
// request, which a stop of the world (a garbage collection) sends to the
// thread of every running P, so such a stop waits for one wake-up of the
// sleeping thread, not for d (measured, issue 28 session 17: with
// GOMAXPROCS=2 and a goroutine always in a 1 ms held sleep, the stop's
// median wait 65-200 µs at load 10, 1 µs with Wait; with GOMAXPROCS=1 no
// stop can start while the only P sleeps held).
func WaitHeld(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), opWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}
