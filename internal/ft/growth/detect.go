package growth

import (
	"fmt"
	"slices"
	"time"

	"github.com/ftmpi/ftmpi/internal/ft/detector"
	"github.com/ftmpi/ftmpi/internal/ft/member"
	"github.com/ftmpi/ftmpi/internal/ft/rbcast"
)

// DetectCase is one detection and notification to measure: the Failed
// processes stop at the same moment, their observers in the heartbeat ring
// suspect them (the runtime declares every suspicion: fail-stop), and each
// suspecting rank broadcasts the failure notice over rbcast; every rank
// that learns of a failure, by suspicion or notice, re-links its ring and
// its broadcast overlay around it.
type DetectCase struct {
	N      int
	Failed []int
	// Period and Timeout of the detector (0: detector.DefaultPeriod and
	// DefaultTimeout, 100 ms and 1 s); Hop is the delay of every message
	// (0: 10 µs, about ftmpi's measured one-hop latency).
	Period, Timeout, Hop time.Duration
	// Unbatched sends every notice as its own message (before
	// 2026-11-29): f failures cost each rank f*(2*degree) messages. By
	// default every rank's notices of one time step (a hop) go as one
	// rbcast.Batch a neighbour: the suspicions of one period (the
	// detectors here tick in phase, so they coincide) make one wave, which
	// costs a rank at most one message a neighbour for each hop at which it
	// learnt something new (at most the diameter plus one), whatever f.
	Unbatched bool
	// ForwardEach is the runtime's forwarding (internal/rte/ftdrive): a
	// rank handles the notice messages it receives one at a time and
	// sends what each makes it send (the forwards and a re-link's
	// re-sends, one message a neighbour) at once, not merged with what
	// the other messages of the same hop make it send; its own
	// suspicions of one period still go together. Ignored with Unbatched.
	ForwardEach bool
}

const (
	dkTick = iota
	dkHeartbeat
	dkNotice
)

type detEvent struct {
	kind int8
	rank int32
	gen  uint32  // dkTick: the arming it belongs to
	from int32   // dkNotice: sender; dkHeartbeat: sender rank
	item int32   // dkNotice: the failed rank; dkHeartbeat: sender incarnation (0)
	hops int32   // dkNotice
	more []int32 // dkNotice, batched: the batch's other failed ranks
	mhop []int32 // and their hops
	ep   uint32  // dkHeartbeat: sender's epoch
}

