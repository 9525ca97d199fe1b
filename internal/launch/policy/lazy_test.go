package policy

import (
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ftmpi/ftmpi/internal/launch/ctlwire"
)

func lazyFacts(host string, inc int) Facts {
	return Facts{Lazy: true, Host: host, Cores: 2, Inc: inc}
}

// A lazy start: lazy ranks get the layout (its size independent of n) and
// the endpoints of their O(log n) near peers, an eager one every endpoint
// from the same fence; lookups answer the
// published endpoints, fail the gone ones, refuse what is out of range,
// and in a Reinit epoch answer from that epoch's table (an older epoch is
// superseded, nothing answered).
func TestLazyFenceLookupsAndEpochs(t *testing.T) {
	const n = 200
	m := newM(t, n, ModeReinit)
	m.EnableRespawn(1)
	ranks := make([]int, n)
	for r := range ranks {
		ranks[r] = r
	}
	connect(t, m, ranks...)
	enterReinit(t, m, ranks...)
	var acts []Action
	for r := range n {
		f := lazyFacts("h"+string(rune('0'+r/100)), 0)
		if r == 5 {
			f = Facts{} // this one reads every endpoint
		}
		acts = m.Step(Fence{Conn: Conn(r + 1), ID: 2, KV: map[string]string{ctlwire.EndpointKey(r): "ep" + string(rune('a'+r%26))}, Facts: f})
	}
	if len(acts) != n {
		t.Fatalf("fence completion: %d actions", len(acts))
	}
	for _, a := range acts {
		if a.Conn == 6 {
			if len(a.Msg.KV) != n {
				t.Fatalf("eager rank: %d keys", len(a.Msg.KV))
			}
			continue
		}
		v, ok := a.Msg.KV[ctlwire.LayoutKey]
		r := int(a.Conn) - 1
		nr := near(r, n, n)
		if !ok || len(v) > 100 || len(a.Msg.KV) > 1+len(nr) || len(nr) > 3*8+2 {
			t.Fatalf("rank %d's reply %v: want the layout, small, and at most the endpoints of %v", r, a.Msg.KV, nr)
		}
		for k := range a.Msg.KV {
			if k != ctlwire.LayoutKey && !slices.ContainsFunc(nr, func(q int) bool { return ctlwire.EndpointKey(q) == k }) {
				t.Fatalf("rank %d's reply has %s, not one of %v", r, k, nr)
			}
		}
		if _, ok := a.Msg.KV[ctlwire.EndpointKey((r+1)%n)]; !ok && r != 4 {
			t.Fatalf("rank %d's reply lacks its ring neighbour's endpoint", r)
		}
		l, err := ctlwire.ParseLayout(v, n)
		if err != nil || len(l.Hosts) != 2 || l.Host[0] != 0 || l.Host[150] != 1 || l.Host[5] != -1 || l.Hosts[1].Cores != 2 {
			t.Fatalf("layout %+v, %v (rank 5 gave no facts: no host)", l, err)
		}
	}
	look := func(conn Conn, epoch int, procs ...int) ctlwire.Msg {
		t.Helper()
		acts := m.Step(Endpoints{Conn: conn, ID: 7, Epoch: epoch, Procs: procs})
		if len(acts) != 1 || acts[0].Kind != Reply || acts[0].Conn != conn || acts[0].Msg.ID != 7 {
			t.Fatalf("lookup: %v", acts)
		}
		return acts[0].Msg
	}
	if r := look(1, 0, 1, 27); r.KV[ctlwire.EndpointKey(1)] != "epb" || r.KV[ctlwire.EndpointKey(27)] != "epb" || len(r.Failed) != 0 {
		t.Fatalf("lookup: %+v", r)
	}
	for _, bad := range [][]int{{n}, {-1}, nil} {
		if r := look(1, 0, bad...); r.Op != ctlwire.OpError || !strings.Contains(r.Error, "endpoints:") {
			t.Fatalf("lookup of %v: %+v, want an error", bad, r)
		}
	}
	// A failure: a new epoch (2 respawned); lookups of epoch 0 are
	// superseded.
	m.Step(Exited{Exit{Rank: 2, Pid: 102, Signal: syscall.SIGKILL}})
	if r := look(1, 0, 3); r.Epoch != 1 || r.KV != nil || r.Failed != nil {
		t.Fatalf("lookup of a superseded epoch: %+v", r)
	}
	for r := range n {
		if r == 2 {
			continue
		}
		acts = m.Step(Rejoin{Conn: Conn(r + 1), ID: 8, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, r): "e1"}, Facts: lazyFacts("h0", 0)})
	}
	m.Step(Hello{Conn: 999, ID: 1, Job: "job", Rank: 2, Incarnation: 1})
	acts = m.Step(Rejoin{Conn: 999, ID: 2, Epoch: 1, KV: map[string]string{ctlwire.EpochEndpointKey(1, 2): "new2"}, Facts: lazyFacts("h1", 1)})
	if len(acts) != n {
		t.Fatalf("rejoin completion: %d actions", len(acts))
	}
	for _, a := range acts {
		v := a.Msg.KV[ctlwire.LayoutKey] // rank 5's rejoin is lazy too this time
		if r := int(a.Conn) - 1; a.Conn != 999 && r != 1 && a.Msg.KV[ctlwire.EpochEndpointKey(1, (r+1)%n)] == "" {
			t.Fatalf("rank %d's rejoin answer lacks its ring neighbour's endpoint of epoch 1: %v", r, a.Msg.KV)
		}
		l, err := ctlwire.ParseLayout(v, n)
		if err != nil || l.Host[2] != 1 || l.Inc[2] != 1 || l.Host[3] != 0 {
			t.Fatalf("epoch 1 layout: %+v, %v", l, err)
		}
	}
	if r := look(1, 1, 2, 3); r.KV[ctlwire.EpochEndpointKey(1, 2)] != "new2" || r.KV[ctlwire.EpochEndpointKey(1, 3)] != "e1" || r.Epoch != 1 {
		t.Fatalf("epoch 1 lookup: %+v", r)
	}
	// A process gone is answered as failed.
	m.Step(Exited{Exit{Rank: 4, Pid: 104, Status: 1}})
	if r := look(1, 1, 4, 3); !slices.Equal(r.Failed, []int{4}) || len(r.KV) != 1 {
		t.Fatalf("lookup of a gone process: %+v", r)
	}
}

// The near peers: ring neighbours over the start set, r ± 2^k and
// r xor 2^k over the world; at most 3·ceil(log2 n) + 2, never r itself,
// none for a process outside the start set.
func TestNear(t *testing.T) {
	if got := near(0, 8, 8); !slices.Equal(got, []int{1, 7, 2, 6, 4}) {
		t.Fatalf("near(0, 8, 8) = %v", got)
	}
	if got := near(9, 8, 10); !slices.Equal(got, []int{0, 8}) {
		t.Fatalf("a spare's near = %v, want its ring neighbours", got)
	}
	if near(10, 8, 10) != nil || near(-1, 8, 10) != nil {
		t.Fatal("near of a process outside the start set")
	}
	for _, n := range []int{1, 2, 3, 1000, 100000} {
		log := 0
		for 1<<log < n {
			log++
		}
		for _, r := range []int{0, n / 3, n - 1} {
			got := near(r, n, n)
			if len(got) > 3*log+2 || slices.Contains(got, r) {
				t.Fatalf("near(%d, %d) = %d peers", r, n, len(got))
			}
		}
	}
}
