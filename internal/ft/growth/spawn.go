package growth

import (
	"encoding/json"
	"fmt"
	"syscall"
	"time"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
	"github.com/ftmpi/ftmpi/internal/launch/policy"
)

// SpawnLauncher measures the launcher's half of spawning k replacements
// after a failure (MPI_Comm_spawn from the shrunk communicator, under
// ftmpirun --on-failure continue): the head's real policy.Machine, with n
// ranks started (hello and the lazy start-up fence: not counted), learns
// that rank n/2 died and tells the survivors; then every survivor sends its
// SpawnRequest (as internal/rte/spawn.go does: the parents' process ids,
// the lowest one the root with the command and k), the head starts the k
// children, each child says hello and enters its own start-up fence with
// its endpoint, and once all have the head answers every parent with the
// children's endpoints. The head is process n+k; the children are n..n+k-1.
// Rounds is the critical path counted by hand, 5: the last request, the
// child's hello and its answer, its fence, the answers (to the parents and
// the child). Not modelled: the parents' and children's connections and
// the intercommunicator's set-up (peer to peer, after the answer), and the
// launcher's processes (fork, exec). Extra: the bytes of the requests the
// head receives (only the root's lists the parents: n ids), the parent list
// a child is started with, the survivors' failure notices before the
// spawn, and the head's machine time.
func SpawnLauncher(n, k int) (Row, error) {
	row := Row{Protocol: "policy", Op: "spawn-replacement", N: n, Failures: 1}
	if n < 2 || k < 1 {
		return row, fmt.Errorf("spawn n=%d k=%d: need two ranks and a child", n, k)
	}
	m, err := policy.New(policy.Config{Job: "growth", Size: n, Mode: policy.ModeContinue})
	if err != nil {
		return row, err
	}
	m.EnableSpawn()
	head := n + k
	cnt := newCounter(n + k + 1)
	procOf := map[policy.Conn]int{}
	var bad error
	var started *policy.ChildrenStart
	var spawnReplies, notices int64
	childKV := map[int]bool{}
	run := func(ev policy.Event) {
		for _, a := range m.Step(ev) {
			switch a.Kind {
			case policy.Reply:
				if a.Msg.Error != "" && bad == nil {
					bad = fmt.Errorf("spawn n=%d: error reply %q", n, a.Msg.Error)
				}
				cnt.send(head)
				cnt.deliver(procOf[a.Conn])
				if a.Msg.Op == ctlwire.OpSpawn {
					spawnReplies++
					for i := range k {
						if a.Msg.KV[fmt.Sprint(i)] == "" && bad == nil {
							bad = fmt.Errorf("spawn n=%d: a parent's answer lacks child %d's endpoint (%v)", n, i, a.Msg.KV)
						}
					}
				}
			case policy.Notify:
				for _, c := range a.To {
					cnt.send(head)
					cnt.deliver(procOf[c])
					notices++
				}
			case policy.StartChildren:
				started = a.Start
			case policy.TearDown, policy.Done:
				if bad == nil {
					bad = fmt.Errorf("spawn n=%d: the job ended (%v)", n, a)
				}
			}
		}
	}
	for r := range n {
		c := policy.Conn(r + 1)
		procOf[c] = r
		run(policy.Hello{Conn: c, ID: 1, Job: "growth", Rank: r, Pid: 1000 + r})
	}
	for r := range n {
		run(policy.Fence{Conn: policy.Conn(r + 1), ID: 2, KV: map[string]string{ctlwire.EndpointKey(r): "ep"},
			Facts: policy.Facts{Lazy: true, Host: fmt.Sprintf("host%d", r/64), Cores: 64}})
	}
	victim := n / 2
	run(policy.Exited{Exit: policy.Exit{Rank: victim, Pid: 1000 + victim, Signal: syscall.SIGKILL}})
	run(policy.Closed{Conn: policy.Conn(victim + 1)})
	if bad != nil {
		return row, bad
	}
	noticeMsgs := notices
	cnt = newCounter(n + k + 1) // the start-up and the failure's notices are not the spawn
	var parents []int
	for r := range n {
		if r != victim {
			parents = append(parents, r)
		}
	}
	t0 := time.Now()
	var reqBytes, maxReq int64
	for _, r := range parents {
		req := ctlwire.SpawnRequest{Key: "growth-spawn-1", Root: r == parents[0], Pairs: []int{8, 9}}
		if req.Root { // as the runtime sends them: only the root lists the parents
			req.Procs, req.MaxProcs = parents, k
		} else {
			req.RootProc = parents[0]
		}
		b, err := json.Marshal(req)
		if err != nil {
			return row, err
		}
		reqBytes += int64(len(b))
		maxReq = max(maxReq, int64(len(b)))
		cnt.send(r)
		cnt.deliver(head)
		run(policy.Spawn{Conn: policy.Conn(r + 1), ID: 3, Request: string(b)})
	}
	if started == nil || started.K != k || started.Base != n {
		return row, fmt.Errorf("spawn n=%d: the head started %+v, want %d children from process %d (%v)", n, started, k, n, bad)
	}
	for i := range k {
		p := started.Base + i
		c := policy.Conn(n + 1 + i)
		procOf[c] = p
		cnt.send(p)
		cnt.deliver(head)
		run(policy.Hello{Conn: c, ID: 1, Job: "growth", Rank: p, Pid: 5000000 + p})
	}
	for i := range k {
		p := started.Base + i
		cnt.send(p)
		cnt.deliver(head)
		childKV[p] = true
		run(policy.Fence{Conn: policy.Conn(n + 1 + i), ID: 2, KV: map[string]string{ctlwire.EndpointKey(p): fmt.Sprint("ep", p)},
			Facts: policy.Facts{Lazy: true, Host: "host0", Cores: 64}})
	}
	elapsed := time.Since(t0)
	if bad != nil {
		return row, bad
	}
	if spawnReplies != int64(len(parents)) {
		return row, fmt.Errorf("spawn n=%d: %d parents answered, want %d", n, spawnReplies, len(parents))
	}
	row.Rounds = 5
	cnt.fill(&row)
	row.Extra = map[string]int64{"head_msgs": cnt.maxOver(head, head+1), "max_per_rank": cnt.maxOver(0, n),
		"max_per_child": cnt.maxOver(n, n+k), "request_bytes_at_head": reqBytes, "max_request_bytes": maxReq,
		"child_parent_bytes": int64(len(started.Parent)), "failure_notices_before": noticeMsgs, "spawn_ns": elapsed.Nanoseconds()}
	return row, nil
}
