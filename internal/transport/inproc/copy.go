package inproc

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Large payloads are copied by several goroutines at once: the copy into a
// receive buffer that was never touched is dominated by page faults (the
// kernel zeroing fresh pages), which proceed in parallel on several cores,
// as they do over sockets where the sender and the receiver fault and copy
// in two processes (on an idle 2-core virtual machine, 1 GiB into fresh
// pages: 0.6 s with one goroutine, 0.35 s with two; BenchmarkLargeCopy).
const (
	// parallelMin is the smallest payload copied in parallel.
	parallelMin = 16 << 20
	// pieceSize is the unit of work the copying goroutines claim.
	pieceSize = 4 << 20
	// maxHelpers bounds the helper goroutines of one fabric.
	maxHelpers = 3
)

// copyJob is one large copy, cut into pieces claimed by the caller and by
// the helpers that picked the job up. It is recycled once every holder
// (the caller and each helper it was handed to) has let go of it.
type copyJob struct {
	dst, src []byte
	pieces   int64
	next     atomic.Int64  // next piece to claim
	finished atomic.Int64  // pieces copied
	refs     atomic.Int32  // holders
	last     chan struct{} // a helper that copied the last piece says so here
}

var jobPool = sync.Pool{New: func() any { return &copyJob{last: make(chan struct{}, 1)} }}

// work copies pieces until none is left; it reports whether it copied the
// last one.
func (j *copyJob) work() bool {
	last := false
	for {
		i := j.next.Add(1) - 1
		if i >= j.pieces {
			return last
		}
		lo := int(i) * pieceSize
		hi := min(lo+pieceSize, len(j.src))
		copy(j.dst[lo:hi], j.src[lo:hi])
		if j.finished.Add(1) == j.pieces {
			last = true
		}
	}
}

func (j *copyJob) release() {
	if j.refs.Add(-1) == 0 {
		j.dst, j.src = nil, nil
		jobPool.Put(j)
	}
}

// copier holds the helper goroutines of a fabric (helpers are busy on a
// processor each: more than the processors would only compete): started
// on the first large copy, ended when the last endpoint closes.
type copier struct {
	jobs    chan *copyJob
	helpers int
	quit    chan struct{}
}

// copyPayload copies src into dst (len(dst) == len(src)), in parallel
// when it is large and helpers are available.
func (e *Endpoint) copyPayload(dst, src []byte) {
	if len(src) < parallelMin {
		copy(dst, src)
		return
	}
	cp := e.f.startCopier()
	if cp == nil {
		copy(dst, src)
		return
	}
	j := jobPool.Get().(*copyJob)
	j.dst, j.src = dst, src
	j.pieces = int64((len(src) + pieceSize - 1) / pieceSize)
	j.next.Store(0)
	j.finished.Store(0)
	j.refs.Store(1)
	// Offer the job to idle helpers; busy ones (another copy in the
	// fabric) are not waited for: the caller copies what is left.
	for range min(cp.helpers, int(j.pieces)-1) {
		j.refs.Add(1)
		select {
		case cp.jobs <- j:
		default:
			j.refs.Add(-1)
		}
	}
	// Exactly one of the goroutines copies the last piece; when that is
	// a helper, it says so on j.last.
	if !j.work() {
		<-j.last
	}
	j.release()
}

// startCopier returns the fabric's copier, starting its helpers on the
// first call; nil once every endpoint closed, or with one processor only.
func (f *Fabric) startCopier() *copier {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open == 0 {
		return nil
	}
	if f.cp == nil {
		f.cp = &copier{jobs: make(chan *copyJob, maxHelpers), helpers: min(runtime.GOMAXPROCS(0)-1, maxHelpers), quit: make(chan struct{})}
		for range f.cp.helpers {
			f.wg.Add(1)
			go f.cp.help(&f.wg)
		}
	}
	if f.cp.helpers <= 0 {
		return nil
	}
	return f.cp
}

// closed records that one endpoint closed; the last one ends the helpers.
func (f *Fabric) closed() {
	f.mu.Lock()
	f.open--
	last := f.open == 0
	if last && f.cp != nil {
		close(f.cp.quit)
	}
	f.mu.Unlock()
	if last {
		f.wg.Wait()
	}
}

// help copies the pieces of the jobs it is handed until quit closes.
func (cp *copier) help(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		select {
		case j := <-cp.jobs:
			if j.work() {
				j.last <- struct{}{}
			}
			j.release()
		case <-cp.quit:
			return
		}
	}
}
