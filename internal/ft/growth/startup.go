package growth

import (
	"fmt"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
)

// StartupFence measures ftmpirun's eager start-up exchange
// (FTMPI_ENDPOINTS=all) through the launcher head's policy.Machine: n
// ranks say hello, then enter the bootstrap fence in rank order, each with
// its endpoint; the head answers each with every endpoint once all are in.
// Rounds is 2 (the fence request and its answer); the head is process N.
// Extra: the endpoint entries the answers carry (n^2), and the wall time
// the head's machine spent in the hellos and in the fence.
func StartupFence(n int) (Row, error) { return startupFence(n, false) }

// StartupFenceLazy is StartupFence for the default, lazy start
// (ctlwire.FenceLayout, issue 24 item 2): each rank enters the fence with
// its facts (64 ranks a host) and is answered with the layout and the
// endpoints of the O(log n) peers it dials first; the others it looks up
// when it first dials them, which depends on the program and is not
// counted here. Extra also has the layout's bytes in one answer.
func StartupFenceLazy(n int) (Row, error) { return startupFence(n, true) }

// maxNear bounds the endpoints a lazy fence's answer carries, as
// policy's near does: ring neighbours and r ± 2^k, r xor 2^k.
func maxNear(n int) int64 {
	k := int64(0)
	for v := 1; v < n; v <<= 1 {
		k++
	}
	return 3*k + 2
}

func startupFence(n int, lazy bool) (Row, error) {
	row := Row{Protocol: "policy", Op: "startup-fence", N: n}
	if lazy {
		row.Op = "startup-fence-lazy"
	}
	m, err := policy.New(policy.Config{Job: "growth", Size: n, Mode: policy.ModeContinue})
	if err != nil {
		return row, err
	}
	head := n
	cnt := newCounter(n + 1)
	var kvEntries, answers, maxEntries, layoutBytes int64
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
				e := int64(len(a.Msg.KV))
				if l, ok := a.Msg.KV[ctlwire.LayoutKey]; ok {
					e--
					layoutBytes = max(layoutBytes, int64(len(l)))
				}
				kvEntries += e
				maxEntries = max(maxEntries, e)
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
		f := policy.Fence{Conn: policy.Conn(r + 1), ID: 2, KV: map[string]string{ctlwire.EndpointKey(r): "ep"}}
		if lazy {
			f.Facts = policy.Facts{Lazy: true, Host: fmt.Sprintf("host%d", r/64), Cores: 64}
		}
		run(f)
	}
	elapsed := time.Since(t0)
	if bad != nil {
		return row, bad
	}
	switch {
	case answers != int64(n):
		return row, fmt.Errorf("policy n=%d: %d fence answers, want %d", n, answers, n)
	case !lazy && kvEntries != int64(n)*int64(n):
		return row, fmt.Errorf("policy n=%d: the fence's answers carry %d endpoints, want %d", n, kvEntries, n*n)
	case lazy && (layoutBytes == 0 || maxEntries > maxNear(n)):
		return row, fmt.Errorf("policy n=%d: a lazy answer carries %d endpoints (want at most %d) and a layout of %d bytes", n, maxEntries, maxNear(n), layoutBytes)
	}
	row.Rounds = 2
	cnt.fill(&row)
	row.Extra = map[string]int64{"kv_entries_sent": kvEntries, "max_entries_per_answer": maxEntries, "layout_bytes": layoutBytes,
		"max_per_rank": cnt.maxOver(0, n), "head_msgs": cnt.maxOver(n, n+1),
		"hello_ns": setup.Nanoseconds(), "fence_ns": elapsed.Nanoseconds()}
	return row, nil
}
