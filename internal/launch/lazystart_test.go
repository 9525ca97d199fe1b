package launch

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ftmpi/ftmpi/internal/boot"
	"github.com/ftmpi/ftmpi/internal/launch/hostagent"
	"github.com/ftmpi/ftmpi/internal/p2p"
	"github.com/ftmpi/ftmpi/internal/rte"
	"github.com/ftmpi/ftmpi/internal/rte/dpm"
)

// countingProxy forwards control connections to the head at addr and
// counts, per connection, the bytes the head sends to the rank.
type countingProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	recv  []*atomic.Int64
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCountingProxy(t *testing.T, addr string) *countingProxy {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "proxy"))
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h, err := net.Dial("unix", addr)
			if err != nil {
				c.Close()
				continue
			}
			n := new(atomic.Int64)
			p.mu.Lock()
			p.recv = append(p.recv, n)
			p.conns = append(p.conns, c, h)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(h, c); h.Close() }()
			go func() {
				defer p.wg.Done()
				buf := make([]byte, 32<<10)
				for {
					k, err := h.Read(buf)
					n.Add(int64(k)) // counted before the rank can read it
					if k > 0 {
						if _, werr := c.Write(buf[:k]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				c.Close()
			}()
		}
	}()
	return p
}

func (p *countingProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// lazyJob is a head and n ranks' control clients that published an
// endpoint each ("unix" address /peer/<rank>) through the start-up fence
// as the runtime does (boot.Client.Lazy chooses ExchangeLazy or
// ExchangeTable).
type lazyJob struct {
	h       *head
	proxy   *countingProxy
	clients []*boot.Client
	tables  []*boot.PeerTable
	layouts [][]boot.Endpoint
	errs    []error
}

func startLazyJob(t *testing.T, n int) *lazyJob {
	t.Helper()
	h := newHead("job", n, OnFailureContinue, &output{stdout: io.Discard, stderr: io.Discard}, false)
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	j := &lazyJob{h: h, proxy: newCountingProxy(t, ln.Addr().String()), clients: make([]*boot.Client, n),
		tables: make([]*boot.PeerTable, n), layouts: make([][]boot.Endpoint, n), errs: make([]error, n)}
	t.Cleanup(func() {
		for _, c := range j.clients {
			if c != nil {
				c.Close()
			}
		}
		j.proxy.close()
		h.close()
	})
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := "h" + strconv.Itoa(r%2) // two hosts, round-robin
			c, err := boot.Connect(boot.Info{Job: "job", Rank: r, Size: n, Control: "unix:" + j.proxy.ln.Addr().String(), Host: host, HostCores: 2})
			if err != nil {
				j.errs[r] = err
				return
			}
			j.clients[r] = c
			ep := boot.Endpoint{Host: host, Addrs: map[string]string{"unix": "/peer/" + strconv.Itoa(r)}}
			lazy, err := c.Lazy()
			if err != nil {
				j.errs[r] = err
				return
			}
			if lazy {
				j.tables[r], j.layouts[r], j.errs[r] = c.ExchangeLazy(ep)
			} else {
				j.tables[r], j.errs[r] = c.ExchangeTable(ep)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the start-up fence did not complete within 60s")
	}
	for r, err := range j.errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return j
}

// What each rank receives at start-up (the hello's and the fence's
// answers) grows as log n, not n: the layout and the endpoints of the
// O(log n) peers it dials first, not every endpoint (FTMPI_ENDPOINTS=all,
// the eager table, is checked to grow as n, so the count is a real one).
// Another peer's endpoint is asked of the head on first use, one lookup a
// peer, and is the one the peer published.
func TestLazyStartBytesPerRank(t *testing.T) {
	for _, n := range []int{16, 256} {
		t.Setenv(boot.EnvEndpoints, "")
		j := startLazyJob(t, n)
		var most int64
		for _, c := range j.proxy.recv {
			most = max(most, c.Load())
		}
		log2 := 0
		for 1<<log2 < n {
			log2++
		}
		if bound := int64(250 + 60*(3*log2+2)); most > bound {
			t.Errorf("n %d: a rank received %d bytes at start-up, want at most %d (the layout and O(log n) endpoints)", n, most, bound)
		}
		for r, l := range j.layouts {
			if len(l) != n || l[(r+1)%n].Host != "h"+strconv.Itoa((r+1)%2) || l[r].Cores != 2 || j.tables[r].Fetches() != 0 {
				t.Fatalf("n %d rank %d: layout %v, %d endpoints read at start", n, r, l[:min(4, n)], j.tables[r].Fetches())
			}
		}
		for r, tb := range j.tables {
			for _, p := range []int{(r + 1) % n, (r + n - 1) % n} {
				ep, err := tb.Get(p)
				if err != nil || ep.Addrs["unix"] != "/peer/"+strconv.Itoa(p) || ep.Rank != p || ep.Host != "h"+strconv.Itoa(p%2) {
					t.Fatalf("n %d: rank %d's lookup of %d: %+v, %v", n, r, p, ep, err)
				}
			}
			if tb.Fetches() != 2 || j.clients[r].Lookups() != 0 {
				t.Fatalf("rank %d read %d endpoints, %d of them asked of the head; want 2, none (ring neighbours come with the layout)", r, tb.Fetches(), j.clients[r].Lookups())
			}
			p := (r + n/2 + 3) % n // not near r: asked of the head
			if ep, err := tb.Get(p); err != nil || ep.Addrs["unix"] != "/peer/"+strconv.Itoa(p) || j.clients[r].Lookups() != 1 {
				t.Fatalf("rank %d's lookup of %d: %+v, %v, %d asked of the head", r, p, ep, err, j.clients[r].Lookups())
			}
		}
		t.Logf("n %d: at most %d bytes a rank at start-up", n, most)

		t.Setenv(boot.EnvEndpoints, "all")
		j = startLazyJob(t, n)
		var least int64 = 1 << 62
		for _, c := range j.proxy.recv {
			least = min(least, c.Load())
		}
		if least < int64(n)*40 {
			t.Fatalf("n %d, %s=all: a rank received %d bytes, want every endpoint (at least %d)", n, boot.EnvEndpoints, least, n*40)
		}
		if ep, err := j.tables[0].Get(n - 1); err != nil || ep.Addrs["unix"] != "/peer/"+strconv.Itoa(n-1) {
			t.Fatalf("eager table: %+v, %v", ep, err)
		}
	}
}

// A peer that dies after the fence and before anyone looked it up is
// answered as failed (the lookup fails at once: the dialler's loss of that
// peer, never a hang); a lookup made before it died got its endpoint, and
// the other peers are still answered. The death is the head's own event
// (the agent's exit report); the lookup waits for the survivors' failed
// event, not for a time.
func TestLazyLookupOfPeerDeadBeforeItsFirstLookup(t *testing.T) {
	t.Setenv(boot.EnvEndpoints, "")
	j := startLazyJob(t, 8) // 3 and 5 are not near 0 (1, 2, 4, 6, 7 are)
	if ep, err := j.tables[1].Get(3); err != nil || ep.Addrs["unix"] != "/peer/3" {
		t.Fatalf("lookup before the death: %+v, %v", ep, err)
	}
	j.h.Exited(hostagent.ExitReport{Rank: 3, Pid: os.Getpid(), Signal: syscall.SIGKILL})
	select {
	case ev := <-j.clients[0].Events():
		if ev.Kind != boot.EventFailed || ev.Rank != 3 {
			t.Fatalf("event %+v, want rank 3's failure", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no failed event within 30s")
	}
	got := make(chan error, 1)
	go func() { _, err := j.tables[0].Get(3); got <- err }()
	select {
	case err := <-got:
		if err == nil || !strings.Contains(err.Error(), "process 3 failed") || j.clients[0].Lookups() != 1 {
			t.Fatalf("lookup of the dead peer: %v, want its failure", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the lookup of a dead peer did not return within 30s")
	}
	if _, err := j.tables[0].Get(3); err == nil || j.clients[0].Lookups() != 1 {
		t.Fatal("a second ask of the dead peer succeeded, or asked the head again")
	}
	if ep, err := j.tables[0].Get(5); err != nil || ep.Addrs["unix"] != "/peer/5" {
		t.Fatalf("lookup of a live peer after the death: %+v, %v", ep, err)
	}
	var fe *boot.FailedError
	if errors.As(j.errs[0], &fe) {
		t.Fatalf("start-up: %v", fe)
	}
}

// rteJob is n processes of the rank runtime (rte) opening their first
// epoch through a real head: what ftmpirun's ranks do in MPI_Init.
type rteJob struct {
	h     *head
	procs []*rte.Process[struct{}]
	nets  []*rte.Net
}

func startRteJob(t *testing.T, n int, transport string) *rteJob {
	t.Helper()
	dir := t.TempDir()
	h := newHead("job", n, OnFailureContinue, &output{stdout: io.Discard, stderr: io.Discard}, false)
	ln, err := net.Listen("unix", filepath.Join(dir, "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	h.serve(ln)
	j := &rteJob{h: h, procs: make([]*rte.Process[struct{}], n), nets: make([]*rte.Net, n)}
	t.Cleanup(func() {
		for r := range n {
			if j.nets[r] != nil {
				j.nets[r].Close()
			}
			if j.procs[r] != nil {
				j.procs[r].Close()
			}
		}
		h.close()
	})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info := boot.Info{Job: "job", Rank: r, Size: n, Proc: r, Universe: n, Control: "unix:" + ln.Addr().String(), Host: "h", HostCores: 2, TmpDir: dir}
			p, err := rte.Connect(info, rte.Hooks[struct{}]{LauncherLost: func() {}})
			if err != nil {
				errs[r] = err
				return
			}
			j.procs[r] = p
			j.nets[r], errs[r] = p.OpenEpoch(0, rte.NetConfig{Transport: transport, EagerLimit: 1024, ReaderSpin: -1, ConnectTimeout: 10 * time.Second})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", r, err)
		}
	}
	return j
}

// send sends one byte from process from to process to and, unless the
// send fails, receives it there, within a deadline.
func (j *rteJob) send(from, to int) error {
	buf := make([]byte, 1)
	rr, err := j.nets[to].Eng.Irecv(0, int32(from), from, 9, p2p.DTByte, buf)
	if err != nil {
		return err
	}
	sr, err := j.nets[from].Eng.Isend(0, int32(from), to, 9, p2p.DTByte, []byte{byte(from)}, false)
	if err != nil {
		return err
	}
	deadline := make(chan struct{})
	tm := time.AfterFunc(20*time.Second, func() { close(deadline) })
	defer tm.Stop()
	if sr != nil && !sr.Wait(deadline) {
		return errors.New("send: no completion")
	}
	if !rr.Wait(deadline) || buf[0] != byte(from) {
		return errors.New("receive: no completion or wrong data")
	}
	return nil
}

// Under ftmpirun's head, the runtime's first epoch reads no endpoint (the
// layout gives every peer's host and incarnation) and a process reads a
// peer's endpoint when it first dials it; a peer killed before anyone
// dialled it makes the dial fail as that peer's loss, at once, whether the
// head already knew of the death (the lookup is answered as failed) or
// not (the lookup gives the endpoint and the dial finds nobody). The
// deaths are ordered by events: the peer's transport closed and, for the
// first, the head's exit report, before the first send to it.
func TestLazyEpochPeerKilledBeforeFirstDial(t *testing.T) {
	for _, transport := range []string{"auto", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			t.Setenv(boot.EnvEndpoints, "")
			j := startRteJob(t, 8, transport)
			for r, n := range j.nets {
				if n.Fetches() != 0 || len(n.Endpoints) != 8 || n.Endpoints[(r+1)%8].Host != "h" || n.Endpoints[r].Cores != 2 {
					t.Fatalf("process %d: %d endpoints read at start, layout %+v", r, n.Fetches(), n.Endpoints)
				}
			}
			// Process 3 dies and the head is told; process 5 dies
			// unseen (neither is near process 0: both are asked of the
			// head); process 2, near 0, dies unseen too.
			j.nets[3].Close()
			j.h.Exited(hostagent.ExitReport{Rank: 3, Pid: os.Getpid(), Signal: syscall.SIGKILL})
			j.nets[5].Close()
			j.nets[2].Close()
			for _, dead := range []int{3, 5, 2} {
				_, err := j.nets[0].Eng.Isend(0, 0, dead, 9, p2p.DTByte, []byte("x"), false)
				if !errors.Is(err, p2p.ErrPeerLost) {
					t.Fatalf("send to the dead process %d: %v, want ErrPeerLost", dead, err)
				}
			}
			if err := j.send(0, 1); err != nil {
				t.Fatalf("0 -> 1 after the deaths: %v", err)
			}
			if err := j.send(1, 0); err != nil {
				t.Fatalf("1 -> 0 (an answer on 0's connection or 1's own dial): %v", err)
			}
			if f := j.nets[0].Fetches(); f != 4 {
				t.Fatalf("process 0 read %d endpoints, want 4 (the three dead, 1)", f)
			}
			if l := j.procs[0].Client().Lookups(); l != 2 {
				t.Fatalf("process 0 asked the head for %d endpoints, want 2 (3 and 5)", l)
			}
		})
	}
}

// A process that sends a group's endpoints on (an intercommunicator's
// leader: rte.EndpointsOf) reads those it lacks in one lookup of the head,
// not one a process (issue 24: one request a process not near it before); a
// process of the group that died before it was looked up is left out, as
// a failed read is. Each endpoint is read once: sending the group again
// asks nothing, and a dial to one of them asks nothing either.
func TestGroupEndpointsInOneLookup(t *testing.T) {
	t.Setenv(boot.EnvEndpoints, "")
	const n = 32
	j := startRteJob(t, n, "auto")
	j.nets[9].Close()
	j.h.Exited(hostagent.ExitReport{Rank: 9, Pid: os.Getpid(), Signal: syscall.SIGKILL})
	group := make([]int, n)
	for i := range group {
		group[i] = i
	}
	c := j.procs[0].Client() // the head handled 9's exit report (Exited returns after its step)
	raw := rte.EndpointsOf(j.nets[0], group)
	eps, err := dpm.DecodeEndpoints(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != n-1 {
		t.Fatalf("%d endpoints of the group of %d, want all but the dead process 9's", len(eps), n)
	}
	for _, ep := range eps {
		if ep.Rank == 9 || ep.Addrs["unix"] == "" && ep.Addrs["tcp"] == "" {
			t.Fatalf("endpoint %+v: the dead process, or no address", ep)
		}
	}
	if r := c.LookupRequests(); r != 1 {
		t.Fatalf("process 0 made %d lookup requests for a group of %d, want 1", r, n)
	}
	asked := c.Lookups()
	if asked == 0 || asked >= n {
		t.Fatalf("process 0 asked the head for %d endpoints, want those not near it (0 < k < %d)", asked, n)
	}
	if again := rte.EndpointsOf(j.nets[0], group); string(again) != string(raw) || c.LookupRequests() != 1 {
		t.Fatalf("the group's endpoints again: %d requests in all, same bytes %v", c.LookupRequests(), string(again) == string(raw))
	}
	if err := j.send(0, 17); err != nil {
		t.Fatalf("0 -> 17: %v", err)
	}
	if c.LookupRequests() != 1 {
		t.Fatalf("a dial after the group's lookup asked the head again (%d requests)", c.LookupRequests())
	}
}
