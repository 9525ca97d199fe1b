package shm

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// region is a shared mapping of a memfd.
type region struct{ b []byte }

// newRegion creates an anonymous memory file of size bytes and maps it;
// the returned descriptor is what peers map too (passed over a socket).
// No name ever appears in a file system: the memory is freed when the
// last mapping and descriptor are gone, whoever dies.
func newRegion(name string, size int) (region, int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return region{}, -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return region{}, -1, fmt.Errorf("size shared memory to %d bytes: %w", size, err)
	}
	r, err := mapRegion(fd, size)
	if err != nil {
		unix.Close(fd)
		return region{}, -1, err
	}
	return r, fd, nil
}

// mapRegion maps size bytes of the memory file fd, which must be that
// large (a peer's descriptor is checked, not trusted).
func mapRegion(fd, size int) (region, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return region{}, fmt.Errorf("stat shared memory: %w", err)
	}
	if st.Size != int64(size) {
		return region{}, fmt.Errorf("shared memory of %d bytes, want %d", st.Size, size)
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return region{}, fmt.Errorf("map shared memory: %w", err)
	}
	return region{b: b}, nil
}

func (r *region) unmap() {
	if r.b != nil {
		unix.Munmap(r.b)
		r.b = nil
	}
}

func (r region) u64(off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&r.b[off])) }
func (r region) u32(off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&r.b[off])) }

// Futex operations on a word of a shared mapping (not FUTEX_PRIVATE: the
// waiter and the waker are different processes).
const (
	futexWait = 0
	futexWake = 1
)

// futexWaitOn sleeps while *w == val, for at most d. Spurious returns are
// fine: callers re-check their condition.
func futexWaitOn(w *atomic.Uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every waiter on w.
func futexWakeAll(w *atomic.Uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(1<<31-1), 0, 0, 0)
}
