// Package mpi is ftmpi's public API: the MPI programming model (ranks,
// communicators, point-to-point messaging, collectives) for Go, with
// MPI's names translated to Go conventions (mpi4py is the model).
//
// A program is started by ftmpirun as N processes and calls Init; started
// on its own it runs as a singleton of size 1. Run starts n ranks as
// goroutines of one process over an in-memory transport with the same
// semantics, for tests and simulations.
//
// Operations on typed buffers are generic package functions taking the
// communicator first (Go methods cannot have type parameters); the others
// are methods. Errors are values of type *Error wrapping one MPI error
// class (errors.Is(err, mpi.ErrTruncate)); a communicator's error handler
// decides whether they are returned or abort the job.
//
// The package must not hold process-global state: several Worlds live in
// one process under Run.
package mpi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/inject"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
	"github.com/ftmpi/ftmpi/internal/transport/sock"
)

// World is one rank's MPI instance: what MPI_Init creates and
// MPI_Finalize ends. Its methods are safe for concurrent use
// (MPI_THREAD_MULTIPLE).
type World struct {
	rank, size int
	eng        *p2p.Engine
	tr         transport.Transport
	client     *boot.Client
	run        *runState // non-nil under Run
	mode       string    // "inproc", "singleton", "unix", "tcp", "auto"

	world, self *Comm

	abort     chan struct{} // closed when this rank's job is torn down
	abortOnce *sync.Once
	finalized atomic.Bool
	killed    atomic.Bool // Kill was called (in-process fault injection)
	finOnce   sync.Once
	finErr    error
	stop      chan struct{} // closed by Finalize: stops the event watcher
	bg        sync.WaitGroup

	proc     *procState  // the launched process this World belongs to (reinit.go); nil under Run and for a singleton
	epoch    int         // Reinit epoch of this World (0: the first)
	peerInc  []int       // incarnation of each rank's process in this epoch
	spawn    spawnState  // Spawn bookkeeping (spawn.go)
	parent   *Comm       // intercommunicator to the parents of a spawned World
	ended    atomic.Bool // a Reinit rollback ended this World's epoch
	relOnce  sync.Once   // release runs once
	reinitMu sync.Mutex
	cancel   func() // cancels the resilient function's context of this epoch

	ft     ftWorld                   // fault-tolerance state (ft.go)
	det    atomic.Pointer[detection] // heartbeat detector and failure-notice broadcast (detect.go); nil under Run
	outbox outbox                    // sends requested from transport callbacks
	hosts  hostTable                 // where every process runs, as the launcher told (coll_util.go)
}

// Init initialises MPI for this process (MPI_Init). Under ftmpirun the rank
// learns its rank, size and peers from the launcher; otherwise the program
// is a singleton of size 1. Errors are returned, never fatal (seed 003,
// 17.5.2).
func Init() (*World, error) {
	info, ok, err := boot.FromEnv()
	if err != nil {
		return nil, newErr(ErrOther, "MPI_Init", nil, NoPeer, "%v", err)
	}
	if !ok {
		return newSingleton(), nil
	}
	w, err := initProcess(info)
	if err != nil {
		return nil, newErr(ErrOther, "MPI_Init", nil, NoPeer, "%v", err)
	}
	return w, nil
}

func newSingleton() *World {
	fab := inproc.NewFabric(1)
	eng := p2p.New(p2p.Config{Self: 0})
	w := newWorld(0, 1, eng, fab.Attach(0, eng), "singleton")
	w.abort = make(chan struct{})
	w.abortOnce = new(sync.Once)
	return w
}

func newWorld(rank, size int, eng *p2p.Engine, tr transport.Transport, mode string) *World {
	return newWorldIn(rank, size, nil, rank, eng, tr, mode)
}

// newWorldIn builds the World of process proc among process ids
// 0..universe-1 (the engine's address space); CommWorld is the processes
// members (nil: all of them, in order), proc being its rank wrank. Only
// spawned worlds have members: their process ids follow the parents'.
func newWorldIn(proc, universe int, members []int, wrank int, eng *p2p.Engine, tr transport.Transport, mode string) *World {
	eng.SetTransport(tr)
	w := &World{rank: proc, size: universe, eng: eng, tr: tr, mode: mode, stop: make(chan struct{})}
	eng.SetControlHandler(w.onControl)
	eng.SetLostHook(w.onLost)
	w.outbox.start()
	wsize := universe
	if members != nil {
		wsize = len(members)
	}
	w.world = &Comm{w: w, name: "MPI_COMM_WORLD", ctx: ctxWorld, rank: wrank, size: wsize, members: members}
	w.world.errh.Store(ErrorsAreFatal)
	w.self = &Comm{w: w, name: "MPI_COMM_SELF", ctx: ctxSelf, rank: 0, size: 1, members: []int{proc}}
	w.self.errh.Store(ErrorsAreFatal)
	w.registerComm(w.world)
	w.registerComm(w.self)
	return w
}

