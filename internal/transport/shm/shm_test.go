package shm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/transport"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(envChild); role != "" {
		os.Exit(runChild(role))
	}
	goleak.VerifyTestMain(m)
}

// recorder is a Handler that keeps every frame per peer, checks that each
// payload matches its header (the first 8 bytes are the sequence number,
// the rest a pattern derived from it) and records the order of events.
type recorder struct {
	mu     sync.Mutex
	got    map[int][]uint64 // per sender: the sequence numbers received whole
	kinds  []uint8          // kinds in Payload order
	errs   map[uint64]error // frames that ended with an error, by sequence number
	frames int              // Frame calls
	bad    []string
	lost   chan int
	event  chan string
}

func newRecorder() *recorder {
	return &recorder{got: map[int][]uint64{}, errs: map[uint64]error{}, lost: make(chan int, 16), event: make(chan string, 1024)}
}

func (r *recorder) Frame(from int, h transport.Header) ([]byte, any) {
	r.mu.Lock()
	r.frames++
	r.mu.Unlock()
	if h.N == 0 {
		return nil, nil
	}
	return make([]byte, h.N), nil
}

func fill(b []byte, seq uint64) {
	if len(b) < 8 {
		return
	}
	binary.LittleEndian.PutUint64(b, seq)
	for i := 8; i < len(b); i++ {
		b[i] = byte(seq) + byte(i*7) + byte(i>>12)
	}
}

func (r *recorder) Payload(from int, h transport.Header, dst []byte, _ any, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.kinds = append(r.kinds, h.Kind)
	if h.Flags&transport.FlagsReserved != 0 {
		r.bad = append(r.bad, fmt.Sprintf("reserved flag bits %#x reached the handler", h.Flags))
	}
	if err != nil {
		r.errs[h.Seq] = err
		r.note(fmt.Sprintf("cut %d", h.Seq))
		return
	}
	if len(dst) >= 8 {
		want := make([]byte, len(dst))
		fill(want, h.Seq)
		if !bytes.Equal(dst, want) {
			r.bad = append(r.bad, fmt.Sprintf("frame %d from %d: payload of %d bytes altered", h.Seq, from, len(dst)))
		}
	}
	r.got[from] = append(r.got[from], h.Seq)
	r.note(fmt.Sprintf("frame %d", h.Seq))
}

func (r *recorder) PeerLost(peer int, err error) {
	r.lost <- peer
	r.note(fmt.Sprintf("lost %d", peer))
}

// note records an event for the tests that follow them (a few frames);
// the others do not read them, so the channel may be full.
func (r *recorder) note(e string) {
	select {
	case r.event <- e:
	default:
	}
}

func (r *recorder) count(from int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got[from])
}

func (r *recorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.bad {
		t.Error(b)
	}
}

type doneCh chan error

func (d doneCh) SendDone(err error) { d <- err }

func sockName(rank int) string { return "r" + fmt.Sprint(rank) + ".shm" }

func addrs(dir string, n int) []string {
	a := make([]string, n)
	for i := range a {
		a[i] = filepath.Join(dir, sockName(i)+".sock")
	}
	return a
}

// newJob starts n transports in this process, sharing dir.
func newJob(t *testing.T, dir string, n int, hs ...transport.Handler) []*Transport {
	return newJobCMA(t, dir, n, true, hs...)
}

