// floor: the machine's floor for a one-word hand-off between two processes
// over shared memory (issue 28 item 1, docs/benchmarks.md "Session 17: the
// 1-byte path"). Two processes map one memfd and ping-pong with spinning
// loads, no MPI, no Go scheduler in the way (each side spins on its own
// thread), so a hop is what the cache lines that cross cost:
//
//	-mode one   one word each way, a line of its own per direction: one line
//	            crosses a hop (the least a hand-off can cost).
//	-mode seq   a 64-byte record per direction whose first word is its
//	            sequence number: the consumer polls the record itself, one
//	            line a hop (Open MPI's vader fast box).
//	-mode ring  as ftmpi's shared-memory ring: the producer writes a 64-byte
//	            record, then stores the ring's tail on another line; the
//	            consumer polls the tail, then reads the record and stores its
//	            head (its own line): two lines cross a hop.
//	-mode wake  one word each way, but the consumer sleeps on it (FUTEX_WAIT)
//	            and the producer wakes it (FUTEX_WAKE) after the store: the
//	            floor of a sleeping hand-off, a wake-up and a context switch
//	            a hop (what ftmpi's waits pay when 8-16 ranks share 2 cores
//	            and none can spin). Use fewer -batches: a hop costs µs.
//
// -store xchg publishes with sync/atomic's Store (an XCHG on amd64, a full
// fence, as ftmpi's ring does); -store mov with a plain MOV (a release store
// on amd64; an assembly helper, atomic Store on other architectures).
// -pin binds the two processes to CPUs 0 and 1 (Open MPI binds at np 2;
// ftmpirun does not by default); -onecpu binds both to CPU 0 (a hop is
// then a context switch on one core: mode wake only, the spinning modes
// would wait for the time slice). Rank 0 prints, like bench/np2batch, the
// fastest, 10th and 50th percentile batch in ns a hop (half a round trip).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ftmpi/ftmpi/internal/futex"
)

const (
	line = 64
	size = 16 * line // the control lines; the records' rings follow
	// Offsets of the lines (each direction's lines apart from the other's).
	offTail0 = 0 * line // direction 0 (parent -> child): tail or word
	offRec0  = 2 * line // direction 0: the record
	offHead0 = 4 * line // direction 0: the consumer's head
	offTail1 = 8 * line
	offRec1  = 10 * line
	offHead1 = 12 * line
)

type dir struct {
	tail, head *uint64
	rec        *[8]uint64
	ring       unsafe.Pointer // -ringbytes > 0: the records' ring of this direction
}

// at is the record of round i: the fixed line, or the ring's i-th record.
func (d dir) at(i uint64) *[8]uint64 {
	if d.ring == nil {
		return d.rec
	}
	return (*[8]uint64)(unsafe.Add(d.ring, (i*line)%uint64(*ringBytes)))
}

func view(m []byte, d int) dir {
	base := 0
	if d == 1 {
		base = offTail1
	}
	p := unsafe.Pointer(&m[0])
	var ring unsafe.Pointer
	if *ringBytes > 0 {
		ring = unsafe.Add(p, size+d**ringBytes)
	}
	return dir{
		ring: ring,
		tail: (*uint64)(unsafe.Add(p, base+offTail0)),
		rec:  (*[8]uint64)(unsafe.Add(p, base+offRec0)),
		head: (*uint64)(unsafe.Add(p, base+offHead0)),
	}
}

var (
	mode    = flag.String("mode", "one", "one, seq, ring or wake")
	store   = flag.String("store", "xchg", "xchg (sync/atomic Store) or mov (plain store)")
	batch   = flag.Int("batch", 200, "hops a batch (two a round trip)")
	batches = flag.Int("batches", 3000, "batches")
	pin     = flag.Bool("pin", false, "bind the processes to CPUs 0 and 1")
	onecpu  = flag.Bool("onecpu", false, "bind both processes to CPU 0 (mode wake)")
	child   = flag.Bool("child", false, "internal: the second process")
	// ftmpi's bulk ring is 256 KiB: each record is a line not touched for
	// 4,096 records, where a fixed record (Open MPI's fast box) is one line
	// that stays in the two cores' caches.
	ringBytes = flag.Int("ringbytes", 0, "modes seq and ring: records advance through a ring of this many bytes a direction (0: one fixed line)")
)

