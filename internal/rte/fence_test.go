package rte

import (
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ftmpi/ftmpi/internal/rte/ctl"
	"github.com/ftmpi/ftmpi/internal/transport"
)

// The Rank owns the Finalize fence without a head: its ctl.Finalize
// frames reach the fence through the Rank's table (nothing registered by
// the API), three processes entering it all leave it done, a malformed
// frame is reported to the Diag, and the delegate's Step sees the steps.
func TestRankFence(t *testing.T) {
	defer goleak.VerifyNone(t)
	const n = 3
	j := newTestJob(n)
	defer j.close()
	engs := j.engs
	ranks := make([]*Rank, n)
	var mu sync.Mutex
	steps := map[string]bool{}
	for i := range n {
		cfg := j.config(i)
		if i == 0 {
			cfg.Fence.Step = func(step string) bool { mu.Lock(); steps[step] = true; mu.Unlock(); return false }
		}
		ranks[i] = NewRank(cfg)
	}
	out := &syncBuf{wrote: make(chan struct{}, 16)}
	ranks[0].SetDiag(&Diag{Out: out})
	for i := range n {
		ranks[i].Start()
	}
	if err := engs[1].SendControl(0, transport.Header{Tag: int32(ctl.Finalize), B: 99}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.wrote:
		if !strings.Contains(out.String(), "unknown kind 99") {
			t.Fatalf("diagnostic %q does not name the malformed fence frame", out.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no diagnostic for a malformed fence frame")
	}
	abort := make(chan struct{})
	defer close(abort)
	var left sync.WaitGroup
	for i := range n {
		left.Add(1)
		go func() { defer left.Done(); ranks[i].Fence().Run(abort, nil) }()
	}
	ok := make(chan struct{})
	go func() { left.Wait(); close(ok) }()
	select {
	case <-ok:
	case <-time.After(30 * time.Second):
		t.Fatal("the fence of 3 processes did not end within 30s")
	}
	for i := range n {
		if !ranks[i].Fence().Done() {
			t.Errorf("process %d left the fence not done", i)
		}
		for p := range n {
			if p != i && !ranks[i].Fence().Finished(p) {
				t.Errorf("process %d does not know that %d entered Finalize", i, p)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !steps["enter"] {
		t.Errorf("the delegate's Step did not see the entry: %v", steps)
	}
}
