// Package exitbell tells a launcher that one of its child processes has
// begun to exit, about when its first thread leaves, long before the
// process can be reaped: a SIGKILLed process then still spends
// milliseconds unmapping its memory (exit_mmap: 3-4 ms for a rank of
// ~10 MB on the 2-core VM of docs/benchmarks.md, where page-table teardown
// is slow) before its sockets close and its parent's waitid returns. The
// launcher makes a one-page memory file (Bell) and hands it to the child
// as an inherited descriptor (EnvFD names it); the child (Arm) maps it and
// registers, on one thread it keeps for the purpose, a robust-futex list
// (set_robust_list(2)) whose one entry is the page's word, holding that
// thread's id. When the thread exits, however the process ends (SIGKILL,
// a crash, exit_group), the kernel sets the word's owner-died bit and
// wakes the launcher's waiter on it (a shared futex: the page is one
// inode's), in do_exit's exit_mm_release, before the address space is torn
// down. A process that ends normally disarms the bell first (Disarm, at
// MPI_Finalize): its exit rings nothing.
//
// The package must not decide what a ringing means (the launcher's policy
// does), nor keep process-global state; it knows nothing of MPI.
package exitbell

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EnvFD names the environment variable that tells a child which inherited
// descriptor is its bell's memory file.
const EnvFD = "FTMPI_EXIT_BELL_FD"

const (
	pageSize = 4096

	// The futex word's bits (linux/futex.h): a robust futex's owner is
	// the thread id in its low 30 bits.
	futexWaiters   = 0x80000000
	futexOwnerDied = 0x40000000
	futexTIDMask   = 0x3fffffff
	// closedBit marks a bell its launcher closed (Stop): inside the TID
	// mask but above any thread id (pid_max is at most 2^22), so the
	// kernel's owner check never matches a closed word.
	closedBit = 0x20000000

	futexWait = 0 // FUTEX_WAIT, shared (no FUTEX_PRIVATE_FLAG): waiter and owner are different processes
	futexWake = 1

	// The page: the word at 0, the robust list's head at offHead
	// (struct robust_list_head: next, futex_offset, list_op_pending),
	// its one entry at offEntry.
	offHead  = 64
	offEntry = 128
	headSize = 24
)

func futex(w *atomic.Uint32, op int, val uint32) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), uintptr(op), uintptr(val), 0, 0, 0)
	return e
}

// Bell is the launcher's side: one child's page.
type Bell struct {
	file *os.File // the memory file until the child is started (CloseFile)
	mem  []byte
	word *atomic.Uint32

	once sync.Once
	done chan struct{} // closed when the watcher returned (Watch)
}

// New makes a bell: a sealed one-page memory file, mapped.
func New() (*Bell, error) {
	fd, err := unix.MemfdCreate("ftmpi-exitbell", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("exitbell: memfd: %w", err)
	}
	if err := unix.Ftruncate(fd, pageSize); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("exitbell: size: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("exitbell: seal: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("exitbell: map: %w", err)
	}
	return &Bell{file: os.NewFile(uintptr(fd), "exitbell"), mem: mem, word: (*atomic.Uint32)(unsafe.Pointer(&mem[0]))}, nil
}

// File is the memory file to hand to the child (one of its inherited
// descriptors; its number goes in EnvFD).
func (b *Bell) File() *os.File { return b.file }

// CloseFile closes the launcher's descriptor of the memory file once the
// child has it (the mapping stays).
func (b *Bell) CloseFile() {
	if b.file != nil {
		b.file.Close()
		b.file = nil
	}
}

// Watch waits, on a goroutine of its own (a thread blocked in futex(2)),
// for the child's armed thread to exit, and then calls rang once. The
// returned stop ends the watch (rang is not called after it returns; if
// it is running, stop waits for it) and unmaps the page: call it once the
// child is reaped.
func (b *Bell) Watch(rang func()) (stop func()) {
	b.done = make(chan struct{})
	go func() {
		defer close(b.done)
		if b.wait() {
			rang()
		}
	}()
	return b.stop
}

// wait blocks until the owner died (true) or the bell is closed (false).
func (b *Bell) wait() bool {
	for {
		v := b.word.Load()
		switch {
		case v&closedBit != 0:
			return false
		case v&futexOwnerDied != 0:
			return true
		case v&futexTIDMask == 0:
			futex(b.word, futexWait, v) // not armed (or disarmed): wait for a change
		case v&futexWaiters == 0:
			b.word.CompareAndSwap(v, v|futexWaiters) // so that the kernel wakes this waiter
		default:
			futex(b.word, futexWait, v)
		}
	}
}