// Detect runs the detectors of c.N ranks from time 0, stops the failed
// processes after five periods, and runs until every survivor knows of
// every failure. It checks that no live process was suspected and that
// every survivor learnt every failure, and returns the cost: Periods (from
// the stop until the last survivor knew every failure), DetectPeriods
// (until the last failure was suspected), Rounds (the largest hop count of
// a notice when delivered), the notices' messages, and heartbeats.
func Detect(c DetectCase) (Row, error) {
	n := c.N
	row := Row{Protocol: "detector+rbcast", Op: "detect+notify", N: n, Failures: len(c.Failed), Extra: map[string]int64{}}
	period, timeout, hop := c.Period, c.Timeout, c.Hop
	if period == 0 {
		period = detector.DefaultPeriod
	}
	if timeout == 0 {
		timeout = detector.DefaultTimeout
	}
	if hop == 0 {
		hop = 10 * time.Microsecond
	}
	stopAt := 5 * period
	dead := make([]bool, n)
	isFailed := make([]bool, n)
	for _, p := range c.Failed {
		isFailed[p] = true
	}
	dets := make([]*detector.Detector, n)
	rbs := make([]*rbcast.Node[int32], n)
	gen := make([]uint32, n)
	known := make([]int32, n) // failures each rank knows of
	cnt := newCounter(n)
	var heartbeats int64
	remaining := int64(n-len(c.Failed)) * int64(len(c.Failed))
	slot := func(t time.Duration) int { return int((t + hop - 1) / hop) }
	var cal [][]detEvent
	push := func(t time.Duration, e detEvent) {
		s := slot(t)
		for len(cal) <= s {
			cal = append(cal, nil)
		}
		cal[s] = append(cal[s], e)
	}
	var now time.Duration
	arm := func(r int) {
		if t, ok := dets[r].Next(); ok {
			gen[r]++
			push(max(t, now), detEvent{kind: dkTick, rank: int32(r), gen: gen[r]})
		}
	}
	sendHB := func(ms []detector.Msg) {
		for _, m := range ms {
			heartbeats++
			push(now+hop, detEvent{kind: dkHeartbeat, rank: int32(m.To.Rank), from: int32(m.From.Rank), ep: uint32(m.Epoch)})
		}
	}
	var pending []rbcast.Msg[int32] // batched: this slot's notices
	sendRB := func(ms []rbcast.Msg[int32]) {
		if !c.Unbatched {
			pending = append(pending, ms...)
			return
		}
		for _, m := range ms {
			cnt.send(m.From)
			row.Extra["notice-items"]++
			push(now+hop, detEvent{kind: dkNotice, rank: int32(m.To), from: int32(m.From), item: m.Item, hops: int32(m.Hops)})
		}
	}
	flush := func() {
		for _, b := range rbcast.Coalesce(pending) {
			if dead[b.From] {
				continue
			}
			cnt.send(b.From)
			row.Extra["notice-items"] += int64(len(b.Items))
			e := detEvent{kind: dkNotice, rank: int32(b.To), from: int32(b.From), item: b.Items[0], more: b.Items[1:], hops: int32(b.Hops[0])}
			for _, h := range b.Hops[1:] {
				e.mhop = append(e.mhop, int32(h))
			}
			push(now+hop, e)
		}
		pending = pending[:0]
	}
	// learn: rank r learnt that p failed (its own suspicion or a notice).
	learn := func(r int, p int32) {
		known[r]++
		remaining--
		id := member.ID{Rank: int(p)}
		sendHB(dets[r].Failed(now, id))
		sendRB(rbs[r].Failed(id))
	}
	for r := 0; r < n; r++ {
		cfg := detector.Config{N: n, Self: r, Period: period, Timeout: timeout}
		d, err := detector.New(cfg, 0)
		if err != nil {
			return row, err
		}
		b, err := rbcast.New[int32](rbcast.Config{N: n, Self: r})
		if err != nil {
			return row, err
		}
		dets[r], rbs[r] = d, b
		arm(r)
	}
	var lastSuspect, end time.Duration
	limit := stopAt + time.Duration(len(c.Failed)+20)*2*timeout
	stopped := len(c.Failed) == 0
	for s := 0; s < len(cal) && remaining > 0 || !stopped; s++ {
		now = time.Duration(s) * hop
		if !stopped && now >= stopAt {
			stopped = true
			for _, p := range c.Failed {
				dead[p] = true
			}
		}
		if now > limit {
			return row, fmt.Errorf("detect n=%d: %d (survivor, failure) pairs still unknown after %v", n, remaining, now)
		}
		if s >= len(cal) {
			continue
		}
		for k := 0; k < len(cal[s]); k++ {
			e := cal[s][k]
			r := int(e.rank)
			if dead[r] {
				continue
			}
			switch e.kind {
			case dkTick:
				if e.gen != gen[r] {
					continue
				}
				hb, sus := dets[r].Tick(now)
				sendHB(hb)
				for _, p := range sus {
					if !dead[p.Rank] {
						return row, fmt.Errorf("detect n=%d: live rank %d suspected by %d at %v", n, p.Rank, r, now)
					}
					lastSuspect = now
					out, fresh := rbs[r].Broadcast(int32(p.Rank))
					sendRB(out)
					if fresh {
						learn(r, int32(p.Rank))
					}
				}
				arm(r)
			case dkHeartbeat:
				dets[r].Step(now, detector.Msg{From: member.ID{Rank: int(e.from)}, To: member.ID{Rank: r}, Epoch: uint64(e.ep)})
			case dkNotice:
				cnt.deliver(r)
				items, hops := append([]int32{e.item}, e.more...), []int{int(e.hops)}
				for _, h := range e.mhop {
					hops = append(hops, int(h))
				}
				var held []rbcast.Msg[int32]
				if c.ForwardEach && !c.Unbatched {
					held, pending = pending, nil // this message's sends alone
				}
				out, del := rbs[r].StepBatch(rbcast.Batch[int32]{From: int(e.from), To: r, Items: items, Hops: hops})
				sendRB(out)
				for _, p := range del {
					row.Rounds = max(row.Rounds, hops[slices.Index(items, p)])
					learn(r, p)
				}
				if c.ForwardEach && !c.Unbatched {
					flush()
					pending = held
				}
				arm(r)
			}
			if remaining == 0 && end == 0 {
				end = now
			}
		}
		flush() // every rank's notices of this slot, one batch a neighbour
		cal[s] = nil
	}
	for r := 0; r < n; r++ {
		if !isFailed[r] && int(known[r]) != len(c.Failed) {
			return row, fmt.Errorf("detect n=%d: survivor %d knows %d of %d failures", n, r, known[r], len(c.Failed))
		}
	}
	if len(c.Failed) > 0 {
		row.Periods = float64(end-stopAt) / float64(period)
		row.DetectPeriods = float64(lastSuspect-stopAt) / float64(period)
		row.HeartbeatsPerPeriod = float64(heartbeats) / (float64(n) * float64(end) / float64(period))
	}
	cnt.fill(&row)
	return row, nil
}
