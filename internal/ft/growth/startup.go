package growth

import (
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
)

// StartupFence measures ftmpirun's start-up exchange through the launcher
// head's policy.Machine: n ranks say hello, then enter the bootstrap fence
// in rank order, each with its endpoint; the head answers each with every
// endpoint once all are in. Rounds is 2 (the fence request and its
// answer); the head is process N. Extra: the endpoint entries the answers
// carry (n^2), and the wall time the head's machine spent in the hellos
// and in the fence.
func StartupFence(n int) (Row, error) {
	row := Row{Protocol: "policy", Op: "startup-fence", N: n}
	m, err := policy.New(policy.Config{Job: "growth", Size: n, Mode: policy.ModeContinue})
	if err != nil {
		return row, err
	}
	head := n
	cnt := newCounter(n + 1)
	var kvEntries, answers int64
	var bad error
	run := func(ev policy.Event) {
		for _, a := range m.Step(ev) {
			if a.Kind != policy.Reply {
				continue
			}
			if a.Msg.Error != "" && bad == nil {
				bad = fmt.Errorf("policy n=%d: error reply %q", n, a.Msg.Error)
			}
			if a.Msg.Op == ctlwire.OpFence {
				cnt.send(head)
				cnt.deliver(int(a.Conn) - 1)
				answers++
				kvEntries += int64(len(a.Msg.KV))
			}
		}
	}
	t0 := time.Now()
	for r := 0; r < n; r++ {
		run(policy.Hello{Conn: policy.Conn(r + 1), ID: 1, Job: "growth", Rank: r, Pid: 1000 + r})
	}
	setup := time.Since(t0)
	t0 = time.Now()
	for r := 0; r < n; r++ {
		cnt.send(r)
		cnt.deliver(head)
		run(policy.Fence{Conn: policy.Conn(r + 1), ID: 2, KV: map[string]string{ctlwire.EndpointKey(r): "ep"}})
	}
	elapsed := time.Since(t0)
	if bad != nil {
		return row, bad
	}
	if answers != int64(n) || kvEntries != int64(n)*int64(n) {
		return row, fmt.Errorf("policy n=%d: %d fence answers carrying %d endpoints, want %d and %d", n, answers, kvEntries, n, n*n)
	}
	row.Rounds = 2
	cnt.fill(&row)
	row.Extra = map[string]int64{"kv_entries_sent": kvEntries, "max_per_rank": cnt.maxOver(0, n), "head_msgs": cnt.maxOver(n, n+1),
		"hello_ns": setup.Nanoseconds(), "fence_ns": elapsed.Nanoseconds()}
	return row, nil
}
