package rte

import (
	"sync"

	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/transport/inproc"
)

// testJob is n engines attached to one in-process fabric, with the stop
// channel and wait group their Ranks share (the Rank tests' fixture).
type testJob struct {
	engs []*p2p.Engine
	eps  []*inproc.Endpoint
	stop chan struct{}
	wg   sync.WaitGroup
}

func newTestJob(n int) *testJob {
	fab := inproc.NewFabric(n)
	j := &testJob{engs: make([]*p2p.Engine, n), eps: make([]*inproc.Endpoint, n), stop: make(chan struct{})}
	for i := range n {
		j.engs[i] = p2p.New(p2p.Config{Self: i})
		j.eps[i] = fab.Attach(i, j.engs[i])
	}
	return j
}

// config is the RankConfig of process i of the job.
func (j *testJob) config(i int) RankConfig {
	return RankConfig{Proc: i, Universe: len(j.engs), Eng: j.engs[i], Tr: j.eps[i], Stop: j.stop, WG: &j.wg}
}

// close stops the Ranks' goroutines and closes every endpoint and engine
// (deferred after goleak.VerifyNone, so it runs first).
func (j *testJob) close() {
	close(j.stop)
	j.wg.Wait()
	for i := range j.engs {
		j.eps[i].Close()
		j.engs[i].Close()
	}
}
