package mpi

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// Control frame types of the failure detector and the failure-notice
// broadcast (see ft.go for the others).
const (
	ctlHeartbeat  = 16 + iota // A = epoch, B = sender incarnation, Seq = receiver incarnation
	ctlFailNotice             // A = failed rank, B = its incarnation, Seq = hops
)

// Environment variables tuning the heartbeat detector (ftmpirun sets them
// from --hb-period and --hb-timeout).
const (
	EnvHBPeriod  = "FTMPI_HB_PERIOD"  // heartbeat period, a Go duration (default 100ms)
	EnvHBTimeout = "FTMPI_HB_TIMEOUT" // suspicion timeout (default 1s); "off" disables the detector
)

// detection runs the heartbeat ring (internal/ft/detector) and the
// reliable broadcast of failure notices (internal/ft/rbcast) of a process
// started by ftmpirun. Both are pure state machines; this is their I/O and
// clock. A suspicion is turned into a real failure (fail-stop): the
// launcher is asked to kill the suspect, and the notice is broadcast to
// every rank over a binomial graph.
type detection struct {
	w     *World
	start time.Time
	wake  chan struct{}

	mu sync.Mutex
	d  *detector.Detector
	rb *rbcast.Node[rbcast.ID]
}

func detectorConfig(rank, size, inc int) (detector.Config, bool, error) {
	cfg := detector.DefaultConfig()
	cfg.N, cfg.Self, cfg.Incarnation = size, rank, inc
	if s := os.Getenv(EnvHBTimeout); s != "" {
		if s == "off" {
			return cfg, false, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return cfg, false, fmt.Errorf("%s=%q: %v", EnvHBTimeout, s, err)
		}
		cfg.Timeout = d
	}
	if s := os.Getenv(EnvHBPeriod); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return cfg, false, fmt.Errorf("%s=%q: %v", EnvHBPeriod, s, err)
		}
		cfg.Period = d
	}
	return cfg, true, cfg.Validate()
}

// startDetection starts the detector of a launched process (after the
// bootstrap exchange, so the start-up grace is one timeout).
func (w *World) startDetection(cfg detector.Config) error {
	dt := &detection{w: w, start: time.Now(), wake: make(chan struct{}, 1)}
	d, err := detector.New(cfg, 0)
	if err != nil {
		return err
	}
	rb, err := rbcast.New[rbcast.ID](rbcast.Config{N: w.size, Self: w.rank, Incarnation: cfg.Incarnation})
	if err != nil {
		return err
	}
	dt.d, dt.rb = d, rb
	// Processes outside CommWorld (a spawned world's parents) are not in
	// the ring: the launcher reports their failures.
	in := make([]bool, w.size)
	for _, p := range w.world.memberWorldRanks() {
		in[p] = true
	}
	for p, ok := range in {
		if !ok {
			d.Failed(0, detector.ID{Rank: p})
			rb.Failed(rbcast.ID{Rank: p})
		}
	}
	// Failures already known (the launcher may have reported some).
	for _, p := range w.failedOrder() {
		d.Failed(0, detector.ID{Rank: p})
		rb.Failed(rbcast.ID{Rank: p})
	}
	w.det.Store(dt)
	w.bg.Add(1)
	go dt.loop()
	if w.epoch == 0 {
		go dt.warmOverlay(in, cfg.Incarnation)
	}
	return nil
}

// warmOverlay opens the connections of the notices' overlay in the
// background: one (ignored) heartbeat to each of this rank's binomial-graph
// neighbours above it (those below dial this rank, so that no pair dials
// both ways at once). A failure's notices, and a revocation of CommWorld,
// travel on that graph; without this, their first sends had to set up
// connections (a connect and a handshake, waking both ranks) right when a
// failure keeps every processor busy: at 16 ranks on 2 cores, dialling took
// about a third of the ranks' processor time in the milliseconds after a
// kill. Only in the first epoch: a Reinit epoch can be superseded while its
// connections are being set up. It is not waited for (a dial to a stopped
// process can take the connect timeout); a send after the World ended
// fails at once.
func (dt *detection) warmOverlay(in []bool, inc int) {
	w := dt.w
	for _, q := range rbcast.Neighbors(w.size, w.rank) {
		select {
		case <-w.stop:
			return
		default:
		}
		if q <= w.rank || !in[q] || w.eng.IsLost(q) {
			continue
		}
		peerInc := 0
		if q < len(w.peerInc) {
			peerInc = w.peerInc[q]
		}
		// Epoch 0: a heartbeat that claims nothing (a receiver whose ring
		// predecessor this rank is takes it as a sign of life, which it is).
		h := transport.Header{Tag: ctlHeartbeat, A: 0, B: uint64(inc), Seq: uint64(peerInc)}
		_ = w.eng.SendControl(q, h, nil)
	}
}

func (dt *detection) now() time.Duration { return time.Since(dt.start) }

