package ftdrive

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/ft/agree"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

type agreeRank struct {
	eng *p2p.Engine
	ag  *Agreements
	ep  *inproc.Endpoint

	mu   sync.Mutex
	lost []int // in the order the lost hook saw them

	frames atomic.Int64 // agreement frames received
}

func (r *agreeRank) known() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.lost...)
}

// agreeJob starts n processes over the in-process transport, each with the
// agreement driver of one communicator (context 9) over all of them.
func agreeJob(t *testing.T, n int) ([]*agreeRank, *inproc.Fabric) {
	t.Helper()
	fab := inproc.NewFabric(n)
	procs := IdentityProcs(n)
	rs := make([]*agreeRank, n)
	for i := range rs {
		r := &agreeRank{eng: p2p.New(p2p.Config{Self: i})}
		r.ep = fab.Attach(i, r.eng)
		r.eng.SetTransport(r.ep)
		eng := r.eng
		r.ag = NewAgreements(NewOverlay(eng, 9, i, procs), r.known)
		var tb ctl.Table
		tb.MustRegister(ctl.Agree, func(from int, h transport.Header, p []byte) {
			if h.Ctx == 9 {
				r.frames.Add(1)
				r.ag.Step(from, h, p)
			}
		})
		eng.SetControlHandler(func(from int, h transport.Header, p []byte) { _ = tb.Dispatch(from, h, p) })
		eng.SubscribeLost(func(peer int, _ error) {
			r.mu.Lock()
			r.lost = append(r.lost, peer)
			r.mu.Unlock()
			r.ag.Lost(peer)
		})
		rs[i] = r
	}
	t.Cleanup(func() {
		for _, r := range rs {
			r.ep.Close()
		}
		for _, r := range rs {
			r.eng.Close()
		}
		goleak.VerifyNone(t)
	})
	return rs, fab
}

type decision struct {
	val     agree.Value
	contrib agree.Set
	ok      bool
}

// run runs one agreement at every process of who with flags[i], and
// returns the decisions.
func run(rs []*agreeRank, who []int, flags []uint64) map[int]decision {
	var mu sync.Mutex
	out := map[int]decision{}
	var wg sync.WaitGroup
	// A hang is a failure: past the deadline Await gives up (ok false).
	stop := make(chan struct{})
	deadline := time.AfterFunc(30*time.Second, func() { close(stop) })
	defer deadline.Stop()
	for _, i := range who {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rs[i]
			seq := r.ag.Begin()
			val, contrib, ok := r.ag.Await(seq, agree.Value{Flags: flags[i]}, r.known, nil, stop)
			mu.Lock()
			out[i] = decision{val, contrib, ok}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

func TestAgreementsDecideTheAND(t *testing.T) {
	rs, _ := agreeJob(t, 5)
	all := []int{0, 1, 2, 3, 4}
	for round, flags := range [][]uint64{{7, 7, 7, 7, 7}, {7, 5, 7, 6, 7}} {
		want := uint64(7)
		for _, f := range flags {
			want &= f
		}
		for i, d := range run(rs, all, flags) {
			if !d.ok || d.val.Flags != want {
				t.Fatalf("round %d, process %d: decided %+v, want flags %d", round, i, d, want)
			}
		}
	}
}

// A process that fails before contributing: the others still decide, all
// alike, without its contribution.
func TestAgreementsSurviveAFailure(t *testing.T) {
	rs, fab := agreeJob(t, 5)
	const victim = 2
	fab.Kill(victim, errors.New("killed"))
	for i, r := range rs {
		if i != victim {
			r.eng.FailPeer(victim, errors.New("killed"))
		}
	}
	out := run(rs, []int{0, 1, 3, 4}, []uint64{3, 3, 0, 1, 3})
	first := out[0]
	for i, d := range out {
		if !d.ok || d.val.Flags != 1 || d.contrib.Has(victim) || !d.contrib.Equal(first.contrib) {
			t.Fatalf("process %d decided %+v (process 0: %+v)", i, d, first)
		}
	}
}

// A failure-free agreement costs 2(n-1) frames with Agreements.EarlyReturn
// (one pass up the flat tree and one down, each non-root process
// receiving one) and 4(n-1) with the uniform four-phase protocol, the
// default (each non-root process receiving the proposal and the decision).
// Checked over several agreements in a row, so that no late frame of one
// is counted in the next.
func TestAgreementsFailureFreeFrames(t *testing.T) {
	for _, early := range []bool{true, false} {
		t.Run(fmt.Sprintf("early=%v", early), func(t *testing.T) {
			const n = 6
			rs, _ := agreeJob(t, n)
			if rs[0].ag.EarlyReturn != AgreeEarlyReturn {
				t.Fatalf("a new driver's EarlyReturn is %v, want the default %v", rs[0].ag.EarlyReturn, AgreeEarlyReturn)
			}
			for _, r := range rs {
				r.ag.EarlyReturn = early
			}
			perRank := int64(2) // proposal and decision
			if early {
				perRank = 1
			}
			all := []int{0, 1, 2, 3, 4, 5}
			flags := []uint64{3, 3, 1, 3, 3, 3}
			for round := int64(1); round <= 3; round++ {
				for i, d := range run(rs, all, flags) {
					if !d.ok || d.val.Flags != 1 || !d.contrib.Equal(agree.SetOf(all...)) {
						t.Fatalf("round %d, process %d decided %+v", round, i, d)
					}
				}
				var total int64
				for i, r := range rs {
					got := r.frames.Load()
					total += got
					if i != 0 && got != perRank*round {
						t.Errorf("round %d: process %d received %d agreement frames in all, want %d per agreement", round, i, got, perRank)
					}
				}
				if want := 2 * perRank * (n - 1) * round; total != want {
					t.Fatalf("round %d: %d agreement frames in all, want %d(n-1) per agreement = %d", round, total, 2*perRank, want)
				}
			}
		})
	}
}