// readerSpin is how long a socket reader spins before parking: a short spin
// buys latency when every rank has a core, and costs throughput when ranks
// are oversubscribed, so it is off then. FTMPI_SPIN overrides it.
func readerSpin(ranksOnHost int) time.Duration {
	if s := os.Getenv("FTMPI_SPIN"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	if ranksOnHost <= runtime.NumCPU() {
		return 50 * time.Microsecond
	}
	return 0
}

// readerYield reports whether spinning readers yield the processor to other
// processes (FTMPI_SPIN_YIELD=1), for hosts with more ranks than cores.
func readerYield() bool { return os.Getenv("FTMPI_SPIN_YIELD") == "1" }

func initProcess(info boot.Info) (*World, error) {
	mode := sock.Mode(info.Transport)
	switch mode {
	case "", sock.ModeAuto, sock.ModeUnix, sock.ModeTCP:
	default:
		return nil, fmt.Errorf("%s=%q: want auto, unix or tcp", boot.EnvTransport, info.Transport)
	}
	client, err := boot.Connect(info)
	if err != nil {
		return nil, err
	}
	p := &procState{info: info, client: client, stopCh: make(chan struct{}), epoch: info.Epoch}
	w, err := p.openEpoch(info.Epoch)
	if err != nil {
		client.Close()
		return nil, err
	}
	p.setCurrentLocked(w) // nobody else knows p yet
	p.wg.Add(1)
	go p.watchLauncher()
	if spec := os.Getenv("FTMPI_INJECT"); spec != "" && info.Incarnation == 0 && info.ParentProcs == nil {
		stop, err := inject.Self(info.Rank, info.Size, spec)
		if err != nil {
			w.Finalize()
			return nil, err
		}
		p.injectStop = stop
	}
	return w, nil
}

// openEpoch builds this process's World for a Reinit epoch (0: the first
// start): a fresh engine and transport listening on a fresh address,
// exchanged with every rank through the launcher. Nothing of an older
// epoch (connections, queued messages, communicators) survives into it, so
// a message of an old epoch can never be delivered in a new one. If a
// newer epoch starts meanwhile (another failure), it joins that one.
func (p *procState) openEpoch(epoch int) (*World, error) {
	info := p.info
	for {
		eng := p2p.New(p2p.Config{Self: info.Proc})
		mode := sock.Mode(info.Transport)
		spin := &atomicDuration{}
		name := "r" + strconv.Itoa(info.Proc) + "." + strconv.Itoa(info.Incarnation)
		if epoch > 0 {
			name += ".e" + strconv.Itoa(epoch)
		}
		tr, err := sock.Listen(sock.Config{
			Self: info.Proc, Host: info.Host, Mode: mode, Dir: info.TmpDir, Name: name,
			Handler: eng, SpinFn: spin.Load, Yield: readerYield(),
		})
		if err != nil {
			return nil, err
		}
		self := tr.Self()
		addrs := map[string]string{}
		if self.Unix != "" {
			addrs["unix"] = self.Unix
		}
		if self.TCP != "" {
			addrs["tcp"] = self.TCP
		}
		ep := boot.Endpoint{Rank: info.Proc, Inc: info.Incarnation, Host: info.Host, Addrs: addrs}
		var eps []boot.Endpoint
		var deadAtStart []int
		if epoch == 0 {
			eps, err = p.client.Exchange(ep)
			// Ranks that died before publishing their endpoint are failures
			// like any other: the job starts without them (a fault-tolerant
			// program goes on; the default error handler aborts at the first
			// operation with them).
			var fe *boot.FailedError
			if errors.As(err, &fe) {
				deadAtStart, err = fe.Ranks, nil
			}
		} else {
			eps, err = p.client.Rejoin(epoch, ep)
			var se *boot.SupersededError
			if errors.As(err, &se) {
				tr.Close()
				eng.Close()
				epoch = se.Epoch
				continue
			}
		}
		if err != nil {
			tr.Close()
			eng.Close()
			return nil, err
		}
		peers := make([]sock.Peer, len(eps))
		onHost := 0
		for i, ep := range eps {
			peers[i] = sock.Peer{Host: ep.Host, Unix: ep.Addrs["unix"], TCP: ep.Addrs["tcp"]}
			if ep.Host == info.Host {
				onHost++
			}
		}
		spin.Store(readerSpin(onHost))
		tr.SetPeers(peers)
		if mode == "" || mode == sock.ModeAuto {
			mode = sock.ModeAuto
			if onHost == len(eps) {
				mode = sock.ModeUnix // every peer is local: auto means Unix sockets
			}
		}
		var members []int
		if info.Proc != info.Rank || info.Universe != info.Size {
			base := info.Proc - info.Rank
			for i := range info.Size {
				members = append(members, base+i)
			}
		}
		w := newWorldIn(info.Proc, info.Universe, members, info.Rank, eng, tr, string(mode))
		w.client = p.client
		w.proc = p
		w.setPeers(peers)
		w.hosts.add(eps)
		w.peerInc = make([]int, len(eps))
		for i, ep := range eps {
			w.peerInc[i] = ep.Inc
		}
		w.epoch = epoch
		w.abort = make(chan struct{})
		w.abortOnce = new(sync.Once)
		// A broken connection is a suspicion: the launcher confirms it (the
		// process is dead, or it kills it) before this rank declares it failed.
		eng.SetSuspectHook(func(peer int, cause error) {
			if !eng.IsLost(peer) && !w.finalized.Load() && !w.ended.Load() {
				w.declareFailed(peer, 0, fmt.Sprintf("connection broken: %v", cause))
			}
		})
		for _, r := range deadAtStart {
			eng.FailPeer(r, fmt.Errorf("rank %d died during start-up", r))
		}
		if info.ParentProcs != nil {
			if err := w.joinParent(info.ParentPairs, info.ParentProcs); err != nil {
				w.release()
				return nil, err
			}
		}
		if info.Size > 1 {
			cfg, on, err := detectorConfig(info.Proc, info.Universe, info.Incarnation)
			if err == nil && on {
				err = w.startDetection(cfg)
			}
			if err != nil {
				w.release()
				return nil, err
			}
			w.peersJoined(eps)
		}
		return w, nil
	}
}

type atomicDuration struct{ v atomic.Int64 }

func (a *atomicDuration) Load() time.Duration   { return time.Duration(a.v.Load()) }
func (a *atomicDuration) Store(d time.Duration) { a.v.Store(int64(d)) }

// Rank is this process's rank in CommWorld.
func (w *World) Rank() int { return w.world.rank }

// Size is the number of processes in CommWorld.
func (w *World) Size() int { return w.world.size }

// CommWorld returns MPI_COMM_WORLD. After a Reinit rollback it is the
// new epoch's, whichever World of the process it is asked of.
func (w *World) CommWorld() *Comm {
	if w.proc != nil {
		if cur := w.proc.current(); cur != w && cur != nil {
			return cur.world
		}
	}
	return w.world
}

// CommSelf returns MPI_COMM_SELF (the current epoch's after a Reinit
// rollback).
func (w *World) CommSelf() *Comm {
	if w.proc != nil {
		if cur := w.proc.current(); cur != w && cur != nil {
			return cur.self
		}
	}
	return w.self
}

// Transport names the transport in use: "inproc", "singleton", "auto",
// "unix" or "tcp".
func (w *World) Transport() string { return w.mode }

// MessagesSent is the number of messages this process has sent so far,
// user and collective traffic alike (protocol frames not counted); a
// performance-variable in the spirit of MPI_T.
func (w *World) MessagesSent() uint64 { return w.eng.Sent() }

// Finalized reports whether Finalize was called (MPI_Finalized).
func (w *World) Finalized() bool { return w.finalized.Load() }

// Finalize ends MPI for this rank (MPI_Finalize). It waits until every rank
// has called Finalize, then closes connections. Calling it again is a
// no-op.
func (w *World) Finalize() error {
	if p := w.proc; p != nil {
		if p.isActive() {
			return newErr(ErrOther, "MPI_Finalize", nil, NoPeer, "called inside MPI_Reinit: call it after Reinit returns (seed 000, 1.3)")
		}
		if cur := p.current(); cur != w {
			// A World of an ended Reinit epoch: finalize the current one.
			w.finalized.Store(true)
			return cur.Finalize()
		}
	}
	w.finOnce.Do(func() {
		var err error
		switch {
		case w.killed.Load():
			// A killed rank takes no part in the fence.
		case w.run != nil:
			err = w.run.fence(w)
		case w.client != nil:
			err = w.client.Finalize()
		}
		w.finalized.Store(true)
		if w.proc != nil {
			w.proc.finalized.Store(true)
		}
		w.release()
		if w.proc != nil {
			w.proc.close()
		}
		if err != nil {
			w.finErr = newErr(ErrOther, "MPI_Finalize", nil, NoPeer, "%v", err)
		}
	})
	return w.finErr
}

// release stops this World's goroutines and closes its engine and
// transport (not the launcher connection, which the process keeps across
// Reinit epochs).
func (w *World) release() {
	w.relOnce.Do(func() {
		close(w.stop)
		// The transport first: a send the outbox is blocked in (to a peer
		// whose epoch ended too, say) then fails at once.
		w.tr.Close()
		w.outbox.stop()
		w.eng.Close()
		w.bg.Wait()
	})
}

// Abort terminates every process of the job with exit code code
// (MPI_Abort). Under ftmpirun the launcher kills the job and exits with
// code; under Run the calling goroutine exits (runtime.Goexit), every
// other rank's pending and later calls fail, and Run returns an
// *AbortError. It does not return.
func (w *World) Abort(code int) {
	if w.run != nil {
		w.run.abortJob(w.rank, code)
		runtime.Goexit()
	}
	if w.client != nil {
		w.client.Abort(code, "MPI_Abort called")
	}
	os.Exit(code)
}

// Kill simulates the crash of this process (fault injection). Under Run,
// every other rank learns of the failure as if the process had died, this
// rank's pending calls fail, and the calling goroutine ends
// (runtime.Goexit); Run does not count it as an error. In a real process it
// sends SIGKILL to itself. It does not return.
func (w *World) Kill() {
	if w.run == nil {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if !w.killed.Swap(true) {
		w.run.fab.Kill(w.rank, errors.New("killed by fault injection"))
		w.run.dead(w)
		w.eng.Close()
	}
	runtime.Goexit()
}

// aborted returns the error for calls interrupted by a job teardown.
func (w *World) abortedErr(op string, c *Comm) error {
	if w.ended.Load() {
		return newErr(ErrProcFailed, op, c, NoPeer, "%s", w.endReason())
	}
	if w.finalized.Load() {
		return newErr(ErrOther, op, c, NoPeer, "called after MPI_Finalize")
	}
	return newErr(ErrOther, op, c, NoPeer, "job aborted")
}

// AbortError is returned by Run when a rank called Abort (or an error was
// fatal).
type AbortError struct {
	Rank, Code int
}

func (e *AbortError) Error() string {
	return fmt.Sprintf("mpi: rank %d aborted the job with code %d", e.Rank, e.Code)
}

// runState is the shared state of an in-process job started by Run.
type runState struct {
	n         int
	fab       *inproc.Fabric
	abortCh   chan struct{}
	abortOnce sync.Once
	abortErr  *AbortError

	mu      sync.Mutex
	arrived int
	allIn   chan struct{}
}

func (rs *runState) abortJob(rank, code int) {
	rs.abortOnce.Do(func() {
		rs.abortErr = &AbortError{Rank: rank, Code: code}
		close(rs.abortCh)
	})
}

// dead counts a killed rank as arrived at the Finalize fence.
func (rs *runState) dead(w *World) {
	rs.mu.Lock()
	rs.arrived++
	if rs.arrived == rs.n {
		close(rs.allIn)
	}
	rs.mu.Unlock()
}

// fence is the in-process Finalize barrier.
func (rs *runState) fence(w *World) error {
	rs.mu.Lock()
	rs.arrived++
	if rs.arrived == rs.n {
		close(rs.allIn)
	}
	rs.mu.Unlock()
	select {
	case <-rs.allIn:
		return nil
	case <-rs.abortCh:
		return errors.New("job aborted")
	}
}

// Run runs fn as n ranks, each a goroutine with its own World, connected by
// an in-memory transport with the same semantics as the socket transports.
// A rank whose fn returns nil is finalized automatically. If any rank
// returns an error, panics, or aborts, the job is torn down: every other
// rank's pending and later MPI calls fail, and Run returns the errors
// (an *AbortError for an abort).
func Run(n int, fn func(w *World) error) error {
	if n < 1 {
		return newErr(ErrArg, "mpi.Run", nil, NoPeer, "need at least 1 rank, got %d", n)
	}
	fab := inproc.NewFabric(n)
	cores := runtime.NumCPU() // read once: every rank of the job sees this one value
	rs := &runState{n: n, fab: fab, abortCh: make(chan struct{}), allIn: make(chan struct{})}
	worlds := make([]*World, n)
	for i := range worlds {
		eng := p2p.New(p2p.Config{Self: i})
		w := newWorld(i, n, eng, fab.Attach(i, eng), "inproc")
		w.hosts.oneHost(cores)
		w.run = rs
		w.abort = rs.abortCh
		w.abortOnce = &rs.abortOnce
		worlds[i] = w
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, w := range worlds {
		wg.Add(1)
		go func() {
			returned := false
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("rank %d panicked: %v", i, p)
					rs.abortJob(i, 1)
				} else if !returned && errs[i] == nil {
					// runtime.Goexit from Abort: the abort error is reported by Run.
				}
				w.Finalize()
				wg.Done()
			}()
			err := fn(w)
			returned = true
			if err != nil {
				errs[i] = fmt.Errorf("rank %d: %w", i, err)
				rs.abortJob(i, 1)
			}
		}()
	}
	wg.Wait()
	var all []error
	for _, e := range errs {
		if e != nil {
			all = append(all, e)
		}
	}
	if rs.abortErr != nil && len(all) == 0 {
		return rs.abortErr
	}
	return errors.Join(all...)
}