// newJobCMA is newJob with large payloads read from the sender's memory
// (cma) or copied through the rings.
func newJobCMA(t *testing.T, dir string, n int, cma bool, hs ...transport.Handler) []*Transport {
	t.Helper()
	trs := make([]*Transport, n)
	for i := range trs {
		tr, err := Listen(Config{Self: i, Dir: dir, Name: sockName(i), Handler: hs[i], NoCMA: !cma, Auth: testKey,
			SpinFn: func() time.Duration { return 10 * time.Microsecond }})
		if err != nil {
			t.Fatal(err)
		}
		trs[i] = tr
	}
	for _, tr := range trs {
		tr.SetPeers(addrs(dir, n))
	}
	return trs
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func closeAll(trs []*Transport) {
	for _, tr := range trs {
		tr.Close()
	}
}

// Frames of every size (inline, exactly at the chunk limits, chunked
// through many ring turns or read from the sender's memory) arrive intact
// and in order per sender, from several senders at once, sent and
// posted.
func TestFramesArriveIntactAndInOrder(t *testing.T) {
	t.Run("ring", func(t *testing.T) { testFramesIntact(t, false) })
	t.Run("cma", func(t *testing.T) { testFramesIntact(t, true) })
}

func testFramesIntact(t *testing.T, cma bool) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder(), newRecorder()}
	trs := newJobCMA(t, dir, 3, cma, recs[0], recs[1], recs[2])
	defer closeAll(trs)
	sizes := []int{0, 8, 9, 100, 4096, 16 << 10, int(bulkSize/4 - transport.HeaderSize - 1), int(bulkSize / 4), int(bulkSize/4 + lineSize - transport.HeaderSize), int(bulkSize/4+lineSize-transport.HeaderSize) + 1, 100 << 10, 1 << 20, 3<<20 + 13}
	const rounds = 3
	var wg sync.WaitGroup
	for _, from := range []int{0, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seq := uint64(0)
			for range rounds {
				for i, n := range sizes {
					seq++
					b := make([]byte, n)
					fill(b, seq)
					h := transport.Header{Kind: 1, Seq: seq}
					if i%2 == 0 {
						if err := trs[from].Send(1, h, b); err != nil {
							t.Error(err)
							return
						}
					} else {
						d := make(doneCh, 1)
						trs[from].Post(1, h, b, d)
						if err := <-d; err != nil {
							t.Error(err)
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	total := rounds * len(sizes)
	waitFor(t, "every frame", func() bool { return recs[1].count(0) == total && recs[1].count(2) == total })
	recs[1].check(t)
	if got := trs[0].pairs[1].out.cma.Load() == 1; got != cma {
		t.Fatalf("payloads read from the sender's memory: %v, want %v", got, cma)
	}
	for _, from := range []int{0, 2} {
		for i, s := range recs[1].got[from] {
			if s != uint64(i+1) {
				t.Fatalf("from %d: frame %d arrived as number %d", from, s, i+1)
			}
		}
	}
}

// Posted frames on one lane keep their order even when the ring is full
// and they queue.
func TestPostedFramesKeepOrderThroughAFullRing(t *testing.T) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := newJob(t, dir, 2, recs[0], recs[1])
	defer closeAll(trs)
	const n = 2000
	dones := make(doneCh, n)
	for i := range n {
		b := make([]byte, 1000+i%3000)
		fill(b, uint64(i+1))
		fl := uint16(0)
		trs[0].Post(1, transport.Header{Kind: 2, Seq: uint64(i + 1), Flags: fl}, b, dones)
	}
	for range n {
		select {
		case err := <-dones:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("posted frames not written")
		}
	}
	waitFor(t, "every frame", func() bool { return recs[1].count(0) == n })
	recs[1].check(t)
	for i, s := range recs[1].got[0] {
		if s != uint64(i+1) {
			t.Fatalf("frame %d arrived as number %d", s, i+1)
		}
	}
}

// holdHandler holds the receiver inside the Frame of the big frame (kind
// 1) until released (a stopped receiver; handlers must not block).
type holdHandler struct {
	*recorder
	seen chan struct{}
	hold chan struct{}
	once sync.Once
}

func (h *holdHandler) Frame(from int, hd transport.Header) ([]byte, any) {
	if hd.Kind == 1 {
		h.once.Do(func() { close(h.seen) })
		<-h.hold
	}
	return h.recorder.Frame(from, hd)
}

// An urgent frame posted while a 16 MiB frame to the same peer waits for
// ring space (or for the receiver to read it from the sender's memory)
// arrives before that frame completes, which arrives intact; and an
// urgent frame sent before a bulk one is not overtaken by it.
func TestUrgentFrameOvertakesBulkTransfer(t *testing.T) {
	t.Run("ring", func(t *testing.T) { testUrgentOvertakes(t, false) })
	t.Run("cma", func(t *testing.T) { testUrgentOvertakes(t, true) })
}

func testUrgentOvertakes(t *testing.T, cma bool) {
	dir := t.TempDir()
	rx := &holdHandler{recorder: newRecorder(), seen: make(chan struct{}), hold: make(chan struct{})}
	trs := newJobCMA(t, dir, 2, cma, newRecorder(), rx)
	defer closeAll(trs)
	big := make([]byte, 16<<20)
	fill(big, 1)
	sent := make(chan error, 1)
	go func() { sent <- trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, big) }()
	select {
	case <-rx.seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the big frame's header did not arrive")
	}
	hb := make([]byte, 9)
	fill(hb, 2)
	posted := make(doneCh, 1)
	trs[0].Post(1, transport.Header{Kind: 16, Flags: transport.FlagUrgent, Seq: 2}, hb, posted)
	if err := <-posted; err != nil {
		t.Fatal(err)
	}
	close(rx.hold)
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the big frame", func() bool { return rx.count(0) == 2 })
	// Urgent then bulk, both posted: the bulk frame comes second.
	trs[0].Post(1, transport.Header{Kind: 17, Flags: transport.FlagUrgent, Seq: 3}, nil, nil)
	trs[0].Post(1, transport.Header{Kind: 18, Seq: 4}, nil, nil)
	waitFor(t, "every frame", func() bool { return rx.count(0) == 4 })
	rx.check(t)
	rx.mu.Lock()
	defer rx.mu.Unlock()
	if want := []uint8{16, 1, 17, 18}; !bytes.Equal(rx.kinds, want) {
		t.Fatalf("frames completed in the order of kinds %v, want %v", rx.kinds, want)
	}
}

// A peer that closes says goodbye: no PeerLost, and sends to it fail.
func TestCloseIsAGoodbye(t *testing.T) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := newJob(t, dir, 2, recs[0], recs[1])
	defer trs[0].Close()
	// The pair is set up (a Close stops setting up pairs, as the sockets do).
	if err := trs[1].Send(0, transport.Header{Kind: 3, Seq: 1000}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		b := make([]byte, 64)
		fill(b, uint64(i+1))
		trs[1].Post(0, transport.Header{Kind: 3, Seq: uint64(i + 1)}, b, nil)
	}
	if err := trs[1].Close(); err != nil {
		t.Fatal(err)
	}
	// Every frame posted before Close arrives.
	waitFor(t, "the frames posted before Close", func() bool { return recs[0].count(1) == 101 })
	waitFor(t, "sends to the closed peer to fail", func() bool {
		return errors.Is(trs[0].Send(1, transport.Header{Kind: 3}, nil), transport.ErrPeerLost)
	})
	select {
	case p := <-recs[0].lost:
		t.Fatalf("rank %d reported lost after an orderly Close", p)
	default:
	}
}

// A Reinit epoch's transports share nothing with the old epoch's: frames
// queued in the old epoch never reach the new one.
func TestNewEpochGetsFreshRings(t *testing.T) {
	dir := t.TempDir()
	old := []*recorder{newRecorder(), newRecorder()}
	rx := &holdHandler{recorder: old[1], seen: make(chan struct{}), hold: make(chan struct{})}
	trs := newJob(t, dir, 2, old[0], rx)
	// The old receiver stops inside a big frame; frames queue behind it.
	trs[0].Post(0+1, transport.Header{Kind: 1, Seq: 1}, make([]byte, 4<<20), nil)
	<-rx.seen
	for i := range 50 {
		trs[0].Post(1, transport.Header{Kind: 5, Seq: uint64(100 + i)}, nil, nil)
	}
	// The new epoch: fresh transports on fresh names.
	nrec := []*recorder{newRecorder(), newRecorder()}
	ntrs := make([]*Transport, 2)
	na := make([]string, 2)
	for i := range ntrs {
		tr, err := Listen(Config{Self: i, Dir: dir, Name: sockName(i) + ".e1", Handler: nrec[i], Auth: testKey, Scope: 1})
		if err != nil {
			t.Fatal(err)
		}
		ntrs[i], na[i] = tr, tr.Addr()
	}
	for _, tr := range ntrs {
		tr.SetPeers(na)
	}
	defer closeAll(ntrs)
	for i := range 20 {
		if err := ntrs[0].Send(1, transport.Header{Kind: 6, Seq: uint64(1000 + i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the new epoch's frames", func() bool { return nrec[1].count(0) == 20 })
	close(rx.hold)
	closeAll(trs)
	nrec[1].mu.Lock()
	defer nrec[1].mu.Unlock()
	for i, s := range nrec[1].got[0] {
		if s != uint64(1000+i) {
			t.Fatalf("the new epoch received frame %d as number %d", s, i)
		}
	}
}

// A rank sends to itself through a ring of its own (the protocol sends
// fence markers and the like to every member, itself included).
func TestSendToSelf(t *testing.T) {
	dir := t.TempDir()
	rec := newRecorder()
	trs := newJob(t, dir, 1, rec)
	defer closeAll(trs)
	for i, n := range []int{0, 100, 1 << 20, 10} {
		b := make([]byte, n)
		fill(b, uint64(i+1))
		if i%2 == 0 {
			if err := trs[0].Send(0, transport.Header{Kind: 1, Seq: uint64(i + 1)}, b); err != nil {
				t.Fatal(err)
			}
		} else {
			trs[0].Post(0, transport.Header{Kind: 1, Seq: uint64(i + 1), Flags: transport.FlagUrgent}, b, nil)
		}
	}
	waitFor(t, "the frames to self", func() bool { return rec.count(0) == 4 })
	rec.check(t)
}

// A peer that writes a malformed record (a chunk outside any chunked
// frame, a frame longer than the ring, an unknown kind, a frame in the
// sender's memory without its body, a head moved inside a record) is
// reported lost, with the defect logged, never a panic; the connection
// breaks, so the writer is told the same.
func TestMalformedRecordIsALoss(t *testing.T) {
	for _, tc := range []struct {
		bad  transport.Header
		head uint64 // moved here (with the tail a record further) if not 0
		log  string
	}{
		{bad: transport.Header{Kind: recChunk, Flags: flagShm, N: 10}, log: "a chunk of 10 bytes"},
		{bad: transport.Header{Kind: 1, N: 1 << 40}, log: "a frame of 1099511627776 bytes"},
		{bad: transport.Header{Kind: 9, Flags: flagShm}, log: "a record of kind 9"},
		{bad: transport.Header{Kind: 1, Flags: flagCMA, N: 100}, log: "a frame of 100 bytes in the sender's memory"},
		{head: urgentSize - 8, log: "the ring's head at 65528, inside a record"},
	} {
		dir := t.TempDir()
		trs, recs, logs := hostileJob(t, dir, 2, 2, 0)
		if err := trs[0].Send(1, transport.Header{Kind: 1, Seq: 1}, nil); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the first frame", func() bool { return recs[1].count(0) == 1 })
		trs[0].mu.Lock()
		p := trs[0].pairs[1]
		trs[0].mu.Unlock()
		p.mu.Lock()
		if tc.head != 0 {
			p.out.urgent.head.Store(tc.head)
			p.out.urgent.tail.Store(tc.head + lineSize)
		} else {
			h := tc.bad
			if !p.out.urgent.put(&h, make([]byte, 10), nil) {
				t.Fatal("no room for the bad record")
			}
		}
		sleeping := p.ringLocked()
		p.mu.Unlock()
		p.wakePeer(sleeping)
		for _, r := range []*recorder{recs[1], recs[0]} {
			select {
			case <-r.lost:
			case <-time.After(30 * time.Second):
				t.Fatalf("%s: the loss was not reported", tc.log)
			}
		}
		logs[1].waitLine(t, "closed the shared memory with process 0: rank 0 wrote a bad record in shared memory: "+tc.log)
		closeAll(trs)
	}
}

// A frame that completes nobody (posted without a done) to a rank that is
// not listening any more reports the rank lost, so that it never vanishes
// unnoticed.
func TestUnreachablePeerIsReportedLost(t *testing.T) {
	dir := t.TempDir()
	recs := []*recorder{newRecorder(), newRecorder()}
	trs := newJob(t, dir, 2, recs[0], recs[1])
	defer trs[0].Close()
	trs[1].Close() // never connected: its socket is gone
	trs[0].Post(1, transport.Header{Kind: 3}, nil, nil)
	select {
	case p := <-recs[0].lost:
		if p != 1 {
			t.Fatalf("lost peer %d, want 1", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the unreachable rank was not reported lost")
	}
}
