package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// region is a shared mapping of a memfd.
type region struct{ b []byte }

// seals are the seals of every memory file this package makes, added
// before its descriptor is passed: its size can never change, so a peer
// (or a bug) cannot shrink it under a mapping (a SIGBUS on the next
// access), and F_SEAL_SEAL keeps anyone from adding more (say a write
// seal).
const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// newRegion creates an anonymous memory file of size bytes, seals its
// size and maps it; the returned descriptor is what peers map too
// (passed over a socket). No name ever appears in a file system: the
// memory is freed when the last mapping and descriptor are gone, whoever
// dies.
func newRegion(name string, size int) (region, int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return region{}, -1, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return region{}, -1, fmt.Errorf("size shared memory to %d bytes: %w", size, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Close(fd)
		return region{}, -1, fmt.Errorf("seal shared memory: %w", err)
	}
	r, err := mapRegion(fd, size)
	if err != nil {
		unix.Close(fd)
		return region{}, -1, err
	}
	return r, fd, nil
}

// checkRegion checks a memory file a peer passed before it is mapped:
// sealed against any change of size (else the peer could shrink it under
// the mapping), then exactly size bytes.
func checkRegion(fd, size int) error {
	got, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("not a sealable memory file (F_GET_SEALS: %v)", err)
	}
	if got&seals != seals {
		return fmt.Errorf("not sealed against resizing (seals %#x, want %#x)", got, seals)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("not a memory file (mode %#o)", st.Mode)
	}
	if st.Size != int64(size) {
		return fmt.Errorf("%d bytes, want %d", st.Size, size)
	}
	return nil
}

// mapPeerRegion maps size bytes of the memory file fd passed by a peer,
// once checkRegion accepted it; what names it in the error.
func mapPeerRegion(fd, size int, what string) (region, error) {
	if err := checkRegion(fd, size); err != nil {
		return region{}, fmt.Errorf("%s: %w", what, err)
	}
	r, err := mapRegion(fd, size)
	if err != nil {
		return region{}, fmt.Errorf("%s: %w", what, err)
	}
	return r, nil
}

// mapRegion maps size bytes of the memory file fd (this process's own,
// or one checkRegion accepted).
func mapRegion(fd, size int) (region, error) {
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

// newEventfd makes the receiver's doorbell descriptor: an eventfd, non-blocking
// (so the Go runtime's netpoller waits on it: a sleeping receiver holds no
// thread in a system call) and closed on exec.
func newEventfd() (int, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return -1, fmt.Errorf("eventfd: %w", err)
	}
	return fd, nil
}

// checkEventfd checks a doorbell descriptor a peer passed before this
// process writes to it: an eventfd (a write of 8 bytes never blocks on one
// that is non-blocking, whatever the peer does) and non-blocking.
func checkEventfd(fd int) error {
	var buf [64]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil {
		return fmt.Errorf("not a descriptor of this process (%v)", err)
	}
	if kind := string(buf[:n]); kind != "anon_inode:[eventfd]" {
		return fmt.Errorf("not an eventfd (%s)", kind)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return fmt.Errorf("F_GETFL: %w", err)
	}
	if fl&unix.O_NONBLOCK == 0 {
		return errors.New("a blocking eventfd")
	}
	return nil
}

// one is what ringEventfd adds to an eventfd's counter.
var one = func() (b [8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	return b
}()

// ringEventfd adds one to the eventfd fd's counter, waking a reader (one
// write system call). A full counter (EAGAIN) has a wake-up pending
// already. The write never blocks (the descriptor is non-blocking), so it
// is a raw system call: a runtime system call (entersyscall) wakes the
// runtime's monitor (sysmon) from its idle sleep, which then polls at
// 20 µs to 10 ms for a while, dozens of wake-ups of an otherwise idle
// process per ring.
func ringEventfd(fd int) {
	unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&one[0])), 8)
}