func (dt *detection) loop() {
	w := dt.w
	defer w.bg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-dt.wake:
		case <-w.stop:
			return
		}
		dt.mu.Lock()
		msgs, suspects := dt.d.Tick(dt.now())
		next, ok := dt.d.Next()
		dt.mu.Unlock()
		dt.sendHeartbeats(msgs)
		for _, s := range suspects {
			w.declareFailed(s.Rank, s.Inc, fmt.Sprintf("no heartbeat for %v", dt.d.Config().Timeout))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if ok {
			timer.Reset(max(0, next-dt.now()))
		} else {
			timer.Reset(time.Hour)
		}
	}
}

func (dt *detection) sendHeartbeats(msgs []detector.Msg) {
	for _, m := range msgs {
		h := transport.Header{Tag: ctlHeartbeat, A: m.Epoch, B: uint64(m.From.Inc), Seq: uint64(m.To.Inc)}
		_ = dt.w.eng.SendControl(m.To.Rank, h, nil)
	}
}

func (dt *detection) onHeartbeat(from int, h transport.Header) {
	m := detector.Msg{From: detector.ID{Rank: from, Inc: int(h.B)}, To: detector.ID{Rank: dt.w.rank, Inc: int(h.Seq)}, Epoch: h.A}
	dt.mu.Lock()
	dt.d.Step(dt.now(), m)
	dt.mu.Unlock()
}

// failed tells the detector and the broadcast that peer failed (from any
// source) and returns after queueing what they need to send.
func (dt *detection) failed(peer, inc int) {
	dt.mu.Lock()
	hb := dt.d.Failed(dt.now(), detector.ID{Rank: peer, Inc: inc})
	notices := dt.rb.Failed(rbcast.ID{Rank: peer, Inc: inc})
	if dt.w.client != nil {
		// Under a launcher every failure reaches every rank from the
		// launcher too (it confirms every suspicion and sees every
		// death), so a failure learnt here some other way than from the
		// broadcast counts as delivered without being forwarded: the
		// notices of the rank that suspected it then stop at the ranks
		// that already know, instead of flooding all of them (about
		// 2n log2 n frames, each waking a rank, when the CPUs are most
		// needed). A failure learnt from the broadcast or broadcast here
		// was delivered already: this is a no-op for it.
		dt.rb.Broadcast(rbcast.ID{Rank: peer, Inc: inc})
	}
	dt.mu.Unlock()
	dt.sendHeartbeats(hb)
	dt.sendNotices(notices)
	select {
	case dt.wake <- struct{}{}:
	default:
	}
}

func (dt *detection) sendNotices(msgs []rbcast.Msg[rbcast.ID]) {
	for _, m := range msgs {
		h := transport.Header{Tag: ctlFailNotice, A: uint64(m.Item.Rank), B: uint64(m.Item.Inc), Seq: uint64(m.Hops)}
		_ = dt.w.eng.SendControl(m.To, h, nil)
	}
}

func (dt *detection) onNotice(from int, h transport.Header) {
	item := rbcast.ID{Rank: int(h.A), Inc: int(h.B)}
	dt.mu.Lock()
	out, delivered := dt.rb.Step(rbcast.Msg[rbcast.ID]{From: from, To: dt.w.rank, Item: item, Hops: int(h.Seq)})
	dt.mu.Unlock()
	w := dt.w
	dt.sendNotices(out)
	for _, id := range delivered {
		w.eng.FailPeer(id.Rank, fmt.Errorf("rank %d failed (notice from rank %d)", id.Rank, from))
	}
}

// declareFailed makes a suspicion a failure: the launcher is asked to kill
// the suspect (fail-stop: a wrongly suspected process cannot come back);
// once it accepted, every rank is told by a reliable broadcast over a
// binomial graph (the launcher tells them too) and this process's
// operations with the suspect fail. The launcher refuses when it sees the
// process running or sleeping (alive but starved of CPU on an
// oversubscribed host): then nothing is declared, and the launcher still
// sees the process's real death if it comes.
func (w *World) declareFailed(rank, inc int, reason string) {
	if w.client == nil {
		w.failAndBroadcast(rank, inc, reason)
		return
	}
	w.bg.Add(1)
	go func() {
		defer w.bg.Done()
		if inc == 0 && rank < len(w.peerInc) {
			inc = w.peerInc[rank]
		}
		if err := w.client.SuspectIncarnation(rank, inc, reason); err != nil {
			fmt.Fprintf(os.Stderr, "ftmpi: rank %d: suspicion of rank %d not confirmed: %v\n", w.rank, rank, err)
			return
		}
		w.failAndBroadcast(rank, inc, reason)
	}()
}

func (w *World) failAndBroadcast(rank, inc int, reason string) {
	if dt := w.det.Load(); dt != nil {
		dt.mu.Lock()
		out, _ := dt.rb.Broadcast(rbcast.ID{Rank: rank, Inc: inc})
		dt.mu.Unlock()
		dt.sendNotices(out)
	}
	w.eng.FailPeer(rank, fmt.Errorf("rank %d declared failed: %s", rank, reason))
}