func (b *Bell) stop() {
	b.once.Do(func() {
		for {
			v := b.word.Load()
			if b.word.CompareAndSwap(v, v|closedBit) {
				break
			}
		}
		futex(b.word, futexWake, 1<<30)
		if b.done != nil {
			<-b.done
		}
		b.CloseFile()
		_ = unix.Munmap(b.mem)
	})
}

// Stop is Watch's stop for a bell never watched (its child did not start).
func (b *Bell) Stop() { b.stop() }

// Armed is the child's side: the bell armed on one of its threads.
type Armed struct {
	mem  []byte // the page (never unmapped: the kernel reads the list at the thread's exit)
	word *atomic.Uint32
	off  chan struct{} // closed by Disarm
	done chan struct{} // closed when the thread's robust list is restored
	once sync.Once
}

// ArmFromEnv arms the bell whose descriptor EnvFD names (nil, nil when it
// is unset: no launcher watches this process). The descriptor is closed
// (the mapping stays) and the variable unset, so that no child inherits
// either.
func ArmFromEnv() (*Armed, error) {
	v, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("exitbell: %s=%q is not an inherited descriptor (3 or more)", EnvFD, v)
	}
	return Arm(fd)
}

var errNotBell = errors.New("not an exit bell")

// Arm maps the bell's page from fd (which it closes) and arms it: a
// goroutine locked to its thread (which it keeps until Disarm) registers
// the page's word as the one robust futex of that thread, owned by it.
func Arm(fd int) (*Armed, error) {
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("exitbell: descriptor %d: %w", fd, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != pageSize {
		return nil, fmt.Errorf("exitbell: descriptor %d: %w (a file of %d bytes)", fd, errNotBell, st.Size)
	}
	mem, err := unix.Mmap(fd, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("exitbell: map descriptor %d: %w", fd, err)
	}
	a := &Armed{mem: mem, word: (*atomic.Uint32)(unsafe.Pointer(&mem[0])), off: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan error, 1)
	go a.hold(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return a, nil
}

// hold is the armed thread: it registers the robust list, says so on
// ready, waits for Disarm, then clears the word's owner (the thread's exit
// rings nothing from then on), restores the thread's previous list and
// lets the thread go. The page stays mapped (the kernel may read the list
// until it is replaced).
func (a *Armed) hold(ready chan<- error) {
	mem := a.mem
	runtime.LockOSThread()
	var prev uintptr
	var prevLen uintptr
	unix.Syscall(unix.SYS_GET_ROBUST_LIST, 0, uintptr(unsafe.Pointer(&prev)), uintptr(unsafe.Pointer(&prevLen)))
	head := (*[3]uintptr)(unsafe.Pointer(&mem[offHead]))
	entry := (*[1]uintptr)(unsafe.Pointer(&mem[offEntry]))
	entry[0] = uintptr(unsafe.Pointer(&head[0])) // the list is circular: the entry leads back to the head
	head[0] = uintptr(unsafe.Pointer(&entry[0]))
	head[1] = uintptr(unsafe.Pointer(&mem[0])) - uintptr(unsafe.Pointer(&entry[0])) // futex_offset (negative, as a long)
	head[2] = 0
	tid := uint32(unix.Gettid())
	if !a.word.CompareAndSwap(0, tid) {
		runtime.UnlockOSThread()
		ready <- fmt.Errorf("exitbell: the bell is in use (word %#x)", a.word.Load())
		return
	}
	if _, _, e := unix.Syscall(unix.SYS_SET_ROBUST_LIST, uintptr(unsafe.Pointer(&head[0])), headSize, 0); e != 0 {
		a.word.Store(0)
		runtime.UnlockOSThread()
		ready <- fmt.Errorf("exitbell: set_robust_list: %w", e)
		return
	}
	futex(a.word, futexWake, 1) // a launcher waiting for the arming
	ready <- nil
	<-a.off
	for {
		v := a.word.Load()
		if v&futexTIDMask != tid || a.word.CompareAndSwap(v, v&^futexTIDMask&^futexWaiters) {
			break
		}
	}
	futex(a.word, futexWake, 1)
	unix.Syscall(unix.SYS_SET_ROBUST_LIST, prev, prevLen, 0)
	runtime.UnlockOSThread()
	close(a.done)
}

// Disarm clears the bell: the process's exit from now on is a normal end
// the launcher is not told of this way. It waits for the armed thread.
func (a *Armed) Disarm() {
	if a == nil {
		return
	}
	a.once.Do(func() {
		close(a.off)
		<-a.done
	})
}