func publish(p *uint64, v uint64) {
	if *store == "mov" {
		storeRelease(p, v)
		return
	}
	atomic.StoreUint64(p, v)
}

// send publishes round i on d.
func send(d dir, i uint64) {
	switch *mode {
	case "one":
		publish(d.tail, i)
	case "wake":
		w := word(d)
		w.Store(uint32(i))
		futex.WakeAll(w)
	case "seq":
		// The payload first, the sequence word last (x86 keeps stores in order).
		rec := d.at(i)
		rec[1] = 1 // the 1-byte payload and a header's worth of words
		rec[2] = i
		rec[3] = 7
		publish(&rec[0], i)
	case "ring":
		rec := d.at(i)
		rec[0] = i
		rec[1] = 1
		rec[2] = 7
		publish(d.tail, i*line)
	}
}

// recv spins until round i arrived on d and reads it as the mode's consumer does.
func recv(d dir, i uint64) {
	switch *mode {
	case "one":
		for atomic.LoadUint64(d.tail) != i {
		}
	case "wake":
		w := word(d)
		for v := w.Load(); v != uint32(i); v = w.Load() {
			futex.Wait(w, v, time.Second) // ftmpi's own futex: not private, two processes
		}
	case "seq":
		rec := d.at(i)
		for atomic.LoadUint64(&rec[0]) != i {
		}
		if rec[2] != i {
			panic("torn record")
		}
	case "ring":
		for atomic.LoadUint64(d.tail) != i*line {
		}
		if atomic.LoadUint64(&d.at(i)[0]) != i {
			panic("torn record")
		}
		publish(d.head, i*line)
	}
}

// word is d's hand-off word of mode wake (a futex is 32 bits: the tail's
// low half).
func word(d dir) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(d.tail)) }

func main() {
	flag.Parse()
	switch *mode {
	case "one", "seq", "ring", "wake":
	default:
		check(fmt.Errorf("-mode %q: want one, seq, ring or wake", *mode))
	}
	if *onecpu && *mode != "wake" {
		check(fmt.Errorf("-onecpu with -mode %s: the spinning modes need a core each", *mode))
	}
	runtime.LockOSThread()
	var f *os.File
	if *child {
		f = os.NewFile(3, "floor")
	} else {
		fd, err := unix.MemfdCreate("ftmpi-floor", 0)
		check(err)
		check(unix.Ftruncate(fd, int64(size+2**ringBytes)))
		f = os.NewFile(uintptr(fd), "floor")
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size+2**ringBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	check(err)
	me := 0
	if *child {
		me = 1
	}
	if *pin || *onecpu {
		var set unix.CPUSet
		if *onecpu {
			set.Set(0)
		} else {
			set.Set(me)
		}
		check(unix.SchedSetaffinity(0, &set))
	}
	out, in := view(m, me), view(m, 1-me)
	rounds := uint64(*batch / 2 * *batches)
	if *child {
		for i := uint64(1); i <= rounds+1; i++ {
			recv(in, i)
			send(out, i)
		}
		return
	}
	args := append([]string{"-child"}, os.Args[1:]...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	check(cmd.Start())
	// Round 1 waits for the child to start; then batches of round trips.
	send(out, 1)
	recv(in, 1)
	i := uint64(2)
	per := make([]float64, 0, *batches)
	for range *batches {
		t0 := time.Now()
		for range *batch / 2 {
			send(out, i)
			recv(in, i)
			i++
		}
		per = append(per, float64(time.Since(t0).Nanoseconds())/float64(*batch))
	}
	check(cmd.Wait())
	slices.Sort(per)
	where := fmt.Sprint(*pin)
	if *onecpu {
		where = "onecpu"
	}
	fmt.Printf("floor mode %s ringbytes %d store %s pin %s min %.1f p10 %.1f p50 %.1f ns\n", *mode, *ringBytes, *store, where, per[0], per[len(per)/10], per[len(per)/2])
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}
